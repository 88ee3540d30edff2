"""Slow, obviously correct references of the samplers and counters (for tests only).

Plain numpy with a ``numpy.random.Generator``; each returns the sorted unique node set (and the
frontier reference also its pop trace). Distributions match the fast kernels in
the ``_*_kernels.py`` modules, random streams do not.
"""

from __future__ import annotations

import numpy as np

from scalegnn.graph import Graph


def node_sample(graph: Graph, nodes, n: int, rng) -> np.ndarray:
    """n draws with replacement from ``nodes``, P(v) = deg(v) / sum deg."""
    nodes = np.asarray(nodes)
    deg = graph.degrees()[nodes].astype(float)
    return np.unique(rng.choice(nodes, size=n, p=deg / deg.sum()))


def edge_probabilities(graph: Graph, nodes):
    """(u, v, p) over undirected edges u < v inside ``nodes``, p ∝ 1/deg(u) + 1/deg(v)."""
    src, dst = graph.edge_index()
    inset = np.zeros(graph.num_nodes, bool)
    inset[np.asarray(nodes)] = True
    keep = (src < dst) & inset[src] & inset[dst]
    u, v = src[keep].astype(np.int64), dst[keep].astype(np.int64)
    deg = graph.degrees().astype(float)
    w = 1.0 / deg[u] + 1.0 / deg[v]
    return u, v, w / w.sum()


def edge_sample(graph: Graph, nodes, m: int, rng) -> np.ndarray:
    u, v, p = edge_probabilities(graph, nodes)
    j = rng.choice(u.size, size=m, p=p)
    return np.unique(np.concatenate([u[j], v[j]]))


def rw_sample(graph: Graph, nodes, r: int, h: int, rng) -> np.ndarray:
    nodes = np.asarray(nodes)
    visited = []
    for _ in range(r):
        v = int(rng.choice(nodes))
        visited.append(v)
        for _ in range(h):
            nb = graph.indices[graph.indptr[v]:graph.indptr[v + 1]]
            if nb.size:
                v = int(rng.choice(nb))
            visited.append(v)
    return np.unique(visited)


def rw_visit_probability(graph: Graph, nodes, r: int, h: int) -> np.ndarray:
    """P(v ∈ V_s) for the RW sampler, exactly, by matrix powers.

    One walk: P_t = P_0 T^t with P_0 uniform on ``nodes`` and T the uniform-neighbour transition
    (identity row for isolated nodes). q_v = P(walk visits v) is computed per target v by
    absorbing v (the walk stops being counted once it hits v): q_v = sum_t P(first hit at t).
    Then P(v ∈ V_s) = 1 - (1 - q_v)^r. O(|V|^2 h) — small graphs only.
    """
    n = graph.num_nodes
    T = np.zeros((n, n))
    deg = graph.degrees()
    for u in range(n):
        nb = graph.indices[graph.indptr[u]:graph.indptr[u + 1]]
        if nb.size:
            np.add.at(T[u], nb, 1.0 / deg[u])
        else:
            T[u, u] = 1.0
    p0 = np.zeros(n)
    p0[np.asarray(nodes)] = 1.0 / len(nodes)
    q = np.zeros(n)
    for v in range(n):
        p = p0.copy()
        hit = p[v]
        p[v] = 0.0
        for _ in range(h):
            p = p @ T
            hit += p[v]
            p[v] = 0.0
        q[v] = hit
    return 1.0 - (1.0 - q) ** r


def frontier_sample(graph: Graph, nodes, m: int, n: int, rng, max_deg: int = 0):
    """Frontier sampling, O(m) per step (journal Alg. 2 with V_s = FS ∪ added nodes).

    Returns (entries: initial frontier then each added node, pops: popped node per step).
    """
    deg = graph.degrees().astype(np.int64)
    pins = np.minimum(deg, max_deg) if max_deg else deg
    fs = rng.choice(np.asarray(nodes), size=m, replace=False).astype(np.int64)
    entries = list(fs)
    pops = []
    for _ in range(n - m):
        w = pins[fs].astype(float)
        if w.sum() == 0:
            break
        j = rng.choice(m, p=w / w.sum())
        u = fs[j]
        nb = graph.indices[graph.indptr[u]:graph.indptr[u + 1]]
        new = int(rng.choice(nb))
        pops.append(int(u))
        fs[j] = new
        entries.append(new)
    return np.array(entries, dtype=np.int64), np.array(pops, dtype=np.int64)


def count_brute_force(subgraphs, num_nodes: int, num_edges: int):
    """(C_v, C_e) by looping over every subgraph's nodes and parent edge ids."""
    cv = np.zeros(num_nodes, dtype=np.int64)
    ce = np.zeros(num_edges, dtype=np.int64)
    for s in subgraphs:
        for v in s.nodes:
            cv[v] += 1
        for e in s.edge_ids:
            ce[e] += 1
    return cv, ce
