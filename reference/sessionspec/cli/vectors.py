"""`sessionspec vectors generate|check`: the conformance vectors, generated from the reference model.

A vector is a language-neutral test case (spec/10-conformance.md, "Vectors"): requests, the
reference's answer to each, and the final snapshot. They are never written by hand: `generate`
runs every case of `sessionspec.conformance.cases` through the executor over the model and writes
spec/vectors, and every storage case (`sessionspec.conformance.storagevectors`: a stored log and the
reference's load answer) to spec/vectors/storage; `check` regenerates them in memory and fails (exit 1) when a committed file is
stale, missing or extra, or when a rule the protocol can reach has no rejecting or no accepting
vector. Installed from a wheel, `check` checks the vectors the package carries.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from sessionspec.cli import COMMANDS
from sessionspec.cli.words import HelpFormatter, plural
from sessionspec.conformance import vectors
from sessionspec.conformance.storagevectors import vectorfiles as storage_vectors

EPILOG = """examples:
  sessionspec vectors check
  sessionspec vectors generate      # after changing a case or a rule"""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("vectors", help=COMMANDS["vectors"],
                                   description=__doc__, epilog=EPILOG, formatter_class=HelpFormatter)
    parser.add_argument("action", choices=["generate", "check"], help="write the vectors, or check the committed ones")
    parser.add_argument("--dir", type=Path, metavar="DIR",
                        help="vector directory (default: spec/vectors of the checkout, else the packaged copy)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    directory = args.dir or vectors.DEFAULT_DIR
    if args.action == "generate":
        paths = vectors.write(directory)
        stored = storage_vectors.write(directory / "storage")
        print(f"wrote {plural(len(paths), 'vector')} and {plural(len(stored), 'storage vector')} to {directory}")
        problems = vectors.coverage_problems(vectors.load(directory))
        problems += storage_vectors.coverage_problems(storage_vectors.load(directory / "storage"))
    else:
        problems = vectors.check(directory) + storage_vectors.check(directory / "storage")
    for problem in problems:
        print(f"vectors: {problem}", file=sys.stderr)
    if args.action == "check" and not problems:
        print(f"vectors: {directory} is current and covers every rule the protocol can reach")
    return 1 if problems else 0
