"""`sessionspec explore --depth N`: bounded exhaustive exploration of an implementation against the model."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from sessionspec.jsonvalue import Json
from sessionspec.testing.explore import ALPHABETS, default_alphabet, explore, to_itf, write_trace


def _usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("explore", help="explore every state up to a depth, checking the invariants")
    parser.add_argument("--depth", type=int, default=5, help="number of operations from the empty session (default 5)")
    parser.add_argument("--impl", default="live", help="implementation under test (default: live)")
    parser.add_argument("--alphabet", choices=ALPHABETS, default=None,
                        help="operations to explore: full, or compact (one log-only letter, tool results only for "
                             "pending calls, replace ranges of at most two nodes); default: full up to depth 7, "
                             "compact beyond (proofs/README.md)")
    parser.add_argument("--jobs", type=int, default=None,
                        help="processes for the deep levels (default: one per usable CPU, at most 4)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--itf", metavar="FILE", help="write the first counterexample as an Informal Trace Format file")
    parser.add_argument("--trace", metavar="FILE",
                        help="write the first counterexample's requests as a trace file (sessionspec replay FILE)")
    parser.set_defaults(handler=run)


def _progress(row: dict[str, Json]) -> None:
    if "subtrees" in row:
        print(f"  subtrees: {row['subtrees_done']} of {row['subtrees']} searched, {row['wall_seconds']} s",
              file=sys.stderr, flush=True)
        return
    print(f"  depth {row['depth']}: {row['new_states']} new states, {row['distinct_states']} distinct, "
          f"{row['transitions']} transitions, {row['seconds']} s CPU", file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    alphabet = args.alphabet or default_alphabet(args.depth)
    jobs = args.jobs if args.jobs is not None else min(4, _usable_cpus())
    if not args.json:
        print(f"  {alphabet} alphabet, {jobs} process{'es' if jobs > 1 else ''}", file=sys.stderr, flush=True)
    try:
        report = explore(args.depth, args.impl, alphabet=alphabet, jobs=jobs, progress=None if args.json else _progress)
    except (KeyError, ImportError) as error:
        print(f"sessionspec explore: implementation {args.impl!r} is not available: {error}", file=sys.stderr)
        return 2
    if report.violations:
        if args.itf:
            with open(args.itf, "w", encoding="utf-8") as out:
                json.dump(to_itf(report.violations[0], args.impl), out, indent=1, ensure_ascii=False)
        if args.trace:
            write_trace(args.trace, report.violations[0], args.impl)
    if args.json:
        print(json.dumps(report.to_json(), ensure_ascii=False))
        return 1 if report.violations else 0
    print(f"impl {report.impl}: depth {report.depth}, {report.distinct_states} distinct states, "
          f"{report.transitions} transitions, {report.states_per_second:.0f} states/s "
          f"({report.wall_seconds:.1f} s wall, {report.seconds:.1f} s CPU, {report.jobs} "
          f"process{'es' if report.jobs > 1 else ''}), {report.alphabet} alphabet; the model ran "
          f"{report.model_runs} requests and answered {report.model_answers_reused} from remembered answers")
    for violation in report.violations:
        print(f"\nVIOLATION {violation.invariant} at depth {violation.depth}: {violation.message}")
        print("steps: " + " -> ".join(violation.labels))
        print("requests that reproduce it (conformance protocol, x-hooks):")
        for request in violation.requests:
            print("  " + json.dumps(request, ensure_ascii=False))
        if args.itf:
            print(f"ITF trace written to {args.itf}")
        if args.trace:
            print(f"trace written to {args.trace}; replay: sessionspec replay {args.trace}")
    return 1 if report.violations else 0
