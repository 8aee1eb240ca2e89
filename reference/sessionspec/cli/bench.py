"""`sessionspec bench`: replay a workload of append requests in process and report events per second.

A workload is JSON Lines of append requests in the conformance protocol's shape (`{"op":
"append", "type", "data", ...}`) and `{"op": "derive"}` where an agent loop builds a provider
request: `--turns N` generates one (`sessionspec.testing.workload`, deterministic), `--workload
FILE` reads one. The workload is built and parsed before the clock starts: what is timed is the
session (appends and derives), which is what the upstream figure measures too. Not a test:
timings never decide whether anything passes (benchmarks/ holds the measured comparisons).
"""

from __future__ import annotations

import argparse
import gc
import itertools
import json
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from sessionspec import storage
from sessionspec.cli import COMMANDS
from sessionspec.cli.words import HelpFormatter, plural
from sessionspec.errors import SpecViolation
from sessionspec.jsonvalue import Json
from sessionspec.testing import implementations as impls
from sessionspec.testing.workload import Shape, workload

CLOCK_START = 1_700_000_000_000
EPILOG = """examples:
  sessionspec bench --turns 200
  sessionspec bench --turns 2000 --impl model --json
  sessionspec bench --turns 2000 --save /tmp/bench.jsonl     # a large log for `check` and `show`"""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("bench", help=COMMANDS["bench"],
                                   description=__doc__, epilog=EPILOG, formatter_class=HelpFormatter)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--workload", type=Path, metavar="WORKLOAD.jsonl", help="JSON Lines of append requests and derives")
    source.add_argument("--turns", type=_positive, metavar="N", help="generate an N-turn agent workload (about 40 events a turn)")
    parser.add_argument("--impl", default="live", metavar="NAME", help="implementation to run: live or model (default: live)")
    parser.add_argument("--json", action="store_true", help="print the result as one JSON object")
    parser.add_argument("--no-gc", action="store_true",
                        help="disable the cyclic garbage collector while timing (to see its share; a store runs with it)")
    parser.add_argument("--save", type=Path, metavar="LOG.jsonl", help="write the resulting log with the JSONL backend")
    parser.set_defaults(handler=run)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of turns: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError("--turns must be at least 1")
    return value


def generate(turns: int) -> list[str]:
    """The lines of an N-turn workload (`sessionspec.testing.workload`)."""
    return [json.dumps(op, separators=(",", ":")) for op in workload(Shape(turns=turns))]


def parse(lines: Iterable[str]) -> list[dict[str, Json] | None]:
    """Workload operations: an append request, or None for a derive."""
    ops: list[dict[str, Json] | None] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        op = json.loads(line)
        if not isinstance(op, dict) or op.get("op") not in ("append", "derive"):
            raise ValueError(f"workload line {number}: expected an append or derive operation")
        ops.append(None if op["op"] == "derive" else op)
    return ops


def replay(impl: str, ops: list[dict[str, Json] | None], *, collect: bool = True) -> tuple[Any, int, int, float, float]:
    """Run the operations against a fresh session; returns (session, events, derives, seconds, cpu_seconds)."""
    ticks = itertools.count(CLOCK_START)
    session = impls.factory(impl)("bench", clock=ticks.__next__)
    append, derive = session.append_request, session.derive_messages
    derives = 0
    # The collector stays on while timing (unless --no-gc), as in a real store; the parsed workload (the input, as
    # large as the log) is moved out of its reach first, so full collections walk only the session.
    gc.collect()
    gc.freeze()
    was_enabled = gc.isenabled()
    if not collect:
        gc.disable()
    start, cpu_start = time.perf_counter(), time.process_time()
    for op in ops:
        if op is None:
            derive()
            derives += 1
        else:
            append(op)
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu_start
    if was_enabled:
        gc.enable()
    gc.unfreeze()
    return session, session.seq, derives, seconds, cpu_seconds


def save(session: Any, path: Path) -> str:
    """Write the log with the JSONL backend (refusing to overwrite); returns how it was written."""
    storage.save(path, session.header, session.events, format="jsonl")
    return "jsonl"


def run(args: argparse.Namespace) -> int:
    try:
        if args.turns is not None:
            ops: list[dict[str, Json] | None] = [None if op["op"] == "derive" else op for op in workload(Shape(turns=args.turns))]
        else:
            ops = parse(args.workload.read_text(encoding="utf-8").splitlines())
        impls.factory(args.impl)
    except (OSError, ValueError, KeyError, UnicodeDecodeError) as error:
        print(f"sessionspec bench: {error}", file=sys.stderr)
        return 2
    try:
        session, events, derives, seconds, cpu_seconds = replay(args.impl, ops, collect=not args.no_gc)
    except SpecViolation as violation:
        print(f"sessionspec bench: the workload was rejected: {violation}", file=sys.stderr)
        return 1
    result: dict[str, Json] = {
        "impl": args.impl,
        "events": events,
        "derives": derives,
        "seconds": round(seconds, 6),
        "events_per_s": round(events / seconds) if seconds > 0 else None,
        "cpu_seconds": round(cpu_seconds, 6),
        "gc": not args.no_gc,
    }
    if args.save is not None:
        try:
            save(session, args.save)
        except (OSError, SpecViolation) as error:
            print(f"sessionspec bench: cannot save {args.save}: {error}", file=sys.stderr)
            return 2
        result["saved"] = str(args.save)
    if args.json:
        print(json.dumps(result, separators=(",", ":")))
    else:
        print(f"{args.impl}: {plural(events, 'event')}, {plural(derives, 'derive')} in {seconds:.3f} s "
              f"({cpu_seconds:.3f} s CPU): {result['events_per_s']} events/s")
    return 0
