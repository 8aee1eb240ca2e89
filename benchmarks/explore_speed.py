"""The explorer's speed: distinct states per second, and the depth it completes within a fixed time.

Each depth is one `sessionspec explore --depth D --json` run in a subprocess (so a run that
overstays its budget can be stopped), with the machine's load average read before and after it:
the project machine is shared, and a figure without its load means little.

    python benchmarks/explore_speed.py --depths 5 6 7 --jobs 2          # a table of full runs
    python benchmarks/explore_speed.py --budget 600 --jobs 2            # the deepest depth done in 600 s

`--budget` is iterative deepening: depth 1, 2, ... each from scratch, until the next one does not
finish within what is left of the budget (it is stopped then). The depths before it are what a
run of that length completes; the repeated shallow depths cost about a tenth of the deepest.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from typing import Any


def run_depth(depth: int, args: argparse.Namespace, timeout: float | None) -> dict[str, Any] | None:
    """One explorer run; its report with the load averages around it, or None if it did not finish in `timeout`."""
    command = [sys.executable, "-m", "sessionspec.cli", "explore", "--depth", str(depth), "--impl", args.impl,
               "--json", "--jobs", str(args.jobs)]
    if args.alphabet:
        command += ["--alphabet", args.alphabet]
    before = os.getloadavg()[0]
    started = time.perf_counter()
    try:
        # The explorer's progress rows (stderr) pass through: a long run shows how far it has got.
        done = subprocess.run(command, stdout=subprocess.PIPE, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return None
    report: dict[str, Any] = json.loads(done.stdout)
    report["elapsed"] = time.perf_counter() - started
    report["load"] = (before, os.getloadavg()[0])
    # The largest resident set of any process this script has waited for (the explorer or a worker): an upper bound.
    report["peak_mb"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return report


def row(report: dict[str, Any]) -> str:
    return (f"| {report['depth']} | {report['alphabet']} | {report['distinct_states']:,} | {report['transitions']:,} | "
            f"{report['jobs']} | {report['wall_seconds']:.1f} | {report['seconds']:.1f} | "
            f"{report['states_per_second']:,.0f} | {report['states_per_cpu_second']:,.0f} | "
            f"{report['load'][0]:.1f} / {report['load'][1]:.1f} | {report['peak_mb']:.0f} | {len(report['violations'])} |")


HEADER = ("| depth | alphabet | distinct states | transitions | processes | wall s | CPU s | states/s (wall) "
          "| states/CPU s | load before / after | peak MB | violations |\n|---:|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--depths", type=int, nargs="*", default=[5, 6])
    parser.add_argument("--budget", type=float, help="iterative deepening within this many seconds of wall time")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--impl", default="live")
    parser.add_argument("--alphabet", choices=("full", "compact"))
    args = parser.parse_args()
    print(HEADER)
    if args.budget is None:
        for depth in args.depths:
            report = run_depth(depth, args, None)
            assert report is not None
            print(row(report), flush=True)
        return 0
    deadline, depth, reached = time.perf_counter() + args.budget, 1, 0
    while True:
        report = run_depth(depth, args, deadline - time.perf_counter())
        if report is None:
            break
        print(row(report), flush=True)
        reached, depth = depth, depth + 1
    print(f"\ndepth {reached} completed within {args.budget:.0f} s (depth {depth} was stopped at the budget)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
