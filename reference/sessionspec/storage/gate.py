"""The load gate (spec/07-persistence.md): a stored log is loaded only when it reads correctly.

Every backend hands the gate a raw header and a stream of (line, raw event) records that its
scanner found committed; the gate applies the checks in the spec's order: header shape, format
version, envelope and seq contiguity, torn tail, legacy upgrades (each reported), the unknown
event gate against a chosen catalog, and finally the whole log through seed validation. A log
that fails is refused with the rule it breaks and where; a log that passes is returned as it is
stored (no end-seed marker: resuming adds it through seeding, never loading).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Container, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from sessionspec import live
from sessionspec.catalog import DEFAULT_CATALOG, Catalog
from sessionspec.envelope import Event
from sessionspec.errors import Kind, SpecViolation
from sessionspec.header import validate_header
from sessionspec.jsonvalue import FrozenDict, FrozenList, Json, is_nonneg_safe_int
from sessionspec.legacy import LegacyUpgrade, Upgrader
from sessionspec.live.fastrecord import stored_event
from sessionspec.live.fasttext import read_line
from sessionspec.preview import shown
from sessionspec.repair import closers as repair_closers
from sessionspec.rules import define
from sessionspec.storage.chunkrows import decode

HEADER_LINE = define("SESSION-STORAGE-HEADER.1", Kind.HEADER, "a log starts with exactly one newline-terminated header record")
HEADER_SHAPE = define("SESSION-STORAGE-HEADER.2", Kind.HEADER,
                      "the header record is an object: type \"session\", a numeric version, a string id")
HEADER_DEPTH = define("SESSION-STORAGE-HEADER.3", Kind.HEADER, "a JSONL header always carries delegationDepth (0 when absent)")
HEADER_RETIRED = define("SESSION-STORAGE-HEADER.4", Kind.HEADER, "the retired fields sandboxMode and approvalPolicy are refused")
HEADER_IDENTITY = define("SESSION-STORAGE-HEADER.5", Kind.HEADER, "the stored header names the session that was asked for")
NEWER = define("SESSION-FORMAT-VERSION.1", Kind.VERSION, "a log of a newer format is refused: upgrade the reader")
OLDER = define("SESSION-FORMAT-VERSION.2", Kind.VERSION, "a log of an older format is refused: there is no upgrade path")
SEQ = define("SESSION-STORAGE-SEQ.1", Kind.SEQ, "stored records continue the seq exactly, from 0")
RECORD_SIZE = define("SESSION-STORAGE-RECORD.1", Kind.JSON, "a stored record is at most 64 MiB of UTF-8")
TORN_FRAGMENT = define("SESSION-TORN-TAIL.1", Kind.INTERNAL, "a final record without its terminator is a torn tail")
TORN_CORRUPT = define("SESSION-TORN-TAIL.2", Kind.INTERNAL, "a defect followed by a committed turn/end is corruption, not a torn tail")
TORN_DEFECT = define("SESSION-TORN-TAIL.3", Kind.INTERNAL, "a defect with no later turn/end starts a torn tail")
UNKNOWN = define("SESSION-UNKNOWN-EVENT-GATE.1", Kind.UNKNOWN_EVENT,
                 "every stored type is in the chosen catalog or the event is ignorable")
NO_MARKER = define("SESSION-STORAGE-LOAD.1", Kind.INTERNAL, "load returns the stored log without adding an end-seed marker")
CLOSERS = define("SESSION-STORAGE-LOAD.2", Kind.INTERNAL,
                 "an open tail turn gets repair closers in memory; only an explicit repair writes them")

MAX_RECORD_BYTES = 64 << 20
SUPPORTED_VERSION = 0


SessionFactory = Callable[..., Any]
"""An implementation's `Session.create(session_id, seed=None, header=None, *, clock=...)`."""


@dataclass(frozen=True, slots=True)
class TornTail:
    """Where the committed log ends: the first dropped line (None for SQLite) and seq, the byte offset to keep, and why.

    `row` is SQLite's: the `seq` column of the first row the cut removes, the defective row itself.
    It is not always `seq`: a packed row that overlaps the next one makes the defective row repeat
    an earlier seq, and a cut at the expected seq would leave it in place.
    """

    line: int | None
    seq: int
    offset: int
    reason: str
    rule: str
    row: int | None = None


@dataclass(frozen=True)
class LoadResult:
    """A loaded log: exactly the stored events (upgraded), plus what a repair would add or cut."""

    path: str
    format: str
    header: FrozenDict
    events: Sequence[Event]
    """The stored events: a FrozenList, or (a JSONL log the gate's fast form read) a `StoredEvents` that builds each
    when it is read; either way an immutable sequence of the same Events, equal to the other."""
    closers: FrozenList
    torn: TornTail | None
    upgrades: tuple[LegacyUpgrade, ...]
    recovered: int = 0
    """Events recovered from a torn final zstd frame (present in `events`, rewritten by repair)."""
    revision: tuple[int, ...] = ()
    """The revision token of what was read; repair commits only if the log still has it (SESSION-STORAGE-WRITE.4)."""

    @property
    def needs_repair(self) -> bool:
        return self.torn is not None or len(self.closers) > 0

    def resume(self, *, create: SessionFactory | None = None, **options: Any) -> Any:
        """A session seeded with the log and its closers (seeding adds the end-seed marker): by default the store's
        (`live`); `create` is another implementation's `Session.create` (the reference model's, for the oracle)."""
        return (create or live.Session.create)(self.header["id"], seed=[*self.events, *self.closers], header=self.header,
                                               **options)


def located(violation: SpecViolation, path: str, *, line: int | None = None, seq: int | None = None) -> SpecViolation:
    """The violation with the file named in its message and the line or seq filled in."""
    message = violation.message if violation.message.startswith(f"{path}: ") else f"{path}: {violation.message}"
    return SpecViolation(violation.rule, violation.kind, message, seq=violation.seq if violation.seq is not None else seq,
                         index=violation.index, line=violation.line if violation.line is not None else line)


def refuse(rule: str, kind: Kind, path: str, message: str, *, line: int | None = None, seq: int | None = None) -> SpecViolation:
    return SpecViolation(rule, kind, f"{path}: {message}", line=line, seq=seq)


# --- the header ---------------------------------------------------------------------------------


def check_version(version: Json, session_id: Json, path: str, *, line: int | None = None) -> None:
    """SESSION-FORMAT-VERSION: refuse any other format, saying which way the reader must move."""
    if version == SUPPORTED_VERSION:
        return
    if version > SUPPORTED_VERSION:
        # .1 Newer: the reader is behind; reading on would misinterpret fields it does not know.
        raise refuse(NEWER, Kind.VERSION, path,
                     f"session {shown(str(session_id))} uses log format v{version}, but this reader reads only "
                     f"v{SUPPORTED_VERSION}: the log was written by a newer format, upgrade the reader to open it", line=line)
    # .2 Older: there is no migration chain, so refusing is the only honest answer.
    raise refuse(OLDER, Kind.VERSION, path,
                 f"session {shown(str(session_id))} uses log format v{version}, older than the supported "
                 f"v{SUPPORTED_VERSION}, and this build ships no upgrade path for it", line=line)


def header_from_record(raw: Json, path: str, *, jsonl: bool, session_id: str | None = None) -> FrozenDict:
    """The header gate: shape, then version, then the session header rules (SESSION-FORMAT-HEADER)."""
    line = 1 if jsonl else None
    # SESSION-STORAGE-HEADER.2: the first record is a session header, not an event or garbage.
    is_header = (isinstance(raw, dict) and raw.get("type") == "session" and type(raw.get("version")) in (int, float)
                 and type(raw.get("id")) is str)
    if not is_header:
        raise refuse(HEADER_SHAPE, Kind.HEADER, path, "corrupt session log: first record is not a session header", line=line)
    check_version(raw["version"], raw["id"], path, line=line)
    # SESSION-STORAGE-HEADER.3: JSONL always writes delegationDepth, so its absence means another writer.
    if jsonl and not is_nonneg_safe_int(raw.get("delegationDepth")):
        raise refuse(HEADER_DEPTH, Kind.HEADER, path,
                     "corrupt session log: header delegationDepth must be a non-negative safe integer", line=line)
    # SESSION-STORAGE-HEADER.4: these policy fields moved out of the header; their meaning is gone.
    retired = sorted({"sandboxMode", "approvalPolicy"} & set(raw))
    if retired:
        raise refuse(HEADER_RETIRED, Kind.HEADER, path, f"session header uses retired policy baseline fields {retired}",
                     line=line)
    # SESSION-STORAGE-HEADER.5: a log found under one id must not be opened as another session.
    if session_id is not None and raw["id"] != session_id:
        raise refuse(HEADER_IDENTITY, Kind.HEADER, path,
                     f"stored session identity mismatch: requested {shown(session_id)}, header contains {shown(raw['id'])}", line=line)
    fields = {key: value for key, value in raw.items() if key != "type"}
    try:
        return validate_header(fields, raw["id"])
    except SpecViolation as violation:
        raise located(violation, path, line=line) from None


# --- the record scanner: committed region and torn tail -----------------------------------------


def has_turn_end(records: list[Json]) -> bool:
    return any(isinstance(r, dict) and r.get("type") == "turn/end" for r in records)


def may_end_turn(raw: bytes) -> bool:
    """Whether stored text could hold a `turn/end` record: without the literal name and without an escape, it cannot.

    Once a defect is pending, a turn/end is all a reader still looks for (SESSION-TORN-TAIL.2),
    so text that cannot hold one is passed over unparsed: a tail of millions of junk lines costs
    a byte search, not millions of parses.
    """
    return b"turn/end" in raw or b"\\" in raw


def may_hold_turn_end(raw: bytes) -> bool:
    """Whether one stored line could be a record holding a `turn/end`: it must also be a JSON object, whose text starts
    with `{` after whitespace (a line that is no JSON at all, or another value, is passed over unparsed)."""
    return raw.lstrip()[:1] == b"{" and may_end_turn(raw)


_OBJECT_LINE = re.compile(rb"(?:\A|\n)[ \t\r\x0b\x0c]*\{")
"""A line of a block whose first byte after whitespace (as `bytes.lstrip` strips it) is `{`."""


def block_may_end_turn(block: bytes) -> bool:
    """Whether some line of a block of lines could hold a `turn/end` (`may_hold_turn_end` of a line, for them all)."""
    return may_end_turn(block) and b"{" in block and _OBJECT_LINE.search(block) is not None


@dataclass
class Scanner:
    """Reads storage records in order and decides where the committed log ends.

    The first defect (unparsable text, a malformed row, a seq that does not continue) becomes
    pending; scanning goes on. A later record, or the defective row itself, that holds a
    `turn/end` proves the writer went on after the defect, so the defect is corruption
    (SESSION-TORN-TAIL.2). Otherwise everything from the defect on is a torn tail (.3).
    """

    path: str
    sqlite: bool = False
    expected: int = 0
    committed_end: int = 0
    pending: tuple[SpecViolation, int | None, int] | None = None
    torn: TornTail | None = None
    def where(self, line: int | None) -> str:
        return f"row seq {line}" if self.sqlite else f"line {line}"

    def feed(self, line: int | None, raw: Any, end: int, *, read: Callable[[Any], Json] | None = None) -> list[Json]:
        """The events of one committed record ([] once a defect is pending); raises on corruption.

        `line` is the file line (JSONL) or the row's seq (SQLite); `read` turns `raw` into the
        storage record (default: lossless JSON text).
        """
        if self.pending is not None and type(raw) is bytes and not may_hold_turn_end(raw):
            return []
        try:
            value = (read or self._parse)(raw)
            records = decode(value, sqlite=self.sqlite)
        except SpecViolation as violation:
            if self.pending is None:
                self.pending = (self._locate(violation, line), line, self.expected)
            return []
        if self.pending is not None:
            if has_turn_end(records):
                raise self._corrupt(line)
            return []
        for offset, record in enumerate(records):
            seq = record.get("seq") if isinstance(record, dict) else None
            if type(seq) is not int or seq != self.expected + offset:
                gap = SpecViolation(SEQ, Kind.SEQ, f"{self.path}: corrupt session log: seq gap in committed region "
                                    f"at {self.where(line)} (expected {self.expected + offset}, got {shown(seq)})",
                                    line=None if self.sqlite else line, seq=self.expected + offset)
                self.pending = (gap, line, self.expected)
                if has_turn_end(records):
                    raise self._corrupt(line)
                return []
        self.expected += len(records)
        self.committed_end = end
        return records

    def _locate(self, violation: SpecViolation, line: int | None) -> SpecViolation:
        if self.sqlite:
            return located(violation, self.path, seq=line)
        return located(violation, self.path, line=line, seq=self.expected)

    def _parse(self, raw: Any) -> Json:
        if len(raw) > MAX_RECORD_BYTES:
            raise SpecViolation(RECORD_SIZE, Kind.JSON, f"record of {len(raw)} bytes exceeds {MAX_RECORD_BYTES}")
        return read_line(raw)

    def _corrupt(self, line: int | None) -> SpecViolation:
        assert self.pending is not None
        violation, _, _ = self.pending
        return SpecViolation(violation.rule, violation.kind,
                             f"{violation.message}; a committed turn/end follows at {self.where(line)}, so this is "
                             f"corruption, not a torn tail ({TORN_CORRUPT})",
                             seq=violation.seq, line=violation.line)

    def finish(self, *, fragment_line: int | None = None, fragment: bool = False) -> TornTail | None:
        """The torn tail, if any: from the pending defect, or the final unterminated fragment."""
        if self.pending is not None:
            violation, line, seq = self.pending
            reason = f"{violation.rule}: {violation.message}"
            if self.sqlite:
                self.torn = TornTail(None, seq, 0, reason, TORN_DEFECT, row=line)
            else:
                self.torn = TornTail(line, seq, self.committed_end, reason, TORN_DEFECT)
        elif fragment:
            self.torn = TornTail(fragment_line, self.expected, self.committed_end,
                                 "the final record has no terminator (an interrupted write)", TORN_FRAGMENT)
        return self.torn


# --- the gate ------------------------------------------------------------------------------------


def gate_events(
    raw_events: Iterator[tuple[int | None, Json]],
    header: FrozenDict,
    path: str,
    *,
    catalog: Catalog = DEFAULT_CATALOG,
    upgrades: list[LegacyUpgrade] | None = None,
) -> Iterator[tuple[int | None, Event]]:
    """Envelope, legacy upgrade and the unknown-event gate, one record at a time (streamable)."""
    upgrader = Upgrader(header["id"], (upgrades if upgrades is not None else []).append)
    for line, raw in raw_events:
        seq = raw.get("seq") if isinstance(raw, dict) else None
        try:
            event = stored_event(raw, seq if type(seq) is int else 0)
        except SpecViolation as violation:
            raise located(violation, path, line=line, seq=seq) from None
        try:
            event = upgrader(event, line)
        except SpecViolation as violation:
            raise located(violation, path, line=line) from None
        check_known(event, catalog, header["id"], path, line)
        yield line, event


def check_known(event: Event, catalog: Catalog, session_id: str, path: str, line: int | None) -> None:
    # SESSION-UNKNOWN-EVENT-GATE.1: a word this reader does not know might change what the log means.
    if not catalog.knows(event.type) and not event.ignorable:
        raise refuse(UNKNOWN, Kind.UNKNOWN_EVENT, path,
                     f"session {shown(session_id)} contains event type {shown(event.type)} (seq {event.seq}) unknown to catalog "
                     f"{catalog.name!r} and not marked ignorable; refusing to interpret the log — it was likely written "
                     f"by a newer harness", line=line, seq=event.seq)




@dataclass(frozen=True, slots=True)
class Parsed:
    """The seed indices of the stored events the gate parsed itself: all of them but those it upgraded.

    The scanner holds the stored seqs to their positions (SESSION-STORAGE-SEQ.1), and every upgrade is
    reported with its seq (SESSION-LEGACY-UPGRADE.5), so an event at an index of neither is the very Event
    `gate_events` parsed. The closers come after the stored events, and seeding parses them itself.
    """

    stored: int
    upgraded: frozenset[int]

    def __contains__(self, index: object) -> bool:
        return type(index) is int and 0 <= index < self.stored and index not in self.upgraded


def closers_for(events: list[Event]) -> list[Event]:
    """SESSION-STORAGE-LOAD.2: the repair closers of an open tail turn (sessionspec.repair).

    A log whose last turn bound is a `turn/end`, or that has none, leaves no turn open, and
    `repair.closers` finds nothing to close (SESSION-CRASH-REPAIR.1): that is read from the log's
    end, not from a walk of the whole log. Its other rule, contiguous seqs (SESSION-SURFACE-FOLD.1),
    the scanner has already held the stored log to (SESSION-STORAGE-SEQ.1).
    """
    for event in reversed(events):
        if event.type == "turn/end":
            return []
        if event.type == "turn/start":
            return repair_closers(events)
    return []


def finish_load(
    path: str,
    fmt: str,
    header: FrozenDict,
    events: list[Event],
    lines: list[int | None],
    torn: TornTail | None,
    upgrades: list[LegacyUpgrade],
    *,
    recovered: int = 0,
    revision: tuple[int, ...] = (),
    create: SessionFactory | None = None,
) -> LoadResult:
    """Seed validation of the whole log (and its closers) by `create` (default: the store, `live`); no marker
    (SESSION-STORAGE-LOAD.1). The oracle passes the reference model's `Session.create` to hold a log to the spec as code.

    `events` are exactly what `gate_events` yielded for the log, and `upgrades` what it reported: the store's seeding
    takes those events as parsed (`Parsed`)."""
    closers = closers_for(events)
    seed = [*events, *closers]
    try:
        if create is None:
            # The store's seeding takes the events the gate parsed as parsed; what else it checks, it checks.
            parsed: Container[int] = (Parsed(len(events), frozenset(upgrade.seq for upgrade in upgrades)) if upgrades
                                      else range(len(events)))
            session = live.Session._seeded_parsed(header["id"], seed, header, lambda: 0, parsed)
        else:
            session = create(header["id"], seed=seed, header=header, clock=lambda: 0)
    except SpecViolation as violation:
        index = violation.index
        line = lines[index] if index is not None and index < len(lines) else None
        raise located(violation, path, line=line) from None
    stored = session.events[: len(events)]
    # SESSION-STORAGE-LOAD.1: the marker belongs to a resumed session, never to the stored log.
    return LoadResult(path, fmt, header, FrozenList(stored), FrozenList(session.events[len(events): len(events) + len(closers)]),
                      torn, tuple(upgrades), recovered, revision)
