"""``scalegnn bench spmm``: SpMM kernels vs ``torch.sparse.mm`` (CSR) and memory bandwidth.

Prints one JSON line with the machine's triad bandwidth, then one per case with the median
time per call of: the row-parallel kernel (the cost model's column tile), the
feature-partitioned kernel (the seeds' Q_f), a plain row-parallel loop (the calibration the
issue's targets assume), torch.sparse.mm on the same CSR, the backward
(``adj.t() @ G``) with the picked kernel and with torch; the cost model's pick and prediction,
whether the pick was the faster kernel, ratios vs torch and effective GB/s. Calls of all
kernels are interleaved per repeat, so machine load hits them alike. ``cpu_ms`` holds each
kernel's median process CPU ms per call (all threads); ``wall_s`` / ``cpu_s`` /
``cpu_per_call`` cover every timed call of the case (:mod:`scalegnn.bench.measure`), and every
line (the triad line and the summary too) carries them and the load average.

Graph: G(n, m) random pairs, symmetrized (symmetric pattern, sorted rows), row-normalized;
the transpose shares the pattern and permutes data (journal Alg. 6), as for sampled subgraphs.
Effective bytes = the gathered X rows (nnz·f·s) + out (n·f·s) + the CSR (nnz·(4+s)).
"""

from __future__ import annotations

import json

import numpy as np
import torch

from scalegnn.bench.measure import Clock
from scalegnn.config.flags import MAX_THREADS, REPEATS, SEED, WIDTH, count, name_flags, real
from scalegnn.config.schema import INT32_MAX
from scalegnn.graph import Graph
from scalegnn.ops import _kernels as K
from scalegnn.ops import costmodel
from scalegnn.ops.adj import SparseAdj
from scalegnn.ops.membw import triad_bandwidth
from scalegnn.ops.spmm import num_threads, plan_for, spmm_forward
from scalegnn.threads import set_threads

DEFAULT_CASES = [(8000, 512), (8000, 2048), (50000, 512)]
# small cases where X's column blocks fit the private L2: there the cost model may pick the
# feature-partitioned kernel, so they check its choices in the other direction
MODEL_CHECK_CASES = [(2000, 128), (4000, 64), (8000, 64)]


def add_arguments(p):
    p.add_argument("--n", type=count(1, INT32_MAX),
                   help="rows/cols of Â (with --f: one case instead of the defaults)")
    p.add_argument("--f", type=WIDTH, help="feature width")
    p.add_argument("--degree", type=real(0.0, 1e6, lo_open=True), default=15,
                   help="average degree (default 15)")
    p.add_argument("--dtype", choices=["float32", "float64"], default="float32")
    p.add_argument("--threads", type=count(1, MAX_THREADS), default=2)
    p.add_argument("--repeat", type=REPEATS, default=5, help="timed calls per kernel (median)")
    p.add_argument("--seed", type=SEED, default=0)
    p.add_argument("--no-membw", action="store_true", help="skip the triad measurement")
    name_flags(p)


def random_adj(n: int, degree: float, seed: int, dtype=np.float32) -> SparseAdj:
    """Symmetric G(n, n·degree/2) pattern, row-normalized, with the Alg. 6 transpose."""
    rng = np.random.default_rng(seed)
    m = int(n * degree / 2)
    g = Graph.from_edges(rng.integers(0, n, m), rng.integers(0, n, m), n).row_normalized(dtype=dtype)
    return SparseAdj.from_graph(g, g.transpose_permutation(), dtype=dtype)


def _plain(adj: SparseAdj, x: torch.Tensor) -> torch.Tensor:
    """The plain row-parallel loop; its output comes from ``torch.empty``, as torch.sparse.mm's
    does (``spmm_forward`` puts outputs of 32 MiB and up in huge pages)."""
    out = torch.empty((adj.num_rows, x.shape[1]), dtype=x.dtype)
    K.spmm_plain(adj.indptr, adj.indices, adj.data_as(x.numpy().dtype), x.numpy(), out.numpy())
    return out


def time_interleaved(fns: dict, repeat: int, clock: Clock | None = None) -> dict:
    """Median seconds per call of each function; one warm-up call each, calls interleaved.
    With ``clock``: also its median process CPU seconds per call under ``"cpu"`` (a dict),
    and ``clock`` sums the wall and CPU seconds of every timed call."""
    for fn in fns.values():
        fn()
    clock = clock if clock is not None else Clock()
    times = {k: [] for k in fns}
    cpu = {k: [] for k in fns}
    for _ in range(repeat):
        for k, fn in fns.items():
            with clock:
                fn()
            times[k].append(clock.last_wall_s)
            cpu[k].append(clock.last_cpu_s)
    out = {k: float(np.median(v)) for k, v in times.items()}
    out["cpu"] = {k: float(np.median(v)) for k, v in cpu.items()}
    return out


def run_case(n, f, degree, dtype, repeat, seed, membw_gbps=None) -> dict:
    tdt = getattr(torch, dtype)
    adj = random_adj(n, degree, seed, np.dtype(dtype))
    x = torch.randn(n, f, generator=torch.Generator().manual_seed(seed), dtype=tdt)
    a_t, at_t = adj.torch_csr(dtype=tdt), adj.t().torch_csr(dtype=tdt)
    auto = plan_for(adj, f, tdt)
    pr = plan_for(adj, f, tdt, "rows")
    pf = plan_for(adj, f, tdt, "features")
    fns = {
        "rows": lambda: spmm_forward(adj, x, plan=pr),
        "features": lambda: spmm_forward(adj, x, plan=pf),
        "torch": lambda: torch.sparse.mm(a_t, x),
        "backward": lambda: spmm_forward(adj.t(), x),
        "torch_backward": lambda: torch.sparse.mm(at_t, x),
        "plain": lambda: _plain(adj, x),
    }
    if pr.tile < f:  # is the column tiling worth it? measure the untiled kernel too
        pu = costmodel.Plan("rows", f, pf.width, pf.q_f, pr.threads, {})
        fns["rows_untiled"] = lambda: spmm_forward(adj, x, plan=pu)
    clock = Clock()
    t = time_interleaved(fns, repeat, clock)
    ref = torch.sparse.mm(a_t, x)
    for k in ("rows", "features", "plain"):   # a benchmark of a wrong kernel is worthless
        got = fns[k]()
        if not torch.allclose(got, ref, rtol=1e-4, atol=1e-5):
            raise AssertionError(f"bench spmm: kernel {k} disagrees with torch.sparse.mm")
    s = x.element_size()
    eff_bytes = adj.nnz * f * s + n * f * s + adj.nnz * (adj.indices.itemsize + s)
    fastest = min(("rows", "features"), key=t.get)
    rec = {
        "bench": "spmm", "n": n, "f": f, "degree": degree, "nnz": adj.nnz, "dtype": dtype,
        "threads": num_threads(), "pattern": "symmetric G(n,m), row-normalized",
        "rows_ms": t["rows"] * 1e3, "rows_tile": pr.tile,
        "features_ms": t["features"] * 1e3, "features_q_f": pf.q_f, "features_width": pf.width,
        "torch_ms": t["torch"] * 1e3,
        "picked": auto.kernel, "fastest": fastest, "model_agrees": auto.kernel == fastest,
        "predicted_ms": {k: v * 1e3 for k, v in auto.predicted.items()},
        "picked_ms": t[auto.kernel] * 1e3,
        "ratio_vs_torch": t["torch"] / t[auto.kernel],
        "ratio_rows_vs_torch": t["torch"] / t["rows"],
        "ratio_features_vs_torch": t["torch"] / t["features"],
        # calibration: the targets assume a plain row-parallel loop reaches a given ratio
        "plain_ms": t["plain"] * 1e3, "ratio_plain_vs_torch": t["torch"] / t["plain"],
        "ratio_vs_plain": t["plain"] / t[auto.kernel],
        "backward_ms": t["backward"] * 1e3, "torch_backward_ms": t["torch_backward"] * 1e3,
        "ratio_backward_vs_torch": t["torch_backward"] / t["backward"],
        "effective_GBps": eff_bytes / t[auto.kernel] / 1e9,
        "membw_GBps": membw_gbps,
        "repeat": repeat,
        "cpu_ms": {k: v * 1e3 for k, v in t["cpu"].items()},
        **clock.fields(repeat * len(fns), "call"),
    }
    if "rows_untiled" in t:
        rec["rows_untiled_ms"] = t["rows_untiled"] * 1e3
    return rec


def run(args) -> int:
    set_threads(args.threads)
    c = costmodel.read_caches()
    membw, total = None, Clock()
    if not args.no_membw:
        with Clock() as clock, total:
            mb = triad_bandwidth(repeat=max(args.repeat, 3))
        membw = mb["triad_GBps"]
        print(json.dumps({"bench": "spmm", "kind": "membw", "threads": num_threads(), **mb,
                          "caches": {"l1": c.l1, "l2": c.l2, "l3": c.l3,
                                     "l3_sharing": c.l3_sharing, "source": c.source},
                          **clock.fields()}), flush=True)
    if args.n is not None or args.f is not None:
        cases = [(args.n or 8000, args.f or 512)]
    else:
        cases = DEFAULT_CASES + MODEL_CHECK_CASES
    agree = 0
    for n, f in cases:
        with total:
            rec = run_case(n, f, args.degree, args.dtype, args.repeat, args.seed, membw)
        agree += rec["model_agrees"]
        print(json.dumps(rec), flush=True)
    # the summary's wall and CPU seconds: the whole command (cases with their set-up)
    print(json.dumps({"bench": "spmm", "kind": "summary", "cases": len(cases),
                      "model_agrees": agree, **total.fields(len(cases), "case")}), flush=True)
    return 0
