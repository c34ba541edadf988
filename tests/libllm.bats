#!/usr/bin/env bats
# libllm, the public C API (include/llm.h, llm(3)): tests/tools/apicheck
# on a compiled model (misuse, state files, threads), its logits against
# llm-run's; tests/tools/embedcheck's embeddings against refmodel --hidden; make install into a temporary prefix, the example of
# share/doc/llm/examples/ built there through pkg-config (shared and
# static) and run; make uninstall removes exactly what install wrote.

bats_require_minimum_version 1.5.0

setup_file() {
	load test_helper/common-setup
	# f32 activations on every host: refmodel's products, without --bf16-activations
	tiny_setup_file "--max-context 256 --prefill-chunk 16 --activations f32"
}

setup() {
	load test_helper/common-setup
	tiny_setup
}

@test "the API on a model: every misuse gets its status and a message; state files; threads; llm-run's logits bit for bit (issue 43)" {
	p=$(seq -s, 5 23)
	echo "not a model" >"$T/text"
	run -0 apicheck "$M" "$T/text" "$T" "$T/api.f32" "$p"
	echo "$output" | tail -1 >&3
	refute_output --partial FAIL
	assert_line --regexp '^apicheck: [0-9]+ passed, 0 failed$'
	# the prompt's logits and 4 greedy steps: llm-run's
	llm-run -m "$M" -t 2 --tokens "$p" -n 4 --logits "$T/run.f32" >/dev/null
	cmp "$T/api.f32" "$T/run.f32"
}

@test "llm_embed: the hidden size; the last token's and the mean final hidden state are refmodel's within 1e-4, over several prefill chunks too; normalized to unit norm (issue 59)" {
	CK=$BATS_FILE_TMPDIR/ck
	d=$(jq .hidden_size "$CK/config.json")
	# 3 tokens (one chunk), 40 (chunks of 16, 16 and 8)
	for p in 5,6,7 "$(seq -s, 100 139)"; do
		run -0 --separate-stderr embedcheck -v -o "$T/last.f32" "$M" "$p"
		[[ "$output" == "dim $d norm "* ]]
		[ "$(stat -c %s "$T/last.f32")" -eq $((d * 4)) ]
		refmodel --hidden --tokens "$p" -o "$T/ref-last.f32" "$CK"
		run -0 cmpf32 -a 1e-4 "$T/ref-last.f32" "$T/last.f32"
		echo "last of $p: $output" >&3
		embedcheck -m -o "$T/mean.f32" "$M" "$p"
		refmodel --hidden --mean --tokens "$p" -o "$T/ref-mean.f32" "$CK"
		run -0 cmpf32 -a 1e-4 "$T/ref-mean.f32" "$T/mean.f32"
		# the poolings differ: the comparisons can fail
		run ! cmpf32 -a 1e-4 "$T/ref-last.f32" "$T/mean.f32"
		run ! cmpf32 -a 1e-4 "$T/ref-mean.f32" "$T/last.f32"
		# normalized: unit norm, and a norm that was not 1 before
		for f in "" -m; do
			run -0 embedcheck -n $f "$M" "$p"
			awk -v n="${output##* norm }" 'BEGIN { exit !(n - 1 < 1e-5 && 1 - n < 1e-5) }'
			run -0 embedcheck $f "$M" "$p"
			awk -v n="${output##* norm }" 'BEGIN { exit !(n - 1 > 1e-3 || 1 - n > 1e-3) }'
		done
	done
	# the 40 tokens went through the phase embed a chunk at a time
	run -0 --separate-stderr embedcheck -v "$M" "$(seq -s, 100 139)"
	[ "$(grep -o 'embed pos [0-9]* n_tokens [0-9]*' <<<"$stderr" | tr '\n' ,)" = \
		"embed pos 0 n_tokens 16,embed pos 16 n_tokens 16,embed pos 32 n_tokens 8," ]
}

@test "llm_embed on a model built before the phase embed: LLM_ERR_UNSUPPORTED, the model still runs; an empty or NULL input: LLM_ERR_ARG (issue 59)" {
	# the bundle as a build directory, its model.json without the phase
	mkdir "$T/old"
	tar -xf "$M" -C "$T/old"
	perl -0pi -e 's/,\n *\{\n *"name": "embed",\n *"entry": .*?\n    \}//s' "$T/old/model.json"
	[ "$(jq -c '[.phases[].name]' "$T/old/model.json")" = '["prefill","prefill_kv","decode"]' ]
	run -1 --separate-stderr embedcheck "$T/old" 5,6,7
	[ "$stderr" = "embedcheck: LLM_ERR_UNSUPPORTED: $T/old: no phase 'embed': the model was compiled before embeddings existed; compile it again" ]
	run -0 llm-run -m "$T/old" -t 2 --tokens 5,6,7 -n 2
	run -1 --separate-stderr embedcheck "$M" -
	[ "$stderr" = "embedcheck: LLM_ERR_ARG: llm_embed: no tokens" ]
	run -1 --separate-stderr embedcheck "$M" NULL
	[ "$stderr" = "embedcheck: LLM_ERR_ARG: llm_embed: ids is NULL" ]
}

# install PREFIX [DESTDIR]
install_to() {
	make -s --no-print-directory -C "$PROJECT_ROOT" install PREFIX="$1" ${2:+DESTDIR="$2"} >&2
}

@test "make install: llm.h, libllm.a, libllm.so with its soname, llm.pc, llm(3) and a page per function; the example builds with pkg-config and chats; uninstall removes exactly those (issue 43)" {
	P=$T/prefix
	install_to "$P"
	for f in include/llm.h lib/libllm.a lib/libllm.so lib/pkgconfig/llm.pc share/man/man3/llm.3 \
		share/doc/llm/examples/chat.c bin/llm-run; do
		[ -e "$P/$f" ]
	done
	# a page for every function of llm.h, llm(3) itself
	sed -n 's/^[a-z].*[ *]\(llm_[a-z0-9_]*\)(.*/\1/p' "$PROJECT_ROOT/include/llm.h" | sort >"$T/declared"
	for f in $(cat "$T/declared"); do
		[ "$(cat "$P/share/man/man3/$f.3")" = '.so man3/llm.3' ] || { echo "no page for $f" >&2; false; }
	done
	(cd "$P/share/man" && mandoc -T utf8 man3/llm_token_piece.3) | col -bx | grep -q 'LLM_PIECE_FIRST'
	[ "$(readlink "$P/lib/libllm.so")" = libllm.so.0 ]
	objdump -p "$P/lib/libllm.so" | grep -q 'SONAME *libllm.so.0$'
	# the shared library exports llm.h's names and nothing else
	nm -D --defined-only "$P/lib/libllm.so" | awk '$2 == "T" { sub(/@.*/, "", $3); print $3 }' | sort >"$T/exported"
	diff "$T/declared" "$T/exported"
	export PKG_CONFIG_PATH=$P/lib/pkgconfig
	llm-run --version | grep -q "(llm) $(pkg-config --modversion llm),"
	# shared, with the prefix's run path; and static
	cc -Wall -Wextra -Werror -o "$T/chat" "$P/share/doc/llm/examples/chat.c" $(pkg-config --cflags --libs llm) \
		-Wl,-rpath,"$P/lib"
	cc -Wall -Wextra -Werror -o "$T/chat-static" "$P/share/doc/llm/examples/chat.c" \
		$(pkg-config --cflags llm) "$P/lib/libllm.a" $(pkg-config --static --libs-only-l llm | sed 's/-lllm//')
	ldd "$T/chat" | grep -q "$P/lib/libllm.so.0"
	! ldd "$T/chat-static" | grep -q libllm
	# one turn of 24 tokens: llm-run's chat reply (greedy)
	run -0 --separate-stderr llm-run -m "$M" -t 2 -i -n 24 --json <<<'Hello there'
	jq -j '.text + "\n"' <<<"$output" >"$T/want"
	"$T/chat" "$M" 24 <<<'Hello there' >"$T/out1"
	"$T/chat-static" "$M" 24 <<<'Hello there' >"$T/out2"
	cmp "$T/want" "$T/out1"
	cmp "$T/want" "$T/out2"
	# three turns, the later prompts evaluated from the prefix the
	# sequence shares with them: llm-run's chat replies
	printf '%s\n' 'Hello there' 'What did I say?' 'Once more.' >"$T/in3"
	llm-run -m "$M" -t 2 -i -n 8 --json <"$T/in3" 2>/dev/null | jq -j '.text + "\n"' >"$T/want3"
	"$T/chat" "$M" 8 <"$T/in3" >"$T/out3"
	cmp "$T/want3" "$T/out3"
	# a missing model: one line, exit 1
	run -1 --separate-stderr "$T/chat" "$T/none.llm"
	[ "$stderr" = "chat: $T/none.llm: No such file or directory" ]
	# uninstall leaves only folders
	make -s --no-print-directory -C "$PROJECT_ROOT" uninstall PREFIX="$P" >&2
	[ -z "$(find "$P" ! -type d)" ]
	# DESTDIR: the files under it, the prefix in llm.pc
	install_to /opt/llm "$T/stage"
	grep -qx 'prefix=/opt/llm' "$T/stage/opt/llm/lib/pkgconfig/llm.pc"
	make -s --no-print-directory -C "$PROJECT_ROOT" uninstall PREFIX=/opt/llm DESTDIR="$T/stage" >&2
	[ -z "$(find "$T/stage" ! -type d)" ]
}

@test "uninstalled: build/pic has the soname's link and llm-uninstalled.pc, which pkg-config takes; the example builds from the tree and chats as llm-run does (issue 65)" {
	B=$PROJECT_ROOT/build/pic
	[ "$(readlink "$B/libllm.so.0")" = "libllm.so.$(llm-run --version | sed -n 's/.*(llm) \([0-9.]*\),.*/\1/p')" ]
	[ "$(readlink "$B/libllm.so")" = libllm.so.0 ]
	export PKG_CONFIG_PATH=$B
	[ "$(pkg-config --modversion llm)" = "$(sed -n 's/^Version: //p' "$B/llm-uninstalled.pc")" ]
	cc -Wall -Wextra -Werror -o "$T/chat" "$PROJECT_ROOT/share/doc/llm/examples/chat.c" $(pkg-config --cflags --libs llm)
	ldd "$T/chat" | grep -q "$B/libllm.so.0"
	printf '%s\n' 'Hello there' 'What did I say?' >"$T/in"
	llm-run -m "$M" -t 2 -i -n 12 --json <"$T/in" 2>/dev/null | jq -j '.text + "\n"' >"$T/want"
	"$T/chat" "$M" 12 <"$T/in" >"$T/out"
	cmp "$T/want" "$T/out"
}
