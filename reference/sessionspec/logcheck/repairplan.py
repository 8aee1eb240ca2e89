"""The plan of `sessionspec repair`, streamed: the log read as `check` reads it, the closers from its tail turn.

A repair plan is what a load finds (spec/07-persistence.md): whether the log loads at all, its
torn tail, and the closers of an open tail turn (spec/08-repair.md). The load gate finds it by
building an Event of every record and seeding a session with them all, closers included: time
and memory in proportion to the log. The checker (`logcheck.checker`) judges the same rules on
the records as they stream by, the reference's own checks wherever its declared fast forms
cannot vouch, keeping only the surface; the closers need only the tail turn and the calls
answered anywhere (`repair.open_turn_closers`), which `TailTurn` keeps as the records go by; and
the closers are then fed to the checker after the log, as seeding would validate them. For a log
the checker finds sound, that is the plan, at the cost of `check` (benchmarks/repair_speed.py).

Fast accept, exact reject: the first finding ends the stream, and so does anything the stream
cannot vouch for (a legacy upgrade, which the load applies before it validates; a JSONL torn tail
from a defect where a block the tail turn was fed whole held an object at or after its line); `plan_repair` then returns None
and the caller loads the log through the gate, whose refusal (rule, message, line) or plan is
the verdict. A refusal of the reader itself (corruption, an oversized record, a failed read)
comes before anything the gate could say, so it is raised as the load raises it.
"""

from __future__ import annotations

import gc
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from sessionspec.catalog import ASSISTANT_MESSAGE, DEFAULT_CATALOG, TOOL_RESULT, Catalog
from sessionspec.envelope import Event, parse_event
from sessionspec.jsonvalue import FrozenDict
from sessionspec.logcheck.blocks import surveyed_blocks
from sessionspec.logcheck.checker import Checker
from sessionspec.repair import open_turn_closers, result_call_id
from sessionspec.storage import open_reader
from sessionspec.storage.chunkrows import ROW_TAGS, decode
from sessionspec.storage.gate import TORN_FRAGMENT, LoadResult, TornTail
from sessionspec.storage.jsonlread import Stopped, Surveyed

Tick = Callable[[int, int], object]
"""`tick(done, total)`: how far the reader is (bytes, or rows), for a progress bar."""
EVERY: Final = 4096
"""Records between two ticks."""


@dataclass(frozen=True)
class RepairPlan:
    """What a repair of a stored log would do: a load's findings, without the loaded events (`events` is their count)."""

    path: str
    format: str
    header: FrozenDict
    events: int
    closers: tuple[Event, ...]
    torn: TornTail | None
    recovered: int = 0
    revision: tuple[int, ...] = ()

    @property
    def needs_repair(self) -> bool:
        return self.torn is not None or len(self.closers) > 0

    @classmethod
    def of(cls, result: LoadResult) -> RepairPlan:
        """The plan of a load made through the gate."""
        return cls(result.path, result.format, result.header, len(result.events), tuple(result.closers), result.torn,
                   result.recovered, result.revision)


# --- the tail turn --------------------------------------------------------------------------------

_READ: Final = frozenset({"turn/start", "turn/end", "step/start", "step/end", ASSISTANT_MESSAGE, "tool/call", TOOL_RESULT})
"""The types `repair.open_turn_closers` reads; it passes over every other."""


class TailTurn:
    """What the closers of a log need, kept as its stored records go by: a faster form of `repair.closers`.

    The records of the open tail turn the walk reads (its turn/start, and those since its last
    step/end, at which the walk forgets the step and its calls; nothing once a turn/end closes
    it), the call of every tool/result (SESSION-CRASH-REPAIR.6), and the last record (the closers
    continue after it). Records are the committed ones, in log order, each a plain event
    or (read in blocks) a packed row, which stands for assistant/chunk events the walk passes over.
    `closers` holds it to the log the checker read; tests/test_logcheck_repairplan.py to `repair.closers`.
    """

    def __init__(self) -> None:
        self.turn: list[Any] | None = None
        self.answered: set[str | None] = set()
        self.last: Any = None

    def feed(self, record: Any) -> None:
        self.last = record
        kind = record.get("type") if type(record) is dict else None
        if type(kind) is str and kind in _READ:
            self._read(kind, record)

    def feed_block(self, records: Sequence[Any]) -> int:
        """A block's records at once (the JSONL reader's parsed blocks); returns the index of its last object, or -1.

        A value that is no object is no event (a committed record always is one): it is passed over, so a block of
        junk after a defect leaves the tail turn as the committed records left it.
        """
        read, last = self._read, -1
        for index, record in enumerate(records):
            if type(record) is dict:
                last = index
                kind = record.get("type")
                if type(kind) is str and kind in _READ:
                    read(kind, record)
        if last >= 0:
            self.last = records[last]
        return last

    def _read(self, kind: str, record: dict[str, Any]) -> None:
        turn = self.turn
        if kind == "turn/start":
            self.turn = [record]
        elif kind == "turn/end":
            self.turn = None
        elif kind == "step/end":
            if turn is not None:
                del turn[1:]  # the walk forgets the step and its calls; only the turn/start still counts
        else:
            if kind == TOOL_RESULT:
                self.answered.add(result_call_id(record.get("data")))
            if turn is not None:
                turn.append(record)

    def closers(self, count: int) -> list[Event] | None:
        """The closers of a log of `count` events whose records were fed, or None where the records fed were not those.

        Every record fed has passed the checker, so each reads as an event (`parse_event`).
        """
        if self.last is None:
            return [] if count == 0 else None
        last = self.last
        if type(last) is dict and last.get("type") in ROW_TAGS:
            last = decode(last)[-1]  # a packed row ends at its last member
        if type(last) is not dict or last.get("seq") != count - 1:
            return None
        if self.turn is None:
            return []
        events = [parse_event(record, record["seq"]) for record in self.turn]
        return open_turn_closers(events, self.answered, last_seq=last["seq"], last_time=last["time"])


# --- the stream ------------------------------------------------------------------------------------


class _Runs:
    """The checker as the JSONL reader's run taker (in this process: the tail turn sees each parsed block whole).

    A block that is not parsed whole (not canonical, or longer than the block parse takes) has
    its records come out of the reader one by one; `alone` keeps the lines of such blocks, whose
    records the tail turn is fed as they come out.
    """

    def __init__(self, checker: Checker, tail: TailTurn, tick: Tick | None) -> None:
        self.checker, self.tail, self.tick = checker, tail, tick
        self.progress: Callable[[], tuple[int, int]] = lambda: (0, 0)
        """The reader's, once it is open."""
        self.lines = 1
        self.alone: deque[tuple[int, int]] = deque()
        self.seen_through = 1
        """The line of the last object the tail turn was fed in a whole block (the header's line, before any)."""

    def surveyed(self, chunks: Iterator[bytes | Stopped]) -> Iterator[tuple[bytes | Stopped, Surveyed]]:
        for chunk, surveyed in surveyed_blocks(chunks, self.checker.survey, ()):
            if isinstance(chunk, bytes):
                if surveyed is not None and surveyed[2] is not None:
                    last = self.tail.feed_block(surveyed[2])
                    count = surveyed[0]
                    if last >= 0:
                        self.seen_through = self.lines + 1 + last
                else:
                    count = chunk.count(b"\n") + 1
                    self.alone.append((self.lines + 1, self.lines + count))
                self.lines += count
            yield chunk, surveyed

    def fold(self, ops: Sequence[Any], k: int, first: int, nxt: int) -> int:
        if self.tick is not None:
            self.tick(*self.progress())
        return self.checker.fold(ops, k, first, nxt)

    def alone_at(self, line: int | None) -> bool:
        """Whether the record at `line` comes from a block the tail turn did not see whole."""
        alone = self.alone
        while alone and line is not None and alone[0][1] < line:
            alone.popleft()
        return bool(alone) and line is not None and alone[0][0] <= line


def plan_repair(path: Path | str, session_id: str | None = None, *, catalog: Catalog = DEFAULT_CATALOG,
                tick: Tick | None = None) -> RepairPlan | None:
    """The repair plan of the log at `path`, streamed; None where only the load gate may say (see the module docstring).

    Raises what opening and reading the log raises (Unreadable, or the reader's SpecViolation), as a load does.
    """
    name = str(path)
    checker = Checker(name, catalog=catalog)
    tail = TailTurn()
    runs = _Runs(checker, tail, tick)
    reader = open_reader(Path(path), session_id, runs=runs)
    runs.progress = getattr(reader, "progress", runs.progress)
    jsonl = reader.format == "jsonl"
    checker.header(1 if jsonl else None, dict(reader.header), reader.header["id"])
    if not _streamed(reader.records(), checker, tail, runs if jsonl else None, tick and (lambda: tick(*runs.progress()))):
        return None
    torn = reader.torn
    if jsonl and torn is not None and torn.rule != TORN_FRAGMENT and (torn.line is None or runs.seen_through >= torn.line):
        return None  # the tail turn was fed an object at or after the defect's line: not the committed records alone
    count = checker.next_seq
    closers = tail.closers(count)
    if closers is None:
        return None
    for closer in closers:
        # Validated as seeding validates them: after the log, on its surface.
        checker.feed(None, closer.to_json())
    if checker.findings:
        return None
    recovered_from = getattr(reader, "recovered_from", None)  # a zstd reader's torn final frame
    recovered = count - recovered_from if recovered_from is not None else 0
    return RepairPlan(name, reader.format, reader.header, count, tuple(closers), torn, recovered, reader.revision)


def _streamed(records: Iterator[tuple[int | None, Any]], checker: Checker, tail: TailTurn, runs: _Runs | None,
              tick: Callable[[], object] | None) -> bool:
    """Every committed record through the checker and the tail turn; False at the first thing the stream cannot vouch for."""
    findings, upgrades, feed, track = checker.findings, checker.upgrades, checker.feed, tail.feed
    if findings:
        return False  # the header
    collecting = gc.isenabled()
    gc.disable()  # parsed JSON holds no cycles: the collector only costs time here (as in `check`)
    try:
        for count, (line, record) in enumerate(records, 1):
            if runs is None or runs.alone_at(line):
                track(record)
            feed(line, record)
            if findings or upgrades:
                return False
            if tick is not None and not count % EVERY:
                tick()
    finally:
        close = getattr(records, "close", None)
        if close is not None:
            close()  # the reader's file, at once where the stream stops early
        if collecting:
            gc.enable()
    return True


__all__ = ["RepairPlan", "TailTurn", "plan_repair"]
