"""The JSONL backend (`session.jsonl`, notes §4.2): one header line, then one record per line.

Reading streams the file line by line with a bounded line length, so a checker's memory is
bounded by the longest record and whatever it keeps itself, never by the file.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Generator, Iterable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any, BinaryIO, Self

from sessionspec.envelope import Event
from sessionspec.errors import Kind, SpecViolation
from sessionspec.jsonvalue import FrozenDict, Json
from sessionspec.storage import durable
from sessionspec.storage.formats import open_regular
from sessionspec.storage.gate import (
    HEADER_LINE,
    MAX_RECORD_BYTES,
    RECORD_SIZE,
    LoadResult,
    Scanner,
    TornTail,
    header_from_record,
    located,
    may_end_turn,
    refuse,
)
from sessionspec.storage.losslessparse import parse
from sessionspec.storage.records import as_events, checked_header, encode_batch, encode_line, header_record


def _read_line(stream: BinaryIO, path: str, line: int) -> bytes:
    """One line (with its newline, if any), read in 1 MiB pieces so a refused line costs at most the bound."""
    piece = stream.readline(_PIECE)
    if (len(piece) < _PIECE or piece.endswith(b"\n")) and len(piece) <= MAX_RECORD_BYTES:
        return piece
    parts, total = [piece], len(piece)
    while True:
        # SESSION-STORAGE-RECORD.1: a bounded read; a longer record is refused before it fills memory.
        if total > MAX_RECORD_BYTES:
            raise refuse(RECORD_SIZE, Kind.JSON, path, f"record at line {line} exceeds {MAX_RECORD_BYTES} bytes", line=line)
        piece = stream.readline(_PIECE)
        if not piece:
            break
        parts.append(piece)
        total += len(piece)
        if piece.endswith(b"\n"):
            break
    if total > MAX_RECORD_BYTES:
        raise refuse(RECORD_SIZE, Kind.JSON, path, f"record at line {line} exceeds {MAX_RECORD_BYTES} bytes", line=line)
    return b"".join(parts)


_PIECE = 1 << 20


def read_header(stream: BinaryIO, path: str, session_id: str | None = None) -> tuple[FrozenDict, int]:
    """The header gate on line 1; returns the header and the offset after it."""
    raw = _read_line(stream, path, 1)
    # SESSION-STORAGE-HEADER.1: a header that is not a complete line was never committed.
    if not raw.endswith(b"\n"):
        raise refuse(HEADER_LINE, Kind.HEADER, path, "empty or header-less session log", line=1)
    try:
        value = parse(raw[:-1])
    except SpecViolation as violation:
        raise located(violation, path, line=1) from None
    return header_from_record(value, path, jsonl=True, session_id=session_id), len(raw)


class FileReader(ABC):
    """A reader that owns its open log file: `records()` closes it once exhausted, `close()` at any time.

    After `records()` is exhausted, `torn` is the torn tail (or None) and `revision` the revision
    token of what was read, which a repair must still find (SESSION-STORAGE-WRITE.4). With
    `stream`, the reader reads that stream as the file at `path` (a repair's result, before it is
    written: SESSION-STORAGE-WRITE.5); its revision is then empty.
    """

    format: str

    def __init__(self, path: Path, session_id: str | None = None, *, stream: BinaryIO | None = None) -> None:
        self.path = Path(path)
        self._name = str(path)
        # SESSION-STORAGE-RECORD.2: a FIFO or a device is refused before it is read.
        self._stream: BinaryIO = stream if stream is not None else open_regular(self.path)
        self._real = stream is None
        self.torn: TornTail | None = None
        self.revision: tuple[int, ...] = ()
        try:
            self.header: FrozenDict = self._open(session_id)
        except BaseException:
            self._stream.close()
            raise

    @abstractmethod
    def _open(self, session_id: str | None) -> FrozenDict:
        """The header gate over the start of the file."""

    @abstractmethod
    def _records(self) -> Iterator[tuple[int | None, Json]]:
        """(line, raw event) for each committed event; sets `torn` and `revision` at the end."""

    def records(self) -> Iterator[tuple[int | None, Json]]:
        try:
            yield from self._records()
        finally:
            self._stream.close()

    def close(self) -> None:
        self._stream.close()

    def _revision(self, size: int) -> tuple[int, ...]:
        """The revision token of the file as read up to `size` (none for a stream that is not the file)."""
        return durable.revision(os.fstat(self._stream.fileno()), size) if self._real else ()

    def _size(self) -> int:
        if self._real:
            return os.fstat(self._stream.fileno()).st_size
        size = self._stream.seek(0, os.SEEK_END)
        self._stream.seek(0)
        return size


class JsonlReader(FileReader):
    """The committed records of a JSONL log, with its torn tail decided at the end."""

    format = "jsonl"

    def _open(self, session_id: str | None) -> FrozenDict:
        header, self._offset = read_header(self._stream, self._name, session_id)
        self.scanner = Scanner(self._name, committed_end=self._offset)
        return header

    def _records(self) -> Iterator[tuple[int | None, Json]]:
        line, offset = 1, self._offset
        while self.scanner.pending is None:
            line += 1
            raw = _read_line(self._stream, self._name, line)
            offset += len(raw)
            if not raw.endswith(b"\n"):
                # EOF: what was read is what a repair must still find (SESSION-STORAGE-WRITE.4).
                self.revision = self._revision(offset)
                # SESSION-TORN-TAIL.1: a non-empty final fragment is an interrupted write.
                self.torn = self.scanner.finish(fragment_line=line, fragment=bool(raw))
                return
            for record in self.scanner.feed(line, raw[:-1], offset):
                yield line, record
        offset = yield from self._after_defect(line, offset)
        self.revision = self._revision(offset)
        self.torn = self.scanner.finish()

    def _after_defect(self, line: int, offset: int) -> Generator[tuple[int | None, Json], None, int]:
        """The rest of the file once a defect is pending: only a later turn/end matters (SESSION-TORN-TAIL.2).

        Read in blocks; a block of whole lines that cannot hold a turn/end is counted, not parsed.
        Returns the offset of the end of the file.
        """
        carry = b""
        while block := self._stream.read(_PIECE):
            offset += len(block)
            head = block.find(b"\n")
            # SESSION-STORAGE-RECORD.1: refused at its line, as a line read alone is (only the line
            # that spans the carry can be longer than a block).
            if len(carry) + (head if head >= 0 else len(block)) > MAX_RECORD_BYTES:
                raise refuse(RECORD_SIZE, Kind.JSON, self._name,
                             f"record at line {line + 1} exceeds {MAX_RECORD_BYTES} bytes", line=line + 1)
            data = carry + block
            cut = data.rfind(b"\n") + 1
            whole, carry = data[:cut], data[cut:]
            if not may_end_turn(whole):
                line += whole.count(b"\n")
                continue
            for raw in whole.split(b"\n")[:-1]:
                line += 1
                yield from ((line, record) for record in self.scanner.feed(line, raw, offset))
        return offset


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
    def frame(plain: bytes) -> bytes:
        """How one batch's lines (or the header line) are stored: as they are."""
        return plain

    @classmethod
    def _batch(cls, batch: list[Event], packed: bool) -> bytes:
        return cls.frame(encode_batch(batch, packed=packed)) if batch else b""

    @classmethod
    def create(cls, path: Path, header: FrozenDict | dict[str, Json], events: Iterable[Event | Json] = (),
               *, packed: bool = True) -> Self:
        """Publish a new log (header line plus a first batch) atomically; refuses an existing file."""
        valid = checked_header(header)
        batch = as_events(events, 0)
        durable.publish(Path(path), cls.frame(encode_line(header_record(valid))) + cls._batch(batch, packed))
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

        SESSION-STORAGE-WRITE.5: first the result is read back (the kept bytes, then the new
        ones) and must verify; SESSION-STORAGE-WRITE.4: then it is written only if the file is
        still at the revision the repair was computed from.
        """
        torn, revision = result.torn, result.revision
        batch = as_events([*result.events[self.next_seq:], *result.closers], self.next_seq)
        content = self._batch(batch, self.packed)
        keep = torn.offset if torn is not None else revision[2]
        verified = verify(self.reader(self.path, result.header["id"], stream=durable.spliced(self.path, keep, content)))
        written = durable.repair(self.path, revision, None if torn is None else torn.offset, content)
        self.next_seq += len(batch)
        return replace(verified, revision=durable.revision(written, written.st_size))

    reader: type[FileReader] = JsonlReader
    """The reader of what this writer writes: a repair's result is read back with it."""
