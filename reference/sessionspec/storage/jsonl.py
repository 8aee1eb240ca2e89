"""The JSONL backend's writer (`session.jsonl`, notes §4.2): one header line, then one record per line.

The reader is `storage.jsonlread` (the one JSONL reader); this module writes: a new log published
atomically, durable batches, and a repair's cut and closers. The zstd backend is this writer with
its batches framed (`storage.zstdlog`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any, Self

from sessionspec.envelope import Event
from sessionspec.jsonvalue import FrozenDict, Json
from sessionspec.storage import durable
from sessionspec.storage.gate import LoadResult
from sessionspec.storage.jsonlread import FileReader, JsonlReader
from sessionspec.storage.records import as_events, checked_header, encode_batch, encode_line, header_record


class JsonlWriter:
    """Appends durable batches to one JSONL log; `next_seq` is the stored cursor.

    The zstd writer is this writer with `frame` compressing: the two formats differ only in how a
    batch's lines are stored, so create, append and repair are written once.
    """

    def __init__(self, path: Path, next_seq: int, *, packed: bool = True) -> None:
        self.path = Path(path)
        self.next_seq = next_seq
        self.packed = packed

    @staticmethod
    def frame(plain: bytes, records: int) -> bytes:
        """How one batch's lines (or the header line), `records` records in all, are stored: as they are."""
        return plain

    @classmethod
    def _batch(cls, batch: list[Event], packed: bool) -> bytes:
        return cls.frame(encode_batch(batch, packed=packed), len(batch)) if batch else b""

    @classmethod
    def create(cls, path: Path, header: FrozenDict | dict[str, Json], events: Iterable[Event | Json] = (),
               *, packed: bool = True) -> Self:
        """Publish a new log (header line plus a first batch) atomically; refuses an existing file."""
        valid = checked_header(header)
        batch = as_events(events, 0)
        durable.publish(Path(path), cls.frame(encode_line(header_record(valid)), 1) + cls._batch(batch, packed))
        return cls(path, len(batch), packed=packed)

    def append(self, events: Iterable[Event | Json]) -> None:
        """One durable batch: returns only once it is fsynced (SESSION-STORAGE-WRITE.2)."""
        batch = as_events(events, self.next_seq)
        if not batch:
            return
        durable.append(self.path, self._batch(batch, self.packed))
        self.next_seq += len(batch)

    def commit_repair(self, result: LoadResult, verify: Callable[[Any], LoadResult]) -> LoadResult:
        """Cut the torn tail and append the recovered events and the closers as one batch, durably.

        Under the write lock, SESSION-STORAGE-WRITE.4: the file must still be at the revision the
        repair was computed from (a plan of another size is stale, not a result that reads back
        wrong); SESSION-STORAGE-WRITE.5: then the result is read back (the kept bytes, then the new
        ones) and must verify; only then is it written.
        """
        torn, revision = result.torn, result.revision
        batch = as_events([*result.events[self.next_seq:], *result.closers], self.next_seq)
        content = self._batch(batch, self.packed)
        keep = torn.offset if torn is not None else revision[2]
        verified: list[LoadResult] = []

        def read_back() -> None:
            stream = durable.spliced(self.path, keep, content)
            verified.append(verify(self.reader(self.path, result.header["id"], stream=stream)))

        written = durable.repair(self.path, revision, None if torn is None else torn.offset, content, read_back)
        self.next_seq += len(batch)
        return replace(verified[0], revision=durable.revision(written, written.st_size))

    reader: type[FileReader] = JsonlReader
    """The reader of what this writer writes: a repair's result is read back with it."""
