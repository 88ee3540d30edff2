"""The fill pass of the GraphSAINT samplers (``_induce_kernels.fill_induced``): the AVX-512
blocks against the scalar loop and the reference induction, short blocks at the arrays' end,
wide rank words past 2^16 nodes, int64 node ids, and segments that overflow."""

import numpy as np
import pytest

from scalegnn.ops._simd import VECTOR_FILL
from scalegnn.sampling import make_sampler
from scalegnn.sampling._induce_kernels import fill_induced
from test_sampling_samplers import random_graph


@pytest.mark.parametrize("name", ["rw", "node", "edge", "mrw"])
def test_vector_fill_equals_scalar_fill_and_reference(name):
    """The AVX-512 compress path of the fill pass (``ops._simd``) writes exactly what the
    scalar loop writes: local ids, parent edge ids (int32 and int64), values (none, row scale
    only, edge values x row scale), on rows long enough for many 16-entry blocks."""
    if not VECTOR_FILL:
        pytest.skip("host without AVX-512: the fill pass has only its scalar loop")
    g = random_graph(n=400, m=30_000, seed=7)      # mean degree ~150: blocks and tails
    budget = {"node": {"size_subgraph": 120}, "edge": {"size_subg_edge": 60},
              "rw": {"num_root": 40, "depth": 2},
              "mrw": {"size_subgraph": 120, "size_frontier": 30}}[name]
    s = make_sampler(name, g, np.arange(g.num_nodes), budget)
    vals = np.random.default_rng(1).random(g.num_edges).astype(np.float32)
    scale = np.random.default_rng(2).random(g.num_nodes).astype(np.float32)
    for id_dtype in (np.int32, np.int64):
        s._id_dtype = id_dtype
        for kw in ({}, {"row_scale": scale}, {"edge_values": vals, "row_scale": "inverse_degree"}):
            out = {}
            for vec in (True, False):
                s.vector_fill = vec
                out[vec] = s.sample(3, seed=11, num_threads=2, **kw)
            for a, b in zip(out[True], out[False]):
                ref, eids = g.induced_subgraph(a.nodes)
                np.testing.assert_array_equal(a.graph.indptr, ref.indptr)
                np.testing.assert_array_equal(a.graph.indices, ref.indices)
                np.testing.assert_array_equal(a.edge_ids, eids)
                assert a.edge_ids.dtype == id_dtype
                np.testing.assert_array_equal(a.transpose_perm, b.transpose_perm)
                for x, y in ((a.nodes, b.nodes), (a.graph.indices, b.graph.indices),
                             (a.edge_ids, b.edge_ids)):
                    np.testing.assert_array_equal(x, y)
                if kw:
                    np.testing.assert_array_equal(a.graph.data, b.graph.data)


def test_vector_fill_reads_short_blocks_near_the_end_of_the_arrays():
    """A row's last < 16 entries are read with one plain 16-lane load where 16 entries from
    there lie inside ``indices`` and the edge values (the lanes past the row dropped), else
    with a masked load: the last rows of the graph (degrees not multiples of 16) take the
    masked one, and the subgraph (the whole graph, every row) matches the scalar loop and the
    reference, values included."""
    if not VECTOR_FILL:
        pytest.skip("host without AVX-512: the fill pass has only its scalar loop")
    g = random_graph(n=300, m=9_000, seed=5)
    deg = g.degrees()
    assert deg[-1] % 16          # the last row ends in a short block
    s = make_sampler("full", g, np.arange(g.num_nodes), {})
    vals = np.random.default_rng(3).random(g.num_edges).astype(np.float32)
    out = {}
    for vec in (True, False):
        s.vector_fill = vec
        out[vec] = s.sample(1, seed=0, edge_values=vals, row_scale="inverse_degree")[0]
    a, b = out[True], out[False]
    ref, eids = g.induced_subgraph(a.nodes)
    np.testing.assert_array_equal(a.graph.indptr, ref.indptr)
    np.testing.assert_array_equal(a.graph.indices, ref.indices)
    np.testing.assert_array_equal(a.edge_ids, eids)
    np.testing.assert_array_equal(a.graph.data, b.graph.data)
    inv = (1.0 / np.repeat(deg, deg)).astype(np.float32)
    np.testing.assert_array_equal(a.graph.data, vals * inv)


@pytest.mark.parametrize("past", [False, True])
def test_vector_fill_of_subgraphs_near_and_past_2_16_nodes(past):
    """Groups whose subgraphs may reach 2^16 nodes take the 64-bit rank words (32-bit bitmap
    words, 32-bit member counts) instead of the int32 ones (16-bit words and counts, whose
    counts past 2^15 set the int32's sign bit): both give the subgraphs of the scalar loop
    and the reference."""
    if not VECTOR_FILL:
        pytest.skip("host without AVX-512: the fill pass has only its scalar loop")
    from scalegnn.sampling._induce_kernels import NARROW_NODES
    g = random_graph(n=90_000, m=400_000, seed=3)
    size = NARROW_NODES + 9000 if past else NARROW_NODES - 1
    s = make_sampler("node", g, np.arange(g.num_nodes), {"size_subgraph": size})
    assert (s.cap >= NARROW_NODES) == past
    out = {}
    for vec in (True, False):
        s.vector_fill = vec
        out[vec] = s.sample(2, seed=4, num_threads=2, row_scale="inverse_degree")
    for a, b in zip(out[True], out[False]):
        ref, eids = g.induced_subgraph(a.nodes)
        np.testing.assert_array_equal(a.graph.indptr, ref.indptr)
        np.testing.assert_array_equal(a.graph.indices, ref.indices)
        np.testing.assert_array_equal(a.edge_ids, eids)
        for x, y in ((a.nodes, b.nodes), (a.graph.indices, b.graph.indices),
                     (a.transpose_perm, b.transpose_perm), (a.graph.data, b.graph.data)):
            np.testing.assert_array_equal(x, y)
    assert max(sub.num_nodes for sub in out[True]) > 40_000


@pytest.mark.parametrize("vector", [True, False])
def test_fill_reads_int64_node_ids_as_int32_ones(vector):
    """Past 2^31 nodes the CSR holds int64 ids: the fill pass (its 16-lane blocks load them
    as <16 x i64>) writes what it writes from int32 ids. ``Graph`` stores int32 below that
    size, so the kernel is called directly here."""
    if vector and not VECTOR_FILL:
        pytest.skip("host without AVX-512")
    g = random_graph(n=400, m=30_000, seed=7)
    s = make_sampler("rw", g, np.arange(g.num_nodes), {"num_root": 40, "depth": 2})
    count = 4
    bits, mark = s._scratch(1)
    nodes = np.empty((count, s.cap), dtype=np.int64)
    nv = np.zeros(count, dtype=np.int64)
    s._run(np.arange(count, dtype=np.int64) + 5, 0, bits, mark, nodes, nv)
    node_off = np.concatenate([[0], np.cumsum(nv)])
    room = g.num_edges * count + 64
    vals = np.random.default_rng(1).random(g.num_edges).astype(np.float32)
    res = []
    for ids in (g.indices, g.indices.astype(np.int64)):
        out = [np.empty(node_off[-1], np.int64), np.empty(node_off[-1] + count, np.int64),
               np.empty(room, np.int32), np.empty(room, np.int64), np.empty(room, np.int32),
               np.empty(room, np.float32)]
        off, ne = np.zeros(count, np.int64), np.zeros(count, np.int64)
        fill_induced(g.indptr, ids, nodes, nv, node_off, np.array([0]), np.array([room]), bits,
                     vals, np.empty(0, np.float32), True, *out, off, ne,
                     np.zeros(1, np.int64), vector)
        res.append([ne, *out[:2], *(np.concatenate([x[a:a + n] for a, n in zip(off, ne)])
                                    for x in out[2:])])   # (not the junk padding slots)
    for a, b in zip(*res):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("name", ["rw", "mrw"])
def test_fill_segments_that_overflow_are_grown(name):
    """The fill writes each worker's edges into a segment sized from the running mean; a
    segment too small (forced here by a tiny running mean) is grown and the group refilled,
    with the same subgraphs as a fill sized by the parent-degree bound."""
    g = random_graph(n=400, m=30_000, seed=3)
    budget = {"rw": {"num_root": 40, "depth": 2},
              "mrw": {"size_subgraph": 120, "size_frontier": 30}}[name]
    s = make_sampler(name, g, np.arange(g.num_nodes), budget)
    vals = np.random.default_rng(1).random(g.num_edges).astype(np.float32)
    bound = s.sample(6, seed=2, num_threads=2, edge_values=vals)     # first call: the bound
    s._mean_edges = 1.0                                              # far too small
    grown = s.sample(6, seed=2, num_threads=2, edge_values=vals)
    for a, b in zip(bound, grown):
        ref, eids = g.induced_subgraph(a.nodes)
        np.testing.assert_array_equal(b.graph.indptr, ref.indptr)
        np.testing.assert_array_equal(b.graph.indices, ref.indices)
        np.testing.assert_array_equal(b.edge_ids, eids)
        np.testing.assert_array_equal(a.transpose_perm, b.transpose_perm)
        np.testing.assert_array_equal(a.graph.data, b.graph.data)
