"""The zstd-framed JSONL variant (`session.jsonl.zstd`, notes §4.2), the upstream's default.

The file is a concatenation of independent, checksummed zstd frames: the header line alone in
the first, then one frame per durable batch. A crash can only leave the last frame short, so a
structural scan of frame boundaries (without decompressing) tells a torn final frame (EOF inside
it) from a corrupt one (bad magic, reserved bits, a failed checksum), and the complete records of
a torn frame are recovered rather than lost. The frames themselves are `zstdframes`.

Reading streams: one structural pass over the frame and block headers, then one frame at a time,
decoded one block at a time. A frame is decoded whole before any of its records is trusted; its
plaintext is kept if it fits PLAIN_BUFFER and decoded a second time otherwise. So memory is
bounded by PLAIN_BUFFER plus the longest record (itself bounded by SESSION-STORAGE-RECORD.1),
never by the file or by one large frame; and what the whole file decodes to is spent from one
budget set by its size (SESSION-STORAGE-RECORD.3).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

import zstandard

from sessionspec.errors import Kind, SpecViolation
from sessionspec.jsonvalue import FrozenDict, Json
from sessionspec.live.fasttext import read_line
from sessionspec.rules import define
from sessionspec.storage import gate, zstdframes
from sessionspec.storage.budget import Budget, Spent, affordable, refusal
from sessionspec.storage.gate import Scanner, TornTail, header_from_record, located, may_end_turn, refuse
from sessionspec.storage.jsonl import JsonlWriter
from sessionspec.storage.jsonlread import FileReader
from sessionspec.storage.zstdframes import (
    COMPLETE_FRAME,
    Decoded,
    Frame,
    again,
    compress,
    decode,
    frames,
    lines,
    raw_frame,
)

FIRST_FRAME = define("SESSION-ZSTD-FRAMES.2", Kind.HEADER, "the first frame holds exactly the header line")
TORN_FRAME = define("SESSION-ZSTD-FRAMES.4", Kind.INTERNAL,
                    "a torn final frame's complete records are recovered; repair rewrites them, with the closers, as one frame")

PLAIN_BUFFER = 4 << 20
"""A frame whose plaintext fits is decoded once and kept for splitting; a larger one is decoded twice."""
"""SESSION-ZSTD-FRAMES.5, as the writer splits a batch (a test may lower them to see it split)."""


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
        # SESSION-STORAGE-RECORD.3: one budget for everything the file decodes to, the header frame included.
        self.budget = Budget.of(self._length)
        decoded = Decoded([], 0, False)
        if first.complete:
            # The header is one record: its frame is decoded no further than the record bound.
            bound = gate.MAX_RECORD_BYTES + 1
            decoded = decode(self._stream, first, self._name, bound, self._dctx, self.budget, line=1, stop=bound)
        if decoded.kept is None and decoded.newlines == 0:
            # SESSION-STORAGE-RECORD.1: the header line passes the bound before it ends.
            raise refuse(gate.RECORD_SIZE, Kind.JSON, self._name, f"header record exceeds {gate.MAX_RECORD_BYTES} bytes", line=1)
        # SESSION-ZSTD-FRAMES.2: the header frame is written and fsynced alone, before any event.
        if decoded.kept is None or decoded.newlines != 1 or not decoded.ends_line:
            raise refuse(FIRST_FRAME, Kind.HEADER, self._name,
                         "corrupt Zstandard session log: first frame is not exactly one header line", line=1)
        try:
            value = read_line(b"".join(decoded.kept)[:-1])
        except SpecViolation as violation:
            raise located(violation, self._name, line=1) from None
        self.scanner = Scanner(self._name, committed_end=first.end)
        return header_from_record(value, self._name, jsonl=True, session_id=session_id)

    def _frame_lines(self, frame: Frame, line: int) -> tuple[Iterator[bytes], int]:
        """The frame's records, and how many; none where a pending defect makes them irrelevant."""
        decoded = decode(self._stream, frame, self._name, PLAIN_BUFFER, self._dctx, self.budget, line=line + 1)
        # SESSION-ZSTD-FRAMES.3: a batch frame holds whole records: a partial one means the writer itself was wrong.
        if frame.complete and not decoded.ends_line:
            raise refuse(COMPLETE_FRAME, Kind.ENVELOPE, self._name,
                         "corrupt Zstandard session log: complete frame contains a torn JSONL record",
                         line=line + decoded.newlines + 1)
        if self.scanner.pending is not None and decoded.kept is not None and not may_end_turn(b"".join(decoded.kept)):
            # SESSION-TORN-TAIL.2: after a defect only a turn/end matters, and none can be in this frame.
            return iter(()), decoded.newlines
        kept = decoded.kept if decoded.kept is not None else again(self._stream, frame, self._name, self._dctx, line + 1)
        return lines(kept), 0

    def _spend_members(self, more: int, line: int) -> None:
        """SESSION-STORAGE-RECORD.3: a packed row is as many records as its members (its line is spent already)."""
        try:
            self.budget.spend(records=more)
        except Spent as spent:
            raise refusal(spent, self._name, line=line) from None

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
                found = self.scanner.feed(line, raw, end)
                if len(found) > 1:
                    self._spend_members(len(found) - 1, line)
                for record in found:
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
    def frame(plain: bytes, records: int) -> bytes:
        """SESSION-ZSTD-FRAMES.2 and .5: the header line is one frame; a batch is as few frames as the bounds allow.

        The frames of one batch are written and fsynced together, so a crash may leave some of
        them, which is what a crash may leave of any unacknowledged batch. SESSION-STORAGE-RECORD.3:
        a batch (`records` events: a packed row counts its members, as the reader counts them) that
        compresses past the budget's ratios is stored in raw frames instead, so that what a writer
        acknowledges never makes the log decode to more than its reader's budget.
        """
        pieces: list[bytes] = []
        start = 0
        while start < len(plain):
            end = _frame_end(plain, start)
            pieces.append(plain[start:end])
            start = end
        compressed = [compress(piece) for piece in pieces]
        if affordable(len(plain), records, sum(map(len, compressed))):
            return b"".join(compressed)
        return b"".join(raw_frame(piece, frame) for piece, frame in zip(pieces, compressed, strict=True))


def _frame_end(plain: bytes, start: int) -> int:
    """The end of the longest run of whole lines from `start` within the frame bounds (`zstdframes`, the one home of
    SESSION-ZSTD-FRAMES.5's constants: the writer splits by what the reader refuses)."""
    end = start
    for _ in range(zstdframes.MAX_FRAME_RECORDS):
        at = plain.find(b"\n", end, start + zstdframes.MAX_FRAME_BYTES)
        if at < 0:
            break
        end = at + 1
    # A record is at most MAX_RECORD_BYTES (SESSION-STORAGE-RECORD.1), so a frame always holds one.
    return end if end > start else len(plain)
