"""LLVM vector IR helpers for numba intrinsics that need what LLVM does not derive from scalar
loops (compressed stores, gathers, masks as integers): the induction blocks of
:mod:`scalegnn.sampling._simd` and the dropout blocks of :mod:`scalegnn.nn.dropout`."""

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
