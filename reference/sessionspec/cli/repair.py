"""`sessionspec repair PATH [--write]`: what a crashed log needs (torn-tail cut, closers), and committing it.

The plan is what a load through the load gate finds (spec/07-persistence.md). It is read as
`check` reads a log, streamed through its checker with the closers computed from the tail turn
(`logcheck.repairplan`), at the cost of `check`; where the checker finds anything (or cannot
vouch for the log), the log is loaded through the gate and validated by seeding a session with
it, and that load's refusal or plan is the answer. With --write, a log that needs repair is
loaded through the gate, the repair written, and the result loaded again before it is committed.
On a terminal, after a second, a bar shows each phase: checking, reading (bytes of the file,
where its reader tells them), validating (events seeded), writing, and verifying the result.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sessionspec import storage
from sessionspec.catalog import DEFAULT_CATALOG
from sessionspec.cli import COMMANDS
from sessionspec.cli.progress import Progress
from sessionspec.cli.render import printable, summary
from sessionspec.cli.words import plural
from sessionspec.errors import Kind, SpecViolation
from sessionspec.jsontext import dumps
from sessionspec.jsonvalue import Json
from sessionspec.logcheck.repairplan import RepairPlan, plan_repair
from sessionspec.storage.durable import STALE
from sessionspec.storage.formats import Unreadable, detect
from sessionspec.storage.gate import LoadResult
from sessionspec.testing import implementations
from sessionspec.testing.implementations import SessionFactory

EVERY = 512
"""Records or events between two reports to the bar: often enough to move it, seldom enough to cost nothing."""


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
                        help="the implementation that validates the log (default: live: the log streamed through "
                             "`check`'s checker, and seeded into the incremental session where the checker finds "
                             "anything; model: seeded into the reference, which refolds the log at every event: minutes "
                             "for 10,000 events)")
    parser.set_defaults(handler=run)


def plan_json(result: RepairPlan) -> dict[str, Json]:
    torn = result.torn
    return {
        "file": result.path, "format": result.format, "events": result.events,
        "needsRepair": result.needs_repair,
        "tornTail": None if torn is None else {"line": torn.line, "seq": torn.seq, "offset": torn.offset,
                                               "row": torn.row, "rule": torn.rule, "reason": torn.reason},
        "recovered": result.recovered,
        "closers": [closer.to_json() for closer in result.closers],
    }


def print_plan(result: RepairPlan, *, written: bool) -> None:
    verb = "cut" if written else "would cut"
    if not result.needs_repair:
        print(f"{result.path}: nothing to repair ({plural(result.events, 'event')}, no open turn, no torn tail)")
        return
    torn = result.torn
    if torn is not None:
        where = (f"line {torn.line} (byte {torn.offset})" if torn.line is not None
                 else f"seq {torn.seq} (the rows from seq {torn.row} on)")
        print(printable(f"{result.path}: {verb} the torn tail from {where}: {torn.reason}"))
    if result.recovered:
        print(f"  {'rewrote' if written else 'would rewrite'} {plural(result.recovered, 'event')} recovered from a torn final "
              "frame")
    verb = "appended" if written else "would append"
    print(f"{result.path}: {verb} {plural(len(result.closers), 'closer')} after seq {result.events - 1}:")
    for closer in result.closers:
        message: Any = closer.data.get("message") if isinstance(closer.data, dict) else None
        text = summary(message, 60) if message is not None else json.dumps(closer.to_json()["data"])
        print(printable(f"  {closer.seq:>6} {closer.type:<12} {text}"))
    if not written:
        print(f"run `sessionspec repair {result.path} --write` to commit")


class Watched:
    """A repair's phases on a progress bar, through the two things the load gate takes from its caller.

    The reader's records are counted as the gate reads them (the bar shows the reader's bytes, when it
    tells them), and the session factory hands the seeding a list that counts its events as they are
    validated (seeding reads its seed once, in order: spec/05-seed.md). Nothing else of the load changes.
    """

    def __init__(self, bar: Progress, factory: SessionFactory) -> None:
        self.bar = bar
        self.factory = factory
        self.seeding = "validating"

    def load(self, path: Path, session_id: str | None) -> LoadResult:
        reader: Any = _Counted(storage.open_reader(path, session_id), self)
        return storage.load_from(reader, str(path), catalog=DEFAULT_CATALOG, create=self.create)

    def records(self, reader: Any) -> Iterator[Any]:
        told = getattr(reader, "progress", lambda: (0, 0))
        for count, record in enumerate(reader.records(), 1):
            if count % EVERY == 0:
                done, total = told()
                self.bar(done, total, "reading")
            yield record

    def create(self, session_id: str, seed: Any = None, **options: Any) -> Any:
        if seed is not None:
            seed = _Ticking(seed, self.bar, self.seeding)
        return self.factory(session_id, seed=seed, **options)


class _Counted:
    """A reader whose records are counted on their way to the gate; everything else is the reader's."""

    def __init__(self, reader: Any, watched: Watched) -> None:
        self._reader, self._watched = reader, watched

    def records(self) -> Iterator[Any]:
        return self._watched.records(self._reader)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._reader, name)


class _Ticking(list[Any]):
    """A seed that tells the bar how many of its events the seeding has taken."""

    def __init__(self, events: Any, bar: Progress, phase: str) -> None:
        super().__init__(events)
        self._bar, self._phase = bar, phase

    def __iter__(self) -> Iterator[Any]:
        total = len(self)
        for index, event in enumerate(super().__iter__()):
            if index % EVERY == 0:
                self._bar(index, total, self._phase)
            yield event


def plan(path: Path, args: argparse.Namespace, bar: Progress) -> RepairPlan:
    """The plan, and with --write the repair committed: streamed where the checker vouches for the log, else loaded.

    A repair to write is planned by a load: its read-back (SESSION-STORAGE-WRITE.5) is compared with the loaded events.
    """
    if args.impl == "live":
        streamed = plan_repair(path, args.session, tick=lambda done, total: bar(done, total, "checking"))
        if streamed is not None and not (args.write and streamed.needs_repair):
            return streamed
    watched = Watched(bar, implementations.factory(args.impl))
    result = watched.load(path, args.session)
    if args.write and result.needs_repair:
        bar(0, 0, "writing")
        watched.seeding = "verifying what was written"
        # The plan shown is the plan written: repair refuses if the log changed in between (SESSION-STORAGE-WRITE.4).
        storage.repair(path, session_id=args.session, create=watched.create, plan=result)
    return RepairPlan.of(result)


def run(args: argparse.Namespace) -> int:
    path = Path(args.path)
    try:
        detect(path)
        with Progress(f"repair {path}") as bar:
            result = plan(path, args, bar)
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
