#!/usr/bin/env bats
# llm-serve on a compiled model (the tiny random Qwen2 with the
# DeepSeek-R1-Distill tokenizer and template), started by each test on a
# free loopback port: curl, the openai npm package, errors, many clients
# at once, clients that go away, memory over many requests.

bats_require_minimum_version 1.5.0

setup_file() {
	load test_helper/common-setup
	tiny_setup_file
}

setup() {
	load test_helper/common-setup
	tiny_setup
}

teardown() {
	stop_own_server
}

# serve [options]: llm-serve on the model (common-setup.bash's start_server).
serve() { start_server -m "$M" "$@"; }

chat='{"messages": [{"role": "user", "content": "Hello there"}], "max_tokens": 12, "temperature": 0}'

@test "llm-serve usage equals the man page SYNOPSIS; --help, --version; bad options are one line" {
	[ "$(usage_of llm-serve)" = "$(synopsis_of llm-serve)" ]
	run -0 llm-serve --help
	assert_output --partial "--api-key key"
	run -0 llm-serve --version
	assert_output --regexp '^llm-serve \(llm\) '
	run -2 --separate-stderr llm-serve -m "$M" --port 70000
	[ "$stderr" = "llm-serve: --port: '70000' is not an integer in [0, 65535]" ]
	run -2 --separate-stderr llm-serve -m "$M" --host localhost
	[ "${stderr_lines[0]}" = "llm-serve: --host: not an IPv4 or IPv6 address" ]
	run -1 --separate-stderr llm-serve -m "$T/none.llm"
	[ "$stderr" = "llm-serve: $T/none.llm: No such file or directory" ]
}

@test "curl: chat and text completions, streamed and not, as llm-run replies; models, health, tokenize, detokenize (issue 43)" {
	# the reply's text as it is (the template opens a thought: the default would make it reasoning)
	serve --reasoning-format none
	[ "$(curl -s "$URL/health")" = '{"status":"ok"}' ]
	[ "$(curl -s "$URL/v1/models" | jq -c '[.object, .data[0].id]')" = '["list","model"]' ]
	# greedy: llm-run's chat reply of 12 tokens
	want=$(llm-run -m "$M" -t 1 -i -n 12 --json <<<'Hello there' 2>/dev/null | jq -r .text)
	run -0 post /v1/chat/completions "$chat"
	[ "${lines[-1]}" = 200 ]
	body=${output%$'\n'*}
	[ "$(jq -r '.choices[0].message.content' <<<"$body")" = "$want" ]
	[ "$(jq -c '[.object, .choices[0].message.role, .choices[0].finish_reason, .usage.completion_tokens,
		.usage.total_tokens - .usage.prompt_tokens]' <<<"$body")" = '["chat.completion","assistant","length",12,12]' ]
	# the conversation resent with a second turn: llm-run's second reply
	# (the slot keeps what its text shares with the rendering, as llm-run's
	# chat does)
	want2=$(printf '%s\n' 'Hello there' 'Once more.' | llm-run -m "$M" -t 1 -i -n 12 --json 2>/dev/null |
		sed -n 2p | jq -r .text)
	conv=$(jq -c --arg r "$(jq -r '.choices[0].message.content' <<<"$body")" \
		'.messages += [{"role": "assistant", "content": $r}, {"role": "user", "content": "Once more."}]' <<<"$chat")
	run -0 post /v1/chat/completions "$conv"
	[ "${lines[-1]}" = 200 ]
	[ "$(jq -r '.choices[0].message.content' <<<"${output%$'\n'*}")" = "$want2" ]
	# streamed: server-sent events whose deltas make the same text, then [DONE]
	curl -sN "$URL/v1/chat/completions" -d "$(jq -c '.stream = true' <<<"$chat")" >"$T/sse"
	[ "$(tail -2 "$T/sse" | head -1)" = 'data: [DONE]' ]
	[ "$(grep '^data: {' "$T/sse" | sed 's/^data: //' | jq -j '.choices[0].delta.content // ""')" = "$want" ]
	[ "$(grep '^data: {' "$T/sse" | tail -1 | sed 's/^data: //' | jq -r '.choices[0].finish_reason')" = length ]
	# text completion: llm-run's continuation of the prompt
	want=$(llm-run -m "$M" -t 1 -p 'Once upon a time' -n 6 --json 2>/dev/null | jq -r .text)
	run -0 post /v1/completions '{"prompt": "Once upon a time", "max_tokens": 6, "temperature": 0}'
	[ "$(jq -r '.choices[0].text' <<<"${output%$'\n'*}")" = "$want" ]
	# tokenize and back
	run -0 post /tokenize '{"content": "Hello world"}'
	ids=$(jq -c .tokens <<<"${output%$'\n'*}")
	[ "$ids" = "$(echo '"Hello world"' | llm-run -m "$M" --tokenize)" ]
	run -0 post /detokenize "{\"tokens\": $ids}"
	[ "$(jq -r .content <<<"${output%$'\n'*}")" = "Hello world" ]
}

@test "tool calls, tool results and tools reach the model's chat template (issue 44)" {
	serve
	cat >"$T/req.json" <<-'EOF'
		{"messages": [{"role": "user", "content": "Weather in Paris?"},
		 {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
		  "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
		 {"role": "tool", "tool_call_id": "c1", "content": "{\"temp\": 21}"}],
		 "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {}}}],
		 "max_tokens": 2, "temperature": 0}
	EOF
	run -0 post /v1/chat/completions "$(jq -c . "$T/req.json")"
	[ "${lines[-1]}" = 200 ]
	got=$(jq .usage.prompt_tokens <<<"${output%$'\n'*}")
	# the prompt llm-run renders from the same request, tool call included
	llm-run -m "$M" --render "$T/req.json" >"$T/prompt"
	grep -q 'get_weather' "$T/prompt"
	grep -q '{"temp": 21}' "$T/prompt"
	[ "$got" -eq "$(jq -Rs . "$T/prompt" | llm-run -m "$M" --tokenize | jq length)" ]
	# a content of text parts is its text; 'tools' must be an array
	run -0 post /v1/chat/completions '{"messages": [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}],
		"max_tokens": 1}'
	[ "${lines[-1]}" = 200 ]
	run -0 post /v1/chat/completions '{"messages": [{"role": "user", "content": "Hi"}], "tools": {}}'
	[ "${lines[-1]}" = 400 ]
	[ "$(jq -r .error.message <<<"${output%$'\n'*}")" = "'tools' must be an array" ]
}

@test "bad requests get OpenAI-shaped errors with the right status; the server goes on (issue 43)" {
	serve --max-body 4096
	check() { # status type PATH BODY
		run -0 post "$3" "$4"
		[ "${lines[-1]}" = "$1" ]
		[ "$(jq -r .error.type <<<"${output%$'\n'*}")" = "$2" ]
		jq -e '.error.message | length > 0' <<<"${output%$'\n'*}" >/dev/null
	}
	check 400 invalid_request_error /v1/chat/completions '{"messages": '
	check 400 invalid_request_error /v1/chat/completions '[1, 2]'
	check 400 invalid_request_error /v1/chat/completions '{"messages": "hi"}'
	check 400 invalid_request_error /v1/chat/completions '{"messages": [{"role": "user", "content": 5}]}'
	check 400 invalid_request_error /v1/chat/completions '{"messages": [{"role": "user", "content": "x"}], "temperature": "hot"}'
	check 400 invalid_request_error /v1/chat/completions '{"messages": [{"role": "user", "content": "x"}], "n": 9}'
	check 400 invalid_request_error /v1/chat/completions '{"messages": [{"role": "user", "content": "x"}], "max_tokens": 0}'
	check 400 invalid_request_error /v1/completions '{"prompt": "\u0000\ud800"}'
	# empty stop strings (one would match everywhere)
	check 400 invalid_request_error /v1/completions '{"prompt": "x", "stop": ""}'
	check 400 invalid_request_error /v1/completions '{"prompt": "x", "stop": ["a", "\u0000b"]}'
	check 404 not_found_error /v1/chat/completions '{"model": "gpt-4", "messages": [{"role": "user", "content": "x"}]}'
	[ "$(jq -r .error.code <<<"${output%$'\n'*}")" = model_not_found ]
	# a prompt longer than the context (256)
	long=$(printf 'word %.0s' $(seq 300))
	check 400 invalid_request_error /v1/completions "{\"prompt\": \"$long\"}"
	[ "$(jq -r .error.code <<<"${output%$'\n'*}")" = context_length_exceeded ]
	# a body over --max-body, with and without a length announced
	big=$(head -c 5000 /dev/zero | tr '\0' a)
	check 413 invalid_request_error /v1/completions "{\"prompt\": \"$big\"}"
	run -0 sh -c "printf '{\"prompt\": \"%s\"}' '$big' | curl -s -w '\n%{http_code}\n' -H 'Transfer-Encoding: chunked' --data-binary @- '$URL/v1/completions'"
	[ "${lines[-1]}" = 413 ]
	# no such endpoint; not its method
	check 404 not_found_error /v1/nothing '{}'
	[ "$(curl -s -o /dev/null -w '%{http_code}' "$URL/v1/chat/completions")" = 405 ]
	# still serving
	run -0 post /v1/chat/completions "$chat"
	[ "${lines[-1]}" = 200 ]
	kill -0 "$PID"
}

@test "--api-key: a Bearer token is needed for all but /health (issue 43)" {
	serve --api-key s3cret
	[ "$(curl -s -o /dev/null -w '%{http_code}' "$URL/health")" = 200 ]
	run -0 post /v1/chat/completions "$chat"
	[ "${lines[-1]}" = 401 ]
	[ "$(jq -r .error.code <<<"${output%$'\n'*}")" = invalid_api_key ]
	[ "$(curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer wrong' "$URL/v1/models")" = 401 ]
	[ "$(curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer s3cret' "$URL/v1/models")" = 200 ]
}

@test "the openai npm client: plain and streamed chat, stop strings, errors (issue 43)" {
	[ -e "$PROJECT_ROOT/tests/npm/node_modules/openai/package.json" ] ||
		npm install --prefix "$PROJECT_ROOT/tests/npm" --no-save --no-package-lock --no-audit --no-fund \
			--loglevel=error "openai@$(jq -r .dependencies.openai "$PROJECT_ROOT/tests/npm/package.json")" >&2
	serve --api-key k --reasoning-format none
	node "$PROJECT_ROOT/tests/tools/openai-check.mjs" "$URL/v1" model k >"$T/o"
	want=$(llm-run -m "$M" -t 1 -i -n 12 --json <<<'Hello there' 2>/dev/null | jq -r .text)
	[ "$(jq -r 'select(.check == "plain") | .content' "$T/o")" = "$want" ]
	[ "$(jq -c 'select(.check == "plain") | [.role, .finish, .usage.completion_tokens, .object]' "$T/o")" = \
		'["assistant","length",12,"chat.completion"]' ]
	[ "$(jq -r 'select(.check == "stream") | .content' "$T/o")" = "$want" ]
	[ "$(jq -r 'select(.check == "stream") | .finish' "$T/o")" = length ]
	# the reply cut before the stop string, finish_reason stop; streamed alike
	[ "$(jq 'select(.check == "stop") | .content == .want and .finish == "stop"' "$T/o")" = true ]
	[ "$(jq -r 'select(.check == "stop-stream") | .content' "$T/o")" = "$(jq -r 'select(.check == "stop") | .want' "$T/o")" ]
	[ "$(jq -c 'select(.check == "models") | .ids' "$T/o")" = '["model"]' ]
	[ "$(jq -c 'select(.check == "unknown-model") | [.status, .code]' "$T/o")" = '[404,"model_not_found"]' ]
	[ "$(jq -c 'select(.check == "bad-temperature") | .status' "$T/o")" = 400 ]
	[ "$(jq -c 'select(.check == "no-messages") | .status' "$T/o")" = 400 ]
}

@test "8 clients x 20 requests at once, 2 slots: each answer is its own prompt's; clients gone mid-stream; RSS flat over 1000 requests (issue 43)" {
	serve --parallel 2
	# each client's prompt, and its answer alone first
	for c in $(seq 8); do
		jq -nc --arg p "client $c says hello" '{prompt: $p, max_tokens: 6, temperature: 0}' >"$T/req$c"
		curl -s "$URL/v1/completions" -d @"$T/req$c" | jq -r '.choices[0].text' >"$T/alone$c"
	done
	pids=
	for c in $(seq 8); do
		(for i in $(seq 20); do
			curl -s --max-time 60 "$URL/v1/completions" -d @"$T/req$c" | jq -r '.choices[0].text' >"$T/got$c.$i"
		done) &
		pids="$pids $!"
	done
	for p in $pids; do wait "$p"; done
	for c in $(seq 8); do
		for i in $(seq 20); do
			cmp "$T/alone$c" "$T/got$c.$i"
		done
	done
	# clients that go away mid-stream: the server frees their slots
	for _ in 1 2 3 4; do
		curl -sN --max-time 0.3 "$URL/v1/completions" \
			-d '{"prompt": "Once", "max_tokens": 200, "temperature": 0, "stream": true}' >/dev/null || true
	done
	run -0 curl -s --max-time 60 "$URL/v1/completions" -d @"$T/req1"
	[ "$(jq -r '.choices[0].text' <<<"$output")" = "$(cat "$T/alone1")" ]
	# RSS after 1000 requests against after 100
	rss() { awk '/^VmRSS/ { print $2 }' "/proc/$PID/status"; }
	req='{"prompt": "Hello", "max_tokens": 2, "temperature": 0.7}'
	for i in $(seq 100); do curl -s "$URL/v1/completions" -d "$req" >/dev/null; done
	r100=$(rss)
	for i in $(seq 900); do curl -s "$URL/v1/completions" -d "$req" >/dev/null; done
	r1000=$(rss)
	echo "RSS after 100 requests $r100 KiB, after 1000 $r1000 KiB" >&3
	[ "$r1000" -le $((r100 + r100 / 20 + 1024)) ]
}

@test "a seed gives the same reply whatever ran before on the slot; no seed, other replies (issue 59)" {
	serve
	req() { jq -nc --argjson s "$1" '{prompt: "Once upon a time", max_tokens: 16, temperature: 1, seed: $s}'; }
	text() { curl -s "$URL/v1/completions" -d "$1" | jq -r '.choices[0].text'; }
	a1=$(text "$(req 7)")
	a2=$(text "$(req 7)")
	b1=$(text "$(req 8)")
	a3=$(text "$(req 7)")
	b2=$(text "$(req 8)")
	[ -n "$a1" ]
	[ "$a1" = "$a2" ]
	[ "$a1" = "$a3" ]
	[ "$b1" = "$b2" ]
	[ "$a1" != "$b1" ]
	# the same through a chat, streamed and not
	c='{"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 12, "temperature": 1, "seed": 3}'
	c1=$(curl -s "$URL/v1/chat/completions" -d "$c" | jq -r '.choices[0].message.content')
	c2=$(curl -sN "$URL/v1/chat/completions" -d "$(jq -c '.stream = true' <<<"$c")" |
		grep '^data: {' | sed 's/^data: //' | jq -j '.choices[0].delta.content // ""')
	[ "$c1" = "$c2" ]
	# without a seed: five replies, not all the same
	for i in 1 2 3 4 5; do
		curl -s "$URL/v1/completions" -d '{"prompt": "Once upon a time", "max_tokens": 16, "temperature": 1}' |
			jq -r '.choices[0].text' >"$T/free$i"
	done
	[ "$(sort -u "$T"/free* | wc -l)" -gt 1 ]
}

# the tools of the tool-call tests: arguments that a random model's calls
# can only follow by the grammar (short enums)
tools='[{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
	"properties": {"city": {"enum": ["Paris", "Oslo", "Lima"]}, "days": {"type": "integer"}}, "required": ["city"]}}},
	{"type": "function", "function": {"name": "set_alarm", "parameters": {"type": "object",
	"properties": {"hour": {"enum": [6, 7, 8]}}, "required": ["hour"]}}}]'

@test "tool_choice required, a named function and parallel_tool_calls: calls that follow the tools' schemas, finish_reason tool_calls, streamed as the same calls (issue 59)" {
	serve
	req() { jq -nc --argjson t "$tools" --argjson c "$1" --argjson p "$2" \
		'{messages: [{role: "user", content: "Weather?"}], tools: $t, tool_choice: $c, parallel_tool_calls: $p,
		  max_tokens: 200, temperature: 0}'; }
	run -0 post /v1/chat/completions "$(req '"required"' false)"
	[ "${lines[-1]}" = 200 ]
	body=${output%$'\n'*}
	[ "$(jq -r '.choices[0].finish_reason' <<<"$body")" = tool_calls ]
	[ "$(jq -c '.choices[0].message | [.content, (.tool_calls | length), .tool_calls[0].type]' <<<"$body")" = \
		'[null,1,"function"]' ]
	# the arguments are JSON text that follows the schema
	args=$(jq -r '.choices[0].message.tool_calls[0].function.arguments' <<<"$body")
	name=$(jq -r '.choices[0].message.tool_calls[0].function.name' <<<"$body")
	case $name in
	get_weather) jq -e '.city | IN("Paris", "Oslo", "Lima")' <<<"$args" ;;
	set_alarm) jq -e '.hour | IN(6, 7, 8)' <<<"$args" ;;
	*) false ;;
	esac
	[[ $(jq -r '.choices[0].message.tool_calls[0].id' <<<"$body") == call_* ]]
	# streamed: deltas with an index per call make the same calls
	curl -sN "$URL/v1/chat/completions" -d "$(req '"required"' false | jq -c '.stream = true')" >"$T/sse"
	[ "$(tail -2 "$T/sse" | head -1)" = 'data: [DONE]' ]
	grep '^data: {' "$T/sse" | sed 's/^data: //' >"$T/events"
	[ "$(jq -s -c '[.[].choices[0].delta.tool_calls // [] | .[] | [.index, .function.name, .function.arguments]]' \
		"$T/events")" = "$(jq -c '[.choices[0].message.tool_calls | to_entries[] | [.key, .value.function.name,
		.value.function.arguments]]' <<<"$body")" ]
	[ "$(jq -s -r '.[-1].choices[0].finish_reason' "$T/events")" = tool_calls ]
	# a function by name: its calls only
	run -0 post /v1/chat/completions "$(req '{"type": "function", "function": {"name": "set_alarm"}}' true)"
	[ "$(jq -c '[.choices[0].message.tool_calls[].function.name] | unique' <<<"${output%$'\n'*}")" = '["set_alarm"]' ]
	# refused by name: a choice without tools, a name of no tool, a bad choice, a tool without a name
	run -0 post /v1/chat/completions '{"messages": [{"role": "user", "content": "x"}], "tool_choice": "required"}'
	[ "${lines[-1]}" = 400 ]
	[ "$(jq -r .error.message <<<"${output%$'\n'*}")" = "'tool_choice' 'required' needs 'tools'" ]
	run -0 post /v1/chat/completions "$(req '{"type": "function", "function": {"name": "nope"}}' true)"
	[ "${lines[-1]}" = 400 ]
	[[ $(jq -r .error.message <<<"${output%$'\n'*}") == *"no tool is named 'nope'"* ]]
	run -0 post /v1/chat/completions "$(req '"sometimes"' true)"
	[ "${lines[-1]}" = 400 ]
	run -0 post /v1/chat/completions "$(req '"required"' '"yes"')"
	[ "$(jq -r .error.message <<<"${output%$'\n'*}")" = "'parallel_tool_calls' must be a boolean" ]
	run -0 post /v1/chat/completions "$(req '"required"' true | jq -c '.response_format = {"type": "json_object"}')"
	[ "${lines[-1]}" = 400 ]
}

@test "reasoning: DeepSeek-R1's opened thought goes to reasoning_content (streamed as its deltas); --reasoning-format none and reasoning_format keep it in content (issue 59)" {
	serve
	# the template's generation prompt opens a thought that the random
	# model never closes: the whole reply is reasoning
	want=$(llm-run -m "$M" -t 1 -i -n 12 --json <<<'Hello there' 2>/dev/null | jq -r .text)
	trimmed=$(jq -rn --arg s "$want" '$s | sub("^\\s+"; "") | sub("\\s+$"; "")')
	run -0 post /v1/chat/completions "$chat"
	body=${output%$'\n'*}
	[ "$(jq -r '.choices[0].message.reasoning_content' <<<"$body")" = "$trimmed" ]
	[ "$(jq -r '.choices[0].message.content' <<<"$body")" = "" ]
	curl -sN "$URL/v1/chat/completions" -d "$(jq -c '.stream = true' <<<"$chat")" >"$T/sse"
	[ "$(grep '^data: {' "$T/sse" | sed 's/^data: //' | jq -j '.choices[0].delta.reasoning_content // ""')" = "$trimmed" ]
	[ "$(grep '^data: {' "$T/sse" | sed 's/^data: //' | jq -j '.choices[0].delta.content // ""')" = "" ]
	# the request's reasoning_format none: the text as it is
	run -0 post /v1/chat/completions "$(jq -c '.reasoning_format = "none"' <<<"$chat")"
	[ "$(jq -r '.choices[0].message.content' <<<"${output%$'\n'*}")" = "$want" ]
	run -0 post /v1/chat/completions "$(jq -c '.reasoning_format = "thoughts"' <<<"$chat")"
	[ "${lines[-1]}" = 400 ]
	kill "$PID"
	wait "$PID" || true
	serve --reasoning-format none
	run -0 post /v1/chat/completions "$chat"
	[ "$(jq -r '.choices[0].message.content' <<<"${output%$'\n'*}")" = "$want" ]
	[ "$(jq -r '.choices[0].message.reasoning_content' <<<"${output%$'\n'*}")" = null ]
	run -2 --separate-stderr llm-serve -m "$M" --reasoning-format thoughts
	[ "${stderr_lines[0]}" = "llm-serve: --reasoning-format: not one of none, deepseek and auto" ]
}

@test "--chat-template, --jinja and an IPv6 host (issue 59)" {
	ip -6 addr show lo 2>/dev/null | grep -q '::1' || skip "no IPv6 loopback"
	serve --host ::1 --jinja --chat-template qwen2
	[[ $URL == http://\[::1\]:* ]]
	[ "$(curl -s "$URL/health")" = '{"status":"ok"}' ]
	# the prompt qwen2's template renders, counted in usage
	printf '%s' '[{"role": "user", "content": "Hi"}]' >"$T/conv.json"
	n=$(llm-run -m "$M" --chat-template qwen2 --render "$T/conv.json" | jq -Rs . | llm-run -m "$M" --tokenize | jq length)
	run -0 post /v1/chat/completions '{"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 1}'
	[ "$(jq .usage.prompt_tokens <<<"${output%$'\n'*}")" = "$n" ]
	run -2 --separate-stderr llm-serve -m "$M" --chat-template nosuch
	[[ ${stderr_lines[0]} == "llm-serve: --chat-template: 'nosuch' is neither a built-in template"* ]]
}

@test "the openai npm client with tools: required and named calls that parse and follow their schemas, streamed alike, a round trip; seeds that repeat; logprobs; embeddings (issue 59)" {
	[ -e "$PROJECT_ROOT/tests/npm/node_modules/openai/package.json" ] ||
		npm install --prefix "$PROJECT_ROOT/tests/npm" --no-save --no-package-lock --no-audit --no-fund \
			--loglevel=error "openai@$(jq -r .dependencies.openai "$PROJECT_ROOT/tests/npm/package.json")" >&2
	serve
	node "$PROJECT_ROOT/tests/tools/openai-tools.mjs" "$URL/v1" model >"$T/o"
	[ "$(jq -c 'select(.check == "required") | [.finish, .content, .n, .follows, .ids]' "$T/o")" = \
		'["tool_calls",null,1,true,[[true,"function"]]]' ]
	[ "$(jq -c 'select(.check == "stream") | [.finish, .content, .same]' "$T/o")" = '["tool_calls","",true]' ]
	[ "$(jq -c 'select(.check == "named") | [(.names | unique), .follows]' "$T/o")" = '[["set_alarm"],true]' ]
	[ "$(jq -c 'select(.check == "round-trip") | [.role]' "$T/o")" = '["assistant"]' ]
	[ "$(jq -c 'select(.check == "seeds") | [.same, .differ]' "$T/o")" = '[true,true]' ]
	[ "$(jq -c 'select(.check == "logprobs") | [.n, .plausible, .text]' "$T/o")" = '[6,true,true]' ]
	dim=$(embedcheck "$M" 1,2 | awk '{ print $2 }')
	[ "$(jq -c 'select(.check == "embeddings") | [.n, .dims, .norms]' "$T/o")" = "[2,[$dim,$dim],[true,true]]" ]
}

@test "every request field of llm-serve(1)'s list is accepted with a good value and refused by name with a bad one; unknown fields are refused (issue 59)" {
	serve
	base_chat='{"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 2}'
	base_text='{"prompt": "Once", "max_tokens": 2}'
	n=0
	while IFS=$'\t' read -r ep field good bad; do
		case $ep in '#'* | '') continue ;; esac
		if [ "$ep" = chat ]; then path=/v1/chat/completions base=$base_chat; else path=/v1/completions base=$base_text; fi
		if [ "$good" != - ]; then
			run -0 post "$path" "$(jq -c --arg f "$field" --argjson v "$good" '.[$f] = $v' <<<"$base")"
			[ "${lines[-1]}" = 200 ] || { echo "$ep $field $good: ${lines[-1]}: $output"; false; }
		fi
		if [ "$bad" != - ]; then
			run -0 post "$path" "$(jq -c --arg f "$field" --argjson v "$bad" '.[$f] = $v' <<<"$base")"
			[ "${lines[-1]}" = 400 ] || { echo "$ep $field $bad: ${lines[-1]}: $output"; false; }
			# the message names the field (or, for a prompt or messages, what is wrong in them)
			msg=$(jq -r .error.message <<<"${output%$'\n'*}")
			[[ $msg == *"$field"* || $field == messages || $field == chat_template_kwargs ]] ||
				{ echo "$ep $field: '$msg'"; false; }
		fi
		# llm-serve(1) lists the field
		[ "${field#frobnicate}" = "" ] || grep -q "^\.It Fa $field\$" "$PROJECT_ROOT/man/llm-serve.1" ||
			{ echo "llm-serve(1) does not list '$field'"; false; }
		n=$((n + 1))
	done <"$PROJECT_ROOT/tests/fixtures/llm-serve/fields.tsv"
	[ "$n" -ge 50 ]
	# a long unknown field's name is cut in the message
	long=$(printf 'x%.0s' $(seq 1000))
	run -0 post /v1/completions "{\"prompt\": \"a\", \"$long\": 1}"
	[ "${lines[-1]}" = 400 ]
	[ "$(jq -r '.error.message | length < 200' <<<"${output%$'\n'*}")" = true ]
}

@test "logprobs and top_logprobs (chat and text, streamed alike), echo, top_k, min_p, repeat_penalty (issue 59)" {
	serve --reasoning-format none
	# greedy: each token is its own top alternative; a probability, and about
	# 1/vocabulary for a random model
	run -0 post /v1/chat/completions "$(jq -c '.logprobs = true | .top_logprobs = 3' <<<"$chat")"
	body=${output%$'\n'*}
	[ "$(jq '.choices[0].logprobs.content | length' <<<"$body")" = 12 ]
	jq -e '.choices[0].logprobs.content | all(.token == .top_logprobs[0].token and .logprob == .top_logprobs[0].logprob
		and (.top_logprobs | length) == 3 and .logprob <= 0 and .logprob > -20
		and .top_logprobs[0].logprob >= .top_logprobs[1].logprob)' <<<"$body"
	# the tokens' texts make the content
	[ "$(jq -j '.choices[0].logprobs.content[].token' <<<"$body")" = "$(jq -r '.choices[0].message.content' <<<"$body")" ]
	# streamed: the same entries
	curl -sN "$URL/v1/chat/completions" -d "$(jq -c '.logprobs = true | .top_logprobs = 3 | .stream = true' <<<"$chat")" >"$T/sse"
	[ "$(grep '^data: {' "$T/sse" | sed 's/^data: //' | jq -s -c '[.[].choices[0].logprobs.content // [] | .[]]')" = \
		"$(jq -c '.choices[0].logprobs.content' <<<"$body")" ]
	# text completions: OpenAI's legacy form, offsets into the text
	run -0 post /v1/completions '{"prompt": "Once upon a time", "max_tokens": 5, "temperature": 0, "logprobs": 2}'
	body=${output%$'\n'*}
	jq -e '.choices[0].logprobs | (.tokens | length) == 5 and (.token_logprobs | length) == 5
		and (.top_logprobs | all(length == 2)) and .text_offset[0] == 0' <<<"$body"
	[ "$(jq -j '.choices[0].logprobs.tokens[]' <<<"$body")" = "$(jq -r '.choices[0].text' <<<"$body")" ]
	# without logprobs: null
	run -0 post /v1/completions '{"prompt": "Once", "max_tokens": 1}'
	[ "$(jq -c '.choices[0].logprobs' <<<"${output%$'\n'*}")" = null ]
	# echo: the prompt, then the reply; streamed alike
	want=$(curl -s "$URL/v1/completions" -d '{"prompt": "Once upon", "max_tokens": 4, "temperature": 0}' | jq -r '.choices[0].text')
	run -0 post /v1/completions '{"prompt": "Once upon", "max_tokens": 4, "temperature": 0, "echo": true}'
	[ "$(jq -r '.choices[0].text' <<<"${output%$'\n'*}")" = "Once upon$want" ]
	[ "$(curl -sN "$URL/v1/completions" -d '{"prompt": "Once upon", "max_tokens": 4, "temperature": 0, "echo": true,
		"stream": true}' | grep '^data: {' | sed 's/^data: //' | jq -j '.choices[0].text')" = "Once upon$want" ]
	# top_k 1 at any temperature is greedy; min_p 1 keeps only the most likely
	run -0 post /v1/completions '{"prompt": "Once upon", "max_tokens": 4, "temperature": 1.5, "top_k": 1, "seed": 3}'
	[ "$(jq -r '.choices[0].text' <<<"${output%$'\n'*}")" = "$want" ]
	run -0 post /v1/completions '{"prompt": "Once upon", "max_tokens": 4, "temperature": 1.5, "min_p": 1, "seed": 3}'
	[ "$(jq -r '.choices[0].text' <<<"${output%$'\n'*}")" = "$want" ]
	# repeat_penalty as llm-run's --repeat-penalty
	pen=$(llm-run -m "$M" -t 1 -p 'Once upon' -n 4 --repeat-penalty 1.5 --json 2>/dev/null | jq -r .text)
	run -0 post /v1/completions '{"prompt": "Once upon", "max_tokens": 4, "temperature": 0, "repeat_penalty": 1.5}'
	[ "$(jq -r '.choices[0].text' <<<"${output%$'\n'*}")" = "$pen" ]
}

@test "/metrics (Prometheus text), /slots, /props, and a log line a request on stderr (issue 59)" {
	serve --parallel 2
	run -0 post /v1/completions '{"prompt": "Once upon", "max_tokens": 3, "temperature": 0}'
	p1=$(jq .usage.prompt_tokens <<<"${output%$'\n'*}")
	run -0 post /v1/chat/completions "$chat"
	p2=$(jq .usage.prompt_tokens <<<"${output%$'\n'*}")
	curl -sN "$URL/v1/completions" -d '{"prompt": "Hi", "max_tokens": 2, "stream": true}' >/dev/null
	run -0 post /v1/completions '{"prompt": 5}'
	[ "${lines[-1]}" = 400 ]
	curl -s "$URL/metrics" >"$T/m"
	grep -qx 'llm_serve_requests_total{status="200"} 3' "$T/m"
	grep -qx 'llm_serve_requests_total{status="400"} 1' "$T/m"
	# the prompt tokens of the three completions ("Hi" with its BOS: 2)
	[ "$(awk '$1 == "llm_serve_prompt_tokens_total" { print $2 }' "$T/m")" = $((p1 + p2 + 2)) ]
	[ "$(awk '$1 == "llm_serve_completion_tokens_total" { print $2 }' "$T/m")" = $((3 + 12 + 2)) ]
	grep -qx 'llm_serve_slots 2' "$T/m"
	grep -qx 'llm_serve_requests_queued 0' "$T/m"
	# a histogram: a first token per completion, 14 later tokens; cumulative buckets
	grep -qx 'llm_serve_time_to_first_token_seconds_count 3' "$T/m"
	grep -qx 'llm_serve_token_seconds_count 14' "$T/m"
	awk -F'[ ]' '/^llm_serve_token_seconds_bucket/ { if ($2 < last) exit 1; last = $2 } END { if (last != 14) exit 1 }' "$T/m"
	grep -q '^# TYPE llm_serve_token_seconds histogram$' "$T/m"
	# /slots: both idle, the positions they hold
	curl -s "$URL/slots" >"$T/s"
	[ "$(jq -c '[.[] | [.id, .n_ctx, .is_processing]]' "$T/s")" = '[[0,256,false],[1,256,false]]' ]
	jq -e 'map(.n_past) | add > 0' "$T/s"
	# /props: the facts and the template
	curl -s "$URL/props" >"$T/p"
	[ "$(jq -c '[.total_slots, .default_generation_settings.n_ctx, .chat_template_name, .reply_format, .n_vocab]' "$T/p")" = \
		'[2,256,"deepseek-r1","deepseek-r1",151936]' ]
	jq -e '.chat_template | contains("Assistant")' "$T/p"
	# the log: a line a request, with its status and tokens
	sleep 0.2
	grep -q "^llm-serve: POST /v1/completions 200 $p1+3 tokens [0-9]* ms\$" "$T/serve.log"
	grep -q "^llm-serve: POST /v1/chat/completions 200 $p2+12 tokens [0-9]* ms\$" "$T/serve.log"
	grep -q '^llm-serve: POST /v1/completions 400 0+0 tokens' "$T/serve.log"
	grep -q '^llm-serve: GET /metrics 200 0+0 tokens' "$T/serve.log"
	# behind the API key, as the other endpoints
	kill "$PID"
	wait "$PID" || true
	serve --api-key k
	[ "$(curl -s -o /dev/null -w '%{http_code}' "$URL/metrics")" = 401 ]
	[ "$(curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer k' "$URL/props")" = 200 ]
}

@test "n choices: each the reply of its own seed (seed + index), usage summed; not streamed (issue 59)" {
	serve
	one() { curl -s "$URL/v1/completions" -d "{\"prompt\": \"Once upon\", \"max_tokens\": 6, \"temperature\": 1, \"seed\": $1}" |
		jq -r '.choices[0].text'; }
	run -0 post /v1/completions '{"prompt": "Once upon", "max_tokens": 6, "temperature": 1, "seed": 5, "n": 3}'
	body=${output%$'\n'*}
	[ "$(jq -c '[.choices[].index]' <<<"$body")" = '[0,1,2]' ]
	for i in 0 1 2; do
		[ "$(jq -r ".choices[$i].text" <<<"$body")" = "$(one $((5 + i)))" ]
	done
	[ "$(jq '.usage.completion_tokens' <<<"$body")" = 18 ]
	# chat alike
	run -0 post /v1/chat/completions "$(jq -c '.n = 2 | .temperature = 1 | .seed = 9' <<<"$chat")"
	[ "$(jq '.choices | length' <<<"${output%$'\n'*}")" = 2 ]
	run -0 post /v1/completions '{"prompt": "Once", "n": 2, "stream": true}'
	[ "${lines[-1]}" = 400 ]
	[[ $(jq -r .error.message <<<"${output%$'\n'*}") == *"'n' above 1 is not streamed"* ]]
}

@test "/v1/embeddings: llm_embed's vector (the model's width, unit norm), for strings and ids, a list, dimensions, base64; refusals (issue 59)" {
	serve
	ids=$(post /tokenize '{"content": "Hello world", "add_special": true}' | head -1 | jq -c .tokens)
	run -0 post /v1/embeddings '{"input": "Hello world", "model": "model"}'
	[ "${lines[-1]}" = 200 ]
	body=${output%$'\n'*}
	# llm_embed's own (embedcheck: last token, normalized), float for float
	embedcheck -n -o "$T/e.f32" "$M" "$(jq -r 'join(",")' <<<"$ids")" >"$T/ec"
	dim=$(awk '{ print $2 }' "$T/ec")
	[ "$(jq '.data[0].embedding | length' <<<"$body")" = "$dim" ]
	od -An -v -t f4 -w4 "$T/e.f32" | awk '{ print $1 }' >"$T/want"
	jq -r '.data[0].embedding[]' <<<"$body" >"$T/got"
	paste "$T/want" "$T/got" | awk '{ d = $1 - $2; if (d < 0) d = -d; if (d > 1e-6) bad = 1 } END { exit bad }'
	jq -e '[.data[0].embedding[] | . * .] | add | . > 0.99999 and . < 1.00001' <<<"$body"
	[ "$(jq -c '[.object, .data[0].object, .data[0].index, .model, .usage.prompt_tokens]' <<<"$body")" = \
		"[\"list\",\"embedding\",0,\"model\",$(jq length <<<"$ids")]" ]
	# the same from its ids; a list keeps its order
	run -0 post /v1/embeddings "{\"input\": $ids}"
	[ "$(jq -c '.data[0].embedding' <<<"${output%$'\n'*}")" = "$(jq -c '.data[0].embedding' <<<"$body")" ]
	run -0 post /v1/embeddings "{\"input\": [\"Hi\", \"Hello world\", $ids]}"
	[ "$(jq -c '[.data[].index]' <<<"${output%$'\n'*}")" = '[0,1,2]' ]
	[ "$(jq -c '.data[1].embedding' <<<"${output%$'\n'*}")" = "$(jq -c '.data[0].embedding' <<<"$body")" ]
	# dimensions: the first ones, of unit norm again
	run -0 post /v1/embeddings '{"input": "Hello world", "dimensions": 8}'
	jq -e '.data[0].embedding | length == 8 and ([.[] | . * .] | add | . > 0.99999 and . < 1.00001)' <<<"${output%$'\n'*}"
	# base64: the float32 bytes
	run -0 post /v1/embeddings '{"input": "Hello world", "encoding_format": "base64"}'
	jq -r '.data[0].embedding' <<<"${output%$'\n'*}" | base64 -d | cmp - "$T/e.f32"
	# refusals
	for bad in '{"input": ""}' '{"input": []}' '{"input": 5}' '{"input": [[999999999]]}' '{"input": "x", "dimensions": 0}' \
		'{"input": "x", "encoding_format": "hex"}' '{"input": "x", "pooling": "mean"}'; do
		run -0 post /v1/embeddings "$bad"
		[ "${lines[-1]}" = 400 ] || { echo "$bad: ${lines[-1]}"; false; }
	done
	run -0 post /v1/embeddings '{"input": "x", "model": "other"}'
	[ "${lines[-1]}" = 404 ]
	# mean pooling
	kill "$PID"
	wait "$PID" || true
	serve --pooling mean
	run -0 post /v1/embeddings '{"input": "Hello world"}'
	embedcheck -m -n -o "$T/m.f32" "$M" "$(jq -r 'join(",")' <<<"$ids")" >/dev/null
	jq -r '.data[0].embedding' <<<"$(post /v1/embeddings '{"input": "Hello world", "encoding_format": "base64"}' | head -1)" |
		base64 -d | cmp - "$T/m.f32"
	run -2 --separate-stderr llm-serve -m "$M" --pooling cls
	[ "${stderr_lines[0]}" = "llm-serve: --pooling: not one of last and mean" ]
}
