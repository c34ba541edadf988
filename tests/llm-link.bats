#!/usr/bin/env bats
# llm-link: obj/**/*.o -> libmodel.so and the model.llm bundle.  The
# objects come from the stand-in model (test_helper/runfixture.bash).

bats_require_minimum_version 1.5.0

setup() {
	load test_helper/common-setup
	_common_setup
	load test_helper/runfixture
	T=$BATS_TEST_TMPDIR
}

# no_output DIR: neither libmodel.so nor model.llm nor a temporary.
no_output() {
	run ls -A "$1"
	refute_output --partial libmodel.so
	refute_output --partial model.llm
	refute_output --partial .tmp.
	refute_output --partial .llm-link.
}

@test "llm-link -h prints the usage, which is the man page synopsis" {
	run -0 llm-link -h
	assert_output --partial "usage: llm-link"
	[ "$(usage_of llm-link)" = "$(synopsis_of llm-link)" ]
}

@test "llm-link without a directory or with a bad option is a usage error" {
	run -2 llm-link
	assert_line --index 0 --partial "usage: llm-link"
	run -2 llm-link -Z "$T"
}

@test "llm-link links only the objects named after the directory" {
	fixture_copy "$(fixture a)" "$T/d"
	# a stray object under obj/ that would not link is ignored
	printf 'not an object' > "$T/d/obj/stray.o"
	run -1 llm-link "$T/d"
	objs=$(find "$T/d/obj" -name '*.o' ! -name stray.o | sort)
	run -0 llm-link "$T/d" $objs
	[ -s "$T/d/libmodel.so" ]
	run -1 llm-link "$T/d" "$T/d/obj/missing.o"
	assert_output --partial "missing.o: No such file or directory"
}

@test "llm-link writes libmodel.so and model.llm" {
	fixture_copy "$(fixture a)" "$T/d"
	run -0 --separate-stderr llm-link "$T/d"
	[ -z "$output" ] && [ -z "$stderr" ]
	[ -s "$T/d/libmodel.so" ] && [ -s "$T/d/model.llm" ]
	run -0 nm -D --defined-only "$T/d/libmodel.so"
	assert_output --partial " T _mlir_ciface_llm_prefill"
	assert_output --partial " T _mlir_ciface_llm_prefill_kv"
	assert_output --partial " T _mlir_ciface_llm_decode"
	assert_output --partial " T _mlir_ciface_llm_prefill_fingerprint"
	assert_output --partial " T _mlir_ciface_llm_prefill_kv_fingerprint"
	assert_output --partial " T _mlir_ciface_llm_decode_fingerprint"
	run -0 readelf -d "$T/d/libmodel.so"
	assert_output --partial "libomp.so"
	assert_output --regexp "R(UN)?PATH.*llvm-22/lib"
	[ -z "$(ls -A "$T/d" | grep -e '\.tmp\.' -e '^\.llm-link')" ]
}

@test "the bundle holds its members in a fixed order with fixed owners, times and modes" {
	d=$(fixture_linked a)
	run -0 tar -tvf "$d/model.llm"
	[ "${#lines[@]}" -eq 6 ]
	assert_line --index 0 --regexp '^-rw-r--r-- 0/0 +[0-9]+ 1970-01-01 00:00 model.json$'
	assert_line --index 1 --regexp '^-rw-r--r-- 0/0 +[0-9]+ 1970-01-01 00:00 tokenizer.json$'
	assert_line --index 2 --regexp '^-rw-r--r-- 0/0 +[0-9]+ 1970-01-01 00:00 weights.json$'
	assert_line --index 3 --regexp '^-rw-r--r-- 0/0 +[0-9]+ 1970-01-01 00:00 libmodel.so$'
	assert_line --index 4 --regexp '^-rw-r--r-- 0/0 +[0-9]+ 1970-01-01 00:00 .pad$'
	assert_line --index 5 --regexp '^-rw-r--r-- 0/0 +[0-9]+ 1970-01-01 00:00 weights.bin$'
	for f in model.json tokenizer.json weights.json libmodel.so weights.bin; do
		tar -xOf "$d/model.llm" "$f" | cmp - "$d/$f"
	done
}

@test "weights.bin starts at a 64 KiB boundary inside model.llm" {
	d=$(fixture_linked a)
	off=$(grep -boa LLMWGHT "$d/model.llm" | head -1 | cut -d: -f1)
	[ "$off" -gt 0 ] && [ $((off % 65536)) -eq 0 ]
	cmp -i "$off:0" -n "$(stat -c %s "$d/weights.bin")" "$d/model.llm" "$d/weights.bin"
}

@test "llm-link makes the same bytes twice" {
	fixture_copy "$(fixture a)" "$T/d"
	llm-link "$T/d"
	cp "$T/d/model.llm" "$T/first.llm"
	cp "$T/d/libmodel.so" "$T/first.so"
	touch "$T/d/model.json" "$T/d/weights.bin"
	llm-link "$T/d"
	cmp "$T/first.llm" "$T/d/model.llm"
	cmp "$T/first.so" "$T/d/libmodel.so"
}

@test "-o writes the bundle elsewhere, and -v echoes the commands" {
	fixture_copy "$(fixture a)" "$T/d"
	run -0 --separate-stderr llm-link -v -o "$T/x.llm" "$T/d"
	[ -s "$T/x.llm" ] && [ ! -e "$T/d/model.llm" ]
	[[ "$stderr" == *" -shared -o "* ]]
}

@test "without objects named, a build with parts/partition.json links that partition's objects only (issue 17)" {
	fixture_copy "$(fixture a)" "$T/d"
	# the stand-in's phases as a partition set: two kernels and a glue,
	# lowered as parts/<module>.mlir -> obj/<module>.o
	mkdir -p "$T/d/parts" "$T/d/obj/p" "$T/d/obj/old"
	mv "$T/d/obj/prefill.o" "$T/d/obj/prefill_kv.o" "$T/d/obj/p/"
	printf '{"format": "llm-partition/1", "kernels": [{"file": "p/prefill.mlir"}, {"file": "p/prefill_kv.mlir"}],
		"phases": [{"glue": "decode.mlir"}]}\n' >"$T/d/parts/partition.json"
	# an earlier split's object that would not link is not taken
	printf 'not an object' >"$T/d/obj/old/k0.o"
	run -0 --separate-stderr llm-link -v "$T/d"
	[[ "$stderr" == *" $T/d/obj/decode.o $T/d/obj/p/prefill.o $T/d/obj/p/prefill_kv.o "* ]]
	[[ "$stderr" != *old/k0.o* ]]
	# a module of the set not lowered is named
	rm "$T/d/obj/p/prefill.o"
	run -1 --separate-stderr llm-link "$T/d"
	[ "$stderr" = "llm-link: $T/d/obj/p/prefill.o: No such file or directory" ]
	printf '{"format": "llm-partition/1", "kernels": [{"file": "../x.mlir"}]}\n' >"$T/d/parts/partition.json"
	run -1 --separate-stderr llm-link "$T/d"
	[ "$stderr" = "llm-link: $T/d/parts/partition.json: kernels[0]: a module path in parts/ (x/y.mlir) expected" ]
}

@test "llm-link -o elsewhere writes the bundle only, nothing in the build directory (issue 17)" {
	fixture_copy "$(fixture a)" "$T/d"
	mkdir "$T/b"
	before=$(ls -A "$T/d")
	run -0 llm-link -o "$T/b/x.llm" "$T/d"
	[ "$(ls -A "$T/d")" = "$before" ]
	[ "$(ls -A "$T/b")" = x.llm ]
	tar -tf "$T/b/x.llm" | grep -qx libmodel.so
	run -0 llm-run -m "$T/b/x.llm" --tokens 1,2 -n 1
	# a failing link names the bundle's member and leaves no temporary
	rm "$T/d/obj/decode.o"
	run -1 --separate-stderr llm-link -o "$T/b/y.llm" "$T/d"
	[[ "$stderr" == "llm-link: $T/b/y.llm(libmodel.so): missing symbol '_mlir_ciface_llm_decode'"* ]]
	[ "$(ls -A "$T/b")" = x.llm ]
}

@test "objects in subdirectories are linked and hidden directories skipped" {
	fixture_copy "$(fixture a)" "$T/d"
	mkdir -p "$T/d/obj/p/q" "$T/d/obj/.kept"
	mv "$T/d/obj/prefill.o" "$T/d/obj/p/q/"
	mv "$T/d/obj/decode.o" "$T/d/obj/p/"
	echo junk >"$T/d/obj/.kept/broken.o"
	run -0 --separate-stderr llm-link -v "$T/d"
	[[ "$stderr" == *" $T/d/obj/p/decode.o $T/d/obj/p/q/prefill.o $T/d/obj/prefill_kv.o "* ]]
	[ -s "$T/d/model.llm" ]
}

@test "a phase missing from the objects is an error naming its symbol" {
	fixture_copy "$(fixture a)" "$T/d"
	rm "$T/d/obj/decode.o"
	run -1 --separate-stderr llm-link "$T/d"
	[ "$stderr" = "llm-link: $T/d/libmodel.so: missing symbol '_mlir_ciface_llm_decode' (phase 'decode' of $T/d/model.json)" ]
	no_output "$T/d"
}

@test "an object built for another plan is refused" {
	fixture_copy "$(fixture a)" "$T/d"
	other=$(fixture c32 -C 32)
	cp "$other/obj/prefill_kv.o" "$T/d/obj/prefill_kv.o"
	want=$(jq -r .weights.fingerprint "$T/d/model.json")
	got=$(jq -r .weights.fingerprint "$other/model.json")
	run -1 --separate-stderr llm-link "$T/d"
	[ "$stderr" = "llm-link: $T/d/libmodel.so: phase 'prefill_kv' (prefill_kv.mlir) built for plan $got, $T/d/model.json is plan $want" ]
	no_output "$T/d"
}

@test "weights.bin of another plan is refused" {
	fixture_copy "$(fixture a)" "$T/d"
	cp "$(fixture c32 -C 32)/weights.bin" "$T/d/weights.bin"
	run -1 --separate-stderr llm-link "$T/d"
	[ "${#stderr_lines[@]}" -eq 1 ]
	[[ "$stderr" == "llm-link: $T/d/weights.bin: fingerprint "*" does not match the plan's "* ]]
	[ ! -e "$T/d/model.llm" ]
}

@test "a directory without objects is an error" {
	fixture_copy "$(fixture a)" "$T/d"
	rm "$T/d"/obj/*.o
	run -1 --separate-stderr llm-link "$T/d"
	[ "$stderr" = "llm-link: $T/d/obj: no object files" ]
	rm -r "$T/d/obj"
	run -1 --separate-stderr llm-link "$T/d"
	[ "$stderr" = "llm-link: $T/d/obj: No such file or directory" ]
	no_output "$T/d"
}

@test "a damaged object is an error naming it, or the tool that failed" {
	fixture_copy "$(fixture a)" "$T/d"
	echo 'not an object' >"$T/d/obj/prefill.o"
	run -1 --separate-stderr llm-link "$T/d"
	assert_equal "${stderr_lines[-1]}" "llm-link: $T/d/obj/prefill.o: not an ELF64 little-endian object"
	no_output "$T/d"
	# an ELF object the linker refuses: its section headers cut off
	fixture_copy "$(fixture a)" "$T/e"
	head -c 200 "$T/e/obj/decode.o" >"$T/e/obj/prefill.o"
	run -1 --separate-stderr llm-link "$T/e"
	[[ "${stderr_lines[-1]}" == "llm-link: "* ]]
	no_output "$T/e"
}

@test "a missing tokenizer file is an error and leaves no bundle" {
	fixture_copy "$(fixture a)" "$T/d"
	rm "$T/d/tokenizer.json"
	run -1 --separate-stderr llm-link "$T/d"
	[ "$stderr" = "llm-link: $T/d/tokenizer.json: No such file or directory" ]
	[ ! -e "$T/d/model.llm" ]
	[ -z "$(ls -A "$T/d" | grep -e '\.tmp\.')" ]
}

@test "-o through a symbolic link writes its target; onto a FIFO or a device node made here, in place" {
	fixture_copy "$(fixture a)" "$T/d"
	llm-link -o "$T/ref.llm" "$T/d"
	mkdir "$T/b"
	ln -s b/model.llm "$T/link.llm"
	llm-link -o "$T/link.llm" "$T/d"
	[ -L "$T/link.llm" ]
	cmp "$T/ref.llm" "$T/b/model.llm"
	mkfifo "$T/fifo"
	cat "$T/fifo" >"$T/from-fifo" &
	llm-link -o "$T/fifo" "$T/d"
	wait
	[ -p "$T/fifo" ]
	cmp "$T/ref.llm" "$T/from-fifo"
	if mknod "$T/null" c 1 3 2>/dev/null; then
		llm-link -o "$T/null" "$T/d"
		[ -c "$T/null" ]
	fi
}
