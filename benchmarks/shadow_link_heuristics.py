"""Common-neighbours and Adamic-Adar scores on the held-out edge split of a link config (JSON lines).

    python benchmarks/shadow_link_heuristics.py --data ../shared/data/citeseer
    python benchmarks/shadow_link_heuristics.py --data ../shared/data/facebook --negatives 10000

The split is :func:`scalegnn.shadow.link.split_edges` with the same fractions, seed and number of
shared negatives as ``scalegnn train`` uses for ``shadow.task: link`` (defaults: the shipped
``configs/shared/*_link.yml``: 85/5/10, split seed 0, 10,000 negatives), so the numbers compare
with the trained model's ``summary.json`` directly. One line per heuristic with val and test
Hits@20/50/100 and MRR.
"""

from __future__ import annotations

import argparse
import json


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", required=True, help="dataset folder/file (scalegnn.data)")
    ap.add_argument("--negatives", type=int, default=10000)
    ap.add_argument("--split-seed", type=int, default=0)
    ap.add_argument("--fractions", type=float, nargs=3, default=(0.85, 0.05, 0.10))
    args = ap.parse_args(argv)

    from scalegnn.data import load_dataset
    from scalegnn.shadow.link import HEURISTICS, heuristic_baseline
    ds = load_dataset(args.data)
    for score in HEURISTICS:
        out = heuristic_baseline(ds, args.split_seed, score=score, fractions=args.fractions,
                                 num_negatives=args.negatives)
        print(json.dumps({"data": args.data, **{k: round(v, 4) if isinstance(v, float) else v
                                                for k, v in out.items()}}), flush=True)


if __name__ == "__main__":
    main()
