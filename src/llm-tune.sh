#!/bin/sh
# llm-tune: measure the tuning table's parameters (lib/compiler/tune.h) for this
# machine on a model built by pipelines/model.mk, and write its CPU's
# entry.  For each prefetch distance the model's decode kernels name
# (prefill.int8_tiles, .bf16_tiles and .three_rows are the target's: not
# measured), each candidate value is lowered (only the kernels that name
# a parameter; the build's other objects are reused) and linked into a
# scratch bundle;
# the bundles' decode rates are then measured in alternating rounds and
# the value with the best median kept.  The build itself is not touched.
# See llm-tune(1).
set -eu
prog=llm-tune
version="@VERSION@"
usage="usage: llm-tune [-v] [-b seconds] [-n tokens] [-o table] [-r rounds] [-t threads]
                [--values list] outdir"
die() { echo "$prog: $*" >&2; exit 1; }
bad_usage() { [ $# -gt 0 ] && echo "$prog: $*" >&2; echo "$usage" >&2; exit 2; }

budget=600 ntok=64 table=tuning.json rounds=2 threads=2 values=0,1024,2048,4096,8192 verbose=0
# long options first (getopts takes short ones only)
for a in "$@"; do
	case $a in
	--help)
		echo "$usage"
		cat <<'EOF'

  outdir               a build directory of pipelines/model.mk (model.json, parts/, obj/, model.llm)
  -b seconds           time budget (default 600): candidates that would pass it are not tried
  -n tokens            decode tokens a measurement (default 64)
  -o table             the tuning table to write (default ./tuning.json; starts from it if it
                       exists, else from share/llm/tuning.json)
  -r rounds            alternating rounds over the candidates (default 2)
  -t threads           threads of the runs (default 2)
  --values list        candidate values in bytes (default 0,1024,2048,4096,8192)
  -v                   echo each command
  -h                   print the usage
  --help, --version    print this help, or the version
EOF
		exit 0 ;;
	--version) echo "$prog $version"; exit 0 ;;
	--) break ;;
	esac
done
args=
while [ $# -gt 0 ]; do
	case $1 in
	--values) [ $# -ge 2 ] || bad_usage "--values needs a list"; values=$2; shift 2 ;;
	--values=*) values=${1#--values=}; shift ;;
	--*) bad_usage "unknown option '$1'" ;;
	*) args="$args $(printf '%s' "$1" | sed "s/'/'\\\\''/g; s/^/'/; s/\$/'/")"; shift ;;
	esac
done
eval "set -- $args"
count() { case $2 in '' | *[!0-9]*) bad_usage "$1: want a positive integer, not '$2'" ;; esac; [ "$2" -gt 0 ] || bad_usage "$1: want a positive integer, not '$2'"; }
while getopts hb:n:o:r:t:v opt; do
	case $opt in
	h) echo "$usage"; exit 0 ;;
	b) count -b "$OPTARG"; budget=$OPTARG ;;
	n) count -n "$OPTARG"; ntok=$OPTARG ;;
	o) table=$OPTARG ;;
	r) count -r "$OPTARG"; rounds=$OPTARG ;;
	t) count -t "$OPTARG"; threads=$OPTARG ;;
	v) verbose=1 ;;
	*) bad_usage ;;
	esac
done
shift $((OPTIND - 1))
[ $# -eq 1 ] || bad_usage
out=${1%/}
for v in $(echo "$values" | tr , ' '); do
	case $v in '' | *[!0-9]*) bad_usage "--values: '$v' is not a count of bytes" ;; esac
done
[ -n "$(echo "$values" | tr -d ', ')" ] || bad_usage "--values: no value"

here=$(cd "$(dirname "$0")" && pwd)
share=${LLM_SHARE:-}
[ -n "$share" ] || { [ -d "$here/../share/llm/pipelines" ] && share=$here/../share/llm; } || share="@SHAREDIR@"
for t in jq llm-lower llm-link llm-run; do
	[ "$t" = jq ] && { command -v jq >/dev/null || die "jq: not found (apt-get install jq)"; continue; }
	[ -x "$here/$t" ] || die "$here/$t: not found"
done
[ -f "$out/model.json" ] || die "$out: no model.json: give a build directory of pipelines/model.mk"
[ -f "$out/parts/parts.mk" ] || die "$out: no parts/parts.mk: build it with pipelines/model.mk first"
# the weights: weights.bin, or model.llm's (model.mk keeps them there)
[ -f "$out/weights.bin" ] || [ -f "$out/model.llm" ] || die "$out: no weights.bin or model.llm: build it with pipelines/model.mk first"
flags=
# the build's own llm-lower flags (pipelines/model.mk keeps them), but
# for what only changes what llm-lower says
[ -f "$out/obj/target.flags" ] && for f in $(cat "$out/obj/target.flags"); do
	case $f in -v | -s) ;; *) flags="$flags $f" ;; esac
done
case " $flags " in *" --tuning "*) die "$out: built with --tuning: rebuild it with the default table first" ;; esac
# the modules to lower, as parts.mk lists them
command -v make >/dev/null || die "make: not found"
parts=$(printf 'include %s\nparts:\n\t@echo $(LLM_PARTS)\n' "$out/parts/parts.mk" | make -s -f - parts) ||
	die "$out/parts/parts.mk: unreadable"
[ -n "$parts" ] || die "$out/parts/parts.mk: no modules"
tuned= fixed=
for p in $parts; do
	[ -f "$out/parts/$p.mlir" ] || die "$out/parts/$p.mlir: missing: build it with pipelines/model.mk first"
	if grep -q 'llm.tune = "decode\.prefetch_bytes\.' "$out/parts/$p.mlir"; then
		tuned="$tuned $p"
	else
		[ -f "$out/obj/$p.o" ] || die "$out/obj/$p.o: missing: build it with pipelines/model.mk first"
		fixed="$fixed $out/obj/$p.o"
	fi
done
params=$(cat $(for p in $tuned; do echo "$out/parts/$p.mlir"; done) /dev/null |
	grep -o 'llm.tune = "[^"]*"' | sed 's/.*"\(.*\)"/\1/' | grep '^decode\.prefetch_bytes\.' | sort -u)
[ -n "$params" ] || die "$out: its kernels name no tunable parameter (a model without int8 products: nothing to tune)"
base=$table
[ -f "$base" ] || base=$share/tuning.json
[ -f "$base" ] || die "$base: no tuning table"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/llm-tune.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
trap 'rm -rf "$tmp"; trap - INT; kill -INT $$' INT
trap 'rm -rf "$tmp"; trap - TERM; kill -TERM $$' TERM
run() { [ "$verbose" = 1 ] && echo "$*" >&2; "$@"; }
# the CPU the build's objects are for: the entry to write
cpu=$(jq -r .cpu "$out/target.json" 2>/dev/null || true)
[ -n "$cpu" ] && [ "$cpu" != null ] || cpu=$(tar -xOf "$out/model.llm" target.json 2>/dev/null | jq -r .cpu) ||
	die "$out: no target.json: link it with pipelines/model.mk first"
jq -e '.format == "llm-tuning/1"' "$base" >/dev/null || die "$base: not a tuning table (format llm-tuning/1)"
cp "$base" "$tmp/best.json"
echo "$prog: $out for $cpu: parameters $(echo $params), candidates $values bytes, budget $budget s" >&2

# times in milliseconds
now() { echo $(($(date +%s%N) / 1000000)); }
start=$(now) measured= cost=0
elapsed() { echo $(($(now) - start)); }
# build VALUE PARAM: the bundle with PARAM = VALUE, in $tmp/$PARAM.$VALUE.llm
build() {
	t=$tmp/$2.$1
	mkdir -p "$t"
	jq --arg c "$cpu" --arg p "$2" --argjson v "$1" '.cpus[$c].params[$p] = $v' "$tmp/best.json" >"$t/table.json"
	objs=
	for p in $tuned; do
		mkdir -p "$t/obj/$(dirname "$p")"
		run "$here/llm-lower" $flags --tuning "$t/table.json" -o "$t/obj/$p.o" "$out/parts/$p.mlir" >&2
		objs="$objs $t/obj/$p.o"
	done
	run "$here/llm-link" -o "$t.llm" "$out" $fixed $objs >&2
	rm -rf "$t"
}
for param in $params; do
	tried=
	for v in $(echo "$values" | tr , ' '); do
		t0=$(now)
		# cost: the last candidate's build and run (of this parameter or
		# the one before), to be paid again for this one and its rounds
		if [ -n "$measured$tried" ] && [ $(($(elapsed) + cost * (rounds + 1))) -gt $((budget * 1000)) ]; then
			echo "$prog: $param=$v not tried: the budget of $budget s would be passed" >&2
			continue
		fi
		build "$v" "$param"
		# one measurement to size the rounds: build and run
		run "$here/llm-run" -m "$tmp/$param.$v.llm" -t "$threads" --json --bench -p 0 -n "$ntok" -r 1 >/dev/null
		cost=$(($(now) - t0))
		tried="$tried $v"
	done
	if [ -z "$tried" ]; then
		echo "$prog: $param not measured (the budget of $budget s is spent): it keeps the table's value" >&2
		continue
	fi
	: >"$tmp/rates"
	r=1
	while [ "$r" -le "$rounds" ]; do
		for v in $tried; do
			tps=$(run "$here/llm-run" -m "$tmp/$param.$v.llm" -t "$threads" --json --bench -p 0 -n "$ntok" -r 1 |
				jq -r '.[0].tokens_per_s')
			echo "$v $tps" >>"$tmp/rates"
		done
		r=$((r + 1))
	done
	# the median of each value's rounds; the best median wins
	summary= best= bestv=
	for v in $tried; do
		m=$(awk -v v="$v" '$1 == v { print $2 }' "$tmp/rates" | sort -g |
			awk '{ a[NR] = $1 } END { print (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2) }')
		all=$(awk -v v="$v" '$1 == v { printf "%s%.1f", s, $2; s = "/" }' "$tmp/rates")
		printf '%s: %s=%s: tg%s %s t/s (median %.1f)\n' "$prog" "$param" "$v" "$ntok" "$all" "$m" >&2
		summary="$summary $v:$(printf '%.1f' "$m")"
		if [ -z "$best" ] || awk -v a="$m" -v b="$best" 'BEGIN { exit !(a > b) }'; then
			best=$m bestv=$v
		fi
	done
	printf '%s: %s = %s (%.1f t/s)\n' "$prog" "$param" "$bestv" "$best" >&2
	model=$(jq -r '.source.files[0]' "$out/model.json")
	what="$(date -u +%Y-%m-%d), $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1) ($(nproc) CPUs), llm-tune on $model ($(jq -r .dtypes.weights "$out/model.json"), activations $(jq -r .dtypes.activations "$out/model.json")), $threads threads, tg$ntok median of $rounds rounds; $param t/s by value:$summary"
	measured="${measured:+$measured; }$what"
	jq --arg c "$cpu" --arg p "$param" --argjson v "$bestv" --arg w "$measured" \
		'.cpus[$c].params[$p] = $v | .cpus[$c].measured = $w' "$tmp/best.json" >"$tmp/next.json"
	mv "$tmp/next.json" "$tmp/best.json"
	rm -f "$tmp/$param".*.llm
done
# written atomically beside the target (never through a link or a device)
if [ -L "$table" ] || { [ -e "$table" ] && [ ! -f "$table" ]; }; then
	die "$table: not a regular file"
fi
dir=$(dirname "$table")
new=$(mktemp "$dir/.tuning.XXXXXX") || die "$table: cannot write beside it"
if jq . "$tmp/best.json" >"$new" && chmod 644 "$new" && mv "$new" "$table"; then
	echo "$prog: wrote $cpu's entry to $table (use it: llm-lower --tuning $table, or LOWER_FLAGS='--tuning $table')" >&2
else
	rm -f "$new"
	die "$table: write error"
fi
