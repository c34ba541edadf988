#!/usr/bin/env bats
# Tensor and pipeline parallelism over MPI (issue 47): models built with
# llm-import --tp N or --pp N and run as N ranks by MPICH's launcher (mpiexec.hydra, what
# ./configure installs; the model library links MPICH's ABI, model.h),
# on this machine's loopback.  Under --tp each rank holds its part of
# every layer, and the logits equal one process's within the rounding of
# the all-reduce's other order of sums; under --pp each holds a range of
# the layers, and the logits are one process's, bit for bit.

bats_require_minimum_version 1.5.0

setup_file() {
	load test_helper/common-setup
	_common_setup
	command -v mpiexec.hydra >/dev/null || return 0
	local F=$BATS_FILE_TMPDIR s="$SHARED/fixtures/stories260K/stories260K.gguf"
	if [ -f "$s" ]; then
		build "$s" "$F/s1"
		build "$s" "$F/s2" --tp 2
		build "$s" "$F/sp5" --pp 5
	fi
	ensure_tokenizer
	mkmodel --preset tiny --family qwen2 --vocab 151937 --seed 3 -o "$F/q" >&2
	build "$F/q" "$F/q1"
	build "$F/q" "$F/q2" --tp 2
	build "$F/q" "$F/q4" --tp 4
	build "$F/q" "$F/q8-1" --dtype q8_0 --activations q8
	build "$F/q" "$F/q8-2" --dtype q8_0 --activations q8 --tp 2
	build "$F/q" "$F/qp2" --pp 2
}

setup() {
	load test_helper/common-setup
	_common_setup
	F=$BATS_FILE_TMPDIR
	T=$BATS_TEST_TMPDIR
	command -v mpiexec.hydra >/dev/null || skip "no MPICH launcher (mpiexec.hydra): ./configure installs mpich"
}

# build SRC OUT [IMPORT_FLAGS...]: pipelines/model.mk
build() {
	make -s -f "$PROJECT_ROOT/pipelines/model.mk" LLM="${LLM_BIN:-$PROJECT_ROOT/bin}/" MODEL="$1" OUT="$2" \
		IMPORT_FLAGS="${*:3}" -j2 >&2
}

# descendants PID NAME: the processes called NAME under PID (its children,
# theirs, ...): a test's own, not every one of that name on the machine.
descendants() {
	local kids k
	kids=$(pgrep -P "$1" || true)
	for k in $kids; do
		[ "$(cat "/proc/$k/comm" 2>/dev/null)" != "$2" ] || echo "$k"
		descendants "$k" "$2"
	done
}

# ranks N ARGS...: llm-run as N ranks, at most 60 s
ranks() {
	local n=$1
	shift
	timeout 60 mpiexec.hydra -np "$n" "$(command -v llm-run)" -t 1 "$@"
}

@test "llm-import --tp: heads, KV heads and intermediate_size must split; a plan of rank images" {
	ensure_tokenizer
	mkmodel --preset tiny --family qwen2 --seed 3 -o "$T/ck" >&2
	run -1 llm-import --tp 3 -o "$T/o" "$T/ck"
	assert_output "llm-import: $T/ck: 4 heads, 2 KV heads and intermediate_size 128 do not split over 3 ranks (heads and intermediate_size must divide, KV heads divide or be a divisor of the ranks)"
	[ ! -e "$T/o/model.json" ]
	run -2 llm-import --tp 65 -o "$T/o" "$T/ck"
	# rank 1's image repeats rank 0's at data_bytes / 2: q by rows, o by columns
	run -0 jq -c '[.limits.tp, (.weights.tensors | length),
		(.weights.tensors[] | select(.name == "layers.0.wq@1" or .name == "layers.0.wo@1") |
		[.name, .shape, .first_row, .first_col])]' "$F/q2/model.json"
	assert_output '[2,58,["layers.0.wq@1",[32,64],32,null],["layers.0.wo@1",[64,32],null,32]]'
}

@test "stories260K as 2 ranks: the greedy text of one process, logits within 1e-6 of the largest" {
	[ -d "$F/s2" ] || skip "no stories260K fixture"
	llm-run -t 1 -m "$F/s1/model.llm" -p "Once upon a time" -n 32 --temp 0 --logits "$T/one.f32" >"$T/one.txt" 2>/dev/null
	ranks 2 -m "$F/s2/model.llm" -p "Once upon a time" -n 32 --temp 0 --logits "$T/two.f32" >"$T/two.txt" 2>/dev/null
	cmp "$T/one.txt" "$T/two.txt"
	[ "$(wc -w <"$T/two.txt")" -gt 15 ]
	run -0 cmpf32 -g -c 512 -r 1e-6 "$T/one.f32" "$T/two.f32"
	echo "stories260K, TP=2: $output" >&3
}

@test "the tiny Qwen2 (2 KV heads, an odd vocabulary) as 2 ranks, and as 4 whose KV heads are shared by two" {
	llm-run -t 1 -m "$F/q1/model.llm" --tokens 1,2,3,151936 -n 8 --logits "$T/one.f32" >/dev/null 2>&1
	for n in 2 4; do
		ranks "$n" -m "$F/q$n/model.llm" --tokens 1,2,3,151936 -n 8 --logits "$T/n.f32" >/dev/null 2>&1
		run -0 cmpf32 -g -c 151937 -r 1e-6 "$T/one.f32" "$T/n.f32"
		echo "tiny Qwen2, TP=$n: $output" >&3
	done
}

@test "the tiny Qwen2 quantized to Q8_0 with int8 activations, as 2 ranks: o's and down's columns split at whole blocks" {
	run -0 jq -r '.weights.tensors[] | select(.name == "layers.1.wdown@1") | "\(.layout) \(.shape) \(.first_col)"' \
		"$F/q8-2/model.json"
	assert_output "i8-r8-g32-f16 [64,64] 64"
	llm-run -t 1 -m "$F/q8-1/model.llm" --tokens 1,2,3,151936 -n 8 --logits "$T/one.f32" >/dev/null 2>&1
	ranks 2 -m "$F/q8-2/model.llm" --tokens 1,2,3,151936 -n 8 --logits "$T/two.f32" >/dev/null 2>&1
	run -0 cmpf32 -g -c 151937 -r 1e-6 "$T/one.f32" "$T/two.f32"
	echo "tiny Qwen2 Q8_0, TP=2: $output" >&3
}

@test "pipeline parallel: the tiny Qwen2's 2 layers over 2 ranks, stories260K's 5 over 5: the logits of one process, bit for bit" {
	run -1 llm-import --pp 2 -o "$T/o" "$F/q" --tp 2
	assert_output "llm-import: $F/q: --tp and --pp together are not supported yet"
	run -1 llm-import --pp 3 -o "$T/o" "$F/q"
	assert_output "llm-import: $F/q: 2 layers do not split over 3 ranks (--pp must divide them)"
	# rank 1's image holds layer 1 of the checkpoint as its layer 0
	run -0 jq -c '[.limits.pp, (.weights.tensors[] | select(.name == "layers.0.wq@1") | .source)]' "$F/qp2/model.json"
	assert_output '[2,["model.layers.1.self_attn.q_proj.weight"]]'
	llm-run -t 1 -m "$F/q1/model.llm" --tokens 1,2,3,151936 -n 8 --logits "$T/one.f32" >/dev/null 2>&1
	ranks 2 -m "$F/qp2/model.llm" --tokens 1,2,3,151936 -n 8 --logits "$T/two.f32" >/dev/null 2>&1
	cmpf32 -g -c 151937 "$T/one.f32" "$T/two.f32"
	[ -d "$F/sp5" ] || skip "no stories260K fixture"
	llm-run -t 1 -m "$F/s1/model.llm" -p "Once upon a time" -n 32 --temp 0 --logits "$T/one.f32" >"$T/one.txt" 2>/dev/null
	ranks 5 -m "$F/sp5/model.llm" -p "Once upon a time" -n 32 --temp 0 --logits "$T/five.f32" >"$T/five.txt" 2>/dev/null
	cmp "$T/one.txt" "$T/five.txt"
	cmpf32 -g -c 512 "$T/one.f32" "$T/five.f32"
	run -1 --separate-stderr ranks 3 -m "$F/qp2/model.llm" --tokens 1,2 -n 2
	assert_equal "${stderr_lines[*]}" "llm-run: $F/qp2/model.llm: model.json: built for 2 ranks (llm-import --pp), run as 3 (mpirun -np)"
}

@test "ranks that cannot run together stop together, with one message from rank 0" {
	# another count
	run -1 --separate-stderr ranks 3 -m "$F/q2/model.llm" --tokens 1,2 -n 2
	assert_equal "${stderr_lines[*]}" "llm-run: $F/q2/model.llm: model.json: built for 2 ranks (llm-import --tp), run as 3 (mpirun -np)"
	# another plan on rank 1 (the same model split over 4)
	run -1 --separate-stderr timeout 60 mpiexec.hydra -np 1 "$(command -v llm-run)" -m "$F/q2/model.llm" --tokens 1 -n 1 : \
		-np 1 "$(command -v llm-run)" -m "$F/q4/model.llm" --tokens 1 -n 1
	assert_equal "${stderr_lines[*]}" "llm-run: $F/q2/model.llm: model.json: the 2 ranks do not run one model: their bundles' plans (fingerprints), --tp, --pp or phases differ"
	# a model of one process among them
	run -1 --separate-stderr timeout 60 mpiexec.hydra -np 1 "$(command -v llm-run)" -m "$F/q2/model.llm" --tokens 1 -n 1 : \
		-np 1 "$(command -v llm-run)" -m "$F/q1/model.llm" --tokens 1 -n 1
	assert_equal "${stderr_lines[*]}" "llm-run: $F/q1/model.llm: model.json: not a tensor-parallel model (llm-import --tp), but run as one of 2 ranks (mpirun -np)"
	# and a model of tp ranks run alone
	run -1 llm-run -m "$F/q2/model.llm" --tokens 1 -n 1
	assert_output "llm-run: $F/q2/model.llm: model.json: built for 2 ranks (llm-import --tp), run as 1 (mpirun -np)"
}

@test "a rank killed in the middle of generation ends the others within 10 s" {
	timeout 60 mpiexec.hydra -np 2 "$(command -v llm-run)" -t 1 -m "$F/q2/model.llm" --tokens 1 -n 1000000 \
		--ignore-eos --temp 1 >"$T/out" 2>"$T/err" &
	local job=$! pid= i ranks=
	for i in $(seq 100); do
		ranks=$(descendants "$job" llm-run)
		for p in $ranks; do
			tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx PMI_RANK=1 && pid=$p
		done
		[ -n "$pid" ] && break
		sleep 0.1
	done
	[ -n "$pid" ]
	sleep 1 # generating
	kill -9 "$pid"
	local t0=$SECONDS rc=0
	wait "$job" || rc=$?
	echo "killed rank 1: mpiexec.hydra exit $rc after $((SECONDS - t0)) s" >&3
	[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ]
	[ $((SECONDS - t0)) -le 10 ]
	# the job's ranks (this test's own: not every llm-run of the machine) are gone
	for p in $ranks; do ! kill -0 "$p" 2>/dev/null; done
}

@test "llm-serve as 2 ranks: rank 0 serves, the completion is one process's text" {
	[ -d "$F/s2" ] || skip "no stories260K fixture"
	timeout 60 mpiexec.hydra -np 2 "$(command -v llm-serve)" -m "$F/s2/model.llm" -t 1 --port 0 2>"$T/serve.log" &
	local job=$! url= i
	for i in $(seq 100); do
		url=$(sed -n 's/.*listening on \(http:[^ ]*\).*/\1/p' "$T/serve.log")
		[ -n "$url" ] && break
		sleep 0.1
	done
	[ -n "$url" ]
	local ranks
	ranks=$(descendants "$job" llm-serve)
	[ "$(wc -w <<<"$ranks")" -eq 2 ]
	run -0 curl -s "$url/v1/completions" -H 'Content-Type: application/json' \
		-d '{"prompt": "Once upon a time", "max_tokens": 16, "temperature": 0}'
	local text
	text=$(jq -r '.choices[0].text' <<<"$output")
	run -0 --separate-stderr llm-run -t 1 -m "$F/s1/model.llm" -p "Once upon a time" -n 16 --temp 0
	assert_output "Once upon a time$text"
	# SIGTERM to rank 0 (what a service manager sends the job: hydra
	# forwards it to every rank; llm-serve blocks it in a thread of its
	# own, so the other rank ends when rank 0 closes the model)
	local hydra
	hydra=$(descendants "$job" mpiexec.hydra)
	kill -TERM $hydra
	local rc=0
	wait "$job" || rc=$?
	[ "$rc" -eq 0 ]
	for p in $ranks; do ! kill -0 "$p" 2>/dev/null; done
}

# Two network namespaces joined by a veth pair, as two hosts: MPICH's
# launcher runs in the first and starts each rank in its host's namespace
# through a stand-in for ssh, and the ranks talk TCP over the pair.
@test "two ranks in two network namespaces joined by a veth pair, as two hosts: the text and logits of loopback's" {
	[ -d "$F/s2" ] || skip "no stories260K fixture"
	command -v ip >/dev/null || skip "no ip (iproute2)"
	NS0=llmtest$$a NS1=llmtest$$b
	ip netns add "$NS0" 2>/dev/null || skip "cannot make network namespaces here (ip netns add: not root, or not allowed)"
	ip netns add "$NS1"
	ip link add "v$$a" type veth peer name "v$$b" 2>/dev/null || skip "cannot make a veth pair here"
	ip link set "v$$a" netns "$NS0"
	ip link set "v$$b" netns "$NS1"
	ip -n "$NS0" addr add 10.47.0.1/24 dev "v$$a"
	ip -n "$NS1" addr add 10.47.0.2/24 dev "v$$b"
	for n in "$NS0" "$NS1"; do ip -n "$n" link set lo up; done
	ip -n "$NS0" link set "v$$a" up
	ip -n "$NS1" link set "v$$b" up
	cat >"$T/nsexec" <<EOS
#!/bin/sh
# ssh for hydra: [options] host command... runs command in host's namespace
while [ \$# -gt 0 ]; do case \$1 in -*) shift ;; *) break ;; esac; done
case \$1 in 10.47.0.1) ns=$NS0 ;; 10.47.0.2) ns=$NS1 ;; *) echo "nsexec: no host \$1" >&2; exit 1 ;; esac
shift
exec ip netns exec \$ns sh -c "\$*"
EOS
	chmod +x "$T/nsexec"
	local run="timeout 60 ip netns exec $NS0 mpiexec.hydra -hosts 10.47.0.1,10.47.0.2 -ppn 1 -np 2 -launcher ssh"
	run="$run -launcher-exec $T/nsexec -iface v$$a"
	# each rank in its own namespace
	$run sh -c 'echo "$PMI_RANK $(readlink /proc/self/ns/net)"' | sort >"$T/ns.txt"
	[ "$(cut -d' ' -f2 "$T/ns.txt" | sort -u | wc -l)" -eq 2 ]
	$run "$(command -v llm-run)" -t 1 -m "$F/s2/model.llm" -p "Once upon a time" -n 24 --temp 0 \
		--logits "$T/ns.f32" >"$T/ns.out" 2>/dev/null
	ranks 2 -m "$F/s2/model.llm" -p "Once upon a time" -n 24 --temp 0 --logits "$T/lo.f32" >"$T/lo.out" 2>/dev/null
	cmp "$T/lo.out" "$T/ns.out"
	cmpf32 "$T/lo.f32" "$T/ns.f32"
}

teardown() {
	if [ -n "${NS0:-}" ]; then
		ip netns del "$NS0" 2>/dev/null || true
		ip netns del "$NS1" 2>/dev/null || true
	fi
}
