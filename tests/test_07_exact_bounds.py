"""spec/07-persistence.md, each storage reader's bound met exactly, and the failures a writer must not swallow.

The mutation lane's fresh storage sample (seed 20261205, mutation/REPORT.md) moved boundaries the
chapter tests only met from afar: a zstd frame of exactly MAX_FRAME_BYTES or MAX_FRAME_RECORDS, a
packed row of exactly 65,536 members, a frame whose last block header ends the file; and a
SQLite transaction whose driver error was dropped. Each test here fails on the mutant named in
its docstring (each checked by hand).
"""

from __future__ import annotations

import io
import sqlite3
from pathlib import Path
from typing import Any

import pytest
import zstandard
from sessionspec import model, storage
from sessionspec.errors import SpecViolation
from sessionspec.storage import chunkrows, jsonlread, sqlite, sqliterows, zstdframes, zstdlog


def _saved(tmp_path: Path, name: str = "log.jsonl.zstd") -> Path:
    """A turn holding the log's longest record in its middle: a defect there, with the turn/end after it, is corruption
    (SESSION-TORN-TAIL.2), refused by the defect's own rule rather than cut off as a torn tail."""
    session = model.Session.create("s", clock=lambda: 1)
    session.append("turn/start", {"turn": 0})
    session.append("todo/write", {"todos": [{"content": "x" * 100, "status": "pending"}]})
    session.append("turn/end", {"turn": 0, "reason": {"kind": "completed"}})
    path = tmp_path / name
    storage.save(path, session.header, session.events)
    return path


def _plain_sizes(path: Path) -> list[tuple[int, int]]:
    """(plaintext bytes, records) of each frame of a zstd log."""
    raw = path.read_bytes()
    sizes = []
    for frame in zstdlog.frames(io.BytesIO(raw), len(raw), str(path)):
        plain = zstandard.ZstdDecompressor().decompress(raw[frame.start:frame.end])
        sizes.append((len(plain), plain.count(b"\n")))
    return sizes


@pytest.mark.parametrize("bound", ["MAX_FRAME_BYTES", "MAX_FRAME_RECORDS"])
def test_a_frame_of_exactly_the_bound_loads_and_one_over_it_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                          bound: str) -> None:
    """SESSION-ZSTD-FRAMES.5 bounds a frame's plaintext (256 MiB) and records (65,536), here set to the largest
    frame's own size: exactly that loads, one less refuses it. (Mutant: `total >= MAX_FRAME_BYTES`.)"""
    path = _saved(tmp_path)
    largest = max(size if bound == "MAX_FRAME_BYTES" else records for size, records in _plain_sizes(path))
    monkeypatch.setattr(zstdframes, bound, largest)
    assert len(storage.load(path).events) == 3
    monkeypatch.setattr(zstdframes, bound, largest - 1)
    with pytest.raises(SpecViolation) as refused:
        storage.load(path)
    assert refused.value.rule == "SESSION-ZSTD-FRAMES.5"


def test_a_last_frame_whose_last_block_header_ends_the_file_is_read_whole(tmp_path: Path) -> None:
    """A frame of one empty last block ends exactly at its block header: the structural scan must read that header
    (it is complete) and find no checksum (SESSION-ZSTD-FRAMES.3), not take it for a torn tail.
    (Mutant: `while pos + 3 < size` in read_frame.)"""
    path = _saved(tmp_path)
    path.write_bytes(path.read_bytes() + zstandard.ZstdCompressor(write_checksum=False).compress(b""))
    with pytest.raises(SpecViolation) as refused:
        storage.load(path)
    assert refused.value.rule == "SESSION-ZSTD-FRAMES.3"


def _row(members: int) -> dict[str, Any]:
    return {"type": "text-chunks", "seq0": 0, "time0": 0,
            "data": {"turn": 1, "step": 1, "index": 0, "dt": [1] * (members - 1), "texts": ["t"] * members}}


def test_a_packed_row_of_exactly_the_member_bound_expands_and_one_more_is_refused() -> None:
    """SESSION-CHUNK-ROWS.8: at most 65,536 members, the number spec/07 states, never read from `chunkrows` (a test
    that read MAX_MEMBERS moved with a mutant of it). (Mutants: `len(texts) >= MAX_MEMBERS`; `MAX_MEMBERS = 1 << 17`,
    or `1 << 15`.)"""
    bound = 65_536
    assert len(chunkrows.decode(_row(bound))) == bound
    with pytest.raises(SpecViolation) as refused:
        chunkrows.decode(_row(bound + 1))
    assert refused.value.rule == "SESSION-CHUNK-ROWS.8"


def test_a_driver_error_in_a_sqlite_transaction_is_a_refusal_not_a_silent_success(tmp_path: Path) -> None:
    """A write whose transaction fails in the driver (here its body) rolls back and raises; it never returns as if it
    had been written. (Mutant: the transaction's `raise damaged(...)` deleted.)"""
    path = _saved(tmp_path, "log.sqlite")

    def failing(connection: sqlite3.Connection) -> None:
        connection.execute("INSERT INTO no_such_table VALUES (1)")

    with pytest.raises(SpecViolation):
        sqlite.transaction(path, failing)
    assert len(storage.load(path).events) == 3


def test_a_header_line_over_a_read_piece_is_read_whole(tmp_path: Path) -> None:
    """The first line is read in pieces of 1 MiB; a header longer than one piece is joined, not lost.
    (Mutant: `_read_line` returning None after its loop.)"""
    session = model.Session.create("s", header={"version": 0, "id": "s", "createdAt": 1, "cwd": "/" + "a" * (1 << 20)},
                                   clock=lambda: 1)
    session.append("turn/start", {"turn": 1})
    path = tmp_path / "log.jsonl"
    storage.save(path, session.header, session.events)
    assert storage.load(path).header["cwd"] == session.header["cwd"]


def test_a_record_of_exactly_the_record_bound_loads_and_one_byte_more_is_refused(tmp_path: Path,
                                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """SESSION-STORAGE-RECORD.1 read through the piecewise reader (a line over 1 MiB), with the bound set to that line's
    own length: exactly the bound loads. (Mutant: `total >= MAX_RECORD_BYTES` in `_read_line`.)"""
    session = model.Session.create("s", header={"version": 0, "id": "s", "createdAt": 1, "cwd": "/" + "a" * (1 << 20)},
                                   clock=lambda: 1)
    path = tmp_path / "log.jsonl"
    storage.save(path, session.header, session.events)
    with path.open("rb") as stream:
        length = len(stream.readline()) - 1  # a record is its line without the newline
    monkeypatch.setattr(jsonlread, "MAX_RECORD_BYTES", length)
    assert storage.load(path).header["cwd"] == session.header["cwd"]
    monkeypatch.setattr(jsonlread, "MAX_RECORD_BYTES", length - 1)
    with pytest.raises(SpecViolation) as refused:
        storage.load(path)
    assert refused.value.rule == "SESSION-STORAGE-RECORD.1"


def test_a_sqlite_row_of_exactly_the_record_bound_loads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """SESSION-STORAGE-RECORD.1 holds in SQLite as on a line, by the row's stored length: exactly the bound loads,
    one byte less refuses. (Mutant: `length >= MAX_RECORD_BYTES` in `read_row`.)"""
    path = _saved(tmp_path, "log.sqlite")
    with sqlite3.connect(path) as connection:
        longest = connection.execute("SELECT max(length(type) + length(data) + coalesce(length(source_event_seqs), 0)"
                                     " + coalesce(length(surface_op), 0)) FROM events").fetchone()[0]
    monkeypatch.setattr(sqliterows, "MAX_RECORD_BYTES", longest)
    assert len(storage.load(path).events) == 3
    monkeypatch.setattr(sqliterows, "MAX_RECORD_BYTES", longest - 1)
    with pytest.raises(SpecViolation) as refused:
        storage.load(path)
    assert refused.value.rule == "SESSION-STORAGE-RECORD.1"


def test_an_event_row_under_a_row_tag_is_refused(tmp_path: Path) -> None:
    """SESSION-SQLITE-ROW.3: a row not marked packed may not carry a row tag as its type. (Mutant: `type(kind) != str`
    in `read_row`, which let every text tag through.)"""
    path = _saved(tmp_path, "log.sqlite")
    with sqlite3.connect(path) as connection:
        connection.execute("UPDATE events SET type = 'text-chunks' WHERE seq = 1")
    with pytest.raises(SpecViolation) as refused:
        storage.load(path)
    assert refused.value.rule == "SESSION-SQLITE-ROW.3"


def test_a_block_of_the_reserved_type_is_corruption(tmp_path: Path) -> None:
    """SESSION-ZSTD-FRAMES.1: block type 3 is reserved; the structural scan refuses it where it stands.
    (Mutant: read_frame's `raise` for the reserved block type deleted.)"""
    path = _saved(tmp_path)
    raw = bytearray(path.read_bytes())
    frame = list(zstdlog.frames(io.BytesIO(bytes(raw)), len(raw), str(path)))[1]
    block = frame.start + frame.header
    raw[block] |= 0b110  # the block type bits (1-2 of the 3-byte little-endian block header): 3
    path.write_bytes(bytes(raw))
    with pytest.raises(SpecViolation) as refused:
        storage.load(path)
    assert refused.value.rule == "SESSION-ZSTD-FRAMES.1"
