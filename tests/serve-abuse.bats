#!/usr/bin/env bats
# llm-serve under careless and hostile clients (issue 64), on the tiny
# random Qwen2 (a 250-token reply takes under a second): work that
# follows its client, signals, and the limits llm-serve(1) states.  Each
# test starts its own server on a free loopback port and stops it by PID.

bats_require_minimum_version 1.5.0

setup_file() {
	load test_helper/common-setup
	_common_setup
	tiny_build "$BATS_FILE_TMPDIR" out
}

setup() {
	load test_helper/common-setup
	_common_setup
	M=$BATS_FILE_TMPDIR/out/model.llm
	T=$BATS_TEST_TMPDIR
	PID=
	long='{"prompt": "Once", "max_tokens": 250, "ignore_eos": true, "temperature": 0}'
}

teardown() {
	[ -z "$PID" ] || { kill "$PID" 2>/dev/null; wait "$PID" 2>/dev/null || true; }
}

serve() {
	llm-serve -m "$M" -t 1 --port 0 "$@" 2>"$T/serve.log" &
	PID=$!
	for _ in $(seq 100); do
		grep -q 'listening on' "$T/serve.log" && break
		kill -0 "$PID" 2>/dev/null || { cat "$T/serve.log" >&2; return 1; }
		sleep 0.1
	done
	URL=$(sed -n 's/.*listening on \(http:[^ ]*\).*/\1/p' "$T/serve.log")
	[ -n "$URL" ]
}

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
