"""The zstd-framed JSONL variant (`session.jsonl.zstd`, notes §4.2), the upstream's default.

The file is a concatenation of independent, checksummed zstd frames: the header line alone in
the first, then one frame per durable batch. A crash can only leave the last frame short, so a
structural scan of frame boundaries (without decompressing) tells a torn final frame (EOF inside
it) from a corrupt one (bad magic, reserved bits, a failed checksum), and the complete records of
a torn frame are recovered rather than lost.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import zstandard

from sessionspec.envelope import Event
from sessionspec.errors import Kind, SpecViolation
from sessionspec.jsonvalue import FrozenDict, Json
from sessionspec.rules import define
from sessionspec.storage import durable
from sessionspec.storage.gate import HEADER_LINE, Scanner, TornTail, header_from_record, located, refuse
from sessionspec.storage.losslessparse import parse
from sessionspec.storage.records import as_events, checked_header, encode_batch, encode_line, header_record

FRAMES = define("SESSION-ZSTD-FRAMES.1", Kind.ENVELOPE, "the file is zstd frames; a bad magic number or reserved bit is corruption")
FIRST_FRAME = define("SESSION-ZSTD-FRAMES.2", Kind.HEADER, "the first frame holds exactly the header line")
COMPLETE_FRAME = define("SESSION-ZSTD-FRAMES.3", Kind.ENVELOPE,
                        "a complete frame has a content checksum, passes it and ends on a record boundary")
TORN_FRAME = define("SESSION-ZSTD-FRAMES.4", Kind.INTERNAL,
                    "a torn final frame's complete records are recovered; repair rewrites them, with the closers, as one frame")

MAGIC = b"\x28\xb5\x2f\xfd"
LEVEL = 3


@dataclass(frozen=True, slots=True)
class Frame:
    start: int
    end: int
    complete: bool


def scan_frames(data: bytes, path: str) -> list[Frame]:
    """SESSION-ZSTD-FRAMES.1: frame boundaries from the frame and block headers alone."""
    frames: list[Frame] = []
    pos = 0
    while pos < len(data):
        start = pos
        if len(data) - pos < 4 + 1:
            frames.append(Frame(start, len(data), False))
            break
        if data[pos:pos + 4] != MAGIC:
            raise refuse(FRAMES, Kind.ENVELOPE, path, f"corrupt Zstandard session log: bad frame magic at byte {pos}")
        descriptor = data[pos + 4]
        if descriptor & 0x08:
            raise refuse(FRAMES, Kind.ENVELOPE, path, f"corrupt Zstandard session log: reserved bit set at byte {pos + 4}")
        single_segment = bool(descriptor & 0x20)
        fcs_size = {0: 1 if single_segment else 0, 1: 2, 2: 4, 3: 8}[descriptor >> 6]
        dict_size = {0: 0, 1: 1, 2: 2, 3: 4}[descriptor & 0x03]
        checksum = 4 if descriptor & 0x04 else 0
        pos += 5 + (0 if single_segment else 1) + dict_size + fcs_size
        complete = False
        while pos + 3 <= len(data):
            block = int.from_bytes(data[pos:pos + 3], "little")
            last, kind, size = block & 1, (block >> 1) & 3, block >> 3
            if kind == 3:
                raise refuse(FRAMES, Kind.ENVELOPE, path, f"corrupt Zstandard session log: reserved block type at byte {pos}")
            pos += 3 + (1 if kind == 1 else size)
            if last:
                pos += checksum
                complete = pos <= len(data)
                break
        if not complete:
            frames.append(Frame(start, len(data), False))
            break
        frames.append(Frame(start, pos, True))
    return frames


def _decode_complete(data: bytes, frame: Frame, path: str) -> bytes:
    chunk = data[frame.start:frame.end]
    # .3 Only a checksummed frame can prove its own integrity.
    if not zstandard.get_frame_parameters(chunk).has_checksum:
        raise refuse(COMPLETE_FRAME, Kind.ENVELOPE, path, f"corrupt Zstandard session log: frame at byte {frame.start} has no checksum")
    try:
        decoder = zstandard.ZstdDecompressor().decompressobj()
        plain = decoder.decompress(chunk)
        if not decoder.eof:
            raise zstandard.ZstdError("frame did not end")
    except zstandard.ZstdError as error:
        raise refuse(COMPLETE_FRAME, Kind.ENVELOPE, path,
                     f"corrupt Zstandard session log: frame at byte {frame.start} fails to decode: {error}") from None
    return plain


def _recover(data: bytes, frame: Frame) -> bytes:
    """Whatever plaintext a torn frame yields; a decode failure just means nothing is recovered."""
    try:
        return zstandard.ZstdDecompressor().decompressobj().decompress(data[frame.start:frame.end])
    except zstandard.ZstdError:
        return b""


def compress(plain: bytes) -> bytes:
    return zstandard.ZstdCompressor(level=LEVEL, write_checksum=True, write_content_size=True).compress(plain)


class ZstdReader:
    """The committed records of a zstd-framed log; `torn` and `rewrite_from` are set once exhausted."""

    format = "jsonl.zstd"

    def __init__(self, path: Path, session_id: str | None = None) -> None:
        self.path = Path(path)
        self._name = str(path)
        self._data = self.path.read_bytes()
        self._frames = scan_frames(self._data, self._name)
        if not self._frames:
            raise refuse(HEADER_LINE, Kind.HEADER, self._name, "empty or header-less Zstandard session log", line=1)
        first = self._frames[0]
        plain = _decode_complete(self._data, first, self._name) if first.complete else b""
        # SESSION-ZSTD-FRAMES.2: the header frame is written and fsynced alone, before any event.
        if not first.complete or plain.count(b"\n") != 1 or not plain.endswith(b"\n"):
            raise refuse(FIRST_FRAME, Kind.HEADER, self._name,
                         "corrupt Zstandard session log: first frame is not exactly one header line", line=1)
        try:
            value = parse(plain[:-1])
        except SpecViolation as violation:
            raise located(violation, self._name, line=1) from None
        self.header: FrozenDict = header_from_record(value, self._name, jsonl=True, session_id=session_id)
        self.scanner = Scanner(self._name, committed_end=first.end)
        self.torn: TornTail | None = None
        self.rewrite_from: tuple[int, int] | None = None
        """(file offset, first seq) of the frame a repair rewrites from, when the tail is torn."""
        self.recovered_from: int | None = None
        """The first seq a repair rewrites (the events from it on were read from the rewritten frames)."""

    def records(self) -> Iterator[tuple[int | None, Json]]:
        line = 1
        frame_first_seq: list[tuple[Frame, int]] = []
        fragment = False
        for frame in self._frames[1:]:
            frame_first_seq.append((frame, self.scanner.expected))
            if frame.complete:
                plain = _decode_complete(self._data, frame, self._name)
                # .3 A batch frame holds whole records: a partial one means the writer itself was wrong.
                if plain and not plain.endswith(b"\n"):
                    raise refuse(COMPLETE_FRAME, Kind.ENVELOPE, self._name,
                                 "corrupt Zstandard session log: complete frame contains a torn JSONL record",
                                 line=line + plain.count(b"\n") + 1)
            else:
                # SESSION-ZSTD-FRAMES.4: EOF inside the frame; recover the records it completed.
                plain = _recover(self._data, frame)
            lines = plain.split(b"\n")
            for raw in lines[:-1]:
                line += 1
                end = frame.end if frame.complete else frame.start
                before = self.scanner.pending
                for record in self.scanner.feed(line, raw, end):
                    yield line, record
                if before is None and self.scanner.pending is not None and self.rewrite_from is None:
                    self.rewrite_from = (frame.start, frame_first_seq[-1][1])
            if not frame.complete:
                if self.rewrite_from is None:
                    self.rewrite_from = (frame.start, frame_first_seq[-1][1])
                fragment = True
        self.torn = self.scanner.finish(fragment_line=line + 1, fragment=fragment)
        if self.torn is not None and self.rewrite_from is not None:
            offset, seq = self.rewrite_from
            self.torn = TornTail(self.torn.line, self.torn.seq, offset, self.torn.reason, self.torn.rule)
            self.recovered_from = seq
        else:
            self.rewrite_from = None

    def close(self) -> None:
        pass


class ZstdWriter:
    """Appends one checksummed frame per durable batch."""

    def __init__(self, path: Path, next_seq: int, *, packed: bool = True) -> None:
        self.path = Path(path)
        self.next_seq = next_seq
        self.packed = packed

    @classmethod
    def create(cls, path: Path, header: FrozenDict | dict[str, Json], events: Iterable[Event | Json] = (),
               *, packed: bool = True) -> ZstdWriter:
        valid = checked_header(header)
        batch = as_events(events, 0)
        content = compress(encode_line(header_record(valid)))
        if batch:
            content += compress(encode_batch(batch, packed=packed))
        durable.publish(Path(path), content)
        return cls(path, len(batch), packed=packed)

    def append(self, events: Iterable[Event | Json]) -> None:
        batch = as_events(events, self.next_seq)
        if not batch:
            return
        durable.append(self.path, compress(encode_batch(batch, packed=self.packed)))
        self.next_seq += len(batch)

    def commit_repair(self, torn: TornTail | None, closers: list[Event], recovered: list[Event]) -> None:
        """SESSION-ZSTD-FRAMES.4: truncate to the torn frame's start; the recovered events and the closers become one frame."""
        if torn is not None:
            durable.truncate(self.path, torn.offset)
        self.append([*recovered, *closers])
