#!/usr/bin/env bats
# mkmodel: seeded random Hugging Face checkpoints.  The checks read the real
# files: the safetensors header is parsed with od + jq, the weights are
# decoded from their bits with awk (f16/bf16 included), so nothing here
# shares code with mkmodel or lib/.

bats_require_minimum_version 1.5.0

setup_file() {
	# mkmodel needs the DeepSeek tokenizer: the shared fixture, else the
	# npm-built copy; build it when neither is there (needs node, npm).
	local root
	root="$(cd "$(dirname "$BATS_TEST_FILENAME")/.." && pwd)"
	if [ ! -e "$root/../shared/fixtures/tokenizers/ds-r1-distill-qwen/tokenizer.json" ] &&
	    command -v node >/dev/null && command -v npm >/dev/null; then
		"$root/tests/tools/fetch-tokenizer" >&2 || true
	fi
}

setup() {
	load test_helper/common-setup
	_common_setup
	T=$BATS_TEST_TMPDIR
	FIXTOK=$(fixture_tokenizer_dir)
	NPMTOK=$PROJECT_ROOT/tests/npm/node_modules/.cache/ds-r1-distill-qwen
	if [ ! -e "$FIXTOK/tokenizer.json" ] && [ ! -e "$NPMTOK/tokenizer.json" ]; then
		skip "no tokenizer: no ../shared fixture and tests/tools/fetch-tokenizer failed"
	fi
}

# ckpt NAME ARGS...: a checkpoint made once per file (tests only read it).
ckpt() {
	local d="$BATS_FILE_TMPDIR/$1"
	shift
	[ -d "$d" ] || mkmodel "$@" -o "$d" >&2
	echo "$d"
}

# hdrlen FILE: the u64 header length of a safetensors file.
hdrlen() {
	od -A n -t u8 -N 8 "$1" | tr -d ' '
}

# header FILE: the JSON header.
header() {
	tail -c +9 "$1" | head -c "$(hdrlen "$1")"
}

# offsets FILE: "name begin end" per tensor, begin and end in the file.
offsets() {
	header "$1" | jq -r --argjson n $((8 + $(hdrlen "$1"))) 'to_entries[] |
		select(.key != "__metadata__") |
		"\(.key) \(.value.data_offsets[0] + $n) \(.value.data_offsets[1] + $n)"'
}

# tensor FILE NAME: the raw bytes of one tensor.
tensor() {
	local name b e
	read -r name b e < <(offsets "$1" | grep "^$2 ")
	tail -c +$((b + 1)) "$1" | head -c $((e - b))
}

# values DTYPE: decode raw little-endian floats on stdin, one per line.
values() {
	case $1 in
	F32) od -v -A n -t u4 ;;
	*) od -v -A n -t u2 ;;
	esac | awk -v dt="$1" '
	function f32(u,  s, e, m) {
		s = u >= 2147483648 ? -1 : 1; e = int(u / 8388608) % 256; m = u % 8388608
		return e == 0 ? s * m * 2^-149 : s * (1 + m / 8388608) * 2^(e - 127)
	}
	function f16(h,  s, e, m) {
		s = h >= 32768 ? -1 : 1; e = int(h / 1024) % 32; m = h % 1024
		return e == 0 ? s * m * 2^-24 : s * (1 + m / 1024) * 2^(e - 15)
	}
	{ for (i = 1; i <= NF; i++)
		printf "%.9g\n", dt == "F32" ? f32($i) : dt == "F16" ? f16($i) : f32($i * 65536) }'
}

# stats: "n mean std min max frac" of numbers on stdin; frac is the share
# within one std (0.02) of the mean, 0.6827 for a normal distribution.
stats() {
	awk '{ x[NR] = $1; s += $1; s2 += $1 * $1
		if (NR == 1 || $1 < lo) lo = $1; if (NR == 1 || $1 > hi) hi = $1 }
	END { m = s / NR; sd = sqrt(s2 / NR - m * m)
		for (i = 1; i <= NR; i++) if (x[i] - m < 0.02 && m - x[i] < 0.02) c++
		printf "%d %.6f %.6f %.6f %.6f %.4f\n", NR, m, sd, lo, hi, c / NR }'
}

# check_tensors DIR FAMILY DTYPE LAYERS D Q KV F V TIED: the header lists
# exactly the expected tensors, sorted by name, in data order, contiguous.
check_tensors() {
	local dir=$1 fam=$2 dt=$3 L=$4 d=$5 q=$6 kv=$7 f=$8 v=$9 tied=${10}
	local st=$dir/model.safetensors n esz
	n=$(hdrlen "$st")
	[ $((n % 8)) -eq 0 ]
	case $dt in F32) esz=4 ;; *) esz=2 ;; esac
	{
		echo "model.embed_tokens.weight $dt [$v,$d]"
		for ((i = 0; i < L; i++)); do
			p=model.layers.$i
			echo "$p.input_layernorm.weight $dt [$d]"
			if [ "$fam" = phi3 ]; then
				echo "$p.self_attn.qkv_proj.weight $dt [$((q + 2 * kv)),$d]"
			else
				echo "$p.self_attn.q_proj.weight $dt [$q,$d]"
				echo "$p.self_attn.k_proj.weight $dt [$kv,$d]"
				echo "$p.self_attn.v_proj.weight $dt [$kv,$d]"
			fi
			if [ "$fam" = qwen2 ]; then
				echo "$p.self_attn.q_proj.bias $dt [$q]"
				echo "$p.self_attn.k_proj.bias $dt [$kv]"
				echo "$p.self_attn.v_proj.bias $dt [$kv]"
			fi
			if [ "$fam" = qwen3 ]; then
				echo "$p.self_attn.q_norm.weight $dt [${11}]"
				echo "$p.self_attn.k_norm.weight $dt [${11}]"
			fi
			if [ "$fam" = gemma3 ]; then
				echo "$p.self_attn.q_norm.weight $dt [${11}]"
				echo "$p.self_attn.k_norm.weight $dt [${11}]"
			fi
			echo "$p.self_attn.o_proj.weight $dt [$d,$q]"
			echo "$p.post_attention_layernorm.weight $dt [$d]"
			if [ "$fam" = gemma3 ]; then
				echo "$p.pre_feedforward_layernorm.weight $dt [$d]"
				echo "$p.post_feedforward_layernorm.weight $dt [$d]"
			fi
			if [ "$fam" = phi3 ]; then
				echo "$p.mlp.gate_up_proj.weight $dt [$((2 * f)),$d]"
			else
				echo "$p.mlp.gate_proj.weight $dt [$f,$d]"
				echo "$p.mlp.up_proj.weight $dt [$f,$d]"
			fi
			echo "$p.mlp.down_proj.weight $dt [$d,$f]"
		done
		echo "model.norm.weight $dt [$d]"
		[ "$tied" = true ] || echo "lm_head.weight $dt [$v,$d]"
	} | LC_ALL=C sort >"$T/expected"
	header "$st" | jq -r 'to_entries[] | select(.key != "__metadata__") |
		"\(.key) \(.value.dtype) \(.value.shape | tostring)"' >"$T/actual"
	diff "$T/expected" "$T/actual"
	header "$st" | jq -e --argjson size $(($(stat -c %s "$st") - 8 - n)) --argjson esz "$esz" '
		(keys_unsorted[0] == "__metadata__") and (.__metadata__ == {"format": "pt"}) and
		([to_entries[] | select(.key != "__metadata__") | .value] as $t |
		 $t[0].data_offsets[0] == 0 and $t[-1].data_offsets[1] == $size and
		 all(range(1; $t | length); $t[.].data_offsets[0] == $t[. - 1].data_offsets[1]) and
		 all($t[]; .data_offsets[1] - .data_offsets[0] ==
		     (.shape | reduce .[] as $x (1; . * $x)) * $esz))' >/dev/null
}

# check_config DIR FAMILY TORCH_DTYPE: the keys every config.json of the
# family has, with the values of the tiny preset's shape.
check_config() {
	local c=$1/config.json
	jq -e --arg td "$3" '.hidden_act == "silu" and .torch_dtype == $td and
		.initializer_range == 0.02 and .use_cache == true and
		.attention_dropout == 0.0' "$c" >/dev/null
	if [ "$2" = qwen2 ]; then
		jq -e '.architectures == ["Qwen2ForCausalLM"] and .model_type == "qwen2" and
			.use_sliding_window == false and (has("attention_bias") | not)' "$c" >/dev/null
	else
		jq -e '.architectures == ["LlamaForCausalLM"] and .model_type == "llama" and
			.attention_bias == false and .mlp_bias == false and
			(has("use_sliding_window") | not)' "$c" >/dev/null
	fi
}

# check_tiny FAMILY DTYPE TORCH_DTYPE
check_tiny() {
	local d
	d=$(ckpt "tiny-$1-$2" --preset tiny --family "$1" --dtype "$2" --seed 5)
	for f in config.json generation_config.json model.safetensors tokenizer.json \
	    tokenizer_config.json chat_template.jinja; do
		[ -s "$d/$f" ]
	done
	check_config "$d" "$1" "$3"
	jq -e '.hidden_size == 64 and .num_hidden_layers == 2 and .num_attention_heads == 4 and
		.num_key_value_heads == 2 and .intermediate_size == 128 and .vocab_size == 151936 and
		.tie_word_embeddings == false and .rms_norm_eps == 1e-6 and .rope_theta == 10000 and
		.max_position_embeddings == 4096' "$d/config.json" >/dev/null
	check_tensors "$d" "$1" "$(echo "$2" | tr a-z A-Z)" 2 64 64 32 128 151936 false
}

@test "--family qwen3 --head-dim 32: Qwen3's config (head_dim other than hidden / heads) and tensors (q_norm, k_norm)" {
	local d="$T/q3"
	mkmodel --preset tiny --family qwen3 --head-dim 32 --dtype bf16 --seed 1 -o "$d"
	jq -e '.architectures == ["Qwen3ForCausalLM"] and .model_type == "qwen3" and .head_dim == 32 and
		.attention_bias == false and .use_sliding_window == false and .sliding_window == null and
		.rope_scaling == null' "$d/config.json" >/dev/null
	check_tensors "$d" qwen3 BF16 2 64 128 64 128 151936 false 32
	run -2 --separate-stderr mkmodel --head-dim 32 -o "$T/m"
	[[ ${stderr_lines[0]} == "mkmodel: --head-dim needs --family llama, qwen3, mistral or gemma3"* ]]
	run -2 --separate-stderr mkmodel --family llama --head-dim 7 -o "$T/m"
	run -2 --separate-stderr mkmodel --rope-llama3 64 -o "$T/m"
	[[ ${stderr_lines[0]} == "mkmodel: --rope-llama3 needs --family llama"* ]]
}

@test "--family mistral [--sliding-window n]: MistralConfig, Llama's tensors (issue 44)" {
	local d="$T/mi"
	mkmodel --preset tiny --family mistral --sliding-window 5 --seed 1 -o "$d"
	jq -e '.architectures == ["MistralForCausalLM"] and .model_type == "mistral" and .sliding_window == 5 and
		(has("attention_bias") | not) and (has("use_sliding_window") | not) and (has("rope_scaling") | not) and
		(has("mlp_bias") | not) and (has("max_window_layers") | not)' "$d/config.json" >/dev/null
	check_tensors "$d" llama F32 2 64 64 32 128 151936 false 16
	# the same weights as the llama family's of the same seed
	mkmodel --preset tiny --family llama --seed 1 -o "$T/ll"
	cmp "$d/model.safetensors" "$T/ll/model.safetensors"
	mkmodel --preset tiny --family mistral --seed 1 -o "$T/mn"
	jq -e '.sliding_window == null' "$T/mn/config.json" >/dev/null
	run -2 --separate-stderr mkmodel --sliding-window 4 -o "$T/m"
	[[ ${stderr_lines[0]} == "mkmodel: --sliding-window needs --family mistral"* ]]
	run -2 mkmodel --family mistral --sliding-window 0 -o "$T/m"
}

@test "--family phi3 [--partial-rotary f] [--longrope n]: Phi3Config, qkv_proj and gate_up_proj fused; --preset phi-4-mini (issue 44)" {
	local d="$T/p3"
	mkmodel --preset tiny --family phi3 --longrope 32 --seed 1 -o "$d"
	jq -e '.architectures == ["Phi3ForCausalLM"] and .model_type == "phi3" and .partial_rotary_factor == 0.75
		and .original_max_position_embeddings == 32 and .rope_scaling.type == "longrope"
		and (.rope_scaling.short_factor | length) == 6 and (.rope_scaling.long_factor | length) == 6
		and .sliding_window == null and (has("head_dim") | not)' "$d/config.json" >/dev/null
	check_tensors "$d" phi3 F32 2 64 64 32 128 151936 false
	# the factors come from the seed
	mkmodel --preset tiny --family phi3 --longrope 32 --seed 1 -o "$T/again"
	cmp "$d/config.json" "$T/again/config.json"
	mkmodel --preset tiny --family phi3 --partial-rotary 0.5 --sliding-window 8 --seed 1 -o "$T/p5"
	jq -e '.partial_rotary_factor == 0.5 and .rope_scaling == null and .sliding_window == 8' "$T/p5/config.json" >/dev/null
	mkmodel --preset phi-4-mini --family phi3 -L 1 --dtype bf16 -o "$T/p4"
	jq -e '.hidden_size == 3072 and .num_attention_heads == 24 and .num_key_value_heads == 8 and
		.intermediate_size == 8192 and .vocab_size == 200064 and .tie_word_embeddings == true' "$T/p4/config.json" >/dev/null
	check_tensors "$T/p4" phi3 BF16 1 3072 3072 1024 8192 200064 true
	run -2 --separate-stderr mkmodel --family phi3 --partial-rotary 0.7 -o "$T/m"
	[[ ${stderr_lines[0]} == "mkmodel: --partial-rotary 0.7 of head_dim 16 does not split a head into even parts"* ]]
	run -2 --separate-stderr mkmodel --longrope 32 -o "$T/m"
	[[ ${stderr_lines[0]} == "mkmodel: --longrope needs --family phi3"* ]]
}

@test "--family gemma3 [--sliding-window n] [--window-pattern n]: Gemma3TextConfig, four norms a layer and q/k norms; --preset gemma-3-1b (issue 44)" {
	local d="$T/g3"
	mkmodel --preset tiny --family gemma3 --sliding-window 5 --window-pattern 2 --seed 1 -o "$d"
	jq -e '.architectures == ["Gemma3ForCausalLM"] and .model_type == "gemma3_text" and .sliding_window == 5
		and .sliding_window_pattern == 2 and .hidden_activation == "gelu_pytorch_tanh" and .rope_theta == 1000000
		and .rope_local_base_freq == 10000 and .query_pre_attn_scalar == 16 and .final_logit_softcapping == null
		and (has("hidden_act") | not)' "$d/config.json" >/dev/null
	check_tensors "$d" gemma3 F32 2 64 64 32 128 151936 false 16
	mkmodel --preset gemma-3-1b --family gemma3 -L 1 --dtype bf16 -o "$T/g1"
	jq -e '.hidden_size == 1152 and .num_attention_heads == 4 and .num_key_value_heads == 1 and .head_dim == 256
		and .intermediate_size == 6912 and .vocab_size == 262144 and .sliding_window == 512
		and .sliding_window_pattern == 6 and .tie_word_embeddings == true' "$T/g1/config.json" >/dev/null
	check_tensors "$T/g1" gemma3 BF16 1 1152 1024 256 6912 262144 true 256
	# --multimodal: Gemma3ForConditionalGeneration's layout, the same values
	mkmodel --preset tiny --family gemma3 --sliding-window 5 --window-pattern 2 --multimodal --seed 1 -o "$T/mm"
	jq -e '.architectures == ["Gemma3ForConditionalGeneration"] and .model_type == "gemma3" and
		.text_config.model_type == "gemma3_text" and .text_config.sliding_window == 5' "$T/mm/config.json" >/dev/null
	n=$(hdrlen "$T/mm/model.safetensors")
	tail -c +9 "$T/mm/model.safetensors" | head -c "$n" |
		jq -e '(keys - ["__metadata__"]) | all(startswith("language_model.") or startswith("vision_tower."))' >/dev/null
	run -2 --separate-stderr mkmodel --window-pattern 2 -o "$T/m"
	[[ ${stderr_lines[0]} == "mkmodel: --window-pattern needs --family gemma3"* ]]
	run -2 --separate-stderr mkmodel --multimodal -o "$T/m"
	[[ ${stderr_lines[0]} == "mkmodel: --multimodal needs --family gemma3"* ]]
}

@test "--preset qwen3-0.6b: Qwen3-0.6B's config and shapes (q 2048 wide on hidden 1024, head_dim 128)" {
	local d="$T/q306"
	mkmodel --preset qwen3-0.6b --family qwen3 -L 1 --dtype bf16 -o "$d"
	jq -e '.hidden_size == 1024 and .num_attention_heads == 16 and .num_key_value_heads == 8 and
		.head_dim == 128 and .intermediate_size == 3072 and .max_position_embeddings == 40960 and
		.rope_theta == 1000000 and .tie_word_embeddings == true and .eos_token_id == 151645' \
		"$d/config.json" >/dev/null
	jq -e '.eos_token_id == [151645, 151643]' "$d/generation_config.json" >/dev/null
	check_tensors "$d" qwen3 BF16 1 1024 2048 1024 3072 151936 true 128
	run -2 --separate-stderr mkmodel --preset qwen3-0.6b -f qwen2 -o "$T/m"
	[[ ${stderr_lines[0]} == "mkmodel: preset qwen3-0.6b needs --family llama or qwen3"* ]]
	# without -f, the preset's own family (issue 65)
	for p in qwen3-0.6b:Qwen3ForCausalLM llama-3.2-1b:LlamaForCausalLM tiny:Qwen2ForCausalLM; do
		mkmodel --preset "${p%%:*}" -L 1 --vocab 1024 --dtype bf16 -o "$T/p-${p%%:*}"
		[ "$(jq -r '.architectures[0]' "$T/p-${p%%:*}/config.json")" = "${p##*:}" ]
		rm -rf "$T/p-${p%%:*}"
	done
}

@test "--preset llama-3.2-1b and mistral-7b: their configs and shapes (issue 44)" {
	mkmodel --preset llama-3.2-1b --family llama --rope-llama3 8192 -L 1 --dtype bf16 -o "$T/l32"
	jq -e '.hidden_size == 2048 and .num_attention_heads == 32 and .num_key_value_heads == 8 and .head_dim == 64
		and .vocab_size == 128256 and .rope_theta == 500000 and .tie_word_embeddings == true
		and .rope_scaling.original_max_position_embeddings == 8192' "$T/l32/config.json" >/dev/null
	check_tensors "$T/l32" llama BF16 1 2048 2048 512 8192 128256 true 64
	mkmodel --preset mistral-7b --family mistral -L 1 --dtype bf16 -o "$T/m7"
	jq -e '.hidden_size == 4096 and .intermediate_size == 14336 and .vocab_size == 32768 and .rope_theta == 1000000
		and .sliding_window == null' "$T/m7/config.json" >/dev/null
	check_tensors "$T/m7" llama BF16 1 4096 4096 1024 14336 32768 false 128
}

@test "mkmodel -h prints the usage and the options" {
	run -0 mkmodel -h
	[[ ${lines[0]} == "usage: mkmodel "*" -o dir" ]]
	assert_output --partial "--preset"
	assert_output --partial "--tokenizer-dir"
}

@test "bad options are usage errors with exit 2 and no output" {
	mkdir "$T/w"
	cd "$T/w"
	run -2 --separate-stderr mkmodel --preset huge -o "$T/m"
	[[ ${stderr_lines[0]} == "mkmodel: unknown preset 'huge'"* ]]
	run -2 --separate-stderr mkmodel --dtype f8 -o "$T/m"
	[[ ${stderr_lines[0]} == "mkmodel: unknown dtype 'f8'"* ]]
	run -2 --separate-stderr mkmodel --family gpt2 -o "$T/m"
	[[ ${stderr_lines[0]} == "mkmodel: unknown family 'gpt2'"* ]]
	run -2 mkmodel --seed -1 -o "$T/m"
	run -2 mkmodel --seed 12x -o "$T/m"
	run -2 mkmodel --layers 0 -o "$T/m"
	run -2 mkmodel --frobnicate -o "$T/m"
	run -2 mkmodel -o "$T/m" extra
	run -2 --separate-stderr mkmodel --preset tiny
	[[ ${stderr_lines[0]} == "mkmodel: no output directory (-o)" ]]
	run -2 --separate-stderr mkmodel -o
	[[ ${stderr_lines[0]} == "mkmodel: option '-o' needs an argument" ]]
	[ ! -e "$T/m" ]
	[ -z "$(ls -A "$T/w")" ]
}

@test "a tiny qwen2 f32 checkpoint has the Hugging Face files, config, tensors and shapes" {
	check_tiny qwen2 f32 float32
}

@test "a tiny qwen2 f16 checkpoint has the Hugging Face files, config, tensors and shapes" {
	check_tiny qwen2 f16 float16
}

@test "a tiny qwen2 bf16 checkpoint has the Hugging Face files, config, tensors and shapes" {
	check_tiny qwen2 bf16 bfloat16
}

@test "a tiny llama f32 checkpoint has no q/k/v biases and a Llama config" {
	check_tiny llama f32 float32
}

@test "a tiny llama f16 checkpoint has no q/k/v biases and a Llama config" {
	check_tiny llama f16 float16
}

@test "a tiny llama bf16 checkpoint has no q/k/v biases and a Llama config" {
	check_tiny llama bf16 bfloat16
}

@test "the same arguments give byte-identical checkpoints" {
	local a
	a=$(ckpt tiny-qwen2-bf16 --preset tiny --family qwen2 --dtype bf16 --seed 5)
	mkmodel --preset tiny --family qwen2 --dtype bf16 --seed 5 -o "$T/b"
	diff -r "$a" "$T/b"
}

@test "another seed changes every weight tensor but not the config" {
	local a
	a=$(ckpt tiny-qwen2-bf16 --preset tiny --family qwen2 --dtype bf16 --seed 5)
	mkmodel --preset tiny --family qwen2 --dtype bf16 --seed 6 -o "$T/b"
	cmp "$a/config.json" "$T/b/config.json"
	cmp <(header "$a/model.safetensors") <(header "$T/b/model.safetensors")
	# The first 16 bytes of every tensor differ.
	local n=0
	while read -r name b e; do
		x=$(od -A n -t x1 -j "$b" -N 16 "$a/model.safetensors")
		y=$(od -A n -t x1 -j "$b" -N 16 "$T/b/model.safetensors")
		[ "$x" != "$y" ] || { echo "$name is the same"; false; }
		n=$((n + 1))
	done < <(offsets "$a/model.safetensors")
	[ $n -eq 27 ]
}

@test "weights are normal with std 0.02, norm weights near 1, biases small" {
	local d st
	d=$(ckpt tiny-qwen2-f32 --preset tiny --family qwen2 --dtype f32 --seed 5)
	st=$d/model.safetensors
	# 65536 embedding values: mean 0, std 0.02, 68.3% within one std.
	read -r n mean sd lo hi frac < <(tensor "$st" model.embed_tokens.weight |
		head -c 262144 | values F32 | stats)
	echo "embed: $n $mean $sd $lo $hi $frac"
	[ "$n" -eq 65536 ]
	awk -v m="$mean" -v s="$sd" -v f="$frac" -v lo="$lo" -v hi="$hi" 'BEGIN {
		exit !(m > -0.0005 && m < 0.0005 && s > 0.0196 && s < 0.0204 &&
		       f > 0.675 && f < 0.690 && lo < -0.07 && hi > 0.07 && lo > -0.2 && hi < 0.2) }'
	for name in model.layers.0.self_attn.q_proj.weight model.layers.1.mlp.down_proj.weight \
	    lm_head.weight; do
		read -r n mean sd lo hi frac < <(tensor "$st" $name | head -c 65536 | values F32 | stats)
		echo "$name: $n $mean $sd"
		awk -v m="$mean" -v s="$sd" 'BEGIN { exit !(m > -0.002 && m < 0.002 && s > 0.019 && s < 0.021) }'
	done
	for name in model.norm.weight model.layers.0.input_layernorm.weight \
	    model.layers.1.post_attention_layernorm.weight; do
		read -r n mean sd lo hi frac < <(tensor "$st" $name | values F32 | stats)
		echo "$name: $n $mean $sd $lo $hi"
		[ "$n" -eq 64 ]
		awk -v m="$mean" -v s="$sd" -v lo="$lo" -v hi="$hi" 'BEGIN {
			exit !(m > 0.99 && m < 1.01 && s > 0.012 && s < 0.028 && lo > 0.9 && hi < 1.1) }'
	done
	for name in model.layers.0.self_attn.q_proj.bias model.layers.1.self_attn.v_proj.bias; do
		read -r n mean sd lo hi frac < <(tensor "$st" $name | values F32 | stats)
		echo "$name: $n $mean $sd $lo $hi"
		awk -v m="$mean" -v s="$sd" -v lo="$lo" -v hi="$hi" 'BEGIN {
			exit !(m > -0.01 && m < 0.01 && s > 0.01 && s < 0.03 && lo > -0.1 && hi < 0.1) }'
	done
}

@test "bf16 weights are the f32 weights rounded to nearest even, f16 within half an ulp" {
	local a b c name=model.layers.1.mlp.up_proj.weight
	a=$(ckpt tiny-qwen2-f32 --preset tiny --family qwen2 --dtype f32 --seed 5)
	b=$(ckpt tiny-qwen2-bf16 --preset tiny --family qwen2 --dtype bf16 --seed 5)
	c=$(ckpt tiny-qwen2-f16 --preset tiny --family qwen2 --dtype f16 --seed 5)
	tensor "$a/model.safetensors" $name | od -v -A n -t u4 | tr -s ' ' '\n' | sed '/^$/d' >"$T/f32bits"
	tensor "$b/model.safetensors" $name | od -v -A n -t u2 | tr -s ' ' '\n' | sed '/^$/d' >"$T/bf16bits"
	[ "$(wc -l <"$T/f32bits")" -eq 8192 ]
	# Round to nearest even on the bit patterns (no NaN here).
	awk '{ u = $1; lsb = int(u / 65536) % 2; print int((u + 32767 + lsb) / 65536) % 65536 }' \
		"$T/f32bits" >"$T/rne"
	cmp "$T/rne" "$T/bf16bits"
	tensor "$a/model.safetensors" $name | values F32 >"$T/f32"
	tensor "$c/model.safetensors" $name | values F16 >"$T/f16"
	paste "$T/f32" "$T/f16" | awk '{ d = $1 - $2; if (d < 0) d = -d; a = $1 < 0 ? -$1 : $1
		if (d > a * 2^-11 + 2^-25) { print "line " NR ": " $0; bad = 1 } } END { exit bad }'
	# Not all equal: the conversion did round.
	! cmp -s "$T/f32" "$T/f16"
}

@test "--layers changes the layer count and keeps the other tensors' values" {
	local a
	a=$(ckpt tiny-qwen2-f32 --preset tiny --family qwen2 --dtype f32 --seed 5)
	mkmodel --preset tiny --family qwen2 --dtype f32 --seed 5 --layers 1 -o "$T/one"
	jq -e '.num_hidden_layers == 1' "$T/one/config.json"
	check_tensors "$T/one" qwen2 F32 1 64 64 32 128 151936 false
	for name in model.embed_tokens.weight model.layers.0.mlp.up_proj.weight \
	    model.layers.0.self_attn.k_proj.bias model.norm.weight; do
		cmp <(tensor "$a/model.safetensors" $name | head -c 1048576) \
			<(tensor "$T/one/model.safetensors" $name | head -c 1048576)
	done
}

@test "the qwen2.5-0.5b preset has Qwen2.5-0.5B's config and tied embeddings" {
	local d=$T/q
	mkmodel --preset qwen2.5-0.5b --family qwen2 --dtype bf16 --seed 1 -o "$d"
	[ "$(stat -c %s "$d/model.safetensors")" -gt 980000000 ]
	check_config "$d" qwen2 bfloat16
	jq -e '.hidden_size == 896 and .num_hidden_layers == 24 and .num_attention_heads == 14 and
		.num_key_value_heads == 2 and .intermediate_size == 4864 and .vocab_size == 151936 and
		.tie_word_embeddings == true and .rope_theta == 1000000 and .rms_norm_eps == 1e-6 and
		.max_position_embeddings == 32768 and .bos_token_id == 151643 and
		.eos_token_id == 151643' "$d/config.json"
	jq -e '.bos_token_id == 151643 and .eos_token_id == 151643' "$d/generation_config.json"
	check_tensors "$d" qwen2 BF16 24 896 896 128 4864 151936 true
	read -r n mean sd lo hi frac < <(tensor "$d/model.safetensors" \
		model.layers.23.mlp.down_proj.weight | head -c 131072 | values BF16 | stats)
	awk -v m="$mean" -v s="$sd" 'BEGIN { exit !(m > -0.001 && m < 0.001 && s > 0.0195 && s < 0.0205) }'
}

@test "the tokenizer files are copied from the source that -v names" {
	local src
	run -0 --separate-stderr mkmodel -v --seed 5 -o "$T/m"
	[[ ${stderr_lines[0]} == "mkmodel: tokenizer from "* ]]
	src=${stderr_lines[0]##*: }
	for f in tokenizer.json tokenizer_config.json chat_template.jinja; do
		cmp "$src/$f" "$T/m/$f"
	done
	jq -e '.added_tokens | map(select(.id == 151646))[0].content == "<｜begin▁of▁sentence｜>"' \
		"$T/m/tokenizer.json"
}

@test "--tokenizer-dir and LLM_TOKENIZER_DIR choose the tokenizer; chat_template.jinja is optional" {
	mkdir "$T/tok"
	echo '{"model": {}}' >"$T/tok/tokenizer.json"
	echo '{}' >"$T/tok/tokenizer_config.json"
	mkmodel --tokenizer-dir "$T/tok" -o "$T/a"
	cmp "$T/tok/tokenizer.json" "$T/a/tokenizer.json"
	[ ! -e "$T/a/chat_template.jinja" ]
	LLM_TOKENIZER_DIR=$T/tok mkmodel -o "$T/b"
	cmp "$T/tok/tokenizer.json" "$T/b/tokenizer.json"
	rm "$T/tok/tokenizer_config.json"
	run -1 --separate-stderr mkmodel -t "$T/tok" -o "$T/c"
	[ "$stderr" = "mkmodel: $T/tok/tokenizer_config.json: No such file or directory" ]
	[ ! -e "$T/c" ]
	run -1 --separate-stderr env LLM_TOKENIZER_DIR="$T/none" mkmodel -o "$T/c"
	[ "$stderr" = "mkmodel: $T/none/tokenizer.json: No such file or directory" ]
}

@test "without any tokenizer mkmodel says to run fetch-tokenizer" {
	# A project tree of its own, without ../shared and without the npm cache.
	mkdir -p "$T/p/tests/tools"
	touch "$T/p/tests/tools/fetch-tokenizer"
	cp "$(command -v mkmodel)" "$T/p/tests/tools/"
	run -1 --separate-stderr env -u LLM_TOKENIZER_DIR "$T/p/tests/tools/mkmodel" -o "$T/m"
	[[ $stderr == "mkmodel: no tokenizer: "*"run $T/p/tests/tools/fetch-tokenizer"* ]]
	[ ! -e "$T/m" ]
}

@test "an unwritable output fails with exit 1 and leaves nothing behind" {
	local w=$T/w
	mkdir "$w"
	touch "$w/file"
	run -1 --separate-stderr mkmodel -o "$w/file/m"
	[ "$stderr" = "mkmodel: $w/file: not a directory" ]
	run -1 --separate-stderr mkmodel -o "$w/file"
	[ "$stderr" = "mkmodel: $w/file: not a directory" ]
	# A write error half-way (a 20 MB file size limit): no DIR, no
	# DIR.tmp.*, and no parents created for it.
	run -1 --separate-stderr bash -c "ulimit -f 20000; exec mkmodel -o '$w/new/sub/m'"
	[[ $stderr == "mkmodel: $w/new/sub/m.tmp."*"/model.safetensors: write error: File too large" ]]
	[ "$(ls -A "$w")" = file ]
}

@test "the ds-r1-distill-qwen-1.5b preset has DeepSeek's config; a signal leaves nothing behind" {
	# The 3.5 GB model is for the benchmark: its configuration files are
	# read from the staging directory while the weights are being written,
	# then SIGTERM must remove everything.
	local w=$T/w pid stage
	mkdir "$w"
	mkmodel --preset ds-r1-distill-qwen-1.5b --dtype bf16 -o "$w/sub/ds" &
	pid=$!
	for ((i = 0; i < 200; i++)); do
		stage=$(echo "$w"/sub/ds.tmp.*)
		[ -e "$stage/model.safetensors" ] && break
		sleep 0.05
	done
	check_config "$stage" qwen2 bfloat16
	jq -e '.hidden_size == 1536 and .num_hidden_layers == 28 and .num_attention_heads == 12 and
		.num_key_value_heads == 2 and .intermediate_size == 8960 and .vocab_size == 151936 and
		.tie_word_embeddings == false and .rope_theta == 10000 and .rms_norm_eps == 1e-6 and
		.max_position_embeddings == 131072 and .bos_token_id == 151643 and
		.eos_token_id == 151643' "$stage/config.json"
	jq -e '.bos_token_id == 151646 and .eos_token_id == 151643' "$stage/generation_config.json"
	kill -TERM $pid
	wait $pid || status=$?
	[ "$status" -eq 143 ]
	[ -z "$(ls -A "$w")" ]
}

@test "an existing directory gets the new files and keeps its others" {
	mkmodel --seed 1 -o "$T/m"
	echo keep >"$T/m/README.md"
	mkmodel --seed 2 -o "$T/m/"
	mkmodel --seed 2 -o "$T/n"
	diff -r -x README.md "$T/m" "$T/n"
	[ "$(cat "$T/m/README.md")" = keep ]
	[ "$(ls -A "$T" | wc -l)" -eq 2 ]
}

@test "fetch-tokenizer rebuilds the shared DeepSeek tokenizer byte for byte" {
	[ -e "$FIXTOK/tokenizer.json" ] || skip "no ../shared tokenizer fixture to compare with"
	command -v node >/dev/null && command -v npm >/dev/null || skip "no node/npm"
	run -0 --separate-stderr "$PROJECT_ROOT/tests/tools/fetch-tokenizer" -f -o "$T/tok"
	[ "$output" = "$T/tok" ]
	for f in tokenizer.json tokenizer_config.json chat_template.jinja; do
		cmp "$FIXTOK/$f" "$T/tok/$f"
	done
	run -2 "$PROJECT_ROOT/tests/tools/fetch-tokenizer" -x
}
