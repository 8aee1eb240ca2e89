"""Planted storage bugs: the store (`live`) with a reader or writer wrong in one way a persistence layer plausibly is.

The storage phase's self-test (tests/test_planted_storage.py): a runner that passes one of these
would pass the real bug. Each is a `live.Session` whose class carries a `storage_codec` (the
storage ops' `wire.storageops.Codec`), registered as implementation `planted:<name>` like the
session bugs of `testing.planted`, so `sessionspec serve --impl planted:storage-write-behind` is a
testee with the bug.

- `storage-key-order`: the JSONL writer sorts each record's keys (a JSON library's default) instead
  of writing the canonical order: the log loads to the same events, and is not the bytes any other
  writer writes (the save check, SESSION-CONFORMANCE-STORAGE.2).
- `storage-write-behind`: an append is acknowledged before it is written (each event is written
  when the next one comes: an fsync left out, in effect); a crash right after an acknowledgement
  loses it (the crash trial, SESSION-CONFORMANCE-STORAGE.3).
- `torn-tail-as-corruption`: a torn tail is refused as a corrupt log (SESSION-TORN-TAIL.1/.3).
- `packed-row-times`: a packed row is expanded with every member at the row's first time (`dt`
  ignored): the events load with the wrong times (SESSION-CHUNK-ROWS.6, the load vectors).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sessionspec import live
from sessionspec.envelope import parse_event
from sessionspec.errors import Kind, SpecViolation
from sessionspec.jsontext import dumps, parse
from sessionspec.jsonvalue import thaw
from sessionspec.wire.storageops import Codec


class SortedKeysCodec(Codec):
    """The JSONL writer with each line's keys sorted: what `json.dumps(sort_keys=True)` writes."""

    def save(self, path: str, header: Any, events: Any, backend: str) -> Any:
        log = super().save(path, header, events, backend)
        if backend == "jsonl":
            records = [parse(line.decode("utf-8", "surrogatepass")) for line in Path(path).read_bytes().splitlines()]
            Path(path).write_bytes(b"".join(dumps(dict(sorted(record.items()))).encode("utf-8", "surrogatepass") + b"\n"
                                            for record in records))
        return log


class WriteBehindCodec(Codec):
    """Each append written only when the next one comes: acknowledged before it is durable."""

    def __init__(self) -> None:
        self.behind: dict[int, list[Any]] = {}

    def append(self, log: Any, events: list[Any]) -> None:
        waiting = self.behind.pop(id(log), [])
        if waiting:
            super().append(log, waiting)
        self.behind[id(log)] = events


class TornAsCorruptionCodec(Codec):
    """A log with a torn tail refused, as if whatever follows the last good record were corruption."""

    def load(self, path: str, session_id: str | None, create: Callable[..., Any]) -> Any:
        result = super().load(path, session_id, create)
        if result.torn is not None:
            raise SpecViolation(result.torn.rule, Kind.ENVELOPE, f"{path}: corrupt log at seq {result.torn.seq}",
                                seq=result.torn.seq)
        return result


class RowTimesCodec(Codec):
    """Every chunk of a run of three or more at the run's first time: a packed row expanded without its `dt`."""

    def load(self, path: str, session_id: str | None, create: Callable[..., Any]) -> Any:
        result = super().load(path, session_id, create)
        events = [thaw(event.to_json()) for event in result.events]
        start = 0
        while start < len(events):
            end = start
            while end < len(events) and events[end]["type"] == "assistant/chunk":
                end += 1
            for event in events[start + 1:end] if end - start >= 3 else ():
                event["time"] = events[start]["time"]
            start = max(end, start + 1)
        expanded: Any = [parse_event(event, n) for n, event in enumerate(events)]
        return dataclasses.replace(result, events=expanded)


class SortedKeys(live.Session):
    """The JSONL writer writes each record's keys sorted."""

    storage_codec = SortedKeysCodec()


class WriteBehind(live.Session):
    """An attached session's append is acknowledged before it is written."""

    storage_codec = WriteBehindCodec()


class TornAsCorruption(live.Session):
    """A torn tail is refused as corruption."""

    storage_codec = TornAsCorruptionCodec()


class RowTimes(live.Session):
    """A packed row is expanded with every member at the row's first time."""

    storage_codec = RowTimesCodec()


STORAGE_PLANTED: dict[str, type[live.Session]] = {
    "storage-key-order": SortedKeys,
    "storage-write-behind": WriteBehind,
    "torn-tail-as-corruption": TornAsCorruption,
    "packed-row-times": RowTimes,
}
"""Name -> variant; each is registered as implementation `planted:<name>`. What finds each: the family it shows as."""
