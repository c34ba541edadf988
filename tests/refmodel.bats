#!/usr/bin/env bats
# refmodel, the reference forward pass that every numeric test trusts.  It
# is checked three ways: against refmodel.mjs, an independent Node.js
# implementation structured like transformers' modeling code; on the
# trained stories260K model, whose greedy output is known; and by sanity
# properties that a broken oracle would violate.

bats_require_minimum_version 1.5.0

setup() {
	load test_helper/common-setup
	_common_setup
	MJS="$PROJECT_ROOT/tests/tools/refmodel.mjs"
	V=151936 # vocab_size of the tiny preset
}

# tiny FAMILY DTYPE: path of a tiny checkpoint, made on first use and
# shared by the tests of this file.
tiny() {
	local d="$BATS_FILE_TMPDIR/tiny-$1-$2"
	[ -d "$d" ] || mkmodel --preset tiny --family "$1" --dtype "$2" --seed 1 -o "$d" >&2
	echo "$d"
}

# agree DIR ARGS...: refmodel and refmodel.mjs give logits within 1e-6 (max
# abs difference over all logits) and the same argmax in every row.
agree() {
	local dir=$1
	shift
	refmodel "$dir" "$@" -o "$BATS_TEST_TMPDIR/c.f32"
	node "$MJS" "$dir" "$@" -o "$BATS_TEST_TMPDIR/js.f32"
	run cmpf32 -g -a 1e-6 -c "$(vocab_of "$dir")" "$BATS_TEST_TMPDIR/c.f32" "$BATS_TEST_TMPDIR/js.f32"
	echo "$dir $*: $output" >&3
	assert_success
}

vocab_of() {
	sed -n 's/^ *"vocab_size": *\([0-9]*\).*/\1/p' "$1/config.json"
}

agree_tiny() {
	local dir
	dir=$(tiny "$1" "$2")
	agree "$dir" --tokens 42
	agree "$dir" --tokens 9707,11,1879,0,151643,3,77
	agree "$dir" --tokens 9707,11,1879,0,151643,3,77 --all
	[ "$(stat -c %s "$BATS_TEST_TMPDIR/c.f32")" -eq $((7 * V * 4)) ]
}

@test "refmodel -h prints the usage and exits 0" {
	run refmodel -h
	assert_success
	assert_output --partial "usage: refmodel"
}

@test "refmodel and refmodel.mjs agree on tiny qwen2 with f32 weights" {
	agree_tiny qwen2 f32
}

@test "refmodel and refmodel.mjs agree on tiny qwen2 with bf16 weights" {
	agree_tiny qwen2 bf16
}

@test "refmodel and refmodel.mjs agree on tiny qwen2 with f16 weights" {
	agree_tiny qwen2 f16
}

@test "refmodel and refmodel.mjs agree on tiny mistral with a sliding window of 5, which changes the logits past it (issue 44)" {
	local d="$BATS_TEST_TMPDIR/mi"
	mkmodel --preset tiny --family mistral --sliding-window 5 --seed 1 -o "$d" >&2
	agree "$d" --tokens 9707,11,1879,0,151643,3,77,5,6,7 --all
	# the window holds: the first 5 rows are the llama's of the same weights, the rest not
	mkmodel --preset tiny --family llama --seed 1 -o "$BATS_TEST_TMPDIR/ll" >&2
	refmodel "$BATS_TEST_TMPDIR/ll" --tokens 9707,11,1879,0,151643,3,77,5,6,7 --all -o "$BATS_TEST_TMPDIR/l.f32"
	cmp -n $((5 * 151936 * 4)) "$BATS_TEST_TMPDIR/c.f32" "$BATS_TEST_TMPDIR/l.f32"
	! cmp -s "$BATS_TEST_TMPDIR/c.f32" "$BATS_TEST_TMPDIR/l.f32"
}

@test "refmodel and refmodel.mjs agree on tiny phi3 (fused projections, partial rotary 0.75), with longrope's short and long factors (issue 44)" {
	local d="$BATS_TEST_TMPDIR/phi"
	mkmodel --preset tiny --family phi3 --seed 1 -o "$d" >&2
	agree "$d" --tokens 9707,11,1879,0,151643,3,77,5,6,7 --all
	# an original context of 8: 10 tokens take the long factors, 8 the short ones
	mkmodel --preset tiny --family phi3 --longrope 8 --seed 1 -o "$d-lr" >&2
	agree "$d-lr" --tokens 9707,11,1879,0,151643,3,77,5,6,7 --all
	cp "$BATS_TEST_TMPDIR/c.f32" "$BATS_TEST_TMPDIR/long.f32"
	agree "$d-lr" --tokens 9707,11,1879,0,151643,3,77,5 --all
	! cmp -s -n $((8 * 151936 * 4)) "$BATS_TEST_TMPDIR/c.f32" "$BATS_TEST_TMPDIR/long.f32"
}

@test "refmodel and refmodel.mjs agree on tiny gemma3 (1 + w norms, four a layer, GELU-tanh, a window of 5 on the local layer, two RoPE bases) (issue 44)" {
	local d="$BATS_TEST_TMPDIR/g3"
	mkmodel --preset tiny --family gemma3 --sliding-window 5 --window-pattern 2 --seed 1 -o "$d" >&2
	agree "$d" --tokens 9707,11,1879,0,151643,3,77,5,6,7 --all
	# 4B's layout (text_config, language_model.) and linear RoPE scaling
	mkmodel --preset tiny --family gemma3 --sliding-window 5 --window-pattern 2 --rope-linear 8.0 --multimodal \
		--seed 1 -o "$d-mm" >&2
	agree "$d-mm" --tokens 9707,11,1879,0,151643,3,77,5,6,7 --all
	# the scaling reaches the global layer only: the first position's logits
	# (angle 0) are the unscaled model's, the rest not
	cp "$BATS_TEST_TMPDIR/c.f32" "$BATS_TEST_TMPDIR/mm.f32"
	agree "$d" --tokens 9707,11,1879,0,151643,3,77,5,6,7 --all
	cmp -n $((151936 * 4)) "$BATS_TEST_TMPDIR/c.f32" "$BATS_TEST_TMPDIR/mm.f32"
	! cmp -s "$BATS_TEST_TMPDIR/c.f32" "$BATS_TEST_TMPDIR/mm.f32"
}

@test "refmodel and refmodel.mjs agree on tiny llama with f32 weights" {
	agree_tiny llama f32
}

@test "refmodel and refmodel.mjs agree on tiny llama with bf16 weights" {
	agree_tiny llama bf16
}

@test "refmodel and refmodel.mjs agree on tiny qwen3 (q_norm and k_norm, head_dim 32 of hidden 64 / 4 heads)" {
	local d="$BATS_TEST_TMPDIR/q3"
	mkmodel --preset tiny --family qwen3 --head-dim 32 --seed 1 -o "$d" >&2
	agree "$d" --tokens 9707,11,1879,0,151643,3,77 --all
	# the norms matter: with q_norm's weights doubled the logits move
	mkdir "$d/x"
	cp "$d/config.json" "$d/x/"
	node -e '
		const fs = require("fs"), [src, dst] = process.argv.slice(1);
		const b = fs.readFileSync(src), n = Number(b.readBigUInt64LE(0)), h = JSON.parse(b.subarray(8, 8 + n));
		const t = h["model.layers.0.self_attn.q_norm.weight"], at = 8 + n + t.data_offsets[0];
		for (let i = at; i < 8 + n + t.data_offsets[1]; i += 4) b.writeFloatLE(2 * b.readFloatLE(i), i);
		fs.writeFileSync(dst, b);' "$d/model.safetensors" "$d/x/model.safetensors"
	refmodel "$d" --tokens 5,6,7 -o "$BATS_TEST_TMPDIR/a.f32"
	refmodel "$d/x" --tokens 5,6,7 -o "$BATS_TEST_TMPDIR/b.f32"
	run cmpf32 -g -a 1e-3 -c $V "$BATS_TEST_TMPDIR/a.f32" "$BATS_TEST_TMPDIR/b.f32"
	assert_failure 1
}

@test "rope_scaling llama3 (Llama 3.2's numbers, an original context of 64): both implementations agree, and it changes the logits" {
	local d="$BATS_TEST_TMPDIR/l3"
	mkmodel --preset tiny --family llama --rope-llama3 64 --seed 1 -o "$d" >&2
	jq -e '.rope_scaling == {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
		"original_max_position_embeddings": 64, "rope_type": "llama3"}' "$d/config.json"
	agree "$d" --tokens "$(seq -s, 100 139)" --all
	# without the scaling, the same weights give other logits
	mkdir "$d/none"
	ln -s "$d/model.safetensors" "$d/none/model.safetensors"
	jq '.rope_scaling = null' "$d/config.json" >"$d/none/config.json"
	refmodel "$d" --tokens "$(seq -s, 100 139)" -o "$BATS_TEST_TMPDIR/l3.f32"
	refmodel "$d/none" --tokens "$(seq -s, 100 139)" -o "$BATS_TEST_TMPDIR/none.f32"
	run cmpf32 -g -a 1e-3 -c $V "$BATS_TEST_TMPDIR/l3.f32" "$BATS_TEST_TMPDIR/none.f32"
	echo "llama3 vs none: $output" >&3
	assert_failure 1
	# a rope type neither knows is refused by both
	jq '.rope_scaling = {"rope_type": "yarn", "factor": 4.0}' "$d/config.json" >"$d/none/config.json"
	run refmodel "$d/none" --tokens 1 -o "$BATS_TEST_TMPDIR/x.f32"
	assert_failure
	assert_output --partial "rope_scaling 'yarn' is not supported"
	run node "$MJS" "$d/none" --tokens 1 -o "$BATS_TEST_TMPDIR/x.f32"
	assert_failure
	assert_output --partial "rope_scaling 'yarn' is not supported"
}

@test "tie_word_embeddings makes both implementations use embed_tokens as the LM head" {
	local d tied
	d=$(tiny qwen2 f32)
	tied="$BATS_TEST_TMPDIR/tied"
	mkdir "$tied"
	ln -s "$d/model.safetensors" "$tied/model.safetensors"
	sed 's/"tie_word_embeddings": false/"tie_word_embeddings": true/' "$d/config.json" >"$tied/config.json"
	grep -q '"tie_word_embeddings": true' "$tied/config.json"
	agree "$tied" --tokens 5,6,7 --all
	refmodel "$d" --tokens 5,6,7 -o "$BATS_TEST_TMPDIR/untied.f32"
	refmodel "$tied" --tokens 5,6,7 -o "$BATS_TEST_TMPDIR/tied.f32"
	run cmpf32 "$BATS_TEST_TMPDIR/untied.f32" "$BATS_TEST_TMPDIR/tied.f32"
	assert_failure 1
}

@test "refmodel reproduces the known greedy story of the trained stories260K model" {
	local gguf="$SHARED/fixtures/stories260K/stories260K.gguf" st toks next text
	[ -f "$gguf" ] || skip "no $gguf (../shared/fixtures is absent)"
	st="$BATS_TEST_TMPDIR/stories260K"
	node "$PROJECT_ROOT/tests/tools/gguf2hf.mjs" "$gguf" "$st"
	# Greedy decoding from BOS: the argmax of the last logits, appended.
	toks=1
	for _ in $(seq 25); do
		refmodel "$st" --tokens "$toks" -o "$BATS_TEST_TMPDIR/l.f32"
		next=$(od -An -v -f -w4 "$BATS_TEST_TMPDIR/l.f32" |
			awk 'NR == 1 || $1 > m { m = $1; i = NR - 1 } END { print i }')
		toks="$toks,$next"
	done
	text=$(echo "$toks" | tr , '\n' |
		awk 'NR == FNR { piece[NR - 1] = $0; next } FNR > 1 { printf "%s", piece[$1] }' "$st/vocab.txt" - |
		sed 's/▁/ /g')
	echo "greedy: $text" >&3
	[ "$text" = " Once upon a time, there was a little girl named Lily. She loved to play outside" ]
	# The independent implementation agrees on the real model too.
	agree "$st" --tokens "$toks" --all
}

@test "changing one token changes the logits" {
	local d
	d=$(tiny llama f32)
	refmodel "$d" --tokens 10,20,30,40 -o "$BATS_TEST_TMPDIR/a.f32"
	refmodel "$d" --tokens 10,21,30,40 -o "$BATS_TEST_TMPDIR/b.f32"
	run cmpf32 -a 1e-4 "$BATS_TEST_TMPDIR/a.f32" "$BATS_TEST_TMPDIR/b.f32"
	assert_failure 1
}

@test "the first rows of --all do not depend on later tokens (causal attention)" {
	local d
	d=$(tiny qwen2 f32)
	refmodel "$d" --tokens 100,200,300 --all -o "$BATS_TEST_TMPDIR/short.f32"
	refmodel "$d" --tokens 100,200,300,400,500 --all -o "$BATS_TEST_TMPDIR/long.f32"
	head -c $((3 * V * 4)) "$BATS_TEST_TMPDIR/long.f32" >"$BATS_TEST_TMPDIR/prefix.f32"
	cmp "$BATS_TEST_TMPDIR/short.f32" "$BATS_TEST_TMPDIR/prefix.f32"
	# ... while the later rows do see the earlier tokens.
	refmodel "$d" --tokens 101,200,300,400,500 --all -o "$BATS_TEST_TMPDIR/other.f32"
	tail -c $((V * 4)) "$BATS_TEST_TMPDIR/long.f32" >"$BATS_TEST_TMPDIR/l1.f32"
	tail -c $((V * 4)) "$BATS_TEST_TMPDIR/other.f32" >"$BATS_TEST_TMPDIR/l2.f32"
	run cmpf32 -a 1e-4 "$BATS_TEST_TMPDIR/l1.f32" "$BATS_TEST_TMPDIR/l2.f32"
	assert_failure 1
}

@test "the last row of --all equals the output without --all" {
	local d
	d=$(tiny llama bf16)
	refmodel "$d" --tokens 1,2,3,4 --all -o "$BATS_TEST_TMPDIR/all.f32"
	refmodel "$d" --tokens 1,2,3,4 -o "$BATS_TEST_TMPDIR/last.f32"
	tail -c $((V * 4)) "$BATS_TEST_TMPDIR/all.f32" | cmp - "$BATS_TEST_TMPDIR/last.f32"
	refmodel "$d" --tokens 1,2,3,4 -o - | cmp - "$BATS_TEST_TMPDIR/last.f32"
}

@test "the order of earlier tokens matters at the last position (RoPE is applied)" {
	# Without position encoding, attention at the last position sees the
	# earlier tokens as an unordered set: 11,22,33 and 22,11,33 would give
	# the same last logits.
	local d
	d=$(tiny qwen2 f32)
	refmodel "$d" --tokens 11,22,33 -o "$BATS_TEST_TMPDIR/a.f32"
	refmodel "$d" --tokens 22,11,33 -o "$BATS_TEST_TMPDIR/b.f32"
	run cmpf32 -a 1e-5 "$BATS_TEST_TMPDIR/a.f32" "$BATS_TEST_TMPDIR/b.f32"
	assert_failure 1
}

@test "refmodel rejects a missing checkpoint directory" {
	run --separate-stderr refmodel "$BATS_TEST_TMPDIR/nope" --tokens 1 -o "$BATS_TEST_TMPDIR/out.f32"
	assert_failure 1
	[[ "$stderr" == "refmodel: $BATS_TEST_TMPDIR/nope"* ]]
	[ ! -e "$BATS_TEST_TMPDIR/out.f32" ]
}

@test "refmodel rejects a token id outside the vocabulary and writes nothing" {
	local d
	d=$(tiny qwen2 f32)
	run --separate-stderr refmodel "$d" --tokens 1,$V -o "$BATS_TEST_TMPDIR/out.f32"
	assert_failure 1
	[ "$stderr" = "refmodel: $d: token id $V is out of range: vocab_size is $V" ]
	[ ! -e "$BATS_TEST_TMPDIR/out.f32" ]
	ls "$BATS_TEST_TMPDIR" | { ! grep -q tmp; }
}

@test "refmodel rejects bad --tokens syntax as a usage error" {
	local d t
	d=$(tiny qwen2 f32)
	for t in "" "1,,2" "1," ",1" "a" "-1" "1;2" " 1" "99999999999"; do
		run --separate-stderr refmodel "$d" --tokens "$t" -o "$BATS_TEST_TMPDIR/out.f32"
		assert_failure 2
		[[ "$stderr" == "refmodel: --tokens '$t': "* ]]
		[ ! -e "$BATS_TEST_TMPDIR/out.f32" ]
	done
}

@test "refmodel without --tokens or a directory, or with an unknown option, is a usage error" {
	run --separate-stderr refmodel "$BATS_TEST_TMPDIR"
	assert_failure 2
	[[ "$stderr" == "usage: refmodel"* ]]
	run --separate-stderr refmodel --tokens 1
	assert_failure 2
	run --separate-stderr refmodel --bogus --tokens 1 "$BATS_TEST_TMPDIR"
	assert_failure 2
}

@test "refmodel.mjs rejects the same bad inputs" {
	local d
	d=$(tiny qwen2 f32)
	run --separate-stderr node "$MJS" "$d" --tokens 1,$V -o "$BATS_TEST_TMPDIR/out.f32"
	assert_failure 1
	[[ "$stderr" == *"token id $V is out of range"* ]]
	run --separate-stderr node "$MJS" "$d" --tokens 1,,2
	assert_failure 2
	run --separate-stderr node "$MJS" "$BATS_TEST_TMPDIR/nope" --tokens 1
	assert_failure 1
	[ ! -e "$BATS_TEST_TMPDIR/out.f32" ]
}
