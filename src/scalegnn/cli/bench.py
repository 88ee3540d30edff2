"""``scalegnn bench <name>``: benchmarks that print JSON lines.

Each benchmark is a module ``scalegnn.bench.<name>`` exposing ``add_arguments(parser)`` and
``run(args)``.
"""

import importlib

from scalegnn.cli.parser import no_subcommand

BENCHMARKS = {
    "sample": "samplers: subgraphs/s per sampler and thread count, normalization pre-sampling time",
    "spmm": "SpMM kernels vs torch.sparse.mm and the machine's memory bandwidth",
    "step": "one training iteration split into GEMM / SpMM / other",
    "epoch": "end-to-end epoch time (sampling + training, no evaluation)",
    "eval": "full-graph layer-wise evaluation time and peak memory",
    "extract": "shaDow extractors: targets/s at 1 and 2 threads, subgraph sizes, PPR precompute time",
    "scale": "per-iteration time, sampling share and peak RSS on Kronecker graphs of growing size",
}


def add_parser(sub):
    p = sub.add_parser("bench", help="run a benchmark (prints JSON lines)")
    bsub = p.add_subparsers(dest="bench")
    for name, help_ in BENCHMARKS.items():
        mod = importlib.import_module(f"scalegnn.bench.{name}")
        bp = bsub.add_parser(name, help=help_)
        mod.add_arguments(bp)
        bp.set_defaults(func=mod.run)
    p.set_defaults(func=lambda args: no_subcommand(p))
