"""``scalegnn bench scale``: per-iteration time and peak memory as the graph grows.

The journal's scaling experiment (Zeng et al., JPDC 2021, Fig. 5): with graph sampling the cost
of one training iteration stops growing with the graph. Per scale ``s`` in ``--scales``:

* data: a GraphSAINT folder written by the project's streaming generator,
  ``kronecker_dataset(s, 16, features=50, classes=2, out=DIR)`` (2^s nodes, 16 edge draws per
  node, symmetrized; Gaussian features in a memory-mapped feats.npy; 2 balanced classes). It is
  generated in its own subprocess (its memory peak is not the training's) under ``--data-dir``
  and reused by later runs (2^24 takes minutes); without ``--data-dir`` a temporary folder is
  used and deleted.
* model and sampler (the journal's setting, "2-layer GNN with hidden dimension 512"): GraphSAINT
  arch ``1-1``, dim 512, ``aggr: concat``, ``bias: norm``, ReLU, softmax loss — layer widths
  50 -> 1024 -> 1024 -> 2 (each order-1 layer concatenates its self and neighbour halves);
  frontier sampler ``mrw`` with ``size_subgraph`` 8000, ``size_frontier`` 1000. Training is
  transductive (the sampler walks the whole graph: no second, training-only CSR) without
  GraphSAINT's normalization pre-sampling (coverage 50 would pre-sample 50·N/8000 subgraphs,
  100k at 2^24, before the first step) and without feature standardization (the features
  are already standard normal; standardizing would copy them into RAM).
* measurement, in a fresh interpreter per scale (so peaks do not carry over), with
  ``OMP_WAIT_POLICY=passive`` like ``bench epoch``: the trainer's own GraphSAINT loader and
  pool feed ``Trainer.train_step``; ``--warmup`` iterations, then ``--iterations`` timed ones::

      iteration = wait (next batch from the loader: the trainer waiting on the pool)
                  + step (Trainer.train_step: forward, loss, backward, clip, Adam)

  reported as median and p90; ``sampling_share`` = Σwait / Σiteration. The sampler's own time
  per subgraph (``sampler_s_per_subgraph``: wall seconds of the pool's sampler calls over the
  subgraphs they made, on ``--threads`` threads) shows the background work the pool hides.
* memory: ``peak_rss`` = the peak resident size (VmHWM) of the process after the timed
  iterations (before the profiled step of ``step_memory`` and before ``--eval``;
  ``load_peak_rss``: the same right after loading the folder, before the trainer exists);
  ``baseline_rss`` = the same right after the imports (Python + torch + numba, ~300 MiB,
  no data). ``sum_bytes`` = CSR (indptr + indices) + features (N·F·4, the memmap's pages
  count in RSS once touched) + model (parameters, gradients and Adam's two moments: 4x the
  parameter bytes) + pool (``pool_depth`` queued batches plus the producer's chunk in hand plus
  the one in use, at the mean measured batch size). Both ``rss_ratio`` (peak / sum) and
  ``rss_ratio_above_baseline`` ((peak - baseline) / sum) are reported.
* the bound (issue 25): ``peak_rss <= 1.3 x bound_bytes + baseline_rss`` (the process floor
  after the imports), ``bound_bytes`` = ``sum_bytes`` + ``step_transient_bytes``: what one
  warm training step adds at its high-water mark, measured in this process after the timed
  iterations on one more batch from the loader by :func:`scalegnn.bench.step.step_memory`
  (``step_peak_bytes``: the most host tensor bytes live at once during forward, backward and
  optimizer step above those live before it — the saved activations, the activations'
  gradients, GEMM/SpMM outputs, the new parameter gradients — less the parameter gradients,
  already in ``model_bytes``; ``bench step`` reports the same ``peak_bytes``).
  ``step_activation_bytes`` (the distinct storages autograd saves in the forward, parameters
  and batch tensors excluded) is the part of it kept for the backward pass; until 2026-11-27
  the bound used it alone, leaving the backward's transient gradients (as large again) to the
  1.3 factor. Reported as ``rss_ratio_bound`` = (peak - baseline) / bound_bytes and
  ``meets_rss_target`` (<= 1.3).
* ``--eval`` (or ``--eval-scales``): one full-graph evaluation
  (:func:`scalegnn.engine.evaluate.full_graph_logits`, path ``auto``: layer-wise when the widest
  activation fits the memory budget, else the neighbourhood path) with its seconds, path and
  the process's peak RSS after it.

* cost (:mod:`scalegnn.bench.measure`): ``wall_s`` / ``cpu_s`` / ``cpu_per_iteration`` of the
  timed iterations, measured in the child (process CPU: trainer, OpenMP teams and the pool's
  sampler thread); ``eval_cpu_s`` beside ``eval_s``; ``generate_cpu_s`` (the generator's
  process) beside ``generate_s``; ``child_wall_s`` / ``child_cpu_s``: the whole measuring
  process (imports, loading, training, evaluation), counted by the parent.

One JSON line per scale (load average at its start, after training (``load_avg``) and at its
end), then a summary line with ``iteration_ratio`` = median iteration at the largest scale / at
the smallest (target <= 1.25), and the wall and CPU seconds of the whole command, its child
processes included.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

import scalegnn.sampling  # noqa: F401  (numba kernels: part of the process floor, not the data)
from scalegnn.bench.child import run_child
from scalegnn.bench.measure import Clock, cost_fields, load_avg
from scalegnn.bench.step import step_memory
from scalegnn.config import Config
from scalegnn.config.flags import MAX_THREADS, SEED, WIDTH, count, name_flags
from scalegnn.config.schema import INT32_MAX
from scalegnn.data import load_dataset
from scalegnn.engine.evaluate import full_graph_logits
from scalegnn.errors import ConfigError
from scalegnn.memory import peak_rss_bytes
from scalegnn.threads import set_threads
from scalegnn.train.trainer import Trainer

TARGET_ITERATION_RATIO = 1.25
TARGET_RSS_RATIO = 1.3


def add_arguments(p):
    p.add_argument("--scales", default="20,21,22,23,24",
                   help="comma-separated Kronecker scales: 2^s nodes (default 20,21,22,23,24)")
    p.add_argument("--iterations", type=count(1, 10**6), default=20,
                   help="timed iterations per scale (20)")
    p.add_argument("--warmup", type=count(0, 10**6), default=3, help="untimed iterations first (3)")
    p.add_argument("--threads", type=count(1, MAX_THREADS), default=2,
                   help="torch, numba and sampler threads (2)")
    p.add_argument("--data-dir", default=None, metavar="DIR",
                   help="keep the generated folders here and reuse them (default: a temporary "
                        "folder, deleted afterwards)")
    p.add_argument("--eval", action="store_true",
                   help="one full-graph evaluation per scale (time, path, peak RSS)")
    p.add_argument("--eval-scales", default=None, metavar="S,S",
                   help="evaluate only at these scales (implies --eval)")
    p.add_argument("--eval-path", default="auto", choices=["auto", "layerwise", "neighbourhood"],
                   help="full-graph evaluation path (default auto: layer-wise when it fits)")
    p.add_argument("--edge-factor", type=WIDTH, default=16)
    p.add_argument("--features", type=WIDTH, default=50)
    p.add_argument("--classes", type=count(2, 1 << 20), default=2)
    p.add_argument("--hidden", type=WIDTH, default=512)
    p.add_argument("--arch", default="1-1")
    p.add_argument("--aggr", default="concat", choices=["concat", "mean"])
    p.add_argument("--size-subgraph", type=count(1, INT32_MAX), default=8000)
    p.add_argument("--size-frontier", type=count(1, INT32_MAX), default=1000)
    p.add_argument("--seed", type=SEED, default=0)
    name_flags(p)


def _int_list(text: str, flag: str) -> list[int]:
    try:
        values = [int(t) for t in str(text).split(",") if t.strip()]
    except ValueError:
        raise ConfigError(f"{flag}: expected comma-separated integers, got {text!r}") from None
    if not values:
        raise ConfigError(f"{flag}: expected at least one scale, got {text!r}")
    return values


def _check(args) -> tuple[list[int], set[int]]:
    scales = _int_list(args.scales, "--scales")
    for s in scales:
        if not 4 <= s <= 30:
            raise ConfigError(f"--scales: each scale must be in 4..30, got {s}")
    for flag, v, lo in (("--iterations", args.iterations, 1), ("--warmup", args.warmup, 0),
                        ("--threads", args.threads, 1), ("--hidden", args.hidden, 1),
                        ("--features", args.features, 1), ("--classes", args.classes, 2),
                        ("--edge-factor", args.edge_factor, 1),
                        ("--size-subgraph", args.size_subgraph, 1),
                        ("--size-frontier", args.size_frontier, 1)):
        if v < lo:
            raise ConfigError(f"{flag}: must be >= {lo}, got {v}")
    _config(vars(args)).validate_for_mode("graphsaint")  # --hidden, --arch, --size-*: here,
    # in one line, not in the measuring child
    if args.eval_scales is not None:
        evals = set(_int_list(args.eval_scales, "--eval-scales"))
    else:
        evals = set(scales) if args.eval else set()
    return scales, evals


def folder_name(args, scale: int) -> str:
    return (f"kronecker-{scale}-{args.edge_factor}-f{args.features}-c{args.classes}"
            f"-s{args.seed}")


def _generate(args, scale: int, folder: Path) -> Clock:
    """Write the scale's folder in a subprocess: its wall and CPU seconds (0 when the folder
    exists)."""
    clock = Clock(children=True)
    if folder.exists():
        return clock
    code = ("import json, sys; from scalegnn.bench.child import child_main; "
            "from scalegnn.data.synthetic import kronecker_dataset; "
            "a = json.loads(sys.argv[1]); "
            "sys.exit(child_main(lambda: kronecker_dataset(a['scale'], a['ef'], "
            "features=a['features'], classes=a['classes'], seed=a['seed'], out=a['out'])))")
    with clock:
        rc, _ = run_child(code, {"scale": scale, "ef": args.edge_factor,
                                 "features": args.features, "classes": args.classes,
                                 "seed": args.seed, "out": str(folder)})
    if rc != 0:
        raise ConfigError(f"--scales: generating {folder} failed (exit {rc})")
    return clock


def _one_scale(args, s: int, folder: Path, do_eval: bool) -> dict:
    """Generate (if needed) and measure one scale in a fresh interpreter: its record."""
    gen = _generate(args, s, folder)
    payload = {k: v for k, v in vars(args).items() if not callable(v)}
    payload.update(scale=s, folder=str(folder), do_eval=do_eval,
                   generate_s=gen.wall_s, generate_cpu_s=gen.cpu_s)
    code = ("import json, sys; from scalegnn.bench.child import child_main; "
            "from scalegnn.bench.scale import measure; "
            "sys.exit(child_main(lambda: print(json.dumps(measure(json.loads("
            "sys.argv[1]))), flush=True)))")
    env = dict(os.environ, OMP_WAIT_POLICY="passive")
    with Clock(children=True) as child:
        rc, out = run_child(code, payload, env)
    lines = [ln for ln in out.splitlines() if ln.startswith("{")]
    # the child prints its training record before evaluating: keep it if eval dies
    rec = json.loads(lines[-1]) if lines else {"bench": "scale", "scale": s}
    rec.update(child_wall_s=child.wall_s, child_cpu_s=child.cpu_s)
    if rc != 0:
        rec.update(error=f"exit {rc}" + (" during eval" if lines else ""),
                   load_avg_end=load_avg())
        rec.setdefault("load_avg", rec["load_avg_end"])
    return rec


def run(args) -> int:
    scales, evals = _check(args)
    tmp = None
    root = Path(args.data_dir) if args.data_dir else None
    if root is None:
        tmp = Path(tempfile.mkdtemp(prefix="scalegnn-bench-scale-"))
        root = tmp
    root.mkdir(parents=True, exist_ok=True)
    records, total = [], Clock(children=True)
    try:
        with total:
            for s in scales:
                rec = _one_scale(args, s, root / folder_name(args, s), s in evals)
                records.append(rec)
                print(json.dumps(rec), flush=True)
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    done = [r for r in records if "iteration_s_median" in r]   # training measured
    failed = sum("error" in r for r in records)
    summary = {"bench": "scale", "summary": True, "scales": [r["scale"] for r in done],
               "iteration_s_median": [r["iteration_s_median"] for r in done],
               "rss_ratio": [r["rss_ratio"] for r in done],
               "rss_ratio_above_baseline": [r["rss_ratio_above_baseline"] for r in done],
               "rss_ratio_bound": [r["rss_ratio_bound"] for r in done],
               "target_iteration_ratio": TARGET_ITERATION_RATIO,
               "target_rss_ratio": TARGET_RSS_RATIO, "failed": failed,
               **total.fields()}
    if len(done) >= 2:
        lo, hi = min(done, key=lambda r: r["scale"]), max(done, key=lambda r: r["scale"])
        ratio = hi["iteration_s_median"] / lo["iteration_s_median"]
        summary.update(iteration_ratio=ratio, iteration_ratio_scales=[lo["scale"], hi["scale"]],
                       meets_iteration_target=ratio <= TARGET_ITERATION_RATIO)
    summary["meets_rss_target"] = bool(done) and all(r["meets_rss_target"] for r in done)
    print(json.dumps(summary), flush=True)
    return 0 if failed == 0 else 1


# ---------------------------------------------------------------------- the measuring child
def _nbytes(obj) -> int:
    """Bytes of the arrays/tensors in a Batch (numpy, torch, Graph, SparseFeatures)."""
    import numpy as np
    import torch
    if obj is None:
        return 0
    if isinstance(obj, np.ndarray):
        return int(obj.nbytes)
    if isinstance(obj, torch.Tensor):
        return int(obj.element_size() * obj.nelement())
    if hasattr(obj, "nbytes") and not callable(obj.nbytes):
        return int(obj.nbytes)
    if hasattr(obj, "indptr"):
        return sum(_nbytes(getattr(obj, k, None)) for k in ("indptr", "indices", "data"))
    return 0


def _batch_bytes(batch) -> int:
    return sum(_nbytes(getattr(batch, k, None)) for k in
               ("nodes", "adj", "edge_ids", "adj_t_perm", "x", "y", "loss_weight"))


def _config(a: dict):
    return Config.from_dict({
        "network": [{"dim": a["hidden"], "aggr": a["aggr"], "arch": a["arch"], "act": "relu",
                     "bias": "norm", "loss": "softmax" if a["classes"] else None}],
        "params": [{"lr": 0.01, "dropout": 0.0, "norm_loss": False, "norm_aggr": False,
                    "transductive": True, "standardize": False, "eval_every": 1 << 20,
                    "sampler_threads": a["threads"]}],
        "phase": [{"end": 1, "sampler": "mrw", "size_subgraph": a["size_subgraph"],
                   "size_frontier": a["size_frontier"]}],
    }, "bench scale")


def _progress(stats: dict, t0: float, every: float = 60.0):
    """Print the evaluation's progress (rows done, seconds) to stderr every ``every`` s."""

    def watch():
        while not stop.wait(every):
            done, rows = stats.get("rows_done", 0), stats.get("rows", 0)
            print(f"bench scale: eval {done}/{rows} rows after {time.perf_counter() - t0:.0f} s",
                  file=sys.stderr, flush=True)

    stop = threading.Event()
    threading.Thread(target=watch, daemon=True).start()


def measure(a: dict) -> dict:
    """One scale in this (fresh) process: the record of the module docstring."""
    import numpy as np
    import torch

    load_start = load_avg()
    baseline = peak_rss_bytes()
    threads = set_threads(a["threads"])
    t0 = time.perf_counter()
    ds = load_dataset(a["folder"], mmap=True)
    load_s = time.perf_counter() - t0
    load_peak = peak_rss_bytes()   # loading (npz, json labels) may peak above training
    # force: this benchmark measures the peak itself (the guard would refuse on a machine
    # whose memory other processes hold, before anything could be measured)
    trainer = Trainer(ds, _config(a), None, seed=a["seed"], progress=False, force=True)
    loader = trainer.mode.loader(0)
    times, waits, batch_bytes, cpu, clock = [], [], [], 0.0, Clock()
    try:
        for i in range(a["warmup"] + a["iterations"]):
            with clock:
                t0 = time.perf_counter()
                batch = loader.next_batch()
                t1 = time.perf_counter()
                trainer.train_step(batch)
                t2 = time.perf_counter()
            batch_bytes.append(_batch_bytes(batch))
            if i >= a["warmup"]:
                times.append(t2 - t0)
                waits.append(t1 - t0)
                cpu += clock.last_cpu_s
            del batch
        peak_train = peak_rss_bytes()   # before the profiled step (the profiler's own records)
        batch = loader.next_batch()     # untimed: what one warm step holds at its high-water
        memory = step_memory(trainer, batch)
        batch_bytes.append(_batch_bytes(batch))
        del batch
        produced = max(loader._next_fresh - len(loader._presampled), 1)  # fresh subgraphs
        sampler_s = loader.stats["sample_seconds"] / produced
        queue_batches = loader.pool_depth + loader._chunk + 1
    finally:
        trainer.mode.close()
    g = ds.graph
    csr = int(g.indptr.nbytes + g.indices.nbytes + (0 if g.data is None else g.data.nbytes))
    feats = int(ds.num_nodes * ds.num_features * 4)
    model = 4 * sum(p.numel() * p.element_size() for p in trainer.model.parameters())
    pool = int(queue_batches * float(np.mean(batch_bytes)))
    total = csr + feats + model + pool
    bound = total + memory["transient_bytes"]
    ratio_bound = (peak_train - baseline) / bound
    t = np.asarray(times)
    rec = {"bench": "scale", "scale": a["scale"], "nodes": int(ds.num_nodes),
           "edges": int(g.num_edges), "features": int(ds.num_features),
           "classes": int(ds.num_classes), "arch": a["arch"], "hidden": a["hidden"],
           "aggr": a["aggr"], "sampler": "mrw", "size_subgraph": a["size_subgraph"],
           "size_frontier": a["size_frontier"], "threads": threads,
           "iterations": len(times), "warmup": a["warmup"],
           "iteration_s_median": float(np.median(t)), "iteration_s_p90": float(np.percentile(t, 90)),
           "step_s_median": float(np.median(t - np.asarray(waits))),
           "sampling_share": float(np.sum(waits) / np.sum(t)),
           "sampler_s_per_subgraph": sampler_s, "sampler_threads": threads,
           "generate_s": a["generate_s"], "generate_cpu_s": a.get("generate_cpu_s"),
           "load_s": load_s, "load_peak_rss": load_peak,
           "baseline_rss": baseline, "peak_rss": peak_train,
           "peak_rss_above_baseline": peak_train - baseline,
           "csr_bytes": csr, "features_bytes": feats, "model_bytes": model, "pool_bytes": pool,
           "pool_batches": queue_batches, "sum_bytes": total,
           "rss_ratio": peak_train / total,
           "rss_ratio_above_baseline": (peak_train - baseline) / total,
           "step_activation_bytes": memory["activation_bytes"],
           "step_gradient_bytes": memory["gradient_bytes"],
           "step_peak_bytes": memory["peak_bytes"],
           "step_transient_bytes": memory["transient_bytes"], "bound_bytes": bound,
           "rss_ratio_bound": ratio_bound, "meets_rss_target": ratio_bound <= TARGET_RSS_RATIO,
           "load_avg_start": load_start,
           **cost_fields(float(np.sum(t)), cpu, len(times), "iteration")}
    if a["do_eval"]:
        print(json.dumps(rec), flush=True)
        stats = {}
        _progress(stats, time.perf_counter())
        with Clock() as ev:
            logits = full_graph_logits(trainer.model, g, ds.features,
                                       trainer.config.params["eval_batch_rows"],
                                       path=a.get("eval_path", "auto"), stats=stats)
        rec.update(eval_s=ev.wall_s, eval_cpu_s=ev.cpu_s, eval_path=stats.get("path"),
                   eval_stats={k: v for k, v in stats.items() if k != "path"},
                   eval_peak_rss=peak_rss_bytes(), eval_finite=bool(torch.isfinite(logits).all()))
        del logits
    rec["load_avg_end"] = load_avg()
    return rec
