#!/usr/bin/env bats
# The bad-input suite (issue 16): every program given what it must refuse.
# Each case runs in the test's work directory W, which holds the case's
# inputs, and asserts
#   - the exit status (1: bad input, 2: usage; llm-verify-partition: 2 for
#     trouble, as cmp),
#   - standard error: one line "tool: file: what is wrong", matched
#     against the case's pattern (a usage error: that line or the usage
#     first, the usage after it), with no prefix said twice in a row
#     ("x/libmodel.so: x/libmodel.so: ...") and no /proc/self path,
#   - nothing on standard output,
#   - nothing left behind or changed: W, listed with sizes and times, is
#     the same before and after (no output, no temporary, no empty folder).
# A full disk is a file size limit with SIGXFSZ ignored (the write fails
# with EFBIG), and, as root, a device node like /dev/full made in W.

bats_require_minimum_version 1.5.0

setup_file() {
	load test_helper/common-setup
	_common_setup
	load test_helper/runfixture
	ensure_tokenizer
	F=$BATS_FILE_TMPDIR
	printf '#!/bin/sh\nn=$1\nshift\ntrap "" XFSZ\nulimit -f "$n"\nexec "$@"\n' >"$F/limited"
	chmod +x "$F/limited"
	mkmodel --preset tiny --family qwen2 --dtype f32 --seed 3 -o "$F/ck" >&2
	llm-import -o "$F/imp" "$F/ck" >&2
	llm-pack-weights "$F/imp/model.json" >&2
	llm-split -o "$F/imp/parts" "$F/imp/model.json" >&2
	fixture_linked a >/dev/null
}

setup() {
	load test_helper/common-setup
	_common_setup
	load test_helper/runfixture
	F=$BATS_FILE_TMPDIR
	W=$BATS_TEST_TMPDIR/w
	mkdir -p "$W"
	cd "$W"
	ncases=0
}

# W's tree: every path, and the size and time of each file (a directory's
# own time changes when a failed run makes and removes a folder in it).
snapshot() {
	find "$W" -type d -printf '%p/\n' -o -printf '%p %y %s %T@\n' | sort
}

# bad STATUS PATTERN command...: one case (see the top of the file).
bad() {
	local want=$1 re=$2 before after
	shift 2
	before=$(snapshot)
	run --separate-stderr timeout 60 "$@"
	after=$(snapshot)
	local first=${stderr_lines[0]:-} why=
	if [ "$status" -ne "$want" ]; then
		why="status $status, want $want"
	elif ! [[ "$first" =~ $re ]]; then
		why="message does not match /$re/"
	elif grep -qE '(^|: )([^:]+): \2(: |$)|(^|: )[^: ]*/([^:/ ]+): \5: ' <<<"$first"; then
		# one way errors gain context: no prefix said twice, nor a
		# tool's path followed by its own name (issue 46)
		why="a prefix said twice"
	elif [[ "$first" == */proc/self/* ]]; then
		why="names /proc/self where the user's path belongs"
	elif [ "$want" -ne 2 ] && [ "${#stderr_lines[@]}" -ne 1 ] &&
		! { [ -n "${multi:-}" ] && ! printf '%s\n' "${stderr_lines[@]}" | grep -qv "^$multi: "; }; then
		why="${#stderr_lines[@]} lines on stderr"
	elif [ -n "$output" ]; then
		why="output on stdout"
	elif [ "$before" != "$after" ]; then
		why="files changed: $(diff <(echo "$before") <(echo "$after") | grep '^[<>]' | head -5 | tr '\n' ' ')"
	fi
	if [ -n "$why" ]; then
		echo "case: $*" >&2
		echo "  $why" >&2
		echo "  stderr: $stderr" >&2
		return 1
	fi
	ncases=$((ncases + 1))
}

# $F/limited N command...: the command with a file size limit of N KiB,
# SIGXFSZ ignored (made in setup_file: timeout runs commands, not
# functions).

# A character device that answers every write with ENOSPC, as /dev/full
# (root only).
fulldev() {
	mknod "$W/full" c 1 7 2>/dev/null
}

report() {
	echo "# $1: $ncases cases" >&3
}

@test "llm-import refuses bad checkpoints, GGUF files and options, leaving nothing" {
	cp -r "$F/ck" ck
	mkfifo fifo
	: >empty.gguf
	printf 'GGUX\3\0\0\0' >magic.gguf
	head -c 20 "$F/ck/model.safetensors" >short.safetensors
	mkdir trunc && cp ck/*.json trunc/ && head -c 4096 ck/model.safetensors >trunc/model.safetensors
	mkdir nojson && cp ck/model.safetensors ck/tokenizer*.json nojson/ && echo '{"hidden_size": ' >nojson/config.json
	mkdir nohidden && cp ck/model.safetensors ck/tokenizer*.json nohidden/ &&
		jq 'del(.hidden_size)' ck/config.json >nohidden/config.json
	mkdir arch && cp ck/model.safetensors ck/tokenizer*.json arch/ &&
		jq '.architectures = ["MambaForCausalLM"] | .model_type = "mamba"' ck/config.json >arch/config.json
	mkdir tok && cp ck/model.safetensors ck/config.json tok/ && echo '{"model": ' >tok/tokenizer.json
	# tokenizers that are not what they claim (issue 46)
	mkdir bos5 && cp ck/* bos5/ && echo '{"bos_token": 5}' >bos5/tokenizer_config.json
	mkdir dupid && cp ck/* dupid/ && rm -f dupid/tokenizer_config.json &&
		jq '.model.vocab["zz-one"] = 3 | .model.vocab["zz-two"] = 3' ck/tokenizer.json >dupid/tokenizer.json
	mkdir hdr && cp ck/*.json hdr/ && { printf '\377\377\377\377\0\0\0\0'; tail -c +9 ck/model.safetensors; } >hdr/model.safetensors
	mkdir bare
	echo x >file
	bad 1 "^llm-import: nope: No such file or directory$" llm-import -o out nope
	bad 1 "^llm-import: empty.gguf: " llm-import -o out empty.gguf
	bad 1 "^llm-import: magic.gguf: not a GGUF file" llm-import -o out magic.gguf
	bad 1 "^llm-import: short.safetensors: " llm-import -o out short.safetensors
	bad 1 "^llm-import: trunc/model.safetensors: " llm-import -o out trunc
	bad 1 "^llm-import: hdr/model.safetensors: header length .* is absurd" llm-import -o out hdr
	bad 1 "^llm-import: nojson/config.json:" llm-import -o out nojson
	bad 1 "^llm-import: nohidden/config.json: .*hidden_size" llm-import -o out nohidden
	bad 1 "^llm-import: arch/config.json: .*(MambaForCausalLM|mamba)" llm-import -o out arch
	bad 1 "^llm-import: tok/tokenizer.json" llm-import -o out tok
	bad 1 "^llm-import: bos5/tokenizer_config.json: bos_token: expected a string or an object with a string 'content' \(transformers refuses it too\)$" llm-import -o out bos5
	bad 1 "^llm-import: dupid/tokenizer.json: model.vocab: '.*' and '.*' both have id 3$" llm-import -o out dupid
	bad 1 "^llm-import: bare/config.json: No such file or directory$" llm-import -o out bare
	bad 1 "^llm-import: fifo: not a regular file$" llm-import -o out fifo
	bad 1 "^llm-import: file/out: Not a directory$" llm-import -o file/out ck
	bad 1 "^llm-import: --prefill-chunk 64 exceeds the context size 32" llm-import -o out --max-context 32 --prefill-chunk 64 ck
	bad 2 "^llm-import: .*dtype.*q3_x" llm-import -o out --dtype q3_x ck
	bad 2 "^llm-import: .*kv-dtype" llm-import -o out --kv-dtype q4_0 ck
	bad 2 "^llm-import: .*max-context" llm-import -o out --max-context 0 ck
	bad 2 "^llm-import: .*activations" llm-import -o out --activations int4 ck
	bad 2 "^usage: llm-import " llm-import -o out ck extra
	bad 2 "^llm-import: .*--bogus" llm-import --bogus ck
	bad 1 "^llm-import: out/a/.*: write error: File too large$" "$F/limited" 8 llm-import -o out/a ck
	report llm-import
}

@test "llm-pack-weights refuses bad plans and sources, leaving nothing" {
	cp -r "$F/imp" imp
	rm -f imp/weights.bin imp/weights.json
	mkdir j && echo '{"format": ' >j/model.json
	mkdir fmt && jq '.format = "llm-model/9"' imp/model.json >fmt/model.json
	mkdir src && jq '.source.dir = "/nonexistent/ck"' imp/model.json >src/model.json
	cp -r "$F/ck" gone && llm-import -o moved gone 2>/dev/null && rm -r gone
	mkdir tens && jq '.tensors[0].bytes += 4' imp/model.json >tens/model.json
	# (sed: jq writes the plan's numbers anew, which changes its fingerprint)
	mkdir ph && sed 's|"file": "prefill.mlir"|"file": "../../../../../../../etc/passwd"|' imp/model.json >ph/model.json
	mkdir wf && sed 's|"file": "weights.bin"|"file": "/etc/passwd"|' imp/model.json >wf/model.json
	mkdir tf && sed 's|"tokenizer.json"|"../tokenizer.json"|' imp/model.json >tf/model.json
	echo x >file
	bad 1 "^llm-pack-weights: nope.json: No such file or directory$" llm-pack-weights nope.json
	bad 1 "^llm-pack-weights: imp: " llm-pack-weights imp
	bad 1 "^llm-pack-weights: j/model.json:" llm-pack-weights j/model.json
	bad 1 "^llm-pack-weights: fmt/model.json: .*llm-model/9" llm-pack-weights fmt/model.json
	bad 1 "^llm-pack-weights: src/model.json: weights.fingerprint does not match the plan" llm-pack-weights -o out src/model.json
	bad 1 "^llm-pack-weights: tens/model.json: weights.fingerprint does not match the plan" llm-pack-weights -o out tens/model.json
	# paths out of the build directory: refused where model.json is read
	bad 1 "^llm-split: ph/model.json: phases\[0\]: file '.*/etc/passwd' is outside the build directory$" \
		llm-split -o ph/parts ph/model.json
	bad 1 "^llm-pack-weights: wf/model.json: weights.file '/etc/passwd' is outside the build directory$" \
		llm-pack-weights wf/model.json
	bad 1 "^llm-pack-weights: tf/model.json: tokenizer.files\[0\] '../tokenizer.json' is outside the build directory$" \
		llm-pack-weights tf/model.json
	bad 1 "^llm-pack-weights: /.*/gone/model.safetensors: No such file or directory$" llm-pack-weights -o out moved/model.json
	bad 1 "^llm-pack-weights: file/out: Not a directory$" llm-pack-weights -o file/out imp/model.json
	bad 2 "^llm-pack-weights: .*-t" llm-pack-weights -t 0 imp/model.json
	bad 2 "^usage: llm-pack-weights " llm-pack-weights imp/model.json extra
	bad 2 "^usage: llm-pack-weights " llm-pack-weights
	bad 1 "^llm-pack-weights: out/weights.bin: write error: File too large$" "$F/limited" 64 llm-pack-weights -o out imp/model.json
	if fulldev; then
		mkdir dev && cp imp/model.json dev/ && ln -s ../full dev/weights.bin
		bad 1 "^llm-pack-weights: .*full: write error: No space left on device$" llm-pack-weights dev/model.json
	fi
	report llm-pack-weights
}

@test "llm-split refuses bad plans and phases, leaving nothing" {
	mkdir imp && cp "$F/imp"/*.mlir "$F/imp/model.json" imp/
	mkdir nodec && cp imp/model.json imp/prefill*.mlir nodec/
	mkdir garbage && cp imp/* garbage/ && echo 'func.func @x(' >garbage/decode.mlir
	mkdir j && echo '[' >j/model.json
	# MLIR's error in one line, without its echo of the input (issue 46):
	# random bytes; a quoted string with a newline and a control byte;
	# an op whose location is a call site in another file, or a name
	mkdir rnd quoted callsite named
	for d in rnd quoted callsite named; do cp imp/* $d/; done
	awk 'BEGIN { srand(46); for (i = 0; i < 512; i++) printf "%c", int(rand() * 256) }' >rnd/decode.mlir
	printf 'func.func @f() {\n  linalg.generic {iterator_types = ["par\\0Aal\\01"]}\n}\n' >quoted/decode.mlir
	printf 'func.func @llm_decode(%%a: i32) -> i64 {\n  func.return %%a : i32 loc(%s)\n}\n' \
		'callsite("x.py":3:1 at "y.py":4:2)' >callsite/decode.mlir
	printf 'func.func @llm_decode(%%a: i32) -> i64 {\n  func.return %%a : i32 loc(%s)\n}\n' '"nm"' >named/decode.mlir
	echo x >file
	bad 1 "^llm-split: nope.json: No such file or directory$" llm-split -o out nope.json
	bad 1 "^llm-split: nodec/decode.mlir: No such file or directory$" llm-split -o out nodec/model.json
	bad 1 "^llm-split: garbage/decode.mlir:1:14: error: expected non-function type$" llm-split -o out garbage/model.json
	bad 1 "^llm-split: rnd/decode.mlir:[0-9]+:[0-9]+: error: [^ ]" llm-split -o out rnd/model.json
	bad 1 "^llm-split: quoted/decode.mlir:[0-9]+:[0-9]+: error: .*unexpected iterator_type \(par\\\\nal\\\\x01\)$" \
		llm-split -o out quoted/model.json
	bad 1 "^llm-split: callsite/decode.mlir: x.py:3:1: error: type of return operand 0 \('i32'\) doesn't match" \
		llm-split -o out callsite/model.json
	bad 1 "^llm-split: named/decode.mlir: error: type of return operand 0 \('i32'\) doesn't match" \
		llm-split -o out named/model.json
	bad 1 "^llm-split: j/model.json:" llm-split -o out j/model.json
	bad 1 "^llm-split: file" llm-split -o file/out imp/model.json
	bad 2 "^llm-split: unknown strategy 'bogus'" llm-split -s bogus -o out imp/model.json
	bad 2 "^usage: llm-split " llm-split
	bad 2 "^usage: llm-split " llm-split -o out imp/model.json extra
	bad 1 "^llm-split: out/.*: write error: File too large$" "$F/limited" 4 llm-split -o out imp/model.json
	report llm-split
}

@test "llm-verify-partition refuses damaged partition sets, leaving nothing" {
	cp -r "$F/imp" imp
	P=imp/parts/partition.json
	cp $P orig.json
	echo '{"kernels": ' >notjson.json
	mkdir imp/p1 imp/p2 imp/p3 imp/p4 imp/p5 imp/p6 imp/p7
	jq '.kernels |= .[1:]' orig.json >imp/p1/partition.json
	jq '.kernels[0].file = "../../etc/passwd"' orig.json >imp/p2/partition.json
	jq '.model = "/nonexistent/model.json"' orig.json >imp/p3/partition.json
	jq '.kernels[0].hash = "0000000000000000"' orig.json >imp/p4/partition.json
	# paths out of the build are not opened (no MLIR error on /etc/passwd)
	jq '.phases[0].source = "../../../../../../../etc/passwd"' orig.json >imp/p5/partition.json
	jq '.phases[0].glue = "/etc/passwd"' orig.json >imp/p6/partition.json
	jq '.phases[0].partitions[0].file = "../../../../../../../etc/passwd"' orig.json >imp/p7/partition.json
	for d in p1 p2 p3 p4 p5 p6 p7; do cp -r imp/parts/prefill imp/parts/prefill_kv imp/parts/decode imp/parts/embed imp/$d/; done
	# MLIR text that does not parse, in one line each (issue 46): a
	# kernel and a glue module (violations), an original phase (trouble)
	mkdir imp/p8 imp/p9
	for d in p8 p9; do cp orig.json imp/$d/partition.json && cp -r imp/parts/prefill imp/parts/prefill_kv imp/parts/decode imp/parts/embed imp/$d/; done
	k=$(jq -r '.phases[2].partitions[1].file' orig.json)
	awk 'BEGIN { srand(46); for (i = 0; i < 512; i++) printf "%c", int(rand() * 256) }' >imp/p8/$k
	echo 'func.func @x(' >imp/p9/decode/glue.mlir
	cp -r imp bad && head -c 200 imp/decode.mlir >bad/decode.mlir
	# a verifier lists every violation, then the verdict
	multi=llm-verify-partition
	bad 2 "^llm-verify-partition: nope.json: No such file or directory$" llm-verify-partition nope.json
	bad 2 "^llm-verify-partition: notjson.json:" llm-verify-partition notjson.json
	bad 1 "^llm-verify-partition: imp/p1/partition.json: .*kernel" llm-verify-partition -q imp/p1/partition.json
	bad 1 "^llm-verify-partition: imp/p2/partition.json: .*(outside|passwd)" llm-verify-partition -q imp/p2/partition.json
	bad 1 "^llm-verify-partition: imp/p3/partition.json: .*model" llm-verify-partition -q imp/p3/partition.json
	bad 1 "^llm-verify-partition: imp/p4/partition.json: .*hash" llm-verify-partition -q imp/p4/partition.json
	bad 1 "^llm-verify-partition: imp/p5/partition.json: phases\[0\]: source '.*/etc/passwd' is not prefill.mlir of model" \
		llm-verify-partition -q imp/p5/partition.json
	# one that does not exist is not the phase file either: a violation,
	# not trouble naming a path out of the build (fuzz_partition)
	jq '.phases[0].source = "/r..pefill.mlir"' orig.json >imp/p5/partition.json
	bad 1 "^llm-verify-partition: imp/p5/partition.json: phases\[0\]: source '/r..pefill.mlir' is not prefill.mlir of model" \
		llm-verify-partition -q imp/p5/partition.json
	bad 1 "^llm-verify-partition: imp/p6/partition.json: phases\[0\]: glue '/etc/passwd' is outside imp/p6/" \
		llm-verify-partition -q imp/p6/partition.json
	bad 1 "^llm-verify-partition: imp/p7/partition.json: prefill: partition 0: kernel file '.*/etc/passwd' is outside" \
		llm-verify-partition -q imp/p7/partition.json
	bad 1 "^llm-verify-partition: imp/p8/partition.json: decode: partition 1: imp/p8/$k:[0-9]+:[0-9]+: error: [^ ]" \
		llm-verify-partition -q imp/p8/partition.json
	bad 1 "^llm-verify-partition: imp/p9/partition.json: decode: imp/p9/decode/glue.mlir:1:14: error: expected non-function type$" \
		llm-verify-partition -q imp/p9/partition.json
	bad 2 "^llm-verify-partition: bad/parts/../decode.mlir:[0-9]+:[0-9]+: error: [^ ]" \
		llm-verify-partition -q bad/parts/partition.json
	bad 2 "^usage: llm-verify-partition " llm-verify-partition
	bad 2 "^llm-verify-partition: .*--bogus" llm-verify-partition --bogus $P
	report llm-verify-partition
}

@test "llm-lower refuses bad kernels, targets and outputs, leaving nothing" {
	k=$(ls "$F/imp/parts/decode"/*.mlir | head -1)
	cp "$k" k.mlir
	echo 'func.func @x(' >garbage.mlir
	echo x >file
	bad 1 "^llm-lower: nope.mlir: No such file or directory$" llm-lower -o out.o nope.mlir
	bad 2 "^llm-lower: garbage.mlir: cannot tell the kind of module: pass -k" llm-lower -o out.o garbage.mlir
	bad 2 "^llm-lower: .*bogus" llm-lower -k bogus -o out.o k.mlir
	bad 1 "^llm-lower: missing/out.o: " llm-lower -o missing/out.o k.mlir
	bad 1 "^llm-lower: file/out.o: " llm-lower -o file/out.o k.mlir
	bad 1 "^llm-lower: k.mlir: cannot tell the target's features: [^ ]*clang: error: unknown target CPU 'nosuchcpu'$" llm-lower --cpu nosuchcpu -o out.o k.mlir
	bad 1 "^llm-lower: k.mlir: cannot tell the target's features: target 'sparc-sun-solaris': the architecture 'sparc' is not supported \\(x86_64, riscv64\\)$" llm-lower --target sparc-sun-solaris -o out.o k.mlir
	bad 2 "^usage: llm-lower " llm-lower
	bad 2 "^llm-lower: .*--bogus" llm-lower --bogus k.mlir
	# mlir-opt's error line in ours, not its echo of the input's bytes;
	# nothing left (with -s the intermediates, named: llm-lower.bats)
	bad 1 "^llm-lower: mlir-opt: garbage.mlir:1:14: error: .* \(exited with status 1\)$" llm-lower -k decode -o out.o garbage.mlir
	report llm-lower
}

@test "llm-link refuses incomplete builds and unwritable outputs, leaving nothing" {
	src=$(fixture a)
	cp -r "$src" b
	mkdir nomodel && cp -r b/obj b/weights.bin nomodel/
	cp -r b noweights && rm noweights/weights.bin
	cp -r b noobj && rm -r noobj/obj
	cp -r b badjson && echo '{' >badjson/model.json
	cp -r b shortw && truncate -s 8192 shortw/weights.bin
	mkdir outdir
	bad 1 "^llm-link: nope/model.json: No such file or directory$" llm-link nope
	bad 1 "^llm-link: nomodel/model.json: No such file or directory$" llm-link -o x.llm nomodel
	bad 1 "^llm-link: noweights/weights.bin: " llm-link -o x.llm noweights
	bad 1 "^llm-link: noobj" llm-link -o x.llm noobj
	bad 1 "^llm-link: badjson/model.json:" llm-link -o x.llm badjson
	bad 1 "^llm-link: shortw/weights.bin: " llm-link -o x.llm shortw
	bad 1 "^llm-link: outdir: " llm-link -o outdir b
	bad 2 "^usage: llm-link " llm-link
	bad 2 "^llm-link: .*--bogus" llm-link --bogus b
	bad 1 "^llm-link: x.llm: write error: File too large$" "$F/limited" 64 llm-link -o x.llm b
	if fulldev; then
		bad 1 "^llm-link: full: write error: No space left on device$" llm-link -o full b
	fi
	report llm-link
}

@test "llm-run refuses bad bundles, prompts, options and outputs, leaving nothing" {
	d=$(fixture_linked a)
	cp "$d/model.llm" m.llm
	mkfifo fifo
	echo 'not a bundle' >junk.llm
	head -c 70000 m.llm >short.llm
	cp -r "$d" kv && jq '.kv_cache.bytes = 16' "$d/model.json" >kv/model.json
	cp -r "$d" eos && jq '.tokenizer.eos_ids = [258]' "$d/model.json" >eos/model.json
	cp -r "$d" bos && jq '.tokenizer.bos_id = 1000' "$d/model.json" >bos/model.json
	# fields the library was compiled for, derived from the plan: checked
	# (edited in place: jq would rewrite the fingerprinted numbers)
	cp -r "$d" kvdt && perl -0pi -e 's/("kv_cache": \{[^}]*"dtype": )"f32"/$1"f16"/' kvdt/model.json
	cp -r "$d" ptok && perl -0pi -e 's/("entry": "llm_decode",\s*"file": "[^"]*",\s*"tokens": )1/${1}2/' ptok/model.json
	cp -r "$d" pent && perl -0pi -e 's/"entry": "llm_prefill"/"entry": "llm_decode"/' pent/model.json
	cp -r "$d" parg && perl -0pi -e 's/"n_tokens"/"count"/' parg/model.json
	# a library of another ELF class, in a directory and in a bundle
	# (loaded through /proc/self/fd/N): named once, by the user's path
	cp -r "$d" elf && printf '\001' | dd of=elf/libmodel.so bs=1 seek=4 conv=notrunc 2>/dev/null
	cp m.llm elf.llm && at=$(grep -abo $'\x7fELF' elf.llm | head -1 | cut -d: -f1) &&
		printf '\001' | dd of=elf.llm bs=1 seek=$((at + 4)) conv=notrunc 2>/dev/null
	printf '\377\376' >latin1.txt
	echo '[{"role": "user"}]' >conv.json
	echo 'x' >text.txt
	bad 1 "^llm-run: nope: No such file or directory$" llm-run -m nope -p hi
	mkdir emptydir
	bad 1 "^llm-run: emptydir: a directory that is neither a build .model.json. nor a Hugging Face checkpoint .config.json.$" \
		llm-run -m emptydir -p hi
	bad 1 "^llm-run: fifo: " llm-run -m fifo -p hi
	bad 1 "^llm-run: junk.llm: not a model bundle" llm-run -m junk.llm -p hi
	bad 1 "^llm-run: short.llm: " llm-run -m short.llm -p hi
	bad 1 "^llm-run: kv/model.json: .*kv_cache" llm-run -m kv -p hi
	bad 1 "^llm-run: eos/model.json: eos_ids\[0\]: 258 is outside the vocabulary \[0, 258\)$" llm-run -m eos -p hi
	bad 1 "^llm-run: bos/model.json: bos_id 1000 is outside the vocabulary \[0, 258\)$" llm-run -m bos -p hi
	bad 1 "^llm-run: kvdt/model.json: kv_cache.dtype must be dtypes.kv, f32 \(edited by hand\?\)$" llm-run -m kvdt -p hi
	bad 1 "^llm-run: ptok/model.json: phases\[[0-9]\]: tokens must be 1 for phase 'decode', by limits.prefill_chunk [0-9]+ \(edited by hand\?\)$" llm-run -m ptok -p hi
	bad 1 "^llm-run: pent/model.json: phases\[[0-9]\]: entry must be \"llm_prefill\" for phase 'prefill' \(edited by hand\?\)$" llm-run -m pent -p hi
	bad 1 "^llm-run: elf/libmodel.so: .*ELF" llm-run -m elf -p hi
	bad 1 "^llm-run: elf.llm: libmodel.so: .*ELF" llm-run -m elf.llm -p hi
	bad 1 "^llm-run: parg/model.json: phases\[0\]: args must be \[.*\] for phase '[a-z_]+' \(edited by hand\?\)$" llm-run -m parg -p hi
	bad 1 "^llm-run: m.llm: token id 99999 is out of range \[0, 258\)$" llm-run -m m.llm --tokens 99999 -n 1
	bad 2 "^llm-run: .*--tokens" llm-run -m m.llm --tokens 1,,2 -n 1
	bad 2 "^llm-run: .*--tokens" llm-run -m m.llm --tokens 1, -n 1
	bad 1 "^llm-run: m.llm: the prompt is empty" llm-run -m m.llm -p '' -n 1
	bad 1 "^llm-run: latin1.txt: .*UTF-8" llm-run -m m.llm -f latin1.txt -n 1
	bad 1 "^llm-run: nope.txt: No such file or directory$" llm-run -m m.llm -f nope.txt -n 1
	bad 2 "^llm-run: -n: " llm-run -m m.llm -p hi -n abc
	bad 2 "^llm-run: -t: " llm-run -m m.llm -p hi -t 0
	bad 2 "^llm-run: -t: " llm-run -m m.llm -p hi -t -2
	bad 2 "^llm-run: --temp: " llm-run -m m.llm -p hi --temp -1
	bad 2 "^llm-run: -c: " llm-run -m m.llm -p hi -c -1
	bad 2 "^llm-run: .*-ngl" llm-run -m m.llm -p hi -ngl 1
	bad 2 "^llm-run: .*chatml" llm-run -m m.llm -i --chat-template chatml
	bad 2 "^llm-run: " llm-run -m m.llm -p hi --tokens 1
	bad 1 "^llm-run: <stdin>:1: " llm-run -m m.llm --tokenize <<<'not json'
	bad 1 "^llm-run: <stdin>:1: .*99999" llm-run -m m.llm --detokenize <<<'[99999]'
	bad 1 "^llm-run: conv.json: " llm-run -m m.llm --chat-template qwen2 --render conv.json
	bad 1 "^llm-run: missing/l.bin: " llm-run -m m.llm -p hi -n 1 --logits missing/l.bin
	bad 1 "^llm-run: nope.txt: No such file or directory$" llm-run -m m.llm --perplexity nope.txt
	bad 1 "^llm-run: l.bin: write error: File too large$" "$F/limited" 64 llm-run -m "$d" --json --tokens 1,2 -n 100 --logits l.bin
	if fulldev; then
		bad 1 "^llm-run: full: write error: No space left on device$" llm-run -m m.llm --json --tokens 1,2 -n 1 --logits full
	fi
	report llm-run
}

# killed_waiting SIG DIR command...: run the command, which must block
# opening an output that is a named pipe (outputs onto a FIFO are written
# in place, so open waits for a reader), check that its temporaries are
# in DIR meanwhile, send SIG; succeeds when it died of SIG and DIR then
# holds what it held before.
killed_waiting() {
	local sig=$1 dir=$2 pid st i before
	shift 2
	before=$(ls -A "$dir")
	"$@" 2>/dev/null &
	pid=$!
	for ((i = 0; i < 400; i++)); do
		ls -A "$dir" | grep -q '\.tmp\.' && break
		sleep 0.05
	done
	ls -A "$dir" | grep -q '\.tmp\.' || { kill -9 $pid; echo "no temporaries in $dir" >&2; return 1; }
	sleep 0.2
	kill -0 $pid || { echo "it did not wait" >&2; return 1; }
	kill -"$sig" $pid
	st=0
	wait $pid || st=$?
	[ "$st" -eq $((128 + $(kill -l "$sig"))) ] || { echo "status $st" >&2; return 1; }
	[ "$(ls -A "$dir")" = "$before" ] || { echo "left: $(ls -A "$dir")" >&2; return 1; }
}

@test "SIGTERM or SIGINT while llm-import or llm-link writes: it dies of the signal, its temporaries go, earlier files stay (issue 16)" {
	cp -r "$F/ck" ck
	mkdir out
	echo earlier >out/keep.txt
	mkfifo out/model.json
	killed_waiting TERM out llm-import -o out ck
	[ "$(cat out/keep.txt)" = earlier ]
	src=$(fixture a)
	cp -r "$src" b
	mkfifo b.llm
	killed_waiting INT . llm-link -o b.llm b
	killed_waiting TERM . llm-link -o b.llm b
}
