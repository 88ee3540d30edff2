"""The long CLI fuzz: ``python benchmarks/fuzz_cli.py --cases 10000``.

Runs the command lines of ``tests/test_cli_fuzz.py`` (every subcommand with generated flags,
configs and damaged files; ``tests/cli_fuzz_cases.py``) many more times, each under the same
address-space and time limits, and prints one JSON line: cases, how many ran forked (their
arguments parsed) and succeeded, tracebacks, bad exit codes (not 0 or 2), other problems (stderr
lines of no documented kind, temporaries left, files changed outside the outputs), cases that
ran out of memory, timeouts, wall and CPU time (this process and the cases' children) and the
load average. ``--failures F.jsonl`` writes every case with a problem (its command line, files,
stderr and problems), to replay or to turn into a regression test. The machine is shared: run
it under ``nice -n 10``. Interrupted (Ctrl-C or ``kill``), it still prints the JSON line of the
cases run so far, with ``"stopped_early": "interrupted"``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import signal
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from hypothesis import HealthCheck, Phase, given, seed, settings

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from cli_fuzz_cases import cases  # from tests/, put on the path above
from cli_fuzz_files import build_fixtures
from cli_fuzz_runner import Zygote, over_memory, problems, run_case


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=10000)
    ap.add_argument("--seed", type=int, default=0, help="hypothesis seed (default 0)")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per case")
    ap.add_argument("--mem-gib", type=float, default=4.0,
                    help="address space per case beyond the forked zygote's own")
    ap.add_argument("--failures", help="JSONL file of the cases with a problem")
    ap.add_argument("--progress", type=int, default=0, help="print a count every N cases")
    args = ap.parse_args(argv)
    t0, cpu0 = time.perf_counter(), time.process_time()
    tally, kinds = Counter(), Counter()
    failures = open(args.failures, "w") if args.failures else None  # noqa: SIM115
    root = Path(tempfile.mkdtemp(prefix="scalegnn-fuzz-"))
    zygote = Zygote(int(args.mem_gib * (1 << 30)), {"MPLCONFIGDIR": str(root / "mpl")}).start()

    def run_cli(cli_argv, cwd):
        o = zygote.run(cli_argv, cwd, 600)
        if o.rc != 0:
            raise SystemExit(f"fixture command failed: {cli_argv}: {o.stderr}")

    fixtures = build_fixtures(root / "fixtures", run_cli)

    @seed(args.seed)
    @settings(max_examples=args.cases, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(cases())
    def fuzz(case):
        o = run_case(case, root, fixtures, zygote, args.timeout)
        bad = problems(o, case.outputs)
        tally["cases"] += 1
        tally["forked"] += o.forked
        tally["succeeded"] += o.rc == 0
        tally["child_cpu_s"] += o.cpu_s
        tally["tracebacks"] += any(p == "traceback" for p in bad)
        tally["bad_exit_codes"] += o.rc not in (0, 2) and not o.timed_out
        tally["timeouts"] += o.timed_out
        tally["over_memory"] += over_memory(o)
        tally["other_problems"] += bool(bad) and not any(
            p == "traceback" or p.startswith("exit code") for p in bad) and not o.timed_out
        kinds.update(p.split(":")[0] for p in bad)
        if bad and failures:
            failures.write(json.dumps({"problems": bad, "argv": case.argv, "rc": o.rc,
                                       "case": case.describe(), "stderr": o.stderr[-3000:],
                                       "wall_s": round(o.wall_s, 2)}) + "\n")
            failures.flush()
        if args.progress and tally["cases"] % args.progress == 0:
            print(f"{tally['cases']} cases, {sum(kinds.values())} problems, "
                  f"{time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)

    stopped = None
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # kill: stop and report
    try:
        fuzz()
    except KeyboardInterrupt:  # Ctrl-C or kill: the cases run so far are still reported
        stopped = "interrupted"
    finally:
        zygote.close()
        shutil.rmtree(root, ignore_errors=True)
        if failures:
            failures.close()
    own = resource.getrusage(resource.RUSAGE_SELF)
    print(json.dumps({
        "cases": tally["cases"], "forked": tally["forked"], "succeeded": tally["succeeded"],
        "tracebacks": tally["tracebacks"], "bad_exit_codes": tally["bad_exit_codes"],
        "other_problems": tally["other_problems"], "over_memory": tally["over_memory"],
        "timeouts": tally["timeouts"], "problem_kinds": dict(kinds),
        "wall_s": round(time.perf_counter() - t0, 1),
        "cpu_s": round(time.process_time() - cpu0 + tally["child_cpu_s"], 1),
        "cpu_s_children": round(tally["child_cpu_s"], 1),
        "harness_cpu_s": round(own.ru_utime + own.ru_stime, 1),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "seed": args.seed, "timeout_s": args.timeout, "mem_gib": args.mem_gib,
        "stopped_early": stopped}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
