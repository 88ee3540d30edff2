"""``scalegnn bench eval``: full-graph layer-wise evaluation time and peak memory.

Runs ``scalegnn.engine.evaluate.full_graph_logits`` (layer by layer, row blocks of
``batch_rows``) with the PPI-shaped model on a whole graph, for several block sizes. Memory is
the peak resident set size while the call runs, sampled every 2 ms by a watcher thread, minus
the RSS just before it (``peak_delta_MiB``); ``layer_output_MiB`` is the analytic size of the
widest layer output (n x width x 4 bytes) for comparison. Time: median of ``--repeat`` calls
(``time_s``); ``wall_s`` / ``cpu_s`` / ``cpu_per_call``: wall and process CPU seconds of all
of them (:mod:`scalegnn.bench.measure`; the RSS watcher's small share included), with the
load average after them.
Logits of every block size are checked against the first one (max abs difference reported).
"""

from __future__ import annotations

import json
import os
import threading

import numpy as np
import torch

from scalegnn.bench.measure import Clock
from scalegnn.config.flags import MAX_THREADS, REPEATS, SEED, WIDTH, count, name_flags
from scalegnn.data import load_dataset
from scalegnn.engine.evaluate import full_graph_logits
from scalegnn.nn import build_model
from scalegnn.ops.adj import SparseAdj
from scalegnn.ops.spmm import num_threads, spmm_timer
from scalegnn.threads import set_threads

_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def add_arguments(p):
    p.add_argument("--dataset", default="kronecker:17:8", help="dataset spec (default kronecker:17:8)")
    p.add_argument("--batch-rows", type=count(1, 1 << 62), nargs="+",
                   default=[8192, 65536, 1 << 30],
                   help="row-block sizes to try (default 8192 65536 all)")
    p.add_argument("--hidden", type=WIDTH, default=512)
    p.add_argument("--arch", default="1-0-1-0")
    p.add_argument("--threads", type=count(1, MAX_THREADS), default=2)
    p.add_argument("--repeat", type=REPEATS, default=3)
    p.add_argument("--seed", type=SEED, default=0)
    name_flags(p)


def _rss() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * _PAGE


class _PeakRSS:
    """Context manager: peak RSS (bytes) seen while the block runs."""

    def __enter__(self):
        self.base = self.peak = _rss()
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._watch, daemon=True)
        self._t.start()
        return self

    def _watch(self):
        while not self._stop.wait(0.002):
            self.peak = max(self.peak, _rss())

    def __exit__(self, *exc):
        self._stop.set()
        self._t.join()
        self.peak = max(self.peak, _rss())


def run(args) -> int:
    set_threads(args.threads)
    torch.manual_seed(args.seed)
    ds = load_dataset(args.dataset, seed=args.seed)
    model = build_model(ds.num_features, ds.num_classes, hidden=args.hidden, arch=args.arch,
                        aggr="concat", bias="norm", act="relu", dropout=0.0,
                        multilabel=ds.multilabel)
    feats = np.asarray(ds.features, dtype=np.float32)
    adj = SparseAdj.from_graph(ds.graph.row_normalized())
    n = ds.graph.num_nodes
    widest = max([ds.num_features] + [layer.output_dim for layer in model.layers])
    first = None
    full_graph_logits(model, ds.graph, feats, min(args.batch_rows), adj=adj)   # warm-up/compile
    for rows in args.batch_rows:
        times, peaks, spmm_s, clock = [], [], [], Clock()
        for _ in range(max(args.repeat, 1)):
            with _PeakRSS() as mem, spmm_timer() as tm:
                with clock:
                    logits = full_graph_logits(model, ds.graph, feats, rows, adj=adj)
                times.append(clock.last_wall_s)
            peaks.append(mem.peak - mem.base)
            spmm_s.append(tm["seconds"])
        if first is None:
            first = logits
        diff = float((logits - first).abs().max())
        print(json.dumps({
            "bench": "eval", "dataset": args.dataset, "nodes": n, "edges": ds.graph.num_edges,
            "arch": args.arch, "hidden": args.hidden, "threads": num_threads(),
            "batch_rows": min(rows, n), "time_s": float(np.median(times)),
            "spmm_s": float(np.median(spmm_s)),
            "peak_delta_MiB": float(np.median(peaks)) / 2**20,
            "layer_output_MiB": n * widest * 4 / 2**20,
            "max_abs_diff_vs_first": diff, "repeat": len(times),
            **clock.fields(len(times), "call"),
        }), flush=True)
        del logits
    return 0
