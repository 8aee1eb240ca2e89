"""`sessionspec prove [--quick] [--json]`: check the CrossHair obligations in proofs/ and print a table."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from sessionspec.testing import crosshair as proving


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("prove", help="run CrossHair on the proof obligations in proofs/")
    parser.add_argument("--quick", action="store_true", help="small bounds (the CI run, about a minute on 2 cores)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--dir", type=Path, default=None, help="directory of obligations_*.py (default: proofs/)")
    parser.add_argument("--jobs", type=int, default=2, help="crosshair processes at a time (default 2)")
    parser.add_argument("--only", default=None, help="run only obligations whose name contains this text")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    directory = (args.dir or proving.default_directory()).resolve()
    if not directory.is_dir():
        print(f"sessionspec prove: no obligations directory {directory}", file=sys.stderr)
        return 2
    bounds = proving.QUICK if args.quick else proving.FULL
    obligations = [o for o in proving.discover(directory) if args.only is None or args.only in o.target]
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
