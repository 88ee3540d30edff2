"""``scalegnn train`` (single-process training) and ``scalegnn report`` (a run's report).

The run options (config, overrides, run directory, seed, resume...) are shared with
``scalegnn dist-train``: :func:`add_run_arguments` declares them and :func:`resolve_run` turns
them into one validated :class:`RunSpec`, before any data is loaded or any process started.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from scalegnn import memory
from scalegnn.cli.data import SPLIT_HELP, add_data_arguments, data_notes, data_options
from scalegnn.config import Config
from scalegnn.config.flags import EPOCHS, SEED, SPLIT, THREADS
from scalegnn.data import load_dataset
from scalegnn.data.graphsaint import feature_file_bytes
from scalegnn.data.options import check_options, flag
from scalegnn.engine.console import format_summary
from scalegnn.engine.out_of_memory import out_of_memory_as_error
from scalegnn.engine.rundir import read_run_info
from scalegnn.errors import ConfigError
from scalegnn.features import should_map
from scalegnn.io import same_path
from scalegnn.report import report_paths, write_report
from scalegnn.threads import set_threads
from scalegnn.train import Trainer
from scalegnn.train.build import resolve_device, shape_run_model
from scalegnn.train.modes import DISTRIBUTED_MODES, mode_for

DEFAULT_DATA = "synthetic"


def add_run_arguments(p, *, device_default: str = "cpu"):
    """Options every training command takes."""
    p.add_argument("--config", help="GraphSAINT-style YAML train config (default: built-in)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a config value, e.g. params.lr=0.005 or phase.end=10")
    p.add_argument("--epochs", type=EPOCHS, help="shorthand for --set phase.end=N")
    p.add_argument("--out", help="run directory (default: runs/<dataset>-<time>)")
    p.add_argument("--seed", type=SEED, help="random seed (default 0)")
    p.add_argument("--threads", type=THREADS, help="torch/numba threads (default: all cores)")
    p.add_argument("--device", default=None,
                   help=f"cpu, cuda[:N] or auto (default: {device_default})")
    p.add_argument("--resume", metavar="RUN_DIR",
                   help="continue the run in RUN_DIR from last.pt with its recorded config, "
                        "data, split, seed and threads")
    p.add_argument("--overwrite", action="store_true",
                   help="replace the run already in --out (default: refuse)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(device_default=device_default)


def add_parser(sub):
    p = sub.add_parser("train", help="train a GNN with GraphSAINT sampling (default: built-in "
                                     "synthetic dataset)")
    p.add_argument("--data", help=f"dataset folder/file or generator spec (default: {DEFAULT_DATA})")
    p.add_argument("--split", type=SPLIT, help=SPLIT_HELP)
    p.add_argument("--test-data", metavar="PATH",
                   help="report the test metric on this other graph (same features and "
                        "classes; its own test split if the data gives one, else all nodes; "
                        "loaded with the same data options)")
    p.add_argument("--force", action="store_true",
                   help="train even when the estimated peak memory exceeds the available "
                        "memory (scalegnn data info prints the estimate)")
    add_run_arguments(p)
    add_data_arguments(p)
    p.set_defaults(func=run_train)

    r = sub.add_parser("report", help="write a run directory's report.png and report.html "
                                      "(loss, validation, time split; tables of every epoch)")
    r.add_argument("run_dir")
    r.add_argument("--out", help="X.png: the plot, and the HTML page beside it as X.html; "
                                 "X.html: the page alone (default: RUN_DIR/report.png and "
                                 "report.html)")
    r.set_defaults(func=run_report)


@dataclass
class RunSpec:
    """What a training command will do, validated (nothing written yet)."""

    config: object
    data: str | None
    split: int
    seed: int
    threads: int
    device: str
    run_dir: Path | None
    resume: bool
    overwrite: bool
    recorded: dict
    data_options: dict = field(default_factory=dict)
    test_data: str | None = None


def _recorded(run_dir: Path) -> dict:
    return read_run_info(run_dir / "run.json", missing_ok=True)


def resolve_run(args, mode: str) -> RunSpec:
    """Config, data, seed, run directory of a training command; resume rules applied."""
    overrides = list(args.overrides)
    if args.epochs is not None:
        overrides.append(f"phase.end={args.epochs}")
    data = getattr(args, "data", None)
    split = getattr(args, "split", None)
    if args.resume:
        if args.overwrite:
            raise ConfigError(f"--overwrite: contradicts --resume {args.resume} (--resume "
                              f"continues the run, --overwrite replaces it); drop one")
        if args.out is not None and not same_path(args.out, args.resume):
            raise ConfigError(f"--out {args.out}: a resumed run writes its own folder "
                              f"{args.resume}; drop --out")
        if args.config is not None:
            raise ConfigError("--config: a resumed run keeps its recorded config.yml; use --set "
                              "KEY=VALUE to change a value (e.g. phase.end to train longer)")
        run_dir = Path(args.resume)
        cfg_path = run_dir / "config.yml"
        if not run_dir.is_dir() or not cfg_path.is_file():
            raise ConfigError(f"--resume {run_dir}: no config.yml (not a run directory)")
        rec = _recorded(run_dir)
        if rec.get("python_model"):
            raise ConfigError(f"--resume {run_dir}: its model ({rec['python_model']}) was passed "
                              f"to Trainer from Python; resume it there with the same model=")
        if (rec.get("mode", mode) in DISTRIBUTED_MODES) != (mode == "distributed"):
            raise ConfigError(f"--resume {run_dir}: a {rec['mode']} run; resume it with the "
                              f"command that made it")
        for flag, given, key in (("--data", data, "data"), ("--split", split, "split"),
                                 ("--seed", args.seed, "seed")):
            if given is not None and key in rec and not (
                    same_path(str(given), str(rec[key])) if key == "data" else given == rec[key]):
                raise ConfigError(f"{flag} {given}: the run in {run_dir} was made with {flag} "
                                  f"{rec[key]}; a resumed run keeps its recorded value")
        options, test_data = _recorded_data_choices(args, rec, run_dir)
        config = Config.from_yaml(cfg_path).override(overrides)
        data = rec.get("data", rec.get("source", data))
        split = rec["split"] if rec.get("split") is not None else split  # (read_run_info
        seed = rec["seed"] if rec.get("seed") is not None else args.seed or 0  # checked them)
        threads = args.threads if args.threads is not None else rec.get("threads") or 0
        device = args.device or rec.get("device_arg") or args.device_default
    else:
        config = Config.from_yaml(args.config) if args.config else Config.builtin()
        config.override(overrides)
        run_dir = Path(args.out) if args.out else None
        seed = args.seed if args.seed is not None else 0
        threads = args.threads if args.threads is not None else 0
        device = args.device or args.device_default
        rec = {}
        options, test_data = _data_options(args), getattr(args, "test_data", None)
    config.validate_for_mode(mode)
    if threads < 0:
        raise ConfigError(f"--threads: must be >= 0 (0: all cores), got {threads}")
    if data is None and mode == "graphsaint":
        data = DEFAULT_DATA
    return RunSpec(config, data, int(split or 0), int(seed), int(threads), device, run_dir,
                   bool(args.resume), bool(args.overwrite), rec, options, test_data)


def _data_options(args) -> dict:
    return check_options(data_options(args), "data options")


def _recorded_data_choices(args, rec: dict, run_dir: Path) -> tuple[dict, str | None]:
    """The data options and test graph of the run being resumed; a different choice given now
    is refused (the run's numbers depend on them)."""
    recorded = rec.get("data_options") or {}
    for key, value in _data_options(args).items():
        if recorded.get(key) != value:
            was = f"{recorded[key]!r}" if key in recorded else "no such option"
            raise ConfigError(f"{flag(key)} {value}: the run in {run_dir} was made with {was}; "
                              f"a resumed run keeps its recorded data options")
    test_data = getattr(args, "test_data", None)
    if test_data is not None and not same_path(test_data, str(rec.get("test_data"))):
        was = f"--test-data {rec['test_data']}" if rec.get("test_data") else "no --test-data"
        raise ConfigError(f"--test-data {test_data}: the run in {run_dir} was made with {was}; "
                          f"a resumed run keeps its recorded value")
    return dict(recorded), rec.get("test_data")


def map_features(spec: RunSpec) -> bool:
    """Memory-map the data's feats.npy (``params.mmap_features``; auto: when the file is over
    a quarter of the available memory)."""
    setting = spec.config.params["mmap_features"]
    size = feature_file_bytes(spec.data) if setting == "auto" and spec.data else None
    return should_map(setting, size, memory.available_memory() if size is not None else None)


def run_train(args) -> int:

    spec = resolve_run(args, "graphsaint")
    resolve_device(spec.device)  # before loading data or making a run directory
    set_threads(spec.threads)
    chosen = spec.resume or getattr(args, "split", None) is not None
    dataset = load_dataset(spec.data, split=spec.split if chosen else None, seed=0,
                           options=spec.data_options, mmap=map_features(spec))
    # said once per run, so nobody trains on structural features or split 0 unknowingly
    for note in data_notes(dataset.meta):
        print(f"scalegnn: {dataset.name}: {note}", file=sys.stderr)
    source = dataset
    if spec.test_data is not None:
        test = load_dataset(spec.test_data, seed=0, options=spec.data_options)
        for note in data_notes(test.meta):
            print(f"scalegnn: {test.name} (--test-data): {note}", file=sys.stderr)
        source = mode_for(dataset, spec.config.validate(), seed=spec.seed, test_dataset=test)
    run_dir = spec.run_dir
    if run_dir is None:
        run_dir = Path("runs") / f"{Path(str(dataset.name)).name}-{time.strftime('%Y%m%d-%H%M%S')}"
    info = {"data": spec.data, "split": int(dataset.meta.get("split_index", spec.split)),
            "threads": spec.threads,
            "device_arg": spec.device}
    if spec.data_options:
        info["data_options"] = spec.data_options
    if spec.test_data is not None:
        info["test_data"] = spec.test_data
    if dataset.meta.get("features"):
        info["features"] = str(dataset.meta["features"])
    # out of memory (--force past the guard, or an estimate too low): one line naming the
    # settings that size the largest term of the estimate
    with out_of_memory_as_error(dataset, spec.config, shape_run_model(dataset, spec.config)):
        trainer = Trainer(source, spec.config, run_dir, seed=spec.seed, device=spec.device,
                          progress=not args.no_progress, resume=spec.resume,
                          overwrite=spec.overwrite, run_info=info, force=args.force)
        result = trainer.fit()
    print(format_summary(result, run_dir))
    sys.stdout.flush()
    return 0


def run_report(args) -> int:
    png, html = report_paths(args.out) if args.out else (None, None)  # before reading the run
    paths = write_report(args.run_dir, png, html)
    if paths["skipped"]:
        print(f"scalegnn: warning: {Path(args.run_dir) / 'metrics.jsonl'}: skipped "
              f"{paths['skipped']} damaged line(s) that are not JSON records (torn by a crash?); "
              f"the report shows the other epochs", file=sys.stderr)
    if paths["png"] is None and png is not False:
        print(f"{paths['html']}\nno report.png: matplotlib is not installed (pip install "
              f"'scalegnn[plot]')", file=sys.stderr)
        return 1
    if paths["png"] is not None:
        print(paths["png"])
    print(paths["html"])
    return 0
