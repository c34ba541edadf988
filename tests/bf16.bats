#!/usr/bin/env bats
# --activations bf16: the products with bf16 weights round x to bf16 and
# sum the products in f32 on the bf16 kernel (@llm_bdot: vdpbf16ps where
# the target has AVX512-BF16, plain vector arithmetic elsewhere).  The
# oracle is tests/tools/refmodel --bf16-activations, which rounds the same
# activations (from double where ours are f32) and sums in double.

setup_file() {
	load test_helper/common-setup
	_common_setup
	ensure_tokenizer
	# tiny-k: rows of 256, 128 and 512 (whole chunks of 64 for the
	# kernel), columns of 256 and 512 (calls of 32)
	mkmodel --preset tiny-k --family qwen2 --dtype bf16 --seed 5 -o "$BATS_FILE_TMPDIR/ck" >&2
}

setup() {
	load test_helper/common-setup
	_common_setup
	T=$BATS_TEST_TMPDIR
	CK=$BATS_FILE_TMPDIR/ck
	LLM="${LLM_BIN:-$PROJECT_ROOT/bin}/"
	V=151936
}

# build OUT [LOWER_FLAGS] [FEATURES]: the bf16 checkpoint with --activations bf16.
build() {
	make -s -f "$PROJECT_ROOT/pipelines/model.mk" LLM="$LLM" MODEL="$CK" OUT="$1" LOWER_FLAGS="${2-}" \
		FEATURES="${3-}" IMPORT_FLAGS="--max-context 64 --prefill-chunk 16 --activations bf16" -j2 >&2
}

@test "--activations bf16: the products with bf16 weights take x rounded to bf16, as refmodel --bf16-activations computes" {
	build "$T/b"
	[ "$(jq -r .dtypes.activations "$T/b/model.json")" = bf16 ]
	grep -q "llvm.call @llm_bdot" "$T/b/decode.mlir"
	grep -q "llvm.call @llm_bdot" "$T/b/prefill.mlir"
	# prompts of 1 to 5 tokens (prefill rows two or three at a time, then one) and
	# of 19 (over the 16-row chunk), then a decode step.  refmodel rounds
	# x from double, ours from f32: where the two straddle a bf16 rounding
	# boundary one element rounds the other way and a logit moves by
	# ~0.3% (two or three prompts in the seven here); a wrong kernel, sum
	# or row fails them all.
	exact=0
	for p in 3 17,99 1,2,3 7,8,9,10 9,9,9,9,9 1000,5,6 $(seq -s, 1 19); do
		gen=$(llm-run -m "$T/b/model.llm" -t 2 --tokens "$p" -n 2 --logits "$T/run.f32" --json |
			jq -r '.generated_tokens[0]')
		refmodel --all --bf16-activations --tokens "$p,$gen" -o "$T/ref.f32" "$CK"
		tail -c $((2 * V * 4)) "$T/ref.f32" >"$T/ref2.f32"
		run -0 cmpf32 -r 0.01 "$T/ref2.f32" "$T/run.f32"
		cmpf32 -a 1e-5 "$T/ref2.f32" "$T/run.f32" >/dev/null && exact=$((exact + 1))
	done
	echo "$exact of 7 within 1e-5 of refmodel --bf16-activations, all within 1%" >&3
	[ "$exact" -ge 4 ]
	# and the rounding is there: the exact products are ~0.3% away
	refmodel --all --tokens "$p,$gen" -o "$T/ref0.f32" "$CK"
	tail -c $((2 * V * 4)) "$T/ref0.f32" >"$T/ref0_2.f32"
	run ! cmpf32 -a 1e-4 "$T/ref0_2.f32" "$T/run.f32"
}

@test "--activations bf16: vdpbf16ps where the target has AVX512-BF16; the generic kernel gives the same logits" {
	build "$T/b1"
	build "$T/b2" "" -avx512bf16
	[ "$(objdump -d "$T/b2/libmodel.so" | grep -c vdpbf16ps)" -eq 0 ]
	for i in 1 2; do
		llm-run -m "$T/b$i/model.llm" -t 2 --tokens 1,2,3,4,5,6,7,8,9,10 -n 8 --logits "$T/$i.f32" 2>/dev/null
	done
	# the same sums in the same order; vdpbf16ps reads denormals as zero,
	# which these values never are
	run -0 cmpf32 -a 1e-6 "$T/1.f32" "$T/2.f32"
	echo "generic against the target's kernel: $output" >&3
	if [ "$(jq -r '.features | index("avx512_bf16") != null' "$T/b1/target.json")" = true ]; then
		[ "$(objdump -d "$T/b1/libmodel.so" | grep -c vdpbf16ps)" -gt 0 ]
	else
		echo "(this CPU has no AVX512-BF16: both are the generic kernel)" >&3
	fi
}

@test "--activations bf16: prefill's row passes two or three rows of x at a time (prefill.three_rows) give the same logits, bit for bit" {
	for v in 0 1; do
		tuning_with "$T/rows$v.json" prefill.three_rows $v
		build "$T/b$v" "--tuning $T/rows$v.json"
	done
	run ! cmp -s "$T/b0/libmodel.so" "$T/b1/libmodel.so"
	identical_logits "$T/b0/model.llm" "$T/b1/model.llm"
}

# amx: 1 if this machine runs AMX-BF16 code (the CPU has it and Linux
# enables the tile state).
amx() {
	grep -qw amx_bf16 /proc/cpuinfo && grep -qw amx_tile /proc/cpuinfo
}

@test "--activations bf16, prefill on the bf16 tile kernel (a tuning table asks for it): refmodel --bf16-activations's logits (issue 42)" {
	# tables that ask for the row passes and for the tile products on
	# every CPU: the tiles' portable form here (the AMX one where the CPU
	# has it, which takes the tiles by default)
	for v in 0 1; do
		tuning_with "$T/tiles$v.json" prefill.bf16_tiles $v
		build "$T/t$v" "--tuning $T/tiles$v.json"
	done
	grep -q "llvm.call @llm_qtile_bf16" "$T/t1/prefill.mlir"
	# prompts of 1 to 36 tokens: blocks of 16 rows whole and cut, one
	# and two blocks of a pair, chunks of 16 then 4; as in the first
	# test, a rounding to bf16 may go the other way (refmodel rounds from
	# double): most within 1e-5, all within 1%
	exact=0 differ=0
	for n in 1 3 5 16 17 20 36; do
		p=$(seq -s, 3 $((n + 2)))
		gen=$(llm-run -m "$T/t1/model.llm" -t 2 --tokens "$p" -n 2 --logits "$T/run.f32" --json |
			jq -r '.generated_tokens[0]')
		refmodel --all --bf16-activations --tokens "$p,$gen" -o "$T/ref.f32" "$CK"
		tail -c $((2 * V * 4)) "$T/ref.f32" >"$T/ref2.f32"
		run -0 cmpf32 -r 0.01 "$T/ref2.f32" "$T/run.f32"
		cmpf32 -a 1e-5 "$T/ref2.f32" "$T/run.f32" >/dev/null && exact=$((exact + 1))
		# the tiles ran: their sums in another order than the row
		# passes' round some activation the other way somewhere
		llm-run -m "$T/t0/model.llm" -t 2 --tokens "$p" -n 1 --logits "$T/rows.f32" >/dev/null
		llm-run -m "$T/t1/model.llm" -t 2 --tokens "$p" -n 1 --logits "$T/tiles.f32" >/dev/null
		cmp -s "$T/rows.f32" "$T/tiles.f32" || differ=$((differ + 1))
	done
	echo "$exact of 7 within 1e-5 of refmodel --bf16-activations, all within 1%; $differ differ from the row passes" >&3
	[ "$exact" -ge 4 ]
	[ "$differ" -ge 1 ]
}

@test "bf16 weights for an AMX CPU (sapphirerapids): prefill's products are tdpbf16ps with the accumulators in tiles, decode's vdpbf16ps; it runs where the CPU has AMX, and is refused by name elsewhere (issue 42)" {
	make -s -f "$PROJECT_ROOT/pipelines/model.mk" LLM="$LLM" MODEL="$CK" OUT="$T/b" CPU=sapphirerapids \
		IMPORT_FLAGS="--max-context 64 --prefill-chunk 16" -j2 >&2
	[ "$(jq -r .dtypes.activations "$T/b/model.json")" = bf16 ]
	jq -e '.features | index("amx_bf16") and index("amx_tile")' "$T/b/target.json"
	tiles=0
	for o in "$T"/b/obj/prefill/*.o; do
		objdump -d --no-show-raw-insn "$o" >"$T/o.s"
		tiles=$((tiles + $(grep -c 'tdpbf16ps' "$T/o.s" || true)))
		# the loop over the groups: 3 tileloadd and 2 tdpbf16ps, the
		# accumulators staying in tiles (no tilestored between a tile
		# product and the loop's branch back)
		if grep -q tdpbf16ps "$T/o.s"; then
			awk '/tileloadd/ { l++ } /tdpbf16ps/ { t++ } /tilestored/ { s++ }
				/\tj[a-z]+ / { if (l == 3 && t == 2 && s == 0) ok = 1; l = t = s = 0 }
				END { exit !ok }' "$T/o.s"
		fi
	done
	echo "prefill: $tiles tdpbf16ps" >&3
	[ "$tiles" -ge 1 ]
	for o in "$T"/b/obj/decode/*.o; do
		[ "$(objdump -d "$o" | grep -c 'tdpbf16ps\|tileloadd' || true)" -eq 0 ]
	done
	[ "$(objdump -d "$T/b/libmodel.so" | grep -c 'vdpbf16ps')" -gt 0 ]
	if amx; then
		p=$(seq -s, 3 22)
		gen=$(llm-run -m "$T/b/model.llm" -t 2 --tokens "$p" -n 2 --logits "$T/run.f32" --json |
			jq -r '.generated_tokens[0]')
		refmodel --all --bf16-activations --tokens "$p,$gen" -o "$T/ref.f32" "$CK"
		tail -c $((2 * V * 4)) "$T/ref.f32" >"$T/ref2.f32"
		run -0 cmpf32 -r 0.01 "$T/ref2.f32" "$T/run.f32"
		echo "AMX on this CPU, against refmodel --bf16-activations: $output" >&3
	else
		run -1 --separate-stderr llm-run -m "$T/b/model.llm" --tokens 1,2 -n 1
		assert_equal "$output" ""
		[[ "$stderr" == *"this CPU lacks "*amx_bf16* ]]
		echo "no AMX on this CPU: the tile products were compiled, not run" >&3
	fi
}

@test "--activations bf16 leaves the products with other weights alone: an f32 checkpoint gives the f32 activations' logits" {
	mkmodel --preset tiny-k --family llama --seed 5 -o "$T/ck32" >&2
	for a in f32 bf16; do
		make -s -f "$PROJECT_ROOT/pipelines/model.mk" LLM="$LLM" MODEL="$T/ck32" OUT="$T/b$a" \
			IMPORT_FLAGS="--max-context 64 --prefill-chunk 16 --activations $a" -j2 >&2
		llm-run -m "$T/b$a/model.llm" -t 2 --tokens 1,2,3 -n 4 --logits "$T/$a.f32" 2>/dev/null
	done
	! grep -q "llm_bdot" "$T/bbf16/decode.mlir"
	cmp "$T/f32.f32" "$T/bf16.f32"
}

@test "--activations auto (the default): bf16 for bf16 weights where the target has AVX512-BF16, f32 elsewhere and for other weights; the target is --cpu's (and --features'), else this host's (issue 42)" {
	act() {
		rm -rf "$T/i"
		llm-import "$@" -o "$T/i" >/dev/null
		jq -r .dtypes.activations "$T/i/model.json"
	}
	[ "$(act --cpu znver4 "$CK")" = bf16 ]
	[ "$(act --cpu sapphirerapids "$CK")" = bf16 ]
	[ "$(act --cpu znver3 "$CK")" = f32 ]
	[ "$(act --cpu x86-64-v4 "$CK")" = f32 ]
	[ "$(act --cpu znver4 --features=-avx512bf16 "$CK")" = f32 ]
	[ "$(act --target riscv64-linux-gnu "$CK")" = f32 ]
	# asked for, or other weights: as before
	[ "$(act --cpu znver4 --activations f32 "$CK")" = f32 ]
	[ "$(act --cpu znver4 --dtype f32 "$CK")" = f32 ]
	[ "$(act --cpu znver4 --dtype q8_0 "$CK")" = q8 ]
	# no --cpu: this host's, said with -v
	run -0 --separate-stderr llm-import -v -o "$T/h" "$CK"
	a=$(jq -r .dtypes.activations "$T/h/model.json")
	[[ "$stderr" == *"llm-import: --activations auto: $a for bf16 weights on "* ]]
	if grep -qw avx512_bf16 /proc/cpuinfo; then [ "$a" = bf16 ]; else [ "$a" = f32 ]; fi
	# pipelines/model.mk passes its CPU
	make -s -f "$PROJECT_ROOT/pipelines/model.mk" LLM="$LLM" MODEL="$CK" OUT="$T/m" CPU=znver3 \
		IMPORT_FLAGS="--max-context 64 --prefill-chunk 16" "$T/m/model.json" >&2
	[ "$(jq -r .dtypes.activations "$T/m/model.json")" = f32 ]
	# and its FEATURES
	make -s -f "$PROJECT_ROOT/pipelines/model.mk" LLM="$LLM" MODEL="$CK" OUT="$T/f" CPU=znver4 FEATURES=-avx512bf16 \
		IMPORT_FLAGS="--max-context 64 --prefill-chunk 16" "$T/f/model.json" >&2
	[ "$(jq -r .dtypes.activations "$T/f/model.json")" = f32 ]
	# a target that cannot be resolved: one line, nothing written
	run -1 --separate-stderr llm-import --cpu nosuch -o "$T/n" "$CK"
	[[ "$stderr" == "llm-import: $CK: cannot tell the target's features: "*"nosuch"* ]]
	[ ! -e "$T/n" ]
}
