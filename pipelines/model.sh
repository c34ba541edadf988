#!/bin/sh
# pipelines/model.sh: the steps of pipelines/model.mk as a plain shell
# pipeline, one after the other, for reading or for machines without make.
#
#   pipelines/model.sh checkpoint outdir [strategy]
#
# The llm-* programs come from PATH (PATH=$PWD/bin:$PATH in the source
# tree).  model.mk does the same with parallel lowering and incremental
# rebuilds.
set -eu
[ $# -ge 2 ] || { echo "usage: model.sh checkpoint outdir [none|layer|stage]" >&2; exit 2; }
model=$1 out=$2 strategy=${3:-layer}

llm-import -o "$out" "$model"                      # model.json + phase MLIR
llm-pack-weights "$out/model.json"                 # weights.bin
llm-split -s "$strategy" -o "$out/parts" "$out/model.json" >&2
llm-verify-partition -q "$out/parts/partition.json"
objs=
for m in $(cd "$out/parts" && find . -name '*.mlir' | sort); do
	o=$out/obj/${m%.mlir}.o
	mkdir -p "$(dirname "$o")"
	llm-lower -o "$o" "$out/parts/$m"              # one object per module
	objs="$objs $o"
done
# shellcheck disable=SC2086
llm-link -o "$out/model.llm" "$out" $objs          # libmodel.so + bundle
echo "$out/model.llm"
