"""Stochastic hypergraph partitioning (SHP) for minibatch training (Demirci et al. §4.3.3).

A minibatch is a sampled node-induced subgraph G' = (V', E'); computing its SpMM row-parallel
under a partition Π sends, per layer,

    vol(G', Π) = Σ_{j ∈ V'} (λ'(n_j) − 1),   n_j = {i ∈ V' : A'_ij != 0} ∪ {j}

rows (the column-net model of :mod:`scalegnn.dist.hypergraph` on G'). SHP samples b minibatches
with the training sampler, takes the union of their column-net hypergraphs (vertex set V, nets of
different batches kept separate, so a net appearing in many batches weighs that much more) and
partitions it for KM1: the cut is then b · (an estimate of E[vol(G', Π)]) and its minimizer the
partition with the least expected minibatch communication. b is the smallest number of batches
whose nets reach the Hoeffding bound for estimating the expected connectivity λ ∈ [1, K] of a
random net within θ with confidence 1 − δ:

    |N| >= ((K − 1)² / (2 θ²)) · ln(2 / δ)

Vertex weights are the full graph's (nnz of the row of A + I) for every vertex, as HP's, so both
partitions meet the same compute balance.

Two additions to the paper's Algorithm 3, both measured on facebook (README):

* **A structural prior.** The full graph's column-net hypergraph is added once, as one more
  "batch" (``prior=True``). Without it, vertices that no sampled batch touched are placed by
  balance alone, and fresh minibatches cross parts far more than under HP (facebook, K = 8, 10
  batches: 3.6x HP's volume without the prior, 1.0x with it). The sampled nets, b times as
  many, still decide where the samples disagree with the full graph.
* **A floor on b** (``min_batches``, default 200). With θ = 0.1, δ = 0.5 the bound asks for 1 to
  49 rw batches at K = 4..32, too few to improve on HP; 200 batches bring SHP below HP.
"""

from __future__ import annotations

import itertools
import math
import time
from pathlib import Path

import numpy as np

from scalegnn.dist.accounting import volume_matrix
from scalegnn.dist.compare import geomean
from scalegnn.dist.hypergraph import assign_hp, iter_nets, partition_nets, vertex_weights
from scalegnn.errors import ConfigError
from scalegnn.io import atomic_open
from scalegnn.sampling import make_sampler

EVAL_START = 1 << 40   # evaluation batches come from stream indices far from the build batches


def hoeffding_nets(parts: int, theta: float, delta: float) -> int:
    """Nets needed to estimate the expected connectivity within ``theta`` w.p. 1 − ``delta``."""
    if not theta > 0:
        raise ConfigError(f"--theta: must be > 0, got {theta}")
    if not 0 < delta < 1:
        raise ConfigError(f"--delta: must be in (0, 1), got {delta}")
    denom = 2.0 * theta ** 2
    need = (parts - 1) ** 2 / denom * math.log(2.0 / delta) if denom > 0 else math.inf
    if not math.isfinite(need):
        raise ConfigError(f"--theta {theta} / --delta {delta}: the Hoeffding bound asks for "
                          "more nets than can be counted; raise --theta or --delta")
    return int(math.ceil(need))


def parse_budget(text: str) -> dict:
    """``"num_root=500,depth=2"`` -> ``{"num_root": 500, "depth": 2}``."""
    out = {}
    for item in str(text).split(","):
        if not item.strip():
            continue
        key, sep, val = item.partition("=")
        if not sep:
            raise ConfigError(f"--budget: expected key=value pairs, got {item!r}")
        try:
            out[key.strip()] = int(val)
        except ValueError:
            raise ConfigError(f"--budget: {key.strip()} must be an integer, got {val!r}") from None
    return out


def batch_nets(sub):
    """Column-net hypergraph of one sampled subgraph in GLOBAL vertex ids: ``(ptr, pins)``
    blocks, single-pin nets left out (they never cross parts)."""
    for ptr, pins in iter_nets(sub.graph):
        yield ptr, sub.nodes[pins]


def batch_volume(sub, assignment: np.ndarray) -> int:
    """vol(G', Π): distinct (part of a row, column owned elsewhere) pairs of the subgraph, the
    total of its :func:`~scalegnn.dist.accounting.volume_matrix`."""
    a = np.asarray(assignment)[sub.nodes]
    return int(volume_matrix(sub.graph, a).sum()) if a.size else 0


def sample_for_shp(sampler, parts: int, theta: float, delta: float, seed: int = 0,
                   chunk: int = 16, min_batches: int = 0) -> tuple[list, int]:
    """Draw minibatches (streams ``(seed, 0), (seed, 1), ...``) until their nets (one per
    sampled node) reach :func:`hoeffding_nets` and there are at least ``min_batches`` of them;
    return them and that bound."""
    need = hoeffding_nets(parts, theta, delta)
    if min_batches < 0:
        raise ConfigError(f"--min-batches: must be >= 0, got {min_batches}")
    subs, nets = [], 0
    while nets < need or len(subs) < min_batches:
        for s in sampler.sample(chunk, seed, start=len(subs)):
            if nets >= need and len(subs) >= min_batches:
                break
            subs.append(s)
            nets += s.num_nodes
    return subs, need


def assign_shp(graph, subs, parts: int, *, imbalance: float = 0.01, seed: int = 0,
               preset: str = "deterministic", threads: int | None = None,
               prior: bool = True) -> np.ndarray:
    """KM1 partition of the union of the minibatches' column-net hypergraphs, plus the full
    graph's nets once when ``prior`` (see the module docstring)."""
    weights = vertex_weights(graph)
    if parts == 1:
        return np.zeros(graph.num_nodes, dtype=np.int32)
    nets = (blk for s in subs for blk in batch_nets(s))
    if prior:
        nets = itertools.chain(nets, iter_nets(graph))
    return partition_nets(nets, weights, parts, imbalance=imbalance, seed=seed, preset=preset,
                          threads=threads)


def expected_volume(sampler, assignment, batches: int, seed: int = 0) -> dict:
    """Mean (and standard error) of vol(G', Π) over ``batches`` fresh minibatches."""
    vols = []
    done = 0
    while done < batches:
        n = min(32, batches - done)
        vols += [batch_volume(s, assignment) for s in
                 sampler.sample(n, seed, start=EVAL_START + done)]
        done += n
    v = np.asarray(vols, dtype=np.float64)
    return {"mean": float(v.mean()),
            "sem": float(v.std(ddof=1) / math.sqrt(v.size)) if v.size > 1 else 0.0}


def compare_shp(dataset, parts_list, *, sampler: str = "rw", budget: dict | None = None,
                theta: float = 0.1, delta: float = 0.5, eval_batches: int = 200, seed: int = 0,
                imbalance: float = 0.01, preset: str = "deterministic",
                threads: int | None = None, min_batches: int = 200, prior: bool = True,
                transductive: bool = False, log=None, on_partition=None) -> dict:
    """Expected minibatch volume under HP (full-graph hypergraph) and SHP, per part count;
    both evaluated on the SAME fresh minibatches (paired). Minibatches are drawn as GraphSAINT
    training draws them: from the training graph over the training nodes, or (``transductive``)
    from the full graph over every node. ``on_partition(k, shp_assignment)`` receives each SHP
    partition (e.g. to write it as a plan)."""

    g = dataset.graph
    if transductive:
        smp = make_sampler(sampler, g, np.arange(g.num_nodes, dtype=np.int64),
                           dict(budget or {}))
    else:
        smp = make_sampler(sampler, dataset.train_graph, dataset.train_idx, dict(budget or {}))
    rows = []
    for k in parts_list:
        t0 = time.perf_counter()
        hp = assign_hp(g, k, seed, imbalance=imbalance, preset=preset, threads=threads)
        t_hp = time.perf_counter() - t0
        t0 = time.perf_counter()
        subs, need = sample_for_shp(smp, k, theta, delta, seed, min_batches=min_batches)
        shp = assign_shp(g, subs, k, imbalance=imbalance, seed=seed, preset=preset,
                         threads=threads, prior=prior)
        t_shp = time.perf_counter() - t0
        if on_partition is not None:
            on_partition(k, shp)
        v_hp = expected_volume(smp, hp, eval_batches, seed)
        v_shp = expected_volume(smp, shp, eval_batches, seed)
        w = vertex_weights(g)
        bal = lambda a: float(np.bincount(a, weights=w, minlength=k).max() / (w.sum() / k))  # noqa: E731
        row = {"parts": k, "batches": len(subs), "nets_needed": need,
               "nets": int(sum(s.num_nodes for s in subs)),
               "mean_batch_nodes": float(np.mean([s.num_nodes for s in subs])),
               "hp_volume": v_hp["mean"], "hp_sem": v_hp["sem"],
               "shp_volume": v_shp["mean"], "shp_sem": v_shp["sem"],
               "shp_vs_hp": v_shp["mean"] / v_hp["mean"] if v_hp["mean"] > 0 else float("nan"),
               "hp_imbalance": bal(hp), "shp_imbalance": bal(shp),
               "hp_s": round(t_hp, 2), "shp_s": round(t_shp, 2)}
        rows.append(row)
        if log:
            log(row)
    return {"dataset": getattr(dataset, "name", ""), "sampler": sampler, "budget": budget,
            "theta": theta, "delta": delta, "min_batches": min_batches, "prior": prior,
            "transductive": transductive,
            "eval_batches": eval_batches, "seed": seed,
            "imbalance": imbalance, "preset": preset, "rows": rows,
            "geomean_shp_vs_hp": geomean([r["shp_vs_hp"] for r in rows])}


def plot_shp(result: dict, path):
    """Expected minibatch volume of HP and SHP against K; None without matplotlib."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None

    rows = sorted(result["rows"], key=lambda r: r["parts"])
    ks = [r["parts"] for r in rows]
    fig, ax = plt.subplots(figsize=(6, 4))
    for key, label in (("hp_volume", "HP"), ("shp_volume", "SHP")):
        ax.plot(ks, [r[key] for r in rows], marker="o", label=label)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("parts K")
    ax.set_ylabel("expected rows sent / layer / minibatch")
    ax.set_title(f"{result.get('dataset', '')}: {result['sampler']} minibatches", fontsize=9)
    ax.legend()
    fig.tight_layout()
    with atomic_open(Path(path), "wb") as f:
        fig.savefig(f, format="png", dpi=100)
    plt.close(fig)
    return Path(path)
