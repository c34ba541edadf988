#!/usr/bin/env bats
# llm-run -m on a GGUF file or a Hugging Face checkpoint directory: the
# source is compiled once, through pipelines/model.mk, into a cache entry
# keyed by its content (issue 48, item 1).

bats_require_minimum_version 1.5.0

setup() {
	load test_helper/common-setup
	_common_setup
	T=$BATS_TEST_TMPDIR
	STORIES="$SHARED/fixtures/stories260K/stories260K.gguf"
	[ -f "$STORIES" ] || skip "no $STORIES (../shared/fixtures is absent)"
	C=$T/cache
}

story() {
	llm-run -m "$1" --cache-dir "$C" -p "Once upon a time" -n 12 -t 2 "${@:2}"
}

@test "a GGUF file compiles once into the cache, then runs at once; the text is the model.mk build's; a copy of the file shares the entry" {
	run -0 --separate-stderr story "$STORIES"
	first=$output
	[[ "$stderr" == *"llm-run: compiling $STORIES into $C/models/"*"once, later runs start at once"* ]]
	[[ "$stderr" == *"llm-link model.llm"* ]]
	[ "$(ls "$C/models" | grep -vc lock)" -eq 1 ]
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
	[ "$src" = "$STORIES" ]
	[ "$path" = "$C/models/$key/model.llm" ]
	[ -f "$path" ]
	[ "$(cut -f5 <<<"$output")" = "$path" ]
	run -0 --separate-stderr llm-run -m "$path" -p "Once upon a time" -n 12 -t 2
	[ "$output" = "$first" ]
	# another file is another entry
	head -c 4 "$STORIES" >"$T/bad.gguf"
	run -1 --separate-stderr llm-run -m "$T/bad.gguf" --cache-dir "$C" -p x -n 1
	[ "${stderr_lines[-1]}" = "llm-run: $T/bad.gguf: compiling it failed: make: exited with status 2" ]
	[ -z "$(compgen -G "$C/models/*.tmp.*")" ]
	run -0 llm-run --cache-dir "$C" --list-cache
	[ "${#lines[@]}" -eq 1 ]
}

@test "concurrent first runs compile once; an interrupted one leaves no entry, the next run compiles it whole" {
	story "$STORIES" >"$T/o1" 2>"$T/e1" &
	p1=$!
	story "$STORIES" >"$T/o2" 2>"$T/e2" &
	p2=$!
	wait $p1
	wait $p2
	cmp "$T/o1" "$T/o2"
	[ "$(cat "$T/e1" "$T/e2" | grep -c 'llm-link model.llm')" -eq 1 ]
	grep -q "is being compiled by another run: waiting" "$T/e1" "$T/e2"
	# interrupted while it compiles: no entry, a temporary directory at most
	C=$T/c2
	# (SIGTERM: a background job of a script ignores SIGINT)
	llm-run -m "$STORIES" --cache-dir "$C" -p "Once upon a time" -n 12 -t 2 >/dev/null 2>"$T/e3" &
	p=$!
	for _ in $(seq 200); do
		compgen -G "$C/models/*.tmp.*" >/dev/null && break
		sleep 0.02
	done
	kill -TERM $p
	wait $p || true
	run -0 --separate-stderr llm-run --cache-dir "$C" --list-cache
	assert_output ""
	run -0 --separate-stderr story "$STORIES"
	[ "$output" = "$(cat "$T/o1")" ]
	[ -z "$(compgen -G "$C/models/*.tmp.*")" ]
	run -0 --separate-stderr llm-run --cache-dir "$C" --prune-cache
	[[ "$stderr" == "llm-run: $C/models: 1 removed" ]]
	[ -z "$(ls "$C/models")" ]
}

@test "--no-cache compiles for the run only; a checkpoint directory compiles too; a build directory opens as it is" {
	mkdir "$T/tmp"
	run -0 --separate-stderr env TMPDIR="$T/tmp" llm-run -m "$STORIES" --no-cache -p "Once upon a time" -n 12 -t 2
	[[ "$stderr" == *"compiling $STORIES (--no-cache: for this run only)"* ]]
	[ -z "$(ls "$T/tmp")" ]
	[ ! -e "$C" ]
	mkmodel --preset tiny --family llama --seed 1 -o "$T/ck" >&2
	run -0 --separate-stderr llm-run -m "$T/ck" --cache-dir "$C" --tokens 1,2,3 -n 2 --json -t 2
	[ "$(jq '.generated_tokens | length' <<<"$output")" -eq 2 ]
	[[ "$stderr" == *"compiling $T/ck into"* ]]
	run -2 llm-run -m "$STORIES" --no-cache --cache-dir "$C" -p x
	run -2 llm-run -m "$STORIES" --list-cache
	# XDG_CACHE_HOME when nothing else says
	run -0 --separate-stderr env -u LLM_CACHE_DIR XDG_CACHE_HOME="$T/xdg" llm-run --list-cache
	[ -z "$output" ]
	[ "$stderr" = "llm-run: $T/xdg/llm/models: no compiled models" ]
}
