#!/usr/bin/env bats
# The template engine (lib/text/jinja.c) against @huggingface/jinja, the
# engine of transformers.js: the real chat templates of
# tests/fixtures/jinja/templates with every conversation of
# tests/fixtures/jinja/conversations (add_generation_prompt on and off),
# and the small templates of tests/fixtures/jinja/constructs that try one
# feature or one error each, rendered by tests/tools/jinja-render and
# compared with the goldens tests/tools/make-jinja-golden wrote.  A golden
# .err is the engine's message: ours must fail with the same text.

bats_require_minimum_version 1.5.0

setup() {
	load test_helper/common-setup
	_common_setup
	J="$PROJECT_ROOT/tests/fixtures/jinja"
	T=$BATS_TEST_TMPDIR
}

# check BASE [jinja-render arguments]: render and compare with BASE.expected,
# or expect the failure BASE.err; prints what differs, returns 1 then.
check() {
	local base=$1 rc=0 msg
	shift
	jinja-render "$@" >"$T/out" 2>"$T/err" || rc=$?
	if [ -e "$base.expected" ]; then
		[ "$rc" -eq 0 ] || { echo "$(basename "$base"): failed: $(cat "$T/err")"; return 1; }
		cmp -s "$T/out" "$base.expected" || { echo "$(basename "$base"): differs"; return 1; }
		return 0
	fi
	[ "$rc" -eq 1 ] || { echo "$(basename "$base"): rendered (rc $rc), expected: $(cat "$base.err")"; return 1; }
	# "jinja-render: FILE:LINE:COL: what", or "FILE: what" for raise_exception
	msg=$(sed -E '1s/^jinja-render: .*\.jinja(:[0-9]+:[0-9]+)?: //' "$T/err")
	[ "$msg" = "$(cat "$base.err")" ] || { echo "$(basename "$base"): '$msg', expected '$(cat "$base.err")'"; return 1; }
}

@test "every real template renders every conversation as @huggingface/jinja does" {
	local n=0 bad=0 t c name base
	for t in "$J"/templates/*.jinja; do
		name=$(basename "$t" .jinja)
		for c in "$J"/conversations/*.json; do
			base="$J/golden/$name.$(basename "$c" .json)"
			check "$base" -g "$t" "$J/templates/$name.json" "$c" || bad=$((bad + 1))
			check "$base.nogen" "$t" "$J/templates/$name.json" "$c" || bad=$((bad + 1))
			n=$((n + 2))
		done
	done
	echo "$n renderings, $bad differ" >&3
	[ "$bad" -eq 0 ] && [ "$n" -ge 600 ]
}

@test "every construct renders, or fails with the message, as @huggingface/jinja does" {
	local n=0 bad=0 t name
	for t in "$J"/constructs/*.jinja; do
		name=$(basename "$t" .jinja)
		check "$J/golden/construct.$name" -G "$t" "$J/constructs/$name.json" || bad=$((bad + 1))
		n=$((n + 1))
	done
	echo "$n constructs, $bad differ" >&3
	[ "$bad" -eq 0 ] && [ "$n" -ge 150 ]
}

@test "the data ranges are the messages' strings, wherever the template moves them" {
	# a role, a stripped content, a substring, a replaced one, tojson
	printf '%s' "{{ messages[0].role }}|{{ messages[0].content.strip() }}|{{ messages[0].content[2:4] }}|" \
		"{{ messages[0].content.replace('a', 'XY') }}|{{ messages|tojson }}|{{ bos_token }}{{ 'lit' }}" >"$T/t.jinja"
	echo '{"messages": [{"role": "user", "content": " abc "}], "bos_token": "<s>"}' >"$T/c.json"
	run -0 --separate-stderr jinja-render -s -G "$T/t.jinja" "$T/c.json"
	[ "$output" = 'user|abc|bc| XYbc |[{"role": "user", "content": " abc "}]|<s>lit' ]
	# user, abc, bc, " " and "bc " around the XY the template wrote, and
	# tojson's string literals of the messages, keys included
	[ "$stderr" = "$(printf '%s\n' '0 4' '5 8' '9 11' '12 13' '15 18' '21 27' '29 35' '37 46' '48 55')" ]
}

@test "a template the engine cannot take is refused with its line and column" {
	printf 'line one\n{%% for x in xs %%}\n  {{ x | bogus( }}\n{%% endfor %%}' >"$T/a.jinja"
	run -1 jinja-render "$T/a.jinja"
	[ "$output" = "jinja-render: $T/a.jinja:3:17: Unexpected token: CloseExpression" ]
	printf '{%% if true %%}\n{%% include "x" %%}{%% endif %%}' >"$T/b.jinja"
	run -1 jinja-render "$T/b.jinja"
	[ "$output" = "jinja-render: $T/b.jinja:2:4: Unknown statement type: include" ]
	printf 'x\n{{ undefined_thing.y + 1 }}' >"$T/c.jinja"
	run -1 jinja-render "$T/c.jinja"
	[ "$output" = "jinja-render: $T/c.jinja:2:22: Cannot perform operation + on undefined values" ]
}

@test "strftime_now reads the clock, or SOURCE_DATE_EPOCH" {
	printf '%s' "{{ strftime_now('%Y-%m-%d %H:%M %b %B %%') }}" >"$T/d.jinja"
	SOURCE_DATE_EPOCH=1721952000 TZ=UTC run -0 jinja-render -G "$T/d.jinja"
	[ "$output" = "2024-07-26 00:00 Jul July %" ]
	local before after
	before=$(TZ=UTC LC_ALL=C date '+%Y-%m-%d %H:%M %b %B %%')
	TZ=UTC run -0 jinja-render -G "$T/d.jinja"
	after=$(TZ=UTC LC_ALL=C date '+%Y-%m-%d %H:%M %b %B %%')
	[ "$output" = "$before" ] || [ "$output" = "$after" ]
}

@test "the jinja goldens are what @huggingface/jinja renders today" {
	[ -e "$PROJECT_ROOT/tests/npm/node_modules/@huggingface/jinja/package.json" ] ||
		skip "npm package @huggingface/jinja not installed (tests/tools/fetch-golden-tokenizers)"
	command -v node >/dev/null || skip "no node"
	run -0 "$PROJECT_ROOT/tests/tools/make-jinja-golden" -o "$T/g"
	local f
	for f in "$T"/g/*; do
		cmp "$f" "$J/golden/$(basename "$f")"
	done
	[ "$(ls "$T/g" | wc -l)" -eq "$(ls "$J/golden" | wc -l)" ]
}
