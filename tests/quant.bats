#!/usr/bin/env bats
# Block-quantized GGUF files (Q8_0, Q4_0, Q4_K_M, ...): llm-import takes
# them and llm-pack-weights decodes their tensors (lib/formats/quant.c).  The
# oracle is llama.cpp itself, the build the npm package node-llama-cpp
# ships, through tests/tools/ggml-ref: its dequantize_row_* for the bits
# of every block type, its llama_model_quantize for the test files (made
# here from mkmodel checkpoints, nothing committed), and its forward pass
# for the logits.  The suite skips with a message when that package
# cannot be installed (no npm registry).
#
# The tiny-k preset has rows of 256 and 512, so that llama.cpp's k-quant
# mixes hold Q2_K .. Q6_K (on the tiny preset's rows of 64 it falls back
# to other types).

setup_file() {
	load test_helper/common-setup
	_common_setup
	ensure_tokenizer
	if ! ggml-ref check q8_0 /dev/null /dev/null >"$BATS_FILE_TMPDIR/ggml-ref.log" 2>&1; then
		touch "$BATS_FILE_TMPDIR/no-llamacpp"
	fi
}

setup() {
	load test_helper/common-setup
	_common_setup
	T=$BATS_TEST_TMPDIR
	H="$PROJECT_ROOT/tests/tools/hf2gguf.mjs"
	LLM="${LLM_BIN:-$PROJECT_ROOT/bin}/"
	V=151936
}

need_llamacpp() {
	[ ! -e "$BATS_FILE_TMPDIR/no-llamacpp" ] ||
		skip "llama.cpp (npm node-llama-cpp) could not be had: $(tail -1 "$BATS_FILE_TMPDIR/ggml-ref.log")"
}

# small FAMILY: a tiny-k checkpoint as an F32 GGUF with a 1024-token
# embedding and no tokenizer (for import and pack), made once per file.
small() {
	local d="$BATS_FILE_TMPDIR/ck-$1" g="$BATS_FILE_TMPDIR/small-$1.gguf"
	[ -d "$d" ] || mkmodel --preset tiny-k --family "$1" --seed 5 -o "$d" >&2
	[ -f "$g" ] || node "$H" --llamacpp --no-tokenizer --vocab 1024 "$d" "$g" >&2
	echo "$g"
}

# full: the tiny-k llama checkpoint as an F32 GGUF with its tokenizer (for a
# bundle), made once per file.
full() {
	local d="$BATS_FILE_TMPDIR/ck-llama" g="$BATS_FILE_TMPDIR/full.gguf"
	[ -d "$d" ] || mkmodel --preset tiny-k --family llama --seed 5 -o "$d" >&2
	[ -f "$g" ] || node "$H" --llamacpp "$d" "$g" >&2
	echo "$g"
}

# data DIR: weights.bin of DIR without its header (which holds the plan's
# fingerprint: the plans of a quantized file and of its decoded copy
# differ in their "quant" keys only).
data() {
	weights_of "$1" | tail -c +4097
}

# types GGUF-DIR: the block types of the plan, with their counts.
types() {
	jq -r '[.weights.tensors[] | .quant // empty] | group_by(.) | map("\(.[0]) \(length)") | join(", ")' \
		"$1/model.json"
}

@test "every block type decodes as ggml's dequantize_row_* does, bit for bit" {
	need_llamacpp
	# Random bytes: every bit pattern is a block (scales of any sign,
	# subnormal, infinite or NaN included).
	for tb in q4_0:18 q4_1:20 q5_0:22 q5_1:24 q8_0:34 q2_K:84 q3_K:110 q4_K:144 q5_K:176 q6_K:210; do
		t=${tb%:*}
		head -c $((${tb#*:} * 2048)) /dev/urandom >"$T/$t.bin"
		dequant "$t" "$T/$t.bin" "$T/$t.f32"
		run -0 ggml-ref check "$t" "$T/$t.bin" "$T/$t.f32"
		echo "$output" >&3
	done
}

# tensor DIR NAME: the bytes of plan tensor NAME in DIR/weights.bin.
tensor() {
	local off bytes
	off=$(jq -r --arg n "$2" '.weights.tensors[] | select(.name == $n) | .offset' "$1/model.json")
	bytes=$(jq -r --arg n "$2" '.weights.tensors[] | select(.name == $n) | .bytes' "$1/model.json")
	tail -c +$((4097 + off)) "$1/weights.bin" | head -c "$bytes"
}

# layouts DIR: the tiled layouts of the plan, with their counts.
layouts() {
	jq -r '[.weights.tensors[] | .layout // empty] | group_by(.) | map("\(.[0]) \(length)") | join(", ")' \
		"$1/model.json"
}

# pair GGUF FTYPE [IMPORT-FLAGS...]: GGUF quantized by llama.cpp to FTYPE
# ($T/q.gguf) and decoded by ggml ($T/d.gguf), imported (the first with
# the flags) and packed into $T/q and $T/d.
pair() {
	local g=$1 f=$2
	shift 2
	ggml-ref quantize "$g" "$T/q.gguf" "$f"
	ggml-ref dequantize "$T/q.gguf" "$T/d.gguf"
	llm-import "$@" -o "$T/q" "$T/q.gguf" >/dev/null
	llm-import -o "$T/d" "$T/d.gguf" >/dev/null
	llm-pack-weights "$T/q/model.json" >/dev/null
	llm-pack-weights "$T/d/model.json" >/dev/null
}

# decodes_as Q D: every tensor of build Q, decoded from its layout, is
# build D's (the decoded file's), bit for bit
decodes_as() {
	jq -r '.weights.tensors[] | "\(.name) \(.layout // "-") \(.shape[0]) \(.shape[1] // 1)"' \
		"$1/model.json" | while read -r name layout rows cols; do
		if [ "$layout" = - ]; then
			cmp <(tensor "$1" "$name") <(tensor "$2" "$name")
		else
			tensor "$1" "$name" >"$T/t.bin"
			dequant --tiled "$layout" "$rows" "$cols" "$T/t.bin" "$T/t.f32"
			cmp "$T/t.f32" <(tensor "$2" "$name")
		fi
	done
}

@test "files quantized by llama.cpp import and pack to ggml's own decoding of them, for every mix" {
	need_llamacpp
	g=$(small llama)
	for f in Q8_0 Q4_0 Q4_1 Q5_0 Q5_1 Q2_K Q3_K_M Q4_K_M Q5_K_M Q6_K; do
		pair "$g" "$f" --dtype f32
		echo "$f: $(types "$T/q")" >&3
		[ -z "$(types "$T/d")" ]
		[ -z "$(layouts "$T/q")" ]
		[ "$(jq -r .dtypes.weights "$T/q/model.json")" = f32 ]
		cmp <(data "$T/q") <(data "$T/d")
		rm -r "$T/q" "$T/d"
	done
}

@test "by default the matrices stay quantized, in tiles that decode to ggml's values, for every mix" {
	need_llamacpp
	g=$(small llama)
	for f in Q8_0 Q4_0 Q4_1 Q5_0 Q5_1 Q2_K Q3_K_M Q4_K_M Q5_K_M Q6_K; do
		pair "$g" "$f"
		echo "$f: $(layouts "$T/q")" >&3
		# the embedding, the 14 matrices of the 2 layers and the LM head;
		# the norms stay f32
		[ "$(jq '[.weights.tensors[] | select(.layout)] | length' "$T/q/model.json")" = 16 ]
		[ "$(jq -r '.weights.tensors[] | select(.name == "embed") | .dtype' "$T/q/model.json")" = i8 ]
		[ "$(jq -r '[.weights.tensors[] | select(.name | endswith("norm")) | .dtype] | unique | join(",")' \
			"$T/q/model.json")" = f32 ]
		decodes_as "$T/q" "$T/d"
		# weights.json says the layout too
		[ "$(jq -r '.tensors[] | select(.name == "lm_head") | .layout' "$T/q/weights.json")" = \
			"$(jq -r '.weights.tensors[] | select(.name == "lm_head") | .layout' "$T/q/model.json")" ]
		rm -r "$T/q" "$T/d"
	done
}

@test "--activations q8: the k-quants keep their int8 sub-scales and f16 d (-sub8), which decode to ggml's values; f32 activations refuse them" {
	need_llamacpp
	g=$(small llama)
	for f in Q4_K_M Q5_K_M Q6_K; do
		pair "$g" "$f" --activations q8
		echo "$f: $(layouts "$T/q")" >&3
		[ "$(jq '[.weights.tensors[] | select(.quant == "Q4_K" or .quant == "Q5_K" or .quant == "Q6_K") |
			select(.layout | endswith("-sub8") | not)] | length' "$T/q/model.json")" = 0 ]
		[ "$(jq '[.weights.tensors[] | select(.layout // "" | endswith("-sub8"))] | length' \
			"$T/q/model.json")" -gt 0 ]
		decodes_as "$T/q" "$T/d"
		[ "$f" = Q6_K ] || rm -r "$T/q" "$T/d"
	done
	# the qdequant/qgemv paths of f32 activations read f32 or f16 scales:
	# a -sub8 plan without q8 activations is refused, by the layout's name
	jq '.dtypes.activations = "f32"' "$T/q/model.json" >"$T/f32.json"
	mv "$T/f32.json" "$T/q/model.json"
	run -1 llm-pack-weights "$T/q/model.json"
	assert_output --regexp "layout i6-r8-g16-sub8 is read by the int8 kernels only: it needs dtypes.activations \"q8\"$"
}

@test "quantized bundles compute with the decoded weights: the logits of the decoded file's bundle" {
	need_llamacpp
	g=$(full)
	# a 20-token prompt: a prefill chunk of 16 and a prefill_kv of 4,
	# then decode steps
	p=1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20
	for f in Q8_0 Q4_0 Q5_1 Q2_K Q6_K; do
		ggml-ref quantize "$g" "$T/q.gguf" "$f"
		ggml-ref dequantize "$T/q.gguf" "$T/d.gguf"
		for m in q d; do
			make -s -f "$PROJECT_ROOT/pipelines/model.mk" LLM="$LLM" MODEL="$T/$m.gguf" OUT="$T/b$m" \
				IMPORT_FLAGS="--max-context 64 --prefill-chunk 16 --activations f32" -j2 >&2
			llm-run -m "$T/b$m/model.llm" -t 2 --tokens "$p" -n 8 --logits "$T/$m.f32" 2>/dev/null
		done
		[ -n "$(layouts "$T/bq")" ]
		[ -z "$(layouts "$T/bd")" ]
		run -0 cmpf32 -a 1e-5 "$T/d.f32" "$T/q.f32"
		echo "$f: $(layouts "$T/bq"): $output" >&3
		rm -r "$T/bq" "$T/bd"
	done
}

@test "a quantized build's weights take the bytes of llama-quantize's file, give or take 2%: 5- and 6-bit codes for Q5_0, Q5_1, Q5_K and Q6_K (issue 48)" {
	need_llamacpp
	# a 3072-wide FFN and a 256-wide model: Q4_K_M takes Q6_K for the head
	# and some v and down, Q5_0 where llama-quantize falls back; the
	# file's metadata is a few KiB (no tokenizer)
	g=$(small llama)
	for f in Q4_K_M Q5_0 Q5_1 Q5_K_M Q6_K; do
		ggml-ref quantize "$g" "$T/q.gguf" "$f"
		llm-import -o "$T/q" "$T/q.gguf" >/dev/null
		llm-pack-weights "$T/q/model.json" >/dev/null
		file=$(stat -c %s "$T/q.gguf")
		# the file's tensors (not the RoPE tables, which the file has not)
		ours=$(jq '[.weights.tensors[] | select(.source | length > 0) | .bytes] | add' "$T/q/model.json")
		echo "$f ($(layouts "$T/q")): $ours bytes of weights, the file $file" >&3
		[ "$ours" -le $((file * 102 / 100)) ]
		# the layouts of 5 and 6 bits where the types have them
		[ "$(jq '[.weights.tensors[] | select(.quant == "Q5_0" or .quant == "Q5_1" or .quant == "Q5_K" or .quant == "Q6_K") |
			select(.layout | test("^(i5|u5|i6)-") | not)] | length' "$T/q/model.json")" = 0 ]
		# with f32 activations they are bytes (the exact products' form)
		llm-import --activations f32 -o "$T/f" "$T/q.gguf" >/dev/null
		[ "$(jq '[.weights.tensors[] | select(.source | length > 0) | .bytes] | add' "$T/f/model.json")" -gt "$ours" ]
		rm -r "$T/q" "$T/f"
	done
}

@test "the k-quant mixes hold the types llama-quantize chose; q and k are unpermuted after decoding" {
	need_llamacpp
	g=$(small llama)
	ggml-ref quantize "$g" "$T/q.gguf" Q4_K_M
	llm-import -o "$T/q" "$T/q.gguf" >/dev/null
	[ "$(types "$T/q")" = "Q4_K 13, Q6_K 3" ]
	run jq -r '.weights.tensors[] | select(.name == "layers.0.wq") | "\(.quant) \(.transform)"' "$T/q/model.json"
	[ "$output" = "Q4_K unpermute_qk" ]
	run jq -r '.weights.tensors[] | select(.name == "lm_head") | .quant' "$T/q/model.json"
	[ "$output" = "Q6_K" ]
	# norms stay F32 in the file and in the plan
	run jq -r '[.weights.tensors[] | select(.name | endswith("norm")) | .quant] | unique | join(",")' \
		"$T/q/model.json"
	[ "$output" = "" ]
}

@test "a quantized qwen2 file (q/k/v biases) packs to ggml's decoding, in f32 and in bf16" {
	need_llamacpp
	g=$(small qwen2)
	ggml-ref quantize "$g" "$T/q.gguf" Q4_K_M
	ggml-ref dequantize "$T/q.gguf" "$T/d.gguf"
	for dt in f32 bf16; do
		llm-import --dtype "$dt" -o "$T/q-$dt" "$T/q.gguf" >/dev/null
		llm-import --dtype "$dt" -o "$T/d-$dt" "$T/d.gguf" >/dev/null
		llm-pack-weights "$T/q-$dt/model.json" >/dev/null
		llm-pack-weights "$T/d-$dt/model.json" >/dev/null
		cmp <(data "$T/q-$dt") <(data "$T/d-$dt")
	done
	[ "$(stat -c %s "$T/q-bf16/weights.bin")" -lt "$(stat -c %s "$T/q-f32/weights.bin")" ]
}

@test "a quantized phi3 file packs to ggml's decoding: q, k and v from the rows of attn_qkv, gate and up from those of ffn_up (issue 44)" {
	need_llamacpp
	g=$(small phi3)
	ggml-ref quantize "$g" "$T/q.gguf" Q4_K_M
	ggml-ref dequantize "$T/q.gguf" "$T/d.gguf"
	llm-import --dtype f32 -o "$T/q" "$T/q.gguf" >/dev/null
	llm-import --dtype f32 -o "$T/d" "$T/d.gguf" >/dev/null
	jq -e '[.weights.tensors[] | select(.name | test("layers.1.w(q|k|v|gate|up)$")) | [.source[0], .first_row]]
		== [["blk.1.attn_qkv.weight", 0], ["blk.1.attn_qkv.weight", 256], ["blk.1.attn_qkv.weight", 384],
		["blk.1.ffn_up.weight", 0], ["blk.1.ffn_up.weight", 512]]' "$T/q/model.json"
	llm-pack-weights "$T/q/model.json" >/dev/null
	llm-pack-weights "$T/d/model.json" >/dev/null
	cmp <(data "$T/q") <(data "$T/d")
}

@test "a Q4_K_M bundle gives refmodel's and llama.cpp's logits on the decoded weights; llama.cpp on the Q4_K_M file is within 5%" {
	need_llamacpp
	g=$(full)
	ggml-ref quantize "$g" "$T/q.gguf" Q4_K_M
	ggml-ref dequantize "$T/q.gguf" "$T/d.gguf"
	make -s -f "$PROJECT_ROOT/pipelines/model.mk" LLM="$LLM" MODEL="$T/q.gguf" OUT="$T/b" \
		IMPORT_FLAGS="--max-context 64 --prefill-chunk 16 --activations f32" -j2 >&2
	gen=$(llm-run -m "$T/b/model.llm" -t 2 --tokens 1,2,3,4,5 -n 16 --logits "$T/run.f32" --json |
		jq -r '.generated_tokens[0:15] | join(",")')
	ids="1,2,3,4,5,$gen"
	# the bench names the file type as llama-bench does (issue 48)
	llm-run -m "$T/b/model.llm" -t 2 --bench pp=1,tg=0,reps=1 --json >"$T/bench.json"
	[[ "$(jq -r '.[0].model_type' "$T/bench.json")" == "llama "*" Q4_K - Medium" ]]
	# refmodel (double precision) on the checkpoint of the decoded weights
	node "$PROJECT_ROOT/tests/tools/gguf2hf.mjs" "$T/d.gguf" "$T/hf" >&2
	refmodel --all --tokens "$ids" -o "$T/ref.f32" "$T/hf"
	tail -c $((16 * V * 4)) "$T/ref.f32" >"$T/ref16.f32"
	run -0 cmpf32 -a 1e-4 "$T/ref16.f32" "$T/run.f32"
	echo "refmodel: $output" >&3
	# llama.cpp on the decoded (F32) file: the same computation in f32
	ggml-ref logits "$T/d.gguf" "$ids" "$T/lcd.f32"
	tail -c $((16 * V * 4)) "$T/lcd.f32" >"$T/lcd16.f32"
	run -0 cmpf32 -a 1e-4 -c "$V" "$T/lcd16.f32" "$T/run.f32"
	echo "llama.cpp F32: $output" >&3
	# llama.cpp on the Q4_K_M file quantizes the activations to 8 bits per
	# block for its dot products (Q8_K): about 1% of the logits' scale
	# apart; 5% would be an error in the weights, not that rounding.
	ggml-ref logits "$T/q.gguf" "$ids" "$T/lcq.f32"
	tail -c $((16 * V * 4)) "$T/lcq.f32" >"$T/lcq16.f32"
	run -0 cmpf32 -r 0.05 -c "$V" "$T/lcq16.f32" "$T/run.f32"
	echo "llama.cpp Q4_K_M: $output" >&3
}

@test "--activations q8: every layout's products take x rounded to int8 blocks, as refmodel --q8-activations computes" {
	need_llamacpp
	g=$(full)
	total=0
	for f in Q8_0 Q4_0 Q5_0 Q5_1 Q4_K_M Q5_K_M Q3_K_M Q6_K; do
		ggml-ref quantize "$g" "$T/q.gguf" "$f"
		ggml-ref dequantize "$T/q.gguf" "$T/d.gguf"
		node "$PROJECT_ROOT/tests/tools/gguf2hf.mjs" "$T/d.gguf" "$T/hf" >&2
		make -s -f "$PROJECT_ROOT/pipelines/model.mk" LLM="$LLM" MODEL="$T/q.gguf" OUT="$T/b" \
			IMPORT_FLAGS="--max-context 64 --prefill-chunk 16 --activations q8" -j2 >&2
		[ "$(jq -r .dtypes.activations "$T/b/model.json")" = q8 ]
		grep -q "llvm.call @llm_qdot_" "$T/b/decode.mlir"
		# the bench says the activations are rounded
		[ "$(llm-run -m "$T/b/model.llm" --bench pp=1,tg=0,reps=1 --json | jq -r '.[0].activations')" = q8 ]
		# prompts of 1 to 4 tokens (prefill rows one and two at a time),
		# then a decode step: refmodel rounds the same activations, in
		# double where ours are f32, so a code can round the other way
		# where the two differ in their last bits (a logit then moves by
		# ~1%; about one run in 20 here).  A wrong kernel fails every run
		# of its types: each type needs two of its four, all together
		# 25 of the 32.
		exact=0
		for p in 3 17,99 1000,5,6 7,8,9,10; do
			gen=$(llm-run -m "$T/b/model.llm" -t 2 --tokens "$p" -n 2 --logits "$T/run.f32" --json |
				jq -r '.generated_tokens[0]')
			refmodel --all --q8-activations --tokens "$p,$gen" -o "$T/ref.f32" "$T/hf"
			tail -c $((2 * V * 4)) "$T/ref.f32" >"$T/ref2.f32"
			cmpf32 -a 1e-5 "$T/ref2.f32" "$T/run.f32" >/dev/null && exact=$((exact + 1))
		done
		# and the rounding is there: the exact products are ~1% away
		refmodel --all --tokens "$p,$gen" -o "$T/ref0.f32" "$T/hf"
		tail -c $((2 * V * 4)) "$T/ref0.f32" >"$T/ref0_2.f32"
		mv "$T/ref0_2.f32" "$T/ref0.f32"
		run -0 cmpf32 -r 0.05 "$T/ref0.f32" "$T/run.f32"
		run ! cmpf32 -a 1e-4 "$T/ref0.f32" "$T/run.f32"
		echo "$f ($(layouts "$T/b")): $exact of 4 within 1e-5 of refmodel --q8-activations" >&3
		[ "$exact" -ge 2 ]
		total=$((total + exact))
		rm -r "$T/b" "$T/hf"
	done
	[ "$total" -ge 25 ]
}

@test "--activations q8 with the q/k/v biases of qwen2: logits within 5% of the exact products (without the bias: 60% away)" {
	need_llamacpp
	# refmodel has no qwen2 checkpoint of decoded weights (gguf2hf writes
	# llama): the exact-activation bundle of the same file is the
	# reference, the int8 rounding ~1% from it
	mkmodel --preset tiny-k --family qwen2 --seed 5 -o "$T/ck" >&2
	node "$H" --llamacpp "$T/ck" "$T/f.gguf" >&2
	ggml-ref quantize "$T/f.gguf" "$T/q.gguf" Q8_0
	for a in f32 q8; do
		make -s -f "$PROJECT_ROOT/pipelines/model.mk" LLM="$LLM" MODEL="$T/q.gguf" OUT="$T/b$a" \
			IMPORT_FLAGS="--max-context 64 --prefill-chunk 16 --activations $a" -j2 >&2
		llm-run -m "$T/b$a/model.llm" -t 2 --tokens 1,2,3,4,5 -n 8 --logits "$T/$a.f32" 2>/dev/null
	done
	[ -n "$(jq -r '.weights.tensors[] | select(.name == "layers.0.bq") | .name' "$T/bq8/model.json")" ]
	grep -q "llvm.call @llm_qdot_" "$T/bq8/decode.mlir"
	run -0 cmpf32 -r 0.05 "$T/f32.f32" "$T/q8.f32"
	echo "q8 against f32 activations: $output" >&3
	run ! cmpf32 -a 1e-4 "$T/f32.f32" "$T/q8.f32"
}

@test "--activations q8: the kernel forms (vnni512, vnni, avx2, generic) give the same logits, bit for bit" {
	need_llamacpp
	ggml-ref quantize "$(full)" "$T/q.gguf" Q3_K_M
	i=0
	# without AVX-512 F in the first three, so that they take the same
	# transform scripts (transforms/avx512/ sums the float GEMMs in other
	# lanes); with it in the last two, the second of them without
	# AVX512-VNNI (vnni512 against vnni or avx2)
	for feat in "--features -avx512f" "--features -avx512f,-avx512vnni,-avxvnni" \
		"--features -avx512f,-avx512vnni,-avxvnni,-avx2" "" "--features -avx512vnni"; do
		i=$((i + 1))
		make -s -f "$PROJECT_ROOT/pipelines/model.mk" LLM="$LLM" MODEL="$T/q.gguf" OUT="$T/b$i" \
			IMPORT_FLAGS="--max-context 64 --prefill-chunk 16 --activations q8" LOWER_FLAGS="$feat" -j2 >&2
		llm-run -m "$T/b$i/model.llm" -t 2 --tokens 1,2,3,4,5,6,7,8,9,10 -n 8 --logits "$T/$i.f32" 2>/dev/null
	done
	[ "$(objdump -d "$T/b2/libmodel.so" | grep -c vpmaddubsw)" -gt 0 ]
	[ "$(objdump -d "$T/b3/libmodel.so" | grep -cE 'vpdpbusd|vpmaddubsw')" -eq 0 ]
	# decode's products prefetch W ahead, non-temporal, in every form
	for i in 1 2 3 4 5; do
		[ "$(objdump -d "$T/b$i/libmodel.so" | grep -c prefetchnta)" -gt 0 ]
	done
	cmp "$T/1.f32" "$T/2.f32"
	cmp "$T/1.f32" "$T/3.f32"
	if grep -qw avx512_vnni /proc/cpuinfo && grep -qw avx512bw /proc/cpuinfo; then
		[ "$(objdump -d "$T/b4/libmodel.so" | grep -c 'vpdpbusd.*zmm')" -gt 0 ]
		[ "$(objdump -d "$T/b5/libmodel.so" | grep -c 'vpdpbusd.*zmm')" -eq 0 ]
	fi
	cmp "$T/4.f32" "$T/5.f32"
}

@test "--activations q8, Q4_0: prefill's row passes two or three rows of x at a time (prefill.three_rows) give the same logits, bit for bit; AVX2 takes two" {
	need_llamacpp
	ggml-ref quantize "$(full)" "$T/q.gguf" Q4_0
	for v in 0 1; do
		tuning_with "$T/rows$v.json" prefill.three_rows $v
		make -s -f "$PROJECT_ROOT/pipelines/model.mk" LLM="$LLM" MODEL="$T/q.gguf" OUT="$T/b$v" \
			IMPORT_FLAGS="--max-context 64 --prefill-chunk 16 --activations q8" LOWER_FLAGS="--tuning $T/rows$v.json" -j2 >&2
	done
	run ! cmp -s "$T/b0/libmodel.so" "$T/b1/libmodel.so"
	identical_logits "$T/b0/model.llm" "$T/b1/model.llm"
	# by the target: two on AVX2 (three spill there), three with AVX-512
	f=$(grep -l '"prefill.three_rows"' "$T"/b0/parts/prefill/*.mlir | head -1)
	run -0 llm-lower --no-cache -v --cpu znver3 -o "$T/z.o" "$f"
	assert_output --partial " prefill.three_rows=0"
}

# amx: 1 if this machine runs AMX-INT8 code (the CPU has it and Linux
# enables the tile state).
amx() {
	grep -qw amx_int8 /proc/cpuinfo && grep -qw amx_tile /proc/cpuinfo
}

@test "--activations q8, prefill on the int8 tile kernel (a tuning table asks for it): refmodel --q8-activations's logits, i8, i4 and k-quant layouts (issue 42)" {
	need_llamacpp
	g=$(full)
	# tables that ask for the row passes and for the tile products on
	# every CPU: the tiles' portable form here (the AMX one where the CPU
	# has it, which takes the tiles by default)
	for v in 0 1; do
		tuning_with "$T/tiles$v.json" prefill.int8_tiles $v
	done
	for f in Q8_0 Q4_0 Q5_0 Q4_K_M; do
		ggml-ref quantize "$g" "$T/q.gguf" "$f"
		ggml-ref dequantize "$T/q.gguf" "$T/d.gguf"
		node "$PROJECT_ROOT/tests/tools/gguf2hf.mjs" "$T/d.gguf" "$T/hf" >&2
		for w in rows tiles; do
			make -s -f "$PROJECT_ROOT/pipelines/model.mk" LLM="$LLM" MODEL="$T/q.gguf" OUT="$T/$w" \
				IMPORT_FLAGS="--max-context 64 --prefill-chunk 32 --activations q8" \
				LOWER_FLAGS="--tuning $T/tiles$([ $w = tiles ] && echo 1 || echo 0).json" -j2 >&2
		done
		grep -q "llvm.call @llm_qtile_i8" "$T/tiles/prefill.mlir"
		# prompts of 1 to 20 tokens: blocks of 16 rows whole and cut;
		# refmodel rounds x in double, so a code can round the other way
		# (a logit then moves by ~1%, as in the test above): half of
		# them within 1e-5, every one within 5%
		exact=0
		p=
		for n in 1 2 5 16 17 20; do
			p=$(seq -s, 3 $((n + 2)))
			gen=$(llm-run -m "$T/tiles/model.llm" -t 2 --tokens "$p" -n 2 --logits "$T/run.f32" --json |
				jq -r '.generated_tokens[0]')
			refmodel --all --q8-activations --tokens "$p,$gen" -o "$T/ref.f32" "$T/hf"
			tail -c $((2 * V * 4)) "$T/ref.f32" >"$T/ref2.f32"
			cmpf32 -a 1e-5 "$T/ref2.f32" "$T/run.f32" >/dev/null && exact=$((exact + 1))
			run -0 cmpf32 -r 0.05 "$T/ref2.f32" "$T/run.f32"
		done
		echo "$f ($(layouts "$T/tiles")): $exact of 6 within 1e-5 of refmodel --q8-activations" >&3
		[ "$exact" -ge 3 ]
		# the tile products ran: their sums in another order than the
		# row passes' give other last bits (and, where those move a
		# later layer's x across a rounding boundary, a code: Q5_0's
		# 20-token prompt here, ~1%, as with its earlier int8 codes)
		llm-run -m "$T/rows/model.llm" -t 2 --tokens "$p" -n 1 --logits "$T/rows.f32" >/dev/null
		llm-run -m "$T/tiles/model.llm" -t 2 --tokens "$p" -n 1 --logits "$T/tiles.f32" >/dev/null
		run ! cmp -s "$T/rows.f32" "$T/tiles.f32"
		cmpf32 -r 0.05 "$T/rows.f32" "$T/tiles.f32" >/dev/null
		rm -r "$T/rows" "$T/tiles" "$T/hf"
	done
}

@test "--activations q8 for an AMX CPU (sapphirerapids): prefill's products are tdpbssd, decode's vpdpbusd; it runs where the CPU has AMX, and is refused by name elsewhere (issue 42)" {
	need_llamacpp
	ggml-ref quantize "$(full)" "$T/q.gguf" Q4_0
	make -s -f "$PROJECT_ROOT/pipelines/model.mk" LLM="$LLM" MODEL="$T/q.gguf" OUT="$T/b" CPU=sapphirerapids \
		IMPORT_FLAGS="--max-context 64 --prefill-chunk 32 --activations q8" -j2 >&2
	jq -e '.features | index("amx_int8") and index("amx_tile")' "$T/b/target.json"
	tiles=0
	for o in "$T"/b/obj/prefill/*.o; do
		tiles=$((tiles + $(objdump -d "$o" | grep -c 'tdpbssd' || true)))
	done
	echo "prefill: $tiles tdpbssd" >&3
	[ "$tiles" -ge 1 ]
	# the tile configuration is written where the tiles are used
	[ "$(objdump -d "$T/b/libmodel.so" | grep -c ldtilecfg)" -ge 1 ]
	for o in "$T"/b/obj/decode/*.o; do
		[ "$(objdump -d "$o" | grep -c 'tdpbssd\|tileloadd' || true)" -eq 0 ]
	done
	[ "$(objdump -d "$T/b/libmodel.so" | grep -c 'vpdpbusd.*zmm')" -gt 0 ]
	if amx; then
		ggml-ref dequantize "$T/q.gguf" "$T/d.gguf"
		node "$PROJECT_ROOT/tests/tools/gguf2hf.mjs" "$T/d.gguf" "$T/hf" >&2
		p=$(seq -s, 3 22)
		gen=$(llm-run -m "$T/b/model.llm" -t 2 --tokens "$p" -n 2 --logits "$T/run.f32" --json |
			jq -r '.generated_tokens[0]')
		refmodel --all --q8-activations --tokens "$p,$gen" -o "$T/ref.f32" "$T/hf"
		tail -c $((2 * V * 4)) "$T/ref.f32" >"$T/ref2.f32"
		run -0 cmpf32 -r 0.05 "$T/ref2.f32" "$T/run.f32"
		echo "AMX on this CPU, against refmodel --q8-activations: $output" >&3
	else
		run -1 --separate-stderr llm-run -m "$T/b/model.llm" --tokens 1,2 -n 1
		assert_equal "$output" ""
		[[ "$stderr" == *"this CPU lacks "*amx_int8* ]]
		echo "no AMX on this CPU: the tile products were compiled, not run" >&3
	fi
}

@test "a truncated quantized file is refused at import, naming the tensor; nothing is written" {
	need_llamacpp
	g=$(small llama)
	ggml-ref quantize "$g" "$T/q.gguf" Q4_0
	size=$(stat -c %s "$T/q.gguf")
	head -c $((size - 100)) "$T/q.gguf" >"$T/cut.gguf"
	run -1 llm-import -o "$T/out" "$T/cut.gguf"
	assert_output --regexp "^llm-import: $T/cut.gguf: tensor '[^']+'.*"
	[ "${#lines[@]}" -eq 1 ]
	[ ! -e "$T/out" ]
}

@test "the plan's block type is checked against the file at pack time" {
	need_llamacpp
	g=$(small llama)
	ggml-ref quantize "$g" "$T/q.gguf" Q4_K_M
	llm-import -o "$T/out" "$T/q.gguf" >/dev/null
	ggml-ref quantize "$g" "$T/q.gguf" Q5_K_M
	run -1 llm-pack-weights "$T/out/model.json"
	assert_output --regexp "^llm-pack-weights: $T/q.gguf: tensor '[^']+' is Q5_K, but $T/out/model.json says Q4_K \(run llm-import again\)$"
	[ ! -e "$T/out/weights.bin" ]
}

@test "stories260K quantized by llama.cpp to Q8_0 and Q4_0: by default (int8 activations) 64 greedy tokens as llama.cpp's; --activations f32: the same text, logits as the decoded file's" {
	need_llamacpp
	s="$PROJECT_ROOT/../shared/fixtures/stories260K/stories260K.gguf"
	[ -f "$s" ] || skip "no $s"
	for f in Q8_0 Q4_0; do
		ggml-ref quantize "$s" "$T/q.gguf" "$f" 2>/dev/null
		ggml-ref dequantize "$T/q.gguf" "$T/d.gguf"
		for m in q d q8; do
			make -s -f "$PROJECT_ROOT/pipelines/model.mk" LLM="$LLM" MODEL="$T/${m%8}.gguf" OUT="$T/b$m" \
				IMPORT_FLAGS="$([ "$m" = q ] && echo --activations f32)" -j2 >&2
			llm-run -m "$T/b$m/model.llm" -t 2 --tokens 1 -n 64 --logits "$T/$m.f32" --json 2>/dev/null |
				jq -r '.generated_tokens | join(",")' >"$T/$m.ids"
		done
		# the default: int8 activations, as llama.cpp's; the same text
		[ "$(jq -r .dtypes.activations "$T/bq8/model.json")" = q8 ]
		[ "$(jq -r .dtypes.activations "$T/bq/model.json")" = f32 ]
		cmp "$T/q.ids" "$T/q8.ids"
		ggml-ref logits "$T/q.gguf" "1,$(cut -d, -f1-63 "$T/q8.ids")" "$T/lc8.f32"
		run -0 cmpf32 -r 0.05 -c 512 "$T/lc8.f32" "$T/q8.f32"
		echo "$f, default (q8 activations), llama.cpp: $output" >&3
		assert_output --partial "argmax_equal 64/64"
		[ -n "$(layouts "$T/bq")" ]
		run -0 cmpf32 -a 1e-4 "$T/d.f32" "$T/q.f32"
		echo "$f, decoded file: $output" >&3
		# llama.cpp on the quantized file, fed our tokens: its argmax at
		# every step is our next token, so its greedy text is ours
		ggml-ref logits "$T/q.gguf" "1,$(cut -d, -f1-63 "$T/q.ids")" "$T/lc.f32"
		run -0 cmpf32 -r 0.05 -c 512 "$T/lc.f32" "$T/q.f32"
		echo "$f, llama.cpp: $output" >&3
		assert_output --partial "argmax_equal 64/64"
		rm -r "$T/bq" "$T/bd" "$T/bq8"
	done
}

# rows FILE: f32 values for the quantizers, 64 blocks of 256 of every kind
# a weight row has or a quantizer must survive: normal of several scales,
# heavy tails, all zero, constant, one sign only, tiny (subnormal f16
# scales), large, sparse, and repeated magnitudes of both signs.
rows() {
	perl -e '
		srand(11);
		sub g { my $s = shift; sqrt(-2 * log(1 - rand())) * cos(6.283185307 * rand()) * $s }
		my @v;
		for my $b (0 .. 63) {
			my $k = $b % 12;
			for (1 .. 256) {
				push @v, $k == 0 ? g(0.02) : $k == 1 ? g(1) * (rand() < 0.01 ? 30 : 1) :
				    $k == 2 ? 0 : $k == 3 ? 0.5 : $k == 4 ? rand() : $k == 5 ? -rand() * 1e-3 :
				    $k == 6 ? g(1e-8) : $k == 7 ? g(3e3) : $k == 8 ? (rand() < 0.9 ? 0 : g(1)) :
				    $k == 9 ? (rand() < 0.5 ? -1 : 1) * 0.25 : $k == 10 ? g(1) ** 3 : g(0.1) + 0.05;
			}
		}
		print pack("f<*", @v);' >"$1"
}

@test "every block type llm writes is byte for byte what ggml's quantizer writes" {
	need_llamacpp
	rows "$T/x.f32"
	for t in Q8_0 Q4_0 Q4_1 Q5_0 Q5_1 Q4_K Q5_K Q6_K; do
		dequant --quantize "$t" "$T/x.f32" "$T/ours.$t"
		ggml-ref blocks "$t" "$T/x.f32" "$T/ggml.$t"
		cmp "$T/ours.$t" "$T/ggml.$t"
		echo "$t: $(stat -c %s "$T/ours.$t") bytes equal" >&3
	done
}

# same A B: the tensors of two packed directories hold the same bytes
# (their plans may name different sources), and the plans give every
# tensor the same dtype, block type and layout.
same() {
	cmp <(data "$1") <(data "$2")
	local f='[.weights.tensors[] | [.name, .dtype, .quant, .layout, .offset]]'
	[ "$(jq -c "$f" "$1/model.json")" = "$(jq -c "$f" "$2/model.json")" ]
}

@test "--dtype MIX quantizes a float file as llama-quantize does, every mix: the same blocks and types" {
	need_llamacpp
	# 9 layers: llama-quantize's 'more bits' layers of Q4_K_M and the
	# first eighth of Q4_K_S are then 0, 3, 6, 7, 8 and 0
	local d="$BATS_FILE_TMPDIR/ck-llama9" g="$BATS_FILE_TMPDIR/llama9.gguf"
	mkmodel --preset tiny-k --family llama -L 9 --seed 5 -o "$d" >&2
	node "$H" --llamacpp --no-tokenizer --vocab 1024 "$d" "$g" >&2
	for f in Q8_0 Q4_0 Q4_1 Q5_0 Q5_1 Q4_K_S Q4_K_M Q5_K_S Q5_K_M Q6_K; do
		ggml-ref quantize "$g" "$T/q.gguf" "$f"
		llm-import -o "$T/lc" "$T/q.gguf" >/dev/null
		llm-pack-weights "$T/lc/model.json" >/dev/null
		llm-import --dtype "$(echo "$f" | tr A-Z a-z)" -o "$T/ours" "$g" >/dev/null
		llm-pack-weights "$T/ours/model.json" >/dev/null
		same "$T/ours" "$T/lc"
		echo "$f: $(types "$T/ours")" >&3
		rm -r "$T/lc" "$T/ours"
	done
	llm-import --dtype q4_k_m -o "$T/ours" "$g" >/dev/null
	run jq -r '[.weights.tensors[] | select(.quant == "Q6_K") | .name] | join(" ")' "$T/ours/model.json"
	[ "$output" = "layers.0.wv layers.0.wdown layers.3.wv layers.3.wdown layers.6.wv layers.6.wdown layers.7.wv layers.7.wdown layers.8.wv layers.8.wdown lm_head" ]
}

@test "--dtype q4_k_m and q8_0 of a safetensors checkpoint (f32, bf16; llama, qwen2, phi3) give llama-quantize's blocks" {
	need_llamacpp
	# phi3: q, k and v parts of one attn_qkv, which llama-quantize types
	# as an attn_v (Q6_K in the last layer of Q4_K_M)
	for c in llama:f32:q4_k_m qwen2:bf16:q4_k_m qwen2:bf16:q8_0 phi3:f32:q4_k_m; do
		IFS=: read -r fam dt mix <<<"$c"
		mkmodel --preset tiny-k --family "$fam" -d "$dt" --seed 7 -o "$T/ck" >&2
		node "$H" --llamacpp --no-tokenizer "$T/ck" "$T/ck.gguf" >&2
		ggml-ref quantize "$T/ck.gguf" "$T/q.gguf" "$(echo "$mix" | tr a-z A-Z)"
		llm-import -o "$T/lc" "$T/q.gguf" >/dev/null
		llm-pack-weights "$T/lc/model.json" >/dev/null
		llm-import --dtype "$mix" -o "$T/ours" "$T/ck" >/dev/null
		llm-pack-weights -t 2 "$T/ours/model.json" >/dev/null
		cmp <(data "$T/ours") <(data "$T/lc")
		echo "$c: $(types "$T/ours")" >&3
		# the file type in llama.cpp's words, from the mix and from the file
		label=$([ "$mix" = q8_0 ] && echo Q8_0 || echo "Q4_K - Medium")
		[ "$(jq -r .dtypes.file_type "$T/ours/model.json")" = "$label" ]
		[ "$(jq -r .dtypes.file_type "$T/lc/model.json")" = "$label" ]
		[ "$fam" != phi3 ] || [ "$(jq -r '.weights.tensors[] | select(.name == "layers.1.wk") | .quant' \
			"$T/ours/model.json")" = Q6_K ]
		rm -r "$T/ck" "$T/ck.gguf" "$T/lc" "$T/ours"
	done
}

@test "stories260K quantized by llm-import: llama-quantize's fallbacks (Q5_0, Q8_0, F16, f32 values of rows not whole tiles); 64 greedy tokens as llama.cpp's" {
	need_llamacpp
	s="$PROJECT_ROOT/../shared/fixtures/stories260K/stories260K.gguf"
	[ -f "$s" ] || skip "no $s"
	for f in Q4_0 Q4_K_M; do
		ggml-ref quantize "$s" "$T/q.gguf" "$f" 2>/dev/null
		llm-import -o "$T/lc" "$T/q.gguf" >/dev/null
		llm-pack-weights "$T/lc/model.json" >/dev/null
		make -s -f "$PROJECT_ROOT/pipelines/model.mk" LLM="$LLM" MODEL="$s" OUT="$T/b" \
			IMPORT_FLAGS="--dtype $(echo "$f" | tr A-Z a-z)" -j2 >&2
		same "$T/b" "$T/lc"
		t=$(jq -r '[.weights.tensors[] | "\(.quant // "-")/\(.dtype)"] | group_by(.) |
			map("\(.[0]) \(length)") | join(", ")' "$T/b/model.json")
		echo "$f: $t" >&3
		# ffn_down rows of 172: F16; gate/up (172 rows): f32 values of
		# their blocks
		[[ "$t" == *"-/f16 5"* && "$t" == *"/f32 10"* ]]
		ids=$(llm-run -m "$T/b/model.llm" -t 2 --tokens 1 -n 64 --logits "$T/q.f32" --json 2>/dev/null |
			jq -r '.generated_tokens | join(",")')
		ggml-ref logits "$T/q.gguf" "1,$(echo "$ids" | cut -d, -f1-63)" "$T/lc.f32"
		run -0 cmpf32 -r 0.05 -c 512 "$T/lc.f32" "$T/q.f32"
		echo "$f, llama.cpp: $output" >&3
		assert_output --partial "argmax_equal 64/64"
		rm -r "$T/b" "$T/lc"
	done
}

@test "--dtype MIX refuses a quantized file, lists the mixes for a bad name; pack refuses a value that is not finite" {
	need_llamacpp
	g=$(small llama)
	ggml-ref quantize "$g" "$T/q.gguf" Q4_0
	run -1 llm-import --dtype q8_0 -o "$T/out" "$T/q.gguf"
	assert_output "llm-import: $T/q.gguf: tensor 'token_embd.weight' is Q4_0 already: --dtype q8_0 quantizes float weights (F32, F16, BF16); --dtype auto keeps the file's blocks"
	[ ! -e "$T/out" ]
	run -2 llm-import --dtype q3_k_m -o "$T/out" "$g"
	assert_line --index 0 "llm-import: --dtype: unsupported dtype 'q3_k_m' (use auto, f32, f16, bf16 or a quantized mix: q8_0, q4_0, q4_1, q5_0, q5_1, q4_k_s, q4_k_m, q5_k_s, q5_k_m, q6_k)"
	# a NaN in the embedding of a safetensors checkpoint
	mkmodel --seed 3 -o "$T/ck" >&2
	f="$T/ck/model.safetensors"
	n=$(od -An -tu8 -N8 "$f" | tr -d ' ')
	off=$(head -c $((8 + n)) "$f" | tail -c "$n" | jq '."model.embed_tokens.weight".data_offsets[0]')
	printf '\000\000\300\177' | dd of="$f" bs=1 seek=$((8 + n + off + 4 * 70)) conv=notrunc status=none
	llm-import --dtype q8_0 -o "$T/out" "$T/ck" >/dev/null
	run -1 llm-pack-weights "$T/out/model.json"
	assert_output "llm-pack-weights: $f: tensor 'model.embed_tokens.weight': row 1 holds a value that is not finite, which cannot be quantized"
	[ ! -e "$T/out/weights.bin" ]
}

@test "--perplexity of stories260K is llama.cpp's on the f32 file; quantized files: PPL within 1% of llama.cpp's, KL from f32 (Q8_0: below llama.cpp's)" {
	need_llamacpp
	s="$PROJECT_ROOT/../shared/fixtures/stories260K/stories260K.gguf"
	[ -f "$s" ] || skip "no $s"
	make -s -f "$PROJECT_ROOT/pipelines/model.mk" LLM="$LLM" MODEL="$s" OUT="$T/f32" -j2 >&2
	# a text the model wrote itself (sampled, seeded): about 1000 tokens
	llm-run -m "$T/f32/model.llm" -t 2 -p "Once upon a time" -n 2000 --temp 0.8 --seed 1 --no-display-prompt >"$T/text.txt" 2>/dev/null
	run -0 llm-run -m "$T/f32/model.llm" -t 2 --perplexity "$T/text.txt" --ppl-context 256 \
		--kl-divergence-base "$T/base.kld" --json
	ours=$(echo "$output" | jq .ppl)
	n=$(echo "$output" | jq .scored_tokens)
	run -0 ggml-ref perplexity "$s" "$T/text.txt" 256
	echo "f32: ours $ours, llama.cpp $output" >&3
	[ "$(echo "$output" | awk '{print $4}')" = "$n" ]
	awk -v a="$ours" -v b="$(echo "$output" | awk '{print $6}')" 'BEGIN { exit !(a / b - 1 < 1e-5 && b / a - 1 < 1e-5) }'
	for f in Q8_0 Q4_K_M; do
		ggml-ref quantize "$s" "$T/$f.gguf" "$f" 2>/dev/null
		make -s -f "$PROJECT_ROOT/pipelines/model.mk" LLM="$LLM" MODEL="$T/$f.gguf" OUT="$T/b$f" -j2 >&2
		run -0 llm-run -m "$T/b$f/model.llm" -t 2 --perplexity "$T/text.txt" --ppl-context 256 \
			--kl-divergence "$T/base.kld" --json
		j=$output
		run -0 ggml-ref perplexity "$T/$f.gguf" "$T/text.txt" 256 "$T/base.kld"
		echo "$f: ours PPL $(echo "$j" | jq .ppl) KLD $(echo "$j" | jq .kld_mean) same top $(echo "$j" | jq .same_top); llama.cpp $(echo "$output" | tr '\n' ' ')" >&3
		lp=$(echo "${lines[0]}" | awk '{print $6}')
		lk=$(echo "${lines[1]}" | awk '{print $3}')
		awk -v a="$(echo "$j" | jq .ppl)" -v b="$lp" 'BEGIN { exit !(a / b < 1.01 && b / a < 1.01) }'
		[ "$(echo "$j" | jq '.kld_mean > 0 and .same_top > 0.8')" = true ]
		[ "$f" != Q8_0 ] || awk -v a="$(echo "$j" | jq .kld_mean)" -v b="$lk" 'BEGIN { exit !(a < b) }'
	done
}
