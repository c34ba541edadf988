#!/usr/bin/env bats
# llm-tune: the tuning table's entry for this machine, measured on a build
# of pipelines/model.mk (a tiny random Qwen2 checkpoint, Q4_0 with int8
# activations: its decode kernels name the prefetch distance).  The
# figures of so small a model are noise; what is checked is the
# mechanism: candidates lowered and run, the best written where llm-lower
# reads it, the build untouched.

bats_require_minimum_version 1.5.0

setup_file() {
	load test_helper/common-setup
	_common_setup
	tiny_build "$BATS_FILE_TMPDIR" q "--dtype q4_0 --max-context 64 --prefill-chunk 16"
}

setup() {
	load test_helper/common-setup
	_common_setup
	Q=$BATS_FILE_TMPDIR/q
	T=$BATS_TEST_TMPDIR
}

@test "llm-tune usage equals the man page SYNOPSIS; --help and --version" {
	[ "$(usage_of llm-tune)" = "$(synopsis_of llm-tune)" ]
	run -0 llm-tune --help
	assert_line --partial "--values list"
	run -0 llm-tune --version
	assert_output --regexp "^llm-tune .*0\."
}

@test "llm-tune measures the candidates and writes this CPU's entry, which llm-lower then takes; the build is untouched" {
	sum=$(cat "$Q/model.llm" "$Q"/obj/*/*.o | md5sum)
	cd "$T"
	run -0 --separate-stderr llm-tune -b 600 -r 1 -n 4 --values 1024,8192 -o t.json "$Q"
	[ -z "$output" ]
	cpu=$(jq -r .cpu "$Q/target.json")
	[[ "$stderr" == *"llm-tune: $Q for $cpu: parameters decode.prefetch_bytes."* ]]
	[[ "$stderr" == *"decode.prefetch_bytes.g128=8192: tg4 "* ]]
	[[ "$stderr" == *"wrote $cpu's entry to t.json"* ]]
	# Q4_0 has 4-bit codes (128-byte groups), Q8_0 fallbacks 256-byte
	# ones: every prefetch distance the kernels name has a measured value
	# (prefill.int8_tiles, the target's, is not measured)
	for p in $(cat "$Q"/parts/*/*.mlir | grep -o 'llm.tune = "decode[^"]*"' | sed 's/.*"\(.*\)"/\1/' | sort -u); do
		v=$(jq --arg c "$cpu" --arg p "$p" '.cpus[$c].params[$p]' t.json)
		[ "$v" = 1024 ] || [ "$v" = 8192 ]
	done
	jq -e --arg c "$cpu" '.cpus[$c].measured | test("llm-tune on model.safetensors.*t/s by value: 1024:[0-9.]+ 8192:")' t.json
	# the other entries are the table's
	[ "$(jq -c .cpus.generic "$PROJECT_ROOT/share/llm/tuning.json")" = "$(jq -c .cpus.generic t.json)" ]
	# llm-lower takes the new entry
	k=$(grep -l 'llm.tune = ' "$Q"/parts/decode/k*.mlir | head -1)
	run -0 --separate-stderr llm-lower -v --tuning t.json -o k.o "$k"
	[[ "$stderr" == *"$cpu's entry of t.json"* ]]
	# and the build is as it was
	[ "$(cat "$Q/model.llm" "$Q"/obj/*/*.o | md5sum)" = "$sum" ]
	# a second run starts from t.json and replaces the entry in place
	run -0 llm-tune -b 600 -r 1 -n 4 --values 4096 -o t.json "$Q"
	[ "$(jq --arg c "$cpu" '[.cpus[$c].params[]] | unique' -c t.json)" = "[4096]" ]
}

@test "llm-tune refuses bad arguments, a directory that is no build, a model with nothing to tune and a budget too small, writing nothing" {
	cd "$T"
	run -2 llm-tune -b x "$Q"
	assert_line --index 0 "llm-tune: -b: want a positive integer, not 'x'"
	run -2 llm-tune --values 1k "$Q"
	assert_line --index 0 "llm-tune: --values: '1k' is not a count of bytes"
	run -2 llm-tune --bogus "$Q"
	assert_line --index 0 "llm-tune: unknown option '--bogus'"
	run -2 llm-tune
	assert_line --index 0 --partial "usage: llm-tune"
	run -1 llm-tune -o t.json "$T"
	assert_output "llm-tune: $T: no model.json: give a build directory of pipelines/model.mk"
	# a bf16 model has no int8 products, hence no tunable constant
	make -s -f "$PROJECT_ROOT/pipelines/model.mk" LLM="${LLM_BIN:-$PROJECT_ROOT/bin}/" \
		MODEL="$BATS_FILE_TMPDIR/ck" OUT="$T/b" IMPORT_FLAGS="--max-context 64 --prefill-chunk 16" >&2
	run -1 llm-tune -o t.json "$T/b"
	assert_output "llm-tune: $T/b: its kernels name no tunable parameter (a model without int8 products: nothing to tune)"
	[ ! -e t.json ]
	# the first candidate sizes the rest: past the budget, they are not tried
	mkdir tmp
	TMPDIR=$T/tmp run -0 --separate-stderr llm-tune -b 1 -r 1 -n 4 --values 1024,8192 -o t.json "$Q"
	[[ "$stderr" == *"=8192 not tried: the budget of 1 s would be passed"* ]]
	# the parameter measured second finds the budget spent
	[[ "$stderr" == *"not measured (the budget of 1 s is spent): it keeps the table's value"* ]]
	# the first parameter took the one value tried, the second kept the table's
	cpu=$(jq -r .cpu "$Q/target.json")
	[ "$(jq --arg c "$cpu" '.cpus[$c].params."decode.prefetch_bytes.g128"' t.json)" = 1024 ]
	[ "$(jq --arg c "$cpu" '.cpus[$c].params."decode.prefetch_bytes.g256"' t.json)" = \
		"$(jq --arg c "$cpu" '.cpus[$c].params."decode.prefetch_bytes.g256"' "$PROJECT_ROOT/share/llm/tuning.json")" ]
	# its scratch bundles are gone
	[ -z "$(ls -A tmp)" ]
}
