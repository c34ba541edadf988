#!/usr/bin/env bats
# llm-serve under careless and hostile clients (issue 64), on the tiny
# random Qwen2 (a 250-token reply takes under a second): work that
# follows its client, signals, and the limits llm-serve(1) states.  Each
# test starts its own server on a free loopback port and stops it by PID.

bats_require_minimum_version 1.5.0

setup_file() {
	load test_helper/common-setup
	tiny_setup_file
}

setup() {
	load test_helper/common-setup
	tiny_setup
	long='{"prompt": "Once", "max_tokens": 250, "ignore_eos": true, "temperature": 0}'
}

teardown() {
	stop_own_server
}

# serve [options]: llm-serve on the model (common-setup.bash's start_server).
serve() { start_server -m "$M" "$@"; }

# ms: milliseconds since the epoch.
ms() { date +%s%3N; }

@test "requests whose clients left are cancelled, running or queued: twenty abandoned long replies, then a short one answered at once (issue 64)" {
	serve
	pids=
	for _ in $(seq 20); do
		curl -s --max-time 0.2 "$URL/v1/completions" -d "$long" >/dev/null &
		pids="$pids $!"
	done
	for p in $pids; do wait "$p" || true; done
	# 20 replies of 250 tokens take 10 s or more when they run to their end
	t=$(ms)
	run -0 curl -s --max-time 30 "$URL/v1/completions" -d '{"prompt": "Hi", "max_tokens": 2}'
	[ "$(jq .usage.completion_tokens <<<"$output")" = 2 ]
	echo "answered $(($(ms) - t)) ms after 20 abandoned requests" >&3
	[ $(($(ms) - t)) -lt 3000 ]
	sleep 0.3
	[ "$(grep -c ' 499 ' "$T/serve.log")" -eq 20 ]
}

@test "SIGTERM: a running reply gets a 503, a stream its error event, the queued ones a 503; the server exits at once (issue 64)" {
	serve
	curl -s "$URL/v1/completions" -d "$long" >"$T/run.json" &
	c1=$!
	curl -sN "$URL/v1/completions" -d "$(jq -c '.stream = true' <<<"$long")" >"$T/run.sse" &
	c2=$!
	qs=
	for i in 1 2 3 4 5; do
		curl -s "$URL/v1/completions" -d "$long" >"$T/q$i.json" &
		qs="$qs $!"
	done
	sleep 0.3
	t=$(ms)
	kill -TERM "$PID"
	wait "$PID"
	PID=
	echo "exited $(($(ms) - t)) ms after SIGTERM, with 7 replies of 250 tokens in hand" >&3
	[ $(($(ms) - t)) -lt 2000 ]
	wait "$c1" "$c2" $qs || true
	n503=0
	for f in "$T/run.json" "$T"/q*.json; do
		[ "$(jq -r .error.message "$f")" = "the server is shutting down" ] && n503=$((n503 + 1))
	done
	# the one that had the slot and the queued ones (the stream may have had it instead)
	[ "$n503" -ge 5 ]
	# the stream: an error event after its tokens, or, queued, the 503's body
	grep -q '^data: {"error":{"message":"the server is shutting down"' "$T/run.sse" ||
		[ "$(jq -r .error.message "$T/run.sse")" = "the server is shutting down" ]
}

@test "SIGHUP, SIGUSR1 and SIGUSR2 do not end the server (issue 64)" {
	serve
	kill -HUP "$PID"
	kill -USR1 "$PID"
	kill -USR2 "$PID"
	sleep 0.2
	[ "$(curl -s "$URL/health")" = '{"status":"ok"}' ]
	kill -0 "$PID"
}

@test "API keys: several, from a file or the environment; Bearer in any case and X-Api-Key; checked before the body (issue 64)" {
	printf '# keys\n  k1  \n\nk2\n' >"$T/keys"
	serve --api-key-file "$T/keys" --api-key k3
	code() { curl -s -o /dev/null -w '%{http_code}' "$@"; }
	[ "$(code "$URL/v1/models")" = 401 ]
	[ "$(code -H 'Authorization: Bearer k1' "$URL/v1/models")" = 200 ]
	[ "$(code -H 'Authorization: bearer k2' "$URL/v1/models")" = 200 ]
	[ "$(code -H 'Authorization: BEARER k3' "$URL/v1/models")" = 200 ]
	[ "$(code -H 'X-Api-Key: k2' "$URL/v1/models")" = 200 ]
	[ "$(code -H 'Authorization: Bearer k' "$URL/v1/models")" = 401 ]
	[ "$(code -H 'Authorization: Bearer k11' "$URL/v1/models")" = 401 ]
	[ "$(code -H 'Authorization: Basic k1' "$URL/v1/models")" = 401 ]
	[ "$(code -H '# keys' "$URL/health")" = 200 ]
	# a body announced but never sent: the 401 comes at once, from the headers
	t=$(ms)
	run -0 curl -s --max-time 5 -w '\n%{http_code}' -H 'Content-Length: 100000' -H 'Expect:' \
		--data-binary '' "$URL/v1/completions"
	[ "${lines[-1]}" = 401 ]
	[ $(($(ms) - t)) -lt 4000 ]
	kill "$PID"
	wait "$PID" || true
	LLM_API_KEY=envkey serve
	[ "$(code -H 'Authorization: Bearer envkey' "$URL/v1/models")" = 200 ]
	[ "$(code -H 'Authorization: Bearer k1' "$URL/v1/models")" = 401 ]
	kill "$PID"
	wait "$PID" || true
	PID=
	printf '# none\n\n' >"$T/empty"
	run -1 --separate-stderr llm-serve -m "$M" --api-key-file "$T/empty"
	[ "$stderr" = "llm-serve: $T/empty: no key in it" ]
	run -2 --separate-stderr llm-serve -m "$M" --api-key ''
	[ "${stderr_lines[0]}" = "llm-serve: --api-key: empty" ]
}

# raw TEXT: TEXT (its backslash escapes, printf's %b) sent on a connection of its own; the
# answer's status line, then its body's last line.
raw() {
	local port=${URL##*:}
	(
		exec 3<>"/dev/tcp/127.0.0.1/$port"
		printf '%b' "$1" >&3
		timeout 5 cat <&3 | tr -d '\r' | sed -n '1p;$p'
	)
}

@test "strict HTTP framing: Content-Lengths that differ (no smuggled request after them), Transfer-Encoding with Content-Length, codings but chunked, HTTP/1.1 without Host; a chunked body stops at --max-body (issue 64)" {
	serve --max-body 4096
	# (the answer comes from the headers; a body sent with them may be unread when the connection
	# closes, and the client then gets a reset instead: the refusals are asked with headers alone)
	run raw 'POST /v1/completions HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5\r\nContent-Length: 7\r\n\r\n'
	[ "${lines[0]}" = "HTTP/1.1 400 Bad Request" ]
	[ "$(jq -r .error.message <<<"${lines[1]}")" = "the request has Content-Length headers that differ" ]
	run raw 'POST /v1/completions HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n'
	[ "${lines[0]}" = "HTTP/1.1 400 Bad Request" ]
	run raw 'POST /v1/completions HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: gzip\r\n\r\n'
	[ "${lines[0]}" = "HTTP/1.1 501 Not Implemented" ]
	# a request smuggled after a body of two lengths is never served (the answer, or a reset)
	run raw 'POST /v1/completions HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5\r\nContent-Length: 7\r\n\r\n{"a":1}GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n'
	[ -z "$output" ] || [ "${lines[0]}" = "HTTP/1.1 400 Bad Request" ]
	run raw 'GET /health HTTP/1.1\r\n\r\n'
	[ "${lines[0]}" = "HTTP/1.1 400 Bad Request" ]
	run raw 'GET /health HTTP/1.0\r\n\r\n'
	[ "${lines[0]}" = "HTTP/1.1 200 OK" ]
	# a NUL in the path does not end it
	run raw 'GET /health%00x HTTP/1.1\r\nHost: localhost\r\n\r\n'
	[ "${lines[0]}" = "HTTP/1.1 404 Not Found" ]
	run raw 'GET /he%61lth HTTP/1.1\r\nHost: localhost\r\n\r\n'
	[ "${lines[0]}" = "HTTP/1.1 200 OK" ]
	# a long model name is not sent back whole
	printf '{"prompt": "a", "model": "%s"}' "$(head -c 3000 /dev/zero | tr '\0' m)" >"$T/m.json"
	run -0 curl -s "$URL/v1/completions" --data-binary @"$T/m.json"
	[ "$(jq -r '.error.code' <<<"$output")" = model_not_found ]
	[ "${#output}" -lt 400 ]
	sleep 0.2
	# the smuggled GET after the first request was never served
	[ "$(grep -c '^llm-serve: GET /health ' "$T/serve.log")" = 3 ] # no host, HTTP/1.0, /he%61lth
	# 8 MiB chunked: the connection ends at the bound, not after the body
	# (libmicrohttpd 0.9 sends no answer before a body's end: the log says 413)
	run sh -c "head -c 8388608 /dev/zero | tr '\\0' a | curl -s --max-time 20 -w '\\n%{http_code}' \
		-H 'Transfer-Encoding: chunked' --data-binary @- '$URL/v1/completions'"
	[ "$status" -ne 0 ] || [ "${lines[-1]}" = 413 ]
	sleep 0.2
	grep -q '^llm-serve: POST /v1/completions 413 0+0 tokens [0-9]* ms (cut short)$' "$T/serve.log"
}

@test "browsers: Host must name a loopback server (DNS rebinding; --host-allow); Origin only from --cors-origin, with CORS headers and preflight; text/plain POSTs refused without a key (issue 64)" {
	serve --host-allow llm.lan --cors-origin http://ui.example
	code() { curl -s -o /dev/null -w '%{http_code}' "$@"; }
	[ "$(code -H 'Host: evil.example' "$URL/health")" = 403 ]
	[ "$(code -H 'Host: evil.example:8080' "$URL/v1/models")" = 403 ]
	[ "$(code -H 'Host: localhost:1234' "$URL/health")" = 200 ]
	[ "$(code -H 'Host: llm.lan' "$URL/health")" = 200 ]
	[ "$(code "$URL/health")" = 200 ]
	# a page of another origin: refused; of the allowed one: answered with its CORS headers
	[ "$(code -H 'Origin: http://evil.example' "$URL/v1/models")" = 403 ]
	run -0 curl -s -D - -o /dev/null -H 'Origin: http://ui.example' "$URL/v1/models"
	assert_output --partial "Access-Control-Allow-Origin: http://ui.example"
	run -0 curl -s -D - -o /dev/null -X OPTIONS -H 'Origin: http://ui.example' \
		-H 'Access-Control-Request-Method: POST' "$URL/v1/chat/completions"
	assert_output --partial "HTTP/1.1 204"
	assert_output --partial "Access-Control-Allow-Headers: Authorization, Content-Type, X-Api-Key"
	[ "$(code -X OPTIONS -H 'Origin: http://evil.example' "$URL/v1/chat/completions")" = 403 ]
	# a simple POST, as a page's form or no-cors fetch makes it
	[ "$(code -H 'Content-Type: text/plain' -d '{"prompt": "x", "max_tokens": 1}' "$URL/v1/completions")" = 415 ]
	[ "$(code -H 'Content-Type: application/json' -d '{"prompt": "x", "max_tokens": 1}' "$URL/v1/completions")" = 200 ]
	# a server on every interface answers any Host, unless --host-allow is given
	kill "$PID"
	wait "$PID" || true
	serve --host 0.0.0.0
	URL=http://127.0.0.1:${URL##*:}
	[ "$(code -H 'Host: anything.example' "$URL/health")" = 200 ]
}

@test "a taken port is one line naming the address (issue 64)" {
	serve
	port=${URL##*:}
	run -1 --separate-stderr llm-serve -m "$M" -t 1 --port "$port"
	[ "${#stderr_lines[@]}" -eq 1 ]
	[ "$stderr" = "llm-serve: 127.0.0.1:$port: cannot listen: Address already in use" ]
}

@test "a JSON schema 1,000 objects deep or 10,000 properties wide converts in a moment (it took minutes: names and rules found by hash) (issue 64)" {
	serve --max-body 4194304
	# (jq parses at most 256 levels: the deep one is written by printf)
	deep=$(printf '{"type": "object", "properties": {"a": %.0s' $(seq 1000); printf '{"type": "string"}';
		printf '}, "required": ["a"]}%.0s' $(seq 1000))
	wide=$(jq -nc '{"type": "object", "properties": ([range(10000) | {key: "p\(.)", value: {"type": "integer"}}] | from_entries),
		"required": [range(10000) | "p\(.)"]}')
	for s in "$deep" "$wide"; do
		t=$(ms)
		printf '{"prompt": "x", "max_tokens": 1, "json_schema": %s}' "$s" >"$T/req"
		run -0 curl -s --max-time 60 -w '\n%{http_code}' "$URL/v1/completions" --data-binary @"$T/req"
		[ "${lines[-1]}" = 200 ]
		echo "schema of $(printf %s "$s" | wc -c) bytes: answered in $(($(ms) - t)) ms" >&3
		[ $(($(ms) - t)) -lt 20000 ]
	done
}

@test "limits: --queue bounds the waiting requests (503 with Retry-After past it); -n bounds a reply that does not say (issue 64)" {
	serve --queue 2 -n 5
	run -0 curl -s "$URL/v1/completions" -d '{"prompt": "a"}'
	[ "$(jq .usage.completion_tokens <<<"$output")" = 5 ]
	pids=
	for i in 1 2 3 4 5 6; do
		curl -s -D "$T/h$i" -o /dev/null "$URL/v1/completions" -d "$long" &
		pids="$pids $!"
	done
	for p in $pids; do wait "$p"; done
	# one runs, two wait, three are refused at once
	[ "$(grep -l '^HTTP/1.1 200' "$T"/h* | wc -l)" = 3 ]
	[ "$(grep -l '^HTTP/1.1 503' "$T"/h* | wc -l)" = 3 ]
	[ "$(grep -il '^Retry-After: 1' "$T"/h* | wc -l)" = 3 ]
	run -2 --separate-stderr llm-serve -m "$M" -n 0
	[ "${stderr_lines[0]}" = "llm-serve: -n: 0 tokens: give -1 (to the end of the context) or more" ]
}

@test "no internals in replies: a template's refusal names no file or function; a model without a template serves completions and says so at start, its chats a 500 (issue 64)" {
	# the model's own template, from a directory: its label is a path
	mkdir "$T/m"
	tar -xf "$M" -C "$T/m"
	printf '%s' "{% if messages|length > 1 %}{{ raise_exception('two messages') }}{% endif %}{{ messages[0].content }}" \
		>"$T/m/chat_template.jinja"
	M=$T/m serve
	run -0 curl -s "$URL/v1/chat/completions" -d '{"messages": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]}'
	[ "$(jq -r .error.message <<<"$output")" = "the chat template refused the conversation: two messages" ]
	# (llm-run names the file: the user's own)
	printf '%s' '[{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]' >"$T/c.json"
	run -1 --separate-stderr llm-run -m "$T/m" --render "$T/c.json"
	[ "$stderr" = "llm-run: $T/c.json: $T/m/chat_template.jinja: two messages" ]
	kill "$PID"
	wait "$PID" || true
	rm "$T/m/chat_template.jinja" "$T/m/.pad"
	jq 'del(.chat_template)' "$T/m/tokenizer_config.json" >"$T/tc" && mv "$T/tc" "$T/m/tokenizer_config.json"
	M=$T/m serve
	grep -qx "llm-serve: $T/m: no chat template: /v1/chat/completions answers 500 (give --chat-template); text completions are served" "$T/serve.log"
	run -0 curl -s -w '\n%{http_code}' "$URL/v1/chat/completions" -d '{"messages": [{"role": "user", "content": "a"}]}'
	[ "${lines[-1]}" = 500 ]
	[ "$(jq -r .error.code <<<"${lines[0]}")" = no_chat_template ]
	run -0 curl -s -w '\n%{http_code}' "$URL/v1/completions" -d '{"prompt": "a", "max_tokens": 2}'
	[ "${lines[-1]}" = 200 ]
}

@test "a served bundle cut short under the server: one line that says so and how to replace it, exit 1, not a silent SIGBUS (issue 64)" {
	cp "$M" "$T/cut.llm"
	M=$T/cut.llm serve
	truncate -s $(($(stat -c %s "$T/cut.llm") / 2)) "$T/cut.llm"
	curl -s --max-time 20 "$URL/v1/completions" -d '{"prompt": "a", "max_tokens": 3}' || true
	local rc=0
	wait "$PID" || rc=$?
	PID=
	[ "$rc" -eq 1 ]
	grep -qx "llm-serve: $T/cut.llm: the model's file changed under the server (cut short, or rewritten in place): replace a served bundle by rename" "$T/serve.log"
}

@test "300 slow clients (a header byte a second): the health port answers at once, the main port within --timeout, every slow connection is closed (issue 64)" {
	serve --health-port 0 --timeout 2
	hport=$(sed -n 's|.*health on http://127.0.0.1:\([0-9]*\)/health|\1|p' "$T/serve.log")
	[ -n "$hport" ]
	slowloris 127.0.0.1 "${URL##*:}" 300 8 >"$T/slow" &
	sp=$!
	sleep 1
	t=$(ms)
	[ "$(curl -s --max-time 5 "http://127.0.0.1:$hport/health")" = '{"status":"ok"}' ]
	echo "health port: $(($(ms) - t)) ms" >&3
	[ $(($(ms) - t)) -lt 1000 ]
	t=$(ms)
	# (the slow ones hold the address's 64 connections until their deadline)
	for _ in $(seq 50); do
		[ "$(curl -s --max-time 1 "$URL/health")" = '{"status":"ok"}' ] && break
		sleep 0.1
	done
	[ "$(curl -s --max-time 1 "$URL/health")" = '{"status":"ok"}' ]
	echo "main port: $(($(ms) - t)) ms" >&3
	[ $(($(ms) - t)) -lt 8000 ]
	wait "$sp"
	cat "$T/slow" >&3
	# every connection the slow clients had was closed by the server
	[ "$(awk '{ print $6 }' "$T/slow")" = 0 ]
	[ "$(curl -s "http://127.0.0.1:$hport/v1/models" -o /dev/null -w '%{http_code}')" = 404 ]
}

@test "memory follows the work: 40 queued requests of 1 MB bodies, twice, leave RSS within 32 MB of its start; a queued request holds no body (issue 64)" {
	serve --max-body 2000000 --queue 100
	rss() { awk '/^VmRSS/ { print $2 }' "/proc/$PID/status"; }
	printf '{"prompt": "a", "max_tokens": 100, "ignore_eos": true, "user": "%s"}' \
		"$(head -c 1000000 /dev/zero | tr '\0' a)" >"$T/big.json"
	curl -s -o /dev/null "$URL/v1/completions" -d '{"prompt": "a", "max_tokens": 2}'
	base=$(rss)
	for round in 1 2; do
		pids=
		for _ in $(seq 40); do
			curl -s -o /dev/null "$URL/v1/completions" --data-binary @"$T/big.json" &
			pids="$pids $!"
		done
		for p in $pids; do wait "$p"; done
	done
	sleep 1
	after=$(rss)
	echo "RSS $base KiB at the start, $after KiB after 80 requests of 1 MB bodies" >&3
	[ "$(grep -c 'POST /v1/completions 200' "$T/serve.log")" = 81 ]
	[ "$after" -le $((base + 32768)) ]
}

@test "an error message that quotes a client's long non-ASCII text is cut where a character starts: a 400 of valid JSON, and the server lives (it died: 'out of memory serialising JSON')" {
	serve
	for body in "$(jq -nc '{prompt: "x", response_format: {type: ("é" * 200)}}')" \
		"$(jq -nc '{prompt: "x", json_schema: {type: ("日本" * 150)}}')" \
		"$(jq -nc '{messages: [{role: "user", content: "x"}], tool_choice: {type: "function", function: {name: ("é" * 300)}}, tools: [{type: "function", function: {name: "f"}}]}')"; do
		path=/v1/completions
		jq -e .messages >/dev/null <<<"$body" && path=/v1/chat/completions
		run -0 post "$path" "$body"
		[ "${lines[-1]}" = 400 ]
		head -n -1 <<<"$output" | jq -e '.error.message | length > 100'
	done
	run -0 post /v1/completions '{"prompt": "Hi", "max_tokens": 2}'
	[ "${lines[-1]}" = 200 ]
}

@test "a short soak: 8 careless clients (streams dropped, abandoned requests, malformed bodies, bad framing) for 20 s; every answer as expected, threads and fds back to their start (tests/tools/serve-soak; issue 64)" {
	serve --parallel 2
	thr0=$(awk '/^Threads/ { print $2 }' "/proc/$PID/status")
	fd0=$(ls "/proc/$PID/fd" | wc -l)
	run -0 "$PROJECT_ROOT/tests/tools/serve-soak" -c 8 -d 20 -i 2 "$URL" "$PID"
	echo "${lines[-1]}" >&3
	grep -q '^soak: 20 s, 8 clients, [0-9]* requests, 0 unexpected' <<<"${lines[-1]}"
	grep -q '^stream dropped: [1-9]' <<<"$output"
	grep -q '^abandoned: [1-9]' <<<"$output"
	grep -q '^malformed body: [1-9]' <<<"$output"
	# at rest again: the threads and open files of an idle server
	[[ "${lines[-1]}" =~ threads\ [0-9]+\.\.[0-9]+\ \(idle\ end\ ([0-9]+)\)\;\ fds\ [0-9]+\.\.[0-9]+\ \(idle\ end\ ([0-9]+)\) ]]
	echo "idle: threads ${BASH_REMATCH[1]} (start $thr0), fds ${BASH_REMATCH[2]}" >&3
	[ "${BASH_REMATCH[1]}" -le $((thr0 + 1)) ]
	[ "${BASH_REMATCH[2]}" -le $((fd0 + 1)) ]
}
