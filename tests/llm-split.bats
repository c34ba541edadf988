#!/usr/bin/env bats
# llm-split: model.json and the phase MLIR -> a parts directory (kernels,
# glue, partition.json, parts.mk).  The model is a tiny qwen2 checkpoint
# from mkmodel with 3 decoder layers (so that layer kernels have something
# to share), imported with a small context; everything llm-split writes
# is checked with mlir-opt-22, jq and, for the numbers, by building and
# running the partitioned and unpartitioned models.

bats_require_minimum_version 1.5.0

setup() {
	load test_helper/common-setup
	_common_setup
	T=$BATS_TEST_TMPDIR
	MLIR_OPT=$LLVM_BINDIR/mlir-opt
}

# model [LAYERS]: a build directory with model.json and the phases of a
# tiny model with LAYERS (default 3) layers, made once per file.
model() {
	local n=${1:-3} d="$BATS_FILE_TMPDIR/m${1:-3}"
	if [ ! -e "$d/out/model.json" ]; then
		mkmodel --preset tiny --family qwen2 --dtype f32 --seed 1 -L "$n" -o "$d/ck" >&2
		llm-import -o "$d/out" --max-context 64 --prefill-chunk 16 "$d/ck" >&2
	fi
	echo "$d/out"
}

# model_copy: a private copy of model's build directory, to damage.
model_copy() {
	cp -r "$(model)" "$T/out"
	echo "$T/out"
}

# kernels DIR: the kernel files under a parts directory, sorted.
kernels() {
	(cd "$1" && ls */k*.mlir | sort)
}

@test "llm-split -h prints the usage, which is the man page synopsis" {
	run -0 llm-split -h
	assert_output --partial "usage: llm-split"
	[ "$(usage_of llm-split)" = "$(synopsis_of llm-split)" ]
}

@test "llm-split with a bad option, a bad strategy or no operand is a usage error" {
	run -2 llm-split -Z x.json
	assert_line --regexp '^usage: llm-split '
	run -2 llm-split -s layers x.json
	assert_line --index 0 "llm-split: unknown strategy 'layers' (none, layer or stage)"
	run -2 llm-split
	run -2 llm-split a.json b.json
}

@test "llm-split by layer makes a partition per layer and one kernel for all layers" {
	out=$(model)
	run -0 --separate-stderr llm-split -o "$T/p" "$out/model.json"
	assert_line "prefill: 417 ops, 5 partitions, 3 kernels"
	assert_line "prefill_kv: 417 ops, 5 partitions, 3 kernels"
	assert_line "decode: 432 ops, 5 partitions, 3 kernels"
	assert_line "embed: 410 ops, 5 partitions, 3 kernels"
	assert_line "20 partitions, 7 distinct kernels"
	[ -z "$stderr" ]
	# The three layers of each phase call the same kernel; the embedding
	# and the head have their own.
	run -0 jq -c '[.phases[] | [.partitions[] | select(.layer >= 0) | .kernel] | unique | length]' "$T/p/partition.json"
	assert_output "[1,1,1,1]"
	run -0 jq -c '[.phases[] | [.partitions[] | .layer]]' "$T/p/partition.json"
	assert_output "[[-1,0,1,2,-2],[-1,0,1,2,-2],[-1,0,1,2,-2],[-1,0,1,2,-2]]"
	[ "$(kernels "$T/p" | wc -l)" -eq 7 ]
}

@test "prefill and prefill_kv share their kernels, embed all but its head, decode has its own" {
	out=$(model)
	llm-split -o "$T/p" "$out/model.json" >/dev/null
	run -0 jq -c '[.phases[] | [.partitions[].kernel]] | [.[0] == .[1], (.[0] - .[2]) == .[0], .[3][:4] == .[0][:4], .[3][4] != .[0][4]]' "$T/p/partition.json"
	assert_output "[true,true,true,true]"
	run -0 jq -r '.kernels[] | "\(.kind) \(.partitions)"' "$T/p/partition.json"
	assert_output "$(printf 'prefill 3\nprefill 9\nprefill 2\ndecode 1\ndecode 3\ndecode 1\nprefill 1')"
}

@test "-s stage cuts each layer into its attention and MLP blocks" {
	out=$(model)
	run -0 llm-split -s stage -o "$T/p" "$out/model.json"
	assert_line "decode: 432 ops, 8 partitions, 4 kernels"
	assert_line "32 partitions, 9 distinct kernels"
	run -0 jq -r '[.phases[2].partitions[] | "\(.layer):\(.stage)"] | join(" ")' "$T/p/partition.json"
	assert_output "-1:embed 0:attn 0:mlp 1:attn 1:mlp 2:attn 2:mlp -2:head"
}

@test "-s none makes one partition of each phase" {
	out=$(model)
	run -0 llm-split -s none -o "$T/p" "$out/model.json"
	assert_line "decode: 432 ops, 1 partitions, 1 kernels"
	assert_line "4 partitions, 3 distinct kernels"
	run -0 jq -c '[.strategy, .phases[2].partitions[0].layer, (.phases[2].glue_ops | length)]' "$T/p/partition.json"
	assert_output '["none",null,1]'
}

@test "every module llm-split writes parses and verifies in mlir-opt-22" {
	out=$(model)
	for s in none layer stage; do
		llm-split -s $s -o "$T/$s" "$out/model.json" >/dev/null
		for f in "$T/$s"/*/*.mlir; do
			run -0 "$MLIR_OPT" --verify-diagnostics "$f" -o /dev/null
		done
	done
}

@test "partition.json accounts for every op of each phase exactly once" {
	out=$(model)
	llm-split -o "$T/p" "$out/model.json" >/dev/null
	run -0 jq -c '[.phases[] | ([.partitions[].ops[]] + .glue_ops + .remat_ops | sort) == [range(.ops)]]' "$T/p/partition.json"
	assert_output "[true,true,true,true]"
	run -0 jq -r '.format, .phases[2].glue' "$T/p/partition.json"
	assert_output "$(printf 'llm-partition/1\ndecode/glue.mlir')"
	# Paths are relative to the parts directory.
	[ "$(cd "$T/p" && realpath "$(jq -r .model partition.json)")" = "$(realpath "$out/model.json")" ]
	[ "$(cd "$T/p" && realpath "$(jq -r '.phases[2].source' partition.json)")" = "$(realpath "$out/decode.mlir")" ]
}

@test "kernels take the weight and cache views as memrefs and carry no placement attributes" {
	out=$(model)
	llm-split -o "$T/p" "$out/model.json" >/dev/null
	k=$T/p/$(jq -r '.phases[2].partitions[1].file' "$T/p/partition.json")
	run -1 grep -q 'memref.view' "$k"
	run -1 grep -e 'llm.id' -e 'llm.layer' -e 'llm.stage' "$k"
	run -0 grep -c 'llm.sched' "$k"
	[ "$output" -gt 20 ]
	# The KV cache is updated in place inside the kernel.
	run -0 grep -c 'bufferization.materialize_in_destination' "$k"
	assert_output 2
	# The glue views the cache: keys transposed [KVH, 2, HD/2, P], values
	# [KVH, P, HD], P taken at run time from the size of the %kv buffer.
	run -0 grep -c 'memref<2x2x8x?xf32>' "$T/p/decode/glue.mlir"
	[ "$output" -gt 0 ]
	run -0 grep -c 'memref<2x?x16xf32>' "$T/p/decode/glue.mlir"
	[ "$output" -gt 0 ]
	run -0 grep -c '^module attributes {llm.kind = "decode"} {$' "$k"
	assert_output 1
}

@test "the glue keeps the phase's signature, attributes and fingerprint function" {
	out=$(model)
	llm-split -o "$T/p" "$out/model.json" >/dev/null
	for ph in prefill prefill_kv decode embed; do
		e=$(jq -r --arg p "$ph" '.phases[] | select(.name == $p) | .entry' "$out/model.json")
		run -0 "$MLIR_OPT" "$out/$ph.mlir"
		want=$(printf '%s\n' "$output" | grep -e "func.func @$e(" -e "func.func @${e}_fingerprint(")
		[ "$(printf '%s\n' "$want" | wc -l)" -eq 2 ]
		run -0 "$MLIR_OPT" "$T/p/$ph/glue.mlir"
		[ "$(printf '%s\n' "$output" | grep -e "func.func @$e(" -e "func.func @${e}_fingerprint(")" = "$want" ]
		assert_output --partial 'module attributes {llm.kind = "glue"}'
		assert_output --partial "llvm.emit_c_interface"
	done
	run -0 grep -c 'call @llm_decode_k' "$T/p/decode/glue.mlir"
	assert_output 5
}

@test "parts.mk lists one module per kernel and per glue" {
	out=$(model)
	llm-split -o "$T/p" "$out/model.json" >/dev/null
	printf 'include %s/parts.mk\nall:\n\t@echo $(LLM_PARTS_MLIR)\n\t@echo $(LLM_PARTS_OBJ)\n' "$T/p" >"$T/m.mk"
	run -0 make -s -f "$T/m.mk"
	[ "$(echo "${lines[0]}" | tr ' ' '\n' | sort)" = "$(cd "$T/p" && ls */*.mlir | sort)" ]
	[ "${lines[1]}" = "$(echo "${lines[0]}" | sed 's/\.mlir/.o/g')" ]
	run -0 grep -cE '^	[a-z_]+/glue( \\)?$' "$T/p/parts.mk"
	assert_output 4
}

@test "kernels are named by their content, so the same layer of another model has the same file" {
	llm-split -o "$T/p3" "$(model 3)/model.json" >/dev/null
	llm-split -o "$T/p2" "$(model 2)/model.json" >/dev/null
	a=$(jq -r '.phases[2].partitions[1].file' "$T/p3/partition.json")
	b=$(jq -r '.phases[2].partitions[1].file' "$T/p2/partition.json")
	[ "$a" = "$b" ]
	cmp "$T/p3/$a" "$T/p2/$b"
}

@test "a second split rewrites nothing, and another strategy removes the old kernels" {
	out=$(model)
	llm-split -o "$T/p" "$out/model.json" >/dev/null
	touch -d '1 minute ago' "$T/p"/*/* "$T/p"/*.*
	touch "$T/mark"
	run -0 --separate-stderr llm-split -v -o "$T/p" "$out/model.json"
	assert_regex "$stderr" '\(0 files changed\)'
	[ -z "$(find "$T/p" -type f -newer "$T/mark")" ]
	llm-split -s stage -o "$T/p" "$out/model.json" >/dev/null
	[ "$(kernels "$T/p")" = "$(jq -r '.kernels[].file' "$T/p/partition.json" | sort)" ]
}

@test "a phase op without llm.layer is refused, naming the file, and nothing is written" {
	out=$(model_copy)
	sed -i '0,/llm.id = 17 : i64, llm.layer = 0 : i64, /s//llm.id = 17 : i64, /' "$out/decode.mlir"
	run -1 --separate-stderr llm-split -o "$T/p" "$out/model.json"
	[ "${#stderr_lines[@]}" -eq 1 ]
	assert_regex "$stderr" "^llm-split: $out/decode.mlir: op 'bufferization.to_tensor' \(llm.id 17, line [0-9]+\) has no llm.layer \(an i64\)$"
	[ ! -e "$T/p" ]
}

@test "a phase that does not parse is refused with its line and column" {
	out=$(model_copy)
	echo 'this is not mlir' >>"$out/prefill_kv.mlir"
	run -1 --separate-stderr llm-split -o "$T/p" "$out/model.json"
	assert_regex "$stderr" "^llm-split: $out/prefill_kv.mlir:[0-9]+:[0-9]+: error: "
	[ ! -e "$T/p/partition.json" ]
}

@test "a missing model.json or phase file is an error naming it" {
	run -1 --separate-stderr llm-split -o "$T/p" "$T/none/model.json"
	assert_regex "$stderr" "^llm-split: $T/none/model.json: "
	out=$(model_copy)
	rm "$out/decode.mlir"
	run -1 --separate-stderr llm-split -o "$T/p" "$out/model.json"
	assert_regex "$stderr" "^llm-split: $out/decode.mlir: No such file or directory$"
}

@test "a cut through an in-place cache update is refused" {
	out=$(model_copy)
	# Move layer 0's key cache insert into a stage of its own: the cache
	# tensor (a writable view of the cache) would then cross from one
	# kernel to the next, and the update would no longer be in place.
	ins=$(grep -m1 'tensor.insert_slice' "$out/decode.mlir" | sed 's/.*llm.id = \([0-9]*\).*/\1/')
	sed -i "s/{llm.id = $ins : i64, llm.layer = 0 : i64, llm.stage = \"attn\"}/{llm.id = $ins : i64, llm.layer = 0 : i64, llm.stage = \"kv\"}/" "$out/decode.mlir"
	view=$(grep -m1 'restrict writable {llm.id' "$out/decode.mlir" | sed 's/.*llm.id = \([0-9]*\).*/\1/')
	run -1 --separate-stderr llm-split -s stage -o "$T/p" "$out/model.json"
	assert_regex "$stderr" "^llm-split: $out/decode.mlir: op 'bufferization.to_tensor' \(llm.id $view, line [0-9]+\) yields a value used outside its partition that aliases a buffer from outside it"
	# By layer, the update stays in one kernel.
	run -0 llm-split -o "$T/p" "$out/model.json"
}

# The numerics of partitioned builds (bit-identical logits for none, layer
# and stage, on tiny and the 0.5B shapes) are in tests/pipeline.bats,
# through pipelines/model.mk.
