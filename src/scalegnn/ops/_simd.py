"""16-lane blocks of the induction's parent-row scans, written as LLVM vector IR in numba
intrinsics: :func:`compress_block` (the samplers' ``_induce_kernels.fill_induced``) and
:func:`mark_block` (shaDow's block induction, ``shadow._block_kernels``).

Filtering a parent row by membership is stream compaction (keep the entries whose neighbour is
in the subgraph, in order). LLVM does not vectorize compaction from a scalar loop, and the
scalar, branch-free loop costs ~8 cycles per scanned entry (a bit test, a local-id lookup and
three stores per entry, kept or not). With AVX-512 one block of <= 16 entries is: a load of
the neighbour ids (plain where 16 entries fit in the array, masked at its end), one gather of
their 64-bit rank words (a bitmap word in the low half, the
members in the words before it in the high half: membership and local id from one gather, not
one gather per half; for subgraphs of < 2^16 nodes 16-bit words and counts in one int32, one
16-lane gather instead of two 8-lane ones), a compare, a popcount, and compressions
(``vpcompressd`` in a register, then a whole-vector store) of the local ids, the parent edge ids
and the edge values. A row's last chunk of < 16 entries is a block with its tail lanes masked
off: read with a plain load (the next row's ids in the tail lanes, gathered and dropped), which
on the AMD EPYC Zen 5 took the induction to 0.62x its CPU against a masked load (rw, Zen 5);
shaDow's :func:`mark_block` showed no change from it on Facebook and keeps its masked load.

Measured, interleaved (rw, PPI budget, kronecker:17:8, 1 thread) on an AMD EPYC (Zen 4): one
gather of rank words instead of a gather of bitmap words then a masked one of ranks 0.80x the
induction's CPU; masked tail blocks instead of a scalar loop over a row's last < 16 entries a
further 0.96x; the int32 rank words of subgraphs below 2^16 nodes a further 0.87-0.91x (rw,
edge, node, mrw); the gathers' addresses as one vector GEP off the array's base instead of
64-bit integers (32-bit indices: one ``vpgatherdd`` where LLVM had emitted two ``vpgatherqd``)
a further 0.93-0.97x (rw 0.93, edge 0.97, node 0.96, mrw 0.95); the live-lane mask as one
32-bit compare instead of two 64-bit ones and a mask merge, and the values' mode picked once
per row instead of per block (``_induce_kernels._vector_row``), a further 0.98-0.99x. Tried
and dropped: the transpose inside the scan block (the scatters stalled the next block's
gathers), and a 16-entry gather/scatter transpose (journal Alg. 6 by blocks): with it the
induction cost the same CPU as with the scalar loop on Sapphire Rapids, 1.09x on Zen 4, and
still 1.10x on Zen 4 with the GEP gathers, ``vpconflictd`` for a column repeated within a block
and one scatter of the cursors.

:data:`VECTOR_FILL` says whether the host has AVX-512 (F and VL); without it LLVM would lower
the compressed stores to a scalar sequence, so the caller keeps its scalar loop there
(``fill_induced`` takes the choice as an argument, so tests run both paths in one process).
numba's cache keys a kernel by its own file only: after editing this one, delete
``sampling/__pycache__/_induce_kernels.*.nb*`` and ``shadow/__pycache__/_block_kernels.*.nb*``
(a stale cache kept the old blocks).
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

    def gather(self, k, val, idx, vty, mask, passthru):
        """Lanes ``mask`` of array argument ``k`` at element indices ``idx`` (<16 x i32> or
        <16 x i64>, non-negative), ``passthru`` in the others. The addresses are one vector
        GEP off the array's base, so 32-bit indices make one ``vpgatherdd`` of 16 lanes
        (addresses built as 64-bit integers gave two 8-lane ``vpgatherqd``)."""
        base = self.cx.make_array(self.aty[k])(self.cx, self.b, val).data
        # (llvmlite's builder.gep takes scalar indices only: the instruction made by hand,
        # typed as the vector of pointers LLVM gives it)
        addrs = ir.instructions.GEPInstr(self.b.block, base, [idx], True, "",
                                         source_etype=base.type.pointee)
        addrs.type = ir.VectorType(base.type, W)
        self.b._insert(addrs)
        name = {V_I32: "v16i32", V_I64: "v16i64"}[vty]
        return self.call(f"llvm.masked.gather.{name}.v16p0", vty, [
            addrs, I32(vty.element.width // 8), mask, passthru])

    def live(self, n):
        """The mask of lanes 0 .. n-1 (n <= 16, an int32 or int64): a block's entries."""
        n32 = n if n.type.width == 32 else self.b.trunc(n, I32)
        return self.b.icmp_unsigned("<", ir.Constant(V_I32, list(range(W))), self.vec(n32))

    def block_load(self, k, val, idx, vty, live, whole):
        """The 16 lanes of array argument ``k`` from element ``idx`` on. ``whole``: all 16 lie
        inside the array (the caller checked), so one plain load, the lanes past a short
        block's ``live`` ones read but dropped by the caller's masks. Otherwise a masked load:
        lanes ``live`` (0 in the others; nothing past them is read). A masked load of a short
        block cost the AMD EPYC Zen 5 ~100 ns (rw's induction: 0.62x its CPU with plain loads
        wherever they fit); Zen 4 had shown no such cost."""
        if whole:
            return self.load(k, val, idx, vty, 4)
        name, zero, size = {V_I32: ("v16i32", 0, 4), V_I64: ("v16i64", 0, 8),
                            V_F32: ("v16f32", 0.0, 4)}[vty]
        return self.call(f"llvm.masked.load.{name}.p0", vty, [
            self.b.bitcast(self.item(k, val, idx), vty.as_pointer()), I32(size), live,
            ir.Constant(vty, [zero] * W)])

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

    def popcount(self, mask):
        n = self.call("llvm.ctpop.i16", ir.IntType(W), [self.b.bitcast(mask, ir.IntType(W))])
        return self.b.zext(n, I64)

    def member_rank(self, ids_arg, ids, e, rw_arg, rw, live, whole):
        """For the ``live`` lanes of ids ``indices[e:e+16]`` (0 in the others): the bitmap
        words holding their bits, their bit positions in them, the members in the words before
        (all <16 x i32>), and the mask of the live ids whose bit is set; one gather of rank
        words ``rw``: int64 ones (a 32-bit bitmap word, the members before it in the high
        half) or int32 ones (a 16-bit word, the members before it in the high 16 bits: one
        16-lane gather instead of two 8-lane ones, for subgraphs of < 2^16 nodes). ``whole``:
        see :meth:`block_load` (the lanes past ``live`` then hold the next row's ids: node ids
        too, so their gather stays in bounds)."""
        wide = self.aty[ids_arg].dtype.bitwidth == 64
        raw = self.block_load(ids_arg, ids, e, V_I64 if wide else V_I32, live, whole)
        half = self.aty[rw_arg].dtype.bitwidth // 2   # bitmap bits per rank word: 16 or 32
        vty = V_I32 if half == 16 else V_I64
        # node ids are non-negative: their word numbers are valid GEP indices as they are
        word = self.b.lshr(raw, ir.Constant(raw.type, [half.bit_length() - 1] * W))
        both = self.gather(rw_arg, rw, word, vty, ir.Constant(V_I1, [1] * W),
                           ir.Constant(vty, None))
        words = self.b.and_(both, ir.Constant(vty, [(1 << half) - 1] * W))
        ranks = self.b.lshr(both, ir.Constant(vty, [half] * W))
        if vty != V_I32:
            words, ranks = self.b.trunc(words, V_I32), self.b.trunc(ranks, V_I32)
        v32 = self.b.trunc(raw, V_I32) if wide else raw
        lane = self.b.and_(v32, ir.Constant(V_I32, [half - 1] * W))
        bit = self.b.and_(self.b.lshr(words, lane), ir.Constant(V_I32, [1] * W))
        hit = self.b.and_(self.b.icmp_unsigned("!=", bit, ir.Constant(V_I32, [0] * W)), live)
        return words, lane, ranks, hit


@intrinsic
def compress_block(typingctx, indices, e, n, rank_words, out_idx, out_eid, out_dat, vals, su,
                   p, data_mode, whole):
    """Of the ``n`` <= 16 entries ``indices[e:e+n]``, those whose id is a member (its bit set
    in the low half of ``rank_words[id >> 5]``, int64): ``out_idx[p:]`` <- their local ids
    (the rank of the id among the members: the high half of its rank word, the members in the
    words before, + the set bits below it in its word), ``out_eid[p:]`` <- ``e + lane``
    (parent edge ids, int32 or int64), and by ``data_mode`` (an int literal: 0 no values, 1
    ``su`` for every kept entry, 2 ``vals[e + lane] * su``) ``out_dat[p:]``, all compressed
    (only the kept entries are written, in order; 16 slots are stored, the ones past the kept
    entries junk). Returns how many were kept. ``indices`` holds int32 or int64 node ids,
    ``out_idx`` is int32, ``out_dat``, ``vals`` and ``su`` float32. ``whole`` (an int
    literal): 1 if ``indices[e:e+16]`` (and in mode 2 ``vals[e:e+16]``) lie inside their
    arrays, so a short block reads them with plain loads (:meth:`_IR.block_load`)."""
    if not isinstance(data_mode, types.IntegerLiteral) or \
            not isinstance(whole, types.IntegerLiteral):
        return None
    mode, plain = data_mode.literal_value, bool(whole.literal_value)
    sig = types.int64(indices, e, n, rank_words, out_idx, out_eid, out_dat, vals, su, p,
                      data_mode, whole)

    def codegen(context, builder, signature, args):
        ind, e_, n_, rw, oi, oe, od, va, su_, p_, _, _ = args
        g = _IR(context, builder, signature)
        live = g.live(n_)
        words, lane, ranks, mask = g.member_rank(0, ind, e_, 3, rw, live, plain)
        below = builder.sub(builder.shl(ir.Constant(V_I32, [1] * W), lane),
                            ir.Constant(V_I32, [1] * W))
        inword = g.call("llvm.ctpop.v16i32", V_I32, [builder.and_(words, below)])
        g.compress(builder.add(ranks, inword), g.item(4, oi, p_), mask)
        e64 = e_ if e_.type.width == 64 else builder.zext(e_, I64)
        eids = builder.add(g.vec(e64), ir.Constant(V_I64, list(range(W))))
        if signature.args[5].dtype.bitwidth == 32:
            eids = builder.trunc(eids, V_I32)     # the caller picks int32 below 2^31 edges
        g.compress(eids, g.item(5, oe, p_), mask)
        if mode:
            scale = g.vec(su_)
            if mode == 2:
                scale = builder.fmul(g.block_load(7, va, e_, V_F32, live, plain), scale)
            g.compress(scale, g.item(6, od, p_), mask)
        return g.popcount(mask)

    return sig, codegen


@intrinsic
def mark_block(typingctx, indices, e, n, mark, out, p):
    """Of the ``n`` <= 16 entries ``indices[e:e+n]`` (int32 or int64 node ids), the marks
    ``mark[id]`` (int32) that are >= 0, compressed in order into ``out[p:]`` (int32; 16 slots
    stored, the ones past the kept marks junk); returns how many were kept. One masked load,
    one gather of the marks and one compressed store, against a load, a lookup, a store and a
    compare per entry in the scalar loop: 0.54x the CPU of shaDow's PPR block induction on
    Facebook (2 threads, interleaved, AMD EPYC Zen 4)."""
    sig = types.int64(indices, e, n, mark, out, p)

    def codegen(context, builder, signature, args):
        ind, e_, n_, mk, o, p_ = args
        g = _IR(context, builder, signature)
        live = g.live(n_)
        wide = signature.args[0].dtype.bitwidth == 64
        raw = g.block_load(0, ind, e_, V_I64 if wide else V_I32, live, False)
        r = g.gather(3, mk, raw, V_I32, live, ir.Constant(V_I32, [-1] * W))
        hit = builder.icmp_signed(">=", r, ir.Constant(V_I32, [0] * W))
        g.compress(r, g.item(4, o, p_), hit)
        return g.popcount(hit)

    return sig, codegen


@intrinsic
def popcount32(typingctx, x):
    """Set bits of a uint32 (``llvm.ctpop``: one popcnt)."""
    def codegen(context, builder, signature, args):
        return builder.call(cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(I32, [I32]), "llvm.ctpop.i32"), [args[0]])

    return types.uint32(types.uint32), codegen
