"""spec/07-persistence.md: tests that kill what the mutation lane found no storage test to notice (issue 33).

The storage tests' own figure was 89.2% (33 of 37 non-equivalent mutants of `storage/`) with four
gaps: a test that read a bound from the module it tested (now `tests/test_07_exact_bounds.py` states
65,536), a pseudo file system left out of the special-file list, the writer's `flock` removed, and
the error for an empty file without a suffix. And the load's fast forms (`live/fastrecord.py`, the
block reader's negative-zero check in `live/fasttext.py`) are reached only by storage, which the
conformance run never drives: 7 mutants of them lived (a record without `data` loaded as a
KeyError, an `ignorable: false` record loaded marked ignorable, a SQLite time of 2**60 streamed
out). Each test here names the mutant it kills (each checked by hand).
"""

from __future__ import annotations

import contextlib
import fcntl
import io
import os
import sqlite3
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hostile import HEADER, agent_log, run_cli, write_sqlite
from sessionspec import storage
from sessionspec.errors import SpecViolation
from sessionspec.jsontext import dumps
from sessionspec.storage import formats

PSEUDO_FILE_SYSTEMS = ["proc", "sysfs", "debugfs", "tracefs", "securityfs", "configfs", "cgroup", "cgroup2", "bpf",
                       "pstore", "efivarfs", "fusectl", "binfmt_misc", "devpts", "mqueue", "nsfs", "selinuxfs", "autofs",
                       "rpc_pipefs", "hugetlbfs"]
"""SESSION-STORAGE-RECORD.2's pseudo file systems, as spec/07 names them (Linux's, from /proc/self/mountinfo)."""


# --- SESSION-STORAGE-RECORD.2: every pseudo file system of the list ---------------------------------------------------


@contextlib.contextmanager
def mounted_as(monkeypatch: pytest.MonkeyPatch, path: Path, file_system: str) -> Iterator[None]:
    """`path` seen as a file of `file_system`: a file system of no blocks, its device named so in the mount table."""
    device = path.stat().st_dev
    table = f"36 25 {os.major(device)}:{os.minor(device)} / /mnt rw,relatime - {file_system} none rw\n"
    real_statvfs = os.fstatvfs

    class NoBlocks:
        def __init__(self, fd: int) -> None:
            self.f_blocks = 0 if os.fstat(fd).st_dev == device else real_statvfs(fd).f_blocks

    def mount_table(name: str, *args: Any, **kwargs: Any) -> Any:
        assert name == "/proc/self/mountinfo"
        return io.StringIO(table)

    with monkeypatch.context() as patch:
        patch.setattr(formats.os, "fstatvfs", NoBlocks)
        patch.setattr(formats, "open", mount_table, raising=False)
        yield


@pytest.mark.parametrize("file_system", PSEUDO_FILE_SYSTEMS)
def test_a_file_of_every_pseudo_file_system_is_refused_before_it_is_read(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, file_system: str) -> None:
    """Mutant: any name left out of `formats.PSEUDO_FILE_SYSTEMS` (the real machine mounts only a few of them)."""
    path = tmp_path / "log.jsonl"
    storage.save(path, {k: v for k, v in HEADER.items() if k not in ("type", "delegationDepth")}, agent_log(1)[0])
    with mounted_as(monkeypatch, path, file_system), pytest.raises(storage.Unreadable) as refused:
        storage.load(path)
    assert refused.value.rule == "SESSION-STORAGE-RECORD.2"
    assert f"a file of the {file_system} pseudo file system" in str(refused.value)


def test_a_file_system_of_no_blocks_that_is_not_a_pseudo_one_is_read(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The other side: a file system the list does not name (tmpfs, a disk) is storage, however it counts blocks."""
    path = tmp_path / "log.jsonl"
    storage.save(path, {k: v for k, v in HEADER.items() if k not in ("type", "delegationDepth")}, agent_log(1)[0])
    with mounted_as(monkeypatch, path, "ext4"):
        assert len(storage.load(path).events) == len(agent_log(1)[0])


# --- SESSION-STORAGE-WRITE.4: the writer's flock ----------------------------------------------------------------------


def _log(path: Path, *, open_tail: bool) -> None:
    batches = agent_log(2, open_tail=open_tail)
    log = storage.save(path, {k: v for k, v in HEADER.items() if k not in ("type", "delegationDepth")}, batches[0])
    log.append(batches[1])


@pytest.mark.parametrize(("fmt", "write"), [("jsonl", "append"), ("jsonl.zstd", "repair")])
def test_a_writer_waits_while_another_holds_the_logs_lock(tmp_path: Path, fmt: str, write: str) -> None:
    """A second writer is held off while the first holds the log's exclusive lock, and writes once it is released.
    (Mutants: `fcntl.flock(fd, fcntl.LOCK_EX)` deleted in `durable.append`, or in `durable.repair`.)"""
    path = tmp_path / f"log.{fmt}"
    _log(path, open_tail=write == "repair")
    size = path.stat().st_size
    if write == "append":
        log, seq = storage.open_for_append(path), len(storage.load(path).events)
        event = {"type": "plugin/hostile", "seq": seq, "time": 1, "data": None, "ignorable": True}
    writes: dict[str, Callable[[], object]] = {"append": lambda: log.append([event]), "repair": lambda: storage.repair(path)}
    failed: list[BaseException] = []

    def second_writer() -> None:
        try:
            writes[write]()
        except BaseException as error:  # reported by the assertion below
            failed.append(error)

    holder = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(holder, fcntl.LOCK_EX)
        thread = threading.Thread(target=second_writer, daemon=True)
        thread.start()
        thread.join(1.0)
        assert thread.is_alive() and path.stat().st_size == size, "the second writer wrote while the first held the lock"
    finally:
        os.close(holder)  # releases the lock
    thread.join(60)
    assert not thread.is_alive() and not failed, failed
    assert path.stat().st_size > size


# --- formats.detect: an empty file without a suffix -------------------------------------------------------------------


def test_an_empty_file_without_a_suffix_is_no_log_to_read_but_a_path_to_write(tmp_path: Path) -> None:
    """An empty file says nothing of its format: read, it is no session log (exit 2, `Unreadable`), where an empty
    `.jsonl` is a log without its header (SESSION-STORAGE-HEADER.1, exit 1); written, it is a new JSONL log.
    (Mutants: `not head or not existing` in `detect`, which read it as JSONL; the `existing` test dropped.)"""
    path = tmp_path / "session"
    path.write_bytes(b"")
    with pytest.raises(storage.Unreadable, match="not a session log"):
        storage.load(path)
    assert run_cli("check", str(path)).code == 2
    assert formats.detect(path, existing=False) == "jsonl"
    named = tmp_path / "session.jsonl"
    named.write_bytes(b"")
    with pytest.raises(SpecViolation) as refused:
        storage.load(named)
    assert refused.value.rule == "SESSION-STORAGE-HEADER.1"
    assert run_cli("check", str(named)).code == 1


# --- the load's fast forms, through storage ---------------------------------------------------------------------------


def _without(record: dict[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in record.items() if k != key}


ENVELOPE_DEFECTS: list[tuple[str, Callable[[dict[str, Any]], dict[str, Any]], str]] = [
    ("no data", lambda r: _without(r, "data"), "SESSION-EVENT-ENVELOPE.5"),
    ("ignorable false", lambda r: {**r, "ignorable": False}, "SESSION-EVENT-ENVELOPE.6"),
    ("ignorable 1", lambda r: {**r, "ignorable": 1}, "SESSION-EVENT-ENVELOPE.6"),
    ("an unknown key", lambda r: {**r, "extra": 1}, "SESSION-EVENT-ENVELOPE.1"),
    ("an empty type", lambda r: {**r, "type": ""}, "SESSION-EVENT-ENVELOPE.8"),
    ("a numeric type", lambda r: {**r, "type": 3}, "SESSION-EVENT-ENVELOPE.2"),
    ("time true", lambda r: {**r, "time": True}, "SESSION-EVENT-ENVELOPE.4"),
    ("time 5.0", lambda r: {**r, "time": 5.0}, "SESSION-EVENT-ENVELOPE.4"),
    # Past the safe range, JSON text is the text reader's (SESSION-LOSSLESS-TEXT.4): only SQLite hands the fast form
    # such a time (below).
    ("time 2**53", lambda r: {**r, "time": 2**53}, "SESSION-LOSSLESS-TEXT.4"),
]
"""Records the fast form must hand to the reference (`envelope.parse_event`), with the rule the reference refuses them
by. (Mutants of `stored_event`: `"data" in raw` dropped, `raw.get("ignorable", True) is True` loosened, the key set, the
type's, time's tests and their range.)"""


@pytest.mark.parametrize(("name", "defect", "rule"), ENVELOPE_DEFECTS, ids=[case[0] for case in ENVELOPE_DEFECTS])
def test_a_jsonl_record_the_reference_refuses_is_refused_by_the_load(tmp_path: Path, name: str,
                                                                     defect: Callable[[dict[str, Any]], dict[str, Any]],
                                                                     rule: str) -> None:
    """A defect in the middle of a closed turn (a turn/end follows: corruption, SESSION-TORN-TAIL.2) is refused by the
    rule the reference gives it, at its line; never loaded, never a KeyError."""
    batches = agent_log(2)
    records = [record for batch in batches for record in batch]
    records[3] = defect(records[3])
    path = tmp_path / "log.jsonl"
    path.write_bytes(b"".join((dumps(record) + "\n").encode() for record in [HEADER, *records]))
    for read in (lambda: storage.load(path), lambda: list(storage.stream(path))):
        with pytest.raises(SpecViolation) as refused:
            read()
        assert refused.value.rule == rule and refused.value.line == 5, (name, refused.value)


@pytest.mark.parametrize(("column", "value", "rule"), [
    ("time", 2**60, "SESSION-LOSSLESS-JSON.2"),
    ("time", -2**60, "SESSION-LOSSLESS-JSON.2"),
    ("type", "", "SESSION-EVENT-ENVELOPE.8"),
])
def test_a_sqlite_row_the_reference_refuses_is_refused_by_the_load_and_the_stream(
        tmp_path: Path, column: str, value: object, rule: str) -> None:
    """SQLite hands the gate integers of any size: a time of 2**60 streamed out as an event. (Mutant: `-_MAX <= time
    <= _MAX` dropped from `stored_event`.)"""
    path = write_sqlite(tmp_path / "log.sqlite", agent_log(2))
    with contextlib.closing(sqlite3.connect(path)) as connection:
        connection.execute(f"UPDATE events SET {column} = ? WHERE seq = 2", (value,))
        connection.commit()
    for read in (lambda: storage.load(path), lambda: list(storage.stream(path))):
        with pytest.raises(SpecViolation) as refused:
            read()
        assert refused.value.rule == rule and refused.value.seq == 2, refused.value


def test_negative_zero_after_many_dots_in_one_block_is_refused(tmp_path: Path) -> None:
    """SESSION-LOSSLESS-TEXT.5: `-0.0` is not lossless JSON text. The block reader
    looks for it by its dot, and past its 64th dot by a search: here 200 decimals come first, in the same block.
    (Mutant: `_negative_zero` returning False after its 64th dot, which let the block past the fast reader.)"""
    batch = agent_log(1)[0]
    decimals = [{"type": "plugin/hostile", "seq": len(batch) + i, "time": 1, "data": 1.5, "ignorable": True}
                for i in range(200)]
    seq = len(batch) + len(decimals)
    zero = {"type": "plugin/hostile", "seq": seq, "time": 1, "data": [0.5, -0.0], "ignorable": True}
    closing = [{**record, "seq": seq + 1 + i} for i, record in enumerate(agent_log(1)[0])]
    path = tmp_path / "log.jsonl"
    path.write_bytes(b"".join((dumps(record) + "\n").encode() for record in [HEADER, *batch, *decimals, zero, *closing]))
    with pytest.raises(SpecViolation) as refused:
        storage.load(path)
    # The text's own rule, at its line: a block reader that missed it hands the value to the envelope's value rules,
    # which refuse -0.0 too, but as a value (SESSION-LOSSLESS-JSON.4), not as the text it was.
    assert refused.value.rule == "SESSION-LOSSLESS-TEXT.5" and refused.value.line == seq + 2, refused.value
