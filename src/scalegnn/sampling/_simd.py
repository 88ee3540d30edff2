"""A 16-lane filter-and-compress of one block of a parent row, for the induction's fill pass
(``_induce_kernels.fill_induced``), written as LLVM vector IR in a numba intrinsic.

Filtering a parent row by membership is stream compaction (keep the entries whose neighbour is
in the subgraph, in order). LLVM does not vectorize compaction from a scalar loop, and the
scalar, branch-free loop costs ~8 cycles per scanned entry (a bit test, a local-id lookup and
three stores per entry, kept or not). With AVX-512 one block of 16 entries is: one load of the
neighbour ids, one gather of their membership words, a compare, a masked gather of the kept
entries' local ids, and compressed stores (``vpcompressd``) of the local ids, the parent edge
ids and the edge values: 1.9x faster on the fill pass (kronecker:17:8, rw budgets).

:data:`VECTOR_FILL` says whether the host has AVX-512 (F and VL); without it LLVM would lower
the compressed stores to a scalar sequence, so the caller keeps its scalar loop there
(the kernel takes the choice as an argument, so tests run both paths in one process).
"""

from llvmlite import binding as llvm
from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic

W = 16   # lanes: one zmm of int32


def _host_has_avx512() -> bool:
    try:
        feats = llvm.get_host_cpu_features()
    except RuntimeError:
        return False
    return bool(feats.get("avx512f", False) and feats.get("avx512vl", False))


VECTOR_FILL = _host_has_avx512()


def _splat(builder, value, vty):
    """``value`` broadcast to every lane of vector type ``vty``."""
    v = builder.insert_element(ir.Constant(vty, None), value, ir.IntType(32)(0))
    return builder.shuffle_vector(v, ir.Constant(vty, None),
                                  ir.Constant(ir.VectorType(ir.IntType(32), W), [0] * W))


@intrinsic
def compress_block(typingctx, indices, e, bits32, mk, out_idx, out_eid, out_dat, vals, su, p,
                   data_mode):
    """Entries ``indices[e:e+16]`` whose id has its bit set in ``bits32`` (the membership
    bitmap as 32-bit words): ``out_idx[p:]`` <- ``mk[id]`` (local ids), ``out_eid[p:]`` <-
    ``e + lane`` (parent edge ids, int32 or int64), and by ``data_mode`` (an int literal: 0 no
    values, 1 ``su`` for every kept entry, 2 ``vals[e + lane] * su``) ``out_dat[p:]``, all
    compressed (only the kept entries are written, in order). Returns how many were kept.
    ``indices`` (int32 or int64 node ids) must hold ``e + 16`` entries; ``mk`` is int32,
    ``out_idx`` int32, ``out_dat`` / ``vals`` float32, ``su`` float32."""
    if not isinstance(data_mode, types.IntegerLiteral):
        return None
    mode = data_mode.literal_value
    sig = types.int64(indices, e, bits32, mk, out_idx, out_eid, out_dat, vals, su, p, data_mode)

    def codegen(context, builder, signature, args):
        ind, e_, bt, mkk, oi, oe, od, va, su_, p_, _ = args
        i1, i32, i64 = ir.IntType(1), ir.IntType(32), ir.IntType(64)
        f32 = ir.FloatType()
        v_i32, v_i64 = ir.VectorType(i32, W), ir.VectorType(i64, W)
        v_f32, v_i1 = ir.VectorType(f32, W), ir.VectorType(i1, W)
        aty = signature.args

        def item(k, val, idx):
            ary = context.make_array(aty[k])(context, builder, val)
            return cgutils.get_item_pointer(context, builder, aty[k], ary, [idx],
                                            wraparound=False)

        def base(k, val):
            return context.make_array(aty[k])(context, builder, val).data

        def addrs(ptr, idx, size):   # <16 x ptr>: ptr + idx * size (idx: <16 x i64>)
            b = _splat(builder, builder.ptrtoint(ptr, i64), v_i64)
            off = builder.mul(idx, ir.Constant(v_i64, [size] * W))
            return builder.inttoptr(builder.add(b, off), ir.VectorType(ptr.type, W))

        def gather(ptrs, mask):
            fn = cgutils.get_or_insert_function(
                builder.module, ir.FunctionType(v_i32, [ptrs.type, i32, v_i1, v_i32]),
                "llvm.masked.gather.v16i32.v16p0")
            return builder.call(fn, [ptrs, i32(4), mask, ir.Constant(v_i32, None)])

        def compress(vec, ptr, mask):
            kind = {v_i64: "i64", v_f32: "f32"}.get(vec.type, "i32")
            name = f"llvm.masked.compressstore.v16{kind}"
            fn = cgutils.get_or_insert_function(
                builder.module, ir.FunctionType(ir.VoidType(), [vec.type, ptr.type, v_i1]), name)
            builder.call(fn, [vec, ptr, mask])

        wide = aty[0].dtype.bitwidth == 64
        raw = builder.load(builder.bitcast(item(0, ind, e_), (v_i64 if wide else v_i32)
                                           .as_pointer()), align=8 if wide else 4)
        ids = raw if wide else builder.zext(raw, v_i64)      # node ids are non-negative
        words = gather(addrs(base(2, bt), builder.lshr(ids, ir.Constant(v_i64, [5] * W)), 4),
                       ir.Constant(v_i1, [1] * W))
        lane_bit = builder.trunc(builder.and_(ids, ir.Constant(v_i64, [31] * W)), v_i32)
        bit = builder.lshr(words, lane_bit)
        mask = builder.icmp_unsigned("!=", builder.and_(bit, ir.Constant(v_i32, [1] * W)),
                                     ir.Constant(v_i32, [0] * W))
        compress(gather(addrs(base(3, mkk), ids, 4), mask), item(4, oi, p_), mask)
        lanes64 = ir.Constant(v_i64, list(range(W)))
        eids = builder.add(_splat(builder, builder.zext(e_, i64) if e_.type.width < 64 else e_,
                                  v_i64), lanes64)
        if aty[5].dtype.bitwidth == 32:
            eids = builder.trunc(eids, v_i32)     # the caller picks int32 below 2^31 edges
        compress(eids, item(5, oe, p_), mask)
        if mode:
            scale = _splat(builder, su_, v_f32)
            if mode == 2:
                x = builder.load(builder.bitcast(item(7, va, e_), v_f32.as_pointer()), align=4)
                scale = builder.fmul(x, scale)
            compress(scale, item(6, od, p_), mask)
        cnt = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.IntType(W), [ir.IntType(W)]), "llvm.ctpop.i16")
        return builder.zext(builder.call(cnt, [builder.bitcast(mask, ir.IntType(W))]), i64)

    return sig, codegen


