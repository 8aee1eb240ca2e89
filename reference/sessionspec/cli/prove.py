"""`sessionspec prove [--quick] [--json]`: check the CrossHair proof obligations and print a table.

Each obligation (proofs/obligations_*.py, packaged with the wheel) states one property as an
icontract postcondition: a fast path implies the reference's acceptance, fold is incremental, a
replace keeps the unshadowed nodes in order... CrossHair searches symbolically for a
counterexample within the bounds; "no counterexample within the bound" is a bounded search, not a
proof. Needs the `proofs` extra (`pip install 'sessionspec[proofs]'`). Exit 0: no counterexample;
1: a counterexample or an error; 2: nothing to run (no CrossHair, no obligation matched).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from sessionspec.cli import COMMANDS
from sessionspec.testing import crosshair as proving

EPILOG = """examples:
  sessionspec prove --quick                 # the CI bounds, about a minute on 2 cores
  sessionspec prove --list                  # what each obligation states
  sessionspec prove --only fastpaths --json"""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("prove", help=COMMANDS["prove"],
                                   description=__doc__, epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small bounds (the CI run, about a minute on 2 cores)")
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
    started = time.perf_counter()

    def progress(result: proving.Result) -> None:
        if not args.json:
            print(f"  {result.obligation.target}: {result.status} ({result.seconds:.1f} s)", file=sys.stderr, flush=True)

    results = proving.prove(obligations, bounds, directory, jobs=args.jobs, progress=progress)
    seconds = time.perf_counter() - started
    if args.json:
        print(json.dumps({"bounds": bounds.describe(), "seconds": round(seconds, 1),
                          "results": [r.to_json() for r in results]}))
    else:
        print(f"bounds: {bounds.describe()}; {len(results)} obligations in {seconds:.1f} s\n")
        print(proving.table(results))
    return 1 if proving.failed(results) else 0
