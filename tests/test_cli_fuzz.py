"""Nothing a user types crashes, hangs or corrupts: every command of the CLI (each leaf of the
argparse tree: train, predict, embed, report, data info/convert/synth, partition
make/compare/shp, dist-train up to its launch, bench ...) with generated flags, YAML configs and
damaged files (truncated, bit-flipped or structurally edited .npy, .npz, JSON, CSV, YAML, .pt
checkpoints, metrics.jsonl) exits 0 or 2, prints at most one error line and no traceback, keeps
stderr to the CLI's documented lines, leaves no temporary and changes nothing but its outputs
(``cli_fuzz_runner.problems``), within an address-space limit and a time limit per case.

Command lines the parser refuses run in this process through ``scalegnn.cli.main``; the others
in a child forked per case (``cli_fuzz_runner.Zygote``). A fixed set of examples here
(derandomized); ``python benchmarks/fuzz_cli.py --cases 10000`` runs the long fuzz, and
``SCALEGNN_FUZZ_EXAMPLES=N`` fuzzes N fresh random examples here. Every case the long fuzz found
is in :data:`REGRESSIONS`.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings

from cli_fuzz_cases import Case, cases
from cli_fuzz_files import FileSpec, build_fixtures
from cli_fuzz_runner import Zygote, problems, run_case, snapshot
from scalegnn.bench.child import child_main

MEM_BYTES = 4 << 30     # address space per case, beyond what the forked zygote maps
TIMEOUT_S = 60.0        # per case; the cases below take 0.1-3 s
DEEP = int(os.environ.get("SCALEGNN_FUZZ_EXAMPLES", "0"))
EXAMPLES = DEEP or 100
FUZZ = settings(max_examples=EXAMPLES, derandomize=not DEEP, deadline=None, database=None,
                suppress_health_check=list(HealthCheck))


@pytest.fixture(scope="module")
def fuzz(tmp_path_factory):
    """(root, fixtures, zygote); the fixtures are checked untouched at the end."""
    root = tmp_path_factory.mktemp("fuzz")
    zygote = Zygote(MEM_BYTES, {"MPLCONFIGDIR": str(root / "mpl")}).start()

    def run_cli(argv, cwd):
        o = zygote.run(argv, cwd, 300)
        assert o.rc == 0, (argv, o.stderr)

    fixtures = build_fixtures(root / "fixtures", run_cli)
    before = snapshot(fixtures)
    yield root, fixtures, zygote
    zygote.close()
    assert snapshot(fixtures) == before, "a case changed the fixtures"


def check(case: Case, fuzz, rc: int | None = None) -> None:
    o = run_case(case, *fuzz[:2], fuzz[2], TIMEOUT_S)
    bad = problems(o, case.outputs) + ([f"exit code {o.rc}, not {rc}"] if rc not in (
        None, o.rc) else [])
    assert not bad, f"{bad}\n{case.describe()}\nexit {o.rc}; stderr:\n{o.stderr[-2000:]}"


@FUZZ
@given(case=cases())
def test_every_command_exits_0_or_2_with_one_line(fuzz, case):
    check(case, fuzz)


# ----------------------------------------------------------------------------- found by the fuzz
def _fixture(alias: str, name: str, *ops) -> FileSpec:
    return FileSpec(alias, ("fixture", name), list(ops))


def _run_set(name: str, key: str, value) -> list[FileSpec]:
    """The run fixture as ``r`` with ``key`` of its file ``name`` set to ``value``."""
    return [_fixture("r", "run"), _fixture(f"r/{name}", f"run/{name}", (0, ("set", key, value)))]


GS = _fixture("gs", "gs")
REGRESSIONS = {
    # a command family alone printed its help and exited 2 without an error line
    "data alone": Case(["data"]),
    "bench alone": Case(["bench"]),
    "partition alone": Case(["partition"]),
    # torch's profiler (kineto) printed profiler_start/stop lines on stderr
    "bench step": Case(["bench", "step", "--dataset", "kronecker:6:4", "--size-subgraph", "40",
                        "--size-frontier", "10", "--hidden", "16", "--repeat", "1",
                        "--threads", "1"]),
    # an unknown config key listed all 27 allowed keys: a 441-character error line
    "unknown key": Case(["train", "--data", "gs", "--epochs", "1", "--set", "params.l" + "r" * 60
                         + "=1"]),
    # bench scale checked its model flags in the measuring child: its traceback, exit 1
    "bench scale --arch=": Case(["bench", "scale", "--scales", "6", "--iterations", "1",
                                 "--warmup", "0", "--arch="]),
    "bench scale frontier": Case(["bench", "scale", "--scales", "6", "--iterations", "1",
                                  "--size-subgraph", "10", "--size-frontier", "100"]),
    # the benchmarks' measuring children printed a DataError traceback, the command exited 1
    "bench epoch child": Case(["bench", "epoch", "--omp-wait", "active", "--scale", "40",
                               "--edge-factor", "4", "--threads", "1", "--epochs", "1"]),
    "bench scale generator": Case(["bench", "scale", "--scales", "30", "--edge-factor",
                                   "100000", "--iterations", "1"]),
    # a run.json or summary.json value of the wrong type was a TypeError/ValueError traceback
    "run.json data": Case(["predict", "r", "--out", "p.csv"], _run_set("run.json", "data", [1])),
    "run.json seed": Case(["embed", "r", "--out", "e.npy"], _run_set("run.json", "seed", "abc")),
    "run.json split": Case(["train", "--resume", "r", "--epochs", "3", "--no-progress"],
                           _run_set("run.json", "split", [1]), ["r"]),
    "run.json threads": Case(["train", "--resume", "r", "--epochs", "3", "--no-progress"],
                             _run_set("run.json", "threads", None), ["r"]),
    "run.json seed huge": Case(["train", "--resume", "r", "--epochs", "3", "--no-progress"],
                               _run_set("run.json", "seed", 10**20), ["r"]),
    "summary.json test": Case(["predict", "r", "--out", "p.csv", "--split", "test"],
                              _run_set("summary.json", "test", "abc"), ["p.csv"]),
    # a checkpoint field of the wrong type: int(), .get() or a missing key failed later
    "best.pt epoch": Case(["predict", "r", "--out", "p.csv"], _run_set("best.pt", "epoch", "abc"),
                          ["p.csv"]),
    "best.pt identity": Case(["embed", "r", "--out", "e.npy"],
                             _run_set("best.pt", "identity", "abc"), ["e.npy"]),
    "last.pt best": Case(["train", "--resume", "r", "--epochs", "3", "--no-progress"],
                         _run_set("last.pt", "best", {"a": 1}), ["r"]),
    "last.pt mode": Case(["train", "--resume", "r", "--epochs", "3", "--no-progress"],
                         _run_set("last.pt", "mode", {"a": 1}), ["r"]),
    "last.pt totals": Case(["train", "--resume", "r", "--epochs", "3", "--no-progress"],
                           _run_set("last.pt", "totals", {"a": 1}), ["r"]),
    "last.pt next_epoch": Case(["train", "--resume", "r", "--epochs", "3", "--no-progress"],
                               _run_set("last.pt", "next_epoch", "abc"), ["r"]),
    # out of memory outside training's guard (a benchmark's sizes, past RLIMIT_AS here): a
    # RuntimeError traceback from torch's allocator (found with bench epoch --labels 1048576;
    # its measuring child: test_a_measuring_child_out_of_memory_is_one_line)
    "bench out of memory": Case(["bench", "spmm", "--n", "300000", "--f", "8192", "--repeat",
                                 "1", "--threads", "1", "--no-membw"]),
    # bench epoch took a shaDow-GNN config and failed on its mode (AttributeError 'loader')
    "bench epoch shadow config": Case(["bench", "epoch", "--scale", "6", "--edge-factor", "4",
                                       "--features", "8", "--labels", "4", "--config", "s.yml",
                                       "--epochs", "1", "--threads", "1"],
                                      [_fixture("s.yml", "shadow.yml")]),
    # a config value's whole repr in its error line (a nested mapping: 334 characters)
    "long config value": Case(["train", "--data", "gs", "--epochs", "1", "--no-progress",
                               "--set", "params.norm_aggr={" + ", ".join(
                                   f"k{i}: [{i}, {i}, {i}]" for i in range(30)) + "}"]),
    # a plan.json claiming 10**19 parts: dist-train looked for every rank folder (no answer)
    "plan.json parts": Case(["dist-train", "--nprocs", "2", "--plan", "p", "--data", "gs",
                             "--epochs", "1", "--no-progress", "--out", "o"],
                            [_fixture("p", "plan"), _fixture("p/plan.json", "plan/plan.json",
                                                             (0, ("set", "parts", 10**19)))],
                            ["o"]),
}
EXIT = {"bench epoch default data": 0}   # the cases that must succeed (0), not only be refused
# bench epoch without --data deleted its generated folder before reading adj_train.npz from it:
# "missing .npz file", exit 2
REGRESSIONS["bench epoch default data"] = Case([
    "bench", "epoch", "--scale", "6", "--edge-factor", "4", "--features", "8", "--labels", "4",
    "--threads", "1", "--epochs", "1"])


@pytest.mark.parametrize("name", list(REGRESSIONS))
def test_found_by_the_fuzz(name, fuzz):
    case = REGRESSIONS[name]
    check(Case(case.argv, [GS, *case.files], ["cache", *case.outputs]), fuzz, EXIT.get(name))


@pytest.mark.parametrize("error", [MemoryError(), RuntimeError(
    "[enforce fail at alloc_cpu.cpp:127] DefaultCPUAllocator: can't allocate memory: you tried "
    "to allocate 2147483648 bytes. Error code 12 (Cannot allocate memory)")])
def test_a_measuring_child_out_of_memory_is_one_line(error, capsys):
    """A benchmark's measuring child (scalegnn.bench.child) that runs out of memory prints one
    error line and exits 2, which its parent raises again as that line."""
    def work():
        raise error
    assert child_main(work) == 2
    line = capsys.readouterr().err.strip()
    assert line.startswith("scalegnn: error: memory: out of memory") and "\n" not in line
