"""spec/07-persistence.md, the SQLite file: schema objects of no one's format, reading without a trace, and change.

A user trigger that recursed on insert made `repair --write` hang (SESSION-SQLITE-SCHEMA.5). `check`
and `show` opened the database read-only and still left `-wal` and `-shm` behind
(SESSION-SQLITE-READ.1). Pages changed under an open reader, and a mutant that stopped raising on
them loaded 1,372 of 3,000 events, which no test noticed (SESSION-SQLITE-ROW.4,
SESSION-STORAGE-RECORD.4).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from hostile import FOREIGN_OBJECTS, agent_log, foreign_schema, oracle, run_cli, write_sqlite
from sessionspec import storage
from sessionspec.errors import SpecViolation
from sessionspec.storage import sqlitefile
from sessionspec.storage.sqlite import SqliteReader
from test_07_bounds import limited

TOOLS = (("check",), ("show",), ("repair",), ("repair", "--write"))
FOREIGN = "SESSION-SQLITE-SCHEMA.5"


@pytest.mark.parametrize("kind", sorted(FOREIGN_OBJECTS))
def test_a_schema_object_the_format_does_not_define_is_refused_and_nothing_is_written(tmp_path: Path, kind: str) -> None:
    path = foreign_schema(tmp_path, kind)
    before = path.read_bytes()
    for tool in TOOLS:
        ran = run_cli(*tool, str(path))
        assert ran.traceback is None and ran.code == 2 and FOREIGN in ran.err, (kind, tool, ran)
    assert path.read_bytes() == before
    with pytest.raises(SpecViolation) as refused:
        storage.open_for_append(path)
    assert refused.value.rule == FOREIGN


def test_a_trigger_that_recurses_on_insert_no_longer_hangs_repair_write(tmp_path: Path) -> None:
    """In a subprocess under RLIMIT_CPU: the trigger is never given the chance to run."""
    path = foreign_schema(tmp_path, "recursive-trigger")
    done = limited("repair", "--write", str(path), cpu=30)
    assert done.code == 2 and FOREIGN in done.err, (done.code, done.err[-2000:])


def test_the_formats_own_objects_and_sqlites_internal_tables_are_not_foreign(tmp_path: Path) -> None:
    """The tables' own key indexes, and ANALYZE's statistics, are SQLite's: a database with them still loads."""
    path = write_sqlite(tmp_path / "analysed.sqlite", agent_log(2))
    with contextlib.closing(sqlite3.connect(path)) as connection:
        connection.execute("ANALYZE")
        connection.commit()
        kinds = {row[0] for row in connection.execute("SELECT name FROM sqlite_master")}
    assert {"sqlite_stat1", "sqlite_autoindex_events_1"} <= kinds
    assert oracle(path).state == "clean"


# --- reading leaves no trace -----------------------------------------------------------------------


def listing(directory: Path) -> dict[str, object]:
    """Each file's name and bytes; for a WAL index (`-shm`) its size: its content is SQLite's shared lock state, which
    every reader of a WAL takes part in (its read mark), and which the index's own recovery rewrites."""
    return {entry.name: entry.stat().st_size if entry.name.endswith("-shm") else entry.read_bytes()
            for entry in sorted(directory.iterdir())}


def crashed_writer(path: Path, *, keep_index: bool = True) -> None:
    """A writer appends one batch into the WAL and dies before any checkpoint: `-wal` and `-shm` stay behind."""
    code = f"""
import os, sqlite3
connection = sqlite3.connect({str(path)!r}, isolation_level=None)
connection.execute("PRAGMA wal_autocheckpoint = 0")
connection.execute("BEGIN IMMEDIATE")
connection.execute("UPDATE sessions SET revision = revision + 100")
connection.execute("COMMIT")
os._exit(0)
"""
    subprocess.run([sys.executable, "-c", code], check=True)
    assert Path(f"{path}-wal").exists()
    if not keep_index:
        os.unlink(f"{path}-shm")


def wal_states(directory: Path) -> dict[str, Path]:
    """A database of each state a reader meets: WAL mode and clean; a crashed writer's WAL and index; a WAL whose
    index is gone; a database in rollback-journal mode."""
    states = {}
    for state in ("wal-clean", "wal-and-index", "wal-without-index", "rollback-journal"):
        folder = directory / state
        folder.mkdir()
        path = write_sqlite(folder / "log.sqlite", agent_log(3))
        if state in ("wal-and-index", "wal-without-index"):
            crashed_writer(path, keep_index=state == "wal-and-index")
        if state == "rollback-journal":
            with contextlib.closing(sqlite3.connect(path)) as connection:
                connection.execute("PRAGMA journal_mode = DELETE")
        states[state] = path
    return states


def test_check_and_show_leave_the_directory_exactly_as_they_found_it(tmp_path: Path) -> None:
    """SESSION-SQLITE-READ.1: the same names with the same bytes, in every state a database is found in."""
    for state, path in wal_states(tmp_path).items():
        before = listing(path.parent)
        for tool in (("check",), ("show",), ("show", "--view", "log"), ("repair",)):
            ran = run_cli(*tool, str(path))
            assert ran.traceback is None and ran.code == 0, (state, tool, ran)
            assert listing(path.parent) == before, (state, tool, sorted(listing(path.parent)))


def test_a_reader_sees_what_the_wal_holds_whether_or_not_its_index_is_there(tmp_path: Path) -> None:
    """Read through the WAL, or through a private copy of it: never the older state of the database file alone."""
    states = wal_states(tmp_path)
    for state in ("wal-and-index", "wal-without-index"):
        reader = SqliteReader(states[state])
        assert reader.revision[0] == 103, state  # the crashed writer's batch, which is only in the WAL
        reader.close()
    assert SqliteReader(states["wal-clean"]).revision[0] == 3


def test_the_reader_cannot_write(tmp_path: Path) -> None:
    for state, path in wal_states(tmp_path).items():
        read = sqlitefile.ReadOnly(path)
        with pytest.raises(sqlite3.OperationalError):
            read.connection.execute("DELETE FROM events")
        read.close()
        assert oracle(path).state == "clean", state


def test_a_database_changed_while_it_was_copied_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = wal_states(tmp_path)["wal-without-index"]
    copy = shutil.copyfile

    def meddling(source: str, target: str) -> str:
        done = copy(source, target)
        os.utime(path, ns=(1, 1))  # another writer touched the database between the reads
        return done

    monkeypatch.setattr(shutil, "copyfile", meddling)
    with pytest.raises(SpecViolation) as refused:
        storage.load(path)
    assert refused.value.rule == "SESSION-STORAGE-RECORD.4"


# --- damage and change under the reader --------------------------------------------------------------


def long_log(path: Path) -> Path:
    """3,000 events, no packed rows: enough pages that the rows span many of them."""
    batches = agent_log(300)
    for batch in batches:
        for event in batch:
            if event["type"] == "assistant/chunk":
                event["data"]["chunk"]["text"] = "x" * 200
    log = storage.save(path, {"version": 0, "id": "h", "createdAt": 1}, batches[0], packed=False)
    for batch in batches[1:]:
        log.append(batch)
    return path


def overwrite_pages(path: Path, pages: list[int]) -> None:
    with open(path, "r+b") as stream:
        for page in pages:
            stream.seek(page * 4096)
            stream.write(b"\xff" * 4096)


def table_leaves(path: Path) -> list[int]:
    """The pages (0-based) that are leaves of a table b-tree (first byte 0x0D): rows, which the open reads none of
    (its count and last seq come from the key index), so damage there is met by the scan."""
    data = path.read_bytes()
    return [page for page in range(1, len(data) // 4096) if data[page * 4096] == 0x0D]


def test_pages_damaged_at_rest_are_refused_where_the_scan_meets_them(tmp_path: Path) -> None:
    """SESSION-SQLITE-ROW.4: never a load of the rows before the damage as if they were the log."""
    path = long_log(tmp_path / "long.sqlite")
    leaves = table_leaves(path)
    assert len(leaves) > 40
    overwrite_pages(path, leaves[len(leaves) // 2: len(leaves) // 2 + 2])
    with pytest.raises(SpecViolation) as refused:
        storage.load(path)
    assert refused.value.rule == "SESSION-SQLITE-ROW.4" and "after the row at seq" in refused.value.message
    assert refused.value.seq is not None and 0 < refused.value.seq < 3000


def test_pages_changed_under_an_open_reader_are_refused_never_loaded_short(tmp_path: Path) -> None:
    """SESSION-STORAGE-RECORD.4: a reader without SQLite's locks finds the change, whatever SQLite made of the pages."""
    path = long_log(tmp_path / "long.sqlite")
    leaves = table_leaves(path)
    reader = SqliteReader(path)
    records = reader.records()
    read = [next(records) for _ in range(100)]
    overwrite_pages(path, leaves[len(leaves) // 2:])
    with pytest.raises(SpecViolation) as refused:
        read.extend(records)
    assert refused.value.rule == "SESSION-STORAGE-RECORD.4" and "changed while it was read" in refused.value.message
    assert refused.value.seq is not None and 100 <= refused.value.seq < 3000
    assert reader.torn is None


def test_a_file_touched_under_an_open_reader_is_refused_at_the_end_of_the_read(tmp_path: Path) -> None:
    path = write_sqlite(tmp_path / "log.sqlite", agent_log(3))
    reader = SqliteReader(path)
    records = reader.records()
    next(records)
    os.utime(path, ns=(1, 1))
    with pytest.raises(SpecViolation) as refused:
        list(records)
    assert refused.value.rule == "SESSION-STORAGE-RECORD.4"
