"""zstd frames as a log reads them: their structure from their headers, and a decode bounded at every step.

The file is a concatenation of independent, checksummed zstd frames. A structural pass over the
frame and block headers (seeking past block contents) finds every frame and tells a torn final
frame (EOF inside it) from a corrupt one (bad magic, reserved bits or block types) before
anything is decoded. A frame is then fed to the decoder one block at a time, so that each step's
output is bounded (a 4-byte RLE block decodes to 128 KiB), and the decode stops as soon as a
bound is passed: the frame's (SESSION-ZSTD-FRAMES.5), the record's, or the file's budget
(SESSION-STORAGE-RECORD.3). Every read is of bytes the file had when it was opened; one that
comes back short means the file shrank under the reader (SESSION-STORAGE-RECORD.4).
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import BinaryIO

import zstandard

from sessionspec.errors import Kind, SpecViolation
from sessionspec.rules import define
from sessionspec.storage import gate
from sessionspec.storage.budget import Budget, Spent, refusal
from sessionspec.storage.formats import CHANGED, ZSTD_MAGIC
from sessionspec.storage.gate import refuse

FRAMES = define("SESSION-ZSTD-FRAMES.1", Kind.ENVELOPE, "the file is zstd frames; a bad magic number or reserved bit is corruption")
COMPLETE_FRAME = define("SESSION-ZSTD-FRAMES.3", Kind.ENVELOPE,
                        "a complete frame has a content checksum, passes it and ends on a record boundary")
FRAME_BOUNDS = define("SESSION-ZSTD-FRAMES.5", Kind.ENVELOPE,
                      "a frame decodes to at most 65,536 records and 256 MiB; writers split larger batches into frames")

MAGIC = ZSTD_MAGIC
LEVEL = 3
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


class Shrunk(Exception):
    """A read came back short of the size the file had when it was opened, or failed (SESSION-STORAGE-RECORD.4)."""


def _exactly(stream: BinaryIO, size: int) -> bytes:
    """`size` bytes, which the file had when it was opened; fewer mean it shrank since, or cannot be read."""
    try:
        data = stream.read(size)
    except OSError as error:
        raise Shrunk(f"a read failed: {error.strerror or error}") from None
    if len(data) != size:
        raise Shrunk("the log shrank while it was read")
    return data


def _block(raw: bytes) -> tuple[bool, int, int]:
    """(last, block type, size field) of a 3-byte block header."""
    value = int.from_bytes(raw, "little")
    return bool(value & 1), (value >> 1) & 3, value >> 3


def read_frame(stream: BinaryIO, start: int, size: int, path: str) -> Frame:
    """SESSION-ZSTD-FRAMES.1: the frame at `start`, from the frame and block headers alone.

    `size` is the file's size when the reader opened it: bytes appended since belong to another read.
    """
    try:
        return _read_frame(stream, start, size, path)
    except Shrunk as shrunk:
        # SESSION-STORAGE-RECORD.4: the structure read at open no longer holds.
        raise refuse(CHANGED, Kind.ENVELOPE, path, f"{shrunk} (a frame at byte {start}, of the {size} bytes it had)") from None


def _read_frame(stream: BinaryIO, start: int, size: int, path: str) -> Frame:
    if size - start < 4 + 1:
        return Frame(start, size, False, size - start, False)
    stream.seek(start)
    head = _exactly(stream, 5)
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
        last, kind, length = _block(_exactly(stream, 3))
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
    yield _exactly(stream, frame.header)
    pos = frame.start + frame.header
    while pos < frame.end:
        raw = _exactly(stream, min(3, frame.end - pos))
        last, kind, length = _block(raw)
        rest = frame.end - pos - len(raw)
        piece = raw + _exactly(stream, rest if last else min(rest, 1 if kind == 1 else length))
        yield piece
        pos += len(piece)


def plaintext(stream: BinaryIO, frame: Frame, dctx: zstandard.ZstdDecompressor) -> Iterator[bytes]:
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


def decode(stream: BinaryIO, frame: Frame, path: str, keep: int, dctx: zstandard.ZstdDecompressor, budget: Budget, *,
           line: int | None = None, stop: int | None = None) -> Decoded:
    """SESSION-ZSTD-FRAMES.3 and .4: the whole frame decoded, before any of its records is trusted.

    `line` is the line of the frame's first record, for the refusals to name. What the frame
    decodes to is spent from the log's `budget` as it comes (SESSION-STORAGE-RECORD.3). With
    `stop`, the decode ends once the plaintext passes it, unkept, counting the newlines within
    `stop` only (the header frame: one record, which must end within the record bound).
    """
    # .3 Only a checksummed frame can prove its own integrity.
    if frame.complete and not frame.checksum:
        raise refuse(COMPLETE_FRAME, Kind.ENVELOPE, path, f"corrupt Zstandard session log: frame at byte {frame.start} has no checksum", line=line)
    kept: list[bytes] = []
    total = newlines = 0
    last = b"\n"
    try:
        for piece in plaintext(stream, frame, dctx):
            total += len(piece)
            found = piece.count(b"\n")
            newlines += found
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
            if stop is not None and total > stop:
                # Stopped past `stop`: only the newlines within it count (whether the first line ended in time).
                return Decoded(None, newlines - piece.count(b"\n", stop - (total - len(piece))), False)
            # SESSION-STORAGE-RECORD.3: the file's budget, spent as the frame decodes.
            budget.spend(len(piece), found)
    except zstandard.ZstdError as error:
        if not frame.complete:
            # .4 A torn frame that fails to decode just recovers nothing.
            return Decoded([], 0, True)
        raise refuse(COMPLETE_FRAME, Kind.ENVELOPE, path,
                     f"corrupt Zstandard session log: frame at byte {frame.start} fails to decode: {error}", line=line) from None
    except Spent as spent:
        raise refusal(spent, path, line=line) from None
    except Shrunk as shrunk:
        raise refuse(CHANGED, Kind.ENVELOPE, path, f"{shrunk} (the frame at byte {frame.start})", line=line) from None
    return Decoded(kept if total <= keep else None, newlines, last == b"\n")


def again(stream: BinaryIO, frame: Frame, path: str, dctx: zstandard.ZstdDecompressor, line: int) -> Iterator[bytes]:
    """The second decode of a frame too large to keep; it decoded once, so a failure means the file changed."""
    try:
        yield from plaintext(stream, frame, dctx)
    except (zstandard.ZstdError, Shrunk) as error:
        # SESSION-STORAGE-RECORD.4: it decoded once, so the file changed while it was read.
        raise refuse(CHANGED, Kind.ENVELOPE, path,
                     f"the frame at byte {frame.start} changed while it was read: {error}", line=line) from None


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


RAW_BLOCK = 128 << 10
"""The largest block of a raw frame (Block_Maximum_Size, for the 128 KiB window the frame declares)."""
RAW_DESCRIPTOR = bytes([0xC4, 0x38])
"""Frame header descriptor (an 8-byte content size, a checksum, not single-segment), then a 128 KiB window."""


def raw_frame(plain: bytes, compressed: bytes) -> bytes:
    """`plain` as one zstd frame of raw (stored) blocks, with the content checksum of its `compressed` frame.

    The writer's way to keep SESSION-STORAGE-RECORD.3 on data that compresses too well: a raw frame
    is as large as its plaintext, so it holds the budget's ratios by construction, and it is a
    standard frame every zstd decoder reads (a small window, so none needs more memory than a
    block). The checksum is the low 32 bits of the plaintext's XXH64, whichever way the blocks are
    stored, so it is taken from the compressed frame of the same plaintext (.3 requires one).
    """
    blocks: list[bytes | memoryview] = [MAGIC, RAW_DESCRIPTOR, len(plain).to_bytes(8, "little")]
    view = memoryview(plain)  # the blocks are views of the plaintext, copied once, by the join
    start = 0
    while True:
        piece = view[start:start + RAW_BLOCK]
        start += RAW_BLOCK
        last = start >= len(plain)
        blocks += [(len(piece) << 3 | last).to_bytes(3, "little"), piece]
        if last:
            break
    blocks.append(compressed[-4:])
    return b"".join(blocks)


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
    for piece in plaintext(stream, frame, zstandard.ZstdDecompressor()):
        total += len(piece)
        if total > limit:
            return None
        pieces.append(piece)
    return b"".join(pieces)
