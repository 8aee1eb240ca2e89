"""What a compressed log may decode to: a budget set by the size of the file (SESSION-STORAGE-RECORD.3).

A zstd frame costs a few bytes and decodes to up to 256 MiB and 65,536 records
(SESSION-ZSTD-FRAMES.5), a compressed SQLite `data` BLOB to up to 64 MiB (SESSION-STORAGE-RECORD.1),
and a packed row of a few dozen bytes to 65,536 events (SESSION-CHUNK-ROWS.8): each bound holds
for one frame, one BLOB, one row. None holds for the file: a 90 KB zstd log of 1,000 frames, each
within its bounds, is 65 million records, and kept every tool busy for minutes. So a reader
spends what a log decodes to out of one budget for the whole file, proportional to its size,
and stops the moment it is spent.

The constants come from the compression the benchmarks' own logs reach (`sessionspec bench`
workloads written through the zstd and SQLite writers; `benchmarks/compression.py` measures
them): at most 8.5 bytes of plaintext per byte of file (a whole log in one frame), at most 0.11
records per byte (a packed row counted as its members). PLAIN_PER_BYTE and RECORDS_PER_BYTE leave
margins of 15 and 18 times over those (3.7 over a synthetic stream of one-token deltas drawn from
ten words, denser than any model writes); the floors (one frame's bounds) keep a small log from
ever being refused by the ratio alone.

A JSONL log keeps the budget by construction: its plaintext is the file, a record is at least
its newline, a packed member at least five bytes. So only the zstd and SQLite readers spend one.

Writers keep it too, whatever they are given (`affordable`): every zstd batch and every compressed
SQLite BLOB holds the ratio on its own, and is stored uncompressed otherwise (raw zstd blocks, a
TEXT column), where the ratio holds by construction as in JSONL. The file's plaintext and records
are the sums of its parts, so a log a writer acknowledged always loads, however large and however
compressible; the floors are for logs of other writers, which may not keep the ratio.
"""

from __future__ import annotations

from dataclasses import dataclass

from sessionspec.errors import Kind, SpecViolation
from sessionspec.rules import define

EXPANSION = define("SESSION-STORAGE-RECORD.3", Kind.ENVELOPE,
                   "a compressed log decodes to at most 128 bytes and 2 records per byte of the file "
                   "(at least 256 MiB and 65,536 records); the read stops and refuses once either is passed")

PLAIN_PER_BYTE = 128
RECORDS_PER_BYTE = 2
PLAIN_FLOOR = 256 << 20
RECORDS_FLOOR = 1 << 16
"""The floors are one frame's bounds (SESSION-ZSTD-FRAMES.5): a log no larger than one full frame always fits, so the
file's bound never refuses what the frame's allows in one frame, and a record at its own bound (64 MiB) always fits
with the rest of a small log."""


def affordable(plain: int, records: int, stored: int) -> bool:
    """Whether `stored` bytes of file may decode to `plain` bytes and `records` records at the ratios, floors aside.

    The writer's side of SESSION-STORAGE-RECORD.3: a part of a log that holds the ratios on its own
    never pushes the whole past its budget, whichever parts come before or after it.
    """
    return plain <= PLAIN_PER_BYTE * stored and records <= RECORDS_PER_BYTE * stored


class Spent(Exception):
    """The budget is spent. Not a SpecViolation on purpose: it is raised inside a record's decode, where the scanner
    would judge a SpecViolation a defect (a torn tail, which a repair cuts); the reader refuses the log instead."""


@dataclass
class Budget:
    """What is left to decode of one log: plaintext bytes and records (a packed row counts its members)."""

    size: int
    plain: int
    records: int

    @classmethod
    def of(cls, size: int) -> Budget:
        """The budget of a file of `size` bytes."""
        return cls(size, max(PLAIN_FLOOR, PLAIN_PER_BYTE * size), max(RECORDS_FLOOR, RECORDS_PER_BYTE * size))

    def spend(self, plain: int = 0, records: int = 0) -> None:
        """Take what a decode step produced; raises Spent once a part it takes from is overdrawn."""
        self.plain -= plain
        self.records -= records
        if (plain and self.plain < 0) or (records and self.records < 0):
            raise Spent(self.explain())

    def explain(self) -> str:
        full = Budget.of(self.size)
        return (f"the log decodes to more than a file of {self.size} bytes may hold ({full.plain} bytes of plaintext and "
                f"{full.records} records: {PLAIN_PER_BYTE} bytes and {RECORDS_PER_BYTE} records a byte, at least "
                f"{PLAIN_FLOOR} and {RECORDS_FLOOR}); read no further")


def refusal(spent: Spent, path: str, *, line: int | None = None, seq: int | None = None) -> SpecViolation:
    """SESSION-STORAGE-RECORD.3: the refusal where the budget ran out. Never a torn tail: what lies past it is unread,
    so no later turn/end can be ruled out, and a repair must not cut records nobody read."""
    where = f" at line {line}" if line is not None else f" at seq {seq}" if seq is not None else ""
    return SpecViolation(EXPANSION, Kind.ENVELOPE, f"{path}: {spent}{where}", line=line, seq=seq)
