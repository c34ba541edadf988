#!/usr/bin/env bats
# llm-import: checkpoint -> model.json, phase MLIR, tokenizer copies.

setup_file() {
	load test_helper/common-setup
	_common_setup
	ensure_tokenizer
	export M="$BATS_FILE_TMPDIR/tiny"
	mkmodel --preset tiny --family qwen2 --dtype bf16 --seed 1 -o "$M"
}

setup() {
	load test_helper/common-setup
	_common_setup
}

@test "llm-import -h prints the usage and exits 0" {
	run -0 llm-import -h
	assert_line --index 0 --partial "usage: llm-import"
}

@test "llm-import usage equals the man page SYNOPSIS" {
	[ "$(usage_of llm-import)" = "$(synopsis_of llm-import)" ]
}

@test "llm-import rejects an unknown option with exit 2" {
	run -2 llm-import -Z "$M"
	assert_output --partial "usage: llm-import"
}

@test "llm-import rejects a bad --dtype with exit 2" {
	run -2 llm-import --dtype f8 "$M"
	assert_output --partial "unsupported dtype 'f8'"
}

@test "--activations: auto by default (q8 for block-quantized weights, else f32), q8 recorded in the plan; a dense model's phases call no int8 kernel; others refused" {
	run -2 llm-import --activations q4 "$M"
	assert_output --partial "--activations: 'q4' is not auto, f32, q8 or bf16"
	# (bf16 weights: f32 on a target without AVX512-BF16; bf16.bats has the rest)
	llm-import --cpu znver3 -o "$BATS_TEST_TMPDIR/a" "$M"
	[ "$(jq -r .dtypes.activations "$BATS_TEST_TMPDIR/a/model.json")" = f32 ]
	# a quantizing --dtype: int8 activations, unless f32 is asked for
	for q in q4_0 q4_k_m q8_0; do
		llm-import --dtype $q -o "$BATS_TEST_TMPDIR/$q" "$M"
		[ "$(jq -r .dtypes.activations "$BATS_TEST_TMPDIR/$q/model.json")" = q8 ]
		grep -q llm_qdot "$BATS_TEST_TMPDIR/$q/decode.mlir"
	done
	llm-import --dtype q4_0 --activations f32 -o "$BATS_TEST_TMPDIR/q4f" "$M"
	[ "$(jq -r .dtypes.activations "$BATS_TEST_TMPDIR/q4f/model.json")" = f32 ]
	run ! grep -l llm_qdot "$BATS_TEST_TMPDIR/q4f/decode.mlir"
	# auto is the default, by name too; a float --dtype stays f32
	llm-import --dtype q4_0 --activations auto -o "$BATS_TEST_TMPDIR/q4a" "$M"
	cmp "$BATS_TEST_TMPDIR/q4_0/model.json" "$BATS_TEST_TMPDIR/q4a/model.json"
	llm-import --dtype f16 -o "$BATS_TEST_TMPDIR/f16" "$M"
	[ "$(jq -r .dtypes.activations "$BATS_TEST_TMPDIR/f16/model.json")" = f32 ]
	llm-import --activations q8 -o "$BATS_TEST_TMPDIR/b" "$M"
	[ "$(jq -r .dtypes.activations "$BATS_TEST_TMPDIR/b/model.json")" = q8 ]
	run ! grep -l llm_qdot "$BATS_TEST_TMPDIR/b/decode.mlir" "$BATS_TEST_TMPDIR/b/prefill.mlir"
	# the manifest's value is checked where it is read
	jq '.dtypes.activations = "q4"' "$BATS_TEST_TMPDIR/b/model.json" >"$BATS_TEST_TMPDIR/b/m.json"
	mv "$BATS_TEST_TMPDIR/b/m.json" "$BATS_TEST_TMPDIR/b/model.json"
	run -1 llm-pack-weights "$BATS_TEST_TMPDIR/b/model.json"
	assert_output --partial "key 'activations': 'q4' is not f32, q8 or bf16"
}

@test "llm-import writes model.json, four phases and the tokenizer files" {
	run -0 llm-import -o "$BATS_TEST_TMPDIR/out" "$M"
	for f in model.json prefill.mlir prefill_kv.mlir decode.mlir embed.mlir tokenizer.json tokenizer_config.json; do
		[ -s "$BATS_TEST_TMPDIR/out/$f" ]
	done
	# no temporaries left behind
	run -0 find "$BATS_TEST_TMPDIR/out" -name '*.tmp.*'
	assert_output ""
}

@test "model.json records the config, dtypes, limits and phases" {
	llm-import -o "$BATS_TEST_TMPDIR/out" "$M"
	j="$BATS_TEST_TMPDIR/out/model.json"
	[ "$(jq -r .format "$j")" = "llm-model/2" ]
	[ "$(jq -r .family "$j")" = "qwen2" ]
	[ "$(jq -c '[.config.hidden_size,.config.n_layers,.config.n_heads,.config.n_kv_heads,.config.head_dim,.config.intermediate_size,.config.vocab_size]' "$j")" = "[64,2,4,2,16,128,151936]" ]
	[ "$(jq -r .dtypes.weights "$j")" = "bf16" ]
	[ "$(jq -r .dtypes.kv "$j")" = "f32" ]
	[ "$(jq -c '[.limits.max_context,.limits.prefill_chunk]' "$j")" = "[4096,128]" ]
	[ "$(jq -c '[.phases[].name]' "$j")" = '["prefill","prefill_kv","decode","embed"]' ]
	[ "$(jq -c '[.phases[].tokens]' "$j")" = '[128,128,1,128]' ]
	[ "$(jq -c '.tokenizer.eos_ids' "$j")" = "[151643]" ]
	[ "$(jq -r '.tokenizer.bos_id' "$j")" = "151646" ]
	[ "$(jq -r '.tokenizer.chat_template' "$j")" = "deepseek-r1" ]
	# kv bytes = L * 2 * KVH * P * HD * 4, P = C rounded up to 16, + 16
	[ "$(jq -r .kv_cache.positions "$j")" = 4112 ]
	[ "$(jq -r .kv_cache.bytes "$j")" = "$((2 * 2 * 2 * 4112 * 16 * 4))" ]
}

@test "the weight plan is aligned, ordered, typed and sized" {
	llm-import -o "$BATS_TEST_TMPDIR/out" "$M"
	j="$BATS_TEST_TMPDIR/out/model.json"
	# 1 embed + 2 rope + 2 layers x 12 + final norm + lm_head
	[ "$(jq '.weights.tensors | length' "$j")" = 29 ]
	[ "$(jq '[.weights.tensors[] | select(.offset % 64 != 0)] | length' "$j")" = 0 ]
	[ "$(jq '[.weights.tensors | to_entries[] | select(.key > 0)] | length' "$j")" = 28 ]
	# bytes = product(shape) * size(dtype), and no overlap
	run -0 jq -r '.weights.tensors | . as $t | range(1; length) | select($t[.].offset < $t[.-1].offset + $t[.-1].bytes) | $t[.].name' "$j"
	assert_output ""
	run -0 jq -r '.weights.tensors[] | select(.bytes != (reduce .shape[] as $d (if .dtype == "f32" then 4 else 2 end; . * $d))) | .name' "$j"
	assert_output ""
	[ "$(jq -r '.weights.tensors[] | select(.name == "layers.1.wq") | "\(.dtype) \(.shape) \(.source[0])"' "$j")" = 'bf16 [64,64] model.layers.1.self_attn.q_proj.weight' ]
	[ "$(jq -r '.weights.tensors[] | select(.name == "layers.0.bk") | "\(.dtype) \(.shape)"' "$j")" = 'f32 [32]' ]
	[ "$(jq -r '.weights.tensors[] | select(.name == "rope.cos") | "\(.transform) \(.shape)"' "$j")" = 'rope_cos [4096,8]' ]
	[ "$(jq -r .weights.fingerprint "$j" | grep -cE '^[0-9a-f]{16}$')" = 1 ]
}

@test "every phase is accepted by mlir-opt as written" {
	llm-import -o "$BATS_TEST_TMPDIR/out" "$M"
	for p in prefill prefill_kv decode embed; do
		run -0 "$LLVM_BINDIR/mlir-opt" "$BATS_TEST_TMPDIR/out/$p.mlir" -o /dev/null
	done
}

@test "every top-level op carries llm.id, llm.layer and llm.stage, ids in program order" {
	llm-import --activations f32 -o "$BATS_TEST_TMPDIR/out" "$M"
	f="$BATS_TEST_TMPDIR/out/decode.mlir"
	# top-level ops of the phase function are indented by 4 spaces
	run -0 awk '/^  func.func @llm_decode\(/{f=1;next} /^  }/{f=0} f && /^    [%a-z]/ && !/llm.id = /' "$f"
	assert_output ""
	run -0 sh -c "grep -o 'llm.id = [0-9]*' '$f' | awk '{ if (\$3 != n) { print \"out of order at \" \$3; exit 1 } n++ }'"
	assert_output ""
	grep -q 'llm.layer = 1 : i64, llm.stage = "mlp"' "$f"
	grep -q 'llm.layer = -2 : i64, llm.stage = "head"' "$f"
	grep -q 'llm.sched = "matmul"' "$f"
}

@test "weights enter as views at plan offsets, never as dense constants" {
	llm-import --activations f32 -o "$BATS_TEST_TMPDIR/out" "$M"
	f="$BATS_TEST_TMPDIR/out/prefill.mlir"
	run grep -c 'dense<' "$f"
	assert_output 0
	off=$(jq -r '.weights.tensors[] | select(.name == "layers.1.wdown") | .offset' "$BATS_TEST_TMPDIR/out/model.json")
	grep -q "arith.constant {[^}]*} $off : index" "$f"
}

@test "prefill takes a dynamic number of rows, decode one" {
	llm-import -o "$BATS_TEST_TMPDIR/out" "$M"
	grep -q 'tensor<?x64xf32>' "$BATS_TEST_TMPDIR/out/prefill.mlir"
	run grep -c 'tensor<?x64xf32>' "$BATS_TEST_TMPDIR/out/decode.mlir"
	assert_output 0
}

@test "llama checkpoints have no q/k/v biases in the plan" {
	mkmodel --preset tiny --family llama --dtype f32 --seed 2 -o "$BATS_TEST_TMPDIR/llama"
	run -0 llm-import -o "$BATS_TEST_TMPDIR/out" "$BATS_TEST_TMPDIR/llama"
	j="$BATS_TEST_TMPDIR/out/model.json"
	[ "$(jq -r .family "$j")" = llama ]
	[ "$(jq '[.weights.tensors[] | select(.name | test("\\.b[qkv]$"))] | length' "$j")" = 0 ]
	[ "$(jq '.weights.tensors | length' "$j")" = 23 ]
	run -0 "$LLVM_BINDIR/mlir-opt" "$BATS_TEST_TMPDIR/out/decode.mlir" -o /dev/null
}

@test "options set the context, chunk, weight and KV types" {
	run -0 llm-import -o "$BATS_TEST_TMPDIR/out" --max-context 256 --prefill-chunk 32 --dtype f16 --kv-dtype bf16 "$M"
	j="$BATS_TEST_TMPDIR/out/model.json"
	[ "$(jq -c '[.limits.max_context,.limits.prefill_chunk,.dtypes.weights,.dtypes.kv]' "$j")" = '[256,32,"f16","bf16"]' ]
	[ "$(jq -r '.weights.tensors[] | select(.name == "embed") | .dtype' "$j")" = f16 ]
	[ "$(jq -r .kv_cache.bytes "$j")" = "$((2 * 2 * 2 * 272 * 16 * 2))" ]
	grep -q 'memref<2x?x16xbf16>' "$BATS_TEST_TMPDIR/out/decode.mlir"
	for p in prefill prefill_kv decode embed; do
		run -0 "$LLVM_BINDIR/mlir-opt" "$BATS_TEST_TMPDIR/out/$p.mlir" -o /dev/null
	done
}

@test "the same checkpoint imports to the same bytes" {
	llm-import -o "$BATS_TEST_TMPDIR/a" "$M"
	llm-import -o "$BATS_TEST_TMPDIR/b" "$M"
	for f in model.json prefill.mlir prefill_kv.mlir decode.mlir embed.mlir; do
		cmp "$BATS_TEST_TMPDIR/a/$f" "$BATS_TEST_TMPDIR/b/$f"
	done
}

@test "an unsupported architecture is a clear error and writes nothing" {
	cp -r "$M" "$BATS_TEST_TMPDIR/m"
	jq '.architectures = ["Gemma2ForCausalLM"] | .model_type = "gemma2"' "$M/config.json" > "$BATS_TEST_TMPDIR/m/config.json"
	run -1 llm-import -o "$BATS_TEST_TMPDIR/out" "$BATS_TEST_TMPDIR/m"
	assert_output --partial "unsupported architecture 'Gemma2ForCausalLM'"
	[ ! -e "$BATS_TEST_TMPDIR/out/model.json" ]
}

@test "a missing config key is a clear error" {
	cp -r "$M" "$BATS_TEST_TMPDIR/m"
	jq 'del(.hidden_size)' "$M/config.json" > "$BATS_TEST_TMPDIR/m/config.json"
	run -1 llm-import -o "$BATS_TEST_TMPDIR/out" "$BATS_TEST_TMPDIR/m"
	assert_output --partial "hidden_size"
	[ ! -e "$BATS_TEST_TMPDIR/out/model.json" ]
}

@test "shapes that disagree with config.json are a clear error" {
	cp -r "$M" "$BATS_TEST_TMPDIR/m"
	jq '.intermediate_size = 96' "$M/config.json" > "$BATS_TEST_TMPDIR/m/config.json"
	run -1 llm-import -o "$BATS_TEST_TMPDIR/out" "$BATS_TEST_TMPDIR/m"
	assert_output --partial "has shape [128, 64], config.json implies [96, 64]"
	[ ! -e "$BATS_TEST_TMPDIR/out" ] || [ -z "$(ls -A "$BATS_TEST_TMPDIR/out")" ]
}

@test "a truncated safetensors file is a clear error" {
	cp -r "$M" "$BATS_TEST_TMPDIR/m"
	head -c 4000 "$M/model.safetensors" > "$BATS_TEST_TMPDIR/m/model.safetensors"
	run -1 llm-import -o "$BATS_TEST_TMPDIR/out" "$BATS_TEST_TMPDIR/m"
	assert_output --regexp "^llm-import: .*model.safetensors: "
	[ ! -e "$BATS_TEST_TMPDIR/out/model.json" ]
}

@test "a safetensors header that lies about a tensor is a clear error" {
	cp -r "$M" "$BATS_TEST_TMPDIR/m"
	# grow the recorded shape of the embedding without touching its offsets
	node -e '
	  const fs = require("fs"); const p = process.argv[1];
	  const b = fs.readFileSync(p); const n = Number(b.readBigUInt64LE(0));
	  const h = b.subarray(8, 8 + n).toString();
	  const g = h.replace(/("model.embed_tokens.weight":\{[^}]*"shape":\[)151936,64\]/, "$1151937,64]");
	  if (g === h || Buffer.byteLength(g) > n) process.exit(3);
	  Buffer.from(g.padEnd(n, " ")).copy(b, 8); fs.writeFileSync(p, b);' "$BATS_TEST_TMPDIR/m/model.safetensors"
	run -1 llm-import -o "$BATS_TEST_TMPDIR/out" "$BATS_TEST_TMPDIR/m"
	assert_output --partial "tensor 'model.embed_tokens.weight': shape and dtype"
	[ ! -e "$BATS_TEST_TMPDIR/out/model.json" ]
}

@test "a missing tensor is a clear error" {
	cp -r "$M" "$BATS_TEST_TMPDIR/m"
	jq '.num_hidden_layers = 3' "$M/config.json" > "$BATS_TEST_TMPDIR/m/config.json"
	run -1 llm-import -o "$BATS_TEST_TMPDIR/out" "$BATS_TEST_TMPDIR/m"
	assert_output --partial "missing tensor 'model.layers.2.input_layernorm.weight'"
}

@test "an unwritable output directory is a clear error" {
	mkdir "$BATS_TEST_TMPDIR/ro"
	chmod 0555 "$BATS_TEST_TMPDIR/ro"
	if touch "$BATS_TEST_TMPDIR/ro/x" 2>/dev/null; then
		rm -f "$BATS_TEST_TMPDIR/ro/x"
		# root ignores permissions: use a path under a regular file instead
		run -1 llm-import -o "$M/config.json/out" "$M"
	else
		run -1 llm-import -o "$BATS_TEST_TMPDIR/ro" "$M"
	fi
	assert_output --regexp "^llm-import: "
}

@test "a missing checkpoint directory is a clear error" {
	run -1 llm-import -o "$BATS_TEST_TMPDIR/out" "$BATS_TEST_TMPDIR/nope"
	assert_output --partial "nope"
}

@test "a tokenizer.json that is not JSON, or not a tokenizer, is refused at import (issue 16)" {
	T=$BATS_TEST_TMPDIR
	cp -r "$M" "$T/ck"
	printf '{"model": ' >"$T/ck/tokenizer.json"
	run -1 --separate-stderr llm-import -o "$T/out" "$T/ck"
	[ "${#stderr_lines[@]}" -eq 1 ]
	[[ "$stderr" == "llm-import: $T/ck/tokenizer.json:"* ]]
	[ ! -e "$T/out" ]
	echo '{"model": {"type": "Unigram"}}' >"$T/ck/tokenizer.json"
	run -1 --separate-stderr llm-import -o "$T/out" "$T/ck"
	[[ "$stderr" == "llm-import: $T/ck/tokenizer.json"* ]]
	[ ! -e "$T/out" ]
}

@test "a chat template the engine cannot render is refused at import, with its line and column; a list of named templates gives its default (issue 44)" {
	local c="$BATS_TEST_TMPDIR/ck"
	cp -r "$M" "$c"
	printf '{%% for m in messages %%}\n{{ m.content }}\n{%% include "x" %%}{%% endfor %%}' >"$c/chat_template.jinja"
	run -1 --separate-stderr llm-import -o "$BATS_TEST_TMPDIR/out" "$c"
	[ "$stderr" = "llm-import: $c/chat_template.jinja:3:4: Unknown statement type: include" ]
	[ ! -e "$BATS_TEST_TMPDIR/out" ]
	# tokenizer_config.json's, named for its key
	rm "$c/chat_template.jinja"
	jq '.chat_template = "{{ x ) }}"' "$M/tokenizer_config.json" >"$c/tokenizer_config.json"
	run -1 --separate-stderr llm-import -o "$BATS_TEST_TMPDIR/out" "$c"
	[ "$stderr" = "llm-import: $c/tokenizer_config.json: chat_template:1:6: Parser Error: Expected closing expression token. CloseParen !== CloseExpression." ]
	# a list of {name, template}: "default" is the one
	jq '.chat_template = [{"name": "tool_use", "template": "{{ x ) }}"},
		{"name": "default", "template": "{% for m in messages %}<|im_start|>{{ m.content }}{% endfor %}"}]' \
		"$M/tokenizer_config.json" >"$c/tokenizer_config.json"
	llm-import -o "$BATS_TEST_TMPDIR/out" "$c"
	[ "$(jq -r .tokenizer.chat_template "$BATS_TEST_TMPDIR/out/model.json")" = qwen2 ]
	echo '[{"role": "user", "content": "hi"}]' >"$BATS_TEST_TMPDIR/c.json"
	run -0 llm-run --tokenizer "$BATS_TEST_TMPDIR/out" --render "$BATS_TEST_TMPDIR/c.json"
	[ "$output" = "<|im_start|>hi" ]
}

@test "a tokenizer.json with merges given twice imports with one warning naming the file and key; the later rank counts, as in Hugging Face's tokenizers (issue 46)" {
	T=$BATS_TEST_TMPDIR
	mkdir "$T/ck" && cp "$M"/* "$T/ck/"
	jq '.model.merges += .model.merges[0:3]' "$M/tokenizer.json" >"$T/ck/tokenizer.json"
	run -0 --separate-stderr llm-import -o "$T/out" "$T/ck"
	[ "$stderr" = "llm-import: $T/ck/tokenizer.json: model.merges: 3 merges given twice (the later rank counts, as in Hugging Face's tokenizers)" ]
	# and llm-run says it once on opening (-v describes the model)
	run -0 --separate-stderr llm-run -m "$T/out" --tokenize <<<'"hello"'
	[ "$(grep -c 'merges given twice' <<<"$stderr")" -eq 1 ]
}

@test "a tokenizer with ids beyond the model's vocabulary is refused by name: its last id and token, the vocabulary (issue 65)" {
	# (the BOS and EOS ids of generation_config.json, 151646 and 151643, inside it)
	mkmodel --preset tiny --vocab 151650 --seed 1 -o "$BATS_TEST_TMPDIR/small"
	run -1 --separate-stderr llm-import -o "$BATS_TEST_TMPDIR/out" "$BATS_TEST_TMPDIR/small"
	[ "$stderr" = "llm-import: $BATS_TEST_TMPDIR/small/tokenizer.json: token id 151664 ('<|file_sep|>') is beyond the model's vocabulary of 151650 (config.json vocab_size): the tokenizer is not this model's" ]
	[ ! -e "$BATS_TEST_TMPDIR/out/model.json" ]
}

@test "--pp with a mix whose types vary by layer is refused by name, not as an internal error (issue 63)" {
	# q4_k_m gives layer 0's v Q5_0 and layer 1's Q8_0 (llama-quantize's
	# use_more_bits): a pipeline's ranks would not be one image
	run -1 --separate-stderr llm-import --pp 2 --dtype q4_k_m -o "$BATS_TEST_TMPDIR/out" "$M"
	[ "$stderr" = "llm-import: $M: --pp 2: 'model.layers.0.self_attn.v_proj.weight' would be Q5_0 i5-r8-g32-f16 but 'model.layers.1.self_attn.v_proj.weight' Q8_0 i8-r8-g32-f16: the ranks of a pipeline hold the same types, layer for layer (a --dtype of one type, such as q8_0, or --tp)" ]
	[ ! -e "$BATS_TEST_TMPDIR/out/model.json" ]
	run -0 llm-import --pp 2 --dtype q8_0 -o "$BATS_TEST_TMPDIR/out" "$M"
}
