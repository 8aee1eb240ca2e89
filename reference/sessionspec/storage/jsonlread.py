"""The one JSONL reader (`session.jsonl`, notes §4.2): a header line, then one storage record per line.

Every reader of a JSONL log is this one: `storage.load`, `storage.stream`, a repair's read-back,
and `sessionspec check` and `show` (`logcheck.reader.open_log`). The file is read in blocks of
complete lines (`read_blocks`); a block whose every line is canonical JSON is parsed at once
(`live.fasttext.parse_block`), any other line alone by the one line reader (`live.fasttext`), and
every record is fed to the backends' shared `Scanner`, which decides where the committed log ends.
Memory is bounded by one block and the longest record (SESSION-STORAGE-RECORD.1), never by the file.

A consumer that judges whole runs of lines itself (the checker) gives a `RunTaker`: it surveys
each block (`surveyed`), and the reader hands it every run it vouched for (`fold`) as far as the
log bears it out (the seq the scanner expects); only the lines no run takes come out of `records()`.
Either way the scanner's seq and committed end move as if it had read every line itself.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Generator, Iterator, Sequence
from itertools import accumulate
from pathlib import Path
from typing import Any, BinaryIO, Final, Protocol

from sessionspec.errors import Kind, SpecViolation
from sessionspec.jsontext import parse
from sessionspec.jsonvalue import FrozenDict, Json
from sessionspec.live.fasttext import SLOW, fast_parse, parse_block
from sessionspec.storage import durable
from sessionspec.storage.formats import CHANGED, open_regular
from sessionspec.storage.gate import (
    HEADER_LINE,
    MAX_RECORD_BYTES,
    RECORD_SIZE,
    Scanner,
    TornTail,
    block_may_end_turn,
    header_from_record,
    located,
    may_hold_turn_end,
    refuse,
)

BLOCK: Final = 32 << 10
"""Small enough that a block's parsed values stay in cache (a MiB block halves the parse rate)."""
_PIECE: Final = 1 << 20


# --- blocks of lines --------------------------------------------------------------------------


class Stopped(ABC):
    """Where `read_blocks` stopped before the end of the file: the log's end for a reader, which refuses it at the
    line it could not read (never a torn tail: the bytes past it are not where a writer stopped)."""

    @abstractmethod
    def refusal(self, path: str, line: int) -> SpecViolation:
        """The refusal of the log at `line`, the first line not read."""


class Oversized(Stopped):
    """A record longer than MAX_RECORD_BYTES. Nothing of it is kept: the rule needs only its line, and holding up to
    64 MiB of it in a read-ahead queue would be the memory the bound exists to save."""

    def refusal(self, path: str, line: int) -> SpecViolation:
        # SESSION-STORAGE-RECORD.1: refused at its line.
        return refuse(RECORD_SIZE, Kind.JSON, path, f"record at line {line} exceeds {MAX_RECORD_BYTES} bytes", line=line)


OVERSIZED: Final = Oversized()


class Unread(Stopped):
    """A read that failed (an I/O error) partway through the file."""

    def __init__(self, error: OSError) -> None:
        self.reason = error.strerror or str(error)

    def refusal(self, path: str, line: int) -> SpecViolation:
        # SESSION-STORAGE-RECORD.4: a log that cannot be read as it was is refused where that is found.
        return refuse(CHANGED, Kind.ENVELOPE, path, f"the file fails to read at line {line}: {self.reason}", line=line)


def read_blocks(stream: BinaryIO, tail: list[bytes]) -> Iterator[bytes | Stopped]:
    """The log after its header: blocks of complete lines (without the last newline), and where reading stopped short.

    A final fragment without its newline (a torn write) is put in `tail`, not yielded.
    """
    carry = b""
    while True:
        try:
            block = stream.read(BLOCK)
        except OSError as error:
            yield Unread(error)
            return
        if not block:
            break
        data = carry + block if carry else block
        cut = data.rfind(b"\n") + 1
        if cut == 0:
            # A line longer than a block: read the rest of it in one bounded call.
            try:
                data += stream.readline(MAX_RECORD_BYTES + 2 - len(data))
            except OSError as error:
                yield Unread(error)
                return
            ended = data.endswith(b"\n")
            if len(data) - ended > MAX_RECORD_BYTES:
                # SESSION-STORAGE-RECORD.1: refused with no more of it read.
                yield OVERSIZED
                return
            if not ended:
                carry = data
                break
            cut = len(data)
        yield data[: cut - 1]
        carry = data[cut:]
    if carry:
        tail.append(carry)


Run = tuple[int, int, int, int, list[Any]]
"""(start, end, first, next, ops): lines start..end-1 of a block, vouched for as the events first..next-1 whose
surface operations are `ops` (the checker's survey, storage/survey.py, says what an op holds)."""
Surveyed = tuple[int, list[Run], list[Any] | None] | None
"""A block's line count, its runs and (where it was parsed in this process) each line's value; None where the
block is not canonical."""


class RunTaker(Protocol):
    """A consumer that takes whole runs of lines itself: it surveys blocks, and folds the runs the log bears out."""

    def surveyed(self, chunks: Iterator[bytes | Stopped]) -> Iterator[tuple[bytes | Stopped, Surveyed]]:
        """Each chunk in file order with its survey."""

    def fold(self, ops: Sequence[Any], k: int, first: int, nxt: int) -> int:
        """ops[k:r] applied to the consumer's state, the events first..; returns r (-1: none), see Checker.fold."""


def parsed(chunks: Iterator[bytes | Stopped]) -> Iterator[tuple[bytes | Stopped, Surveyed]]:
    """Each chunk with its lines' values where the whole block is canonical, and no runs: every line is a record."""
    for chunk in chunks:
        values = parse_block(chunk) if isinstance(chunk, bytes) else None
        yield chunk, None if values is None else (len(values), [], values)


class _Lines:
    """One block of complete lines at file offset `base`, split into its lines only when some line goes alone."""

    __slots__ = ("_ends", "_raws", "base", "part", "total", "values")

    def __init__(self, part: bytes, base: int, total: int, values: list[Any] | None) -> None:
        self.part = part
        self.base = base
        self.total = total
        self.values = values
        """Each line's value where the block was parsed here (`parse_block` proved each line canonical), else None."""
        self._raws: list[bytes] = []
        self._ends: list[int] = []

    def raw(self, index: int) -> bytes:
        if not self._raws:
            self._split()
        return self._raws[index]

    def end(self, index: int) -> int:
        """The file offset just after line `index`'s newline."""
        if not self._raws:
            self._split()
        return self.base + self._ends[index]

    def _split(self) -> None:
        self._raws = self.part.split(b"\n")
        self._ends = list(accumulate(len(raw) + 1 for raw in self._raws))


def _value(value: Json) -> Json:
    return value


def _alone(scanner: Scanner, lines: _Lines, first: int, last: int, line: int) -> Generator[tuple[int | None, Json], None, int]:
    """Lines first..last-1 of a block, each fed to the scanner; returns the last line number.

    SESSION-TORN-TAIL.2: after a defect only a line that is an object can hold a turn/end (the scanner would decode any
    other value as itself and find none, and refuse no JSON at all), so every other line is passed over here: a tail of
    a million junk lines costs a byte test each (or its block's parse), not a million parses by the lossless reader.
    """
    values = lines.values
    for index in range(first, last):
        line += 1
        if values is None:
            raw = lines.raw(index)
            if scanner.pending is None or may_hold_turn_end(raw):
                yield from _one_line(scanner, line, raw, lines.end(index))
        elif scanner.pending is None or type(values[index]) is dict:
            for record in scanner.feed(line, values[index], lines.end(index), read=_value):
                yield line, record
    return line


def _one_line(scanner: Scanner, line: int, raw: bytes, end: int) -> Iterator[tuple[int | None, Json]]:
    """One line (without its newline) no parsed block vouched for: read alone, the lossless reader deciding."""
    value = fast_parse(raw) if len(raw) <= MAX_RECORD_BYTES and scanner.pending is None else SLOW
    records = scanner.feed(line, raw, end) if value is SLOW else scanner.feed(line, value, end, read=_value)
    for record in records:
        yield line, record


def _taken(runs: RunTaker | None, scanner: Scanner, lines: _Lines, offset: int, run: Run,
           line: int) -> Generator[tuple[int | None, Json], None, tuple[int, int]]:
    """One run: folded by `runs` as far as the log bears it out, the lines it does not take read alone.

    Returns (the last line number, the index in the block after the run)."""
    start, end, first, nxt, ops = run
    done, k = start, 0
    while runs is not None and scanner.pending is None and first == scanner.expected:
        refused = runs.fold(ops, k, first, nxt)
        if refused < 0:
            break
        if refused == len(ops):
            line += end - done
            done, scanner.expected = end, nxt
        else:
            # The fold stopped at a replace it could not place: the lines before it are taken.
            at, seq = ops[refused][0], ops[refused][1]
            line += at - done
            done, scanner.expected = at, seq
        if done:
            scanner.committed_end = offset if done == lines.total else lines.end(done - 1)
        if done == end:
            break
        # ... and the replace goes alone, to the exact path; the run resumes after it.
        line = yield from _alone(scanner, lines, done, done + 1, line)
        done += 1
        first, k = seq + 1, refused + 1
    line = yield from _alone(scanner, lines, done, end, line)
    return line, end


def block_records(blocks: Iterator[tuple[bytes | Stopped, Surveyed]], scanner: Scanner, offset: int,
                  runs: RunTaker | None) -> Generator[tuple[int | None, Json], None, int]:
    """The records no run takes, in file order; returns the number of the last line read."""
    line = 1
    for chunk, surveyed in blocks:
        if isinstance(chunk, Stopped):
            raise chunk.refusal(scanner.path, line + 1)
        if scanner.pending is not None and not block_may_end_turn(chunk):
            # SESSION-TORN-TAIL.2: after a defect only a later turn/end matters, and this block can hold none.
            line += chunk.count(b"\n") + 1
            offset += len(chunk) + 1
            continue
        total, found, values = surveyed if surveyed is not None else (chunk.count(b"\n") + 1, [], None)
        lines = _Lines(chunk, offset, total, values)
        offset += len(chunk) + 1
        done = 0
        for run in found:
            line = yield from _alone(scanner, lines, done, run[0], line)
            line, done = yield from _taken(runs, scanner, lines, offset, run, line)
        line = yield from _alone(scanner, lines, done, lines.total, line)
    return line


# --- the header, and the readers ---------------------------------------------------------------


def _read_line(stream: BinaryIO, path: str, line: int) -> bytes:
    """One line (with its newline, if any), read in 1 MiB pieces so a refused line costs at most the bound."""
    try:
        return _bounded_line(stream, path, line)
    except OSError as error:
        # SESSION-STORAGE-RECORD.4: the file was readable when it was opened (`formats.detect` read it first).
        raise Unread(error).refusal(path, line) from None


def _bounded_line(stream: BinaryIO, path: str, line: int) -> bytes:
    piece = stream.readline(_PIECE)
    # SESSION-STORAGE-RECORD.1: a record is its line without the newline, as every reader and writer measures it.
    if (len(piece) < _PIECE or piece.endswith(b"\n")) and len(piece) - piece.endswith(b"\n") <= MAX_RECORD_BYTES:
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
    if total - parts[-1].endswith(b"\n") > MAX_RECORD_BYTES:
        raise refuse(RECORD_SIZE, Kind.JSON, path, f"record at line {line} exceeds {MAX_RECORD_BYTES} bytes", line=line)
    return b"".join(parts)


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
            self._total = self._size()
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

    def progress(self) -> tuple[int, int]:
        """(bytes read, bytes in all): what a progress bar shows."""
        return (self._total if self._stream.closed else min(self._stream.tell(), self._total)), self._total

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
    """The committed records of a JSONL log, with its torn tail decided at the end; `runs` takes whole runs itself."""

    format = "jsonl"

    def __init__(self, path: Path, session_id: str | None = None, *, stream: BinaryIO | None = None,
                 runs: RunTaker | None = None) -> None:
        self.runs = runs
        super().__init__(path, session_id, stream=stream)

    def _open(self, session_id: str | None) -> FrozenDict:
        header, self._offset = read_header(self._stream, self._name, session_id)
        self.scanner = Scanner(self._name, committed_end=self._offset)
        return header

    def _records(self) -> Iterator[tuple[int | None, Json]]:
        tail: list[bytes] = []
        chunks = read_blocks(self._stream, tail)
        blocks = self.runs.surveyed(chunks) if self.runs is not None else parsed(chunks)
        try:
            line = yield from block_records(blocks, self.scanner, self._offset, self.runs)
        finally:
            close = getattr(blocks, "close", None)
            if close is not None:
                close()  # a surveyor pool behind the blocks is shut down with them
        # What was read is what a repair must still find (SESSION-STORAGE-WRITE.4).
        self.revision = self._revision(self._stream.tell())
        # SESSION-TORN-TAIL.1: a non-empty final fragment is an interrupted write.
        self.torn = self.scanner.finish(fragment_line=line + 1, fragment=True) if tail else self.scanner.finish()
