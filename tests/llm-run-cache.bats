#!/usr/bin/env bats
# llm-run -m on a GGUF file or a Hugging Face checkpoint directory: the
# source is compiled once, through pipelines/model.mk, into a cache entry
# keyed by its content (issue 48, item 1).

bats_require_minimum_version 1.5.0

# One entry compiled for the whole file (FC), for the tests that only use
# it: llm-serve, the text modes, --verify.
setup_file() {
	load test_helper/common-setup
	_common_setup
	local s="$SHARED/fixtures/stories260K/stories260K.gguf"
	[ -f "$s" ] || return 0 # setup skips each test
	llm-run -m "$s" --cache-dir "$BATS_FILE_TMPDIR/cache" -p "Once upon a time" -n 1 -t 2 >/dev/null
}

setup() {
	load test_helper/common-setup
	_common_setup
	T=$BATS_TEST_TMPDIR
	STORIES="$SHARED/fixtures/stories260K/stories260K.gguf"
	[ -f "$STORIES" ] || skip "no $STORIES (../shared/fixtures is absent)"
	C=$T/cache
	FC=$BATS_FILE_TMPDIR/cache
	PID=
}

# A server started by a test is stopped by its PID.
teardown() {
	stop_own_server
}

# serve options: llm-serve (common-setup.bash's start_server), waiting up
# to 5 minutes for "listening on": a GGUF file may compile first.
serve() { SERVE_WAIT=3000 start_server "$@"; }

# stop: SIGTERM to the server started last, and its exit status 0.
stop() {
	kill "$PID"
	wait "$PID"
	PID=
}

story() {
	llm-run -m "$1" --cache-dir "$C" -p "Once upon a time" -n 12 -t 2 "${@:2}"
}

@test "a GGUF file compiles once into the cache, then runs at once; the text is the model.mk build's; a copy of the file shares the entry" {
	run -0 --separate-stderr story "$STORIES"
	first=$output
	[[ "$stderr" == *"llm-run: compiling $STORIES into $C/models/"*"once, later runs start at once"* ]]
	[[ "$stderr" == *"llm-link model.llm"* ]]
	# the entry alone: no lock file, no temporary directory
	[ "$(ls "$C/models" | wc -l)" -eq 1 ]
	run -0 --separate-stderr story "$STORIES"
	[ "$output" = "$first" ]
	[[ "$stderr" != *compiling* ]]
	# the same text as the bundle model.mk builds
	make -s -f "$PROJECT_ROOT/pipelines/model.mk" LLM="${LLM_BIN:-$PROJECT_ROOT/bin}/" MODEL="$STORIES" OUT="$T/b" >&2
	run -0 --separate-stderr llm-run -m "$T/b/model.llm" -p "Once upon a time" -n 12 -t 2
	[ "$output" = "$first" ]
	cp "$STORIES" "$T/copy.gguf"
	run -0 --separate-stderr story "$T/copy.gguf"
	[ "$output" = "$first" ]
	[[ "$stderr" != *compiling* ]]
	# --list-cache: key, size, date, source and the bundle, a tab apart
	run -0 llm-run --cache-dir "$C" --list-cache
	[ "${#lines[@]}" -eq 1 ]
	IFS=$'\t' read -r key size when src path <<<"$output"
	[[ "$key" =~ ^[0-9a-f]{16}$ ]]
	[[ "$size" =~ ^\ *[0-9]+\.[0-9]\ MiB$ ]]
	[[ "$when" =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}\ [0-9]{2}:[0-9]{2}$ ]]
	[ "$src" = "$(realpath "$STORIES")" ] # absolute, as it was found
	[ "$path" = "$C/models/$key/model.llm" ]
	[ -f "$path" ]
	[ "$(cut -f5 <<<"$output")" = "$path" ]
	run -0 --separate-stderr llm-run -m "$path" -p "Once upon a time" -n 12 -t 2
	[ "$output" = "$first" ]
	# another file is another entry
	head -c 4 "$STORIES" >"$T/bad.gguf"
	run -1 --separate-stderr llm-run -m "$T/bad.gguf" --cache-dir "$C" -p x -n 1
	[ "${stderr_lines[-1]}" = "llm-run: $T/bad.gguf: compiling it failed: make: exited with status 2" ]
	[ "$(ls "$C/models" | wc -l)" -eq 1 ] # neither its directory nor its lock file
	run -0 llm-run --cache-dir "$C" --list-cache
	[ "${#lines[@]}" -eq 1 ]
	# a relative --cache-dir: the paths printed are absolute
	cd "$T"
	run -0 llm-run --cache-dir cache --list-cache
	[ "$(cut -f5 <<<"$output")" = "$path" ]
	[[ "$(cut -f4 <<<"$output")" == /* ]]
}

@test "concurrent first runs compile once; an interrupted one (SIGINT, SIGTERM, SIGHUP, early or late) leaves nothing, the next run compiles it whole (issue 65)" {
	story "$STORIES" >"$T/o1" 2>"$T/e1" &
	p1=$!
	story "$STORIES" >"$T/o2" 2>"$T/e2" &
	p2=$!
	wait $p1
	wait $p2
	cmp "$T/o1" "$T/o2"
	[ "$(cat "$T/e1" "$T/e2" | grep -c 'llm-link model.llm')" -eq 1 ]
	grep -q "is being compiled by another run: waiting" "$T/e1" "$T/e2"
	# interrupted while it compiles, early and late, by SIGINT, SIGTERM or SIGHUP: nothing is left
	# (env --default-signal: a background job of a script ignores SIGINT; LLM_CACHE_DIR empty: no
	# kernel from llm-lower's object cache, so that a compile takes seconds)
	for sig_at in INT:0 TERM:0.2 HUP:0.6 INT:1.2; do
		C=$T/c-${sig_at%%:*}-${sig_at##*:}
		env --default-signal=INT LLM_CACHE_DIR= llm-run -m "$STORIES" --cache-dir "$C" -p "Once upon a time" -n 12 -t 2 \
			>/dev/null 2>"$T/e3" &
		p=$!
		for _ in $(seq 200); do
			compgen -G "$C/models/*.tmp.*" >/dev/null && break
			sleep 0.02
		done
		sleep "${sig_at##*:}"
		kill -"${sig_at%%:*}" $p
		wait $p || true
		[ -z "$(ls -A "$C" 2>/dev/null)" ] || { ls -laR "$C" >&2; false; }
	done
	run -0 --separate-stderr llm-run --cache-dir "$C" --list-cache
	assert_output ""
	run -0 --separate-stderr story "$STORIES"
	[ "$output" = "$(cat "$T/o1")" ]
	[ -z "$(compgen -G "$C/models/*.tmp.*")" ]
	# --cache-dir holds llm-lower's objects too, and --prune-cache frees both
	n=$(ls "$C/objects" | wc -l)
	[ "$n" -gt 0 ]
	run -0 --separate-stderr llm-run --cache-dir "$C" --prune-cache
	[ "$stderr" = "llm-run: $C/models: 1 removed
llm-run: $C/objects: $n removed" ]
	[ -z "$(ls "$C/models")" ] && [ -z "$(ls "$C/objects")" ]
}

@test "--no-cache compiles for the run only; a checkpoint directory compiles too; a build directory opens as it is" {
	mkdir "$T/tmp"
	run -0 --separate-stderr env TMPDIR="$T/tmp" llm-run -m "$STORIES" --no-cache -p "Once upon a time" -n 12 -t 2
	[[ "$stderr" == *"compiling $STORIES (--no-cache: for this run only)"* ]]
	[ -z "$(ls "$T/tmp")" ]
	# interrupted: its directory goes too
	env TMPDIR="$T/tmp" LLM_CACHE_DIR= llm-run -m "$STORIES" --no-cache -p "Once upon a time" -n 12 -t 2 \
		>/dev/null 2>&1 &
	p=$!
	sleep 0.5
	kill -TERM $p
	wait $p || true
	[ -z "$(ls "$T/tmp")" ]
	[ ! -e "$C" ]
	mkmodel --preset tiny --family llama --seed 1 -o "$T/ck" >&2
	run -0 --separate-stderr llm-run -m "$T/ck" --cache-dir "$C" --tokens 1,2,3 -n 2 --json -t 2
	[ "$(jq '.generated_tokens | length' <<<"$output")" -eq 2 ]
	[[ "$stderr" == *"compiling $T/ck into"* ]]
	# llm-serve opens the same entry, served by the directory's name
	serve -m "$T/ck/" --cache-dir "$C"
	[[ "$(<"$T/serve.log")" != *compiling* ]]
	[ "$(curl -s "$URL/v1/models" | jq -c '[.data[].id]')" = '["ck"]' ]
	stop
	run -2 llm-run -m "$STORIES" --no-cache --cache-dir "$C" -p x
	run -2 llm-run -m "$STORIES" --list-cache
	# XDG_CACHE_HOME when nothing else says
	run -0 --separate-stderr env -u LLM_CACHE_DIR XDG_CACHE_HOME="$T/xdg" llm-run --list-cache
	[ -z "$output" ]
	[ "$stderr" = "llm-run: $T/xdg/llm/models: no compiled models" ]
}

@test "llm-serve -m a GGUF file serves its cache entry as the file's base name; a completion is llm-run's greedy text" {
	serve -m "$STORIES" --cache-dir "$FC"
	grep -q "llm-serve: $STORIES: listening on http://127.0.0.1:" "$T/serve.log"
	[[ "$(<"$T/serve.log")" != *compiling* ]] # the entry llm-run compiled
	[ "$(curl -s "$URL/v1/models" | jq -c '[.data[].id]')" = '["stories260K"]' ]
	want=$(llm-run -m "$STORIES" --cache-dir "$FC" -p "Once upon a time" -n 11 -t 1 --json 2>/dev/null | jq -r .text)
	[ -n "$want" ]
	run -0 post /v1/completions '{"prompt": "Once upon a time", "max_tokens": 11, "temperature": 0}'
	[ "${lines[-1]}" = 200 ]
	body=${output%$'\n'*}
	[ "$(jq -r '.choices[0].text' <<<"$body")" = "$want" ]
	[ "$(jq -r .model <<<"$body")" = stories260K ]
	stop
	# a copy under another name: the same entry, served by its own name
	cp "$STORIES" "$T/tiny-tales.gguf"
	serve -m "$T/tiny-tales.gguf" --cache-dir "$FC"
	[[ "$(<"$T/serve.log")" != *compiling* ]]
	[ "$(curl -s "$URL/v1/models" | jq -c '[.data[].id]')" = '["tiny-tales"]' ]
	stop
	# --name still decides
	serve -m "$STORIES" --cache-dir "$FC" --name story
	[ "$(curl -s "$URL/v1/models" | jq -c '[.data[].id]')" = '["story"]' ]
	stop
}

@test "llm-serve compiles a GGUF file before it listens, --no-cache for its run only; errors are one line, exit 1 or 2" {
	mkdir "$T/tmp"
	TMPDIR="$T/tmp" serve -m "$STORIES" --no-cache
	grep -q "^llm-serve: compiling $STORIES (--no-cache: for this run only)$" "$T/serve.log"
	grep -q "llm-link model.llm" "$T/serve.log"
	[ -n "$(ls "$T/tmp")" ]
	[ "$(curl -s "$URL/v1/models" | jq -c '[.data[].id]')" = '["stories260K"]' ]
	stop
	[ -z "$(ls "$T/tmp")" ] # removed at exit
	run -2 --separate-stderr llm-serve -m "$STORIES" --no-cache --cache-dir "$C"
	[ "${stderr_lines[0]}" = "llm-serve: give one of --no-cache and --cache-dir" ]
	head -c 4 "$STORIES" >"$T/bad.gguf"
	run -1 --separate-stderr llm-serve -m "$T/bad.gguf" --cache-dir "$C" --port 0
	[ "${stderr_lines[-1]}" = "llm-serve: $T/bad.gguf: compiling it failed: make: exited with status 2" ]
	[ -z "$(compgen -G "$C/models/*.tmp.*")" ]
}

@test "llm-run --tokenize, --detokenize, --render and --verify take a GGUF file through its cache entry" {
	bundle=$(llm-run --cache-dir "$FC" --list-cache | cut -f5)
	[ -f "$bundle" ]
	run -0 --separate-stderr llm-run -m "$STORIES" --cache-dir "$FC" --tokenize <<<'"Once upon a time"'
	[ "$(jq length <<<"$output")" -gt 1 ]
	[ "$output" = "$(llm-run -m "$bundle" --tokenize <<<'"Once upon a time"')" ]
	[ -z "$stderr" ] # no compile: the entry
	ids=$output
	run -0 llm-run -m "$STORIES" --cache-dir "$FC" --detokenize <<<"$ids"
	[ "$output" = '"Once upon a time"' ]
	echo '[{"role": "user", "content": "Tell a story"}]' >"$T/conv.json"
	run -0 llm-run -m "$STORIES" --cache-dir "$FC" --chat-template llama2 --render "$T/conv.json"
	[[ "$output" == *"Tell a story"* ]]
	[ "$output" = "$(llm-run -m "$bundle" --chat-template llama2 --render "$T/conv.json")" ]
	# (a message names the file given, not its entry)
	run -1 --separate-stderr llm-run -m "$STORIES" --cache-dir "$FC" --render "$T/conv.json"
	[ "$stderr" = "llm-run: $STORIES: no chat template recognised: give --chat-template" ]
	run -0 llm-run -m "$STORIES" --cache-dir "$FC" --verify
	[[ "$output" =~ ^"$bundle: weights.bin: "[0-9]+" tensors, "[0-9]+" bytes, as $bundle: weights.json records"$ ]]
	# a fresh cache: the text mode compiles it first, as generation would
	run -0 --separate-stderr llm-run -m "$STORIES" --cache-dir "$C" --tokenize <<<'"Once upon a time"'
	[ "$output" = "$ids" ]
	[[ "$stderr" == *"llm-run: compiling $STORIES into $C/models/"* ]]
}

@test "-c past the default bound, -ctk/-ctv and --import-flags on a GGUF file: a build of their own, compiled once and keyed by them; refusals in one line (issue 65)" {
	run -0 --separate-stderr story "$STORIES"
	first=$output
	# the KV cache's type: before, "the KV cache of this build is f32, chosen at import"
	run -0 --separate-stderr story "$STORIES" -ctk f16 -ctv f16
	[[ "$stderr" == *"llm-run: compiling $STORIES (--kv-dtype f16) into $C/models/"* ]]
	run -0 --separate-stderr story "$STORIES" -ctk f16
	[[ "$stderr" != *compiling* ]]
	# a context past 32768 (stories260K was trained for 2048: llm-import says so, and builds it)
	run -0 --separate-stderr story "$STORIES" -c 40000
	[[ "$stderr" == *"llm-run: compiling $STORIES (--max-context 40000) into "* ]]
	[ "$output" = "$first" ]
	run -0 --separate-stderr story "$STORIES" --import-flags "--activations f32"
	[[ "$stderr" == *"(--activations f32) into "* ]]
	[ "$output" = "$first" ]
	# four entries; the sixth column says how each was built
	run -0 llm-run --cache-dir "$C" --list-cache
	[ "${#lines[@]}" -eq 4 ]
	[ "$(cut -f6 <<<"$output" | sort | tr '\n' '|')" = "|--activations f32|--kv-dtype f16|--max-context 40000|" ]
	# the default build's -ctk f32 is the default entry
	run -0 --separate-stderr story "$STORIES" -ctk f32
	[[ "$stderr" != *compiling* ]]
	run -2 --separate-stderr story "$STORIES" -ctk f16 -ctv bf16
	[ "$stderr" = "llm-run: -ctk f16 -ctv bf16: the KV cache has one type here (llm-import --kv-dtype)" ]
	run -2 --separate-stderr story "$STORIES" -ctk q8_0
	[ "$stderr" = "llm-run: -ctk q8_0: the KV cache's types are f32, f16 and bf16" ]
	b=$(llm-run --cache-dir "$C" --list-cache | head -1 | cut -f5)
	run -1 --separate-stderr llm-run -m "$b" --import-flags "--dtype f32" -p x
	[ "$stderr" = "llm-run: $b: --import-flags: a bundle or a build directory is compiled already" ]
}
