#!/usr/bin/env bats
# llm-run on the stand-in model (test_helper/runfixture.bash): its phases
# report their phase, position, token count, KV history, thread count and
# argument sizes in logits[0..8] and predict "last token + 1", so the
# rows of --logits show exactly how llm-run called them.  Prefill chunk
# S = 4, max_context 64 unless said otherwise.

bats_require_minimum_version 1.5.0

setup() {
	load test_helper/common-setup
	_common_setup
	load test_helper/runfixture
	T=$BATS_TEST_TMPDIR
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
	assert_line --index 0 "llm-run: no prompt (-f, -p or --tokens)"
	run -2 llm-run -m "$d" -p x --tokens 1
	run -2 llm-run -m "$d" -p x -n -1
	run -2 llm-run -m "$d" -p x -t 0
	run -2 llm-run -m "$d" --tokens 1,x
	run -2 llm-run -m "$d" -p x extra
}

@test "a text prompt generates its continuation from the bundle" {
	d=$(fixture_linked a)
	run -0 --separate-stderr llm-run -m "$d/model.llm" -p abc -n 3
	[ "$output" = "def" ]
	assert_equal "${#stderr_lines[@]}" 3
	[[ "${stderr_lines[0]}" =~ ^llm-run:\ time\ to\ first\ token\ [0-9.]+\ ms$ ]]
	[[ "${stderr_lines[1]}" =~ ^llm-run:\ prefill\ 3\ tokens\ in\ [0-9.]+\ ms,\ [0-9.]+\ t/s$ ]]
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
	[ "$(diag "$T/l" 0)" = "1 0 1 41 1 0 1088 1024 258" ]
}

@test "a prompt of S tokens is one prefill call" {
	d=$(fixture_linked a)
	llm-run -m "$d" -t 1 --tokens 10,11,12,13 -n 1 --logits "$T/l" >/dev/null 2>&1
	[ "$(diag "$T/l" 0)" = "1 0 4 $(sum 10 13) 1 0 1088 1024 258" ]
}

@test "a prompt of S+1 tokens: prefill, then prefill_kv with one token at position S" {
	d=$(fixture_linked a)
	run -0 --separate-stderr llm-run -v -m "$d" -t 1 --tokens "$(seq_ids 10 14)" -n 1 --logits "$T/l"
	[ "$(diag "$T/l" 0)" = "2 4 1 $(sum 10 14) 1 0 1088 1024 258" ]
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
	[ "$(diag "$T/l" 0)" = "2 16 3 $(sum 30 48) 1 0 1088 1024 258" ]
	# Decode feeds the generated 49, 50, 51: the cache holds them.
	[ "$(diag "$T/l" 1)" = "3 19 1 $(sum 30 49) 1 0 1088 1024 258" ]
	[ "$(diag "$T/l" 3)" = "3 21 1 $(sum 30 51) 1 0 1088 1024 258" ]
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
	[ "$(diag "$T/l" 4)" = "3 63 1 $(sum 60 123) 1 0 1088 1024 258" ]
}

@test "-n 0 runs the prompt only and writes one logits row" {
	d=$(fixture_linked a)
	run -0 --separate-stderr llm-run -m "$d" -n 0 -p hi --logits "$T/l"
	[ "$output" = "" ]
	[ "$(rows "$T/l")" -eq 1 ]
}

@test "--json prints one object with the tokens, the text and the timings" {
	d=$(fixture_linked a)
	run -0 --separate-stderr llm-run -m "$d/model.llm" --json -p 'Hello' -n 4
	[ -z "$stderr" ]
	[ "$(jq -c .prompt_tokens <<<"$output")" = "[72,101,108,108,111]" ]
	[ "$(jq -c .generated_tokens <<<"$output")" = "[112,113,114,115]" ]
	[ "$(jq -r .text <<<"$output")" = "pqrs" ]
	[ "$(jq -r .stop <<<"$output")" = "length" ]
	[ "$(jq '.timings | (.ttft_ms > 0) and (.prefill_tokens == 5) and (.decode_tokens == 3) and (.prefill_tps > 0) and (.decode_tps > 0)' <<<"$output")" = true ]
}

@test "a text prompt gets BOS first when model.json says add_bos" {
	d=$(fixture_linked bos -b)
	run -0 --separate-stderr llm-run -m "$d/model.llm" --json -p 'a b' -n 1
	[ "$(jq -c .prompt_tokens <<<"$output")" = "[256,97,32,98]" ]
	run -0 --separate-stderr llm-run -m "$d/model.llm" --json --tokens 97 -n 1
	[ "$(jq -c .prompt_tokens <<<"$output")" = "[97]" ]
}

@test "added tokens in a text prompt are matched literally" {
	d=$(fixture_linked a)
	run -0 --separate-stderr llm-run -m "$d" --json -p 'x</s>y' -n 1
	[ "$(jq -c .prompt_tokens <<<"$output")" = "[120,257,121]" ]
}

@test "-f reads the prompt from a file, or from standard input with -" {
	d=$(fixture_linked a)
	printf 'xy' >"$T/p"
	run -0 --separate-stderr llm-run -m "$d" -f "$T/p" -n 2
	[ "$output" = "z{" ]
	run -0 --separate-stderr llm-run -m "$d" -f - -n 2 <"$T/p"
	[ "$output" = "z{" ]
	run -1 --separate-stderr llm-run -m "$d" -f "$T/nope" -n 2
	one_error
	[ "$stderr" = "llm-run: $T/nope: No such file or directory" ]
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
	[ "$stderr" = "llm-run: $d: prompt of 65 tokens does not fit max_context 64" ]
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
	# Not with jq, which would rewrite 10000.0 as 10000 and so the plan.
	sed -i 's/"llm_decode"/"llm_decodx"/' "$T/d/model.json"
	run --separate-stderr llm-run -m "$T/d" --tokens 1
	one_error
	[ "$stderr" = "llm-run: $T/d/libmodel.so: missing symbol '_mlir_ciface_llm_decodx' (phase 'decode')" ]
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
