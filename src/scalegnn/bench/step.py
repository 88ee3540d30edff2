"""``scalegnn bench step``: one training iteration split into GEMM / SpMM / other.

The reference PPI-shaped model (GraphSAINT SAGE-style, hidden 512, arch ``1-0-1-0``, concat,
``bias: norm``, dropout 0.1, 121 multi-label outputs, 50 input features) on frontier (mrw)
subgraphs of a Kronecker graph (``kronecker:17:8`` by default), row-normalized, transpose by
Alg. 6. One iteration is the product's own step, ``Trainer.train_step`` at default settings:
forward, weighted BCE loss, backward, gradient clipping at 5, the trainer's Adam
(:mod:`scalegnn.engine.optim`), with the trainer's process settings (denormals flushed,
``params.flush_denormal``; freed buffers kept for reuse).

Split, per round (one round per subgraph): SpMM = wall time inside every SpMM call (forward
and backward, measured by ``ops.spmm.spmm_timer``); GEMM = the same subgraph's dense matrix
products (shapes recorded by torch.profiler, :mod:`scalegnn.bench.gemm`) replayed alone, back
to back, right after the step, so both see the same machine load; other = iteration − GEMM −
SpMM. ``ratio_vs_gemm`` = median over rounds of iteration / GEMMs alone (target <= 1.3);
``cpu_ratio_vs_gemm`` the same with process CPU seconds (all threads), which other processes
on the cores inflate far less than wall time (but which misses time a thread sleeps).
``gemm_in_iteration_ms``: what the products took inside one profiled iteration (profiler
overhead included); ``profile_top``: the ops with the most self time in that profiled
iteration (where "other" goes). Other fields are medians over the ``--repeat`` rounds, but
``wall_s`` / ``cpu_s`` / ``cpu_per_iteration`` (:mod:`scalegnn.bench.measure`): the wall and
process CPU seconds of the timed iterations (the GEMM replays not included).
``activation_bytes`` / ``gradient_bytes`` / ``step_bytes``: what one warm step holds for its
backward pass; ``peak_bytes`` / ``transient_bytes``: its high-water mark of tensor bytes, the
activations' gradients and other transients included (:func:`step_memory`; ``bench scale``
adds ``transient_bytes`` to its peak-memory bound).

``--tail`` (default ``model``) is the layer tail the model runs, the fused
``ops.fused.bias_act_norm``; ``--tail torch`` runs the same iteration with each layer's
bias + act + norm tail computed by the plain torch composition
(``ops.fused.bias_act_norm_reference``, ~20 ops), patched into the model for this benchmark
only, to show what the fused tail saves; ``--tail both`` reports both on the same subgraphs,
initial weights and dropout seed. ``--no-flush-denormal`` measures the opt-out.

``--device cuda`` runs the same steps on a GPU instead and reports, per subgraph, the transfer
of the batch to the GPU and the synchronized step (:mod:`scalegnn.bench.device`); the GEMM
split, the profile and the host-memory fields are the CPU benchmark's and are left out there.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import json
import time

import numpy as np
import torch

from scalegnn.batch import Batch
from scalegnn.bench.device import device_rounds
from scalegnn.bench.gemm import (GemmReplay, GemmTemplate, gemm_flops, profile_top, quiet_stderr,
                                 record_gemms)
from scalegnn.bench.measure import Clock
from scalegnn.config import Config
from scalegnn.config.flags import MAX_THREADS, REPEATS, SEED, WIDTH, count, name_flags, real
from scalegnn.config.schema import INT32_MAX
from scalegnn.data import load_dataset
from scalegnn.engine.optim import Adam
from scalegnn.nn.saint import SAINTLayer
from scalegnn.ops.fused import bias_act_norm_reference
from scalegnn.ops.spmm import num_threads, outputs_from_torch, spmm_timer
from scalegnn.sampling.samplers import make_sampler
from scalegnn.threads import set_threads
from scalegnn.train.trainer import Trainer

TARGET_RATIO = 1.3


def add_arguments(p):
    p.add_argument("--dataset", default="kronecker:17:8", help="dataset spec (default kronecker:17:8)")
    p.add_argument("--size-subgraph", type=count(1, INT32_MAX), default=8000,
                   help="mrw node budget (default 8000)")
    p.add_argument("--size-frontier", type=count(1, INT32_MAX), default=2500,
                   help="mrw frontier size (default 2500)")
    p.add_argument("--hidden", type=WIDTH, default=512)
    p.add_argument("--arch", default="1-0-1-0")
    p.add_argument("--dropout", type=real(0.0, 1.0, hi_open=True), default=0.1)
    p.add_argument("--threads", type=count(1, MAX_THREADS), default=2)
    p.add_argument("--repeat", type=REPEATS, default=5)
    p.add_argument("--seed", type=SEED, default=0)
    p.add_argument("--flush-denormal", action=argparse.BooleanOptionalAction, default=True,
                   help="params.flush_denormal of the trainer (default on, as in training; "
                        "--no-flush-denormal: Adam's denormal second moments computed as such)")
    p.add_argument("--tail", choices=["model", "torch", "both"], default="model",
                   help="layer tail: the model's (fused, default), plain torch ops, or both")
    p.add_argument("--device", default="cpu",
                   help="cpu (default) or cuda[:N]: the step on a GPU, with the batch's transfer")
    name_flags(p)


@contextlib.contextmanager
def torch_tail():
    """Patch SAINTLayer.combine to compute the bias+act+norm tail with plain torch ops."""
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


def step_config(args, multilabel: bool):
    """The training config of the benchmark's model (defaults elsewhere)."""
    return Config.from_dict({
        "network": [{"dim": args.hidden, "arch": args.arch, "aggr": "concat", "bias": "norm",
                     "act": "relu", "loss": "sigmoid" if multilabel else "softmax"}],
        "params": [{"lr": 0.01, "dropout": args.dropout, "grad_clip": 5.0,
                    "flush_denormal": bool(args.flush_denormal), "sampler_threads": args.threads}],
        "phase": [{"end": 1, "sampler": "mrw", "size_subgraph": args.size_subgraph,
                   "size_frontier": args.size_frontier}]}, "bench step")


def _batches(trainer, args) -> list:
    """``repeat + 1`` row-normalized mrw subgraphs as training batches (uniform loss weights)."""
    ds = trainer.mode.dataset
    sampler = make_sampler("mrw", ds.graph, ds.train_idx,
                           {"size_subgraph": args.size_subgraph,
                            "size_frontier": args.size_frontier})
    out = []
    for sub in sampler.sample(args.repeat + 1, args.seed, args.threads):
        n = len(sub.nodes)
        out.append(Batch(nodes=sub.nodes, adj=sub.graph.row_normalized(),
                         adj_t_perm=sub.transpose_perm, x=ds.features.gather(sub.nodes),
                         y=torch.from_numpy(np.ascontiguousarray(ds.labels[sub.nodes])),
                         loss_weight=torch.full((n,), 1.0 / n)))
    return out


def tensor_peak_bytes(fn) -> int | None:
    """The most bytes of host tensors live at once while ``fn()`` runs, above those live when
    it starts, from torch.profiler's memory timeline (allocations and frees of torch's CPU
    allocator, in order); None where that timeline is unavailable (it is a private profiler
    API). numpy temporaries of the numba kernels (per-row statistics) are not counted."""
    from torch.profiler import ProfilerActivity, profile
    try:
        from torch.profiler._memory_profiler import Action
    except ImportError:
        return None
    with quiet_stderr(), outputs_from_torch(), \
            profile(activities=[ProfilerActivity.CPU], profile_memory=True, record_shapes=True,
                    with_stack=True) as prof:   # quiet: kineto's start/stop lines on fd 2
        fn()
    try:
        timeline = prof._memory_profile().timeline
    except (AttributeError, RuntimeError):     # a torch without the private timeline
        return None
    live = peak = 0
    for _, action, _, size in timeline:
        if action == Action.CREATE:
            live += size
            peak = max(peak, live)
        elif action == Action.DESTROY:
            live -= size
    return int(peak)


def step_memory(trainer, batch) -> dict:
    """One ``trainer.train_step(batch)`` with the bytes it holds:

    * ``activation_bytes``: the distinct storages autograd saves during the forward (recorded
      by ``torch.autograd.graph.saved_tensors_hooks``: layer inputs and outputs, SpMM results,
      the fused tail's inputs), less those of the parameters and of the batch's own tensors
      (counted as model and pool); ``FastDropout``'s masks (one bit per element, numpy) are
      not tensors and not counted;
    * ``gradient_bytes``: the parameters' gradients the step leaves in ``.grad``;
    * ``peak_bytes``: the step's high-water mark of host tensor bytes
      (:func:`tensor_peak_bytes`) above what is live before it, the previous step's parameter
      gradients cleared first: the saved activations plus everything transient — the
      gradients of the activations in the backward pass, GEMM and SpMM outputs, the new
      parameter gradients, the optimizer's temporaries. None where the profiler's memory
      timeline is unavailable;
    * ``transient_bytes`` = ``peak_bytes`` − ``gradient_bytes`` (what the step needs beyond a
      model whose gradients are already counted; ``activation_bytes`` where no peak);
    * ``step_bytes`` = ``activation_bytes`` + ``gradient_bytes`` (saved tensors only).
    """
    known = {t.untyped_storage().data_ptr() for t in trainer.params}
    known |= {t.untyped_storage().data_ptr() for t in (batch.x, batch.y, batch.loss_weight)
              if isinstance(t, torch.Tensor)}
    saved: dict[int, int] = {}

    def pack(t):
        if isinstance(t, torch.Tensor) and t.device.type != "meta":
            st = t.untyped_storage()
            if st.data_ptr() not in known:
                saved[st.data_ptr()] = st.nbytes()
        return t

    def step():
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            trainer.train_step(batch)

    trainer.optimizer.zero_grad(set_to_none=True)   # what the step frees first, freed outside
    peak = tensor_peak_bytes(step)
    grads = int(sum(p.grad.numel() * p.grad.element_size() for p in trainer.params
                    if p.grad is not None))
    act = int(sum(saved.values()))
    return {"activation_bytes": act, "gradient_bytes": grads, "step_bytes": act + grads,
            "peak_bytes": peak,
            "transient_bytes": act if peak is None else peak - grads}


def gemm_template(trainer, batches):
    """(GemmTemplate of the step's products, the first recording's calls, ms they took inside
    that profiled step, its top ops): two recorded steps, on batches of different row counts
    when there are any."""
    first = batches[0]
    calls, inside, prof = record_gemms(lambda: trainer.train_step(first))
    other = next((b for b in batches[1:] if b.num_nodes != first.num_nodes), None)
    if other is None:                           # every batch has first's row count
        return GemmTemplate(calls), calls, inside * 1e3, profile_top(prof)
    calls_b, _, _ = record_gemms(lambda: trainer.train_step(other))
    template = GemmTemplate.from_two(calls, first.num_nodes, calls_b, other.num_nodes)
    return template, calls, inside * 1e3, profile_top(prof)


def time_rounds(trainer, batches, template, replay):
    """Per round (one per batch): the step's wall seconds, its SpMM seconds, the seconds of
    the same batch's products replayed alone right after it (interleaved, so that both see the
    same machine load), the step's process CPU time over the replay's, and the
    :class:`~scalegnn.bench.measure.Clock` of the steps."""
    iters, spmm_s, gemm_s, cpu_ratio, clock = [], [], [], [], Clock()
    for b in batches:
        with spmm_timer() as tm, clock:
            trainer.train_step(b)
        iters.append(clock.last_wall_s)
        spmm_s.append(tm["seconds"])
        wall, gemm_cpu = replay.floor_times(template, [b.num_nodes])
        gemm_s.append(wall)
        cpu_ratio.append(clock.last_cpu_s / gemm_cpu if gemm_cpu > 0 else float("nan"))
    return np.array(iters), np.array(spmm_s), np.array(gemm_s), np.array(cpu_ratio), clock


def run(args) -> int:
    set_threads(args.threads)
    torch.manual_seed(args.seed)
    try:
        return _run(args)
    finally:
        torch.set_flush_denormal(False)        # the trainer set it for this process


def _run(args) -> int:
    t0 = time.perf_counter()
    ds = load_dataset(args.dataset, seed=args.seed)
    trainer = Trainer(ds, step_config(args, ds.multilabel), None, seed=args.seed,
                      device=args.device, progress=False)
    batches = _batches(trainer, args)
    t_prep = time.perf_counter() - t0
    nodes_median = float(np.median([b.num_nodes for b in batches[1:]]))
    head = {"bench": "step", "dataset": args.dataset, "arch": args.arch, "hidden": args.hidden,
            "threads": num_threads(), "repeat": len(batches) - 1,
            "subgraph_nodes_median": nodes_median,
            "subgraph_edges_median": float(np.median([b.num_edges for b in batches[1:]])),
            "prep_s": t_prep}
    if trainer.device.type != "cpu":
        print(json.dumps({**head, **device_rounds(trainer, batches, trainer.device)}),
              flush=True)
        return 0
    init = copy.deepcopy(trainer.model.state_dict())
    lr = trainer.config.params["lr"]
    dtype = next(trainer.model.parameters()).dtype

    trainer.train_step(batches[0])              # warm-up: numba compile, allocator
    memory = step_memory(trainer, batches[0])   # a warm step's activations and gradients
    template, calls, gemm_inside_ms, top = gemm_template(trainer, batches)
    replay = GemmReplay(dtype)
    tails = ["model", "torch"] if args.tail == "both" else [args.tail]
    for tail in tails:
        trainer.model.load_state_dict(init)
        trainer.optimizer = Adam(trainer.params, lr=lr)
        torch.manual_seed(args.seed)                # same dropout masks for both tails
        with torch_tail() if tail == "torch" else contextlib.nullcontext():
            trainer.train_step(batches[0])          # warm-up of this tail's code path
            iters, spmm_s, gemm_s, cpu_ratios, clock = time_rounds(trainer, batches[1:],
                                                                   template, replay)
        ratios = iters / gemm_s
        it, sp, gm = (float(np.median(v)) * 1e3 for v in (iters, spmm_s, gemm_s))
        ratio = float(np.median(ratios))
        flops = gemm_flops(template.calls_for(int(nodes_median)))
        print(json.dumps({
            **head, "tail": tail, "flush_denormal": bool(args.flush_denormal),
            "iteration_ms": it, "gemm_alone_ms": gm, "spmm_ms": sp,
            "other_ms": float(np.median(iters - gemm_s - spmm_s)) * 1e3,
            "ratio_vs_gemm": ratio, "ratio_all": ratios.tolist(),
            "cpu_ratio_vs_gemm": float(np.median(cpu_ratios)),
            "target_ratio": TARGET_RATIO, "meets_target": ratio <= TARGET_RATIO,
            "gemm_in_iteration_ms": gemm_inside_ms,
            "gemm_calls": len(calls), "gemm_GFLOPs": flops / 1e9,
            "gemm_GFLOPps": flops / gm / 1e6,
            "iteration_ms_all": (iters * 1e3).tolist(), "gemm_alone_ms_all": (gemm_s * 1e3).tolist(),
            **memory, "profile_top": top if tail == tails[0] else None,
            **clock.fields(len(iters), "iteration"),
        }), flush=True)
    return 0
