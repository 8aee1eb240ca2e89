"""Persistence: the upstream's JSONL, zstd-framed JSONL and SQLite formats, behind one load gate.

    result = storage.load(path)                 # LoadResult: header, events, closers, torn, upgrades
    storage.save(path, header, events)          # a new log, published atomically
    log = storage.open_for_append(path); log.append(batch)   # durable batches
    storage.repair(path)                        # commit the torn-tail cut and the closers
    for line, event in storage.stream(path): ...      # bounded-memory reading for a checker

The format is chosen by suffix (`.jsonl`, `.jsonl.zstd`/`.zst`, `.sqlite`/`.sqlite3`/`.db`) or,
when the suffix says nothing, by the file's magic bytes.
"""

from __future__ import annotations

import gc
import importlib
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TypeAlias

from sessionspec.catalog import CATALOGS, DEFAULT_CATALOG, Catalog
from sessionspec.envelope import Event
from sessionspec.errors import Kind, SpecViolation
from sessionspec.jsonvalue import FrozenDict, Json
from sessionspec.legacy import LegacyUpgrade
from sessionspec.storage.durable import VERIFIED, remove_stale_temps
from sessionspec.storage.formats import Unreadable, detect
from sessionspec.storage.gate import LoadResult, SessionFactory, TornTail, finish_load, gate_events
from sessionspec.storage.layout import encode_segment, project_key, session_path

if TYPE_CHECKING:
    from sessionspec.storage.jsonl import JsonlWriter
    from sessionspec.storage.jsonlread import JsonlReader, RunTaker
    from sessionspec.storage.sqlite import SqliteReader, SqliteWriter
    from sessionspec.storage.zstdlog import ZstdReader, ZstdWriter


Reader: TypeAlias = "JsonlReader | ZstdReader | SqliteReader"
Writer: TypeAlias = "JsonlWriter | ZstdWriter | SqliteWriter"

BACKENDS: Final = {
    "jsonl": ("sessionspec.storage.jsonlread", "JsonlReader", "sessionspec.storage.jsonl", "JsonlWriter"),
    "jsonl.zstd": ("sessionspec.storage.zstdlog", "ZstdReader", "sessionspec.storage.zstdlog", "ZstdWriter"),
    "sqlite": ("sessionspec.storage.sqlite", "SqliteReader", "sessionspec.storage.sqlite", "SqliteWriter"),
}
"""Each format's reader and writer, imported when a log of that format is opened: reading a JSONL log loads
neither SQLite nor Zstandard (a tool run once per log pays only for the backend it uses)."""


STORED_LOG: Final = "sessionspec.storage.storedlog"
"""The load gate's fast form for JSONL, imported when a JSONL log is loaded."""


def _backend(fmt: str, *, writer: bool = False) -> Any:
    module, reader_name, writer_module, writer_name = BACKENDS[fmt]
    if writer:
        return getattr(importlib.import_module(writer_module), writer_name)
    return getattr(importlib.import_module(module), reader_name)


__all__ = [
    "LegacyUpgrade", "LoadResult", "Log", "SessionFactory", "TornTail", "Unreadable", "detect", "encode_segment", "load",
    "open_for_append", "open_reader", "project_key",
    "repair", "save", "session_path", "stream",
]


def _catalog(catalog: Catalog | str | None) -> Catalog:
    if catalog is None:
        return DEFAULT_CATALOG
    return CATALOGS[catalog] if isinstance(catalog, str) else catalog


def _reader(path: Path, session_id: str | None) -> Reader:
    return open_reader(path, session_id)


def open_reader(path: Path | str, session_id: str | None = None, *, runs: RunTaker | None = None) -> Reader:
    """The reader of the backend that wrote `path` (by `detect`): its `header`, `records()`, then `torn`.

    This is every tool's way into a stored log (`load`, `stream`, `sessionspec check` and `show`), so
    each format has one reader. `runs` (JSONL only) is a consumer that takes whole runs of lines itself
    (the checker: see `storage.jsonlread`). Raises Unreadable, or SpecViolation for a bad header.
    """
    path = Path(path)
    fmt = detect(path)
    backend = _backend(fmt)
    reader: Reader = backend(path, session_id, runs=runs) if fmt == "jsonl" else backend(path, session_id)
    return reader


def load(path: Path | str, *, catalog: Catalog | str | None = None, session_id: str | None = None,
         create: SessionFactory | None = None) -> LoadResult:
    """The load gate over a stored log (spec/07-persistence.md); commits nothing.

    The whole log (and its closers) is validated by seeding a session: the store's (`live`) by default; `create` is
    another implementation's `Session.create` (the oracle passes the reference model's). A JSONL log loaded with the
    store's own rules is read first by the gate's fast form (`storage.storedlog`), which vouches for every record
    without building one and keeps the events as their stored bytes, built when read; whatever it does not vouch
    for, the gate reads again itself.
    """
    chosen = _catalog(catalog)
    if create is None and detect(Path(path)) == "jsonl":
        loaded: LoadResult | None = importlib.import_module(STORED_LOG).load_jsonl(str(path), session_id, chosen)
        if loaded is not None:
            return loaded
    return load_from(_reader(Path(path), session_id), str(path), catalog=chosen, create=create)


@contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic garbage collector off for the block (if it was on), and on again after it, however it ends.

    A load builds a few hundred thousand containers (frozen JSON, events) and keeps every one: the
    collector, which runs every 700 new containers and now and then walks all that were kept, finds
    nothing to free in them (frozen lossless JSON holds no cycle, SESSION-LOSSLESS-JSON.6), and cost
    a third of loading the 2,000-turn log (benchmarks/README.md). Whatever cyclic garbage the
    process makes meanwhile is collected once the collector is back on.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def load_from(reader: Reader, path: str, *, catalog: Catalog, create: SessionFactory | None) -> LoadResult:
    """The load gate over what an open reader reads (a stored log, or a repair's result before it is committed)."""
    upgrades: list[LegacyUpgrade] = []
    events: list[Event] = []
    lines: list[int | None] = []
    with collector_paused():
        for line, event in gate_events(reader.records(), reader.header, path, catalog=catalog, upgrades=upgrades):
            events.append(event)
            lines.append(line)
        recovered = 0
        recovered_from = getattr(reader, "recovered_from", None)  # a zstd reader's torn final frame
        if recovered_from is not None:
            recovered = len(events) - recovered_from
        return finish_load(path, reader.format, reader.header, events, lines, reader.torn, upgrades,
                           recovered=recovered, revision=reader.revision, create=create)


def stream(path: Path | str, *, catalog: Catalog | str | None = None,
           session_id: str | None = None) -> Iterator[tuple[int | None, Event]]:
    """(line, event) for every committed event, gated one at a time (no seed validation, no closers).

    Memory is bounded by one record plus the message ids of surface events (for legacy
    replacements); a checker that folds the surface keeps what it keeps. The line is None for SQLite.
    """
    reader = _reader(Path(path), session_id)
    yield from gate_events(reader.records(), reader.header, str(path), catalog=_catalog(catalog))


def _writer_class(fmt: str) -> Any:
    return _backend(fmt, writer=True)


def save(path: Path | str, header: FrozenDict | dict[str, Json], events: Iterable[Event | Json] = (), *,
         packed: bool = True, format: str | None = None) -> Log:
    """Write a new log (or, in SQLite, a new session) in the format the path names; never overwrites."""
    fmt = format or detect(path, existing=False)
    writer = _writer_class(fmt).create(Path(path), header, events, packed=packed)
    return Log(Path(path), fmt, writer)


class Log:
    """An open stored log: append durable batches to it."""

    def __init__(self, path: Path, fmt: str, writer: Writer) -> None:
        self.path = path
        self.format = fmt
        self._writer = writer

    @property
    def next_seq(self) -> int:
        return self._writer.next_seq

    def append(self, events: Iterable[Event | Json]) -> None:
        """One batch, durable when this returns (fsync or COMMIT); on failure nothing of it is stored."""
        self._writer.append(events)


def _writer_for(result: LoadResult, path: Path, next_seq: int) -> Writer:
    if result.format == "sqlite":
        return _writer_class("sqlite")(path, result.header["id"], next_seq)  # type: ignore[no-any-return]
    return _writer_class(result.format)(path, next_seq)  # type: ignore[no-any-return]


def open_for_append(path: Path | str, *, catalog: Catalog | str | None = None, session_id: str | None = None,
                    create: SessionFactory | None = None) -> Log:
    """Load (through the gate) and open for appending; a log that needs repair is repaired first."""
    result = load(path, catalog=catalog, session_id=session_id, create=create)
    result = repair(path, catalog=catalog, session_id=session_id, create=create, plan=result)
    return Log(Path(path), result.format, _writer_for(result, Path(path), len(result.events)))


def repair(path: Path | str, *, catalog: Catalog | str | None = None, session_id: str | None = None,
           create: SessionFactory | None = None, plan: LoadResult | None = None) -> LoadResult:
    """Commit what load found durably: cut the torn tail, append the closers; returns the repaired log, as verified.

    `plan` is a load of this log already made (and perhaps shown, as `sessionspec repair` does):
    it is what gets committed, and only if the log has not changed since (SESSION-STORAGE-WRITE.4).
    The result is read back before it is committed and must be exactly the loaded events plus the
    closers (SESSION-STORAGE-WRITE.5); otherwise nothing is written.
    """
    # SESSION-STORAGE-WRITE.6: a dead writer's temp file goes, whether or not the log itself needs anything.
    remove_stale_temps(Path(path))
    result = plan if plan is not None else load(path, catalog=catalog, session_id=session_id, create=create)
    if not result.needs_repair:
        return result
    keep = len(result.events) - result.recovered
    writer = _writer_for(result, Path(path), keep)
    chosen = _catalog(catalog)

    def verify(reader: Reader) -> LoadResult:
        return verified(result, reader, catalog=chosen, create=create)

    return writer.commit_repair(result, verify)


def verified(result: LoadResult, reader: Reader, *, catalog: Catalog, create: SessionFactory | None) -> LoadResult:
    """SESSION-STORAGE-WRITE.5: `reader` reads a repair's result; it must load as the loaded events plus the closers.

    Equal events mean no record that loaded was removed, and nothing was added but the closers;
    no torn tail and no closers left mean the repair finished the job.
    """
    try:
        after = load_from(reader, result.path, catalog=catalog, create=create)
    except SpecViolation as violation:
        raise SpecViolation(VERIFIED, Kind.INTERNAL, f"{result.path}: repair not written: its result does not load "
                            f"({violation.rule}: {violation.message})") from None
    expected = [*result.events, *result.closers]
    # Event equality is JSON equality of the frozen values themselves: nothing of either log is copied to compare it.
    same = len(after.events) == len(expected) and all(a == b for a, b in zip(after.events, expected, strict=True))
    if after.torn is not None or after.closers or not same:
        raise SpecViolation(VERIFIED, Kind.INTERNAL,
                            f"{result.path}: repair not written: its result reads back as {len(after.events)} events"
                            f"{' with a torn tail' if after.torn is not None else ''}, not the {len(result.events)} "
                            f"loaded events and {len(result.closers)} closers")
    return after
