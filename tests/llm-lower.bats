#!/usr/bin/env bats
# llm-lower: one MLIR module -> one object, through mlir-opt, mlir-translate
# and llc.  The fixtures compute y = 2 x W^T + 1 with bf16 weights whose
# shapes are not multiples of the tile sizes; harness.c checks the numbers.

setup() {
	load test_helper/common-setup
	_common_setup
	F="$PROJECT_ROOT/tests/fixtures/llm-lower"
	LLVM_LIB="${LLVM_LIBDIR:-/usr/lib/llvm-22/lib}"
}

# Builds harness.c against an object and runs it for rows 1..$2.
check_numbers() {
	cc -O2 -o "$BATS_TEST_TMPDIR/h" "$F/harness.c" "$1" -L"$LLVM_LIB" -lomp \
		-Wl,-rpath,"$LLVM_LIB" -lm
	run -0 "$BATS_TEST_TMPDIR/h" "$2"
	assert_output "ok"
}

@test "llm-lower -h prints the usage and exits 0" {
	run -0 llm-lower -h
	assert_line --index 0 --partial "usage: llm-lower"
}

@test "llm-lower usage equals the man page SYNOPSIS" {
	[ "$(usage_of llm-lower)" = "$(synopsis_of llm-lower)" ]
}

@test "llm-lower rejects an unknown option with exit 2" {
	run -2 llm-lower -Z "$F/decode.mlir"
	assert_output --partial "usage: llm-lower"
}

@test "llm-lower without an input is a usage error" {
	run -2 llm-lower
	assert_output --partial "usage: llm-lower"
}

@test "llm-lower rejects a bad timeout with exit 2" {
	run -2 llm-lower -t soon "$F/decode.mlir"
	assert_output --partial "bad timeout 'soon'"
}

@test "llm-lower rejects an unknown kind with exit 2" {
	run -2 llm-lower -k sideways -o "$BATS_TEST_TMPDIR/x.o" "$F/decode.mlir"
	assert_output --partial "unknown kind 'sideways'"
	[ ! -e "$BATS_TEST_TMPDIR/x.o" ]
}

@test "llm-lower asks for -k when the kind cannot be told" {
	cp "$F/decode.mlir" "$BATS_TEST_TMPDIR/small.mlir"
	run -2 llm-lower -o "$BATS_TEST_TMPDIR/x.o" "$BATS_TEST_TMPDIR/small.mlir"
	assert_output --partial "small.mlir: cannot tell the kind of module: pass -k"
}

@test "llm-lower names a missing input file" {
	run -1 llm-lower -k decode -o "$BATS_TEST_TMPDIR/x.o" "$BATS_TEST_TMPDIR/none.mlir"
	assert_output "llm-lower: $BATS_TEST_TMPDIR/none.mlir: No such file or directory"
}

@test "a decode module lowers to an object with the C interface symbol" {
	cd "$BATS_TEST_TMPDIR"
	run -0 llm-lower -o decode.o "$F/decode.mlir"
	run -0 nm decode.o
	assert_output --partial "T _mlir_ciface_llm_small"
	# nothing but the object is left behind
	run -0 ls -A
	assert_output "decode.o"
}

@test "the decode object computes the right numbers" {
	llm-lower -k decode -o "$BATS_TEST_TMPDIR/d.o" "$F/decode.mlir"
	check_numbers "$BATS_TEST_TMPDIR/d.o" 1
}

@test "the prefill object is right for every row count, full tiles and partial" {
	llm-lower -o "$BATS_TEST_TMPDIR/p.o" "$F/prefill.mlir"
	check_numbers "$BATS_TEST_TMPDIR/p.o" 13
}

@test "the generic pipeline gives the same numbers" {
	llm-lower -k generic -o "$BATS_TEST_TMPDIR/g.o" "$F/prefill.mlir"
	check_numbers "$BATS_TEST_TMPDIR/g.o" 13
}

@test "the glue pipeline lowers a module too" {
	run -0 llm-lower -k glue -o "$BATS_TEST_TMPDIR/g.o" "$F/decode.mlir"
	run -0 nm "$BATS_TEST_TMPDIR/g.o"
	assert_output --partial "_mlir_ciface_llm_small"
}

@test "the kind comes from an llm.kind module attribute" {
	sed 's/^module {/module attributes {llm.kind = "prefill"} {/' "$F/prefill.mlir" > "$BATS_TEST_TMPDIR/small.mlir"
	run -0 llm-lower -v --no-cache -o "$BATS_TEST_TMPDIR/x.o" "$BATS_TEST_TMPDIR/small.mlir"
	assert_output --regexp "transforms/(avx512/)?prefill.mlir"
}

@test "the kind comes from the directory when the file name does not tell" {
	mkdir -p "$BATS_TEST_TMPDIR/parts/prefill_kv"
	cp "$F/prefill.mlir" "$BATS_TEST_TMPDIR/parts/prefill_kv/p0.mlir"
	run -0 llm-lower -v --no-cache -o "$BATS_TEST_TMPDIR/x.o" "$BATS_TEST_TMPDIR/parts/prefill_kv/p0.mlir"
	assert_output --regexp "transforms/(avx512/)?prefill.mlir"
}

@test "llm-lower -v echoes the three commands" {
	run -0 --separate-stderr llm-lower -v --no-cache -o "$BATS_TEST_TMPDIR/x.o" "$F/decode.mlir"
	[ "$(printf '%s\n' "$stderr" | grep -c -E '^[^ ]*/(mlir-opt|mlir-translate|llc) ')" -eq 3 ]
	printf '%s\n' "$stderr" | grep -q -E '^[^ ]*/llc .*-mcpu=native'
}

@test "an invalid module fails in mlir-opt in one line with mlir-opt's error and writes nothing; -s or -v keeps its intermediates (issue 46)" {
	mkdir "$BATS_TEST_TMPDIR/w" && cd "$BATS_TEST_TMPDIR/w"
	run -1 --separate-stderr llm-lower -k decode -o bad.o "$F/bad.mlir"
	[ "${#stderr_lines[@]}" -eq 1 ]
	[[ "$stderr" =~ ^"llm-lower: mlir-opt: $F/bad.mlir:4:"[0-9]+": error: ".*" (exited with status 1)"$ ]]
	[ ! -e bad.o ]
	[ -z "$(ls -A)" ]
	for k in -s -v; do
		run -1 --separate-stderr llm-lower $k -k decode -o bad.o "$F/bad.mlir"
		[[ "${stderr_lines[-1]}" =~ ^"llm-lower: mlir-opt: $F/bad.mlir:4:".*" (exited with status 1) (intermediate files kept in ./.bad.o.lower."[A-Za-z0-9]+")"$ ]]
		[ ! -e bad.o ]
		dir=$(ls -d .bad.o.lower.*)
		grep -q "exited with status 1" "$dir/mlir-opt.log"
		rm -r "$dir"
	done
}

@test "a failing llc is named with its line, and with -s its input kept" {
	mkdir "$BATS_TEST_TMPDIR/w" && cd "$BATS_TEST_TMPDIR/w"
	# (an unknown --cpu is refused before any work: tests/bad-input.bats)
	printf '#!/bin/sh\necho "llc: simulated failure" >&2\nexit 1\n' >badllc
	chmod +x badllc
	LLM_LLC=$PWD/badllc run -1 --separate-stderr llm-lower -o x.o --target x86_64-unknown-linux-gnu "$F/decode.mlir"
	[ "$stderr" = "llm-lower: llc: simulated failure (exited with status 1)" ]
	[ ! -e x.o ]
	[ -z "$(ls -A | grep -v badllc)" ]
	LLM_LLC=$PWD/badllc run -1 llm-lower -s -o x.o --target x86_64-unknown-linux-gnu "$F/decode.mlir"
	assert_output --regexp "llm-lower: llc: simulated failure \(exited with status 1\) \(intermediate files kept in \./\.x\.o\.lower\.[A-Za-z0-9]+\)"
	[ ! -e x.o ]
	[ -s .x.o.lower.*/x.ll ]
}

@test "a failure leaves an existing output untouched" {
	cd "$BATS_TEST_TMPDIR"
	echo old > out.o
	run -1 llm-lower -k decode -o out.o "$F/bad.mlir"
	[ "$(cat out.o)" = old ]
}

@test "a missing tool is a clear error" {
	LLM_MLIR_OPT="$BATS_TEST_TMPDIR/nowhere/mlir-opt" run -1 llm-lower -o "$BATS_TEST_TMPDIR/x.o" "$F/decode.mlir"
	assert_output "llm-lower: mlir-opt: cannot run $BATS_TEST_TMPDIR/nowhere/mlir-opt: No such file or directory"
	LLVM_BINDIR="$BATS_TEST_TMPDIR/nowhere" run -1 llm-lower -o "$BATS_TEST_TMPDIR/x.o" "$F/decode.mlir"
	assert_output --partial "mlir-opt: cannot run"
}

@test "a tool that runs too long is killed" {
	printf '#!/bin/sh\nsleep 30\n' > "$BATS_TEST_TMPDIR/slow"
	chmod +x "$BATS_TEST_TMPDIR/slow"
	cd "$BATS_TEST_TMPDIR"
	SECONDS=0
	LLM_MLIR_OPT="$BATS_TEST_TMPDIR/slow" run -1 llm-lower -t 1 -o x.o "$F/decode.mlir"
	assert_output --partial "llm-lower: mlir-opt: timed out after 1 s"
	[ "$SECONDS" -lt 20 ]
	[ ! -e x.o ]
}

@test "SIGTERM while a tool runs kills the tool and removes the temporaries" {
	# the fake mlir-opt records its pid, then waits
	printf '#!/bin/sh\necho $$ > "%s/tool.pid"\nexec sleep 30\n' "$BATS_TEST_TMPDIR" > "$BATS_TEST_TMPDIR/slow"
	chmod +x "$BATS_TEST_TMPDIR/slow"
	cd "$BATS_TEST_TMPDIR"
	LLM_MLIR_OPT="$BATS_TEST_TMPDIR/slow" llm-lower -o x.o "$F/decode.mlir" & pid=$!
	for i in $(seq 100); do [ -s tool.pid ] && break; sleep 0.1; done
	[ -s tool.pid ]
	ls -d .x.o.lower.*
	kill -TERM $pid
	rc=0; wait $pid || rc=$?
	[ "$rc" -eq 143 ]
	[ ! -e x.o ]
	! ls -d .x.o.lower.* 2>/dev/null
	# gone, or a zombie waiting for init to reap it
	tp=$(cat tool.pid)
	for i in $(seq 50); do
		st=$(ps -o stat= -p "$tp" || true)
		case $st in ''|Z*) break ;; esac
		sleep 0.1
	done
	case $st in ''|Z*) ;; *) echo "tool $tp still running: $st"; false ;; esac
}

@test "llm-lower -s keeps the LLVM IR beside the object" {
	cd "$BATS_TEST_TMPDIR"
	run -0 llm-lower -s --no-cache -o d.o "$F/decode.mlir"
	assert_output --regexp "intermediate files kept in \./\.d\.o\.lower\."
	[ -s d.o ]
	[ -s .d.o.lower.*/d.ll ]
}

@test "the object cache is the toolchain's cache's objects/: LLM_CACHE_DIR, else XDG_CACHE_HOME/llm, else ~/.cache/llm; empty LLM_CACHE_DIR, none (issue 63)" {
	cd "$BATS_TEST_TMPDIR"
	env -u LLM_CACHE_DIR XDG_CACHE_HOME="$PWD/xdg" llm-lower -o a.o "$F/decode.mlir"
	[ "$(ls xdg/llm/objects | wc -l)" = 1 ]
	env -u LLM_CACHE_DIR -u XDG_CACHE_HOME HOME="$PWD/home" llm-lower -o b.o "$F/decode.mlir"
	[ "$(ls home/.cache/llm/objects | wc -l)" = 1 ]
	LLM_CACHE_DIR=$PWD/c llm-lower -o c.o "$F/decode.mlir"
	[ "$(ls c/objects | wc -l)" = 1 ]
	env LLM_CACHE_DIR= HOME="$PWD/home2" llm-lower -o d.o "$F/decode.mlir"
	[ ! -e home2 ]
	cmp a.o b.o && cmp a.o c.o && cmp a.o d.o
}

@test "a second identical lowering comes from the cache, byte for byte" {
	export LLM_CACHE_DIR="$BATS_TEST_TMPDIR/cache"
	run -0 llm-lower -v -o "$BATS_TEST_TMPDIR/1.o" "$F/decode.mlir"
	refute_output --partial "cache hit"
	run -0 llm-lower -v -o "$BATS_TEST_TMPDIR/2.o" "$F/decode.mlir"
	assert_output --partial "cache hit"
	cmp "$BATS_TEST_TMPDIR/1.o" "$BATS_TEST_TMPDIR/2.o"
	# another pipeline is another key
	run -0 llm-lower -v -k generic -o "$BATS_TEST_TMPDIR/3.o" "$F/decode.mlir"
	refute_output --partial "cache hit"
}

@test "llm-lower -o - writes the object to standard output" {
	llm-lower -o - "$F/decode.mlir" > "$BATS_TEST_TMPDIR/s.o"
	run -0 nm "$BATS_TEST_TMPDIR/s.o"
	assert_output --partial "_mlir_ciface_llm_small"
}

@test "--target riscv64 produces a RISC-V object" {
	llc="${LLVM_BINDIR:-/usr/lib/llvm-22/bin}/llc"
	"$llc" --version | grep -q riscv64 || skip "llc has no riscv64 target"
	run -0 llm-lower --target riscv64-unknown-linux-gnu -o "$BATS_TEST_TMPDIR/r.o" "$F/prefill.mlir"
	run -0 file "$BATS_TEST_TMPDIR/r.o"
	assert_output --partial "RISC-V"
}

@test "an output through a symbolic link replaces its target; a device node made here stays a device" {
	cd "$BATS_TEST_TMPDIR"
	mkdir objs
	ln -s objs/decode.o link.o
	run -0 llm-lower -o link.o "$F/decode.mlir"
	[ -L link.o ] && [ -f objs/decode.o ]
	run -0 nm objs/decode.o
	assert_output --partial "T _mlir_ciface_llm_small"
	if mknod null c 1 3 2>/dev/null; then
		run -0 llm-lower -o null "$F/decode.mlir"
		[ -c null ]
	fi
	mkfifo fifo
	cat fifo >from-fifo &
	run -0 llm-lower -o fifo "$F/decode.mlir"
	wait
	[ -p fifo ]
	cmp from-fifo objs/decode.o
}

@test "the object records its target in .llm.target: --cpu, --target and --features decide the extensions" {
	cd "$BATS_TEST_TMPDIR"
	# into a file: llvm-objcopy, run as root, may rename its output over
	# /dev/stdout (it did, once)
	sec() { "$LLVM_BINDIR/llvm-objcopy" --dump-section .llm.target="$1.target" "$1" /dev/null && cat "$1.target"; }
	llm-lower --no-cache -o host.o "$F/decode.mlir"
	run -0 sec host.o
	[ "$(echo "$output" | jq -r .cpu)" = "$("$LLVM_BINDIR/llc" --version | sed -n 's/^ *Host CPU: //p')" ]
	llm-lower --no-cache --cpu x86-64-v3 -o v3.o "$F/decode.mlir"
	run -0 sec v3.o
	[ "$(echo "$output" | jq -c .features)" = '["abm","avx","avx2","bmi1","bmi2","f16c","fma","movbe","pni","popcnt","sse4_1","sse4_2","ssse3"]' ]
	llm-lower --no-cache --cpu x86-64-v3 --features=+avx512f -o v3f.o "$F/decode.mlir"
	run -0 sec v3f.o
	[ "$(echo "$output" | jq '.features | index("avx512f") != null')" = true ]
	llm-lower --no-cache --target riscv64-linux-gnu -o rv.o "$F/decode.mlir"
	run -0 sec rv.o
	[ "$(echo "$output" | jq -c '[.triple, .features]')" = '["riscv64-linux-gnu",["a","c","d","f","m","v"]]' ]
}

@test "an output in a missing directory is named, not the temporary beside it (issue 16)" {
	cd "$BATS_TEST_TMPDIR"
	run -1 --separate-stderr llm-lower -o missing-dir/x.o "$F/decode.mlir"
	[ "$stderr" = "llm-lower: missing-dir/x.o: No such file or directory" ]
}

@test "class gemv's chunk in lib/compiler/emit_int.h is mkscript.py's GV_NC (make check-style checks the scripts are its output)" {
	local tr="$PROJECT_ROOT/share/llm/transforms"
	chunk=$(sed -n 's/^#define GEMV_CHUNK \([0-9][0-9]*\)$/\1/p' "$PROJECT_ROOT/lib/compiler/emit_int.h")
	stream=$(sed -n 's/^#define GEMV_STREAM \([0-9][0-9]*\)$/\1/p' "$PROJECT_ROOT/lib/compiler/emit_int.h")
	nc=$(sed -n 's/^P = dict(GV_NC=\([0-9][0-9]*\), GV_NR=\([0-9][0-9]*\),.*/\1/p' "$tr/mkscript.py")
	nr=$(sed -n 's/^P = dict(GV_NC=\([0-9][0-9]*\), GV_NR=\([0-9][0-9]*\),.*/\2/p' "$tr/mkscript.py")
	[ -n "$chunk" ] && [ -n "$stream" ] && [ -n "$nc" ] && [ -n "$nr" ]
	[ "$chunk" = "$nc" ]
	[ $((stream % nr)) = 0 ]
}

@test "the transform scripts follow the target: AVX-512's form (zmm) for znver4, the top level (no zmm) for x86-64-v3" {
	cd "$BATS_TEST_TMPDIR"
	for k in decode prefill; do
		run -0 llm-lower --no-cache -v --cpu znver4 -o z.o "$F/$k.mlir"
		assert_output --partial "transform-library-paths=$PROJECT_ROOT/share/llm/transforms/avx512/$k.mlir"
		[ "$(objdump -d z.o | grep -c zmm)" -gt 0 ]
		run -0 llm-lower --no-cache -v --cpu x86-64-v3 -o v3.o "$F/$k.mlir"
		assert_output --partial "transform-library-paths=$PROJECT_ROOT/share/llm/transforms/$k.mlir"
		[ "$(objdump -d v3.o | grep -c zmm)" = 0 ]
	done
	# the form is part of the cache key: the same module for two CPUs
	# gives two objects
	LLM_CACHE_DIR=$PWD/c llm-lower --cpu znver4 -o a.o "$F/decode.mlir"
	LLM_CACHE_DIR=$PWD/c llm-lower --cpu x86-64-v3 -o b.o "$F/decode.mlir"
	[ "$(ls c/objects | wc -l)" = 2 ]
}

@test "the int8 kernels a module declares are defined in the target's form, and every form sums exactly" {
	cd "$BATS_TEST_TMPDIR"
	# the instruction each form is made of, for CPUs named (compiled
	# only): VNNI on 512 bits (AVX512-VNNI), on 256 (AVX-VNNI without
	# AVX-512), AVX2 without VNNI, x86-64 without AVX2; RISC-V V takes
	# the generic form
	for c in "znver4:vpdpbusd.*zmm" "alderlake:vpdpbusd.*ymm" x86-64-v3:vpmaddubsw x86-64:none; do
		llm-lower --no-cache --cpu "${c%%:*}" -o "${c%%:*}.o" "$F/qdot.mlir"
		n=$(objdump -d "${c%%:*}.o" | grep -cE 'vpdpbusd|vpmaddubsw' || true)
		if [ "${c#*:}" = none ]; then
			[ "$n" -eq 0 ]
		else
			[ "$(objdump -d "${c%%:*}.o" | grep -c "${c#*:}")" -gt 0 ]
		fi
	done
	run ! grep -q zmm <(objdump -d alderlake.o)
	llm-lower --no-cache --target riscv64-linux-gnu -o rv.o "$F/qdot.mlir"
	# every form this machine can run gives the plain integer sums
	run_form() {
		cc -O2 -o h "$F/qdot.c" "$1"
		run -0 ./h
		assert_output "ok"
	}
	run_form x86-64.o
	grep -qw avx2 /proc/cpuinfo && run_form x86-64-v3.o
	grep -qw avx_vnni /proc/cpuinfo && run_form alderlake.o
	grep -qw avx512_vnni /proc/cpuinfo && grep -qw avx512bw /proc/cpuinfo && run_form znver4.o
	# the definitions go in place of the declarations (kept with -s); a
	# module that declares none is lowered as it is
	llm-lower --no-cache -s --cpu x86-64-v3 -o q.o "$F/qdot.mlir" >/dev/null
	grep -q "^// .*/kernels/avx2.mlir" .q.o.lower.*/q.kernels.mlir
	run ! grep -q "^ *llvm.func @llm_qdot_i8(vector" .q.o.lower.*/q.kernels.mlir
	# a module with the kernels defined already is lowered as it is
	cp .q.o.lower.*/q.kernels.mlir defined.mlir
	llm-lower --no-cache -k decode -o defined.o defined.mlir
	llm-lower --no-cache -s -o d.o "$F/decode.mlir" >/dev/null
	[ ! -e .d.o.lower.*/d.kernels.mlir ]
}

@test "tunable constants take the tuning table's entry for the target's CPU (else generic's); an edited table changes the object; a bad table is refused (issue 42)" {
	cd "$BATS_TEST_TMPDIR"
	export LLM_CACHE_DIR="$BATS_TEST_TMPDIR/cache"
	tab="$PROJECT_ROOT/share/llm/tuning.json"
	g256=$(jq '.cpus.generic.params."decode.prefetch_bytes.g256"' "$tab")
	# a CPU with no entry of its own takes generic's: the distance in
	# 256-byte groups, the prefetch's displacement in bytes of i8
	run -0 llm-lower -v --cpu x86-64-v3 -o a.o "$F/tuned.mlir"
	assert_line --partial "tuned.mlir: 1 tuned constants, generic's entry of $tab: decode.prefetch_bytes.g256=$g256 "
	objdump -d a.o | grep -q "prefetchnta $(printf '0x%x' $((g256 / 256)))("
	# an edited table: another value for this CPU alone
	jq '.cpus."x86-64-v3" = {"params": {"decode.prefetch_bytes.g256": 8192}}' "$tab" >t.json
	run -0 llm-lower -v --tuning t.json --cpu x86-64-v3 -o b.o "$F/tuned.mlir"
	assert_line --partial "1 tuned constants, x86-64-v3's entry of t.json: decode.prefetch_bytes.g256=8192 decode.prefetch_bytes.g128="
	refute_output --partial "cache hit"
	objdump -d b.o | grep -q "prefetchnta 0x20("
	run ! cmp -s a.o b.o
	# another CPU still takes generic's from the edited table
	run -0 llm-lower -v --tuning t.json --cpu x86-64 -o c.o "$F/tuned.mlir"
	assert_line --partial "generic's entry of t.json"
	# prefill.int8_tiles and .bf16_tiles: generic's -1 leaves them to the
	# target (1 where the tile kernels are AMX's); a table can set them
	# for a CPU
	# prefill.three_rows likewise (1 where the target has AVX-512's 32
	# vector registers: none on another architecture)
	run -0 llm-lower --no-cache -v --cpu x86-64-v3 -o a.o "$F/tuned.mlir"
	assert_line --partial " prefill.int8_tiles=0 prefill.bf16_tiles=0 prefill.three_rows=0"
	run -0 llm-lower --no-cache -v --cpu sapphirerapids -o s.o "$F/tuned.mlir"
	assert_line --partial "generic's entry of $tab: decode.prefetch_bytes.g256=$g256 "
	assert_line --partial " prefill.int8_tiles=1 prefill.bf16_tiles=1 prefill.three_rows=1"
	run -0 llm-lower --no-cache -v --cpu znver4 -o s.o "$F/tuned.mlir"
	assert_line --partial " prefill.int8_tiles=0 prefill.bf16_tiles=0 prefill.three_rows=1"
	run -0 llm-lower --no-cache -v --cpu znver4 --features=-avx512f -o s.o "$F/tuned.mlir"
	assert_line --partial " prefill.three_rows=0"
	# (AMX-INT8 without AMX-BF16 is no AMX form: the kernels are one file)
	run -0 llm-lower --no-cache -v --cpu sapphirerapids --features=-amx-bf16 -o s.o "$F/tuned.mlir"
	assert_line --partial " prefill.int8_tiles=0 prefill.bf16_tiles=0"
	jq '.cpus."x86-64-v3" = {"params": {"prefill.int8_tiles": 1}}' "$tab" >t2.json
	run -0 llm-lower --no-cache -v --tuning t2.json --cpu x86-64-v3 -o a.o "$F/tuned.mlir"
	assert_line --partial " prefill.int8_tiles=1"
	# the set value is what mlir-opt reads (kept with -s)
	llm-lower --no-cache -s --tuning t.json --cpu x86-64-v3 -o d.o "$F/tuned.mlir" >/dev/null
	grep -q 'llm.tune_unit = 256 : i64} 32 : index' .d.o.lower.*/d.kernels.mlir
	# a module without tunable constants is lowered as it is
	llm-lower --no-cache -s -o e.o "$F/decode.mlir" >/dev/null
	[ ! -e .e.o.lower.*/e.kernels.mlir ]
	# bad tables: one line naming the table, no object
	bad() {
		jq "$1" "$tab" >bad.json
		run -1 --separate-stderr llm-lower --no-cache --tuning bad.json --cpu x86-64-v3 -o x.o "$F/tuned.mlir"
		[ "$stderr" = "llm-lower: bad.json: $2" ]
		[ ! -e x.o ]
	}
	bad '.format = "llm-tuning/9"' "format 'llm-tuning/9' is not llm-tuning/1"
	bad '.cpus.znver9 = {"params": {"decode.prefetch": 1}}' "cpus.znver9: unknown parameter 'decode.prefetch'"
	bad '.cpus.generic.params."decode.prefetch_bytes.g256" = -1' "cpus.generic: decode.prefetch_bytes.g256: want an integer in [0, 1048576]"
	bad 'del(.cpus.generic.params."decode.prefetch_bytes.g128")' "cpus.generic: parameter 'decode.prefetch_bytes.g128' missing"
	bad 'del(.cpus.generic)' "cpus.generic: no \"params\" object"
	bad '.cpus.generic.params."prefill.int8_tiles" = 2' "cpus.generic: prefill.int8_tiles: want an integer in [-1, 1]"
	bad '.cpus.generic.params."prefill.bf16_tiles" = -2' "cpus.generic: prefill.bf16_tiles: want an integer in [-1, 1]"
	bad '.cpus.generic.params."prefill.three_rows" = 3' "cpus.generic: prefill.three_rows: want an integer in [-1, 1]"
	# a module naming a parameter the table does not know
	sed 's/decode.prefetch_bytes.g256/decode.nosuch/' "$F/tuned.mlir" >u.mlir
	run -1 --separate-stderr llm-lower --no-cache -o u.o u.mlir
	[ "$stderr" = "llm-lower: u.mlir:5: unknown tunable parameter 'decode.nosuch'" ]
}
