#!/usr/bin/env bats
# llm-run on the stand-in model (test_helper/runfixture.bash): its phases
# report their phase, position, token count, KV history, thread count and
# argument sizes in logits[0..8] and predict "last token + 1", so the
# rows of --logits show exactly how llm-run called them.  Prefill chunk
# S = 4, max_context 64 unless said otherwise.  Its tokenizer.json is
# byte-level BPE with the ByteLevel pre-tokenizer's Hugging Face default,
# add_prefix_space: each piece of text that does not start with a space
# gets one ("abc" is " abc", 4 tokens).

bats_require_minimum_version 1.5.0

setup() {
	load test_helper/common-setup
	_common_setup
	load test_helper/runfixture
	T=$BATS_TEST_TMPDIR
}

# A background llm-run a failed test left behind.
teardown() {
	[ -z "${pid:-}" ] || kill -9 "$pid" 2>/dev/null || true
}

# sum A B: sum of (t + 1) for t in [A, B], the KV history of ids A..B.
sum() {
	echo $(((($2 - $1 + 1) * ($1 + $2 + 2)) / 2))
}

# seq_ids A B: "A,A+1,...,B".
seq_ids() {
	seq -s, "$1" "$2"
}

# one_error: the command failed with exactly one line on stderr and
# nothing on stdout.
one_error() {
	[ "$status" -eq 1 ] && [ -z "$output" ] && [ "${#stderr_lines[@]}" -eq 1 ]
}

# llama-bench's fields (its -o json, csv and sql), in its order (issue 65)
LB='["build_commit","build_number","cpu_info","gpu_info","backends","model_filename","model_type","model_size","model_n_params","n_batch","n_ubatch","n_threads","cpu_mask","cpu_strict","poll","type_k","type_v","n_gpu_layers","n_cpu_moe","split_mode","main_gpu","no_kv_offload","flash_attn","devices","tensor_split","tensor_buft_overrides","load_mode","lazy_mode","embeddings","no_op_offload","no_host","fit_target","fit_min_ctx","n_prompt","n_gen","n_depth","test_time","avg_ns","stddev_ns","avg_ts","stddev_ts"]'

@test "llm-run -h prints the usage, which is the man page synopsis" {
	run -0 llm-run -h
	assert_output --partial "usage: llm-run"
	[ "$(usage_of llm-run)" = "$(synopsis_of llm-run)" ]
}

@test "llm-run without a model or a prompt, or with two prompts, is a usage error" {
	d=$(fixture_linked a)
	run -2 llm-run -p x
	assert_line --index 0 "llm-run: no model (-m bundle or build directory)"
	run -2 llm-run -m "$d"
	assert_line --index 0 "llm-run: no prompt (-i, -f, -p, --tokens, --bench or --perplexity)"
	run -2 llm-run -m "$d" -p x --tokens 1
	run -2 llm-run -m "$d" -p x -n -2
	run -2 llm-run -m "$d" -p x -t 0
	run -2 llm-run -m "$d" --tokens 1,x
	run -2 llm-run -m "$d" -p x extra
}

@test "a text prompt generates its continuation from the bundle, after the prompt as llama-cli echoes it" {
	d=$(fixture_linked a)
	run -0 --separate-stderr llm-run -m "$d/model.llm" -p abc -n 3
	[ "$output" = "abcdef" ]
	assert_equal "${#stderr_lines[@]}" 3
	[[ "${stderr_lines[0]}" =~ ^llm-run:\ time\ to\ first\ token\ [0-9.]+\ ms$ ]]
	[[ "${stderr_lines[1]}" =~ ^llm-run:\ prefill\ 4\ tokens\ in\ [0-9.]+\ ms,\ [0-9.]+\ t/s$ ]]
	[[ "${stderr_lines[2]}" =~ ^llm-run:\ decode\ 2\ tokens\ in\ [0-9.]+\ ms,\ [0-9.]+\ t/s$ ]]
}

@test "a build directory runs like its bundle" {
	d=$(fixture_linked a)
	llm-run -m "$d/model.llm" -t 1 --tokens 20,21,22,23,24,25 -n 5 --logits "$T/b" >/dev/null 2>&1
	llm-run -m "$d" -t 1 --tokens 20,21,22,23,24,25 -n 5 --logits "$T/d" >/dev/null 2>&1
	[ "$(rows "$T/b")" -eq 5 ]
	cmp "$T/b" "$T/d"
}

@test "one prompt token: one prefill call at position 0" {
	d=$(fixture_linked a)
	llm-run -m "$d" -t 1 --tokens 40 -n 1 --logits "$T/l" >/dev/null 2>&1
	[ "$(rows "$T/l")" -eq 1 ]
	[ "$(diag "$T/l" 0)" = "1 0 1 41 1 0 1088 1280 258" ]
}

@test "a prompt of S tokens is one prefill call" {
	d=$(fixture_linked a)
	llm-run -m "$d" -t 1 --tokens 10,11,12,13 -n 1 --logits "$T/l" >/dev/null 2>&1
	[ "$(diag "$T/l" 0)" = "1 0 4 $(sum 10 13) 1 0 1088 1280 258" ]
}

@test "a prompt of S+1 tokens: prefill, then prefill_kv with one token at position S" {
	d=$(fixture_linked a)
	run -0 --separate-stderr llm-run -v -m "$d" -t 1 --tokens "$(seq_ids 10 14)" -n 1 --logits "$T/l"
	[ "$(diag "$T/l" 0)" = "2 4 1 $(sum 10 14) 1 0 1088 1280 258" ]
	[ "${stderr_lines[1]}" = "llm-run: prefill pos 0 n_tokens 4" ]
	[ "${stderr_lines[2]}" = "llm-run: prefill_kv pos 4 n_tokens 1" ]
}

@test "a prompt of 3S+7 tokens goes in chunks of S, then decode follows it" {
	d=$(fixture_linked a)
	run -0 --separate-stderr llm-run -v -m "$d" -t 1 --tokens "$(seq_ids 30 48)" -n 4 --logits "$T/l"
	# 19 tokens: 4 at 0, 4 at 4, 4 at 8, 4 at 12, 3 at 16.
	for i in 1 2 3 4 5; do
		want=("" "prefill pos 0 n_tokens 4" "prefill_kv pos 4 n_tokens 4" "prefill_kv pos 8 n_tokens 4"
			"prefill_kv pos 12 n_tokens 4" "prefill_kv pos 16 n_tokens 3")
		[ "${stderr_lines[$i]}" = "llm-run: ${want[$i]}" ]
	done
	[ "${stderr_lines[6]}" = "llm-run: decode pos 19 n_tokens 1" ]
	[ "${stderr_lines[8]}" = "llm-run: decode pos 21 n_tokens 1" ]
	[ "$(rows "$T/l")" -eq 4 ]
	[ "$(diag "$T/l" 0)" = "2 16 3 $(sum 30 48) 1 0 1088 1280 258" ]
	# Decode feeds the generated 49, 50, 51: the cache holds them.
	[ "$(diag "$T/l" 1)" = "3 19 1 $(sum 30 49) 1 0 1088 1280 258" ]
	[ "$(diag "$T/l" 3)" = "3 21 1 $(sum 30 51) 1 0 1088 1280 258" ]
}

@test "logits rows carry the weights: the data area of weights.bin" {
	d=$(fixture_linked a)
	llm-run -m "$d/model.llm" --tokens 100 -n 2 --logits "$T/l" >/dev/null 2>&1
	[ "$(logit "$T/l" 0 9)" = "2.25" ]
	[ "$(logit "$T/l" 0 257)" = "64.25" ]
	[ "$(logit "$T/l" 1 100)" = "25" ]
}

@test "-t sets the OpenMP thread count of the model library" {
	d=$(fixture_linked a)
	for t in 1 3; do
		llm-run -m "$d/model.llm" -t $t --tokens 7 -n 1 --logits "$T/l$t" >/dev/null 2>&1
		[ "$(diag "$T/l$t" 0 | cut -d' ' -f5)" = "$t" ]
	done
}

@test "generation stops at an end-of-sequence id, which is not printed" {
	d=$(fixture_linked a)
	run -0 --separate-stderr llm-run -m "$d/model.llm" --json --tokens 250 -n 100 --logits "$T/l"
	[ "$(jq -c .generated_tokens <<<"$output")" = "[251,252,253,254,255,256]" ]
	[ "$(jq -r .stop <<<"$output")" = "eos" ]
	# 251..255 are bytes 0xfb..0xff (invalid UTF-8 alone), 256 is <s>, special.
	r=$'\xef\xbf\xbd'
	[ "$(jq -r .text <<<"$output")" = "$r$r$r$r$r" ]
	[ "$(rows "$T/l")" -eq 7 ]
	[ "$(jq .timings.decode_tokens <<<"$output")" -eq 6 ]
}

@test "generation stops when the context is full" {
	d=$(fixture_linked a)
	run -0 --separate-stderr llm-run -m "$d/model.llm" --json -t 1 --tokens "$(seq_ids 60 119)" -n 100 --logits "$T/l"
	# Positions 60..63 take 120..123; 124, predicted at 63, has no room.
	[ "$(jq -c .generated_tokens <<<"$output")" = "[120,121,122,123,124]" ]
	[ "$(jq -r .stop <<<"$output")" = "context" ]
	[ "$(rows "$T/l")" -eq 5 ]
	[ "$(diag "$T/l" 4)" = "3 63 1 $(sum 60 123) 1 0 1088 1280 258" ]
}

@test "-n 0 runs the prompt only and writes one logits row" {
	d=$(fixture_linked a)
	run -0 --separate-stderr llm-run -m "$d" -n 0 -p hi --logits "$T/l"
	[ "$output" = "hi" ]
	[ "$(rows "$T/l")" -eq 1 ]
}

@test "--json prints one object with the tokens, the text and the timings" {
	d=$(fixture_linked a)
	run -0 --separate-stderr llm-run -m "$d/model.llm" --json -p 'Hello' -n 4
	[ -z "$stderr" ]
	[ "$(jq -c .prompt_tokens <<<"$output")" = "[32,72,101,108,108,111]" ]
	[ "$(jq -c .generated_tokens <<<"$output")" = "[112,113,114,115]" ]
	[ "$(jq -r .text <<<"$output")" = "pqrs" ]
	[ "$(jq -r .stop <<<"$output")" = "length" ]
	[ "$(jq '.timings | (.ttft_ms > 0) and (.prefill_tokens == 6) and (.decode_tokens == 3) and (.prefill_tps > 0) and (.decode_tps > 0)' <<<"$output")" = true ]
}

@test "a text prompt gets BOS first when model.json says add_bos" {
	d=$(fixture_linked bos -b)
	run -0 --separate-stderr llm-run -m "$d/model.llm" --json -p 'a b' -n 1
	[ "$(jq -c .prompt_tokens <<<"$output")" = "[256,32,97,32,98]" ]
	run -0 --separate-stderr llm-run -m "$d/model.llm" --json --tokens 97 -n 1
	[ "$(jq -c .prompt_tokens <<<"$output")" = "[97]" ]
}

@test "added tokens in a text prompt are matched literally" {
	d=$(fixture_linked a)
	run -0 --separate-stderr llm-run -m "$d" --json -p 'x</s>y' -n 1
	# Each piece around the added token gets its prefix space.
	[ "$(jq -c .prompt_tokens <<<"$output")" = "[32,120,257,32,121]" ]
}

@test "-f reads the prompt from a file, or from standard input with -" {
	d=$(fixture_linked a)
	printf 'xy' >"$T/p"
	run -0 --separate-stderr llm-run -m "$d" -f "$T/p" -n 2
	[ "$output" = "xyz{" ]
	run -0 --separate-stderr llm-run -m "$d" -f - -n 2 <"$T/p"
	[ "$output" = "xyz{" ]
	run -1 --separate-stderr llm-run -m "$d" -f "$T/nope" -n 2
	one_error
	[ "$stderr" = "llm-run: $T/nope: No such file or directory" ]
}

@test "--no-display-prompt prints only the continuation; the echo is the text after -e, never matched by --stop; --tokens and --json echo nothing" {
	d=$(fixture_linked a)
	run -0 --separate-stderr llm-run -m "$d" -p abc -n 3 --no-display-prompt
	[ "$output" = "def" ]
	run -0 --separate-stderr llm-run -m "$d" --prompt abc --n-predict 3 --no-display-prompt
	[ "$output" = "def" ]
	llm-run -m "$d" -e -p 'x\ty' -n 1 >"$T/o" 2>/dev/null
	printf 'x\tyz\n' | cmp - "$T/o"
	llm-run -m "$d" -p 'x\ty' -n 1 >"$T/o" 2>/dev/null
	printf 'x\\tyz\n' | cmp - "$T/o"
	# the prompt's own text does not stop generation
	run -0 --separate-stderr llm-run -m "$d" -p abc -n 3 --stop bc --stop cd
	[ "$output" = "abcdef" ]
	run -0 --separate-stderr llm-run -m "$d" --tokens 97,98,99 -n 3
	[ "$output" = "def" ]
	run -0 --separate-stderr llm-run -m "$d" --json -p abc -n 3
	[ "$(jq -r .text <<<"$output")" = "def" ]
	run -2 llm-run -m "$d" --bench --no-display-prompt
	[[ "$output" == "llm-run: --no-display-prompt goes with -f, -p, --tokens or -i"* ]]
}

@test "a token id outside the vocabulary is an error and leaves no logits file" {
	d=$(fixture_linked a)
	run --separate-stderr llm-run -m "$d" --tokens 1,258 --logits "$T/l"
	one_error
	[ "$stderr" = "llm-run: $d: token id 258 is out of range [0, 258)" ]
	[ -z "$(find "$T" -name 'l*')" ]
}

@test "a prompt longer than max_context is an error" {
	d=$(fixture_linked a)
	run --separate-stderr llm-run -m "$d" --tokens "$(seq_ids 1 65)"
	one_error
	[ "$stderr" = "llm-run: $d: prompt of 65 tokens does not fit the context of 64 positions (-c)" ]
	# a text prompt: not echoed either
	run --separate-stderr llm-run -m "$d" -p "$(printf 'x%.0s' $(seq 70))"
	one_error
	[ -z "$output" ]
}

@test "weights of another plan are refused" {
	fixture_copy "$(fixture_linked a)" "$T/d"
	other=$(fixture_linked c32 -C 32)
	cp "$other/weights.bin" "$T/d/weights.bin"
	run --separate-stderr llm-run -m "$T/d" --tokens 1
	one_error
	[ "$stderr" = "llm-run: $T/d/weights.bin: weights are plan $(jq -r .weights.fingerprint "$other/model.json"), model.json is plan $(jq -r .weights.fingerprint "$T/d/model.json")" ]
}

@test "a library built for another plan is refused, in a directory and in a bundle" {
	fixture_copy "$(fixture_linked a)" "$T/d"
	other=$(fixture_linked c32 -C 32)
	cp "$other/libmodel.so" "$T/d/libmodel.so"
	x=$(jq -r .weights.fingerprint "$other/model.json")
	y=$(jq -r .weights.fingerprint "$T/d/model.json")
	run --separate-stderr llm-run -m "$T/d" --tokens 1
	one_error
	[ "$stderr" = "llm-run: $T/d/libmodel.so: library built for plan $x, weights are plan $y" ]
	# A bundle made by GNU tar reads the same (members at 512-byte offsets).
	tar --format=ustar -cf "$T/x.llm" -C "$T/d" model.json tokenizer.json libmodel.so weights.bin
	run --separate-stderr llm-run -m "$T/x.llm" --tokens 1
	one_error
	[ "$stderr" = "llm-run: $T/x.llm: library built for plan $x, weights are plan $y" ]
}

@test "a phase symbol missing from the library is an error naming it" {
	fixture_copy "$(fixture_linked a)" "$T/d"
	# the library's symbol renamed (model.json's entry is checked against
	# the phase specs before: bad-input.bats)
	# (its first letter: "llm_decode" shares the string's tail)
	perl -0777 -pi -e 's/_mlir_ciface_llm_decode\0/Xmlir_ciface_llm_decode\0/g' "$T/d/libmodel.so"
	run --separate-stderr llm-run -m "$T/d" --tokens 1
	one_error
	[ "$stderr" = "llm-run: $T/d/libmodel.so: missing symbol '_mlir_ciface_llm_decode' (phase 'decode')" ]
}

@test "a bundle without the library is refused" {
	d=$(fixture_linked a)
	tar --format=ustar -cf "$T/x.llm" -C "$d" model.json tokenizer.json weights.bin
	run --separate-stderr llm-run -m "$T/x.llm" --tokens 1
	one_error
	[ "$stderr" = "llm-run: $T/x.llm: no member 'libmodel.so'" ]
}

@test "a truncated bundle is refused" {
	d=$(fixture_linked a)
	size=$(stat -c %s "$d/model.llm")
	for n in 600 5000 70000 $((size - 1024)) $((size - 1)); do
		head -c "$n" "$d/model.llm" >"$T/t.llm"
		run --separate-stderr llm-run -m "$T/t.llm" --tokens 1
		one_error
		[[ "$stderr" == "llm-run: $T/t.llm: "*"truncated"* ]]
	done
}

@test "a tampered bundle is refused" {
	d=$(fixture_linked a)
	off=$(grep -boa LLMWGHT "$d/model.llm" | head -1 | cut -d: -f1)
	# The plan fingerprint in the weights header.
	cp "$d/model.llm" "$T/x.llm"
	printf '\001' | dd of="$T/x.llm" bs=1 seek=$((off + 16)) conv=notrunc status=none
	run --separate-stderr llm-run -m "$T/x.llm" --tokens 1
	one_error
	[[ "$stderr" == "llm-run: $T/x.llm: weights.bin: weights are plan "*", model.json is plan "* ]]
	# A tar header.
	cp "$d/model.llm" "$T/x.llm"
	printf 'X' | dd of="$T/x.llm" bs=1 seek=1 conv=notrunc status=none
	run --separate-stderr llm-run -m "$T/x.llm" --tokens 1
	one_error
	[ "$stderr" = "llm-run: $T/x.llm: bad tar header checksum at offset 0 (damaged?)" ]
	# model.json itself: then it is not JSON, or not the plan.
	cp "$d/model.llm" "$T/x.llm"
	printf '[' | dd of="$T/x.llm" bs=1 seek=512 conv=notrunc status=none
	run --separate-stderr llm-run -m "$T/x.llm" --tokens 1
	one_error
	[[ "$stderr" == "llm-run: $T/x.llm: model.json:"* ]]
	# Not a bundle at all.
	echo hello >"$T/x.llm"
	run --separate-stderr llm-run -m "$T/x.llm" --tokens 1
	one_error
	[ "$stderr" = "llm-run: $T/x.llm: not a model bundle (too short for a tar header)" ]
}

@test "a bundle with a link, an absolute path or '..' is refused" {
	d=$(fixture_linked a)
	mkdir "$T/s" && cp "$d/model.json" "$T/s/" && ln -s model.json "$T/s/libmodel.so"
	tar -cf "$T/x.llm" -C "$T/s" model.json libmodel.so
	run --separate-stderr llm-run -m "$T/x.llm" --tokens 1
	one_error
	[ "$stderr" = "llm-run: $T/x.llm: member 'libmodel.so' is a link (only regular files are allowed)" ]
	tar -cPf "$T/x.llm" "$T/s/model.json"
	run --separate-stderr llm-run -m "$T/x.llm" --tokens 1
	one_error
	[ "$stderr" = "llm-run: $T/x.llm: member '$T/s/model.json': absolute path" ]
	(cd "$T/s" && tar -cPf "$T/x.llm" ../s/model.json)
	run --separate-stderr llm-run -m "$T/x.llm" --tokens 1
	one_error
	[ "$stderr" = "llm-run: $T/x.llm: member '../s/model.json': '..' in path" ]
}

# retok DIR JQ: rewrite DIR's tokenizer.json with a jq program (the plan
# does not cover the tokenizer: the model still loads).
retok() {
	jq "$2" "$1/tokenizer.json" >"$1/tokenizer.json.new" && mv "$1/tokenizer.json.new" "$1/tokenizer.json"
}

# swap_ids A B ...: a jq program swapping the ids of byte tokens, pairwise.
swap_ids() {
	local m="" a b
	while [ $# -gt 0 ]; do
		a=$1 b=$2
		shift 2
		m="$m${m:+,}\"$a\":$b,\"$b\":$a"
	done
	echo ".model.vocab |= with_entries(.value |= ({$m}[tostring] // .))"
}

# endless NAME: a linked fixture of a million positions without EOS ids:
# it counts up through the vocabulary until stopped (with -c 1048576).
endless() {
	local d="$BATS_FILE_TMPDIR/endless-$1"
	if [ ! -d "$d" ]; then
		fixture_copy "$(fixture big -C 1048576)" "$d.new" || return 1
		# Not with jq, which would rewrite the plan's numbers.
		perl -0pi -e 's/"eos_ids": \[[^\]]*\]/"eos_ids": []/' "$d.new/model.json"
		llm-link "$d.new" >&2 && mv "$d.new" "$d" || return 1
	fi
	echo "$d"
}

# wait_for FILE N: wait (at most 20 s) until FILE has at least N lines
# (0: any byte).
wait_for() {
	local i
	for i in $(seq 200); do
		if [ "$2" -eq 0 ]; then [ -s "$1" ] && return 0; else [ "$(wc -l <"$1")" -ge "$2" ] && return 0; fi
		sleep 0.1
	done
	return 1
}

# wait_bytes FILE N: wait (at most 20 s) until FILE has more than N bytes.
wait_bytes() {
	local i
	for i in $(seq 200); do
		[ "$(stat -c %s "$1")" -gt "$2" ] && return 0
		sleep 0.1
	done
	return 1
}

# stop_job PID: wait (at most 20 s) for a job to end, else kill it; its
# exit status.
stop_job() {
	local i
	for i in $(seq 200); do
		kill -0 "$1" 2>/dev/null || break
		sleep 0.1
	done
	kill -9 "$1" 2>/dev/null || true
	wait "$1"
}

@test "the text ends with one newline, added only when the text has none" {
	d=$(fixture_linked a)
	llm-run -m "$d" -p abc -n 3 >"$T/o" 2>/dev/null
	printf 'abcdef\n' | cmp - "$T/o"
	# After a tab (9) comes a newline (10): nothing is added.
	llm-run -m "$d" --tokens 8 -n 2 >"$T/o" 2>/dev/null
	printf '\t\n' | cmp - "$T/o"
	# No text, no newline.
	llm-run -m "$d" --tokens 1 -n 0 >"$T/o" 2>/dev/null
	[ ! -s "$T/o" ]
	# The echoed prompt counts as text.
	llm-run -m "$d" -p hi -n 0 >"$T/o" 2>/dev/null
	printf 'hi\n' | cmp - "$T/o"
	printf 'hi\n' >"$T/p"
	llm-run -m "$d" -f "$T/p" -n 0 >"$T/o" 2>/dev/null
	cmp "$T/p" "$T/o"
}

@test "sampling options out of range are usage errors" {
	d=$(fixture_linked a)
	for o in "--temp -1" "--temp x" "--top-k -1" "--top-p 1.5" "--min-p -0.1" "--repeat-penalty 0" \
		"--repeat-last-n -2" "--seed -1" "--seed x" "--stop="; do
		# shellcheck disable=SC2086
		run -2 llm-run -m "$d" --tokens 1 $o
	done
}

@test "--temp samples; a --seed gives the same tokens again, another seed others" {
	d=$(fixture_linked a)
	# At temperature 1e6 the logits (at most 1e6 + 64) are all close to
	# 1: every token is likely, the "next" token barely more.
	gen() {
		llm-run -m "$d" --json --tokens 10 -n 30 --temp 1e6 "$@" 2>/dev/null | jq -c .generated_tokens
	}
	a=$(gen --seed 1)
	[ "$a" = "$(gen --seed 1)" ]
	[ "$a" != "$(gen --seed 2)" ]
	[ "$a" != "$(llm-run -m "$d" --json --tokens 10 -n 30 --seed 1 2>/dev/null | jq -c .generated_tokens)" ]
	# The same with 2 threads (the stand-in's logits do not depend on it).
	[ "$a" = "$(gen --seed 1 -t 2)" ]
}

@test "--temp 0 is greedy whatever the other sampling options" {
	d=$(fixture_linked a)
	run -0 --separate-stderr llm-run -m "$d" --json --tokens 10 -n 5 --temp 0 --top-k 100 --top-p 0.5 --seed 3
	[ "$(jq -c .generated_tokens <<<"$output")" = "[11,12,13,14,15]" ]
}

@test "--top-k 1, --top-p and --min-p keep only the most likely token at a high temperature" {
	d=$(fixture_linked a)
	# The next token has about 1% of the mass, e times any other.
	for o in "--top-k 1" "--top-p 0.005" "--min-p 0.5"; do
		# shellcheck disable=SC2086
		run -0 --separate-stderr llm-run -m "$d" --json --tokens 10 -n 5 --temp 1e6 --seed 9 $o
		[ "$(jq -c .generated_tokens <<<"$output")" = "[11,12,13,14,15]" ]
	done
	# Wider filters let other tokens in.
	for o in "--top-k 50" "--top-p 0.5" "--min-p 0.3"; do
		# shellcheck disable=SC2086
		run -0 --separate-stderr llm-run -m "$d" --json --tokens 10 -n 5 --temp 1e6 --seed 9 $o
		[ "$(jq -c .generated_tokens <<<"$output")" != "[11,12,13,14,15]" ]
	done
}

@test "--repeat-penalty penalises the tokens of its --repeat-last-n window, prompt included" {
	d=$(fixture_linked a)
	# After 101,100 the model predicts 101; penalised by 1e6 its logit is
	# about 1, and the next best is </s> (64.25): the end.
	run -0 --separate-stderr llm-run -m "$d" --json --tokens 101,100 -n 3 --repeat-penalty 1e6
	[ "$(jq -c .generated_tokens <<<"$output")" = "[]" ]
	[ "$(jq -r .stop <<<"$output")" = "eos" ]
	run -0 --separate-stderr llm-run -m "$d" --json --tokens 101,100 -n 3 --repeat-penalty 1e6 --repeat-last-n 2
	[ "$(jq -c .generated_tokens <<<"$output")" = "[]" ]
	# A window of 1 holds only 100.
	run -0 --separate-stderr llm-run -m "$d" --json --tokens 101,100 -n 3 --repeat-penalty 1e6 --repeat-last-n 1
	[ "$(jq -c .generated_tokens <<<"$output")" = "[101,102,103]" ]
	# Window 0 and penalty 1 are off.
	run -0 --separate-stderr llm-run -m "$d" --json --tokens 101,100 -n 3 --repeat-penalty 1e6 --repeat-last-n 0
	[ "$(jq -c .generated_tokens <<<"$output")" = "[101,102,103]" ]
}

@test "a --stop string split across tokens stops generation and is not printed" {
	d=$(fixture_linked a)
	run -0 --separate-stderr llm-run -m "$d" --json -p abc -n 10 --stop ef
	[ "$(jq -r .text <<<"$output")" = "d" ]
	[ "$(jq -r .stop <<<"$output")" = "stop" ]
	[ "$(jq -c .generated_tokens <<<"$output")" = "[100,101,102]" ]
	llm-run -m "$d" -p abc -n 10 --stop ef >"$T/o" 2>/dev/null
	printf 'abcd\n' | cmp - "$T/o"
	# The first of several to complete wins; one that never completes is
	# printed in the end.
	run -0 --separate-stderr llm-run -m "$d" --json -p abc -n 10 --stop xyz --stop fgh --stop ghi
	[ "$(jq -r .text <<<"$output")" = "de" ]
	run -0 --separate-stderr llm-run -m "$d" --json -p abc -n 2 --stop efz
	[ "$(jq -r .text <<<"$output")" = "de" ]
	[ "$(jq -r .stop <<<"$output")" = "length" ]
}

@test "a UTF-8 character split across tokens is printed whole, or as U+FFFD when cut short" {
	fixture_copy "$(fixture_linked a)" "$T/d"
	# Tokens 100, 101, 102 become the bytes of the euro sign, e2 82 ac.
	retok "$T/d" "$(swap_ids 100 226 101 130 102 172)"
	llm-run -m "$T/d" --tokens 99 -n 4 >"$T/o" 2>/dev/null
	printf '\342\202\254g\n' | cmp - "$T/o"
	run -0 --separate-stderr llm-run -m "$T/d" --json --tokens 99 -n 4
	[ "$(jq -r .text <<<"$output")" = $'\u20acg' ]
	# Two of its three bytes: one replacement character.
	llm-run -m "$T/d" --tokens 99 -n 2 >"$T/o" 2>/dev/null
	printf '\357\277\275\n' | cmp - "$T/o"
	# A stop string inside the character's bytes.
	run -0 --separate-stderr llm-run -m "$T/d" --json --tokens 99 -n 4 --stop $'\u20ac'
	[ "$(jq -r .text <<<"$output")" = "" ]
	[ "$(jq -r .stop <<<"$output")" = "stop" ]
}

@test "SIGTERM during generation or --perplexity ends the process by the signal and leaves no --logits or --kl-divergence-base file (issue 46)" {
	d=$(endless a)
	llm-run -m "$d" -c 1048576 --tokens 1 -n 100000000 --logits "$T/l.f32" >"$T/o" 2>"$T/e" 3>&- &
	pid=$!
	wait_for "$T/o" 0
	kill -TERM $pid
	st=0
	wait $pid || st=$?
	[ "$st" -eq 143 ]
	[ -z "$(ls -A "$T" | grep '^l\.f32')" ]
	# the perplexity of a long text, its logits saved for a KL base
	for i in $(seq 1 4000); do printf 'w%d ' "$i"; done >"$T/text"
	llm-run -m "$d" -c 1048576 --ppl-context 64 --perplexity "$T/text" --kl-divergence-base "$T/base" \
		>"$T/o" 2>"$T/e" 3>&- &
	pid=$!
	for i in $(seq 200); do compgen -G "$T/base*" >/dev/null && break; sleep 0.05; done
	kill -TERM $pid
	st=0
	wait $pid || st=$?
	[ "$st" -eq 143 ]
	[ -z "$(ls -A "$T" | grep '^base')" ]
}

@test "Ctrl-C stops generation, prints the rates and exits 0" {
	d=$(endless a)
	llm-run -m "$d" -c 1048576 --tokens 1 -n 100000000 >"$T/o" 2>"$T/e" 3>&- &
	pid=$!
	wait_for "$T/o" 0
	kill -INT $pid
	stop_job $pid
	[ "$(wc -l <"$T/e")" -eq 3 ]
	grep -q '^llm-run: decode [0-9]* tokens in' "$T/e"
	# The text got its newline.
	[ "$(tail -c 1 "$T/o" | od -An -c | tr -d ' ')" = '\n' ]
	llm-run -v -m "$d" -c 1048576 --json --tokens 1 -n 100000000 >"$T/j" 2>"$T/e" 3>&- &
	pid=$!
	# Decoding has begun when -v shows a decode call.
	for i in $(seq 200); do grep -q 'decode pos' "$T/e" && break; sleep 0.1; done
	kill -INT $pid
	stop_job $pid
	[ "$(jq -r .stop "$T/j")" = "interrupt" ]
	[ "$(jq '.generated_tokens | length' "$T/j")" -gt 0 ]
}

@test "--bench measures prefill and decode on random tokens, as a table or a JSON array" {
	d=$(fixture_linked a)
	run -0 --separate-stderr llm-run -m "$d" -t 1 --bench pp=8,tg=4,reps=2 --json
	[ "$(jq -c 'map(.test)' <<<"$output")" = '["pp8","tg4"]' ]
	[ "$(jq 'all(.[]; .tokens_per_s > 0 and .stddev >= 0 and .depth == 0)' <<<"$output")" = true ]
	# llama-bench's -o json fields, in its order, then ours, then the samples (issue 65)
	[ "$(jq -c '.[0] | keys_unsorted' <<<"$output")" = "${LB%]},\"test\",\"depth\",\"tokens_per_s\",\"stddev\",\"activations\",\"samples_ns\",\"samples_ts\"]" ]
	[ "$(jq -c '[.[] | [.n_prompt, .n_gen, .n_depth, .n_threads, (.samples_ts | length), (.samples_ns | length), .avg_ts == .tokens_per_s]]' <<<"$output")" = '[[8,0,0,1,2,2,true],[0,4,0,1,2,2,true]]' ]
	[ "$(jq -r '.[0] | [.model_filename, .type_k, .n_batch, .activations] | @tsv' <<<"$output")" = "$d	$(jq -r .kv_cache.dtype "$d/model.json")	$(jq .limits.prefill_chunk "$d/model.json")	f32" ]
	jq -e '.[0].test_time | test("^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$")' <<<"$output"
	[ "$(jq -r '.[0].model_size' <<<"$output")" = "$(jq .weights.data_bytes "$d/model.json")" ]
	# llama-bench's markdown: its columns, widths and alignment, and a build line
	run -0 --separate-stderr llm-run -m "$d" -t 3 --bench=pp=4,tg=0,reps=1
	[ "${lines[0]}" = "| model                          |       size |     params | backend    | threads |            test |                  t/s |" ]
	[ "${lines[1]}" = "| ------------------------------ | ---------: | ---------: | ---------- | ------: | --------------: | -------------------: |" ]
	[[ "${lines[2]}" =~ ^\|\ fixture\ \?B\ all\ F32\ +\|\ +0\.00\ MiB\ \|\ +0\.00\ M\ \|\ CPU\ +\|\ +3\ \|\ +pp4\ \|\ +[0-9.]+\ ±\ [0-9.]+\ \|$ ]]
	[[ "${lines[3]}" == "build: llm-run "* ]]
	[ "${#lines[@]}" -eq 4 ]
	# One warm-up run, then reps runs: pp8 is two chunks of S = 4; tg4
	# is one prompt token, then 4 decode steps.
	run -0 --separate-stderr llm-run -v -m "$d" --bench pp=8,tg=4,reps=2
	[ "$(grep -c 'prefill pos 0 n_tokens 4' <<<"$stderr")" -eq 3 ]
	[ "$(grep -c 'prefill_kv pos 4 n_tokens 4' <<<"$stderr")" -eq 3 ]
	[ "$(grep -c 'prefill pos 0 n_tokens 1' <<<"$stderr")" -eq 3 ]
	[ "$(grep -c 'decode pos' <<<"$stderr")" -eq 12 ]
}

@test "--bench refuses a test larger than the context and a bad spec" {
	d=$(fixture_linked a)
	run -1 --separate-stderr llm-run -m "$d" --bench
	[ "$stderr" = "llm-run: $d: --bench pp=512,tg=128 does not fit the context of 64 positions (-c)" ]
	run -2 llm-run -m "$d" --bench pp=x
	run -2 llm-run -m "$d" --bench qq=1
	run -2 llm-run -m "$d" --bench reps=0
	run -2 llm-run -m "$d" --bench -p x
	# nothing to measure: one line, no table
	for spec in "pp=0,tg=0" "-p 0 -n 0" "pp=0,tg=0,depth=8"; do
		run -2 --separate-stderr llm-run -m "$d" --bench $spec
		assert_equal "$output" ""
		assert_equal "$stderr" "llm-run: --bench: nothing to measure: every prompt (pp, -p) and generation (tg, -n) count is 0"
	done
}

@test "--bench depth=N names its tests like llama-bench and reports the depth in JSON" {
	d=$(fixture_linked a)
	run -0 --separate-stderr llm-run -m "$d" -t 1 --bench pp=8,tg=4,depth=20,reps=2 --json
	[ "$(jq -c 'map(.test)' <<<"$output")" = '["pp8 @ d20","tg4 @ d20"]' ]
	[ "$(jq 'all(.[]; .depth == 20 and .tokens_per_s > 0 and .stddev >= 0)' <<<"$output")" = true ]
	run -0 --separate-stderr llm-run -m "$d" --bench pp=4,tg=2,depth=7,reps=1
	[[ "${lines[2]}" =~ \|\ +pp4\ @\ d7\ \|\ +[0-9.]+\ ±\ [0-9.]+\ \|$ ]]
	[[ "${lines[3]}" =~ \|\ +tg2\ @\ d7\ \|\ +[0-9.]+\ ±\ [0-9.]+\ \|$ ]]
	[ "${#lines[@]}" -eq 5 ]
}

@test "--bench takes llama-bench's -p, -n, -d and -r, lists included, and not with a spec" {
	d=$(fixture_linked a)
	run -0 --separate-stderr llm-run -m "$d" -t 1 --bench -p 4,8 -n 2 -d 0,5 -r 2 --json
	[ "$(jq -c 'map(.test)' <<<"$output")" = '["pp4","pp8","tg2","pp4 @ d5","pp8 @ d5","tg2 @ d5"]' ]
	[ "$(jq -c 'map(.samples_ts | length) | unique' <<<"$output")" = '[2]' ]
	# -n 0: no tg test, as llama-bench
	run -0 --separate-stderr llm-run -m "$d" --bench -p 4 -n 0 -r 1 --json
	[ "$(jq -c 'map(.test)' <<<"$output")" = '["pp4"]' ]
	run -2 llm-run -m "$d" --bench pp=4 -p 8
	assert_line --index 0 "llm-run: give the --bench spec or llama-bench's -p, -n, -d and -r, not both"
	run -2 llm-run -m "$d" --bench -p 4,
	assert_line --index 0 "llm-run: -p: '4,' is not a list of counts"
	# (outside --bench, -r is llama-cli's reverse prompt: a stop string)
	run -0 llm-run -m "$d" -p hello -r 3 -n 1
	run -2 llm-run -m "$d" -p hello -d 3
	assert_line --index 0 "llm-run: -d goes with --bench"
}

@test "--bench takes llama-bench's -o md, json, jsonl and csv, -t lists and -pg (issue 48)" {
	d=$(fixture_linked a)
	# -pg pp,tg: a prompt then generation, timed together; after -p and -n;
	# -t 1,2: every test on each, threads outermost, as llama-bench
	run -0 --separate-stderr llm-run -m "$d" -t 1,2 --bench -p 4 -n 2 -pg 4,3 -r 2 -o json
	[ "$(jq -c 'map([.test, .n_threads, .n_prompt, .n_gen])' <<<"$output")" = \
		'[["pp4",1,4,0],["tg2",1,0,2],["pp4+tg3",1,4,3],["pp4",2,4,0],["tg2",2,0,2],["pp4+tg3",2,4,3]]' ]
	json=$output
	# jsonl: the same objects, one a line
	run -0 --separate-stderr llm-run -m "$d" -t 1,2 --bench -p 4 -n 2 -pg 4,3 -r 2 -o jsonl
	[ "${#lines[@]}" -eq 6 ]
	[ "$(jq -sc 'map([.test, .n_threads] )' <<<"$output")" = "$(jq -c 'map([.test, .n_threads])' <<<"$json")" ]
	[ "$(jq -sc 'map(keys)' <<<"$output")" = "$(jq -c 'map(keys)' <<<"$json")" ]
	# csv: a header of the keys in JSON's order but the samples (llama-bench's), then a line a test
	run -0 --separate-stderr llm-run -m "$d" -t 2 --bench -p 4 -n 0 -pg 2,2 -r 3 -o csv
	[ "${#lines[@]}" -eq 3 ]
	[ "${lines[0]}" = "$(jq -r 'join(",")' <<<"$LB"),test,depth,tokens_per_s,stddev,activations" ]
	[[ "${lines[1]}" =~ ^[0-9.]+,0,[^,]*,,CPU,[^,]+,fixture\ \?B\ all\ F32,[0-9]+,[0-9]+,[0-9]+,[0-9]+,2,0x0,0,50,f32,f32,0,0,layer,0,0,0,auto,0.00,none,mmap,off,0,0,0,0,0,4,0,0,[0-9T:Z-]+,[0-9]+,[0-9]+,[0-9.]+,[0-9.]+,pp4,0,[0-9.]+,[0-9.]+,f32$ ]]
	[[ "${lines[2]}" =~ ,pp2\+tg2,0, ]]
	# sql: llama-bench's table, an INSERT a test
	run -0 --separate-stderr llm-run -m "$d" -t 2 --bench -p 4 -n 0 -r 1 -o sql --no-warmup
	[ "${lines[0]}" = "CREATE TABLE IF NOT EXISTS llama_bench (" ]
	[ "${lines[1]}" = "  build_commit TEXT," ]
	[[ "${lines[-1]}" == "INSERT INTO llama_bench ($(jq -r 'join(", ")' <<<"$LB")) VALUES ('"*"', '4', '0', '0', '"*"');" ]]
	# md is the table; --json is -o json
	run -0 --separate-stderr llm-run -m "$d" --bench -p 4 -n 0 -r 1 -o md
	[[ "${lines[2]}" =~ \|\ +pp4\ \| ]]
	run -0 --separate-stderr llm-run -m "$d" --bench -p 4 -n 0 -r 1 -o json --json
	# -pg alone measures, and counts against the context with the depth
	run -0 --separate-stderr llm-run -m "$d" --bench -p 0 -n 0 -pg 2,2 -r 1 -o jsonl
	[ "$(jq -r .test <<<"$output")" = "pp2+tg2" ]
	run -1 --separate-stderr llm-run -m "$d" --bench -p 0 -n 0 -pg 40,30 -r 1
	[ "$stderr" = "llm-run: $d: --bench pp=0,tg=0,pg=40+30 does not fit the context of 64 positions (-c)" ]
	# refusals, one line each
	run -2 --separate-stderr llm-run -m "$d" --bench -o xml
	[ "$stderr" = "llm-run: -o: 'xml' is not md, json, jsonl, csv or sql" ]
	run -2 --separate-stderr llm-run -m "$d" --bench -o csv --json
	[ "$stderr" = "llm-run: --json and -o csv: give one" ]
	run -2 --separate-stderr llm-run -m "$d" --bench -pg 4
	[ "$stderr" = "llm-run: -pg: '4' is not a prompt and a generation count, as 512,128" ]
	run -2 --separate-stderr llm-run -m "$d" --bench -t 1,0
	[ "$stderr" = "llm-run: -t: '1,0': each count of threads is 1 to 4096" ]
	run -2 --separate-stderr llm-run -m "$d" -p hi -t 1,2
	[ "$stderr" = "llm-run: -t: '1,2': a list of threads goes with --bench" ]
	run -2 --separate-stderr llm-run -m "$d" -p hi -o csv
	[ "$stderr" = "llm-run: -o goes with --bench (llama-bench's output format)" ]
	run -2 --separate-stderr llm-run -m "$d" -p hi -pg 4,4
	[ "$stderr" = "llm-run: -pg goes with --bench" ]
}

@test "--bench depth=N prefills the depth once and starts every run at position N" {
	d=$(fixture_linked a)
	# The depth of 6 tokens: prefill 4 at 0, prefill_kv 2 at 4, once.
	# Then, for the warm-up and 2 runs each: pp8 as two chunks of S = 4
	# at positions 6 and 10; tg4 as decode steps at positions 6 to 9.
	run -0 --separate-stderr llm-run -v -m "$d" --bench pp=8,tg=4,depth=6,reps=2
	calls=$(grep -E ' (prefill|prefill_kv|decode) pos ' <<<"$stderr" | sed 's/^llm-run: //' | sort | uniq -c |
		awk '{ $1 = $1; print }')
	want=$(printf '%s\n' '3 decode pos 6 n_tokens 1' '3 decode pos 7 n_tokens 1' '3 decode pos 8 n_tokens 1' \
		'3 decode pos 9 n_tokens 1' '1 prefill pos 0 n_tokens 4' '3 prefill_kv pos 10 n_tokens 4' \
		'1 prefill_kv pos 4 n_tokens 2' '3 prefill_kv pos 6 n_tokens 4')
	[ "$calls" = "$want" ]
	# depth=0 is the plain benchmark: every run starts from position 0.
	run -0 --separate-stderr llm-run -v -m "$d" --bench pp=4,tg=2,depth=0,reps=1
	[ "$(grep -c 'prefill pos 0 n_tokens 4' <<<"$stderr")" -eq 2 ]
	[ "$(grep -c 'prefill pos 0 n_tokens 1' <<<"$stderr")" -eq 2 ]
	[ "$(grep -c 'decode pos' <<<"$stderr")" -eq 4 ]
}

@test "--bench refuses a depth that leaves no room for its tests, and a bad depth" {
	d=$(fixture_linked a)
	# max_context 64: pp at depth 60 needs 60 + 8 positions, tg 60 + 5.
	run -1 --separate-stderr llm-run -m "$d" --bench pp=8,tg=0,depth=60
	one_error
	[ "$stderr" = "llm-run: $d: --bench pp=8,tg=0,depth=60 does not fit the context of 64 positions (-c)" ]
	run -1 --separate-stderr llm-run -m "$d" --bench pp=0,tg=5,depth=60
	one_error
	[ "$stderr" = "llm-run: $d: --bench pp=0,tg=5,depth=60 does not fit the context of 64 positions (-c)" ]
	# Exactly full is allowed: 56 + 8 and 60 + 4 positions.
	run -0 --separate-stderr llm-run -m "$d" --bench pp=8,tg=0,depth=56,reps=1 --json
	[ "$(jq -r '.[0].test' <<<"$output")" = "pp8 @ d56" ]
	run -0 --separate-stderr llm-run -m "$d" --bench pp=0,tg=4,depth=60,reps=1 --json
	[ "$(jq -r '.[0].test' <<<"$output")" = "tg4 @ d60" ]
	run -2 --separate-stderr llm-run -m "$d" --bench depth=x
	[ "${stderr_lines[0]}" = "llm-run: --bench: 'x' is not an integer" ]
	run -2 --separate-stderr llm-run -m "$d" --bench depth=-1
	[ "${stderr_lines[0]}" = "llm-run: --bench: '-1' is out of range [0, 16777216]" ]
	run -2 --separate-stderr llm-run -m "$d" --bench dpth=1
	[ "${stderr_lines[0]}" = "llm-run: --bench: 'dpth=1' is not pp=N, tg=N, depth=N or reps=N" ]
}

@test "--json gives the time to first token from the start of the process" {
	d=$(fixture_linked a)
	run -0 --separate-stderr llm-run -m "$d/model.llm" --json -p 'Hello' -n 4
	# It covers the load and the time from the prompt to the first token,
	# which covers the prefill.
	[ "$(jq '.timings | (.ttft_from_start_ms >= .load_ms + .ttft_ms) and (.ttft_from_start_ms >= .prefill_ms) and (.ttft_ms >= .prefill_ms) and (.prefill_ms > 0)' <<<"$output")" = true ]
	# A chat turn has no load: no time from the start either.
	run -0 --separate-stderr llm-run -m "$d" -i --chat-template llama2 -n 2 --json <<<'hi'
	[ "$(jq '.timings | has("ttft_from_start_ms") or has("load_ms")' <<<"$output")" = false ]
}

@test "--no-special-in-input: special-token text in a prompt, a chat message or a --tokenize line stays text (issue 16)" {
	d=$(fixture_linked a)
	# 257 is </s>: by default (Hugging Face's way) the text becomes it
	run -0 llm-run -m "$d" --tokenize <<<'"x</s>y"'
	[[ "$output" == *,257,* ]]
	run -0 llm-run -m "$d" --tokenize --no-special-in-input <<<'"x</s>y"'
	plain=$output
	[[ "$plain" != *257* ]]
	run -0 llm-run -m "$d" --detokenize <<<"$plain"
	[ "$output" = '" x</s>y"' ] # the tokenizer adds a space prefix
	# -p: the same ids after the BOS the model adds
	run -0 --separate-stderr llm-run -m "$d" --json -p 'x</s>y' -n 1
	[[ "$(jq -c .prompt_tokens <<<"$output")" == *,257,* ]]
	run -0 --separate-stderr llm-run -m "$d" --json -p 'x</s>y' -n 1 --no-special-in-input
	[ "$(jq -c '.prompt_tokens[-(('"$plain"')|length):]' <<<"$output")" = "$plain" ]
	# a chat: the message's </s> is text, the template's <s> stays a token
	printf 'x</s>y\n' >"$T/in"
	run -0 --separate-stderr llm-run -m "$d" -i --chat-template llama2 -n 2 --json <"$T/in"
	[ "$(jq '[.prompt_tokens[] | select(. == 257)] | length' <<<"$output")" -eq 1 ]
	run -0 --separate-stderr llm-run -m "$d" -i --chat-template llama2 -n 2 --json --no-special-in-input <"$T/in"
	[ "$(jq '[.prompt_tokens[] | select(. == 257)] | length' <<<"$output")" -eq 0 ]
	bos=$(jq -c '.prompt_tokens[0]' <<<"$output")
	run -0 llm-run -m "$d" --tokenize <<<'"<s>"'
	[ "$output" = "[$bos]" ]
	# without special-token text the option changes nothing, over two turns
	printf 'hello\nagain\n' >"$T/in"
	llm-run -m "$d" -i --chat-template llama2 -n 3 --json <"$T/in" 2>/dev/null | jq -c .prompt_tokens >"$T/a"
	llm-run -m "$d" -i --chat-template llama2 -n 3 --json --no-special-in-input <"$T/in" 2>/dev/null |
		jq -c .prompt_tokens >"$T/b"
	[ "$(wc -l <"$T/a")" -eq 2 ]
	cmp "$T/a" "$T/b"
	# where it means nothing, a usage error
	run -2 llm-run -m "$d" --bench --no-special-in-input
	[[ "$output" == *"--no-special-in-input goes with"* ]]
	run -2 llm-run -m "$d" --tokens 1,2 --no-special-in-input
	[[ "$output" == *"--no-special-in-input goes with text"* ]]
}

@test "--tokenize and --detokenize read JSON lines with the model's tokenizer" {
	d=$(fixture_linked a)
	run -0 llm-run -m "$d/model.llm" --tokenize <<<$'"Hello"\n"x</s>y"'
	[ "$output" = $'[32,72,101,108,108,111]\n[32,120,257,32,121]' ]
	run -0 llm-run --tokenizer "$d/tokenizer.json" --detokenize <<<'[72,105,257]'
	[ "$output" = '"Hi</s>"' ]
	run -0 llm-run --tokenizer "$d" --detokenize --skip-special <<<'[72,105,257]'
	[ "$output" = '"Hi"' ]
	run -0 llm-run --tokenizer "$d" --tokenize --add-special <<<'"a"'
	[ "$output" = '[32,97]' ]
	# A bad line: an error naming it, no output.
	run -1 --separate-stderr llm-run --tokenizer "$d" --tokenize <<<$'"ok"\nnot json'
	[ -z "$output" ]
	[[ "$stderr" == "llm-run: <stdin>:2: "* ]]
	run -2 llm-run --tokenize
	run -2 llm-run --tokenizer "$d" --tokenize --skip-special
	run -2 llm-run --tokenizer "$d" -m "$d" --tokenize
}

@test "--tokenize --raw reads plain lines: each line's bytes, quotes and backslashes as text" {
	d=$(fixture_linked a)
	# the same ids as the JSON string of the line
	run -0 llm-run --tokenizer "$d" --tokenize --raw <<<$'Hello\nx</s>y'
	[ "$output" = $'[32,72,101,108,108,111]\n[32,120,257,32,121]' ]
	printf '%s\n' '"a\n"' 'b\\c' ' ' >"$T/plain"
	llm-run --tokenizer "$d" --tokenize --raw <"$T/plain" >"$T/raw"
	jq -R . <"$T/plain" | llm-run --tokenizer "$d" --tokenize >"$T/json"
	[ "$(wc -l <"$T/raw")" -eq 3 ]
	cmp "$T/raw" "$T/json"
	# an empty line is the empty text; no final newline is needed
	run -0 llm-run --tokenizer "$d" --tokenize --raw --add-special < <(printf 'a\n\nb')
	[ "$output" = $'[32,97]\n[]\n[32,98]' ]
	[ "$(llm-run --tokenizer "$d" --tokenize <<<'""')" = '[]' ]
	run -2 llm-run --tokenizer "$d" --detokenize --raw
	[[ "$output" == *"--raw goes with --tokenize"* ]]
}

@test "--tokenize gives the Hugging Face ids of the DeepSeek tokenizer" {
	tok="$(fixture_tokenizer_dir)/tokenizer.json"
	[ -e "$tok" ] || skip "no ../shared tokenizer fixture"
	F="$PROJECT_ROOT/tests/fixtures/tokenizer"
	[ -e "$F/ds-r1-distill-qwen.ids.jsonl" ] || skip "no tokenizer goldens"
	llm-run --tokenizer "$tok" --tokenize <"$F/corpus.jsonl" >"$T/ids"
	cmp "$T/ids" "$F/ds-r1-distill-qwen.ids.jsonl"
	llm-run --tokenizer "$tok" --tokenize --add-special <"$F/corpus.jsonl" >"$T/ids"
	cmp "$T/ids" "$F/ds-r1-distill-qwen.ids-special.jsonl"
}

@test "a chat sends only the new tokens of each turn through prefill_kv" {
	d=$(fixture_linked c256 -C 256)
	printf 'hello\nagain\n' >"$T/in"
	run -0 --separate-stderr llm-run -m "$d" -i --chat-template qwen2 -n 5 --json <"$T/in"
	[ "${#lines[@]}" -eq 2 ]
	t1=${lines[0]} t2=${lines[1]}
	n1=$(jq '.prompt_tokens | length' <<<"$t1")
	[ "$(jq .reused_tokens <<<"$t1")" -eq 0 ]
	[ "$(jq .context_tokens <<<"$t1")" -eq $((n1 + 4)) ]
	# Turn 2 keeps all of turn 1 in the cache: the prompt and the four
	# replies fed back; it sends the fifth, then the rest of the template.
	[ "$(jq .reused_tokens <<<"$t2")" -eq $((n1 + 4)) ]
	want=$(printf '%s' "$(jq -j .text <<<"$t1" | tail -c 1)"$'<|im_end|>\n<|im_start|>user\nagain<|im_end|>\n<|im_start|>assistant\n' |
		jq -Rs . | llm-run -m "$d" --tokenize)
	[ "$(jq -c .prompt_tokens <<<"$t2")" = "$want" ]
	# Through prefill_kv only: no call at position 0 in turn 2.
	run -0 --separate-stderr llm-run -v -m "$d" -i --chat-template qwen2 -n 5 <"$T/in"
	[ "$(grep -c 'prefill pos 0' <<<"$stderr")" -eq 1 ]
	[ "$(grep -c "prefill_kv pos $((n1 + 4)) " <<<"$stderr")" -eq 1 ]
	[ "${lines[0]}" = "$(jq -r .text <<<"$t1")" ]
}

@test "a chat reply is the greedy continuation of the whole conversation" {
	d=$(fixture_linked a)
	printf 'hi\nthere\n' | llm-run -m "$d" -i --chat-template llama2 -n 3 --json >"$T/j" 2>/dev/null
	t1=$(sed -n 1p "$T/j") t2=$(sed -n 2p "$T/j")
	# Turn 2's context: what the cache kept, then what was sent.
	ids=$(jq -r '.prompt_tokens | join(",")' <<<"$t1"),$(jq -r '.generated_tokens[:2] | join(",")' <<<"$t1")
	k=$(jq .reused_tokens <<<"$t2")
	all=$(echo "$ids" | cut -d, -f1-"$k"),$(jq -r '.prompt_tokens | join(",")' <<<"$t2")
	run -0 --separate-stderr llm-run -m "$d" --json --tokens "$all" -n 3
	[ "$(jq -c .generated_tokens <<<"$output")" = "$(jq -c .generated_tokens <<<"$t2")" ]
}

@test "/reset clears the conversation and the cache, keeping the system prompt" {
	d=$(fixture_linked c256 -C 256)
	printf 'one\n/reset\ntwo\n' >"$T/in"
	run -0 --separate-stderr llm-run -m "$d" -i --chat-template llama2 --system SYS -n 2 --json <"$T/in"
	[ "${#lines[@]}" -eq 2 ]
	[ "$(jq .reused_tokens <<<"${lines[1]}")" -eq 0 ]
	text=$(jq -c .prompt_tokens <<<"${lines[1]}" | llm-run -m "$d" --detokenize)
	[ "$text" = '"<s> [INST] <<SYS>>\nSYS\n<</SYS>>\n\ntwo [/INST]"' ]
}

@test "a chat's commands: /help, /stats and /exit (or /quit) on standard error; other lines, /-words included, are messages (issue 17)" {
	d=$(fixture_linked c256 -C 256)
	printf 'one\n/help\n/stats\n/unknown\n/exit\nnever\n' >"$T/in"
	run -0 --separate-stderr llm-run -m "$d" -i --chat-template llama2 -n 2 --json <"$T/in"
	# two turns: "one" and "/unknown"; nothing after /exit
	[ "${#lines[@]}" -eq 2 ]
	text=$(jq -c .prompt_tokens <<<"${lines[1]}" | llm-run -m "$d" --detokenize)
	[[ "$text" == *'[INST] /unknown [/INST]"' ]]
	[[ "$stderr" == *"/stats   the tokens and rates so far"* ]]
	[[ "$stderr" =~ llm-run:\ chat:\ 1\ turn,\ prefill\ [0-9]+\ tokens.*,\ context\ [0-9]+\ of\ 256\ positions ]]
	printf 'one\n/quit\ntwo\n' >"$T/in"
	run -0 --separate-stderr llm-run -m "$d" -i --chat-template llama2 -n 2 --json <"$T/in"
	[ "${#lines[@]}" -eq 1 ]
}

@test "deepseek-r1 history without reasoning: the cache is cut after the last common added token" {
	fixture_copy "$(fixture_linked c256 -C 256)" "$T/d"
	# No prefix space; <s> becomes <｜Assistant｜>; after a newline (10)
	# the model counts 11..20, which now spell "a</think>b".
	retok "$T/d" "$(swap_ids 11 97 12 60 13 47 14 116 15 104 16 105 17 110 18 107 19 62 20 98) |
		.pre_tokenizer.add_prefix_space = false | .added_tokens[0].content = \"<｜Assistant｜>\""
	printf 'hi\nagain\n' | llm-run -m "$T/d" -i --chat-template deepseek-r1 -n 10 --json >"$T/j" 2>/dev/null
	t1=$(sed -n 1p "$T/j") t2=$(sed -n 2p "$T/j")
	[ "$(jq -r .text <<<"$t1")" = "a</think>b" ]
	# The cache keeps everything up to <｜Assistant｜> (256) of turn 1 ...
	k=$(jq '.prompt_tokens | index(256) + 1' <<<"$t1")
	[ "$(jq .reused_tokens <<<"$t2")" -eq "$k" ]
	# ... and turn 2 sends the reply without its reasoning.
	text=$(jq -c .prompt_tokens <<<"$t2" | llm-run --tokenizer "$T/d" --detokenize)
	[ "$text" = '"b<｜end▁of▁sentence｜><｜User｜>again<｜Assistant｜><think>\n"' ]
}

@test "a full context drops the oldest exchanges, keeps the system prompt and goes on" {
	d=$(fixture_linked c256 -C 256)
	for i in 1 2 3 4 5 6 7 8 9 10; do echo "m$i"; done >"$T/in"
	run -0 --separate-stderr llm-run -m "$d" -i --chat-template llama2 --system S -n 4 --json <"$T/in"
	[ "${#lines[@]}" -eq 10 ]
	dropped=0
	for l in "${lines[@]}"; do
		[ "$(jq .context_tokens <<<"$l")" -le 256 ]
		[ "$(jq -r .stop <<<"$l")" = length ]
		if [ "$(jq .dropped_messages <<<"$l")" -gt 0 ]; then
			dropped=1
			# Sent again from the start, with the system prompt first and
			# at most half the context.
			[ "$(jq .reused_tokens <<<"$l")" -eq 0 ]
			[ "$(jq '.prompt_tokens | length' <<<"$l")" -le 128 ]
			text=$(jq -c .prompt_tokens <<<"$l" | llm-run -m "$d" --detokenize)
			[[ "$text" == '"<s> [INST] <<SYS>>\nS\n<</SYS>>'* ]]
			[[ "$text" != *"m1 ["* ]]
		fi
	done
	[ "$dropped" -eq 1 ]
}

@test "a message that cannot fit the context is reported and skipped" {
	d=$(fixture_linked a)
	printf '%s\nshort\n' "$(printf 'x%.0s' $(seq 80))" >"$T/in"
	run -0 --separate-stderr llm-run -m "$d" -i --chat-template llama2 -n 4 --json <"$T/in"
	[ "${#lines[@]}" -eq 1 ]
	[ "$(jq .turn <<<"${lines[0]}")" -eq 1 ]
	[[ "$stderr" == "llm-run: $d: the message does not fit in the context: "*" a context of 64 positions (-c)" ]]
}

@test "-i on a terminal begins with a banner and the keys, on standard error; piped input gets none (issue 48, item 9)" {
	d=$(fixture_linked a)
	run -0 bash -c "printf 'ab\\n' | script -qec \"llm-run -m '$d' -i -n 2 --chat-template llama2 2>&1\" /dev/null"
	assert_output --partial "llm-run: chat with "
	assert_output --partial "(template llama2)."
	assert_output --partial "Ctrl-D, /exit or /quit ends; /help lists the commands."
	run -0 bash -c "printf 'ab\\n' | script -qec \"llm-run -m '$d' -i -n 2 2>&1\" /dev/null"
	assert_output --partial "no chat template: each line you type is appended to the text"
	run -0 --separate-stderr llm-run -m "$d" -i -n 2 --chat-template llama2 <<<ab
	[[ "$stderr" != *"Ctrl-D"* ]]
}

@test "a chat takes a template named, a file, or the model's own; without one -i continues the text, as llama-cli's interactive mode (issue 48, item 5)" {
	d=$(fixture_linked a)
	# no template: each line and a newline continue the text
	printf 'ab\ncd\n' | llm-run -m "$d" -i -n 2 --json >"$T/j" 2>"$T/e"
	[ ! -s "$T/e" ]
	[ "$(wc -l <"$T/j")" -eq 2 ]
	p1=$(printf '"ab\\n"\n' | llm-run -m "$d" --tokenize --add-special)
	p2=$(printf '"cd\\n"\n' | llm-run -m "$d" --tokenize)
	[ "$(sed -n 1p "$T/j" | jq -c .prompt_tokens)" = "$p1" ]
	[ "$(sed -n 2p "$T/j" | jq -c .prompt_tokens)" = "$p2" ]
	# the reply's last token is evaluated before the next line (2 + 1 + 1)
	c1=$(sed -n 1p "$T/j" | jq .context_tokens)
	[ "$c1" -eq $(($(jq length <<<"$p1") + 1)) ]
	[ "$(sed -n 2p "$T/j" | jq .context_tokens)" -eq $((c1 + 1 + $(jq length <<<"$p2") + 1)) ]
	run -1 --separate-stderr llm-run -m "$d" -i --system S </dev/null
	[ "$stderr" = "llm-run: $d: no chat template recognised: --system needs one (--chat-template)" ]
	run -2 llm-run -m "$d" -i --chat-template chatml
	run -2 llm-run -m "$d" -i -p x
	run -2 llm-run -m "$d" -i --logits "$T/l"
	run -2 llm-run -m "$d" -p x --system S
	# The template of tokenizer_config.json beside the tokenizer, as it is
	fixture_copy "$(fixture_linked c256 -C 256)" "$T/d"
	echo '{"chat_template": "{% for m in messages %}<|im_start|>{{ m.role }}:{{ m.content }}{% endfor %}",' \
		'"bos_token": null}' >"$T/d/tokenizer_config.json"
	run -0 --separate-stderr llm-run -m "$T/d" -i -n 1 --json <<<hi
	text=$(jq -c .prompt_tokens <<<"$output" | llm-run -m "$d" --detokenize)
	[[ "$text" == '" <|im_start|>user:hi"' ]]
	# a file's
	printf '%s' '{{ messages[0].content }}!' >"$T/t.jinja"
	run -0 --separate-stderr llm-run -m "$T/d" -i -n 1 --json --chat-template "$T/t.jinja" <<<hey
	text=$(jq -c .prompt_tokens <<<"$output" | llm-run -m "$d" --detokenize)
	[[ "$text" == '" hey!"' ]]
	# one that does not parse is named, with its line and column
	printf 'a\n{{ x ) }}' >"$T/bad.jinja"
	run -1 --separate-stderr llm-run -m "$T/d" -i --chat-template "$T/bad.jinja" </dev/null
	[ "$stderr" = "llm-run: $T/bad.jinja:2:6: Parser Error: Expected closing expression token. CloseParen !== CloseExpression." ]
}

@test "lines ending in a backslash continue the message; empty lines are skipped" {
	d=$(fixture_linked c256 -C 256)
	printf 'a\\\nb\n\n\nc' >"$T/in"
	run -0 --separate-stderr llm-run -m "$d" -i --chat-template llama3 -n 1 --json <"$T/in"
	[ "${#lines[@]}" -eq 2 ]
	text=$(jq -c .prompt_tokens <<<"${lines[0]}" | llm-run -m "$d" --detokenize)
	[[ "$text" == *'a\nb<|eot_id|>'* ]]
	run -0 --separate-stderr llm-run -m "$d" -i --chat-template llama3 -n 1 <"$T/in"
	[[ "$stderr" == "llm-run: chat: 2 turns, "* ]]
}

@test "chat messages are checked as -p and -f are: invalid UTF-8 or a NUL byte is said, naming the byte, and not sent; the chat goes on (issue 46)" {
	d=$(fixture_linked c256 -C 256)
	printf 'ok\n\377\376 bad\nfine\000x\nlast\n' >"$T/in"
	run -0 --separate-stderr llm-run -m "$d" -i --chat-template llama3 -n 1 --json <"$T/in"
	[ "${#lines[@]}" -eq 2 ]
	[ "${stderr_lines[0]}" = "llm-run: <stdin>: not valid UTF-8 at byte 0: the message is not sent" ]
	[ "${stderr_lines[1]}" = "llm-run: <stdin>: a NUL byte at byte 4: the message is not sent" ]
	# -p and -f: the same words, and the run stops there
	printf 'a\377' >"$T/bad.txt"
	run -1 --separate-stderr llm-run -m "$d" -f "$T/bad.txt" -n 1
	[ "$stderr" = "llm-run: $T/bad.txt: not valid UTF-8 at byte 1" ]
	run -1 --separate-stderr llm-run -m "$d" -p $'a\377' -n 1
	[ "$stderr" = "llm-run: -p: not valid UTF-8 at byte 1" ]
	run -1 --separate-stderr llm-run -m "$d" --perplexity "$T/bad.txt"
	[ "$stderr" = "llm-run: $T/bad.txt: not valid UTF-8 at byte 1" ]
}

@test "-mli (--multiline-input): lines go on until one ends with / or a backslash, as llama-cli's (issue 48)" {
	d=$(fixture_linked c256 -C 256)
	# two messages: "a\nb\nc" sent by the slash, "d\ne" by the backslash;
	# a trailing slash elsewhere stays text without -mli
	printf 'a\nb\nc/\nd\ne\\\n' >"$T/in"
	run -0 --separate-stderr llm-run -m "$d" -i -mli --chat-template llama3 -n 1 --json <"$T/in"
	[ "${#lines[@]}" -eq 2 ]
	[[ "$(jq -c .prompt_tokens <<<"${lines[0]}" | llm-run -m "$d" --detokenize)" == *'a\nb\nc<|eot_id|>'* ]]
	[[ "$(jq -c .prompt_tokens <<<"${lines[1]}" | llm-run -m "$d" --detokenize)" == *'d\ne<|eot_id|>'* ]]
	# the long spelling; at the end of the input the last lines are sent
	printf 'x\ny' | llm-run -m "$d" -i --multiline-input --chat-template llama3 -n 1 --json >"$T/o" 2>/dev/null
	[ "$(wc -l <"$T/o")" -eq 1 ]
	[[ "$(jq -c .prompt_tokens "$T/o" | llm-run -m "$d" --detokenize)" == *'x\ny<|eot_id|>'* ]]
	# without it, a line is a message and a slash is text
	printf 'p/\nq\n' | llm-run -m "$d" -i --chat-template llama3 -n 1 --json >"$T/o" 2>/dev/null
	[ "$(wc -l <"$T/o")" -eq 2 ]
	[[ "$(head -1 "$T/o" | jq -c .prompt_tokens | llm-run -m "$d" --detokenize)" == *'p/<|eot_id|>'* ]]
	# only in a chat
	run -2 --separate-stderr llm-run -m "$d" -p x -mli
	[ "$stderr" = "llm-run: --multiline-input (-mli) goes with -i (a chat)" ]
}

@test "Ctrl-C in a chat stops the reply; at the prompt it ends the chat with exit 0" {
	d=$(endless a)
	mkfifo "$T/fifo"
	llm-run -m "$d" -c 1048576 -i --chat-template llama2 -n 100000000 <"$T/fifo" >"$T/o" 2>"$T/e" 3>&- &
	pid=$!
	exec {fd}>"$T/fifo"
	echo one >&$fd
	wait_for "$T/o" 0
	kill -INT $pid
	wait_for "$T/o" 1
	# The second reply has begun when the output grows.
	n=$(stat -c %s "$T/o")
	echo two >&$fd
	wait_bytes "$T/o" "$n"
	kill -INT $pid
	wait_for "$T/o" 2
	kill -INT $pid
	stop_job $pid
	exec {fd}>&-
	[ "$(wc -l <"$T/o")" -eq 2 ]
	[[ "$(cat "$T/e")" == "llm-run: chat: 2 turns, "* ]]
}

@test "the examples of the man page run" {
	mkdir "$T/x" && cd "$T/x"
	# A model whose bundle carries a ChatML tokenizer_config.json.
	fixture_copy "$(fixture c256 -C 256)" out
	echo '{"chat_template": "{{ '"'"'<|im_start|>'"'"' }}", "bos_token": null, "eos_token": "<|im_end|>"}' \
		>out/tokenizer_config.json
	perl -0pi -e 's/"files": \[\s*"tokenizer.json"\s*\]/"files": ["tokenizer.json", "tokenizer_config.json"]/' out/model.json
	llm-link out >&2
	echo 'Once upon a time' >prompt.txt
	cp "$PROJECT_ROOT/tests/fixtures/chat/system-turns.json" chat.json
	# the template of one's own, and an OpenAI request with tools
	printf '%s' '{% for m in messages %}{{ m.role }}: {{ m.content }}{% endfor %}{{ tools | length }}' >my.jinja
	echo '{"messages": [{"role": "user", "content": "Hi"}], "tools": [{"type": "function"}]}' >request.json
	# the perplexity example's two builds and text (600 tokens at least)
	ln -s out bf16 && ln -s out q4km
	for i in $(seq 1 300); do printf 'word%d ' "$i"; done >wiki.txt
	n=0
	while IFS= read -r cmd; do
		run -0 bash -c "$cmd" </dev/null
		n=$((n + 1))
	done < <(sed -n 's/^\.Dl \$ //p' "$PROJECT_ROOT/man/llm-run.1" | sed 's/\\e/\\/g; s/\\(dq/"/g')
	[ "$n" -ge 8 ]
	[ -s logits.f32 ]
}

@test "a tokenizer_config.json with transformers' very large model_max_length is read (issue 16)" {
	fixture_copy "$(fixture_linked c256 -C 256)" "$T/d"
	printf '{"model_max_length": 1000000000000000019884624838656, "chat_template": "{{ '"'"'<|im_start|>'"'"' }}", "bos_token": null}\n' \
		>"$T/d/tokenizer_config.json"
	run -0 --separate-stderr llm-run -m "$T/d" -i -n 1 --json <<<hi
	[ "$(jq '.prompt_tokens | length' <<<"$output")" -gt 0 ]
}

@test "--perplexity: its options go with it, one of the two KL files, a text of two windows at least" {
	d=$(fixture_linked a)
	run -2 llm-run -m "$d" -p x --chunks 2
	assert_line --index 0 "llm-run: --ppl-context, --chunks, --kl-divergence and --kl-divergence-base go with --perplexity"
	run -2 llm-run -m "$d" --perplexity /dev/null --kl-divergence a --kl-divergence-base b
	assert_line --index 0 "llm-run: give one of --kl-divergence and --kl-divergence-base"
	run -2 llm-run -m "$d" --perplexity /dev/null --ppl-context 3
	run -2 llm-run -m "$d" --perplexity /dev/null -p x
	echo "a b c" >"$T/short.txt"
	run --separate-stderr llm-run -m "$d" --perplexity "$T/short.txt"
	one_error
	[[ "$stderr" == "llm-run: $T/short.txt: the text is "[0-9]*" tokens; a context of 64 needs at least 128" ]]
	run --separate-stderr llm-run -m "$d" --perplexity "$T/short.txt" --ppl-context 100
	[ "$stderr" = "llm-run: $T/short.txt: a context of 100 tokens: the model takes 4 to 64" ]
}

@test "--perplexity against its own base: the same PPL, KL 0, the same top token everywhere; another window is refused" {
	d=$(fixture_linked a)
	# bytes 0x21 .. 0x7e after the prefix space: 95 consecutive ids, which
	# the stand-in model predicts (last + 1)
	for i in $(seq 33 126); do printf "\\$(printf %o "$i")"; done >"$T/text.txt"
	run -0 llm-run -m "$d" --perplexity "$T/text.txt" --ppl-context 32 --chunks 2 --kl-divergence-base "$T/base.kld"
	assert_line --index 0 --regexp '^perplexity: 2 chunks of 32 tokens, 30 scored, 62 evaluated in [0-9.]+ s \([0-9.]+ t/s\)$'
	assert_line --index 1 --regexp '^PPL = [0-9.]+ \+/- [0-9.]+$'
	ppl=${lines[1]}
	# header, 64 tokens, 30 rows of 258 logits
	[ "$(stat -c %s "$T/base.kld")" -eq $((24 + 64 * 4 + 30 * 258 * 4)) ]
	[ "$(head -c 8 "$T/base.kld")" = LLMKLD01 ]
	run -0 llm-run -m "$d" --perplexity "$T/text.txt" --ppl-context 32 --chunks 2 --kl-divergence "$T/base.kld" --json
	[ "$(echo "$output" | jq .kld_mean)" = 0 ]
	[ "$(echo "$output" | jq .same_top)" = 1 ]
	[ "$(echo "$output" | jq '.ppl == .base_ppl and .scored_tokens == 30 and .chunks == 2 and .context == 32')" = true ]
	[ "PPL = $(echo "$output" | jq -r '"\(.ppl)"' | xargs printf '%.4f')" = "${ppl% +/-*}" ]
	run --separate-stderr llm-run -m "$d" --perplexity "$T/text.txt" --chunks 1 --ppl-context 32 --kl-divergence "$T/base.kld"
	one_error
	[ "$stderr" = "llm-run: $d: $T/base.kld: 2 chunks of 32 tokens, this run has 1 of 32 (the same text, --ppl-context and --chunks are needed)" ]
	head -c 1000 "$T/base.kld" >"$T/cut.kld"
	run --separate-stderr llm-run -m "$d" --perplexity "$T/text.txt" --ppl-context 32 --chunks 2 --kl-divergence "$T/cut.kld"
	one_error
	[[ "$stderr" == *"cut.kld: 1000 bytes, its header implies "*" (truncated?)" ]]
	run -0 llm-run -m "$d" --perplexity "$T/text.txt" --ppl-context 32 --chunks 1
	assert_line --index 0 --regexp '^perplexity: 1 chunks of 32 tokens, 15 scored'
}

@test "--logits onto a symbolic link writes its target; onto a device node or a FIFO made here, in place" {
	d=$(fixture_linked a)
	mkdir "$T/out"
	ln -s out/l.f32 "$T/link"
	llm-run -m "$d" -t 1 --tokens 40 -n 1 --logits "$T/link" >/dev/null 2>&1
	[ -L "$T/link" ] && [ "$(stat -c %s "$T/out/l.f32")" -eq $((FX_VOCAB * 4)) ]
	if mknod "$T/null" c 1 3 2>/dev/null; then
		run -0 llm-run -m "$d" -t 1 --tokens 40 -n 1 --logits "$T/null"
		[ -c "$T/null" ]
	fi
	mkfifo "$T/fifo"
	cat "$T/fifo" >"$T/from-fifo" &
	llm-run -m "$d" -t 1 --tokens 40 -n 1 --logits "$T/fifo" >/dev/null 2>&1
	wait
	[ -p "$T/fifo" ]
	cmp "$T/from-fifo" "$T/out/l.f32"
	run --separate-stderr llm-run -m "$d" -t 1 --tokens 40 -n 1 --logits "$T"
	[ "$status" -eq 1 ]
	[ "$stderr" = "llm-run: $T: is a directory" ]
}

@test "an edited kv_cache.bytes is refused with one line, not a crash" {
	fixture_copy "$(fixture_linked a)" "$T/d"
	rm -f "$T/d/model.llm"
	for b in 16 4096 1000000; do
		jq ".kv_cache.bytes = $b" "$T/d/model.json" >"$T/m.json" && cp "$T/m.json" "$T/d/model.json"
		run --separate-stderr llm-run -m "$T/d" --tokens 1 -n 1
		one_error
		[ "$stderr" = "llm-run: $T/d/model.json: kv_cache.bytes $b, the config implies 1280 (edited by hand?)" ]
	done
}

@test "ids follow one rule: --tokens with an empty id, --detokenize of an id outside the vocabulary (issue 16)" {
	d=$(fixture_linked a)
	for bad in "1,,2" "1," ",1" ""; do
		run -2 --separate-stderr llm-run -m "$d" --tokens "$bad" -n 1
		[[ "${stderr_lines[0]}" == "llm-run: --tokens: "* ]]
	done
	run -1 --separate-stderr llm-run -m "$d" --detokenize <<<'[72,99999]'
	[ "$stderr" = "llm-run: <stdin>:1: item 1: token id 99999 is out of range [0, 258)" ]
	run -1 --separate-stderr llm-run -m "$d" --detokenize <<<'[-1]'
	[ "$stderr" = "llm-run: <stdin>:1: item 0: token id -1 is out of range [0, 258)" ]
	run -1 --separate-stderr llm-run -m "$d" --tokens 99999 -n 1
	[[ "$stderr" == *"token id 99999 is out of range [0, 258)"* ]]
}

@test "a FIFO given as the model or the tokenizer is refused at once, not waited on (issue 16)" {
	mkfifo "$T/fifo"
	run -1 --separate-stderr timeout 10 llm-run -m "$T/fifo" --tokens 1 -n 1
	[ "$stderr" = "llm-run: $T/fifo: not a regular file or directory" ]
	run -1 --separate-stderr timeout 10 llm-run --tokenizer "$T/fifo" --tokenize <<<'"a"'
	[ "$stderr" = "llm-run: $T/fifo: not a regular file or directory" ]
}

@test "llama-cli's one-dash words: -no-cnv, -ctk/-ctv, -r, -c 0, -t -1, -st taken; -ngl 99, -hf refused by name in one line; a range error is one line (issue 48)" {
	d=$(fixture_linked a)
	want=$(llm-run -m "$d" -p 'ab c' -n 3 -t 1 --json 2>/dev/null | jq -c .generated_tokens)
	[ "$want" != null ]
	# -no-cnv: plain completion, the default here
	[ "$(llm-run -m "$d" -p 'ab c' -n 3 -t 1 -no-cnv --json 2>/dev/null | jq -c .generated_tokens)" = "$want" ]
	# -t -1: every core; -c 0: the build's own context (64)
	[ "$(llm-run -m "$d" -p 'ab c' -n 3 -t -1 --json 2>/dev/null | jq -c .generated_tokens)" = "$want" ]
	max=$(jq .limits.max_context "$d/model.json")
	a=$(llm-run -m "$d" --tokens 1,2,3 -n -1 -c "$max" --json 2>/dev/null | jq -c '[(.generated_tokens | length), .stop]')
	[ "$(llm-run -m "$d" --tokens 1,2,3 -n -1 -c 0 --json 2>/dev/null | jq -c '[(.generated_tokens | length), .stop]')" = "$a" ]
	[ "$a" = "[$((max - 2)),\"context\"]" ]
	# -ctk/-ctv: the build's KV cache type, or a refusal naming it
	kv=$(jq -r .kv_cache.dtype "$d/model.json")
	run -0 llm-run -m "$d" -p x -n 1 -ctk "$kv" -ctv "$kv"
	other=bf16
	[ "$kv" != bf16 ] || other=f16
	run -1 --separate-stderr llm-run -m "$d" -p x -n 1 -ctv "$other"
	[ "$stderr" = "llm-run: $d: -ctv $other: the KV cache of this build is $kv, chosen at import (llm-import --kv-dtype)" ]
	# a type no build has: a usage error (issue 65)
	run -2 --separate-stderr llm-run -m "$d" -p x -n 1 -ctv q4_0
	[ "$stderr" = "llm-run: -ctv q4_0: the KV cache's types are f32, f16 and bf16" ]
	# -r (outside --bench) and --reverse-prompt: stop strings
	a=$(llm-run -m "$d" -p 'ab c' -n 8 --stop d --json 2>/dev/null | jq -c '[.generated_tokens, .stop]')
	[ "$(llm-run -m "$d" -p 'ab c' -n 8 -r d --json 2>/dev/null | jq -c '[.generated_tokens, .stop]')" = "$a" ]
	[ "$(llm-run -m "$d" -p 'ab c' -n 8 --reverse-prompt=d --json 2>/dev/null | jq -c '[.generated_tokens, .stop]')" = "$a" ]
	# no meaning here: one line each, naming the word, nothing on stdout
	# -st: one exchange, its message -p's or a line of standard input
	one() { jq -sc 'map([.turn, .generated_tokens])'; }
	want=$(llm-run -m "$d" -i --chat-template llama2 -n 4 --seed 1 --json <<<hi 2>/dev/null | one)
	[ "$want" != '[]' ]
	[ "$(llm-run -m "$d" -st -p hi --chat-template llama2 -n 4 --seed 1 --json </dev/null 2>/dev/null | one)" = "$want" ]
	[ "$(printf 'hi\nagain\n' | llm-run -m "$d" --single-turn --chat-template llama2 -n 4 --seed 1 --json 2>/dev/null |
		one)" = "$want" ]
	run -2 --separate-stderr llm-run -m "$d" -st -f /dev/null
	for w in "-ngl 99" "--n-gpu-layers=99" "-hf org/repo"; do
		run -2 --separate-stderr llm-run -m "$d" -p x $w
		[ "$output" = "" ]
		[ "${#stderr_lines[@]}" -eq 1 ]
		[[ "$stderr" == "llm-run: ${w%% *}"* ]] || [[ "$stderr" == "llm-run: ${w%%=*}"* ]]
	done
	[[ "$(llm-run -m "$d" -p x -hf a/b 2>&1)" == *"nothing is downloaded"* ]]
	# a value out of range: one line, not the usage
	for w in "-c -5" "-t 0" "-n x"; do
		run -2 --separate-stderr llm-run -m "$d" -p x $w
		[ "${#stderr_lines[@]}" -eq 1 ]
	done
	# after --, words are words
	run -2 --separate-stderr llm-run -m "$d" -p x -- -fa
	[ "${stderr_lines[0]}" = "llm-run: unexpected argument '-fa'" ]
}

@test "llama-cli's spellings: --model, --prompt, --n-predict, --threads, -s, -cnv, -sys, -n -1, -c, -e (issue 17)" {
	d=$(fixture_linked a)
	want=$(llm-run -m "$d" -p 'ab c' -n 3 -t 1 --seed 3 --json 2>/dev/null | jq -c .generated_tokens)
	got=$(llm-run --model "$d" --prompt 'ab c' --n-predict 3 --threads 1 -s 3 --json 2>/dev/null | jq -c .generated_tokens)
	[ "$want" = "$got" ] && [ "$want" != null ]
	# -cnv and -sys are -i and --system
	run --separate-stderr llm-run -m "$d" -i --system x <<<hi
	want=$stderr
	run --separate-stderr llm-run -m "$d" -cnv -sys x <<<hi
	[ "$stderr" = "$want" ]
	# -n -1: until the end of sequence (the stand-in predicts last + 1; 257 is EOS)
	run -0 --separate-stderr llm-run -m "$d" --tokens 250 -n -1 --json
	[ "$(jq -c '[.generated_tokens, .stop]' <<<"$output")" = '[[251,252,253,254,255,256],"eos"]' ]
	# --ignore-eos: never the end of sequence, so on to -n
	run -0 --separate-stderr llm-run -m "$d" --tokens 250 -n 10 --ignore-eos --json
	[ "$(jq -c '[(.generated_tokens | length), (.generated_tokens | index(257)), .stop]' <<<"$output")" = \
		'[10,null,"length"]' ]
	[ "$(jq -c '.generated_tokens[:6]' <<<"$output")" = '[251,252,253,254,255,256]' ]
	# presence and frequency penalties: the stand-in's 5 after 5,4 is in the
	# window (its logit lifted by 1e6), and a penalty of 1e6 moves it aside
	for o in "" "--presence-penalty 1e6" "--frequency-penalty 1e6"; do
		# shellcheck disable=SC2086
		run -0 --separate-stderr llm-run -m "$d" --tokens 5,4 -n 1 --temp 0 $o --json
		if [ -z "$o" ]; then
			[ "$(jq -c .generated_tokens <<<"$output")" = '[5]' ]
		else
			[ "$(jq -c .generated_tokens <<<"$output")" != '[5]' ]
		fi
	done
	run -2 --separate-stderr llm-run -m "$d" --tokens 250 --presence-penalty x
	# -c: at most that many positions
	run -0 --separate-stderr llm-run -m "$d" --tokens 1,2,3 -n -1 -c 10 --json
	[ "$(jq -c '[(.generated_tokens | length), .stop]' <<<"$output")" = '[8,"context"]' ]
	# said on stderr too (issue 48, item 6)
	[ "$stderr" = "llm-run: $d: the context is full (10 positions, -c): the reply stops here" ]
	run -1 --separate-stderr llm-run -m "$d" --tokens 1 -c 100
	[ "$stderr" = "llm-run: $d: -c 100 exceeds the context this model was built for, 64 (llm-import --max-context sets it)" ]
	# -e: \n in -p is a newline
	a=$(llm-run -m "$d" -p 'a\nb' -n 0 --json 2>/dev/null | jq -c .prompt_tokens)
	b=$(llm-run -m "$d" -e -p 'a\nb' -n 0 --json 2>/dev/null | jq -c .prompt_tokens)
	c=$(llm-run -m "$d" -p "$(printf 'a\nb')" -n 0 --json 2>/dev/null | jq -c .prompt_tokens)
	[ "$b" = "$c" ] && [ "$a" != "$b" ]
}

@test "llama-cli's options that change nothing here (--color, -ngl 0, --mlock, --no-mmap, -b, -ub, --numa, -sm none, -fa) are taken with one note naming them; the output is the same; an unknown option is two lines, not the usage (issue 65)" {
	d=$(fixture_linked a)
	want=$(llm-run -m "$d" -p 'ab c' -n 3 -t 1 --json 2>/dev/null | jq -c .generated_tokens)
	[ "$want" != null ]
	run -0 --separate-stderr llm-run -m "$d" -p 'ab c' -n 3 -t 1 --json --color -ngl 0 --mlock --no-mmap -b 512 \
		-ub 128 --numa distribute -sm none -fa off -co --flash-attn=on --n-gpu-layers 0 --batch-size=64
	[ "$(jq -c .generated_tokens <<<"$output")" = "$want" ]
	[ "$(grep -c 'ignored' <<<"$stderr")" = 1 ]
	grep -qx "llm-run: ignored, no meaning here (llm-run(1), Options): --color, -ngl 0, --mlock, --no-mmap, -b 512, -ub 128, --numa distribute, -sm none, -fa off, -co, --flash-attn on, --n-gpu-layers 0, --batch-size 64" <<<"$stderr"
	# -fa alone, then an argument that is not its value
	run -0 --separate-stderr llm-run -m "$d" -n 3 -t 1 --json -fa -p 'ab c'
	[ "$(jq -c .generated_tokens <<<"$output")" = "$want" ]
	# -sm none was read as -s m
	run -0 llm-run -m "$d" -p x -n 1 -sm none
	run -2 --separate-stderr llm-run -m "$d" -p x --no-such-option
	[ "${#stderr_lines[@]}" -eq 2 ]
	[ "${stderr_lines[0]}" = "llm-run: unrecognized option '--no-such-option'" ]
	[ "${stderr_lines[1]}" = "llm-run: see llm-run -h (the usage) or --help" ]
}
