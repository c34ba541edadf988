#!/usr/bin/env python3
"""mktile.py: writes tile-generic.mlir, the portable form of the tile
kernels @llm_qtile_i8 and @llm_qtile_bf16 (share/doc/llm/ir.txt
"Kernels"), to stdout.

The kernels are spliced into every module that declares them, and the
pipelines lower llvm.func bodies with the 1-D vector patterns only, so
the form is written in 1-D vector ops: for each row m of w, each 4 codes
of a quad q broadcast over x's 16 rows (a shuffle of w as 64 i32), times
the quad's 64 bytes of x, summed over the quads, then over each row's 4
lanes; for @llm_qtile_bf16, each value of w broadcast over x's 16 rows
times the rows' values at the same k, added in k's order.
tests/llm-lower.bats checks that the file is what this writes.
"""


def idx(v):
    return ", ".join(str(i) for i in v)


def concat(p, names, n, ty, prefix):
    """names (vectors of n ty) into one, in a tree of concatenations"""
    level = 0
    while len(names) > 1:
        nxt = []
        for j in range(0, len(names), 2):
            r = "%%%s%d_%d" % (prefix, level, j // 2)
            p("  %s = vector.shuffle %s, %s [%s] : vector<%dx%s>, vector<%dx%s>"
              % (r, names[j], names[j + 1], idx(range(2 * n)), n, ty, n, ty))
            nxt.append(r)
        names, n, level = nxt, 2 * n, level + 1
    return names[0]


def bf16(p):
    st = "!llvm.struct<(vector<256xf32>, vector<256xf32>)>"
    p("")
    p("// @llm_qtile_bf16(a0, a1, w, x0, x1) -> (c0, c1), two blocks of 16 rows")
    p("// of x by one of 16 rows of W over 32 values: w is 16 rows of 32 bf16")
    p("// values, row-major; x0 and x1 the 16 rows' values of each block in")
    p("// pairs, x[32q + 2n + i] = value 2q + i of row n (a tile's B operand);")
    p("// c[16m + n] = a[16m + n] plus w[32m + k] * value k of row n for k = 0")
    p("// .. 31 in turn, each sum rounded to f32 (a product of two bf16 values")
    p("// is exact in f32, so the fma rounds once, as the sum alone would).")
    p("llvm.func internal @llm_qtile_bf16(%a0: vector<256xf32>, %a1: vector<256xf32>, %w: vector<512xbf16>,")
    p("                                   %x0: vector<512xbf16>, %x1: vector<512xbf16>)")
    p("    -> %s {" % st)
    p("  %wf = arith.extf %w : vector<512xbf16> to vector<512xf32>")
    for m in range(16):
        for k in range(32):
            p("  %%b%d_%d = vector.shuffle %%wf, %%wf [%s] : vector<512xf32>, vector<512xf32>"
              % (m, k, idx([32 * m + k] * 16)))
    res = []
    for h in range(2):
        p("  %%xf%d = arith.extf %%x%d : vector<512xbf16> to vector<512xf32>" % (h, h))
        for k in range(32):
            q, i = divmod(k, 2)
            p("  %%x%d_%d = vector.shuffle %%xf%d, %%xf%d [%s] : vector<512xf32>, vector<512xf32>"
              % (h, k, h, h, idx(range(32 * q + i, 32 * q + 32, 2))))
        rows = []
        for m in range(16):
            p("  %%a%d_%d_0 = vector.shuffle %%a%d, %%a%d [%s] : vector<256xf32>, vector<256xf32>"
              % (h, m, h, h, idx(range(16 * m, 16 * m + 16))))
            for k in range(32):
                p("  %%a%d_%d_%d = vector.fma %%b%d_%d, %%x%d_%d, %%a%d_%d_%d : vector<16xf32>"
                  % (h, m, k + 1, m, k, h, k, h, m, k))
            rows.append("%%a%d_%d_32" % (h, m))
        res.append(concat(p, rows, 16, "f32", "r%d_" % h))
    p("  %%u = llvm.mlir.poison : %s" % st)
    p("  %%s0 = llvm.insertvalue %s, %%u[0] : %s" % (res[0], st))
    p("  %%s1 = llvm.insertvalue %s, %%s0[1] : %s" % (res[1], st))
    p("  llvm.return %%s1 : %s" % st)
    p("}")


def main():
    out = []
    p = out.append
    p("// The tile kernels of prefill's products (share/doc/llm/ir.txt")
    p("// \"Kernels\"), portable form: vector arithmetic, for every target")
    p("// without AMX (target.c: llm_target_tile_kernels).  The phases call them")
    p("// only where the tuning table's prefill.int8_tiles or prefill.bf16_tiles")
    p("// asks for the tile products (by default, on targets with AMX, which take")
    p("// amx.mlir), so this form runs where a table forces them: tests/quant.bats")
    p("// and tests/bf16.bats check the tile products' sums and layouts with it")
    p("// on any CPU.  Written by mktile.py.")
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
    # rows 0..7 into one vector<128xi32>
    p("  llvm.return %s : vector<128xi32>" % concat(p, ["%%r%d" % m for m in range(8)], 16, "i32", "t"))
    p("}")
    bf16(p)
    print("\n".join(out))


main()
