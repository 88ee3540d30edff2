"""Sweep ``scalegnn bench epoch`` over thread counts and OpenMP wait policies; print a table.

    python benchmarks/epoch_threads.py --data /tmp/kron17 --threads 1,2 --omp-wait passive,active

Each cell is one ``scalegnn bench epoch`` process (fresh OpenMP runtimes, so the wait policy
really applies); extra arguments after ``--`` go to every run (e.g. ``-- --fresh --epochs 2``).
Columns: median epoch wall seconds, process CPU seconds per epoch, trainer wait share on the
sampler pool, pre-sampling seconds, and the load average when the run ended (the dev box is
shared: compare cells taken at similar load).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", required=True, help="GraphSAINT folder (built on first use)")
    p.add_argument("--threads", default="1,2")
    p.add_argument("--omp-wait", default="passive,active")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("rest", nargs=argparse.REMAINDER, help="-- extra bench epoch arguments")
    args = p.parse_args(argv)
    extra = [a for a in args.rest if a != "--"]
    rows = []
    for policy in args.omp_wait.split(","):
        for threads in args.threads.split(","):
            cmd = [sys.executable, "-m", "scalegnn", "bench", "epoch", "--data", args.data,
                   "--epochs", str(args.epochs), "--threads", threads, "--omp-wait", policy,
                   *extra]
            out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True).stdout
            summary = [json.loads(x) for x in out.splitlines() if '"summary"' in x][-1]
            rows.append(summary)
            print(json.dumps({"omp_wait": policy, "threads": int(threads),
                              "epoch_s": summary["epoch_s_median"],
                              "cpu_s": summary["cpu_s_median"],
                              "wait_share": summary["wait_share_median"]}), file=sys.stderr)
    print(f"{'omp_wait':>8} {'threads':>7} {'epoch_s':>8} {'cpu_s':>7} {'wait%':>6} "
          f"{'presample_s':>11} {'load':>5}")
    for r in rows:
        print(f"{r['omp_wait_policy'].lower():>8} {r['threads']:>7} {r['epoch_s_median']:8.2f} "
              f"{r['cpu_s_median']:7.2f} {100 * r['wait_share_median']:6.2f} "
              f"{r['presample_s']:11.2f} {r['load_avg'][0]:5.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
