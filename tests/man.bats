#!/usr/bin/env bats
# The EXAMPLES of every man page run, as jq runs its manual's: each command
# is taken from the page itself (.Dl lines and .Bd -literal blocks, "$ "
# prompts and "> " continuations as a shell reads them) and run in a
# directory holding the files the page names, made here from mkmodel
# checkpoints.  llm-run(1)'s examples run in tests/llm-run.bats, beside the
# fixtures they need.

setup_file() {
	load test_helper/common-setup
	_common_setup
	ensure_tokenizer
	mkmodel --preset tiny --family qwen2 --dtype bf16 --seed 5 -o "$BATS_FILE_TMPDIR/ckpt" >&2
}

setup() {
	load test_helper/common-setup
	_common_setup
	T=$BATS_TEST_TMPDIR
	cd "$T"
	ln -s "$BATS_FILE_TMPDIR/ckpt" ckpt
}

# examples PAGE: the commands of PAGE's EXAMPLES section, each ended by a
# NUL (a command of a literal block may span lines).
examples() {
	awk '
		function out(s) {
			gsub(/\\e/, "\\", s); gsub(/\\\(dq/, "\"", s); gsub(/\\&/, "", s)
			printf "%s%c", s, 0
		}
		/^\.Sh / { on = ($2 == "EXAMPLES"); next }
		!on { next }
		/^\.Bd -literal/ { lit = 1; cmd = ""; next }
		/^\.Ed/ { if (cmd != "") out(cmd); lit = 0; cmd = ""; next }
		lit && /^> / { cmd = cmd "\n" substr($0, 3); next }
		lit { if (cmd != "") out(cmd); cmd = $0; sub(/^\$ /, "", cmd); next }
		/^\.Dl / { s = substr($0, 5); sub(/^\$ /, "", s); out(s) }
	' "$PROJECT_ROOT/man/$1"
}

# run_examples PAGE: runs its commands in order in the current directory,
# each with bash -e; the first that fails fails the test.  Sets n to how
# many ran.
run_examples() {
	local cmd
	n=0
	while IFS= read -r -d '' cmd; do
		run -0 bash -ec "$cmd" </dev/null
		n=$((n + 1))
	done < <(examples "$1")
}

# imported DIR: llm-import and llm-pack-weights of the tiny checkpoint.
imported() {
	llm-import -o "$1" --max-context 128 --prefill-chunk 32 ckpt >&2
	llm-pack-weights "$1/model.json" >&2
}

@test "the examples read out of a page keep their commands whole" {
	run -0 bash -c "$(declare -f examples); PROJECT_ROOT='$PROJECT_ROOT'; examples llm-link.1 | tr '\\0' '|'"
	assert_output "mkdir -p out/obj; for p in prefill prefill_kv decode embed; do
  llm-lower -o out/obj/\$p.o out/\$p.mlir; done|llm-link out|CC='clang-22 -fuse-ld=lld' llm-link -v -o model.llm out|"
}

@test "llm-import(1): the examples run" {
	ln -s ckpt DeepSeek-R1-Distill-Qwen-1.5B
	# a small llama GGUF, and a "quantized" one (two Q8_0 matrices)
	mkmodel --preset tiny --family llama --dtype bf16 --seed 5 -o llama >&2
	node "$PROJECT_ROOT/tests/tools/hf2gguf.mjs" llama stories260K.gguf
	node "$PROJECT_ROOT/tests/tools/hf2gguf.mjs" --q8 blk.0.attn_q.weight --q8 blk.0.ffn_down.weight \
		ckpt DeepSeek-R1-Distill-Qwen-1.5B-Q4_K_M.gguf
	run_examples llm-import.1
	[ "$n" -eq 6 ]
	# the last one quantized (64 columns: Q4_K_M's fallbacks for rows not a
	# multiple of 256, as llama-quantize's)
	[ "$(jq '[.weights.tensors[].quant | select(.)] | length > 0' out/model.json)" = true ]
	[ -s out/weights.bin ]
}

@test "llm-pack-weights(1): the examples run" {
	run_examples llm-pack-weights.1
	[ "$n" -eq 2 ]
	[ -s out/weights.bin ]
}

@test "llm-split(1) and llm-verify-partition(1): the examples run" {
	imported out
	run_examples llm-split.1
	[ "$n" -eq 2 ]
	[ -s stage-parts/partition.json ]
	run_examples llm-verify-partition.1
	[ "$n" -eq 2 ]
	[ "$(jq .counts.violations r.json)" = 0 ]
}

@test "llm-lower(1) and llm-link(1): the examples run" {
	imported out
	llm-split -o parts out/model.json >&2
	cp "parts/$(jq -r '[.kernels[] | select(.kind == "prefill")][0].file' parts/partition.json)" p3.mlir
	run_examples llm-lower.1
	[ "$n" -eq 3 ]
	"$LLVM_BINDIR/llvm-objcopy" --dump-section=.llm.target=p3.json p3.o
	[ "$(jq -r .triple p3.json)" = riscv64-unknown-linux-gnu ]
	run_examples llm-link.1
	[ "$n" -eq 3 ]
	[ -s out/model.llm ] && [ -s model.llm ]
	# -o model.llm: libmodel.so and target.json in the bundle, no temporary left
	[ "$(tar -tf model.llm | grep -cx 'libmodel.so\|target.json')" -eq 2 ]
	! ls -A | grep -q '^\.model\.llm\.'
	llm-run -m model.llm --tokens 1,2,3 -n 2 >/dev/null
}

@test "llm-tune(1): the examples run" {
	ln -s "$PROJECT_ROOT/pipelines" pipelines
	ln -s "${LLM_BIN:-$PROJECT_ROOT/bin}" bin
	run_examples llm-tune.1
	[ "$n" -eq 3 ]
	cpu=$(jq -r .cpu b/target.json)
	jq -e --arg c "$cpu" '.cpus[$c].params | length > 0' tuning.json
	[ "$(cat b/obj/target.flags)" = "--tuning tuning.json" ]
	llm-run -m b/model.llm --tokens 1,2,3 -n 2 >/dev/null
}

@test "llm-serve(1): the examples run" {
	mkdir -p build/r1
	make -s -f "$PROJECT_ROOT/pipelines/model.mk" LLM="${LLM_BIN:-$PROJECT_ROOT/bin}/" MODEL=ckpt OUT=build/r1 \
		IMPORT_FLAGS="--max-context 128 --prefill-chunk 16" >&2
	run_examples llm-serve.1
	# the example's server: the llm-serve whose working directory is this test's
	for p in $(pgrep -x llm-serve); do
		[ "$(readlink "/proc/$p/cwd")" != "$PWD" ] || kill "$p"
	done
	[ "$n" -eq 2 ]
	assert_output --partial '"object":"chat.completion"'
}

@test "llm(7): the examples run" {
	ln -s "$PROJECT_ROOT/pipelines" pipelines
	ln -s "${LLM_BIN:-$PROJECT_ROOT/bin}" bin
	run_examples llm.7
	[ "$n" -ge 3 ]
	[ -s build/model.llm ]
}
