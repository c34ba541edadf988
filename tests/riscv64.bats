#!/usr/bin/env bats
# riscv64 end to end (issue 45): models compiled here for riscv64
# (pipelines/model.mk TARGET=riscv64), linked by llm-link against the
# sysroot of ./configure --target riscv64, run by the riscv64 llm-run
# under qemu-riscv64 at VLEN 128 and 256 with 1 and 2 threads, and
# compared with this machine's build of the same model: logits within
# relative 1e-6 of the largest value (the summation order differs), the
# same greedy tokens.  The objects must be vector code.
#
# Needs ./configure --target riscv64 (config.mk names the sysroot and
# qemu-riscv64; make builds bin/riscv64/); .ci/run does it.

bats_require_minimum_version 1.5.0

setup_file() {
	load test_helper/common-setup
	_common_setup
	cfg() { sed -n "s/^$1 = //p" "$PROJECT_ROOT/config.mk" 2>/dev/null; }
	QEMU=$(cfg RISCV64_QEMU)
	SYSROOT=$(cfg RISCV64_SYSROOT)
	export QEMU SYSROOT RVRUN="$PROJECT_ROOT/bin/riscv64/llm-run"
}

setup() {
	load test_helper/common-setup
	_common_setup
	T=$BATS_TEST_TMPDIR
	F=$BATS_FILE_TMPDIR
	[ -n "$QEMU" ] && [ -x "$QEMU" ] && [ -x "$RVRUN" ] ||
		skip "not configured for riscv64: ./configure --target riscv64 && make"
}

# build SRC OUT TARGET [IMPORT_FLAGS [VAR=VALUE ...]]: pipelines/model.mk
# for TARGET (empty: this machine).
build() {
	make -s -f "$PROJECT_ROOT/pipelines/model.mk" LLM="${LLM_BIN:-$PROJECT_ROOT/bin}/" MODEL="$1" OUT="$2" \
		TARGET="$3" IMPORT_FLAGS="${4:-}" "${@:5}" -j2 >&2
}

# rv VLEN THREADS ARGS...: the riscv64 llm-run under qemu.
rv() {
	local vlen=$1 threads=$2
	shift 2
	"$QEMU" -L "$SYSROOT" -cpu "rv64,v=true,vlen=$vlen" "$RVRUN" -t "$threads" "$@"
}

# same_logits NAME SRC VOCAB [IMPORT_FLAGS]: NAME built for both, 8
# greedy tokens after three given ones: riscv64's logits at every VLEN and
# thread count within tolerance of this machine's.
same_logits() {
	local name=$1 src=$2 vocab=$3 flags=${4:-}
	build "$src" "$F/$name-x86" "" "$flags"
	build "$src" "$F/$name-rv" riscv64 "$flags"
	llm-run -m "$F/$name-x86/model.llm" --tokens 1,2,3 -n 8 --logits "$T/x86.f32" >/dev/null
	for vlen in 128 256; do
		for threads in 1 2; do
			rv "$vlen" "$threads" -m "$F/$name-rv/model.llm" --tokens 1,2,3 -n 8 --logits "$T/rv.f32" >/dev/null
			run -0 cmpf32 -g -c "$vocab" -r 1e-6 "$T/x86.f32" "$T/rv.f32"
			echo "$name, VLEN $vlen, $threads threads: $output" >&3
		done
	done
}

tiny() {
	ensure_tokenizer
	[ -d "$F/ck-$1" ] || mkmodel --preset tiny --family qwen2 --dtype "$1" --seed 1 -o "$F/ck-$1" >&2
}

@test "stories260K for riscv64: llm-link links it against the sysroot; under qemu the greedy text is this machine's, logits within 1e-6" {
	s="$SHARED/fixtures/stories260K/stories260K.gguf"
	[ -f "$s" ] || skip "no $s"
	same_logits stories "$s" 512
	run -0 file -L "$F/stories-rv/libmodel.so"
	assert_output --partial "RISC-V"
	run -0 jq -c . "$F/stories-rv/target.json"
	assert_output '{"triple":"riscv64","cpu":"generic-rv64","features":["a","c","d","f","m","v"]}'
	llm-run -m "$F/stories-x86/model.llm" -p "Once upon a time" -n 48 --temp 0 2>/dev/null >"$T/x86.txt"
	rv 256 2 -m "$F/stories-rv/model.llm" -p "Once upon a time" -n 48 --temp 0 2>/dev/null >"$T/rv.txt"
	cmp "$T/x86.txt" "$T/rv.txt"
	[ "$(wc -w <"$T/rv.txt")" -gt 20 ]
	# this machine names the architecture instead of failing to load it
	run -1 --separate-stderr llm-run -m "$F/stories-rv/model.llm" -p hi -n 1
	assert_equal "$stderr" "llm-run: $F/stories-rv/model.llm: built for riscv64 (generic-rv64): this machine is $(uname -m)"
}

@test "tiny Qwen2 for riscv64, f32, bf16 and Q8_0 with int8 activations: logits within 1e-6 of this machine's at VLEN 128 and 256, 1 and 2 threads" {
	tiny f32
	tiny bf16
	same_logits f32 "$F/ck-f32" 151936
	# bf16 weights with f32 activations on both (the default takes bf16
	# activations where x86 has AVX512-BF16)
	same_logits bf16 "$F/ck-bf16" 151936 "--activations f32"
	same_logits q8 "$F/ck-f32" 151936 "--dtype q8_0 --activations q8"
	run -0 jq -r '.weights.tensors[] | select(.name == "layers.0.wq") | "\(.quant) \(.dtype)"' "$F/q8-rv/model.json"
	assert_output "Q8_0 i8"
	# the int8 products are the rvv form's: 16-bit products of bytes
	# whose pair sums widen (the generic form's 32-bit products have none)
	[ "$("$LLVM_BINDIR/llvm-objdump" -d "$F/q8-rv/libmodel.so" | grep -c 'vwadd\.vv')" -gt 0 ]
}

@test "the riscv64 objects are vector code: every layer kernel of each model is at least 15% V instructions; stories260K's spill few register groups" {
	s="$SHARED/fixtures/stories260K/stories260K.gguf"
	[ -f "$s" ] || skip "no $s"
	[ -d "$F/stories-rv" ] || build "$s" "$F/stories-rv" riscv64
	tiny f32
	[ -d "$F/q8-rv" ] || build "$F/ck-f32" "$F/q8-rv" riscv64 "--dtype q8_0 --activations q8"
	for d in "$F/stories-rv" "$F/q8-rv"; do
		run -0 vector-share $(find "$d/obj" -name 'k*.o' | sort)
		echo "$output" | tail -1 >&3
		# each kernel object (not the glue, which calls them), by its share
		echo "$output" | awk '$1 != "total:" { sub(/^\(/, "", $6); sub(/%\),$/, "", $6); if ($2 >= 200 && $6 + 0 < 15) { print "scalar: " $0; bad = 1 } } END { exit bad }'
	done
	# the rvv transform scripts' tiles fit the registers at VLEN 128
	# (AVX2's spilled 416 whole groups: BENCHMARKS.md, "RISC-V V")
	run -0 vector-share $(find "$F/stories-rv/obj" -name 'k*.o' | sort)
	[ "$(echo "$output" | awk '$1 == "total:" { print $7 }')" -le 128 ]
}

@test "llm-link: riscv64 objects without a sysroot, or a sysroot that is not one, are refused and nothing is written" {
	s="$SHARED/fixtures/stories260K/stories260K.gguf"
	[ -f "$s" ] || skip "no $s"
	[ -d "$F/stories-rv" ] || build "$s" "$F/stories-rv" riscv64
	mkdir "$T/d"
	cp "$F/stories-rv/model.json" "$F/stories-rv"/tokenizer* "$F/stories-rv/weights.json" "$T/d/"
	tar -xOf "$F/stories-rv/model.llm" weights.bin >"$T/d/weights.bin"
	cp -r "$F/stories-rv/obj" "$T/d/obj"
	run -1 --separate-stderr llm-link --sysroot "$T/none" "$T/d"
	assert_equal "$stderr" "llm-link: $T/none: sysroot of riscv64: No such file or directory"
	mkdir "$T/empty"
	run -1 --separate-stderr llm-link --sysroot "$T/empty" "$T/d"
	assert_equal "$stderr" "llm-link: $T/empty: no libomp.so for riscv64 (LLVM's OpenMP runtime, Debian's libomp-dev of that architecture): ./configure --target riscv64 puts one there"
	[ ! -e "$T/d/model.llm" ] && [ ! -e "$T/d/libmodel.so" ]
	run -0 llm-link --sysroot "$SYSROOT" "$T/d"
	cmp "$T/d/libmodel.so" "$F/stories-rv/libmodel.so"
}

@test "FEATURES adds to riscv64's default extensions (Zvfbfmin: bf16 widened by vfwcvtbf16, the same logits); llm-run checks single letters (AT_HWCAP) and multi-letter ones (/proc/cpuinfo's isa line) against the CPU" {
	s="$SHARED/fixtures/stories260K/stories260K.gguf"
	[ -f "$s" ] || skip "no $s"
	build "$s" "$T/z" riscv64 "" FEATURES=+zvfbfmin
	run -0 jq -c .features "$T/z/target.json"
	assert_output '["a","c","d","f","m","v","zvfbfmin"]'
	run -1 --separate-stderr "$QEMU" -L "$SYSROOT" -cpu rv64,v=true "$RVRUN" -m "$T/z/model.llm" -p hi -n 2
	assert_equal "$stderr" "llm-run: $T/z/model.llm: built for generic-rv64 (riscv64): this CPU lacks zvfbfmin"
	run -0 "$QEMU" -L "$SYSROOT" -cpu rv64,v=true,zvfbfmin=true "$RVRUN" -m "$T/z/model.llm" -p hi -n 2
	# bf16 weights with Zvfbfmin: widened by vfwcvtbf16 (the pass lists
	# leave the conversion to LLVM), the same logits as without it
	tiny bf16
	[ -d "$F/bf16-rv" ] || build "$F/ck-bf16" "$F/bf16-rv" riscv64 "--activations f32"
	build "$F/ck-bf16" "$T/bz" riscv64 "--activations f32" FEATURES=+zvfbfmin
	[ "$("$LLVM_BINDIR/llvm-objdump" -d --mattr=+zvfbfmin "$T/bz/libmodel.so" | grep -c vfwcvtbf16)" -gt 0 ]
	[ "$("$LLVM_BINDIR/llvm-objdump" -d --mattr=+zvfbfmin "$F/bf16-rv/libmodel.so" | grep -c vfwcvtbf16)" -eq 0 ]
	"$QEMU" -L "$SYSROOT" -cpu rv64,v=true,zvfbfmin=true "$RVRUN" -m "$T/bz/model.llm" --tokens 1,2,3 -n 8 \
		--logits "$T/bz.f32" >/dev/null
	"$QEMU" -L "$SYSROOT" -cpu rv64,v=true "$RVRUN" -m "$F/bf16-rv/model.llm" --tokens 1,2,3 -n 8 \
		--logits "$T/bn.f32" >/dev/null
	cmpf32 -g -c 151936 "$T/bn.f32" "$T/bz.f32"
	[ -d "$F/stories-rv" ] || build "$s" "$F/stories-rv" riscv64
	run -1 --separate-stderr "$QEMU" -L "$SYSROOT" -cpu rv64,v=false "$RVRUN" -m "$F/stories-rv/model.llm" -p hi -n 2
	assert_equal "$stderr" "llm-run: $F/stories-rv/model.llm: built for generic-rv64 (riscv64): this CPU lacks v"
}
