#!/usr/bin/env python3
"""`sessionspec check LOG` (the default: surveyors by the free CPUs) beside `check --jobs 1` and `check --jobs 2`, by the wall clock.

The bar (issue 36 item 3): the default never slower than `--jobs 1` under a load of 2 from other
work, and at least 1.3x faster than it on two idle cores, on the 20,000-turn log. Every figure is
a whole process as a user starts it (`python -m sessionspec.cli check ...`), its wall clock and its
CPU time with its surveyors' (`os.wait4`), in interleaved rounds (each round runs every case once,
in turn, each round starting at the next case), so each ratio compares runs made under the same load; the median of the rounds is
printed, with the spread of the ratios. `--busy N` runs N busy loops (`while True: pass`) for the
whole measurement: a load of N from other work, on top of whatever the machine runs. With
`--before REV`, that revision's default `check` runs beside this one's (its `reference/`, through
`PYTHONPATH`).

  python benchmarks/parallel_check.py --log LOG.jsonl [--rounds 5] [--busy 2] [--before REV]
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from repair_speed import CLI, Case, arguments, bench_log, sides

BASE = "check --jobs 1"


def cases(before: bool) -> list[Case]:
    table = [Case(BASE, ["check", "--jobs", "1"]), Case("check (default)", ["check"]),
             Case("check --jobs 2", ["check", "--jobs", "2"])]
    if before:
        table.append(Case("check (default, before)", ["check"], "before"))
    return table


def run(argv: list[str], pythonpath: str | None) -> tuple[float, float]:
    """(wall seconds, CPU seconds with the surveyors') of one whole process."""
    env = dict(os.environ, SESSIONSPEC_NO_PROGRESS="1")
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath
    start = time.perf_counter()
    process = subprocess.Popen([sys.executable, *CLI, *argv], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) not in (0, 1):
        raise SystemExit(f"{' '.join(argv)}: exit status {status}")
    return wall, usage.ru_utime + usage.ru_stime


def main() -> None:
    args = arguments(__doc__ or "", "the default check", busy=True)
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.busy)]
    try:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            log = args.log or bench_log(folder, args.turns)
            paths = sides(args.before, folder)
            table = cases(args.before is not None)
            got: dict[str, list[tuple[float, float]]] = {case.name: [] for case in table}
            loads = []
            for number in range(args.rounds):
                loads.append(os.getloadavg()[0])
                # Each round starts at another case: with busy loops, the scheduler's share of a CPU drifts within a
                # round, and a fixed order would give the same case the same drift in every round.
                for case in table[number % len(table):] + table[:number % len(table)]:
                    got[case.name].append(run([*case.argv, str(log)], paths[case.side]))
            report(log, table, got, args.busy, loads)
    finally:
        for process in busy:
            process.kill()
            process.wait()


def report(log: Path, table: list[Case], got: dict[str, list[tuple[float, float]]], busy: int, loads: list[float]) -> None:
    print(f"{log.name}, {log.stat().st_size / 1e6:.1f} MB; {len(got[BASE])} interleaved rounds, whole processes; "
          f"{busy} busy loops; load average (1 min) at the rounds {', '.join(f'{x:.1f}' for x in loads)}")
    print(f"{'command':<26} {'wall s':>7} {'x jobs 1':>9} {'(min-max)':>12} {'CPU s':>7}")
    for case in table:
        ratios = sorted(b[0] / c[0] for c, b in zip(got[case.name], got[BASE], strict=True))
        print(f"{case.name:<26} {statistics.median(w for w, _ in got[case.name]):>7.2f} {statistics.median(ratios):>9.2f} "
              f"{f'{ratios[0]:.2f}-{ratios[-1]:.2f}':>12} {statistics.median(c for _, c in got[case.name]):>7.2f}")
    print("\n(x jobs 1: how many times faster than `check --jobs 1` in the same round, by the wall clock)")


if __name__ == "__main__":
    main()
