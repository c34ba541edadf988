#!/usr/bin/env bats
# llm-quantize: a float GGUF file quantized to a llama-quantize file type,
# byte for byte the file llama-quantize writes.  The oracle is llama.cpp's
# llama_model_quantize, the build the npm package node-llama-cpp ships,
# through tests/tools/ggml-ref (as quant.bats); the inputs are tiny-k
# checkpoints (rows of 256 and 512, so that the k-quant mixes hold Q4_K,
# Q5_K and Q6_K) written as GGUF by tests/tools/hf2gguf.mjs --llamacpp,
# as convert_hf_to_gguf.py writes them.  The suite skips with a message
# when that package cannot be installed (no npm registry).

bats_require_minimum_version 1.5.0

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
}

need_llamacpp() {
	[ ! -e "$BATS_FILE_TMPDIR/no-llamacpp" ] ||
		skip "llama.cpp (npm node-llama-cpp) could not be had: $(tail -1 "$BATS_FILE_TMPDIR/ggml-ref.log")"
}

# gguf FAMILY DTYPE: a tiny-k checkpoint of FAMILY in DTYPE as GGUF, made once per file.
gguf() {
	local d="$BATS_FILE_TMPDIR/ck-$1-$2" g="$BATS_FILE_TMPDIR/$1-$2.gguf"
	[ -d "$d" ] || mkmodel --preset tiny-k --family "$1" --dtype "$2" --seed 5 -o "$d" >&2
	[ -f "$g" ] || node "$PROJECT_ROOT/tests/tools/hf2gguf.mjs" --llamacpp "$d" "$g" >&2
	echo "$g"
}

@test "Q8_0, Q4_0, Q4_K_M and Q6_K of an F32 Llama file: llama-quantize's file, byte for byte" {
	need_llamacpp
	g=$(gguf llama f32)
	for f in Q8_0 Q4_0 Q4_K_M Q6_K; do
		ggml-ref quantize "$g" "$T/ref.gguf" "$f" >/dev/null 2>&1
		run -0 --separate-stderr llm-quantize "$g" "$T/out.gguf" "$f"
		[[ "$stderr" == "llm-quantize: $T/out.gguf: 21 tensors, "*" MiB -> "*" MiB ("*")" ]]
		cmp "$T/ref.gguf" "$T/out.gguf"
	done
}

@test "every other mix, of BF16 Qwen2 (q/k/v biases) and Qwen3 (q/k norms) files, by name and by number: byte for byte" {
	need_llamacpp
	for fam in qwen2 qwen3; do
		g=$(gguf "$fam" bf16)
		for f in Q4_1:3 Q5_0:8 Q5_1:9 Q4_K_S:14 Q5_K_S:16 Q5_K_M:17; do
			ggml-ref quantize "$g" "$T/ref.gguf" "${f%%:*}" >/dev/null 2>&1
			if [ "$fam" = qwen2 ]; then
				llm-quantize "$g" "$T/out.gguf" "${f%%:*}" 2>/dev/null
			else # llama-quantize's numbers, and its trailing thread count
				llm-quantize "$g" "$T/out.gguf" "${f##*:}" 1 2>/dev/null
			fi
			cmp "$T/ref.gguf" "$T/out.gguf"
		done
	done
}

@test "the quantized file runs: llm-run -m on it gives the text of llm-import --dtype on the float file" {
	g=$(gguf llama f32)
	llm-quantize "$g" "$T/q.gguf" Q8_0 2>/dev/null
	run -0 --separate-stderr llm-run -m "$T/q.gguf" --cache-dir "$T/c" --tokens 1,2,3 -n 8 --json -t 2
	a=$(jq -c .generated_tokens <<<"$output")
	make -s -f "$PROJECT_ROOT/pipelines/model.mk" LLM="${LLM_BIN:-$PROJECT_ROOT/bin}/" MODEL="$g" OUT="$T/b" \
		IMPORT_FLAGS="--dtype q8_0" >&2
	run -0 --separate-stderr llm-run -m "$T/b/model.llm" --tokens 1,2,3 -n 8 --json -t 2
	[ "$(jq -c .generated_tokens <<<"$output")" = "$a" ]
}

@test "refusals in one line, nothing written: a quantized input, an unknown type, a missing file; usage" {
	g=$(gguf llama f32)
	llm-quantize "$g" "$T/q.gguf" Q4_0 2>/dev/null
	run -1 --separate-stderr llm-quantize "$T/q.gguf" "$T/qq.gguf" Q8_0
	[[ "$stderr" == "llm-quantize: $T/q.gguf: tensor '"*"' is Q"*" already: llm-quantize takes a file of F32, F16 and BF16 tensors" ]]
	[ ! -e "$T/qq.gguf" ]
	run -2 --separate-stderr llm-quantize "$g" "$T/x.gguf" IQ2_XS
	[ "${stderr_lines[0]}" = "llm-quantize: unknown type 'IQ2_XS' (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K_S, Q4_K_M, Q5_K_S, Q5_K_M, Q6_K, or their numbers)" ]
	run -1 --separate-stderr llm-quantize "$T/none.gguf" "$T/x.gguf" Q8_0
	[ "$stderr" = "llm-quantize: $T/none.gguf: No such file or directory" ]
	[ -z "$(ls "$T" | grep x.gguf)" ]
	run -2 llm-quantize "$g"
	run -0 llm-quantize -h
	[ "$output" = "usage: llm-quantize [-hv] [-t threads] input.gguf output.gguf type [threads]" ]
}
