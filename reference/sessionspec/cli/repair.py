"""`sessionspec repair PATH [--write]`: what a crashed log needs (torn-tail cut, closers), and committing it."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from sessionspec import storage
from sessionspec.cli import COMMANDS
from sessionspec.cli.render import printable, summary
from sessionspec.errors import Kind, SpecViolation
from sessionspec.jsontext import dumps
from sessionspec.jsonvalue import Json
from sessionspec.storage.durable import STALE
from sessionspec.storage.formats import Unreadable, detect
from sessionspec.storage.gate import LoadResult
from sessionspec.testing import implementations


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "repair", help=COMMANDS["repair"],
        description="Load a stored log through the load gate and show what repair would do: cut a torn tail, and "
                    "append the closers that end an interrupted turn. Nothing is written without --write, and with it "
                    "only a repair verified on its result is written. Exit 0 when the repair was shown (or written), or "
                    "there is nothing to repair; 1 when the log breaks a rule a repair cannot mend (`sessionspec check` "
                    "lists them); 2 when it cannot be read or the arguments are wrong.")
    parser.add_argument("path", metavar="PATH", help="a session log: .jsonl, .jsonl.zstd or SQLite")
    parser.add_argument("--write", action="store_true", help="commit the repair durably")
    parser.add_argument("--format", choices=("text", "json"), default="text", help="output format (default: text)")
    parser.add_argument("--session", metavar="ID", help="the session to repair, in a SQLite database of several")
    parser.add_argument("--impl", choices=("live", "model"), default="live",
                        help="the implementation whose seeding validates the log (default: live, the incremental one; "
                             "model, the reference, refolds the log at every event: minutes for 10,000 events)")
    parser.set_defaults(handler=run)


def plan_json(result: LoadResult) -> dict[str, Json]:
    torn = result.torn
    return {
        "file": result.path, "format": result.format, "events": len(result.events),
        "needsRepair": result.needs_repair,
        "tornTail": None if torn is None else {"line": torn.line, "seq": torn.seq, "offset": torn.offset,
                                               "row": torn.row, "rule": torn.rule, "reason": torn.reason},
        "recovered": result.recovered,
        "closers": [closer.to_json() for closer in result.closers],
    }


def print_plan(result: LoadResult, *, written: bool) -> None:
    verb = "cut" if written else "would cut"
    if not result.needs_repair:
        print(f"{result.path}: nothing to repair ({len(result.events)} events, no open turn, no torn tail)")
        return
    torn = result.torn
    if torn is not None:
        where = (f"line {torn.line} (byte {torn.offset})" if torn.line is not None
                 else f"seq {torn.seq} (the rows from seq {torn.row} on)")
        print(printable(f"{result.path}: {verb} the torn tail from {where}: {torn.reason}"))
    if result.recovered:
        print(f"  {'rewrote' if written else 'would rewrite'} {result.recovered} events recovered from a torn final frame")
    verb = "appended" if written else "would append"
    closers = len(result.closers)
    print(f"{result.path}: {verb} {closers} closer{'s' if closers != 1 else ''} after seq {len(result.events) - 1}:")
    for closer in result.closers:
        message: Any = closer.data.get("message") if isinstance(closer.data, dict) else None
        text = summary(message, 60) if message is not None else json.dumps(closer.to_json()["data"])
        print(printable(f"  {closer.seq:>6} {closer.type:<12} {text}"))
    if not written:
        print(f"run `sessionspec repair {result.path} --write` to commit")


def run(args: argparse.Namespace) -> int:
    path = Path(args.path)
    try:
        detect(path)
        create = implementations.factory(args.impl)
        result = storage.load(path, session_id=args.session, create=create)
        if args.write and result.needs_repair:
            # The plan shown is the plan written: repair refuses if the log changed in between (SESSION-STORAGE-WRITE.4).
            storage.repair(path, session_id=args.session, create=create, plan=result)
    except Unreadable as error:
        print(printable(f"{path}: unreadable: {error}"), file=sys.stderr)
        return 2
    except SpecViolation as violation:
        if violation.kind is Kind.VERSION:
            # A newer or older format, a foreign database: not a log with findings, a log this build cannot read.
            print(printable(f"{path}: unreadable: {violation}"), file=sys.stderr)
            return 2
        advice = "run it again" if violation.rule == STALE else f"run `sessionspec check {path}` for every finding"
        print(printable(f"{path}: cannot repair: {violation}; {advice}"), file=sys.stderr)
        return 1
    if args.format == "json":
        sys.stdout.write(dumps({**plan_json(result), "written": bool(args.write and result.needs_repair)}) + "\n")
    else:
        print_plan(result, written=args.write)
    return 0
