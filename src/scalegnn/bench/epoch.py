"""``scalegnn bench epoch``: end-to-end GraphSAINT epoch time (sampling + training, no evaluation).

Default workload (the performance target of the issue tracker): a GraphSAINT folder written by
the project's generator — Kronecker 2^17 nodes, edge factor 8, 50 features, 121 multi-labels,
66/12/22 inductive split — trained with the published PPI ``rw`` config
(``configs/graphsaint/ppi_rw.yml``: hidden 512, arch ``1-0-1-0``, concat, ``bias: norm``,
dropout 0.1, coverage 50, 3000 roots x 2 hops) on ``--threads`` threads (torch, numba and the
sampler). ``--data DIR`` loads that folder (building it there first if it does not exist).

The epochs are driven here, not by ``Trainer.fit`` (which evaluates at the last epoch): the
trainer's own loader and ``Trainer.train_step``, timed per iteration as

  wait    = time inside ``next(loader)`` (the trainer waiting on the sampler pool, whose
            thread also assembles the pre-sampled batches of the first epochs)
  compute = ``Trainer.train_step`` (forward + loss + backward + clip + Adam; ``spmm_s`` is the
            part of it spent in SpMM kernels, ``ops.spmm.spmm_timer``)
  other   = epoch wall − wait − compute (loop overhead, garbage collection)
  cpu_s   = process CPU seconds over the epoch (all threads: trainer, OpenMP teams, sampler);
            on a shared, loaded machine wall time inflates but this stays close to the work;
            ``cpu_per_iteration`` / ``wall_per_iteration``: per training iteration
            (:mod:`scalegnn.bench.measure`; measured in the process that trains, the child
            when there is one)

Pre-sampling (normalization, coverage 50) happens when the loader is built and is reported
once (``presample_s``), never inside an epoch. ``--fresh`` skips the pre-sampled subgraphs so
every batch comes from the background pool (the steady state after ~coverage epochs).

``--omp-wait`` (default ``passive``) sets ``OMP_WAIT_POLICY`` for the measuring process (a child
process when the current one has another, since OpenMP reads it at load time). torch and numba
each bring their own OpenMP runtime (two libgomp copies, two thread teams); with the default
policy each team's idle workers spin after every parallel region and take the cores the other
team (or the sampler thread) is computing on — measured on the 2-core dev box under load,
``passive`` halved the time of a training step.

GEMM floor: right after each epoch, the dense matrix products of that epoch's iterations
(the shapes of a training step recorded once, :mod:`scalegnn.bench.gemm`, instantiated at each
iteration's subgraph size) are replayed alone, back to back (``gemm_floor_s``): the fp32 GEMMs
the epoch cannot do without, timed under the same machine load as the epoch.
``ratio_vs_gemm_floor`` = wall_s / gemm_floor_s; ``cpu_ratio_vs_gemm_floor`` = cpu_s / the
replay's process CPU seconds, far less inflated by other processes on the cores than wall
time (but blind to time a thread sleeps, e.g. serial sections, so it reads lower).

One JSON line per epoch, then a summary line (``"summary": true``) with the median epoch
(epoch 0 excluded when there are more: it carries numba compilation; ``wall_s``, ``cpu_s``
and ``cpu_per_iteration`` there sum those epochs) against the targets
``ratio_vs_gemm_floor <= 1.5`` (median of the epochs' ratios) and ``wait_share < 0.10``.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from scalegnn.bench.child import run_child
from scalegnn.bench.gemm import GemmReplay, GemmTemplate, record_gemms
from scalegnn.bench.measure import Clock, cost_fields, load_avg
from scalegnn.config import Config
from scalegnn.config.flags import MAX_THREADS, SEED, WIDTH, count, name_flags
from scalegnn.data import load_dataset
from scalegnn.data.graphsaint import save_graphsaint
from scalegnn.data.synthetic import kronecker_dataset
from scalegnn.errors import ConfigError
from scalegnn.ops.spmm import spmm_timer
from scalegnn.threads import set_threads as _set_threads
from scalegnn.train.trainer import Trainer

TARGET_RATIO_VS_GEMM_FLOOR = 1.5
TARGET_WAIT_SHARE = 0.10
# configs/graphsaint/ppi_rw.yml (GraphSAINT table 2); used when the repository file is absent
PPI_RW = {
    "network": [{"dim": 512, "aggr": "concat", "loss": "sigmoid", "arch": "1-0-1-0",
                 "act": "relu", "bias": "norm"}],
    "params": [{"lr": 0.01, "dropout": 0.1, "weight_decay": 0.0, "sample_coverage": 50,
                "norm_loss": True, "norm_aggr": True}],
    "phase": [{"end": 1000, "sampler": "rw", "num_root": 3000, "depth": 2}],
}
_REPO_CONFIG = Path(__file__).resolve().parents[3] / "configs" / "graphsaint" / "ppi_rw.yml"


def add_arguments(p):
    p.add_argument("--data", default=None, metavar="DIR",
                   help="GraphSAINT folder to train on; built there from the generator options "
                        "if it does not exist (default: a temporary folder, deleted afterwards)")
    p.add_argument("--scale", type=count(1, 40), default=17,
                   help="Kronecker scale: 2^SCALE nodes (17)")
    p.add_argument("--edge-factor", type=WIDTH, default=8, help="Kronecker edge factor (8)")
    p.add_argument("--features", type=WIDTH, default=50)
    p.add_argument("--labels", type=WIDTH, default=121)
    p.add_argument("--config", default=None,
                   help="training YAML (default: configs/graphsaint/ppi_rw.yml)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="config override, e.g. phase.num_root=100 (repeatable)")
    p.add_argument("--epochs", type=count(1, 10**4), default=3, help="timed epochs (default 3)")
    p.add_argument("--threads", type=count(1, MAX_THREADS), default=2,
                   help="torch, numba and sampler threads (default 2)")
    p.add_argument("--fresh", action="store_true",
                   help="skip the pre-sampled subgraphs: every batch comes from the pool")
    p.add_argument("--omp-wait", choices=["passive", "active", "inherit"], default="passive",
                   help="OMP_WAIT_POLICY while measuring (default passive; inherit: leave the "
                        "environment as it is)")
    p.add_argument("--seed", type=SEED, default=0)
    name_flags(p)


def load_config(path=None, overrides=()):
    """The benchmark's training config: ``path`` or the published PPI rw one, plus overrides."""
    if path is not None:
        cfg = Config.from_yaml(path)
    elif _REPO_CONFIG.is_file():
        cfg = Config.from_yaml(_REPO_CONFIG)
    else:
        cfg = Config.from_dict(PPI_RW, "PPI_RW")
    return cfg.override(list(overrides))


def prepare_data(args):
    """(dataset, seconds, folder built here or None): load --data, building it if needed."""
    t0 = time.perf_counter()
    tmp = None
    folder = Path(args.data) if args.data else None
    if folder is None:
        tmp = Path(tempfile.mkdtemp(prefix="scalegnn-bench-epoch-"))
        folder = tmp / "kronecker"
    try:
        if not folder.exists():
            ds = kronecker_dataset(args.scale, args.edge_factor, seed=args.seed,
                                   features=args.features, num_labels=args.labels,
                                   split=(0.66, 0.12, 0.22))
            save_graphsaint(ds, folder)
        ds = load_dataset(str(folder))
        if tmp is not None and ds.has_train_graph:
            ds.train_graph  # noqa: B018 (read adj_train.npz now: the folder goes below)
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    return ds, time.perf_counter() - t0


def set_threads(n: int) -> int:
    if n < 1:
        raise ConfigError(f"--threads: must be >= 1, got {n}")
    return _set_threads(n)


def time_epoch(trainer, loader, epoch: int, keep: list | None = None) -> dict:
    """Run one epoch of ``loader`` through the trainer's own epoch loop; the record of the
    module docstring (``subgraph_nodes``: each iteration's row count). ``keep`` (a list)
    collects up to two of the epoch's batches of different row counts."""
    nodes, edges, presampled = [], [], [0]
    n_pre = len(_presampled(loader))

    def on_batch(batch):
        presampled[0] += batch.meta.get("stream_index", -1) < n_pre
        nodes.append(batch.num_nodes)
        edges.append(batch.num_edges)
        if keep is not None and len(keep) < 2 and all(b.num_nodes != batch.num_nodes
                                                      for b in keep):
            keep.append(batch)

    with spmm_timer() as tm, Clock() as clock:
        rec = trainer.run_epoch(epoch, on_batch=on_batch)  # the loop of every run
    wall = clock.wall_s
    wait, compute = rec["sample_s"], rec["compute_s"]
    return {"bench": "epoch", "epoch": epoch + 1, "wall_s": wall, "iterations": rec["iterations"],
            "wait_s": wait, "compute_s": compute, "other_s": wall - wait - compute,
            "spmm_s": tm["seconds"], "spmm_calls": tm["calls"],
            **clock.fields(rec["iterations"], "iteration"),
            "wait_share": wait / wall if wall > 0 else 0.0,
            "presampled_batches": int(presampled[0]),
            "loss": rec["loss"],
            "subgraph_nodes_mean": float(np.mean(nodes)) if nodes else 0.0,
            "subgraph_nodes_min": int(min(nodes)) if nodes else 0,
            "subgraph_nodes_max": int(max(nodes)) if nodes else 0,
            "subgraph_edges_mean": float(np.mean(edges)) if edges else 0.0,
            "subgraph_nodes": nodes}


def gemm_template(trainer, batches):
    """The :class:`~scalegnn.bench.gemm.GemmTemplate` of a training step of ``trainer``'s
    model, recorded on a copy of it (eval mode: no dropout draw; the trainer's model,
    optimizer and random streams are untouched); None when the products cannot be templated
    (fewer than two batch sizes seen, or products that do not scale with the row count)."""

    import torch

    if len(batches) < 2:
        return None
    model = copy.deepcopy(trainer.model).eval()
    rng = torch.get_rng_state()

    def step(batch):
        def run():
            logits = trainer.mode.forward(model, batch)
            model.loss(logits, batch.y, batch.loss_weight).backward()
        return run
    try:
        (a, _, _), (b, _, _) = (record_gemms(step(x)) for x in batches[:2])
        return GemmTemplate.from_two(a, batches[0].num_nodes, b, batches[1].num_nodes)
    except ValueError:
        return None
    finally:
        torch.set_rng_state(rng)


def _presampled(loader):
    return getattr(loader, "_presampled", ())


def _skip_presampled(loader):
    """Start the stream at the first fresh subgraph (the pre-sampled ones are dropped unused)."""
    n = len(loader._presampled)
    loader._presampled = [None] * n
    loader._next_presampled = n


def _run_child(args, policy: str) -> int:
    """Re-run this benchmark in a fresh interpreter with OMP_WAIT_POLICY=policy, relaying its
    JSON lines (stderr passes through; a mistake it finds is raised here, one line)."""
    payload = {k: v for k, v in vars(args).items() if not callable(v)}
    code = ("import argparse, json, sys; from scalegnn.bench.child import child_main; "
            "from scalegnn.bench.epoch import run; "
            "sys.exit(child_main(run, argparse.Namespace(**json.loads(sys.argv[1]))))")
    env = dict(os.environ, OMP_WAIT_POLICY=policy)
    rc, _ = run_child(code, payload, env, on_line=lambda line: print(line.rstrip("\n"),
                                                                       flush=True))
    return rc


def run(args) -> int:
    if args.epochs < 1:
        raise ConfigError(f"--epochs: must be >= 1, got {args.epochs}")
    if args.threads < 1:
        raise ConfigError(f"--threads: must be >= 1, got {args.threads}")
    cfg = load_config(args.config, args.set)  # here, before any child: one line
    if "shadow" in cfg.sections:
        raise ConfigError(f"--config {args.config}: bench epoch times GraphSAINT epochs; a "
                          f"shaDow-GNN config (shadow:) has no subgraph stream to time")
    cfg.validate_for_mode("graphsaint")
    policy = getattr(args, "omp_wait", "inherit").upper()
    if policy != "INHERIT" and os.environ.get("OMP_WAIT_POLICY", "").upper() != policy:
        return _run_child(args, policy)
    return _measure(args)


def _measure(args) -> int:
    import torch

    threads = set_threads(args.threads)
    cfg = load_config(args.config, args.set)
    # no evaluation: epochs are driven below; eval_every beyond them keeps fit() semantics too
    cfg.params["eval_every"] = max(cfg.params["eval_every"], args.epochs + 1)
    cfg.params["sampler_threads"] = threads
    ds, data_s = prepare_data(args)
    trainer = Trainer(ds, cfg, None, seed=args.seed, progress=False)
    t0 = time.perf_counter()
    loader = trainer.mode.loader(0)
    loader_s = time.perf_counter() - t0
    n_pre = len(_presampled(loader))
    if args.fresh:
        _skip_presampled(loader)
    records, keep, template = [], [], None
    replay = GemmReplay(next(trainer.model.parameters()).dtype)
    try:
        for epoch in range(args.epochs):
            rec = time_epoch(trainer, loader, epoch, keep)
            if template is None:
                template = gemm_template(trainer, keep)
            floor, floor_cpu = replay.floor_times(template, rec["subgraph_nodes"]) \
                if template is not None else (None, None)
            rec["gemm_floor_s"] = floor
            rec["ratio_vs_gemm_floor"] = rec["wall_s"] / floor if floor else None
            rec["gemm_floor_cpu_s"] = floor_cpu
            rec["cpu_ratio_vs_gemm_floor"] = rec["cpu_s"] / floor_cpu if floor_cpu else None
            rec["threads"] = threads
            rec["load_avg"] = load_avg()                 # after the replay
            records.append(rec)
            print(json.dumps({k: v for k, v in rec.items() if k != "subgraph_nodes"}),
                  flush=True)
    finally:
        loader.close()
    steady = records[1:] if len(records) > 1 else records
    epoch_s = float(np.median([r["wall_s"] for r in steady]))
    wait_share = float(np.median([r["wait_share"] for r in steady]))
    ratios = [r["ratio_vs_gemm_floor"] for r in steady if r["ratio_vs_gemm_floor"] is not None]
    ratio = float(np.median(ratios)) if ratios else None
    phase = cfg.phases[0]
    print(json.dumps({
        "bench": "epoch", "summary": True, "dataset": ds.name, "nodes": ds.num_nodes,
        "edges": ds.graph.num_edges, "train_nodes": int(len(ds.train_idx)),
        "sampler": phase["sampler"], "sampler_params": cfg.sampler_params(phase),
        "hidden": cfg.network["dim"], "arch": cfg.network["arch"], "threads": threads,
        "torch_threads": torch.get_num_threads(), "epochs": len(records), "fresh": args.fresh,
        "data_s": data_s, "loader_init_s": loader_s, "presample_s": loader.presample_seconds,
        "presampled_subgraphs": n_pre, "iterations_per_epoch": len(loader),
        "epoch_s_median": epoch_s, "epoch_s_all": [r["wall_s"] for r in records],
        "wait_share_median": wait_share,
        "compute_s_median": float(np.median([r["compute_s"] for r in steady])),
        "spmm_s_median": float(np.median([r["spmm_s"] for r in steady])),
        "cpu_s_median": float(np.median([r["cpu_s"] for r in steady])),
        "iteration_s_median": float(np.median([r["compute_s"] / max(r["iterations"], 1)
                                               for r in steady])),
        "loader_stats": {k: v for k, v in loader.stats.items() if isinstance(v, (int, float))},
        "gemm_floor_s_median": float(np.median([r["gemm_floor_s"] for r in steady]))
        if ratio is not None else None,
        "ratio_vs_gemm_floor_median": ratio,
        "cpu_ratio_vs_gemm_floor_median": float(np.median(
            [r["cpu_ratio_vs_gemm_floor"] for r in steady])) if ratio is not None else None,
        "target_ratio_vs_gemm_floor": TARGET_RATIO_VS_GEMM_FLOOR,
        "target_wait_share": TARGET_WAIT_SHARE,
        "meets_targets": ratio is not None and ratio <= TARGET_RATIO_VS_GEMM_FLOOR
        and wait_share < TARGET_WAIT_SHARE,
        "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", "default"),
        **cost_fields(sum(r["wall_s"] for r in steady), sum(r["cpu_s"] for r in steady),
                      sum(r["iterations"] for r in steady), "iteration"),
    }), flush=True)
    return 0
