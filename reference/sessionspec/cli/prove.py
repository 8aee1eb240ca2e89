"""`sessionspec prove [--quick] [--json]`: check the CrossHair proof obligations and print a table.

Each obligation (proofs/obligations_*.py, packaged with the wheel) states one property as an
icontract postcondition: a fast path implies the reference's acceptance, fold is incremental, a
replace keeps the unshadowed nodes in order... CrossHair searches symbolically for a
counterexample within the bounds; "no counterexample within the bound" is a bounded search, not a
proof. Needs the `proofs` extra (`pip install 'sessionspec[proofs]'`).

The bounds are CPU time: each condition is searched for --per_condition_timeout CPU seconds, and
each obligation's process is capped at its conditions' time plus a few seconds (its budget). So
the CPU a run takes is fixed by its bounds, and a host busy with other work makes it slower, never
a timeout. --quick: 15 obligations of 16 conditions, 4 CPU seconds each, about 70 CPU seconds in
all (at most about 195): about 35 s of wall clock on 2 idle cores with the default 2 jobs, and as much
longer as other work takes the cores (170 s measured beside a load of 8). The full bounds take
about 30 times as long: a nightly job.

Exit 0: every obligation searched to its bound without a counterexample. 1: a counterexample, an
error, an obligation that overran its budget (a timeout: its search did not finish, so it proves
nothing) or one that cannot be imported. 2: nothing to run (no CrossHair, no obligation matched).
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from pathlib import Path
from typing import Any

from sessionspec.cli import COMMANDS
from sessionspec.cli.progress import Progress
from sessionspec.cli.words import HelpFormatter, plural
from sessionspec.testing import crosshair as proving

EPILOG = """examples:
  sessionspec prove --quick                 # the CI bounds: about 70 CPU seconds, 35 s on 2 idle cores
  sessionspec prove --list                  # what each obligation states
  sessionspec prove --only fastpaths --json"""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("prove", help=COMMANDS["prove"], description=__doc__, epilog=EPILOG,
                                   formatter_class=HelpFormatter)
    parser.add_argument("--quick", action="store_true",
                        help="small bounds, the CI run: 4 CPU s a condition, about 70 CPU s in all")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--dir", type=Path, default=None, metavar="DIR",
                        help="directory of obligations_*.py (default: the checkout's proofs/, else the packaged copy)")
    parser.add_argument("--jobs", type=_count, default=2, metavar="N", help="crosshair processes at a time (default 2)")
    parser.add_argument("--only", default=None, metavar="TEXT", help="run only obligations whose name contains TEXT")
    parser.add_argument("--list", action="store_true", help="list the obligations and what each states, run nothing")
    parser.set_defaults(handler=run)


def _count(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"not a positive number: {text!r}")
    return int(text)


class Tally:
    """What is running and what is done, told to the progress bar as each obligation starts and ends."""

    def __init__(self, bar: Progress, total: int, quiet: bool) -> None:
        self.bar, self.total, self.quiet = bar, total, quiet
        self.done = 0
        self.running: list[str] = []
        self.lock = threading.Lock()

    def starting(self, obligation: proving.Obligation) -> None:
        with self.lock:
            self.running.append(obligation.name)
            self._tell()

    def finished(self, result: proving.Result) -> None:
        with self.lock:
            self.done += 1
            if result.obligation.name in self.running:
                self.running.remove(result.obligation.name)
            self._tell()
            if not self.quiet:
                cpu = "" if result.cpu_seconds is None else f", {result.cpu_seconds:.1f} s CPU"
                print(f"  {result.obligation.target}: {result.status} ({result.seconds:.1f} s{cpu})", file=sys.stderr,
                      flush=True)

    def _tell(self) -> None:
        """The bar's phase: the obligation started first of those running, and how many more run beside it."""
        more = f" (+{len(self.running) - 1})" if len(self.running) > 1 else ""
        self.bar(self.done, self.total, f"{self.running[0]}{more}" if self.running else None)


def run(args: argparse.Namespace) -> int:
    directory = (args.dir or proving.default_directory()).resolve()
    if not directory.is_dir():
        print(f"sessionspec prove: no obligations directory {directory}", file=sys.stderr)
        return 2
    bounds = proving.QUICK if args.quick else proving.FULL
    obligations = [o for o in proving.discover(directory) if args.only is None or args.only in o.target]
    if not obligations:
        print(f"sessionspec prove: no obligation in {directory} matches {args.only!r}", file=sys.stderr)
        return 2
    if args.list:
        for obligation in obligations:
            print(f"{obligation.target}: {obligation.summary or obligation.unavailable}")
        return 0
    if not proving.available():
        print("sessionspec prove: CrossHair is not installed; install the proofs extra: pip install 'sessionspec[proofs]'",
              file=sys.stderr)
        return 2
    if not args.json:
        print(f"  {plural(len(obligations), 'obligation')}, {args.jobs} at a time, at most "
              f"{proving.budget(obligations, bounds):.0f} CPU seconds in all", file=sys.stderr, flush=True)
    started = time.perf_counter()
    with Progress("prove") as bar:
        tally = Tally(bar, len(obligations), args.json)
        results = proving.prove(obligations, bounds, directory, jobs=args.jobs, progress=tally.finished,
                                starting=tally.starting)
    seconds = time.perf_counter() - started
    cpu = sum(result.cpu_seconds or 0.0 for result in results)
    if args.json:
        print(json.dumps({"bounds": bounds.describe(), "seconds": round(seconds, 1), "cpuSeconds": round(cpu, 1),
                          "failed": proving.failed(results), "results": [r.to_json() for r in results]}))
    else:
        print(f"bounds: {bounds.describe()}; {plural(len(results), 'obligation')} in {seconds:.1f} s "
              f"({cpu:.1f} s CPU)\n")
        print(proving.table(results))
        failing = [r for r in results if r.status not in proving.PASSING]
        if failing:
            print(f"\n{plural(len(failing), 'obligation')} failed: " + ", ".join(
                f"{r.obligation.name} ({r.status})" for r in failing))
    return 1 if proving.failed(results) else 0
