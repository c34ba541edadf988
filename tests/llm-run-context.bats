#!/usr/bin/env bats
# Generation to a full context, with each of llm-run's policies for it
# (llm-run(1)): a reply stops there (-p, --tokens, a chat's reply); a
# chat drops its oldest exchanges before a turn that does not fit, and
# skips a message that cannot fit alone; -i without a template stops
# the text until /reset.  On the stand-in model (runfixture.bash: it
# predicts "last token + 1", max_context 64), small enough to run under
# ASan and UBSan in CI's sanitizer pass (.ci/run): each case asserts the
# exit status and every line of standard error, so a sanitizer's report
# fails it.

bats_require_minimum_version 1.5.0

setup() {
	load test_helper/common-setup
	_common_setup
	load test_helper/runfixture
	T=$BATS_TEST_TMPDIR
	d=$(fixture_linked a)
}

# full N: the line that says a reply stopped at a full context of N.
full() {
	echo "llm-run: $d: the context is full ($1 positions, -c): the reply stops here"
}

@test "a reply stops at a full context: greedy, sampled, from ids or text, to -c's size or the build's" {
	run -0 --separate-stderr llm-run -m "$d" --tokens 1,2,3 -n -1 -c 10 --json --logits "$T/l"
	[ "$(jq -c '[.generated_tokens, .stop]' <<<"$output")" = '[[4,5,6,7,8,9,10,11],"context"]' ]
	[ "$(rows "$T/l")" -eq 8 ]
	[ "$stderr" = "$(full 10)" ]
	# two threads
	run -0 --separate-stderr llm-run -m "$d" --tokens 1,2,3 -n -1 -c 32 -t 2 --json
	[ "$(jq -c '[(.generated_tokens | length), .stop]' <<<"$output")" = '[30,"context"]' ]
	[ "$stderr" = "$(full 32)" ]
	# -n larger than what fits: the context wins
	run -0 --separate-stderr llm-run -m "$d" --tokens 1,2,3 -n 1000 -c 16 --json
	[ "$(jq -c '[(.generated_tokens | length), .stop]' <<<"$output")" = '[14,"context"]' ]
	[ "$stderr" = "$(full 16)" ]
	# -c 0: the build's 64 positions; sampled, text streamed to the end
	run -0 --separate-stderr llm-run -m "$d" -p abc -n -1 -c 0 --temp 0.8 --top-k 5 --seed 3 --json
	[ "$(jq -c '[(.prompt_tokens | length) + (.generated_tokens | length), .stop]' <<<"$output")" = '[65,"context"]' ]
	[ "$stderr" = "$(full 64)" ]
	run -0 --separate-stderr llm-run -m "$d" -p abc -n -1 -c 0
	[[ "$output" == abc* ]]
	[ "${stderr_lines[0]}" = "$(full 64)" ]
	[[ "${stderr_lines[1]}" == "llm-run: time to first token "* ]]
	# a prompt that fills the context exactly leaves one token to say
	run -0 --separate-stderr llm-run -m "$d" --tokens "$(seq -s, 1 12)" -n -1 -c 12 --json
	[ "$(jq -c '[.generated_tokens, .stop]' <<<"$output")" = '[[13],"context"]' ]
	[ "$stderr" = "$(full 12)" ]
}

@test "a chat that fills the context drops its oldest exchanges turn after turn, and a reply stops at the end" {
	for i in $(seq 1 16); do echo "message $i"; done >"$T/in"
	run -0 --separate-stderr llm-run -m "$d" -i --chat-template llama2 --system S -n 4 --json <"$T/in"
	[ "${#lines[@]}" -eq 16 ]
	drops=0
	for l in "${lines[@]}"; do
		[ "$(jq .context_tokens <<<"$l")" -le 64 ]
		[ "$(jq -r .stop <<<"$l")" = length ]
		[ "$(jq .dropped_messages <<<"$l")" -eq 0 ] || drops=$((drops + 1))
	done
	[ "$drops" -ge 3 ]
	# said once a chat
	[ "$stderr" = "llm-run: $d: the context is full (64 positions, -c): the oldest exchanges are dropped (the system prompt stays)" ]
	# -n -1: each reply runs to the end of the context, and the next turn
	# drops the exchange before it to fit
	printf 'hello\nworld\nagain\n' >"$T/in"
	run -0 --separate-stderr llm-run -m "$d" -i --chat-template llama2 -n -1 --json <"$T/in"
	[ "${#lines[@]}" -eq 3 ]
	for l in "${lines[@]}"; do
		[ "$(jq -c '[.context_tokens, .stop]' <<<"$l")" = '[64,"context"]' ]
	done
	[ "$(jq .dropped_messages <<<"${lines[1]}")" -gt 0 ]
	[ "$(jq .dropped_messages <<<"${lines[2]}")" -gt 0 ]
	[ "${#stderr_lines[@]}" -eq 4 ]
	[ "${stderr_lines[0]}" = "$(full 64)" ]
	[ "${stderr_lines[1]}" = "llm-run: $d: the context is full (64 positions, -c): the oldest exchanges are dropped (the system prompt stays)" ]
	[ "${stderr_lines[2]}" = "$(full 64)" ]
	[ "${stderr_lines[3]}" = "$(full 64)" ]
}

@test "a chat message that cannot fit even alone is skipped, and the chat goes on" {
	printf 'hi\n%s\nshort\n' "$(printf 'x%.0s' $(seq 80))" >"$T/in"
	run -0 --separate-stderr llm-run -m "$d" -i --chat-template llama2 -n 4 -c 48 --json <"$T/in"
	[ "${#lines[@]}" -eq 2 ]
	[ "$(jq -c '[.turn, .stop]' <<<"${lines[0]}")" = '[1,"length"]' ]
	[ "$(jq -c '[.turn, .stop]' <<<"${lines[1]}")" = '[2,"length"]' ]
	# the exchanges before it are dropped first, as for any turn
	[ "${#stderr_lines[@]}" -eq 2 ]
	[ "${stderr_lines[0]}" = "llm-run: $d: the context is full (48 positions, -c): the oldest exchanges are dropped (the system prompt stays)" ]
	[[ "${stderr_lines[1]}" == "llm-run: $d: the message does not fit in the context: "*" a context of 48 positions (-c)" ]]
}

@test "-i without a template stops the text at a full context until /reset" {
	printf 'ab\ncd\nef\ngh\nij\n/reset\nkl\n' >"$T/in"
	run -0 --separate-stderr llm-run -m "$d" -i -n 4 -c 24 --json <"$T/in"
	[ "${#lines[@]}" -eq 4 ]
	[ "$(jq -s -c 'map(.context_tokens)' <<<"$output")" = '[7,15,23,7]' ]
	[ "${#stderr_lines[@]}" -eq 2 ]
	for l in "${stderr_lines[@]}"; do
		[ "$l" = "llm-run: $d: the context is full (24 positions, -c): the text does not go on (/reset starts it again)" ]
	done
	# -n -1: the first line's continuation runs to the end
	run -0 --separate-stderr llm-run -m "$d" -i -n -1 -c 24 --json <<<ab
	[ "$(jq -c '[.context_tokens, .stop]' <<<"$output")" = '[24,"context"]' ]
	[ "$stderr" = "$(full 24)" ]
}
