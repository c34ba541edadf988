# The stand-in model of the llm-link and llm-run suites: mkrunmodel writes
# model.json, weights.bin, tokenizer.json and the three phases from
# tests/fixtures/llm-run/phase.mlir.in; they are lowered here with the
# stock MLIR tools (not llm-lower: its pipelines are for real models).
# Vocabulary 258 (bytes, <s> = 256, </s> = 257 = EOS).  The diagnostics
# the phases write into logits[0..8] are described in the template.

FX_VOCAB=258

# fixture_lower DIR: DIR/obj/<phase>.o from DIR/<phase>.mlir.
fixture_lower() {
	local b=${LLVM_BINDIR:-/usr/lib/llvm-22/bin} p
	mkdir -p "$1/obj"
	for p in prefill prefill_kv decode; do
		"$b/mlir-opt" "$1/$p.mlir" --convert-scf-to-openmp --convert-scf-to-cf \
			--expand-strided-metadata --finalize-memref-to-llvm --convert-to-llvm \
			--reconcile-unrealized-casts -o "$1/$p.ll.mlir" || return 1
		"$b/mlir-translate" --mlir-to-llvmir "$1/$p.ll.mlir" -o "$1/$p.ll" || return 1
		"$b/llc" -O2 -relocation-model=pic -filetype=obj "$1/$p.ll" -o "$1/obj/$p.o" || return 1
		rm -f "$1/$p.ll.mlir" "$1/$p.ll"
	done
}

# fixture NAME [mkrunmodel options]: a lowered (not linked) build
# directory, made once per file; prints its path.  Copy it before changing
# it (fixture_copy).
fixture() {
	local name=$1 d
	shift
	d="$BATS_FILE_TMPDIR/fx-$name"
	if [ ! -d "$d" ]; then
		mkrunmodel "$@" -o "$d.new" "$PROJECT_ROOT/tests/fixtures/llm-run/phase.mlir.in" >&2 &&
			fixture_lower "$d.new" >&2 && mv "$d.new" "$d" || return 1
	fi
	echo "$d"
}

# fixture_linked NAME [options]: the same after llm-link (another
# directory, also made once per file).
fixture_linked() {
	local src d="$BATS_FILE_TMPDIR/fx-$1.linked"
	if [ ! -d "$d" ]; then
		src=$(fixture "$@") || return 1
		cp -r "$src" "$d.new" && llm-link "$d.new" >&2 && mv "$d.new" "$d" || return 1
	fi
	echo "$d"
}

# fixture_copy SRC DEST: a private copy.
fixture_copy() {
	rm -rf "$2"
	cp -r "$1" "$2"
}

# diag FILE ROW: logits[0..8] of a row, negated, as integers:
# "phase pos n_tokens history threads future weights_bytes kv_bytes vocab".
diag() {
	od -An -v -tf4 -j $(($2 * FX_VOCAB * 4)) -N36 "$1" |
		awk '{ for (i = 1; i <= NF; i++) printf "%s%d", (n++ ? " " : ""), -$i } END { print "" }'
}

# logit FILE ROW INDEX: one value.
logit() {
	od -An -v -tf4 -j $((($2 * FX_VOCAB + $3) * 4)) -N4 "$1" | tr -d ' '
}

# rows FILE: the number of logits rows.
rows() {
	echo $(($(stat -c %s "$1") / (FX_VOCAB * 4)))
}
