"""``scalegnn bench step``: one training iteration split into GEMM / SpMM / other.

The reference PPI-shaped model (GraphSAINT SAGE-style, hidden 512, arch ``1-0-1-0``, concat,
``bias: norm``, dropout 0.1, 121 multi-label outputs, 50 input features) on frontier (mrw)
subgraphs of a Kronecker graph (``kronecker:17:8`` by default), row-normalized, transpose by
Alg. 6. One iteration = forward, weighted BCE loss, backward, gradient clipping at 5, Adam.

Split: SpMM = wall time inside every SpMM call (forward and backward, measured by
``ops.spmm.spmm_timer``); GEMM = the same dense matrix products (the shapes recorded by
torch.profiler in one iteration) replayed alone, back to back; other = iteration − GEMM −
SpMM. ``ratio_vs_gemm`` = iteration / GEMMs alone (target <= 1.3). ``gemm_in_iteration_ms``:
what the same products took inside one profiled iteration (profiler overhead included). Medians over ``--repeat``
iterations, each on its own subgraph.

``--tail torch`` runs the same iteration with each layer's bias + act + norm tail computed by
the plain torch composition (``ops.fused.bias_act_norm_reference``, ~20 ops), patched into
the model for this benchmark only, to show what the fused tail (``ops.fused.bias_act_norm``,
which the model uses) saves; ``--tail both`` (default) reports both on the same subgraphs,
initial weights and dropout seed.
"""

from __future__ import annotations

import contextlib
import copy
import json
import time

import numba
import numpy as np
import torch

from scalegnn.ops.adj import SparseAdj
from scalegnn.ops.spmm import num_threads, spmm_timer

_GEMM_OPS = ("aten::mm", "aten::addmm", "aten::bmm")


def add_arguments(p):
    p.add_argument("--dataset", default="kronecker:17:8", help="dataset spec (default kronecker:17:8)")
    p.add_argument("--size-subgraph", type=int, default=8000, help="mrw node budget (default 8000)")
    p.add_argument("--size-frontier", type=int, default=2500, help="mrw frontier size (default 2500)")
    p.add_argument("--hidden", type=int, default=512)
    p.add_argument("--arch", default="1-0-1-0")
    p.add_argument("--dropout", type=float, default=0.1)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--flush-denormal", action="store_true",
                   help="torch.set_flush_denormal(True) first: Adam's second moments of tiny "
                        "gradients are denormal, and sqrt/div of denormals is ~100x slower on x86")
    p.add_argument("--tail", choices=["model", "torch", "both"], default="both",
                   help="layer tail: the model's (fused), plain torch ops, or both")


@contextlib.contextmanager
def torch_tail():
    """Patch SAINTLayer.combine to compute the bias+act+norm tail with plain torch ops."""
    from scalegnn.nn.saint import SAINTLayer
    from scalegnn.ops.fused import bias_act_norm_reference
    orig = SAINTLayer.combine

    def combine(self, terms):
        if self.bias != "norm":
            return orig(self, terms)
        out = [bias_act_norm_reference(t, self.biases[o], self.scales[o], self.offsets[o],
                                       self.act) for o, t in enumerate(terms)]
        if self.aggr == "concat":
            return torch.cat(out, dim=1) if len(out) > 1 else out[0]
        return torch.stack(out).sum(0) if len(out) > 1 else out[0]

    SAINTLayer.combine = combine
    try:
        yield
    finally:
        SAINTLayer.combine = orig


def _subgraph_adjs(dataset, args) -> list:
    from scalegnn.sampling.samplers import make_sampler
    sampler = make_sampler("mrw", dataset.graph, dataset.train_idx,
                           {"size_subgraph": args.size_subgraph,
                            "size_frontier": args.size_frontier})
    out = []
    for sub in sampler.sample(args.repeat + 1, args.seed, args.threads):
        g = sub.graph.row_normalized()
        out.append((sub.nodes, SparseAdj.from_graph(g, sub.transpose_perm)))
    return out


def _gemm_shapes(step):
    """(op, input shapes) of every dense matrix product in one call of ``step``, and the
    seconds those products took inside it (profiler wall time on the calling thread)."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        step()
    calls, inside = [], 0.0
    for ev in prof.events():
        if ev.name in _GEMM_OPS and ev.input_shapes:
            calls.append((ev.name, [tuple(s) for s in ev.input_shapes if s]))
            inside += ev.cpu_time_total * 1e-6
    return calls, inside


def _replay(calls, dtype):
    """Closure running the recorded matrix products on fresh operands of the same shapes."""
    ops = []
    gen = torch.Generator().manual_seed(0)
    for name, shapes in calls:
        args = [torch.randn(*s, generator=gen, dtype=dtype) for s in shapes]
        if name == "aten::mm":
            ops.append((torch.mm, args[:2]))
        elif name == "aten::addmm":
            ops.append((torch.addmm, args[:3]))
        else:
            ops.append((torch.bmm, args[:2]))

    def run():
        for fn, a in ops:
            fn(*a)
    return run


def _time_steps(steps):
    """Per-iteration wall time and SpMM time (seconds) of steps[1:], after a warm-up step."""
    steps[0]()                                  # warm-up: numba compile, allocator
    iters, spmm_s = [], []
    for step in steps[1:]:
        with spmm_timer() as tm:
            t = time.perf_counter()
            step()
            iters.append(time.perf_counter() - t)
        spmm_s.append(tm["seconds"])
    return iters, spmm_s


def _time_gemms(step, repeat, dtype):
    """(median ms of the step's matrix products replayed alone, the recorded calls, ms the
    same products took inside the profiled iteration)."""
    calls, inside = _gemm_shapes(step)
    gemm = _replay(calls, dtype)
    gemm()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        gemm()
        times.append(time.perf_counter() - t)
    return float(np.median(times)) * 1e3, calls, inside * 1e3


def run(args) -> int:
    torch.set_num_threads(args.threads)
    numba.set_num_threads(min(args.threads, numba.config.NUMBA_NUM_THREADS))
    torch.manual_seed(args.seed)
    if args.flush_denormal:
        torch.set_flush_denormal(True)
    try:
        return _run(args)
    finally:
        if args.flush_denormal:
            torch.set_flush_denormal(False)


def _run(args) -> int:
    from scalegnn.data import load_dataset
    from scalegnn.nn import build_model
    t0 = time.perf_counter()
    ds = load_dataset(args.dataset, seed=args.seed)
    subs = _subgraph_adjs(ds, args)
    t_prep = time.perf_counter() - t0
    feats = torch.as_tensor(np.asarray(ds.features, dtype=np.float32))
    labels = torch.as_tensor(np.asarray(ds.labels))
    model = build_model(ds.num_features, ds.num_classes, hidden=args.hidden, arch=args.arch,
                        aggr="concat", bias="norm", act="relu", dropout=args.dropout,
                        multilabel=ds.multilabel)
    init = copy.deepcopy(model.state_dict())

    def make_step(nodes, adj, opt):
        idx = torch.from_numpy(nodes)
        x, y = feats[idx], labels[idx]
        w = torch.full((len(nodes),), 1.0 / len(nodes))

        def step():
            opt.zero_grad(set_to_none=True)
            loss = model.loss(model(x, adj), y, w)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
            opt.step()
        return step

    tails = ["model", "torch"] if args.tail == "both" else [args.tail]
    gemm_ms = calls = gemm_inside_ms = None
    for tail in tails:
        model.load_state_dict(init)
        torch.manual_seed(args.seed)                # same dropout masks for both tails
        opt = torch.optim.Adam(model.parameters(), lr=0.01)
        with torch_tail() if tail == "torch" else contextlib.nullcontext():
            steps = [make_step(nodes, adj, opt) for nodes, adj in subs]
            iters, spmm_s = _time_steps(steps)
            if gemm_ms is None:
                gemm_ms, calls, gemm_inside_ms = _time_gemms(steps[1], len(iters), feats.dtype)
        it, sp = float(np.median(iters)) * 1e3, float(np.median(spmm_s)) * 1e3
        flops = sum(2 * np.prod(sh[0]) * sh[1][-1] for n, sh in calls if n == "aten::mm") + \
            sum(2 * np.prod(sh[1]) * sh[2][-1] for n, sh in calls if n == "aten::addmm")
        print(json.dumps({
            "bench": "step", "tail": tail, "dataset": args.dataset, "arch": args.arch,
            "hidden": args.hidden, "threads": num_threads(), "repeat": len(iters),
            "flush_denormal": bool(args.flush_denormal),
            "subgraph_nodes_median": float(np.median([a.num_rows for _, a in subs[1:]])),
            "subgraph_edges_median": float(np.median([a.nnz for _, a in subs[1:]])),
            "iteration_ms": it, "gemm_alone_ms": gemm_ms, "spmm_ms": sp,
            "other_ms": it - gemm_ms - sp, "ratio_vs_gemm": it / gemm_ms,
            "gemm_in_iteration_ms": gemm_inside_ms,
            "gemm_calls": len(calls), "gemm_GFLOPs": float(flops) / 1e9,
            "gemm_GFLOPps": float(flops) / gemm_ms / 1e6,
            "iteration_ms_all": [v * 1e3 for v in iters], "prep_s": t_prep,
        }), flush=True)
    return 0
