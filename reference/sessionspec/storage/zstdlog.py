"""The zstd-framed JSONL variant (`session.jsonl.zstd`, notes §4.2), the upstream's default.

The file is a concatenation of independent, checksummed zstd frames: the header line alone in
the first, then one frame per durable batch. A crash can only leave the last frame short, so a
structural scan of frame boundaries (without decompressing) tells a torn final frame (EOF inside
it) from a corrupt one (bad magic, reserved bits, a failed checksum), and the complete records of
a torn frame are recovered rather than lost.

Reading streams: one structural pass over the frame and block headers (seeking past block
contents), then one frame at a time, fed to the decoder one block at a time (a block decodes to
at most 128 KiB). A frame is decoded whole before any of its records is trusted; its plaintext is
kept if it fits PLAIN_BUFFER and decoded a second time otherwise. So memory is bounded by
PLAIN_BUFFER plus the longest record (itself bounded by SESSION-STORAGE-RECORD.1), never by the
file or by one large frame.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import zstandard

from sessionspec.errors import Kind, SpecViolation
from sessionspec.jsonvalue import FrozenDict, Json
from sessionspec.live.fasttext import read_line
from sessionspec.rules import define
from sessionspec.storage import gate
from sessionspec.storage.formats import ZSTD_MAGIC
from sessionspec.storage.gate import Scanner, TornTail, header_from_record, located, may_end_turn, refuse
from sessionspec.storage.jsonl import JsonlWriter
from sessionspec.storage.jsonlread import FileReader

FRAMES = define("SESSION-ZSTD-FRAMES.1", Kind.ENVELOPE, "the file is zstd frames; a bad magic number or reserved bit is corruption")
FIRST_FRAME = define("SESSION-ZSTD-FRAMES.2", Kind.HEADER, "the first frame holds exactly the header line")
COMPLETE_FRAME = define("SESSION-ZSTD-FRAMES.3", Kind.ENVELOPE,
                        "a complete frame has a content checksum, passes it and ends on a record boundary")
TORN_FRAME = define("SESSION-ZSTD-FRAMES.4", Kind.INTERNAL,
                    "a torn final frame's complete records are recovered; repair rewrites them, with the closers, as one frame")
FRAME_BOUNDS = define("SESSION-ZSTD-FRAMES.5", Kind.ENVELOPE,
                      "a frame decodes to at most 65,536 records and 256 MiB; writers split larger batches into frames")

MAGIC = ZSTD_MAGIC
LEVEL = 3
PLAIN_BUFFER = 4 << 20
"""A frame whose plaintext fits is decoded once and kept for splitting; a larger one is decoded twice."""
MAX_FRAME_RECORDS = 1 << 16
MAX_FRAME_BYTES = 256 << 20
"""SESSION-ZSTD-FRAMES.5: a few bytes of zstd decode to 128 KiB, so without these a 16 KB file holds 100 MB of
empty records; with them a frame costs at most a bounded decode, whatever its compressed size."""


@dataclass(frozen=True, slots=True)
class Frame:
    start: int
    end: int
    complete: bool
    header: int
    """The length of the frame header (magic, descriptor, window, dictionary id, content size)."""
    checksum: bool


def _block(raw: bytes) -> tuple[bool, int, int]:
    """(last, block type, size field) of a 3-byte block header."""
    value = int.from_bytes(raw, "little")
    return bool(value & 1), (value >> 1) & 3, value >> 3


def read_frame(stream: BinaryIO, start: int, size: int, path: str) -> Frame:
    """SESSION-ZSTD-FRAMES.1: the frame at `start`, from the frame and block headers alone.

    `size` is the file's size when the reader opened it: bytes appended since belong to another read.
    """
    if size - start < 4 + 1:
        return Frame(start, size, False, size - start, False)
    stream.seek(start)
    head = stream.read(5)
    if head[:4] != MAGIC:
        raise refuse(FRAMES, Kind.ENVELOPE, path, f"corrupt Zstandard session log: bad frame magic at byte {start}")
    descriptor = head[4]
    if descriptor & 0x08:
        raise refuse(FRAMES, Kind.ENVELOPE, path, f"corrupt Zstandard session log: reserved bit set at byte {start + 4}")
    single_segment = bool(descriptor & 0x20)
    fcs_size = {0: 1 if single_segment else 0, 1: 2, 2: 4, 3: 8}[descriptor >> 6]
    dict_size = {0: 0, 1: 1, 2: 2, 3: 4}[descriptor & 0x03]
    checksum = 4 if descriptor & 0x04 else 0
    header = 5 + (0 if single_segment else 1) + dict_size + fcs_size
    pos = start + header
    while pos + 3 <= size:
        stream.seek(pos)
        last, kind, length = _block(stream.read(3))
        if kind == 3:
            raise refuse(FRAMES, Kind.ENVELOPE, path, f"corrupt Zstandard session log: reserved block type at byte {pos}")
        pos += 3 + (1 if kind == 1 else length)
        if last:
            pos += checksum
            if pos <= size:
                return Frame(start, pos, True, header, bool(checksum))
            break
    return Frame(start, size, False, min(header, size - start), bool(checksum))


def frames(stream: BinaryIO, size: int, path: str, start: int = 0) -> Iterator[Frame]:
    """The frames from `start` on, one at a time; the last is torn when EOF falls inside it."""
    while start < size:
        frame = read_frame(stream, start, size, path)
        yield frame
        if not frame.complete:
            return
        start = frame.end


def _pieces(stream: BinaryIO, frame: Frame) -> Iterator[bytes]:
    """The frame's bytes as the decoder is fed them: its header, then one block at a time (the last with the checksum).

    Feeding whole blocks bounds each decode step's output: a 4-byte RLE block alone expands to 128 KiB.
    """
    stream.seek(frame.start)
    yield stream.read(frame.header)
    pos = frame.start + frame.header
    while pos < frame.end:
        raw = stream.read(min(3, frame.end - pos))
        last, kind, length = _block(raw)
        rest = frame.end - pos - len(raw)
        piece = raw + stream.read(rest if last else min(rest, 1 if kind == 1 else length))
        yield piece
        pos += len(piece)


def _plain(stream: BinaryIO, frame: Frame, dctx: zstandard.ZstdDecompressor) -> Iterator[bytes]:
    """The frame's plaintext in block-sized pieces; raises ZstdError (a complete frame must also end)."""
    decoder = dctx.decompressobj()
    for piece in _pieces(stream, frame):
        plain = decoder.decompress(piece)
        if plain:
            yield plain
    if frame.complete and not decoder.eof:
        raise zstandard.ZstdError("frame did not end")


@dataclass(frozen=True, slots=True)
class Decoded:
    """A frame decoded once: its plaintext pieces if they fit the buffer (else None), its newlines, its ending."""

    kept: list[bytes] | None
    newlines: int
    ends_line: bool


def decode(stream: BinaryIO, frame: Frame, path: str, keep: int, dctx: zstandard.ZstdDecompressor, *,
           line: int | None = None) -> Decoded:
    """SESSION-ZSTD-FRAMES.3 and .4: the whole frame decoded, before any of its records is trusted.

    `line` is the line of the frame's first record, for the refusals to name.
    """
    # .3 Only a checksummed frame can prove its own integrity.
    if frame.complete and not frame.checksum:
        raise refuse(COMPLETE_FRAME, Kind.ENVELOPE, path, f"corrupt Zstandard session log: frame at byte {frame.start} has no checksum", line=line)
    kept: list[bytes] = []
    total = newlines = 0
    last = b"\n"
    try:
        for piece in _plain(stream, frame, dctx):
            total += len(piece)
            newlines += piece.count(b"\n")
            last = piece[-1:]
            if total <= keep:
                kept.append(piece)
            if total > MAX_FRAME_BYTES or newlines > MAX_FRAME_RECORDS:
                # .5 Bounded before the rest is decoded: a torn frame this large recovers nothing.
                if not frame.complete:
                    return Decoded([], 0, True)
                raise refuse(FRAME_BOUNDS, Kind.ENVELOPE, path,
                             f"corrupt Zstandard session log: frame at byte {frame.start} decodes to more than "
                             f"{MAX_FRAME_RECORDS} records or {MAX_FRAME_BYTES} bytes", line=line)
    except zstandard.ZstdError as error:
        if not frame.complete:
            # .4 A torn frame that fails to decode just recovers nothing.
            return Decoded([], 0, True)
        raise refuse(COMPLETE_FRAME, Kind.ENVELOPE, path,
                     f"corrupt Zstandard session log: frame at byte {frame.start} fails to decode: {error}", line=line) from None
    return Decoded(kept if total <= keep else None, newlines, last == b"\n")


def _again(stream: BinaryIO, frame: Frame, path: str, dctx: zstandard.ZstdDecompressor, line: int) -> Iterator[bytes]:
    """The second decode of a frame too large to keep; it decoded once, so a failure means the file changed."""
    try:
        yield from _plain(stream, frame, dctx)
    except zstandard.ZstdError as error:
        raise refuse(COMPLETE_FRAME, Kind.ENVELOPE, path,
                     f"corrupt Zstandard session log: frame at byte {frame.start} changed while it was read: {error}",
                     line=line) from None


def lines(pieces: Iterable[bytes]) -> Iterator[bytes]:
    """The newline-terminated records of a plaintext, without the newline; an unterminated rest is dropped.

    A record longer than the bound is cut one byte past it: the reader still refuses it
    (SESSION-STORAGE-RECORD.1), and memory stays bounded by the bound.
    """
    carry: list[bytes] = []
    held = 0
    for piece in pieces:
        parts = piece.split(b"\n")
        for part in parts[:-1]:
            if carry:
                carry.append(part)
                yield b"".join(carry)[:gate.MAX_RECORD_BYTES + 1]
                carry, held = [], 0
            else:
                yield part
        if parts[-1] and held <= gate.MAX_RECORD_BYTES:
            carry.append(parts[-1])
            held += len(parts[-1])


def compress(plain: bytes) -> bytes:
    return zstandard.ZstdCompressor(level=LEVEL, write_checksum=True, write_content_size=True).compress(plain)


class ZstdReader(FileReader):
    """The committed records of a zstd-framed log; `torn` and `rewrite_from` are set once exhausted."""

    format = "jsonl.zstd"

    def __init__(self, path: Path, session_id: str | None = None, *, stream: BinaryIO | None = None) -> None:
        super().__init__(path, session_id, stream=stream)
        self.rewrite_from: tuple[int, int] | None = None
        """(file offset, first seq) of the frame a repair rewrites from, when the tail is torn."""
        self.recovered_from: int | None = None
        """The first seq a repair rewrites (the events from it on were read from the rewritten frames)."""

    def _open(self, session_id: str | None) -> FrozenDict:
        self._dctx = zstandard.ZstdDecompressor()
        """One decompression context for every frame, used one frame at a time."""
        # Only the file as opened is read: what it is now is what a repair must still find (SESSION-STORAGE-WRITE.4).
        self._length = self._size()
        self.revision = self._revision(self._length)
        first: Frame | None = None
        # SESSION-ZSTD-FRAMES.1: the whole file's structure is checked before anything is decoded.
        for frame in frames(self._stream, self._length, self._name):
            first = first or frame
        if first is None:
            raise refuse(gate.HEADER_LINE, Kind.HEADER, self._name, "empty or header-less Zstandard session log", line=1)
        decoded = Decoded([], 0, False)
        if first.complete:
            decoded = decode(self._stream, first, self._name, gate.MAX_RECORD_BYTES + 1, self._dctx, line=1)
        # SESSION-ZSTD-FRAMES.2: the header frame is written and fsynced alone, before any event.
        if not first.complete or decoded.newlines != 1 or not decoded.ends_line:
            raise refuse(FIRST_FRAME, Kind.HEADER, self._name,
                         "corrupt Zstandard session log: first frame is not exactly one header line", line=1)
        if decoded.kept is None:
            raise refuse(gate.RECORD_SIZE, Kind.JSON, self._name, f"header record exceeds {gate.MAX_RECORD_BYTES} bytes", line=1)
        try:
            value = read_line(b"".join(decoded.kept)[:-1])
        except SpecViolation as violation:
            raise located(violation, self._name, line=1) from None
        self.scanner = Scanner(self._name, committed_end=first.end)
        return header_from_record(value, self._name, jsonl=True, session_id=session_id)

    def _frame_lines(self, frame: Frame, line: int) -> tuple[Iterator[bytes], int]:
        """The frame's records, and how many; none where a pending defect makes them irrelevant."""
        decoded = decode(self._stream, frame, self._name, PLAIN_BUFFER, self._dctx, line=line + 1)
        # SESSION-ZSTD-FRAMES.3: a batch frame holds whole records: a partial one means the writer itself was wrong.
        if frame.complete and not decoded.ends_line:
            raise refuse(COMPLETE_FRAME, Kind.ENVELOPE, self._name,
                         "corrupt Zstandard session log: complete frame contains a torn JSONL record",
                         line=line + decoded.newlines + 1)
        if self.scanner.pending is not None and decoded.kept is not None and not may_end_turn(b"".join(decoded.kept)):
            # SESSION-TORN-TAIL.2: after a defect only a turn/end matters, and none can be in this frame.
            return iter(()), decoded.newlines
        kept = decoded.kept if decoded.kept is not None else _again(self._stream, frame, self._name, self._dctx, line + 1)
        return lines(kept), 0

    def _records(self) -> Iterator[tuple[int | None, Json]]:
        line = 1
        fragment = False
        for frame in frames(self._stream, self._length, self._name, self.scanner.committed_end):
            first_seq = self.scanner.expected
            # SESSION-ZSTD-FRAMES.4: a torn frame's records are recovered, but its bytes are not committed.
            end = frame.end if frame.complete else frame.start
            records, passed = self._frame_lines(frame, line)
            line += passed
            for raw in records:
                line += 1
                if len(raw) > gate.MAX_RECORD_BYTES:
                    # SESSION-STORAGE-RECORD.1: refused at its line, as the JSONL reader refuses it (cut at the bound).
                    raise refuse(gate.RECORD_SIZE, Kind.JSON, self._name,
                                 f"record at line {line} exceeds {gate.MAX_RECORD_BYTES} bytes", line=line)
                before = self.scanner.pending
                for record in self.scanner.feed(line, raw, end):
                    yield line, record
                if before is None and self.scanner.pending is not None and self.rewrite_from is None:
                    self.rewrite_from = (frame.start, first_seq)
            if not frame.complete:
                if self.rewrite_from is None:
                    self.rewrite_from = (frame.start, first_seq)
                fragment = True
        self.torn = self.scanner.finish(fragment_line=line + 1, fragment=fragment)
        if self.torn is not None and self.rewrite_from is not None:
            offset, seq = self.rewrite_from
            self.torn = TornTail(self.torn.line, self.torn.seq, offset, self.torn.reason, self.torn.rule)
            self.recovered_from = seq
        else:
            self.rewrite_from = None


class ZstdWriter(JsonlWriter):
    """Appends checksummed frames: one per durable batch, or several where a batch exceeds a frame's bounds.

    SESSION-ZSTD-FRAMES.4: a repair truncates to the torn frame's start, and the recovered events
    and the closers become new frames (the JSONL writer's repair, with this `frame`).
    """

    reader = ZstdReader

    @staticmethod
    def frame(plain: bytes) -> bytes:
        """SESSION-ZSTD-FRAMES.2 and .5: the header line is one frame; a batch is as few frames as the bounds allow.

        The frames of one batch are written and fsynced together, so a crash may leave some of
        them, which is what a crash may leave of any unacknowledged batch.
        """
        frames_out: list[bytes] = []
        start = 0
        while start < len(plain):
            end = _frame_end(plain, start)
            frames_out.append(compress(plain[start:end]))
            start = end
        return b"".join(frames_out)


def _frame_end(plain: bytes, start: int) -> int:
    """The end of the longest run of whole lines from `start` within MAX_FRAME_RECORDS lines and MAX_FRAME_BYTES."""
    end = start
    for _ in range(MAX_FRAME_RECORDS):
        at = plain.find(b"\n", end, start + MAX_FRAME_BYTES)
        if at < 0:
            break
        end = at + 1
    # A record is at most MAX_RECORD_BYTES (SESSION-STORAGE-RECORD.1), so a frame always holds one.
    return end if end > start else len(plain)


def decode_blob(blob: bytes, limit: int) -> bytes | None:
    """One complete zstd frame that is all of `blob`, decoded a block at a time; None once it exceeds `limit` bytes.

    For SQLite's compressed `data` (SESSION-SQLITE-ROW.2): a 94 KB BLOB can decode to a GiB, so
    the decode stops at the bound instead of finishing. Raises ZstdError when `blob` is not
    exactly one complete frame.
    """
    stream = io.BytesIO(blob)
    try:
        frame = read_frame(stream, 0, len(blob), "data")
    except SpecViolation as violation:
        raise zstandard.ZstdError(violation.message) from None
    if not frame.complete or frame.end != len(blob):
        raise zstandard.ZstdError("not exactly one complete frame")
    pieces: list[bytes] = []
    total = 0
    for piece in _plain(stream, frame, zstandard.ZstdDecompressor()):
        total += len(piece)
        if total > limit:
            return None
        pieces.append(piece)
    return b"".join(pieces)
