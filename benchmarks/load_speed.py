#!/usr/bin/env python3
"""What `sessionspec.load(LOG)` costs beside `sessionspec check --jobs 1 LOG` on the same log, as ratios in one run.

The bar (issue 24, then issue 36): `load` of the log (the Python API, its defaults, as a user
calls it) within about 3x, now 2x, of `check --jobs 1` in CPU time, and (issue 36) at most twice
the file's size in peak memory, on the 20,000-turn log. A JSONL log is vouched for as `check`
vouches for it and kept as its stored bytes, each event built when it is read
(`storage.storedlog`), so what the ratio says is what a load pays beyond the checker.

Every figure is a whole process (`python -c "from sessionspec import load; load(LOG)"`, and the
command as a user starts it), its CPU time and peak resident memory as the kernel accounts them
(`os.wait4`), in interleaved rounds; the median of the rounds is printed, with the spread of the
ratios. `python -c "import sessionspec.storage, sessionspec.live"` shows what start-up alone costs
of the load. With `--before REV`, the tree of that git revision (its `reference/`, through
`PYTHONPATH`) runs `load` beside this one. The helpers are `repair_speed.py`'s.

  python benchmarks/load_speed.py [--log LOG.jsonl] [--turns 2000] [--rounds 5] [--before REV]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

from repair_speed import CLI, Case, Cost, arguments, bench_log, rows, run, sides

LOAD = "import sys; from sessionspec import load; load(sys.argv[1])"
IMPORT = "import sessionspec.storage, sessionspec.live"
BASE = "check --jobs 1"


def cases(before: bool) -> list[Case]:
    table = [Case(BASE, [*CLI, "check", "--jobs", "1"]), Case("load", ["-c", LOAD]),
             Case("import (start-up of load)", ["-c", IMPORT])]
    if before:
        table += [Case("load (before)", ["-c", LOAD], "before")]
    return table


def main() -> None:
    args = arguments(__doc__ or "", "load")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        log = args.log or bench_log(folder, args.turns)
        paths = sides(args.before, folder)
        table = cases(args.before is not None)
        costs: dict[str, list[Cost]] = {case.name: [] for case in table}
        for _ in range(args.rounds):
            for case in table:
                costs[case.name].append(run([*case.argv, str(log)], paths[case.side]))
        report(log, table, costs, args)


def report(log: Path, table: list[Case], costs: dict[str, list[Cost]], args: argparse.Namespace) -> None:
    print(f"{args.rounds} interleaved rounds, whole processes, medians (ratios: to `{BASE}` of the same round, "
          f"median and spread)" + (f"; before = {args.before}" if args.before else ""))
    print(f"\n{log.name}, {log.stat().st_size / 1e6:.1f} MB")
    rows(table, costs, costs[BASE])
    ratio = statistics.median(sorted(c.cpu / b.cpu for c, b in zip(costs["load"], costs[BASE], strict=True)))
    size = log.stat().st_size / 2**20
    peak = statistics.median(c.peak for c in costs["load"]) / size
    print(f"\nbar: `load` within 2x of `{BASE}` in CPU time; median ratio {ratio:.2f}. Peak memory at most 2x the "
          f"file's size ({size:.0f} MiB): median {peak:.2f}x")


if __name__ == "__main__":
    main()
