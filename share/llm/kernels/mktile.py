#!/usr/bin/env python3
"""mktile.py: writes tile-generic.mlir, the portable form of the int8 tile
kernel @llm_qtile_i8 (share/doc/llm/ir.txt "Kernels"), to stdout.

The kernels are spliced into every module that declares them, and the
pipelines lower llvm.func bodies with the 1-D vector patterns only, so
the form is written in 1-D vector ops: for each row m of w, each 4 codes
of a quad q broadcast over x's 16 rows (a shuffle of w as 64 i32), times
the quad's 64 bytes of x, summed over the quads, then over each row's 4
lanes.  tests/llm-lower.bats checks that the file is what this writes.
"""


def idx(v):
    return ", ".join(str(i) for i in v)


def main():
    out = []
    p = out.append
    p("// The int8 tile kernel of prefill's quantized products (share/doc/llm/")
    p("// ir.txt \"Kernels\"), portable form: vector arithmetic, for every target")
    p("// without AMX (target.c: llm_target_tile_kernels).  The phases call it")
    p("// only where the tuning table's prefill.int8_tiles asks for the tile")
    p("// products (by default, on targets with AMX-INT8, which take amx.mlir), so")
    p("// this form runs where a table forces them: tests/quant.bats checks the")
    p("// tile products' integers and layouts with it on any CPU.  Written by")
    p("// mktile.py.")
    p("//")
    p("// @llm_qtile_i8(w, x) -> c, one block of 8 rows of W by 16 rows of x over")
    p("// 32 codes (one group): w is 8 rows of 32 signed codes, row-major; x is")
    p("// the 16 rows' 32 signed codes in quads, x[64q + 4n + i] = code 4q + i of")
    p("// row n (the layout of a tile's B operand); c[16m + n] = sum over k < 32")
    p("// of w[32m + k] * code k of row n, exact.")
    p("llvm.func internal @llm_qtile_i8(%w: vector<256xi8>, %x: vector<512xi8>) -> vector<128xi32> {")
    p("  %wd = vector.bitcast %w : vector<256xi8> to vector<64xi32>")
    for q in range(8):
        p("  %%xq%d = vector.shuffle %%x, %%x [%s] : vector<512xi8>, vector<512xi8>"
          % (q, idx(range(64 * q, 64 * q + 64))))
        p("  %%xe%d = arith.extsi %%xq%d : vector<64xi8> to vector<64xi32>" % (q, q))
    for m in range(8):
        for q in range(8):
            p("  %%b%d_%d = vector.shuffle %%wd, %%wd [%s] : vector<64xi32>, vector<64xi32>"
              % (m, q, idx([8 * m + q] * 16)))
            p("  %%c%d_%d = vector.bitcast %%b%d_%d : vector<16xi32> to vector<64xi8>" % (m, q, m, q))
            p("  %%e%d_%d = arith.extsi %%c%d_%d : vector<64xi8> to vector<64xi32>" % (m, q, m, q))
            p("  %%p%d_%d = arith.muli %%e%d_%d, %%xe%d : vector<64xi32>" % (m, q, m, q, q))
        for q in range(1, 8):
            prev = "%%p%d_0" % m if q == 1 else "%%s%d_%d" % (m, q - 1)
            p("  %%s%d_%d = arith.addi %s, %%p%d_%d : vector<64xi32>" % (m, q, prev, m, q))
        for i in range(4):
            p("  %%l%d_%d = vector.shuffle %%s%d_7, %%s%d_7 [%s] : vector<64xi32>, vector<64xi32>"
              % (m, i, m, m, idx(range(i, 64, 4))))
        p("  %%u%d = arith.addi %%l%d_0, %%l%d_1 : vector<16xi32>" % (m, m, m))
        p("  %%v%d = arith.addi %%l%d_2, %%l%d_3 : vector<16xi32>" % (m, m, m))
        p("  %%r%d = arith.addi %%u%d, %%v%d : vector<16xi32>" % (m, m, m))
    # rows 0..7 into one vector<128xi32>, in a tree of concatenations
    names, n = ["%%r%d" % m for m in range(8)], 16
    level = 0
    while len(names) > 1:
        nxt = []
        for j in range(0, len(names), 2):
            r = "%%t%d_%d" % (level, j // 2)
            p("  %s = vector.shuffle %s, %s [%s] : vector<%dxi32>, vector<%dxi32>"
              % (r, names[j], names[j + 1], idx(range(2 * n)), n, n))
            nxt.append(r)
        names, n, level = nxt, 2 * n, level + 1
    p("  llvm.return %s : vector<128xi32>" % names[0])
    p("}")
    print("\n".join(out))


main()
