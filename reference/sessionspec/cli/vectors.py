"""`sessionspec vectors generate|check`: the conformance vectors under spec/vectors/, from the reference model."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from sessionspec.conformance import vectors


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("vectors", help="generate or check the conformance vectors (spec/vectors/)")
    parser.add_argument("action", choices=["generate", "check"])
    parser.add_argument("--dir", type=Path, help="vector directory (default: spec/vectors of this checkout)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    directory = args.dir or vectors.DEFAULT_DIR
    if args.action == "generate":
        paths = vectors.write(directory)
        print(f"wrote {len(paths)} vectors to {directory}")
        problems = vectors.coverage_problems(vectors.load(directory))
    else:
        problems = vectors.check(directory)
    for problem in problems:
        print(f"vectors: {problem}", file=sys.stderr)
    if args.action == "check" and not problems:
        print(f"vectors: {directory} is current and covers every rule the protocol can reach")
    return 1 if problems else 0
