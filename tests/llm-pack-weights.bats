#!/usr/bin/env bats
# llm-pack-weights: model.json + safetensors -> weights.bin + weights.json.
# The output is checked by tests/tools/checkweights.mjs, which parses the
# safetensors, converts dtypes, computes the RoPE tables and FNV-1a on its
# own (no code shared with the packer).  Checkpoints come from mkmodel with
# a 512-token vocabulary and model.json from llm-import.

bats_require_minimum_version 1.5.0

setup() {
	load test_helper/common-setup
	_common_setup
	CHECK="$PROJECT_ROOT/tests/tools/checkweights.mjs"
	T=$BATS_TEST_TMPDIR
}

# ckpt DTYPE [FAMILY]: a tiny checkpoint (the real 151936-token
# vocabulary), made once per file; tests that damage it use ckpt_copy.
ckpt() {
	local d="$BATS_FILE_TMPDIR/ck-$1-${2:-qwen2}"
	[ -d "$d" ] || mkmodel --preset tiny --family "${2:-qwen2}" --dtype "$1" --seed 7 \
		-o "$d" >&2
	echo "$d"
}

# ckpt_copy DTYPE: a private copy of ckpt DTYPE in the test's directory.
ckpt_copy() {
	local src
	src=$(ckpt "$1")
	cp -r "$src" "$T/ck"
	echo "$T/ck"
}

# import OUT CKPT DTYPE [ARGS...]: OUT/model.json for CKPT stored as DTYPE.
import() {
	local out=$1 ck=$2 dt=$3
	shift 3
	llm-import -o "$out" --dtype "$dt" --max-context 64 --prefill-chunk 16 "$@" "$ck" >&2
}

# check OUT: the independent checker accepts OUT's weights.bin/json.
check() {
	run node "$CHECK" "$1/model.json" "$1"
	echo "$output" >&3
	assert_success
	assert_output --partial "ok: "
}

# no_output DIR: no weights.bin, weights.json or temporary left in DIR.
no_output() {
	run ls -A "$1"
	refute_output --partial weights.bin
	refute_output --partial weights.json
	refute_output --partial .tmp.
}

# flip FILE OFFSET: invert one byte of FILE in place.
flip() {
	node -e 'const fs = require("fs"), fd = fs.openSync(process.argv[1], "r+"), b = Buffer.alloc(1), o = +process.argv[2];
		fs.readSync(fd, b, 0, 1, o); b[0] ^= 0xff; fs.writeSync(fd, b, 0, 1, o);' "$1" "$2"
}

# ident FILE: inode and mtime (ns), which change when a file is rewritten.
ident() {
	stat -c '%i %y' "$1"
}

# st_edit FILE JS: rewrite the safetensors header of FILE after running the
# JavaScript statement JS on it (as `h`); the data is kept as it was.
st_edit() {
	node -e '
		const fs = require("fs"), f = process.argv[1];
		const b = fs.readFileSync(f), n = Number(b.readBigUInt64LE(0));
		const h = JSON.parse(b.subarray(8, 8 + n));
		eval(process.argv[2]);
		const s = Buffer.from(JSON.stringify(h)), l = Buffer.alloc(8);
		l.writeBigUInt64LE(BigInt(s.length));
		fs.writeFileSync(f, Buffer.concat([l, s, b.subarray(8 + n)]));
	' "$1" "$2"
}

@test "llm-pack-weights -h prints the usage, equal to the man page SYNOPSIS" {
	run llm-pack-weights -h
	assert_success
	assert_line --index 0 --regexp '^usage: llm-pack-weights '
	[ "$(usage_of llm-pack-weights)" = "$(synopsis_of llm-pack-weights)" ]
}

@test "llm-pack-weights with a bad option or no operand is a usage error" {
	run -2 llm-pack-weights -Z x.json
	assert_line --index 1 --regexp '^usage: llm-pack-weights '
	run -2 llm-pack-weights
	assert_line --index 0 --regexp '^usage: llm-pack-weights '
	run -2 llm-pack-weights a.json b.json
}

@test "an f32 checkpoint packed to f32, f16 and bf16 equals the converted source" {
	local ck dt
	ck=$(ckpt f32)
	for dt in f32 f16 bf16; do
		import "$T/o-$dt" "$ck" "$dt"
		run --separate-stderr llm-pack-weights "$T/o-$dt/model.json"
		assert_success
		[ -z "$stderr" ]
		check "$T/o-$dt"
	done
}

@test "an f16 checkpoint packed to f32, f16 and bf16 equals the converted source" {
	local ck dt
	ck=$(ckpt f16)
	for dt in f32 f16 bf16; do
		import "$T/o-$dt" "$ck" "$dt"
		llm-pack-weights "$T/o-$dt/model.json"
		check "$T/o-$dt"
	done
}

@test "a bf16 checkpoint packed to f32, f16 and bf16 equals the converted source" {
	local ck dt
	ck=$(ckpt bf16)
	for dt in f32 f16 bf16; do
		import "$T/o-$dt" "$ck" "$dt"
		llm-pack-weights "$T/o-$dt/model.json"
		check "$T/o-$dt"
	done
}

@test "f32 to f16 and bf16 rounds ties to even, keeps subnormals and overflows to inf" {
	local ck dt
	ck=$(ckpt_copy f32)
	# The first 16 elements of layers.0.wk become edge cases (f32 bits);
	# expected results worked out by hand from IEEE 754 binary16/bfloat16.
	bits=(3f801000 3f803000 477ff000 477fe000 33800000 33000000 33c00000 80000000
	      3f808000 3f818000 7f7fffff 000116c2 d01502f9 7fc00000 c77fef00 3f800000)
	want_f16=(3c00 3c02 7c00 7bff 0001 0000 0002 8000 3c04 3c0c 7c00 0000 fc00 7e00 fbff 3c00)
	want_bf16=(3f80 3f80 4780 4780 3380 3300 33c0 8000 3f80 3f82 7f80 0001 d015 7fc0 c780 3f80)
	node -e '
		const fs = require("fs"), [f, ...bits] = process.argv.slice(1);
		const b = fs.readFileSync(f), n = Number(b.readBigUInt64LE(0));
		const t = JSON.parse(b.subarray(8, 8 + n))["model.layers.0.self_attn.k_proj.weight"];
		bits.forEach((x, i) => b.writeUInt32LE(parseInt(x, 16), 8 + n + t.data_offsets[0] + 4 * i));
		fs.writeFileSync(f, b);
	' "$ck/model.safetensors" "${bits[@]}"
	for dt in f16 bf16; do
		import "$T/o-$dt" "$ck" "$dt"
		llm-pack-weights "$T/o-$dt/model.json"
		check "$T/o-$dt"
		run node -e '
			const m = require(process.argv[1]), fs = require("fs");
			const t = m.weights.tensors.find((x) => x.name === "layers.0.wk");
			const b = fs.readFileSync(process.argv[2]);
			const out = [];
			for (let i = 0; i < 16; i++)
				out.push(b.readUInt16LE(m.weights.header_bytes + t.offset + 2 * i).toString(16).padStart(4, "0"));
			console.log(out.join(" "));
		' "$T/o-$dt/model.json" "$T/o-$dt/weights.bin"
		if [ "$dt" = f16 ]; then assert_output "${want_f16[*]}"; else assert_output "${want_bf16[*]}"; fi
	done
}

@test "a llama checkpoint (no attention biases) packs and checks" {
	import "$T/o" "$(ckpt bf16 llama)" bf16
	llm-pack-weights "$T/o/model.json"
	check "$T/o"
}

@test "the weights.bin header holds magic, version, header size, fingerprint and data size" {
	import "$T/o" "$(ckpt bf16)" bf16
	llm-pack-weights "$T/o/model.json"
	run od -A d -t x1 -N 32 "$T/o/weights.bin"
	assert_line --index 0 '0000000 4c 4c 4d 57 47 48 54 00 01 00 00 00 00 10 00 00'
	fp=$(sed -n 's/^ *"fingerprint": "\([0-9a-f]*\)".*/\1/p' "$T/o/model.json")
	le=$(od -A n -t x1 -j 16 -N 8 "$T/o/weights.bin" | tr -d ' \n')
	# The fingerprint is stored little-endian: reverse the byte pairs.
	[ "$(echo "$le" | sed 's/../& /g' | tr ' ' '\n' | tac | tr -d '\n')" = "$fp" ]
}

@test "the checker detects a single changed byte in a tensor or a RoPE table" {
	import "$T/o" "$(ckpt bf16)" f32
	llm-pack-weights "$T/o/model.json"
	cp "$T/o/weights.bin" "$T/good.bin"
	# A byte of the first tensor, then the top byte of rope.cos[1][1].
	flip "$T/o/weights.bin" 4103
	run node "$CHECK" "$T/o/model.json" "$T/o"
	assert_failure
	assert_output --partial "checkweights: "
	cp "$T/good.bin" "$T/o/weights.bin"
	off=$(node -e 'const m = require(process.argv[1]);
		console.log(m.weights.header_bytes + m.weights.tensors.find((t) => t.name === "rope.cos").offset + 4 * 9 + 3)' \
		"$T/o/model.json")
	flip "$T/o/weights.bin" "$off"
	run node "$CHECK" "$T/o/model.json" "$T/o"
	assert_failure
	assert_output --partial "rope.cos"
}

@test "a second run says weights.bin is up to date and does not rewrite it" {
	import "$T/o" "$(ckpt bf16)" bf16
	llm-pack-weights "$T/o/model.json"
	before="$(ident "$T/o/weights.bin") $(ident "$T/o/weights.json")"
	sleep 0.01
	run --separate-stderr llm-pack-weights "$T/o/model.json"
	assert_success
	fp=$(sed -n 's/^ *"fingerprint": "\([0-9a-f]*\)".*/\1/p' "$T/o/model.json")
	[ "$stderr" = "llm-pack-weights: $T/o/weights.bin is up to date (fingerprint $fp)" ]
	[ "$(ident "$T/o/weights.bin") $(ident "$T/o/weights.json")" = "$before" ]
}

@test "--no-reuse rewrites an up-to-date pair with the same bytes" {
	import "$T/o" "$(ckpt bf16)" bf16
	llm-pack-weights "$T/o/model.json"
	cp "$T/o/weights.bin" "$T/o/weights.json" "$T"
	before=$(ident "$T/o/weights.bin")
	run --separate-stderr llm-pack-weights --no-reuse "$T/o/model.json"
	assert_success
	[ -z "$stderr" ]
	[ "$(ident "$T/o/weights.bin")" != "$before" ]
	cmp "$T/weights.bin" "$T/o/weights.bin"
	cmp "$T/weights.json" "$T/o/weights.json"
}

@test "touching a source file makes the next run rewrite" {
	local ck
	ck=$(ckpt_copy bf16)
	import "$T/o" "$ck" bf16
	llm-pack-weights "$T/o/model.json"
	before=$(ident "$T/o/weights.bin")
	touch -d '2001-02-03 04:05:06' "$ck/model.safetensors"
	run --separate-stderr llm-pack-weights -v "$T/o/model.json"
	assert_success
	[[ "$stderr" == *"not reused: source $ck/model.safetensors changed"* ]]
	[ "$(ident "$T/o/weights.bin")" != "$before" ]
	check "$T/o"
}

@test "a changed plan makes the next run rewrite" {
	local ck
	ck=$(ckpt bf16)
	import "$T/o" "$ck" bf16
	llm-pack-weights "$T/o/model.json"
	before=$(ident "$T/o/weights.bin")
	import "$T/o" "$ck" bf16 --max-context 32
	run --separate-stderr llm-pack-weights "$T/o/model.json"
	assert_success
	[[ "$stderr" != *"up to date"* ]]
	[ "$(ident "$T/o/weights.bin")" != "$before" ]
	check "$T/o"
}

@test "a damaged weights.bin is rewritten even though weights.json matches" {
	import "$T/o" "$(ckpt bf16)" bf16
	llm-pack-weights "$T/o/model.json"
	cp "$T/o/weights.bin" "$T/good.bin"
	truncate -s 5000 "$T/o/weights.bin"
	run --separate-stderr llm-pack-weights "$T/o/model.json"
	assert_success
	cmp "$T/good.bin" "$T/o/weights.bin"
}

@test "-o writes into another directory, creating it" {
	import "$T/o" "$(ckpt f16)" bf16
	llm-pack-weights -o "$T/elsewhere/deep" "$T/o/model.json"
	cp "$T/o/model.json" "$T/elsewhere/deep/"
	check "$T/elsewhere/deep"
	no_output "$T/o"
}

@test "-v prints a summary with tensors, bytes, seconds and GB/s" {
	import "$T/o" "$(ckpt bf16)" bf16
	run --separate-stderr llm-pack-weights -v "$T/o/model.json"
	assert_success
	[[ "$stderr" =~ llm-pack-weights:\ .*/weights.bin:\ [0-9]+\ tensors,\ [0-9.]+\ GB\ in\ [0-9.]+\ s\ \([0-9.]+\ GB/s\) ]]
}

@test "a truncated safetensors file is an error naming it, and no output is left" {
	local ck
	ck=$(ckpt_copy bf16)
	import "$T/o" "$ck" bf16
	truncate -s 100000 "$ck/model.safetensors"
	run --separate-stderr llm-pack-weights "$T/o/model.json"
	assert_failure 1
	[[ "$stderr" == "llm-pack-weights: $ck/model.safetensors: "* ]]
	[ "$(echo "$stderr" | wc -l)" -eq 1 ]
	no_output "$T/o"
}

@test "a safetensors header whose offsets lie is an error, and no output is left" {
	local ck
	ck=$(ckpt_copy bf16)
	import "$T/o" "$ck" bf16
	st_edit "$ck/model.safetensors" 'h["model.norm.weight"].data_offsets[1] += 1 << 20'
	run --separate-stderr llm-pack-weights "$T/o/model.json"
	assert_failure 1
	[[ "$stderr" == "llm-pack-weights: $ck/model.safetensors: tensor 'model.norm.weight': "* ]]
	no_output "$T/o"
}

@test "a source tensor whose shape disagrees with the plan is an error naming it" {
	local ck
	ck=$(ckpt_copy bf16)
	import "$T/o" "$ck" bf16
	st_edit "$ck/model.safetensors" 'h["model.layers.1.self_attn.k_proj.weight"].shape.reverse()'
	run --separate-stderr llm-pack-weights "$T/o/model.json"
	assert_failure 1
	assert_equal "$stderr" "llm-pack-weights: $ck/model.safetensors: tensor 'model.layers.1.self_attn.k_proj.weight': shape [64, 32] does not match [32, 64] of 'layers.1.wk' in $T/o/model.json"
	no_output "$T/o"
}

@test "a source tensor missing from the checkpoint is an error naming it" {
	local ck
	ck=$(ckpt_copy bf16)
	import "$T/o" "$ck" bf16
	st_edit "$ck/model.safetensors" 'h["model.norm.weightX"] = h["model.norm.weight"]; delete h["model.norm.weight"]'
	run --separate-stderr llm-pack-weights "$T/o/model.json"
	assert_failure 1
	[[ "$stderr" == "llm-pack-weights: $ck/model.safetensors: no tensor 'model.norm.weight'"* ]]
	no_output "$T/o"
}

@test "a missing source file is an error naming it" {
	local ck
	ck=$(ckpt_copy bf16)
	import "$T/o" "$ck" bf16
	rm "$ck/model.safetensors"
	run --separate-stderr llm-pack-weights "$T/o/model.json"
	assert_failure 1
	assert_equal "$stderr" "llm-pack-weights: $ck/model.safetensors: No such file or directory"
	no_output "$T/o"
}

@test "a missing model.json is an error naming it" {
	run --separate-stderr llm-pack-weights "$T/nope/model.json"
	assert_failure 1
	assert_equal "$stderr" "llm-pack-weights: $T/nope/model.json: No such file or directory"
}

@test "an output directory that cannot be made or written is an error, and no output is left" {
	import "$T/o" "$(ckpt bf16)" bf16
	: >"$T/file"
	run --separate-stderr llm-pack-weights -o "$T/file/sub" "$T/o/model.json"
	assert_failure 1
	assert_equal "$stderr" "llm-pack-weights: $T/file/sub: Not a directory"
	if [ "$(id -u)" -ne 0 ]; then
		mkdir "$T/ro"
		chmod 555 "$T/ro"
		run --separate-stderr llm-pack-weights -o "$T/ro" "$T/o/model.json"
		assert_failure 1
		assert_equal "$stderr" "llm-pack-weights: $T/ro/weights.bin: Permission denied"
		no_output "$T/ro"
	fi
	no_output "$T/o"
}

@test "a failed run leaves the previous weights.bin and weights.json as they were" {
	local ck
	ck=$(ckpt_copy bf16)
	import "$T/o" "$ck" bf16
	llm-pack-weights "$T/o/model.json"
	cp "$T/o/weights.bin" "$T/o/weights.json" "$T"
	truncate -s 200000 "$ck/model.safetensors"
	run llm-pack-weights "$T/o/model.json"
	assert_failure 1
	cmp "$T/weights.bin" "$T/o/weights.bin"
	cmp "$T/weights.json" "$T/o/weights.json"
	run ls -A "$T/o"
	refute_output --partial .tmp.
}

# pack_killed SIG DIR: run llm-pack-weights --no-reuse on DIR/model.json,
# stop it while its weights.bin temporary is being written, send SIG;
# succeeds when the process died of SIG.  SIGSTOP holds it between the
# check that it is mid-write and the signal, so the timing does not decide
# the outcome: a run that ended first is tried again.
pack_killed() {
	local sig=$1 dir=$2 pid st try i
	for try in 1 2 3; do
		llm-pack-weights --no-reuse -t 1 "$dir/model.json" 2>/dev/null &
		pid=$!
		for ((i = 0; i < 2000; i++)); do
			compgen -G "$dir/weights.bin.tmp.*" >/dev/null && break
			kill -0 $pid 2>/dev/null || break
			sleep 0.005
		done
		kill -STOP $pid 2>/dev/null || { wait $pid || true; continue; }
		if compgen -G "$dir/weights.bin.tmp.*" >/dev/null; then
			kill -"$sig" $pid
			kill -CONT $pid
			st=0
			wait $pid || st=$?
			[ "$st" -eq $((128 + $(kill -l "$sig"))) ]
			return
		fi
		kill -CONT $pid
		wait $pid || true
	done
	echo "llm-pack-weights finished before it could be stopped, 3 times" >&2
	return 1
}

@test "SIGTERM or SIGINT while packing or quantizing: the process dies of it, no temporary, the previous outputs intact (issue 16)" {
	mkmodel --preset qwen2.5-0.5b -L 1 --dtype bf16 --seed 4 -o "$T/ck" >&2
	# packing (bf16 kept): the previous weights stay
	llm-import -o "$T/o" "$T/ck"
	llm-pack-weights "$T/o/model.json"
	cp "$T/o/weights.bin" "$T/o/weights.json" "$T"
	pack_killed TERM "$T/o"
	cmp "$T/weights.bin" "$T/o/weights.bin"
	cmp "$T/weights.json" "$T/o/weights.json"
	[ -z "$(compgen -G "$T/o/*.tmp.*")" ]
	# quantizing to q4_0 into a new folder: nothing of it is left
	llm-import -o "$T/q" --dtype q4_0 "$T/ck"
	ls -A "$T/q" >"$T/before"
	pack_killed INT "$T/q"
	ls -A "$T/q" | cmp - "$T/before"
}

@test "weights.json's digest and sample: the reuse check, llm-link and llm-run refuse other or edited weights; llm-run --verify reads every tensor (issue 16)" {
	local a b
	a=$(ckpt_copy bf16)
	mkmodel --preset tiny --family qwen2 --dtype bf16 --seed 8 -o "$T/ck2" >&2
	import "$T/o" "$a" bf16
	import "$T/o2" "$T/ck2" bf16
	llm-pack-weights "$T/o/model.json"
	llm-pack-weights "$T/o2/model.json"
	check "$T/o"
	# the same plan, other weights
	[ "$(jq -r .fingerprint "$T/o/weights.json")" = "$(jq -r .fingerprint "$T/o2/weights.json")" ]
	! cmp -s "$T/o/weights.bin" "$T/o2/weights.bin"
	run -0 llm-run -m "$T/o" --verify
	[ "$output" = "$T/o/weights.bin: $(jq '.tensors | length' "$T/o/weights.json") tensors, $(stat -c %s "$T/o/weights.bin") bytes, as $T/o/weights.json records" ]
	# another checkpoint's weights.bin: refused at load, before the library
	cp -r "$T/o" "$T/x"
	cp "$T/o2/weights.bin" "$T/x/weights.bin"
	run -1 --separate-stderr llm-run -m "$T/x" -p hi -n 1
	[ "$stderr" = "llm-run: $T/x/weights.bin: sampled blocks differ from weights.json's record (other or damaged weights)" ]
	run -1 --separate-stderr llm-run -m "$T/x" --verify
	[[ "$stderr" == "llm-run: $T/x/weights.bin: sampled blocks differ"* ]]
	run -1 --separate-stderr llm-link "$T/x"
	[[ "$stderr" == "llm-link: $T/x/weights.bin: sampled blocks differ"* ]]
	[ ! -e "$T/x/model.llm" ]
	run -0 --separate-stderr llm-pack-weights -v "$T/x/model.json"
	[[ "$stderr" == *"not reused: $T/x/weights.bin: sampled blocks differ"* ]]
	cmp "$T/x/weights.bin" "$T/o/weights.bin"
	# a checksum edited in weights.json: the digest tells
	c=$(jq -r '.tensors[0].checksum' "$T/x/weights.json")
	sed -i "s/$c/0123456789abcdef/" "$T/x/weights.json"
	run -1 --separate-stderr llm-run -m "$T/x" --verify
	[[ "$stderr" == *"weights.json's checksums do not give its digest (edited by hand?)" ]]
	run -0 --separate-stderr llm-pack-weights -v "$T/x/model.json"
	[[ "$stderr" == *"not reused: "*"checksums do not give its digest"* ]]
	# bytes changed outside the sampled blocks: only the full read sees them
	# (in the largest tensor, away from the 64 blocks weights.h samples)
	read -r name off < <(jq -r '.header_bytes as $h | .data_bytes as $d | ($d - 4096) as $span |
		[range(64) | $h + (($span * . / 63 | floor) / 4096 | floor) * 4096] as $blocks |
		(.tensors | max_by(.bytes)) as $t |
		[range(1; 64) | $h + $t.offset + . * 4096 + 100 |
			select(. as $o | all($blocks[]; $o < . or $o >= . + 4096))][0] as $o |
		"\($t.name) \($o)"' "$T/x/weights.json")
	printf 'XXXXXXXX' | dd of="$T/x/weights.bin" bs=1 seek="$off" conv=notrunc 2>/dev/null
	run -1 --separate-stderr llm-run -m "$T/x" --verify
	[[ "$stderr" == "llm-run: $T/x/weights.bin: tensor '$name': checksum "* ]]
	run -2 llm-run --verify
}
