"""spec/07-persistence.md, the storage code's edges: the branches no other test of the chapter reached.

Each test here was written against the branch coverage of `sessionspec/storage/` under the
chapter's tests (mutation/REPORT.md, "Coverage: storage/ under its tests"): a rule's refusal
that only an odd input reaches (a path through a file, a database with SQLite's header and
nothing else, a session with no rows), a writer's path that only a second writer or a failing
disk takes. Each still states the rule it holds the code to.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest
import zstandard
from hostile import agent_log, clean_log, frame, lines_of, run_cli, write_jsonl, write_sqlite, write_zstd
from sessionspec import storage
from sessionspec.errors import SpecViolation
from sessionspec.storage import chunkrows, durable, formats, jsonl, jsonlread, records, sqlitefile
from sessionspec.storage import sqlite as backend
from sessionspec.storage.gate import TornTail
from sessionspec.storage.sqlite import SqliteReader, SqliteWriter

SAVE_HEADER = {"version": 0, "id": "h", "createdAt": 1}


def violation(call: Any) -> SpecViolation:
    with pytest.raises(SpecViolation) as caught:
        call()
    return caught.value


# --- the file and its format ---------------------------------------------------------------------


def test_a_path_through_a_regular_file_is_unreadable(tmp_path: Path) -> None:
    """An open that fails for another reason than a missing file or a link loop (ENOTDIR) is still exit 2."""
    regular = clean_log(tmp_path / "log.jsonl", "jsonl")
    ran = run_cli("check", str(regular / "inner.jsonl"))
    assert ran.traceback is None and ran.code == 2 and "Not a directory" in ran.err


def test_text_that_is_no_log_and_names_no_format_is_unreadable(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("hello\n")
    with pytest.raises(formats.Unreadable, match="not a session log"):
        formats.detect(path)
    assert formats.detect(tmp_path / "new-log", existing=False) == "jsonl"
    (tmp_path / "empty").write_bytes(b"")
    assert formats.detect(tmp_path / "empty", existing=False) == "jsonl"


def test_a_database_with_sqlites_header_and_nothing_else_is_not_a_database(tmp_path: Path) -> None:
    """SESSION-SQLITE-SCHEMA.3: the magic is right, the header behind it is not (SQLITE_NOTADB)."""
    path = tmp_path / "log.sqlite"
    path.write_bytes(formats.SQLITE_MAGIC + b"\xff" * 200)
    assert violation(lambda: storage.load(path)).rule == "SESSION-SQLITE-SCHEMA.3"


def test_a_pristine_empty_database_holds_no_sessions(tmp_path: Path) -> None:
    path = tmp_path / "log.sqlite"
    with contextlib.closing(sqlite3.connect(path)) as connection:
        connection.execute("VACUUM")
    refused = violation(lambda: storage.load(path))
    assert refused.rule == "SESSION-SQLITE-SCHEMA.3" and "holds no sessions" in refused.message


def test_a_database_deleted_under_its_reader_is_refused(tmp_path: Path) -> None:
    """SESSION-STORAGE-RECORD.4: the file the unlocked read began with is gone when it ends."""
    path = write_sqlite(tmp_path / "log.sqlite", agent_log(3))
    reader = SqliteReader(path)
    rows = reader.records()
    next(rows)
    path.unlink()
    assert violation(lambda: list(rows)).rule == "SESSION-STORAGE-RECORD.4"


def test_a_connection_that_fails_its_first_statement_is_damage_not_a_traceback(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """SESSION-SQLITE-ROW.4 where SQLite fails at the pragmas a reader or writer starts with."""
    path = write_sqlite(tmp_path / "log.sqlite", agent_log(1))

    class Failing(sqlite3.Connection):
        def execute(self, *args: Any, **kwargs: Any) -> Any:
            raise sqlite3.DatabaseError("disk I/O error")

    real_connect = sqlite3.connect
    monkeypatch.setattr(sqlite3, "connect", lambda *a, **k: real_connect(*a, **k, factory=Failing))
    assert violation(lambda: sqlitefile.ReadOnly(path)).rule == "SESSION-SQLITE-ROW.4"
    assert violation(lambda: sqlitefile.connect(path)).rule == "SESSION-SQLITE-ROW.4"

    def refusing(*args: Any, **kwargs: Any) -> Any:
        raise sqlite3.OperationalError("unable to open database file")

    monkeypatch.setattr(sqlite3, "connect", refusing)
    assert violation(lambda: storage.load(path)).rule == "SESSION-SQLITE-ROW.4"


def test_a_write_that_sqlite_fails_is_damage_and_rolled_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """SESSION-SQLITE-ROW.4 under the write transaction: SQLite fails mid-batch; nothing of the batch is kept."""
    batches = agent_log(2)
    path = write_sqlite(tmp_path / "log.sqlite", batches[:1])
    insert = backend._insert

    def failing(connection: sqlite3.Connection, *args: Any) -> None:
        insert(connection, *args)
        raise sqlite3.DatabaseError("database disk image is malformed")

    monkeypatch.setattr(backend, "_insert", failing)
    log = SqliteWriter(path, "h", len(batches[0]))
    assert violation(lambda: log.append(batches[1])).rule == "SESSION-SQLITE-ROW.4"
    monkeypatch.undo()
    assert len(storage.load(path).events) == len(batches[0])


# --- writers --------------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["jsonl", "jsonl.zstd", "sqlite"])
def test_an_empty_batch_writes_nothing(tmp_path: Path, fmt: str) -> None:
    path = tmp_path / f"log.{fmt}"
    log = storage.save(path, SAVE_HEADER, agent_log(1)[0])
    before = path.read_bytes()
    log.append([])
    assert path.read_bytes() == before and log.next_seq == len(agent_log(1)[0])


def test_a_record_beyond_the_bound_is_never_written(monkeypatch: pytest.MonkeyPatch) -> None:
    """SESSION-STORAGE-RECORD.1 on write: nothing is written that a reader would refuse."""
    monkeypatch.setattr(records, "MAX_RECORD_BYTES", 64)
    assert violation(lambda: records.encode_line({"data": "x" * 100})).rule == "SESSION-STORAGE-RECORD.1"


def test_a_sqlite_append_continues_only_the_stored_log(tmp_path: Path) -> None:
    """SESSION-STORAGE-SEQ.1: a second writer's rows moved the stored seq; the first writer's batch is refused."""
    batches = agent_log(3)
    path = write_sqlite(tmp_path / "log.sqlite", batches[:1])
    first = SqliteWriter(path, "h", len(batches[0]))
    second = SqliteWriter(path, "h", len(batches[0]))
    second.append(batches[1])
    assert violation(lambda: first.append(batches[1])).rule == "SESSION-STORAGE-SEQ.1"


def test_sqlite_appends_continue_an_empty_session_a_packed_row_and_a_compressed_row(tmp_path: Path) -> None:
    """The stored next seq read from the last row: none, a packed row (its members), a zstd BLOB."""
    path = tmp_path / "log.sqlite"
    log = storage.save(path, SAVE_HEADER, [])
    batch = agent_log(1, open_tail=True)[0][:7]  # ends in the run of four chunks: a packed row
    log.append(batch)
    big = {"type": "plugin/big", "seq": len(batch), "time": 0, "data": "z" * 9000, "ignorable": True}
    log.append([big])
    follow = {**big, "seq": len(batch) + 1, "data": None}
    SqliteWriter(path, "h", len(batch) + 1).append([follow])
    assert [e.seq for e in storage.load(path).events] == list(range(len(batch) + 2))


def test_an_append_after_an_unreadable_last_row_is_refused(tmp_path: Path) -> None:
    path = write_sqlite(tmp_path / "log.sqlite", agent_log(1, open_tail=True))
    with contextlib.closing(sqlite3.connect(path)) as connection:
        connection.execute("UPDATE events SET data = x'00' WHERE seq = (SELECT max(seq) FROM events)")
        connection.commit()
    writer = SqliteWriter(path, "h", 9)
    refused = violation(lambda: writer.append([{"type": "plugin/x", "seq": 9, "time": 0, "data": 1, "ignorable": True}]))
    assert refused.rule == "SESSION-STORAGE-SEQ.1" and "invalid physical tail" in refused.message


def test_a_sqlite_plan_whose_torn_tail_names_no_row_is_not_written(tmp_path: Path) -> None:
    """SESSION-STORAGE-WRITE.5: a SQLite cut starts at a row; a plan without one cannot be verified."""
    path = write_sqlite(tmp_path / "log.sqlite", agent_log(1, open_tail=True))
    plan = storage.load(path)
    torn = TornTail(None, len(plan.events), 0, "made up", "SESSION-TORN-TAIL.3", row=None)
    refused = violation(lambda: storage.repair(path, plan=dataclasses.replace(plan, torn=torn)))
    assert refused.rule == "SESSION-STORAGE-WRITE.5"


def test_a_repair_whose_result_does_not_load_is_not_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """SESSION-STORAGE-WRITE.5: the read-back refuses (here: a writer that writes garbage), the file stays as it was."""
    path = clean_log(tmp_path / "log.jsonl", "jsonl", open_tail=True)
    before = path.read_bytes()
    turn_end = b'{"type":"turn/end","seq":0,"time":0,"data":{"turn":1,"reason":{"kind":"completed"}}}\n'
    monkeypatch.setattr(jsonl.JsonlWriter, "_batch", classmethod(lambda cls, batch, packed: b"{\n" + turn_end))
    refused = violation(lambda: storage.repair(path))
    assert refused.rule == "SESSION-STORAGE-WRITE.5" and "does not load" in refused.message
    assert path.read_bytes() == before


def test_the_packer_leaves_alone_what_it_cannot_pack() -> None:
    """SESSION-CHUNK-ROWS.6: a tool-call delta of another shape, or with an id that is no string, is stored as it is;
    and SQLite stores unpacked a run whose smallest row would pass its 1 MiB (SESSION-CHUNK-ROWS.5)."""
    def call(seq: int, **chunk: Any) -> dict[str, Any]:
        body = {"type": "tool-call-delta", "index": 0, "id": "c", "argumentsDelta": "{", **chunk}
        return {"type": "assistant/chunk", "seq": seq, "time": seq, "data": {"turn": 1, "step": 1, "chunk": body}}

    for odd in ({"extra": 1}, {"id": 7}):
        run = [call(k, **odd) for k in range(4)]
        assert chunkrows.pack(run) == run
    big = [{"type": "assistant/chunk", "seq": k, "time": k, "data": {"turn": 1, "step": 1, "chunk": {
        "type": "text-delta", "index": 0, "text": "t" * (400 << 10)}}} for k in range(3)]
    assert chunkrows.pack(big, sqlite=True) == big and len(chunkrows.pack(big)) == 1


# --- the disk: failures of the writer's own steps -----------------------------------------------------


def test_a_temp_file_of_another_users_writer_is_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """SESSION-STORAGE-WRITE.6: a pid that cannot be signalled (EPERM) belongs to a running writer."""
    path = tmp_path / "log.jsonl"
    temp = tmp_path / f".{path.name}.4242.0123456789ab.tmp"
    temp.write_bytes(b"")

    def not_ours(pid: int, signal: int) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "kill", not_ours)
    assert durable.remove_stale_temps(path) == [] and temp.exists()
    assert durable.remove_stale_temps(tmp_path / "missing" / "log.jsonl") == []
    monkeypatch.undo()
    running = tmp_path / f".{path.name}.1.0123456789ab.tmp"  # pid 1 runs as long as the machine does
    running.write_bytes(b"")
    assert running not in durable.remove_stale_temps(path) and running.exists()


def test_a_rollback_that_fails_raises_both_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """SESSION-STORAGE-WRITE.3: when the truncate back fails too, neither error is lost."""
    path = tmp_path / "log.jsonl"
    log = storage.save(path, SAVE_HEADER, agent_log(1)[0])

    def failing(*args: Any) -> None:
        raise OSError("disk gone")

    monkeypatch.setattr(os, "fsync", failing)
    monkeypatch.setattr(os, "ftruncate", failing)
    with pytest.raises(BaseExceptionGroup) as both:
        log.append(agent_log(2)[1])
    assert len(both.value.exceptions) == 2


# --- JSONL lines across the reader's pieces -------------------------------------------------------------


def test_a_torn_final_line_longer_than_a_read_piece_is_a_torn_tail(tmp_path: Path) -> None:
    """SESSION-TORN-TAIL.1: a final fragment read in several 1 MiB pieces, EOF inside it."""
    batches = agent_log(1, open_tail=True)
    path = write_jsonl(tmp_path / "log.jsonl", [lines_of(batches[0])])
    with open(path, "ab") as stream:
        stream.write(b'{"type":"plugin/x","data":"' + b"f" * (3 << 20))
    result = storage.load(path)
    assert result.torn is not None and result.torn.rule == "SESSION-TORN-TAIL.1"


def test_a_line_that_passes_the_bound_in_its_last_piece_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """SESSION-STORAGE-RECORD.1: the bound between two pieces (1 MiB read, then the rest with the newline)."""
    monkeypatch.setattr(jsonlread, "MAX_RECORD_BYTES", (1 << 20) + (1 << 19))
    batches = agent_log(1)
    long = b'{"type":"plugin/x","seq":%d,"time":0,"data":"' % len(batches[0]) + b"l" * (7 << 18) + b'","ignorable":true}'
    path = write_jsonl(tmp_path / "log.jsonl", [lines_of(batches[0]), [long]])
    refused = violation(lambda: storage.load(path))
    assert refused.rule == "SESSION-STORAGE-RECORD.1" and refused.line == 2 + len(lines_of(batches[0]))


def test_after_a_defect_a_line_beyond_the_bound_across_blocks_is_refused_at_its_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """SESSION-STORAGE-RECORD.1 where the reader reads blocks after a defect: the line that spans blocks."""
    monkeypatch.setattr(jsonlread, "MAX_RECORD_BYTES", 1 << 20)
    batches = agent_log(1, open_tail=True)
    path = write_jsonl(tmp_path / "log.jsonl", [lines_of(batches[0]), [b"{", b"x" * (3 << 20)]])
    refused = violation(lambda: storage.load(path))
    assert refused.rule == "SESSION-STORAGE-RECORD.1" and refused.line == 3 + len(lines_of(batches[0]))


def test_after_a_defect_blocks_that_might_end_a_turn_but_do_not_leave_a_torn_tail(tmp_path: Path) -> None:
    """SESSION-TORN-TAIL.3: escaped text is parsed (it could spell turn/end), and holds no turn/end: torn, not corrupt."""
    batches = agent_log(1, open_tail=True)
    escaped = [b'{"type":"plugin/x","seq":99,"time":0,"data":"a\\\\b' + b"e" * 1000 + b'"}'] * 3000
    path = write_jsonl(tmp_path / "log.jsonl", [lines_of(batches[0]), [b"{", *escaped]])
    assert path.stat().st_size > 2 << 20
    result = storage.load(path)
    assert result.torn is not None and result.torn.rule == "SESSION-TORN-TAIL.3"


# --- zstd frames ----------------------------------------------------------------------------------------


def test_a_torn_final_frame_that_fails_to_decode_recovers_nothing(tmp_path: Path) -> None:
    """SESSION-ZSTD-FRAMES.4: the complete records of a torn frame are recovered only if it decodes that far."""
    batches = agent_log(2, open_tail=True)
    path = write_zstd(tmp_path / "log.jsonl.zstd", [lines_of(batches[0])])
    size = path.stat().st_size
    whole = frame(b"".join(line + b"\n" for line in lines_of(batches[1])) * 400)
    torn = bytearray(whole[:-6])  # the last block cut short: those before it are complete
    for at in range(12, len(torn)):  # a byte inside the first block whose change the decoder cannot get past
        torn[at] ^= 0xFF
        try:
            zstandard.ZstdDecompressor().decompressobj().decompress(bytes(torn))
        except zstandard.ZstdError:
            break
        torn[at] ^= 0xFF
    else:
        pytest.fail("no corruption the decoder refuses")
    path.write_bytes(path.read_bytes() + bytes(torn))
    result = storage.load(path)
    assert result.torn is not None and result.recovered == 0 and result.torn.offset == size


@pytest.mark.parametrize("enabled", [True, False])
def test_a_load_leaves_the_collector_as_it_found_it_whether_it_loads_or_is_refused(tmp_path: Path, enabled: bool) -> None:
    """`storage.collector_paused`: the cyclic collector is off while a log loads, and as it was after, however it ends."""
    good, bad = tmp_path / "good.jsonl", tmp_path / "bad.jsonl"
    storage.save(good, {"version": 0, "id": "s", "createdAt": 0}, [])
    bad.write_bytes(good.read_bytes() + b'{"type":"turn/start","seq":0,"time":0,"data":{"turn":1},"extra":1}\n'
                    + b'{"type":"turn/end","seq":1,"time":0,"data":{"turn":1,"reason":{"kind":"completed"}}}\n')
    was = gc.isenabled()
    try:
        (gc.enable if enabled else gc.disable)()
        assert storage.load(good).events == []
        assert gc.isenabled() is enabled
        with pytest.raises(SpecViolation, match="unknown envelope keys") as refused:
            storage.load(bad)
        assert refused.value.rule == "SESSION-EVENT-ENVELOPE.1" and refused.value.line == 2
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()
