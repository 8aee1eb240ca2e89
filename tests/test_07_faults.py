"""spec/07-persistence.md, bad files: each one a clear SpecViolation naming the file, in bounded memory."""

from __future__ import annotations

import errno
import json
import os
import shutil
import sqlite3
import tracemalloc
from pathlib import Path

import pytest
from sessionspec import storage
from sessionspec.errors import SpecViolation
from sessionspec.storage import sqlitefile

FIXTURES = Path(__file__).parent / "fixtures" / "storage"
HEADER = '{"type":"session","version":0,"id":"fx","createdAt":0,"delegationDepth":0}\n'


def refused(path: Path) -> SpecViolation:
    with pytest.raises(SpecViolation) as caught:
        storage.load(path)
    assert str(path) in caught.value.message
    return caught.value


@pytest.mark.parametrize(("content", "rule"), [
    (b"", "SESSION-STORAGE-HEADER.1"),
    (HEADER[:30].encode(), "SESSION-STORAGE-HEADER.1"),
    (os.urandom(4096).replace(b"\n", b" ") + b"\n", "SESSION-LOSSLESS-TEXT"),
    (b"\x89PNG\r\n\x1a\n" + bytes(range(256)), "SESSION-LOSSLESS-TEXT"),
])
@pytest.mark.parametrize("suffix", [".jsonl", ".jsonl.zstd", ".sqlite"])
def test_empty_truncated_and_garbage_files(tmp_path: Path, content: bytes, rule: str, suffix: str) -> None:
    path = tmp_path / f"bad{suffix}"
    path.write_bytes(content)
    error = refused(path)
    if suffix == ".jsonl":
        assert error.rule.startswith(rule)


@pytest.mark.parametrize("name", ["seq-gap.jsonl", "malformed-row.jsonl", "foreign.sqlite", "v16.sqlite"])
def test_fixture_faults(tmp_path: Path, name: str) -> None:
    shutil.copy(FIXTURES / name, tmp_path / name)
    refused(tmp_path / name)


def deep_log(path: Path, depth: int) -> None:
    deep = "[" * depth + "]" * depth
    path.write_text(HEADER + '{"type":"plugin/deep","seq":0,"time":0,"data":' + deep + ',"ignorable":true}\n')


def test_nesting_of_100000_levels_is_lossless_json_and_loads(tmp_path: Path) -> None:
    deep_log(tmp_path / "deep.jsonl", 100_000)
    assert len(storage.load(tmp_path / "deep.jsonl").events) == 1


@pytest.mark.nightly
def test_nesting_of_100000_levels_round_trips(tmp_path: Path) -> None:
    deep_log(tmp_path / "deep.jsonl", 100_000)
    result = storage.load(tmp_path / "deep.jsonl")
    storage.save(tmp_path / "again.jsonl", result.header, result.events)
    assert (tmp_path / "again.jsonl").read_text() == (tmp_path / "deep.jsonl").read_text()


def test_unclosed_nesting_of_100000_levels_is_a_torn_or_corrupt_record(tmp_path: Path) -> None:
    path = tmp_path / "open.jsonl"
    path.write_text(HEADER + '{"type":"plugin/deep","seq":0,"time":0,"data":' + "[" * 100_000 + "\n"
                    + '{"type":"turn/end","seq":1,"time":0,"data":{"turn":1,"reason":{"kind":"completed"}}}\n')
    error = refused(path)
    assert error.rule == "SESSION-LOSSLESS-TEXT.2" and error.line == 2


def long_line(path: Path, size: int) -> None:
    with open(path, "wb") as stream:
        stream.write(HEADER.encode())
        stream.write(b'{"type":"plugin/x","seq":0,"time":0,"data":"')
        block = b"y" * (1 << 20)
        for _ in range(size >> 20):
            stream.write(block)
        stream.write(b'"}\n')


def test_a_long_single_line_is_refused_in_bounded_memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The always-on variant: an 8 MiB line against a 1 MiB bound."""
    from sessionspec.storage import jsonlread

    monkeypatch.setattr(jsonlread, "MAX_RECORD_BYTES", 1 << 20)
    path = tmp_path / "long.jsonl"
    long_line(path, 8 << 20)
    tracemalloc.start()
    error = refused(path)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert error.rule == "SESSION-STORAGE-RECORD.1" and peak < 4 << 20


@pytest.mark.nightly
def test_a_100_mb_single_line_is_refused_in_bounded_memory(tmp_path: Path) -> None:
    path = tmp_path / "huge.jsonl"
    long_line(path, 100 << 20)
    tracemalloc.start()
    error = refused(path)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert error.rule == "SESSION-STORAGE-RECORD.1" and peak < 80 << 20


def test_a_seq_gap_in_the_middle_names_line_and_seq(tmp_path: Path) -> None:
    lines = [HEADER.strip()] + [json.dumps({"type": "turn/start", "seq": s, "time": 0, "data": {"turn": 1}}) if s % 2 == 0
                                else json.dumps({"type": "turn/end", "seq": s, "time": 0,
                                                 "data": {"turn": 1, "reason": {"kind": "completed"}}})
                                for s in [*range(10), *range(11, 20)]]
    path = tmp_path / "gap.jsonl"
    path.write_text("\n".join(lines) + "\n")
    error = refused(path)
    assert error.rule == "SESSION-STORAGE-SEQ.1" and error.line == 12 and error.seq == 10


# --- faults of the machine, as the library surfaces them (issue 34): OSError naming the file, never "damaged" ------


@pytest.mark.parametrize(("code", "name", "number"), [
    (13, "SQLITE_FULL", errno.ENOSPC), (8, "SQLITE_READONLY", errno.EROFS), (778, "SQLITE_IOERR_WRITE", errno.EIO),
    (4874, "SQLITE_IOERR_SHMSIZE", errno.EIO), (14, "SQLITE_CANTOPEN", errno.EACCES), (3, "SQLITE_PERM", errno.EACCES),
])
def test_sqlite_errors_of_the_machine_are_os_errors_not_damage(tmp_path: Path, code: int, name: str, number: int) -> None:
    """SQLite's own codes for its disk and files (the low byte of an extended code) become the OSError they stand for;
    SQLITE_CORRUPT stays a refusal of the database (SESSION-SQLITE-ROW.4)."""
    path = str(tmp_path / "log.sqlite")
    error = sqlite3.OperationalError("disk I/O error")
    error.sqlite_errorcode, error.sqlite_errorname = code, name  # type: ignore[attr-defined]
    found = sqlitefile.damaged(error, path)
    assert isinstance(found, OSError) and found.errno == number and found.filename == path and name in str(found)
    corrupt = sqlite3.DatabaseError("database disk image is malformed")
    corrupt.sqlite_errorcode, corrupt.sqlite_errorname = 11, "SQLITE_CORRUPT"  # type: ignore[attr-defined]
    refusal = sqlitefile.damaged(corrupt, path)
    assert isinstance(refusal, SpecViolation) and refusal.rule == "SESSION-SQLITE-ROW.4"


def test_a_sqlite_log_past_sqlites_504_byte_path_loads(tmp_path: Path) -> None:
    """SQLite's unix VFS opens no path over 504 bytes (SQLITE_CANTOPEN, once read as damage): it is read as a copy."""
    folder = tmp_path / ("d" * 200) / ("e" * 200)
    folder.mkdir(parents=True)
    path = folder / ("f" * 150 + ".sqlite")
    assert len(os.fsencode(str(path.absolute()))) > 504
    events = [{"type": "turn/start", "seq": 0, "time": 1, "data": {"turn": 1}}]
    short = tmp_path / "short.sqlite"
    storage.save(short, {"version": 0, "id": "s", "createdAt": 0}, events)
    shutil.copyfile(short, path)
    assert [event.seq for event in storage.load(path).events] == [0]
    with pytest.raises(OSError) as caught:
        storage.repair(path)  # an open turn: closers to write, through a path SQLite cannot open
    assert caught.value.errno == errno.ENAMETOOLONG and path.read_bytes() == short.read_bytes()
    assert sorted(p.name for p in folder.iterdir()) == [path.name]


def test_a_sqlite_name_whose_wal_cannot_be_named_is_refused_before_sqlite_opens_it(tmp_path: Path) -> None:
    path = tmp_path / ("n" * (255 - len(".sqlite")) + ".sqlite")
    with pytest.raises(OSError) as caught:
        storage.save(path, {"version": 0, "id": "s", "createdAt": 0}, [])
    assert caught.value.errno == errno.ENAMETOOLONG and list(tmp_path.iterdir()) == []
