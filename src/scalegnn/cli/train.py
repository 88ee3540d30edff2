"""``scalegnn train`` (GraphSAINT minibatch training) and ``scalegnn report`` (plots of a run)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

DEFAULT_DATA = "synthetic"


def add_parser(sub):
    p = sub.add_parser("train", help="train a GNN with GraphSAINT sampling (default: built-in "
                                     "synthetic dataset)")
    p.add_argument("--data", default=DEFAULT_DATA,
                   help="dataset folder/file or generator spec (default: %(default)s)")
    p.add_argument("--config", help="GraphSAINT-style YAML train config (default: built-in)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a config value, e.g. params.lr=0.005 or phase.end=10")
    p.add_argument("--out", help="run directory (default: runs/<dataset>-<time>)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--split", type=int, default=0, help="split index for datasets with several")
    p.add_argument("--threads", type=int, default=0, help="torch/numba threads (0: all cores)")
    p.add_argument("--device", default="cpu", help="cpu or cuda[:N]")
    p.add_argument("--resume", metavar="RUN_DIR", help="continue the run in RUN_DIR from last.pt")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=run_train)

    r = sub.add_parser("report", help="plot a run directory's metrics to report.png")
    r.add_argument("run_dir")
    r.add_argument("--out", help="PNG path (default: RUN_DIR/report.png)")
    r.set_defaults(func=run_report)


def run_train(args) -> int:
    from scalegnn.config import Config
    from scalegnn.data import load_dataset
    from scalegnn.errors import ConfigError
    from scalegnn.threads import set_threads
    from scalegnn.train.trainer import Trainer

    set_threads(args.threads)
    if args.resume:
        run_dir = Path(args.resume)
        cfg_path = run_dir / "config.yml"
        if not cfg_path.is_file():
            raise ConfigError(f"--resume {run_dir}: no config.yml (not a run directory)")
        config = Config.from_yaml(cfg_path).override(args.overrides)
        info = json.loads((run_dir / "run.json").read_text()) if (run_dir / "run.json").is_file() else {}
        data = info.get("source") or args.data
        seed = info.get("seed", args.seed)
    else:
        config = Config.from_yaml(args.config) if args.config else Config()
        config.override(args.overrides)
        data, seed, run_dir = args.data, args.seed, args.out
    dataset = load_dataset(data, split=args.split, seed=0)
    if run_dir is None:
        run_dir = Path("runs") / f"{Path(str(dataset.name)).name}-{time.strftime('%Y%m%d-%H%M%S')}"
    trainer = Trainer(dataset, config, run_dir, seed=seed, device=args.device,
                      progress=not args.no_progress, resume=bool(args.resume))
    result = trainer.fit()
    metric = result["metric"]
    print(f"dataset {result['dataset']}: best epoch {result['best_epoch'] + 1}/{result['epochs']}, "
          f"wall {result['time']['wall_s']:.1f}s")
    for split in ("val", "test"):
        m = result[split]
        keys = [k for k in ("f1_micro", "f1_macro", "accuracy", "roc_auc") if k in m]
        print(f"  {split:5s} " + "  ".join(f"{k}={m[k]:.4f}" for k in keys))
    print(f"  test {metric} = {result['test'].get(metric, float('nan')):.4f}; run directory: {run_dir}")
    sys.stdout.flush()
    return 0


def run_report(args) -> int:
    from scalegnn.report import plot_run
    path = plot_run(args.run_dir, args.out)
    if path is None:
        print("matplotlib is not installed (pip install 'scalegnn[plot]')", file=sys.stderr)
        return 1
    print(path)
    return 0
