#!/usr/bin/env bats
# llm-verify-partition: partition.json + the original phases + the parts ->
# exit 0 (valid), 1 (violations), 2 (trouble) and a JSON report.  The sets
# come from llm-split on a tiny 3-layer model; the broken ones are made
# from a good one by editing partition.json, a kernel or the glue, the way
# a buggy splitter or a stale file would.

bats_require_minimum_version 1.5.0

setup() {
	load test_helper/common-setup
	_common_setup
	T=$BATS_TEST_TMPDIR
}

# parts: a build directory with a layer split in out/parts, made once per
# file; set_copy gives each test a private copy to damage.
parts() {
	local d="$BATS_FILE_TMPDIR/m"
	if [ ! -e "$d/out/parts/partition.json" ]; then
		mkmodel --preset tiny --family qwen2 --dtype f32 --seed 1 -L 3 -o "$d/ck" >&2
		llm-import -o "$d/out" --max-context 64 --prefill-chunk 16 "$d/ck" >&2
		llm-split "$d/out/model.json" >&2
	fi
	echo "$d/out"
}

set_copy() {
	cp -r "$(parts)" "$T/out"
	P=$T/out/parts
	J=$P/partition.json
}

# edit_json FILTER: apply a jq filter to partition.json in place.
edit_json() {
	jq "$1" "$J" >"$T/j" && mv "$T/j" "$J"
}

# layer_kernel: the file of decode's layer kernel.
layer_kernel() {
	echo "$P/$(jq -r '.phases[2].partitions[1].file' "$J")"
}

# broken KIND...: the set is invalid, and the report has a violation of
# each KIND.
broken() {
	run -1 --separate-stderr llm-verify-partition --report "$T/r.json" "$J"
	assert_regex "$stderr" "invalid: (1 violation|[02-9][0-9]* violations|1[0-9]+ violations)$"
	run -0 jq -r '.valid, (.violations | map(.kind) | unique | join(" "))' "$T/r.json"
	assert_line --index 0 false
	for k in "$@"; do
		assert_regex "${lines[1]}" "(^| )$k( |$)"
	done
}

@test "llm-verify-partition -h prints the usage, which is the man page synopsis" {
	run -0 llm-verify-partition -h
	assert_output --partial "usage: llm-verify-partition"
	[ "$(usage_of llm-verify-partition)" = "$(synopsis_of llm-verify-partition)" ]
}

@test "llm-verify-partition with a bad option or no operand is a usage error (2)" {
	run -2 llm-verify-partition -Z x.json
	assert_line --regexp '^usage: llm-verify-partition '
	run -2 llm-verify-partition
	run -2 llm-verify-partition a.json b.json
}

@test "llm-split output piped to llm-verify-partition passes, for every strategy" {
	out=$(parts)
	for s in none layer stage; do
		llm-split -s $s -o "$T/$s" "$out/model.json" >/dev/null
		run -0 --separate-stderr llm-verify-partition "$T/$s/partition.json"
		assert_output --regexp "^$T/$s/partition.json: valid: 4 phases, [0-9]+ partitions, [0-9]+ calls, 1676 ops$"
		[ -z "$stderr" ]
	done
	run -0 llm-verify-partition -q "$T/layer/partition.json"
	[ -z "$output" ]
}

@test "the report of a valid set has its counts and no violations" {
	out=$(parts)
	run -0 llm-verify-partition --report "$T/r.json" "$out/parts/partition.json"
	run -0 jq -c '[.format, .valid, .counts.phases, .counts.partitions, .counts.calls, .counts.ops,
		.counts.partition_ops + .counts.glue_ops + .counts.remat_ops, .counts.kernel_files, (.violations | length)]' "$T/r.json"
	assert_output '["llm-partition-report/1",true,4,20,20,1676,1676,7,0]'
}

@test "a kernel that lost an op is caught" {
	set_copy
	# The first cache write-back of the layer kernel: the file still
	# parses and verifies, but layer 0's keys would never reach the cache.
	sed -i '0,/materialize_in_destination/{/materialize_in_destination/d}' "$(layer_kernel)"
	broken missing-op hash-mismatch
	run -0 jq -r '[.violations[] | select(.kind == "missing-op") | .phase] | unique | join(" ")' "$T/r.json"
	assert_output "decode"
}

@test "a kernel with an op twice is caught" {
	set_copy
	sed -i '0,/materialize_in_destination/{/materialize_in_destination/p}' "$(layer_kernel)"
	broken duplicate-op
}

@test "an op left out of partition.json is caught" {
	set_copy
	edit_json '.phases[2].partitions[1].ops |= del(.[3])'
	broken missing-op kernel-mismatch
}

@test "an op claimed by two partitions is caught" {
	set_copy
	edit_json '.phases[2].partitions[2].ops += [.phases[2].partitions[1].ops[-1]]'
	broken duplicate-op order
}

@test "swapped partitions are caught" {
	set_copy
	edit_json '.phases[2].partitions |= [.[0], .[2], .[1], .[3], .[4]]'
	broken order producer-after-consumer input-mismatch
}

@test "a missing crossing value is caught" {
	set_copy
	# The residual stream that layer 1 reads from layer 0.
	edit_json '.phases[2].partitions[2].inputs |= map(select(.op != .op or .type != "tensor<1x64xf32>"))'
	broken undeclared-input input-mismatch
	run -0 jq -r '.violations[] | select(.kind == "undeclared-input") | .message' "$T/r.json"
	assert_output --regexp '^op [0-9]+ result 0 crosses the bounds of partition 2 but is not one of its inputs$'
}

@test "an output that partition.json forgets is caught" {
	set_copy
	edit_json '.phases[2].partitions[0].outputs |= .[1:]'
	broken undeclared-output output-mismatch
}

@test "a glue call that passes the wrong view is caught" {
	set_copy
	# Swap the RoPE cos and sin tables (both memref<64x8xf32>, arguments 9
	# and 10) in the first layer call of decode.
	g=$P/decode/glue.mlir
	n=$(grep -n 'call @llm_decode_k' "$g" | sed -n 2p | cut -d: -f1)
	args=$(sed -n "${n}p" "$g" | sed 's/^[^(]*(\([^)]*\)).*/\1/' | tr -d ' ')
	cos=$(echo "$args" | cut -d, -f9)
	sin=$(echo "$args" | cut -d, -f10)
	sed -i "${n}s/$cos, $sin,/$sin, $cos,/" "$g"
	! cmp -s "$g" "$(parts)/parts/decode/glue.mlir"
	broken input-mismatch
}

@test "a glue whose entry lost llvm.emit_c_interface is caught" {
	set_copy
	sed -i 's/\(func.func @llm_prefill(.*)\) attributes {llvm.emit_c_interface}/\1/' "$P/prefill/glue.mlir"
	broken glue-signature
	run -0 jq -r '.violations[0].message' "$T/r.json"
	assert_output "'@llm_prefill' of the glue differs from the original in 'llvm.emit_c_interface'"
}

@test "a glue without the fingerprint function is caught" {
	set_copy
	sed -i '/func.func @llm_decode_fingerprint/,/^  }/d' "$P/decode/glue.mlir"
	broken glue-function
}

@test "a part that does not parse is a violation" {
	set_copy
	echo garbage >>"$(layer_kernel)"
	broken bad-part
}

@test "a malformed, missing or foreign partition.json is trouble (2) and writes no report" {
	set_copy
	echo '{' >"$T/bad.json"
	run -2 --separate-stderr llm-verify-partition --report "$T/r.json" "$T/bad.json"
	assert_regex "$stderr" "^llm-verify-partition: $T/bad.json:"
	[ ! -e "$T/r.json" ]
	run -2 llm-verify-partition "$T/none.json"
	edit_json '.format = "llm-partition/2"'
	run -2 --separate-stderr llm-verify-partition "$J"
	assert_regex "$stderr" "unsupported version 'llm-partition/2'"
	edit_json '.format = "llm-model/1"'
	run -2 llm-verify-partition "$J"
}

@test "a missing original phase is trouble (2)" {
	set_copy
	rm "$T/out/prefill.mlir"
	run -2 --separate-stderr llm-verify-partition "$J"
	assert_regex "$stderr" "^llm-verify-partition: $P/../prefill.mlir: No such file or directory$"
}

@test "the kernel index is checked: a dropped, renamed, rehashed, missing or outside kernel entry (issue 16)" {
	set_copy
	# a dropped entry: its partitions call a kernel the index lacks
	edit_json 'del(.kernels[0])'
	broken index-mismatch
	assert_regex "$(jq -r '.violations[].message' "$T/r.json")" "is called but not in 'kernels'"
	set_copy
	edit_json '.kernels[0].hash = "0123456789abcdef"'
	broken index-mismatch
	set_copy
	edit_json '.kernels[0].name = "llm_decode_kffff"'
	broken index-mismatch
	set_copy
	edit_json '.kernels[0].file = "decode/nothere.mlir"'
	broken index-mismatch
	set_copy
	edit_json '.kernels[0].file = "../../etc/passwd"'
	broken bad-path
	set_copy
	edit_json '.kernels[0].partitions += 1'
	broken index-mismatch
	set_copy
	edit_json '.kernels += [.kernels[0]]'
	broken index-mismatch
	# a partition's file outside the parts directory
	set_copy
	edit_json '.phases[2].partitions[1].file = "../../etc/passwd"'
	broken bad-path
}

@test "the model of the partitions is checked: moved elsewhere, or another model's (issue 16)" {
	set_copy
	cp -r "$T/out" "$T/other"
	edit_json '.model = "../../other/model.json"'
	broken model-mismatch
	set_copy
	edit_json '.model = "../missing.json"'
	broken model-mismatch
}
