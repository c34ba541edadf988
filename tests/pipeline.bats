#!/usr/bin/env bats
# pipelines/model.mk: checkpoint -> bundle with make, partitioned or not.

setup_file() {
	load test_helper/common-setup
	_common_setup
	ensure_tokenizer
	mkmodel --preset tiny --family qwen2 --dtype bf16 --seed 7 -o "$BATS_FILE_TMPDIR/tiny"
	# the 0.5B shapes (896 hidden, 14/2 heads, 4864 FFN, tied), 2 layers
	mkmodel --preset qwen2.5-0.5b --family qwen2 --dtype bf16 --layers 2 --seed 7 -o "$BATS_FILE_TMPDIR/q05"
}

setup() {
	load test_helper/common-setup
	_common_setup
	T=$BATS_TEST_TMPDIR
	V=151936
}

# build CKPT OUT STRATEGY: the whole pipeline, with the exact products of
# the bf16 checkpoint (the defaults depend on the host: bf16.bats).
IF="--max-context 128 --prefill-chunk 32 --activations f32"
build() {
	make -s -f "$PROJECT_ROOT/pipelines/model.mk" LLM="${LLM_BIN:-$PROJECT_ROOT/bin}/" \
		MODEL="$1" OUT="$2" STRATEGY="$3" IMPORT_FLAGS="$IF" -j2
}

# logits OUT FILE: a 40-token prompt (prefill + prefill_kv) and 16 greedy
# tokens: 16 rows of logits, the prompt's last and 15 decode steps.
logits() {
	llm-run -m "$1/model.llm" -t 2 --tokens "$(seq -s, 100 139)" -n 16 --logits "$2" >/dev/null 2>&1
}

@test "model.mk builds a bundle that runs, with every step in order" {
	run -0 build "$BATS_FILE_TMPDIR/tiny" "$T/out" layer
	for f in model.json weights.json parts/partition.json parts/verify.json libmodel.so model.llm; do
		[ -s "$T/out/$f" ]
	done
	# the weights once: in the bundle, not beside it (issue 48)
	[ ! -e "$T/out/weights.bin" ]
	tar -tf "$T/out/model.llm" | grep -qx weights.bin
	[ "$(jq -r .valid "$T/out/parts/verify.json")" = true ]
	run -0 llm-run -m "$T/out/model.llm" --tokens 1,2,3 -n 4
}

@test "none, layer and stage builds give bit-identical logits (tiny)" {
	for s in none layer stage; do
		build "$BATS_FILE_TMPDIR/tiny" "$T/$s" $s
		logits "$T/$s" "$T/$s.f32"
	done
	[ "$(stat -c %s "$T/none.f32")" -eq $((16 * V * 4)) ]
	cmp "$T/none.f32" "$T/layer.f32"
	cmp "$T/none.f32" "$T/stage.f32"
	refmodel --tokens "$(seq -s, 100 139)" -o "$T/ref" "$BATS_FILE_TMPDIR/tiny"
	head -c $((V * 4)) "$T/none.f32" >"$T/first"
	run -0 cmpf32 -a 1e-4 "$T/ref" "$T/first"
}

@test "none, layer and stage builds give bit-identical logits (gemma3: local and global layers, four norms a layer; issue 44)" {
	mkmodel --preset tiny --family gemma3 --sliding-window 5 --window-pattern 2 --seed 1 -o "$T/g3" >&2
	for s in none layer stage; do
		build "$T/g3" "$T/$s" $s
		logits "$T/$s" "$T/$s.f32"
	done
	cmp "$T/none.f32" "$T/layer.f32"
	cmp "$T/none.f32" "$T/stage.f32"
}

@test "none, layer and stage builds give bit-identical logits (0.5B shapes)" {
	for s in none layer stage; do
		build "$BATS_FILE_TMPDIR/q05" "$T/$s" $s
		logits "$T/$s" "$T/$s.f32"
	done
	cmp "$T/none.f32" "$T/layer.f32"
	cmp "$T/none.f32" "$T/stage.f32"
	refmodel --tokens "$(seq -s, 100 139)" -o "$T/ref" "$BATS_FILE_TMPDIR/q05"
	head -c $((V * 4)) "$T/none.f32" >"$T/first"
	run -0 cmpf32 -a 1e-4 "$T/ref" "$T/first"
}

@test "llm-run -c N allocates the KV cache for N positions at run time, with the same logits for every N (issue 17)" {
	build "$BATS_FILE_TMPDIR/tiny" "$T/out" layer
	# 40 prompt tokens and 16 generated fill 56 positions; the build's is 128
	for c in "" 56 57 100 128; do
		llm-run -m "$T/out/model.llm" -t 2 ${c:+-c $c} --tokens "$(seq -s, 100 139)" -n 16 \
			--logits "$T/c$c.f32" >/dev/null 2>&1
		cmp "$T/c.f32" "$T/c$c.f32"
	done
	[ "$(stat -c %s "$T/c.f32")" -eq $((16 * V * 4)) ]
	run -0 --separate-stderr llm-run -v -m "$T/out/model.llm" -c 57 --tokens 1,2,3 -n 1
	assert_regex "$stderr" ", context 57 of max_context 128, "
	# a context of 50 ends the reply at the 50th position: 11 rows
	llm-run -m "$T/out/model.llm" -c 50 --tokens "$(seq -s, 100 139)" -n 16 --logits "$T/short.f32" >/dev/null 2>&1
	[ "$(stat -c %s "$T/short.f32")" -eq $((11 * V * 4)) ]
	cmp -n $((11 * V * 4)) "$T/c.f32" "$T/short.f32"
	run -1 --separate-stderr llm-run -m "$T/out/model.llm" -c 129 --tokens 1,2,3
	[ "$stderr" = "llm-run: $T/out/model.llm: -c 129 exceeds the context this model was built for, 128 (llm-import --max-context sets it)" ]
	run -1 --separate-stderr llm-run -m "$T/out/model.llm" -c 39 --tokens "$(seq -s, 100 139)"
	[ "$stderr" = "llm-run: $T/out/model.llm: prompt of 40 tokens does not fit the context of 39 positions (-c)" ]
}

@test "the decoder layers share one kernel" {
	build "$BATS_FILE_TMPDIR/q05" "$T/out" layer
	# 2 layers, 4 phases: prefill, prefill_kv and embed share their layer kernels
	[ "$(jq '[.phases[] | .partitions[] | select(.layer >= 0) | .kernel] | unique | length' "$T/out/parts/partition.json")" -le 2 ]
}

@test "a second build makes nothing, touching the checkpoint lowers nothing" {
	build "$BATS_FILE_TMPDIR/tiny" "$T/out" layer
	run -0 env -u MAKEFLAGS -u MFLAGS make -f "$PROJECT_ROOT/pipelines/model.mk" LLM="${LLM_BIN:-$PROJECT_ROOT/bin}/" \
		MODEL="$BATS_FILE_TMPDIR/tiny" OUT="$T/out" IMPORT_FLAGS="$IF"
	assert_output --partial "Nothing to be done"
	cp -r "$BATS_FILE_TMPDIR/tiny" "$T/ck"
	build "$T/ck" "$T/out2" layer
	before=$(stat -c %Y "$T/out2/model.llm")
	sleep 1
	touch "$T/ck/config.json"
	run -0 env -u MAKEFLAGS -u MFLAGS make -f "$PROJECT_ROOT/pipelines/model.mk" LLM="${LLM_BIN:-$PROJECT_ROOT/bin}/" \
		MODEL="$T/ck" OUT="$T/out2" IMPORT_FLAGS="$IF"
	assert_output --partial "llm-import"
	refute_output --partial "llm-lower"
	assert_output --partial "model.llm holds the weights, up to date"
	[ "$(stat -c %Y "$T/out2/model.llm")" = "$before" ]
}

@test "a build holds the weights once, in model.llm: the directory runs, a relink and the reuse check read them there, clean removes the build (issue 48)" {
	mk() { env -u MAKEFLAGS -u MFLAGS make --no-print-directory -f "$PROJECT_ROOT/pipelines/model.mk" \
		LLM="${LLM_BIN:-$PROJECT_ROOT/bin}/" MODEL="$BATS_FILE_TMPDIR/tiny" OUT="$T/out" IMPORT_FLAGS="$IF" "$@"; }
	build "$BATS_FILE_TMPDIR/tiny" "$T/out" layer
	logits "$T/out" "$T/before.f32"
	[ ! -e "$T/out/weights.bin" ]
	# the build directory runs: its weights are model.llm's
	llm-run -m "$T/out" -t 2 --tokens "$(seq -s, 100 139)" -n 16 --logits "$T/dir.f32" >/dev/null 2>&1
	cmp "$T/before.f32" "$T/dir.f32"
	run -0 llm-run -m "$T/out" --verify
	assert_output --partial "model.llm: weights.bin: "
	# pack checks them there and writes nothing
	run -0 --separate-stderr llm-pack-weights "$T/out/model.json"
	[ "$stderr" = "llm-pack-weights: $T/out/model.llm holds the weights, up to date (fingerprint $(jq -r .weights.fingerprint "$T/out/model.json"))" ]
	[ ! -e "$T/out/weights.bin" ]
	# nothing to do; other objects relink with the bundle's weights
	run -0 mk
	assert_output --partial "Nothing to be done"
	run -0 mk LOWER_FLAGS="--features -fma"
	assert_line --regexp "^llm-link model.llm: "
	refute_output --partial "llm-pack-weights"
	[ ! -e "$T/out/weights.bin" ]
	logits "$T/out" "$T/relinked.f32"
	cmpf32 -r 1e-5 "$T/before.f32" "$T/relinked.f32" >/dev/null
	# without the bundle the weights are packed again
	rm "$T/out/model.llm"
	run -0 mk LOWER_FLAGS="--features -fma"
	assert_output --partial "llm-pack-weights"
	refute_output --partial "llm-lower"
	[ ! -e "$T/out/weights.bin" ]
	logits "$T/out" "$T/after.f32"
	cmp "$T/relinked.f32" "$T/after.f32"
	# clean: what the steps wrote, then the directory, emptied
	run -0 mk clean
	[ ! -e "$T/out" ]
	# and nothing else: a file of the user's stays, and so does OUT
	build "$BATS_FILE_TMPDIR/tiny" "$T/out" layer
	echo mine >"$T/out/notes.txt"
	run -0 mk clean
	[ "$(ls -A "$T/out")" = notes.txt ]
}

@test "an identical kernel is taken from the lowering cache, across builds" {
	export LLM_CACHE_DIR="$T/cache"
	build "$BATS_FILE_TMPDIR/tiny" "$T/a" layer
	n=$(ls "$T/cache/objects" | wc -l)
	[ "$n" -gt 0 ]
	run -0 env -u MAKEFLAGS -u MFLAGS make -f "$PROJECT_ROOT/pipelines/model.mk" LLM="${LLM_BIN:-$PROJECT_ROOT/bin}/" \
		MODEL="$BATS_FILE_TMPDIR/tiny" OUT="$T/b" LOWER_FLAGS=-v IMPORT_FLAGS="$IF"
	[ "$(grep -c 'cache hit' <<<"$output")" -eq "$n" ]
	[ "$(ls "$T/cache/objects" | wc -l)" -eq "$n" ]
	cmp "$T/a/libmodel.so" "$T/b/libmodel.so"
}

@test "model.mk without MODEL or OUT says what to set" {
	run -2 make -f "$PROJECT_ROOT/pipelines/model.mk"
	assert_output --partial "set MODEL"
}

@test "pipelines/model.sh, the plain shell version, builds a bundle with the same logits" {
	# both with llm-import's defaults
	make -s -f "$PROJECT_ROOT/pipelines/model.mk" LLM="${LLM_BIN:-$PROJECT_ROOT/bin}/" \
		MODEL="$BATS_FILE_TMPDIR/tiny" OUT="$T/mk" -j2
	run -0 --separate-stderr "$PROJECT_ROOT/pipelines/model.sh" "$BATS_FILE_TMPDIR/tiny" "$T/sh" layer
	[ "$output" = "$T/sh/model.llm" ]
	llm-run -m "$T/mk/model.llm" --tokens 1,2,3 -n 4 --logits "$T/a" >/dev/null 2>&1
	llm-run -m "$T/sh/model.llm" --tokens 1,2,3 -n 4 --logits "$T/b" >/dev/null 2>&1
	cmp "$T/a" "$T/b"
	run -2 "$PROJECT_ROOT/pipelines/model.sh"
}

@test "the Makefile takes config.mk's settings over its own defaults" {
	cd "$BATS_TEST_TMPDIR"
	printf 'LLVM_BINDIR = /opt/llvm/bin\nPREFIX = /opt/llm\nDEPS_LIBS = -lfoo\n' >config.mk
	run -0 make -pn -f "$PROJECT_ROOT/Makefile" config.mk
	assert_line "LLVM_BINDIR = /opt/llvm/bin"
	assert_line "PREFIX = /opt/llm"
	assert_line "DEPS_LIBS = -lfoo"
	assert_line "BINDIR = \$(PREFIX)/bin"
}

@test "the bundle records its target (CPU=x86-64-v3: AVX2, no AVX-512); llm-run checks it against this CPU, data-driven" {
	make -s -f "$PROJECT_ROOT/pipelines/model.mk" LLM="${LLM_BIN:-$PROJECT_ROOT/bin}/" CPU=x86-64-v3 \
		MODEL="$BATS_FILE_TMPDIR/tiny" OUT="$T/out" IMPORT_FLAGS="--max-context 128 --prefill-chunk 32" -j2
	t="$T/out/target.json"
	[ "$(jq -r '.triple | split("-")[0]' "$t")" = x86_64 ] && [ "$(jq -r .cpu "$t")" = x86-64-v3 ]
	[ "$(jq '.features | index("avx2") != null and index("fma") != null and index("avx512f") == null' "$t")" = true ]
	# the same record in the bundle, and in every object
	tar -xOf "$T/out/model.llm" target.json | cmp - "$t"
	for o in "$T"/out/obj/*/*.o; do
		"$LLVM_BINDIR/llvm-objcopy" --dump-section .llm.target="$T/sec" "$o" && cmp "$T/sec" "$t"
	done
	run -0 llm-run -m "$T/out/model.llm" --tokens 1,2,3 -n 2
	# a feature this CPU lacks, or another architecture: one line, exit 1
	jq '.features += ["avx10_fake"]' "$t" >"$T/t" && cp "$T/t" "$t"
	run -1 --separate-stderr llm-run -m "$T/out" --tokens 1,2,3 -n 2
	[ "$stderr" = "llm-run: $t: built for x86-64-v3 (x86_64-pc-linux-gnu): this CPU lacks avx10_fake" ]
	jq '.triple = "riscv64-unknown-linux-gnu"' "$t" >"$T/t" && cp "$T/t" "$t"
	run -1 --separate-stderr llm-run -m "$T/out" --tokens 1,2,3 -n 2
	[ "$stderr" = "llm-run: $t: built for riscv64-unknown-linux-gnu (x86-64-v3): this machine is $(uname -m)" ]
	# changing CPU lowers again: the objects follow the target
	make -s -f "$PROJECT_ROOT/pipelines/model.mk" LLM="${LLM_BIN:-$PROJECT_ROOT/bin}/" CPU=x86-64-v2 \
		MODEL="$BATS_FILE_TMPDIR/tiny" OUT="$T/out" IMPORT_FLAGS="--max-context 128 --prefill-chunk 32" -j2
	[ "$(jq -r .cpu "$t")" = x86-64-v2 ] && [ "$(jq '.features | index("avx") == null' "$t")" = true ]
	run -0 llm-run -m "$T/out/model.llm" --tokens 1,2,3 -n 2
}

@test "model.mk stops at the cause: a missing MODEL, no config.json, no tools, a failing import last (issue 17)" {
	mk() { make --no-print-directory -f "$PROJECT_ROOT/pipelines/model.mk" "$@"; }
	run -2 mk MODEL="$T/none" OUT="$T/o"
	assert_output --partial "model.mk: MODEL=$T/none: no such file or directory"
	mkdir "$T/empty"
	run -2 mk MODEL="$T/empty" OUT="$T/o"
	assert_output --partial "model.mk: MODEL=$T/empty: no config.json"
	run -2 mk LLM=/nonexistent/ MODEL="$BATS_FILE_TMPDIR/tiny" OUT="$T/o"
	assert_output --partial "model.mk: /nonexistent/llm-import: not found"
	# the tools are found beside pipelines/ without LLM=
	mkdir "$T/bad" && echo '{}' >"$T/bad/config.json"
	run -2 mk MODEL="$T/bad" OUT="$T/o"
	assert_line --index 0 "llm-import: $T/bad/config.json: neither 'architectures' nor 'model_type' given"
	# "make:" or, under another make (make check), "make[N]:"
	[[ "${lines[-1]}" == "make"*": *** ["*"/model.mk:"*": $T/o/model.json] Error 1" ]]
	[ "${#lines[@]}" -eq 2 ]
	[ ! -e "$T/o/model.json" ]
}

@test "model.mk prints one line per step with its time, none with -s; V=1 prints the commands (issue 17)" {
	# a make of its own: not the flags of a make that runs the tests
	mk() { env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make --no-print-directory -f "$PROJECT_ROOT/pipelines/model.mk" \
		LLM="${LLM_BIN:-$PROJECT_ROOT/bin}/" MODEL="$BATS_FILE_TMPDIR/tiny" IMPORT_FLAGS="--max-context 128 --prefill-chunk 32" "$@"; }
	run -0 mk OUT="$T/a"
	t=': [0-9]+\.[0-9]{2} s$'
	assert_line --regexp "^llm-import model.json$t"
	assert_line --regexp "^llm-pack-weights weights.bin$t"
	assert_line --regexp "^llm-split parts/$t"
	assert_line --regexp "^llm-verify-partition parts/verify.json$t"
	assert_line --regexp "^llm-link model.llm$t"
	lowered=$(grep -cE "^llm-lower obj/[a-z_]+/[a-z0-9]+\.o$t" <<<"$output")
	[ "$lowered" -eq "$(find "$T/a/obj" -name '*.o' | wc -l)" ]
	[ "$lowered" -gt 0 ]
	run -0 mk OUT="$T/b" -s
	refute_output --regexp "$t"
	# nothing at all: not llm-split's summary either (issue 48)
	assert_output ""
	run -0 mk OUT="$T/c" V=1
	assert_line --regexp "llm-import --max-context 128 --prefill-chunk 32 -o $T/c $BATS_FILE_TMPDIR/tiny$"
	assert_line --regexp "^llm-import model.json$t"
}

@test "pack, link and --verify draw a progress line on stderr only where asked: LLM_PROGRESS=1 (or a terminal), erased at the end (issue 17)" {
	build "$BATS_FILE_TMPDIR/tiny" "$T/out" layer
	# not a terminal: nothing
	run -0 --separate-stderr llm-pack-weights --no-reuse "$T/out/model.json"
	[ -z "$stderr" ]
	# CR, the line, erase to its end; at the end CR and erase
	r=$'\r' e=$'\033''\[K'
	bytes='[0-9]+\.[0-9]{2}/[0-9]+\.[0-9]{2} (MB|GB) \([0-9]+%\), [0-9]+ MB/s'
	LLM_PROGRESS=1 llm-pack-weights --no-reuse "$T/out/model.json" 2>"$T/e"
	re="^${r}llm-pack-weights: $T/out/weights.bin: tensor [0-9]+/[0-9]+, $bytes$e.*$r$e\$"
	[[ $(cat "$T/e") =~ $re ]]
	rm "$T/out/model.llm"
	LLM_PROGRESS=1 llm-link "$T/out" 2>"$T/e"
	re="^${r}llm-link: $T/out/weights.bin: checking $bytes$e.*${r}llm-link: $T/out/model.llm: writing $bytes$e.*$r$e\$"
	[[ $(cat "$T/e") =~ $re ]]
	LLM_PROGRESS=1 llm-run -m "$T/out/model.llm" --verify 2>"$T/e" >/dev/null
	re="^${r}llm-run: $T/out/model.llm: weights.bin: checking $bytes$e.*$r$e\$"
	[[ $(cat "$T/e") =~ $re ]]
	# LLM_PROGRESS=0 on a terminal: nothing but the result
	run -0 script -qec "LLM_PROGRESS=0 llm-run -m '$T/out/model.llm' --verify" /dev/null
	refute_output --partial "checking"
	run -0 llm-run -m "$T/out/model.llm" --tokens 1,2,3 -n 2
}

@test "make demo tells the shipped stories260K model's story on any machine, and says when the weights are random (issues 17, 43)" {
	# the shipped model is the one of its licence file (MIT, its sha256)
	s="$PROJECT_ROOT/share/llm/models/stories260K"
	sum=$(sha256sum "$s/stories260K.gguf" | cut -d' ' -f1)
	grep -q "^sha256 $sum" "$s/LICENSE"
	grep -q "^MIT License" "$s/LICENSE"
	run -0 --separate-stderr make --no-print-directory -C "$PROJECT_ROOT" demo DEMO="$T/demo"
	assert_line "make demo: share/llm/models/stories260K/stories260K.gguf, a trained model: its text should read well"
	assert_line --partial "Once upon a time, there was a little girl named Lily."
	run -0 --separate-stderr make --no-print-directory -C "$PROJECT_ROOT" demo DEMO="$T/demo" DEMO_GGUF=/nonexistent
	assert_line --partial "the weights below are random, so the text is gibberish"
	assert_line --regexp '^Once upon a time'
}
