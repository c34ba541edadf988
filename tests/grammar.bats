#!/usr/bin/env bats
# Grammar-constrained output (issue 48 item 7) on the tiny random Qwen2
# model (the DeepSeek-R1-Distill tokenizer, 151k tokens): its random
# weights draw random tokens at temperature 1, so every output that
# parses and follows the schema or grammar shows the constraint at work.
# The grammar's own cases (splits, bounds, schemas) are in
# tests/unit/test_grammar.c.

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

schema='{"type": "object", "properties": {
  "name": {"type": "string", "maxLength": 6},
  "age": {"type": "integer"},
  "ok": {"type": "boolean"},
  "color": {"enum": ["red", "green", "blue"]},
  "tags": {"type": "array", "items": {"type": "string", "maxLength": 3}, "maxItems": 2}},
  "required": ["name", "age", "ok"], "additionalProperties": false}'

# The checks of the schema above, in jq: the keys, the types, the bounds.
follows='(keys - ["age", "color", "name", "ok", "tags"] | length == 0)
  and (.name | type == "string" and length <= 6)
  and (.age | type == "number" and floor == .)
  and (.ok | type == "boolean")
  and ((has("color") | not) or (.color | IN("red", "green", "blue")))
  and ((has("tags") | not) or (.tags | type == "array" and length <= 2 and all(type == "string" and length <= 3)))'

@test "llm-run --json-schema-file at temperature 1: every output is JSON that follows the schema" {
	echo "$schema" >"$T/s.json"
	for seed in 1 2 3 4 5 6 7 8; do
		llm-run -m "$M" -t 1 --temp 1 --seed "$seed" -n 300 -jf "$T/s.json" -p 'Tell me' --json \
			2>/dev/null >"$T/out.json"
		# the grammar ended the reply, not -n
		[ "$(jq -r .stop "$T/out.json")" = eos ]
		jq -r .text "$T/out.json" >"$T/text"
		jq -e "$follows" "$T/text" || { cat "$T/text"; false; }
	done
}

@test "without the schema the same seeds do not give JSON (the test can fail)" {
	for seed in 1 2 3; do
		llm-run -m "$M" -t 1 --temp 1 --seed "$seed" -n 30 -p 'Tell me' --no-display-prompt 2>/dev/null >"$T/text"
		! jq -e "$follows" "$T/text" 2>/dev/null
	done
}

@test "llm-run -j takes the schema as text, and -i holds each chat reply to it" {
	run -0 --separate-stderr llm-run -m "$M" -t 1 --temp 1 --seed 9 -n 100 \
		-j '{"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 3}' -p 'x' --no-display-prompt
	jq -e 'type == "array" and length >= 1 and length <= 3 and all(type == "number")' <<<"$output"
	printf '%s\n' 'Hello' 'Again' 'Once more' >"$T/in"
	llm-run -m "$M" -t 1 --temp 1 --seed 4 -n 100 -i --json \
		--json-schema '{"type": "object", "properties": {"a": {"type": "boolean"}}, "required": ["a"]}' \
		<"$T/in" 2>/dev/null >"$T/turns"
	[ "$(wc -l <"$T/turns")" -eq 3 ]
	jq -e '.text | fromjson | .a | type == "boolean"' "$T/turns"
}

@test "llm-run --grammar: every output matches the grammar's regular expression" {
	g='root ::= ("yes" | "no" | "maybe") ", " [0-9]{1,3} (" " [a-c]+)? "\n"'
	for seed in 1 2 3 4 5 6; do
		llm-run -m "$M" -t 1 --temp 1 --seed "$seed" -n 60 --grammar "$g" -p 'Q' --no-display-prompt \
			2>/dev/null >"$T/out"
		grep -Eqx '(yes|no|maybe), [0-9]{1,3}( [a-c]+)?' "$T/out" || { od -c "$T/out"; false; }
		[ "$(wc -l <"$T/out")" -eq 1 ]
	done
}

@test "a grammar whose literals and characters tokens split (UTF-8 and a long word) is followed" {
	g='root ::= "antidisestablishment" ("é" | "日本" | "😀"){2,4} "."'
	for seed in 1 2 3; do
		run -0 --separate-stderr llm-run -m "$M" -t 1 --temp 1 --seed "$seed" -n 60 --grammar "$g" -p 'Q' \
			--no-display-prompt
		[[ "$output" =~ ^antidisestablishment(é|日本|😀){2,4}\.$ ]]
	done
}

@test "a bad grammar or schema is one line with its line and column, before the model loads" {
	printf 'root ::= "a" item\n\nitem ::= [0-9] | "x\n' >"$T/bad.gbnf"
	run -1 --separate-stderr llm-run -m "$T/none.llm" -p hi --grammar-file "$T/bad.gbnf"
	[ "$stderr" = "llm-run: $T/bad.gbnf: line 3, column 20: unterminated string" ]
	run -1 --separate-stderr llm-run -m "$M" -p hi --grammar 'root ::= expr
expr ::= expr "+" [0-9] | [0-9]'
	[ "$stderr" = "llm-run: --grammar: line 2, column 1: rule 'expr' can start with itself (left recursion)" ]
	run -1 --separate-stderr llm-run -m "$M" -p hi --grammar 'root ::= "a" b'
	[ "$stderr" = "llm-run: --grammar: line 1, column 14: undefined rule 'b'" ]
	echo '{"type": "object", "properties": {"n": {"type": "integer", "minimum": 1}}}' >"$T/s.json"
	run -1 --separate-stderr llm-run -m "$M" -p hi -jf "$T/s.json"
	[ "$stderr" = "llm-run: $T/s.json: /properties/n: 'minimum' is not supported" ]
	run -1 --separate-stderr llm-run -m "$M" -p hi -j '{"type": '
	[ "$stderr" = "llm-run: --json-schema: line 1, column 9: unexpected token near end of file" ]
	run -2 --separate-stderr llm-run -m "$M" -p hi -j '{}' --grammar 'root ::= "a"'
	[ "${stderr_lines[0]}" = "llm-run: give one of --grammar, --grammar-file, --json-schema and --json-schema-file" ]
	run -2 --separate-stderr llm-run -m "$M" --bench --grammar 'root ::= "a"'
	[ "${stderr_lines[0]}" = "llm-run: --grammar goes with -f, -p, --tokens or -i" ]
}

@test "a grammar too ambiguous to follow stops the reply with one line, exit 1 (its readings bounded)" {
	# the stacks of this one multiply with each letter and '=' (fuzz_grammar
	# found it taking 4 GB); the mask of 151k tokens passes the bound soon
	printf '%s\n' 'root ::= (expr "=" ws term "\n")+' 'expr ::= term ([-+*/] ws term)*' \
		'term ::= [a-z]+ ws' 'ws ::= | expr "=" ws term{2,20}' >"$T/amb.gbnf"
	run -1 --separate-stderr llm-run -m "$M" -t 1 --temp 1 --seed 2 -n 200 --grammar-file "$T/amb.gbnf" -p Q
	[ "$stderr" = "llm-run: $M: llm_seq_sample: the grammar is too ambiguous to follow: the text so far reads in over 65536 ways, or they take over 4194304 frames" ]
}

# serve [options]: llm-serve on the model (common-setup.bash's start_server).
serve() { start_server -m "$M" "$@"; }

@test "llm-serve: response_format json_schema, json_object, grammar and json_schema hold the content" {
	serve
	for seed in 1 2 3; do
		body=$(jq -nc --argjson s "$schema" --argjson seed "$seed" '{messages: [{role: "user", content: "Hi"}],
			temperature: 1, seed: $seed, max_tokens: 300,
			response_format: {type: "json_schema", json_schema: {name: "p", schema: $s}}}')
		run -0 post /v1/chat/completions "$body"
		[ "${lines[-1]}" = 200 ]
		jq -r '.choices[0].message.content' <<<"${lines[0]}" >"$T/content"
		jq -e "$follows" "$T/content" || { cat "$T/content"; false; }
		[ "$(jq -r '.choices[0].finish_reason' <<<"${lines[0]}")" = stop ]
	done
	# any object: its strings are unbounded, so a reply may end at max_tokens;
	# those that end on their own parse
	stopped=0
	for seed in 1 2 3 4 5 6; do
		run -0 post /v1/chat/completions '{"messages": [{"role": "user", "content": "Hi"}], "temperature": 1,
			"seed": '$seed', "max_tokens": 200, "response_format": {"type": "json_object"}}'
		jq -r '.choices[0].message.content' <<<"${lines[0]}" >"$T/content"
		[ "$(head -c 1 "$T/content")" = "{" ]
		if [ "$(jq -r '.choices[0].finish_reason' <<<"${lines[0]}")" = stop ]; then
			jq -e 'type == "object"' "$T/content"
			stopped=$((stopped + 1))
		fi
	done
	[ "$stopped" -gt 0 ]
	run -0 post /v1/completions '{"prompt": "Q", "temperature": 1, "seed": 2, "max_tokens": 40,
		"grammar": "root ::= (\"yes\" | \"no\") [0-9]{2}"}'
	[[ "$(jq -r '.choices[0].text' <<<"${lines[0]}")" =~ ^(yes|no)[0-9]{2}$ ]]
	run -0 post /v1/completions '{"prompt": "Q", "temperature": 1, "seed": 2, "max_tokens": 60,
		"json_schema": {"type": "array", "items": {"type": "boolean"}, "maxItems": 3}}'
	jq -r '.choices[0].text' <<<"${lines[0]}" | jq -e 'type == "array" and length <= 3 and all(type == "boolean")'
}

@test "llm-serve: a bad grammar or schema is a 400 with OpenAI's error naming what is wrong" {
	serve
	run -0 post /v1/chat/completions '{"messages": [{"role": "user", "content": "Hi"}],
		"response_format": {"type": "json_schema", "json_schema": {"schema": {"type": "string", "pattern": "a"}}}}'
	[ "${lines[-1]}" = 400 ]
	[ "$(jq -r .error.message <<<"${lines[0]}")" = "'response_format.json_schema.schema': /: 'pattern' is not supported" ]
	[ "$(jq -r .error.type <<<"${lines[0]}")" = invalid_request_error ]
	run -0 post /v1/completions '{"prompt": "Q", "grammar": "root ::= \"a\" (b"}'
	[ "${lines[-1]}" = 400 ]
	[ "$(jq -r .error.message <<<"${lines[0]}")" = "'grammar': line 1, column 14: '(' is not closed" ]
	run -0 post /v1/completions '{"prompt": "Q", "response_format": {"type": "xml"}}'
	[ "${lines[-1]}" = 400 ]
	[ "$(jq -r .error.message <<<"${lines[0]}")" = "'response_format.type' must be 'text', 'json_object' or 'json_schema', not 'xml'" ]
	run -0 post /v1/completions '{"prompt": "Q", "grammar": "root ::= \"a\"", "json_schema": {}}'
	[ "${lines[-1]}" = 400 ]
}
