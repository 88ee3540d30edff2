"""Shared by the data tests (``test_data_formats.py``, ``test_data_from_arrays.py``,
``test_separate_test_graph.py``): dense features, graph equality, the upper-triangle edge list
of a graph, and the check that a call is refused with a one-line DataError."""

import numpy as np
import pytest

from scalegnn.errors import DataError


def dense(x):
    return np.asarray(x, dtype=np.float32)


def assert_same_graph(a, b):
    np.testing.assert_array_equal(a.indptr, b.indptr)
    np.testing.assert_array_equal(a.indices, b.indices)


def upper_edges(g):
    src, dst = g.edge_index()
    keep = src < dst
    return src[keep], dst[keep]


def refused(match, fn, *a, **kw):
    with pytest.raises(DataError) as ei:
        fn(*a, **kw)
    msg = str(ei.value)
    assert "\n" not in msg
    assert match in msg, msg
    return msg
