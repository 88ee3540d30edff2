"""LLVM vector IR helpers for numba intrinsics that need what LLVM does not derive from scalar
loops (compressed stores, gathers, masks as integers, sums in a fixed order): the induction
blocks of :mod:`scalegnn.ops._simd`, the dropout blocks of :mod:`scalegnn.nn.dropout` and
the row sums of :mod:`scalegnn.ops._fused_kernels`."""

from llvmlite import ir
from numba.core import cgutils

I1, I16, I32, I64 = ir.IntType(1), ir.IntType(16), ir.IntType(32), ir.IntType(64)


def lanes(ty, n: int):
    """The vector type of ``n`` lanes of ``ty``."""
    return ir.VectorType(ty, n)


def splat(ty, value, n: int):
    """The constant vector of ``n`` lanes, each ``value``."""
    return ir.Constant(ir.VectorType(ty, n), [value] * n)


class VectorIR:
    """The pieces an intrinsic's codegen shares, bound to one call (``context``, ``builder``
    and the argument types of ``signature``)."""

    def __init__(self, context, builder, signature):
        self.cx, self.b, self.aty = context, builder, signature.args

    def vec(self, v, n: int):
        """``v`` broadcast to ``n`` lanes."""
        vty = ir.VectorType(v.type, n)
        return self.b.shuffle_vector(self.b.insert_element(ir.Constant(vty, None), v, I32(0)),
                                     ir.Constant(vty, None), splat(I32, 0, n))

    def item(self, k, val, idx):
        """Pointer to element ``idx`` of array argument ``k`` (no wraparound, no bounds
        check: the caller guarantees the range)."""
        ary = self.cx.make_array(self.aty[k])(self.cx, self.b, val)
        return cgutils.get_item_pointer(self.cx, self.b, self.aty[k], ary, [idx],
                                        wraparound=False)

    def ptr(self, k, val, idx, ty):
        """:meth:`item` as a pointer to ``ty`` (a vector, or a wider integer)."""
        return self.b.bitcast(self.item(k, val, idx), ty.as_pointer())

    def load(self, k, val, idx, ty, align):
        return self.b.load(self.ptr(k, val, idx, ty), align=align)

    def call(self, name, ret, args):
        fn = cgutils.get_or_insert_function(self.b.module, ir.FunctionType(
            ret, [a.type for a in args]), name)
        return self.b.call(fn, args)

    def row_ptr(self, k, val, i, c, ty):
        """Pointer to ``ty`` (a vector) at element ``[i, c]`` of 2-D array argument ``k``."""
        ary = self.cx.make_array(self.aty[k])(self.cx, self.b, val)
        p = cgutils.get_item_pointer(self.cx, self.b, self.aty[k], ary, [i, c],
                                     wraparound=False)
        return self.b.bitcast(p, ty.as_pointer())

    def hsum(self, v):
        """The lanes of ``v`` added in a fixed tree (halves, then halves of that), no
        fast-math flag: the same bits however LLVM optimizes the code around it."""
        n = v.type.count
        while n > 1:
            n //= 2
            lo = self.b.shuffle_vector(v, v, ir.Constant(ir.VectorType(I32, n), list(range(n))))
            hi = self.b.shuffle_vector(v, v, ir.Constant(ir.VectorType(I32, n),
                                                         list(range(n, 2 * n))))
            v = self.b.fadd(lo, hi)
        return self.b.extract_element(v, I32(0))

    def sum_loop(self, stop, width: int, acc_types, terms):
        """Vector sums over ``c = 0, width, 2·width, ... < stop`` (an i64, a multiple of
        ``width``): ``terms(c)`` gives one vector per sum, added lane by lane into
        accumulators of ``acc_types``; returns each sum's :meth:`hsum`. The order of every
        addition is fixed by this IR (no 'reassoc'), unlike a vectorized scalar loop."""
        accs = [cgutils.alloca_once_value(self.b, ir.Constant(t, [0.0] * t.count))
                for t in acc_types]
        with cgutils.for_range_slice(self.b, I64(0), stop, I64(width), intp=I64) as (c, _):
            for acc, term in zip(accs, terms(c)):
                self.b.store(self.b.fadd(self.b.load(acc), term), acc)
        return [self.hsum(self.b.load(acc)) for acc in accs]
