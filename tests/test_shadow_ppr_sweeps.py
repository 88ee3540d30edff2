"""PPR push order past ``SWEEP_MIN`` touched nodes: sweeps in id order (``_ppr_kernels``, on
graphs of at most ``DENSE`` nodes). The error bound against power iteration and the lists'
independence from gaps in the id space and from the thread count hold there too. The graph
is large enough that a target touches more than ``SWEEP_MIN`` nodes with most of them queued,
so the sweeps do run (checked by hand: their lists differ from FIFO's)."""

import numpy as np
import pytest

from scalegnn.graph import Graph
from scalegnn.shadow import reference as R
from scalegnn.shadow._hash_table_kernels import DENSE
from scalegnn.shadow._ppr_kernels import SWEEP_MIN
from scalegnn.shadow.ppr import PPRExtractor
from scalegnn.threads import set_threads

N = 1500


def graph(spread=1, num_nodes=N):
    rng = np.random.default_rng(2)
    src, dst = rng.integers(0, N, 4 * N), rng.integers(0, N, 4 * N)
    return Graph.from_edges(src * spread, dst * spread, num_nodes)


@pytest.fixture(scope="module")
def g():
    return graph()


def test_sweeps_keep_the_push_error_bound(g):
    assert N > SWEEP_MIN
    eps, alpha = 1e-7, 0.15
    deg = g.degrees()
    ptr, nodes, scores = PPRExtractor(g, alpha=alpha, eps=eps, k=N).lists([0, 700, 1499])
    assert (np.diff(ptr) > SWEEP_MIN).all()       # every target touched past SWEEP_MIN
    for i, t in enumerate([0, 700, 1499]):
        exact = R.ppr_exact(g, t, alpha)
        push = np.zeros(N)
        push[nodes[ptr[i]:ptr[i + 1]]] = scores[ptr[i]:ptr[i + 1]]
        err = exact - push          # float32 scores: 1e-7 slack
        assert (err >= -1e-7).all() and (err <= eps * deg + 1e-7).all()
        top = PPRExtractor(g, alpha=alpha, eps=eps, k=32).lists([t])[1]
        want = R.ppr_topk_exact(exact, t, 32)
        assert np.intersect1d(top, want).size >= 31


def test_sweeps_give_the_same_lists_in_a_sparse_id_space_and_at_any_thread_count(g):
    big = graph(spread=43, num_nodes=DENSE)       # the same graph, ids spread with gaps
    t = np.arange(0, N, 50)
    want = PPRExtractor(g, eps=1e-6, k=64).lists(t)
    try:
        for threads in (1, 2):
            set_threads(threads)
            p, n, s = PPRExtractor(big, eps=1e-6, k=64).lists(t * 43)
            assert np.array_equal(p, want[0]) and np.array_equal(n, want[1] * 43)
            assert np.array_equal(s, want[2])
            again = PPRExtractor(g, eps=1e-6, k=64).lists(t)
            assert all(np.array_equal(a, b) for a, b in zip(again, want))
    finally:
        set_threads(2)
