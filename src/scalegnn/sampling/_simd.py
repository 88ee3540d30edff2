"""16-lane blocks of the induction (``_induce_kernels.fill_induced``), written as LLVM vector
IR in numba intrinsics: :func:`compress_block` (the parent-row scan) and
:func:`transpose_block` (the transpose pass).

Filtering a parent row by membership is stream compaction (keep the entries whose neighbour is
in the subgraph, in order). LLVM does not vectorize compaction from a scalar loop, and the
scalar, branch-free loop costs ~8 cycles per scanned entry (a bit test, a local-id lookup and
three stores per entry, kept or not). With AVX-512 one block of 16 entries is: one load of the
neighbour ids, one gather of their membership words, a compare, a masked gather of the kept
entries' rank words, a popcount, and compressions (``vpcompressd`` in a register, then a
whole-vector store) of the local ids, the parent edge ids and the edge values. The transpose
pass (journal Alg. 6) takes 16 entries of a row at a time: a gather and a scatter of their
columns' cursors (a row's columns are distinct, so the lanes never collide). Tried and
dropped: the transpose inside the scan block (the scatters stalled the next block's gathers).

:data:`VECTOR_FILL` says whether the host has AVX-512 (F and VL); without it LLVM would lower
the compressed stores to a scalar sequence, so the caller keeps its scalar loop there
(``fill_induced`` takes the choice as an argument, so tests run both paths in one process).
numba's cache keys ``fill_induced`` by its own file only: after editing this one, delete
``sampling/__pycache__/_induce_kernels.*.nb*`` (a stale cache kept the old blocks).
"""

from llvmlite import binding as llvm
from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic

from scalegnn.ops._vector_ir import I1, I32, I64, VectorIR

W = 16   # lanes: one zmm of int32
F32 = ir.FloatType()
V_I1, V_I32, V_I64, V_F32 = (ir.VectorType(t, W) for t in (I1, I32, I64, F32))


def _host_has_avx512() -> bool:
    try:
        feats = llvm.get_host_cpu_features()
    except RuntimeError:
        return False
    return bool(feats.get("avx512f", False) and feats.get("avx512vl", False))


VECTOR_FILL = _host_has_avx512()


class _IR(VectorIR):
    """The vector IR pieces the blocks share (16 lanes), bound to one intrinsic's codegen
    call."""

    def vec(self, v, n=W):
        return super().vec(v, n)

    def addrs(self, k, val, idx64):
        """<16 x ptr> to elements ``idx64`` (<16 x i64>) of array argument ``k``."""
        data = self.cx.make_array(self.aty[k])(self.cx, self.b, val).data
        off = self.b.mul(idx64, ir.Constant(V_I64, [self.aty[k].dtype.bitwidth // 8] * W))
        return self.b.inttoptr(self.b.add(self.vec(self.b.ptrtoint(data, I64)), off),
                               ir.VectorType(data.type, W))

    def gather32(self, ptrs, mask):
        return self.call("llvm.masked.gather.v16i32.v16p0", V_I32,
                         [ptrs, I32(4), mask, ir.Constant(V_I32, None)])

    def compress(self, vals, ptr, mask):
        """The ``mask``ed lanes of ``vals`` packed to the front, all 16 lanes stored at
        ``ptr`` (the lanes past the kept ones are junk the next block overwrites: the caller
        leaves 16 slots of room). Compressing in a register and storing the whole vector
        is several times faster on Intel than a compressing store to memory."""
        if vals.type == V_I64:   # (int64 edge ids, past 2^31 edges: the plain form; LLVM's
            self.call("llvm.masked.compressstore.v16i64", ir.VoidType(),   # 2-register
                      [vals, ptr, mask])                   # compress crashed here)
            return
        kind = "f32" if vals.type == V_F32 else "i32"
        packed = self.call(f"llvm.experimental.vector.compress.v16{kind}", vals.type,
                           [vals, mask, ir.Constant(vals.type, None)])
        self.b.store(packed, self.b.bitcast(ptr, vals.type.as_pointer()), align=4)

    def scatter32(self, vals, ptrs, mask):
        self.call("llvm.masked.scatter.v16i32.v16p0", ir.VoidType(), [vals, ptrs, I32(4), mask])

    def popcount(self, mask):
        n = self.call("llvm.ctpop.i16", ir.IntType(W), [self.b.bitcast(mask, ir.IntType(W))])
        return self.b.zext(n, I64)

    def member_mask(self, ids_arg, ids, e, bits_arg, bits):
        """For ids ``indices[e:e+16]``: their bitmap word numbers (<16 x i64>), those words,
        their bit positions in them, and the mask of the ids whose bit is set."""
        wide = self.aty[ids_arg].dtype.bitwidth == 64
        raw = self.load(ids_arg, ids, e, V_I64 if wide else V_I32, 8 if wide else 4)
        if wide:
            v, word = raw, self.b.lshr(raw, ir.Constant(V_I64, [5] * W))
        else:
            # node ids are non-negative: sign-extended int32 ids (and zero-extended word
            # numbers) let every gather use 32-bit indices: one 16-lane gather, not two
            v = self.b.sext(raw, V_I64)
            word = self.b.zext(self.b.lshr(raw, ir.Constant(V_I32, [5] * W)), V_I64)
        words = self.gather32(self.addrs(bits_arg, bits, word), ir.Constant(V_I1, [1] * W))
        lane = self.b.trunc(self.b.and_(v, ir.Constant(V_I64, [31] * W)), V_I32)
        bit = self.b.and_(self.b.lshr(words, lane), ir.Constant(V_I32, [1] * W))
        return word, words, lane, self.b.icmp_unsigned("!=", bit, ir.Constant(V_I32, [0] * W))


@intrinsic
def compress_block(typingctx, indices, e, bits32, rank, out_idx, out_eid, out_dat, vals, su,
                   p, data_mode):
    """Entries ``indices[e:e+16]`` whose id has its bit set in ``bits32``: ``out_idx[p:]`` <-
    their local ids (the rank of the id among the members: ``rank[id >> 5]``, the members in
    the words before its word, + the set bits below it in its word; ``rank`` is int32 and
    stays in L1 where a |V|-entry id map did not), ``out_eid[p:]`` <- ``e + lane`` (parent
    edge ids, int32 or int64),
    and by ``data_mode`` (an int literal: 0 no values, 1 ``su`` for every kept entry, 2
    ``vals[e + lane] * su``) ``out_dat[p:]``, all compressed (only the kept entries are
    written, in order). Returns how many were kept. ``indices`` (int32 or int64 node ids) must
    hold ``e + 16`` entries; ``out_idx`` is int32, ``out_dat``, ``vals`` and ``su`` float32."""
    if not isinstance(data_mode, types.IntegerLiteral):
        return None
    mode = data_mode.literal_value
    sig = types.int64(indices, e, bits32, rank, out_idx, out_eid, out_dat, vals, su, p,
                      data_mode)

    def codegen(context, builder, signature, args):
        ind, e_, bt, rk, oi, oe, od, va, su_, p_, _ = args
        g = _IR(context, builder, signature)
        word, words, lane, mask = g.member_mask(0, ind, e_, 2, bt)
        below = builder.sub(builder.shl(ir.Constant(V_I32, [1] * W), lane),
                            ir.Constant(V_I32, [1] * W))
        inword = g.call("llvm.ctpop.v16i32", V_I32, [builder.and_(words, below)])
        local = builder.add(g.gather32(g.addrs(3, rk, word), mask), inword)
        g.compress(local, g.item(4, oi, p_), mask)
        e64 = e_ if e_.type.width == 64 else builder.zext(e_, I64)
        eids = builder.add(g.vec(e64), ir.Constant(V_I64, list(range(W))))
        if signature.args[5].dtype.bitwidth == 32:
            eids = builder.trunc(eids, V_I32)     # the caller picks int32 below 2^31 edges
        g.compress(eids, g.item(5, oe, p_), mask)
        if mode:
            scale = g.vec(su_)
            if mode == 2:
                scale = builder.fmul(g.load(7, va, e_, V_F32, 4), scale)
            g.compress(scale, g.item(6, od, p_), mask)
        return g.popcount(mask)

    return sig, codegen


@intrinsic
def popcount32(typingctx, x):
    """Set bits of a uint32 (``llvm.ctpop``: one popcnt)."""
    def codegen(context, builder, signature, args):
        return builder.call(cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(I32, [I32]), "llvm.ctpop.i32"), [args[0]])

    return types.uint32(types.uint32), codegen


@intrinsic
def transpose_block(typingctx, out_indices, p, n, cursor, out_perm):
    """Journal Alg. 6 for the ``n`` <= 16 entries ``p, p+1, ...`` of one local row (distinct
    columns l, so the lanes never collide): ``out_perm[p + t] = cursor[l]``, ``cursor[l] += 1``
    (all int32)."""
    def codegen(context, builder, signature, args):
        oi, p_, n_, cur, op = args
        g = _IR(context, builder, signature)
        n64 = n_ if n_.type.width == 64 else builder.zext(n_, I64)
        live = builder.icmp_unsigned("<", ir.Constant(V_I64, list(range(W))), g.vec(n64))
        locs = g.call("llvm.masked.load.v16i32.p0", V_I32, [
            builder.bitcast(g.item(0, oi, p_), V_I32.as_pointer()), I32(4), live,
            ir.Constant(V_I32, None)])
        at = g.addrs(3, cur, builder.zext(locs, V_I64))
        slots = g.gather32(at, live)
        g.call("llvm.masked.store.v16i32.p0", ir.VoidType(), [
            slots, builder.bitcast(g.item(4, op, p_), V_I32.as_pointer()), I32(4), live])
        g.scatter32(builder.add(slots, ir.Constant(V_I32, [1] * W)), at, live)
        return context.get_dummy_value()

    return types.void(out_indices, p, n, cursor, out_perm), codegen
