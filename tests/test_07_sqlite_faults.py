"""spec/07-persistence.md, SQLite under attack: repairs that verify before they commit, and damage named, never raised.

Issue 15, findings 1 and 2 and the SQLite half of 6: a repair that cut at the expected seq left
the defective row of an overlapping packed row in place and committed closers after it; invalid
UTF-8 in a TEXT column, a damaged page or schema escaped as tracebacks; a 94 KB file decoded to
a GiB.
"""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hostile import RULE, agent_log, clean_log, damaged_pages, oracle, oracle_peak, run_cli, write_sqlite
from sessionspec import storage
from sessionspec.errors import SpecViolation
from sessionspec.storage import sqlite as backend

TOOLS = (("check",), ("show",), ("repair",), ("repair", "--write"))


def execute(path: Path, *statements: tuple[str, tuple[Any, ...]]) -> None:
    with contextlib.closing(sqlite3.connect(path)) as connection:
        for sql, parameters in statements:
            connection.execute(sql, parameters)
        connection.commit()


def rows(path: Path) -> list[tuple[Any, ...]]:
    with contextlib.closing(sqlite3.connect(path)) as connection:
        return connection.execute("SELECT seq, type, time, data, ignorable FROM events ORDER BY seq").fetchall()


def overlapping(path: Path) -> Path:
    """An open turn whose packed row (seqs 15..18) is followed by a row that repeats seq 16: a torn tail."""
    batches = agent_log(2, open_tail=True)
    write_sqlite(path, [batches[0], batches[1][:2], batches[1][2:8]])  # the chunks of the last batch: one packed row
    execute(path, ("INSERT INTO events VALUES ('h', ?, 'step/end', 0, '{\"turn\":2,\"step\":1}', NULL, NULL, NULL)",
                   (batches[1][4]["seq"],)))
    return path


def test_a_repair_cuts_at_the_defective_row_of_an_overlapping_packed_row(tmp_path: Path) -> None:
    """Finding 1: the cut starts at the defective row itself, and the repaired log loads with every event kept."""
    path = overlapping(tmp_path / "overlap.sqlite")
    before = storage.load(path)
    assert before.torn is not None and (before.torn.seq, before.torn.row) == (19, 16)
    repaired = storage.repair(path)
    assert repaired.torn is None and not repaired.closers
    again = storage.load(path)
    assert [e.to_json() for e in again.events] == [e.to_json() for e in (*before.events, *before.closers)]
    assert run_cli("check", str(path)).code == 0


def test_repair_write_of_the_overlap_through_the_cli_leaves_a_clean_log(tmp_path: Path) -> None:
    path = overlapping(tmp_path / "overlap.sqlite")
    written = run_cli("repair", str(path), "--write")
    assert written.traceback is None and written.code == 0, written.err
    assert "the rows from seq" in written.out
    assert oracle(path).state == "clean"


def test_a_repair_that_does_not_verify_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """SESSION-STORAGE-WRITE.5: the result is read back inside the transaction; a wrong one is rolled back."""
    path = write_sqlite(tmp_path / "open.sqlite", agent_log(2, open_tail=True))
    before = rows(path)
    insert = backend._insert

    def wrong(connection: sqlite3.Connection, session_id: str, rows: list[Any]) -> None:
        insert(connection, session_id, rows[:-1])  # loses the turn/end closer

    monkeypatch.setattr(backend, "_insert", wrong)
    with pytest.raises(SpecViolation) as refused:
        storage.repair(path)
    assert refused.value.rule == "SESSION-STORAGE-WRITE.5" and "repair not written" in refused.value.message
    assert rows(path) == before


@pytest.mark.parametrize(("case", "statement", "rule"), [
    ("data", "UPDATE events SET data = CAST(x'7b2261223aff7d' AS TEXT) WHERE seq = 3", "SESSION-LOSSLESS-TEXT.1"),
    ("type", "UPDATE events SET type = CAST(x'ff' AS TEXT) WHERE seq = 3", "SESSION-LOSSLESS-TEXT.1"),
    ("surface_op", "UPDATE events SET surface_op = CAST(x'22ff22' AS TEXT) WHERE seq = 1", "SESSION-LOSSLESS-TEXT.1"),
    ("session id", "UPDATE sessions SET id = CAST(x'68ff' AS TEXT)", "SESSION-LOSSLESS-TEXT.1"),
    ("cwd", "UPDATE sessions SET cwd = CAST(x'2fff' AS TEXT)", "SESSION-LOSSLESS-TEXT.1"),
    ("schema", "UPDATE sqlite_master SET sql = 'CREATE TABLE events (garbage' WHERE name = 'events'",
     "SESSION-SQLITE-ROW.4"),
    # SQLite's own error message then quotes bytes that are not UTF-8, which the driver fails to decode.
    ("schema bytes", "UPDATE sqlite_master SET sql = CAST(x'435245415445205441424c45206576656e7473202861204e4f54204e554c8a29' AS TEXT) "
     "WHERE name = 'events'", "SESSION-SQLITE-ROW.4"),
])
def test_invalid_text_and_a_damaged_schema_are_findings_not_tracebacks(tmp_path: Path, case: str, statement: str,
                                                                        rule: str) -> None:
    """Finding 2: each tool names the rule (and the seq, for a row), exits 1, and repair writes nothing."""
    path = clean_log(tmp_path / "log.sqlite", "sqlite")
    with contextlib.closing(sqlite3.connect(path)) as connection:
        connection.execute("PRAGMA writable_schema = ON")
        connection.execute(statement)
        connection.commit()
    data = path.read_bytes()
    for tool in TOOLS:
        ran = run_cli(*tool, str(path))
        assert ran.traceback is None, (tool, ran.traceback)
        assert ran.code == 1 and rule in ran.out + ran.err, (tool, ran)
        if case in ("data", "type", "surface_op"):
            assert "seq" in ran.out + ran.err
    assert path.read_bytes() == data


def test_damaged_pages_are_refused_with_a_rule_never_a_traceback(tmp_path: Path) -> None:
    """Finding 2: "database disk image is malformed" anywhere in the file, or a file cut short."""
    source = write_sqlite(tmp_path / "long.sqlite", agent_log(40))
    assert len(source.read_bytes()) > 8 * 4096
    named = 0
    for path in damaged_pages(source, tmp_path):
        for tool in TOOLS:
            ran = run_cli(*tool, str(path))
            assert ran.traceback is None, (path.name, tool, ran.traceback)
            assert ran.code in (0, 1, 2), (path.name, tool, ran)
            if ran.code:
                assert RULE in ran.out + ran.err or "unreadable" in ran.err, (path.name, tool, ran)
                named += "SESSION-SQLITE-ROW.4" in ran.out + ran.err
    assert named


def rle_frame(byte: int, size: int) -> bytes:
    """A zstd frame of `size` copies of `byte` (a multiple of 128 KiB) from RLE blocks: 4 bytes for each 128 KiB."""
    block = 128 << 10
    blocks = size // block
    out = bytearray(b"\x28\xb5\x2f\xfd" + bytes([0x00, 0x38]))  # no checksum, no content size; window 128 KiB
    for k in range(blocks):
        last = 1 if k == blocks - 1 else 0
        out += (last | (1 << 1) | (block << 3)).to_bytes(3, "little") + bytes([byte])
    return bytes(out)


def test_a_small_blob_that_decodes_to_a_gib_is_refused_in_bounded_memory(tmp_path: Path) -> None:
    """Finding 6: SESSION-STORAGE-RECORD.1 holds for a SQLite data BLOB's plaintext; the decode stops at the bound."""
    path = write_sqlite(tmp_path / "bomb.sqlite", agent_log(2))
    bomb = rle_frame(0x20, 1 << 30)
    assert len(bomb) < 40_000
    execute(path, ("UPDATE events SET data = ? WHERE seq = 3", (bomb,)))
    verdict, peak = oracle_peak(path)
    assert verdict.state == "refused" and verdict.rule == "SESSION-STORAGE-RECORD.1"
    assert peak < 200 << 20
    ran = run_cli("check", str(path))
    assert ran.code == 1 and "SESSION-STORAGE-RECORD.1" in ran.out and "seq 3" in ran.out


def test_a_row_longer_than_the_record_bound_is_refused_unread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """SESSION-STORAGE-RECORD.1 on SQLite rows: the row query withholds a value beyond the bound."""
    from sessionspec.storage import sqliterows

    path = write_sqlite(tmp_path / "long.sqlite", agent_log(2, open_tail=True))
    execute(path, ("UPDATE events SET data = ? WHERE seq = 3", ('"' + "x" * 5000 + '"',)))
    monkeypatch.setattr(sqliterows, "ROW_QUERY", sqliterows.ROW_QUERY.replace(str(sqliterows.MAX_RECORD_BYTES), "4096"))
    monkeypatch.setattr(sqliterows, "MAX_RECORD_BYTES", 4096)
    with pytest.raises(SpecViolation) as refused:
        storage.load(path)
    assert refused.value.rule == "SESSION-STORAGE-RECORD.1" and "seq 3" in refused.value.message


def test_a_packed_row_overlap_in_the_middle_is_corruption_and_nothing_is_written(tmp_path: Path) -> None:
    path = overlapping(tmp_path / "overlap.sqlite")
    # Repairable as it is; with a committed turn/end after the overlap it is corruption.
    execute(path, ("INSERT INTO events VALUES ('h', 99, 'turn/end', 0, '{\"turn\":2,\"reason\":{\"kind\":\"completed\"}}', "
                   "NULL, NULL, NULL)", ()))
    data = path.read_bytes()
    ran = run_cli("repair", str(path), "--write")
    assert ran.code == 1 and "SESSION-STORAGE-SEQ.1" in ran.err and "SESSION-TORN-TAIL.2" in ran.err
    assert path.read_bytes() == data
