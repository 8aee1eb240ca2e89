"""`sessionspec explore [--depth N]`: every sequence of operations up to N steps, against the reference model.

Bounded exhaustive exploration, TLC style: from the empty session, breadth first, every letter of
a small alphabet of operations (appends of each kind, vetoed appends, replaces over every range
with full and incomplete provenance, tool-result rewrites, reseed, repair) runs on the
implementation and on the reference model side by side. Depth counts accepted operations. Every
transition is checked (same outcome and rule, nothing changed by a rejection, the nested append
refused) and every distinct state (equal observable views are one state) against the invariants.

Prints one row per depth, then distinct states, transitions, distinct states per second and the
depth reached. The first violation is a shortest one: its steps, the protocol requests that
reproduce it, and a trace file in the one trace format (`sessionspec replay TRACE`). Exit 0 with
no violation, 1 with one, 2 on a bad argument or an implementation that cannot be loaded.
What is explored, why merging states is sound, and what each depth costs: proofs/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from sessionspec.cli import COMMANDS
from sessionspec.cli.progress import Progress
from sessionspec.cli.words import HelpFormatter, plural
from sessionspec.jsonvalue import Json
from sessionspec.testing.explore import ALPHABETS, default_alphabet, explore, to_itf, write_trace

EPILOG = """examples:
  sessionspec explore                                   # depth 5, full alphabet, against live (what CI runs)
  sessionspec explore --depth 7                         # full alphabet, 4 million states, about 1,100 CPU s
  sessionspec explore --impl planted:off-by-one-splice  # a planted bug: a violation, its trace, exit 1
  sessionspec replay /tmp/sessionspec-traces/explore-live-impl-matches-model-1a2b3c4d5e6f.json"""


def _usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _count(what: str, least: int) -> Any:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number of {what}: {text!r}") from None
        if value < least:
            raise argparse.ArgumentTypeError(f"must be at least {least}, not {value}")
        return value
    return parse


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "explore", help=COMMANDS["explore"],
        description=__doc__, epilog=EPILOG, formatter_class=HelpFormatter)
    parser.add_argument("--depth", type=_count("operations", 0), default=5, metavar="N",
                        help="accepted operations from the empty session (default 5; 0 checks the empty session)")
    parser.add_argument("--impl", default="live", help="implementation under test (default: live)")
    parser.add_argument("--alphabet", choices=ALPHABETS, default=None,
                        help="operations to explore: full, or compact (one log-only letter, tool results only for "
                             "pending calls, replace ranges of at most two nodes); default: full up to depth 7, "
                             "compact beyond (proofs/README.md)")
    parser.add_argument("--jobs", type=_count("processes", 1), default=None, metavar="N",
                        help="processes for the deep levels (default: one per usable CPU, at most 4)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--itf", metavar="FILE", help="write the first counterexample as an Informal Trace Format file")
    parser.add_argument("--traces", type=Path, metavar="DIR",
                        help="where the first counterexample's trace is written (default: $SESSIONSPEC_TRACE_DIR "
                             "or the temp dir's sessionspec-traces)")
    parser.set_defaults(handler=run)


class Rows:
    """Each depth's row (and each tenth of the subtrees) printed on stderr as it is done, and on a terminal a bar:
    depths done of the depth asked, then, from the depth where the search splits into subtrees, subtrees done."""

    def __init__(self, bar: Progress, depth: int) -> None:
        self.bar, self.depth = bar, depth

    def __call__(self, row: dict[str, Json]) -> None:
        if "subtrees" in row:
            done, total = _int(row["subtrees_done"]), _int(row["subtrees"])
            self.bar(done, total, f"subtrees to depth {self.depth}")
            print(f"  subtrees: {done} of {total} searched, {row['wall_seconds']} s", file=sys.stderr, flush=True)
            return
        depth = _int(row["depth"])
        self.bar(depth, self.depth, f"depth {depth + 1} of {self.depth}" if depth < self.depth else "done")
        print(f"  depth {depth}: {plural(_int(row['new_states']), 'new state')}, {row['distinct_states']} distinct, "
              f"{plural(_int(row['transitions']), 'transition')}, {row['seconds']} s CPU", file=sys.stderr, flush=True)


def _int(value: Json) -> int:
    return value if isinstance(value, int) else 0


def run(args: argparse.Namespace) -> int:
    alphabet = args.alphabet or default_alphabet(args.depth)
    jobs = args.jobs if args.jobs is not None else min(4, _usable_cpus())
    print(f"  {alphabet} alphabet, {plural(jobs, 'process')}", file=sys.stderr, flush=True)
    try:
        with Progress(f"explore {args.impl}") as bar:
            report = explore(args.depth, args.impl, alphabet=alphabet, jobs=jobs, progress=Rows(bar, args.depth))
    except (KeyError, ImportError) as error:
        print(f"sessionspec explore: implementation {args.impl!r} is not available: {error}", file=sys.stderr)
        return 2
    trace = None
    if report.violations:
        trace = write_trace(report.violations[0], args.impl, args.traces)
        if args.itf:
            with open(args.itf, "w", encoding="utf-8") as out:
                json.dump(to_itf(report.violations[0], args.impl), out, indent=1, ensure_ascii=False)
    if args.json:
        print(json.dumps({**report.to_json(), "trace": None if trace is None else str(trace)}, ensure_ascii=False))
        return 1 if report.violations else 0
    print(f"impl {report.impl}: depth {report.depth} of {args.depth} reached, "
          f"{plural(report.distinct_states, 'distinct state')}, {plural(report.transitions, 'transition')}, "
          f"{report.states_per_second:.0f} distinct states/s ({report.wall_seconds:.1f} s wall, {report.seconds:.1f} s CPU, "
          f"{plural(report.jobs, 'process')}), {report.alphabet} alphabet; the model ran "
          f"{plural(report.model_runs, 'request')} and answered {report.model_answers_reused} from remembered answers")
    for violation in report.violations:
        print(f"\nVIOLATION {violation.invariant} at depth {violation.depth}: {violation.message}")
        print("steps: " + " -> ".join(violation.labels))
        print("requests that reproduce it (conformance protocol, x-hooks):")
        for request in violation.requests:
            print("  " + json.dumps(request, ensure_ascii=False))
        if args.itf:
            print(f"ITF trace written to {args.itf}")
        print(f"trace written to {trace}; replay: sessionspec replay {trace}")
    return 1 if report.violations else 0
