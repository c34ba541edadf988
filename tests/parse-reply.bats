#!/usr/bin/env bats
# llm-run --parse-reply: a reply as generated, split as llm-serve's
# message (lib/text/reply.c) by the chat template's reply format, for
# every reply of tests/fixtures/replies (NAME.FORMAT.txt: FORMAT a
# built-in template, or FORMAT.jinja beside it, a template with the
# format's markers) against its golden NAME.FORMAT.expected.

bats_require_minimum_version 1.5.0

setup() {
	load test_helper/common-setup
	_common_setup
	F="$PROJECT_ROOT/tests/fixtures/replies"
	T=$BATS_TEST_TMPDIR
}

@test "every reply splits into its golden message: thoughts, calls (parallel, unicode, escaped quotes), malformed calls as text, for each family (issue 59)" {
	n=0
	for r in "$F"/*.txt; do
		b=$(basename "$r" .txt)
		t=${b#*.}
		[ ! -e "$F/$t.jinja" ] || t="$F/$t.jinja"
		llm-run --chat-template "$t" --parse-reply "$r" >"$T/out"
		cmp "$T/out" "$F/$b.expected"
		n=$((n + 1))
	done
	# every family has a case
	for fam in deepseek-r1 qwen3 qwen2 llama3 mistral phi4 harmony; do
		ls "$F"/*."$fam".txt >/dev/null
	done
	[ "$n" -ge 14 ]
}

@test "--parse-reply reads standard input; the model's own template; no template: all content (issue 59)" {
	run -0 llm-run --chat-template qwen3 --parse-reply - <"$F/thought.qwen3.txt"
	[ "$output" = "$(cat "$F/thought.qwen3.expected")" ]
	# the DeepSeek tokenizer directory's template opens a thought
	ensure_tokenizer
	printf 'hmm\n</think>\n\nYes.' >"$T/r"
	d=$(fixture_tokenizer_dir)
	[ -e "$d/tokenizer.json" ] || d="$PROJECT_ROOT/tests/npm/node_modules/.cache/ds-r1-distill-qwen"
	run -0 llm-run --tokenizer "$d" --parse-reply "$T/r"
	[ "$output" = '{"role":"assistant","content":"Yes.","reasoning_content":"hmm"}' ]
	run -0 llm-run --parse-reply "$F/call.llama3.txt"
	[ "$output" = "$(jq -c '{role: "assistant", content: .}' <<<"$(jq -Rs . "$F/call.llama3.txt")")" ]
}

@test "--parse-reply: a missing file, bad UTF-8 and a NUL are one line each, exit 1, no output (issue 59)" {
	run -1 --separate-stderr llm-run --chat-template qwen3 --parse-reply "$T/none"
	[ "$stderr" = "llm-run: $T/none: No such file or directory" ]
	[ -z "$output" ]
	printf 'a\377b' >"$T/bad"
	run -1 --separate-stderr llm-run --chat-template qwen3 --parse-reply "$T/bad"
	[ "$stderr" = "llm-run: $T/bad: not valid UTF-8 at byte 1" ]
	printf 'a\000b' >"$T/nul"
	run -1 --separate-stderr llm-run --chat-template qwen3 --parse-reply "$T/nul"
	[ "$stderr" = "llm-run: $T/nul: a NUL byte at byte 1" ]
	run -2 llm-run --chat-template qwen3 --parse-reply "$T/r" --render "$T/r"
}
