"""spec/07-persistence.md, SESSION-STORAGE-WRITE.4: every part of the revision token makes a repair stale on its own.

A repair commits only the plan it was computed from: under the write lock it reads the log's
revision token again and refuses with `repair is stale` when it differs. The token of a file is
(device, inode, size read, mtime), that of a SQLite session (revision, row count, last row seq).
A token that lost a part would let a repair cut or answer what another writer changed in just
that part; so each part is pinned to what it reads, and each, changed alone, makes a repair stale.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import sqlite3
from pathlib import Path

import pytest
from hostile import clean_log
from sessionspec import storage
from sessionspec.errors import SpecViolation
from sessionspec.storage.gate import LoadResult

STALE = "SESSION-STORAGE-WRITE.4"
FILE_PARTS = ("device", "inode", "size read", "mtime")
SQLITE_PARTS = ("revision", "row count", "last row seq")


def stale(path: Path, plan: LoadResult) -> SpecViolation:
    before = path.read_bytes()
    with pytest.raises(SpecViolation) as refused:
        storage.repair(path, plan=plan)
    assert refused.value.rule == STALE and "repair is stale" in refused.value.message
    assert path.read_bytes() == before
    return refused.value


@pytest.mark.parametrize("fmt", ["jsonl", "jsonl.zstd"])
def test_a_files_token_is_its_device_inode_size_read_and_mtime(tmp_path: Path, fmt: str) -> None:
    path = clean_log(tmp_path / f"log.{fmt}", fmt, open_tail=True)
    status = os.stat(path)
    assert storage.load(path).revision == (status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns)


def test_a_sessions_token_is_its_revision_row_count_and_last_row_seq(tmp_path: Path) -> None:
    path = clean_log(tmp_path / "log.sqlite", "sqlite", open_tail=True)
    with contextlib.closing(sqlite3.connect(path)) as connection:
        expected = (connection.execute("SELECT revision FROM sessions").fetchone()[0],
                    *connection.execute("SELECT count(*), max(seq) FROM events").fetchone())
    assert storage.load(path).revision == expected


@pytest.mark.parametrize("part", range(4), ids=FILE_PARTS)
@pytest.mark.parametrize("fmt", ["jsonl", "jsonl.zstd"])
def test_a_plan_whose_file_token_differs_in_one_part_is_stale(tmp_path: Path, fmt: str, part: int) -> None:
    path = clean_log(tmp_path / f"log.{fmt}", fmt, open_tail=True)
    plan = storage.load(path)
    token = list(plan.revision)
    token[part] += 1
    stale(path, dataclasses.replace(plan, revision=tuple(token)))
    assert storage.repair(path, plan=plan).torn is None  # the plan itself still commits


@pytest.mark.parametrize("part", range(3), ids=SQLITE_PARTS)
def test_a_plan_whose_session_token_differs_in_one_part_is_stale(tmp_path: Path, part: int) -> None:
    path = clean_log(tmp_path / "log.sqlite", "sqlite", open_tail=True)
    plan = storage.load(path)
    token = list(plan.revision)
    token[part] += 1
    stale(path, dataclasses.replace(plan, revision=tuple(token)))
    assert not storage.repair(path, plan=plan).closers


@pytest.mark.parametrize("fmt", ["jsonl", "jsonl.zstd"])
def test_a_file_changed_in_one_part_alone_makes_the_repair_stale(tmp_path: Path, fmt: str) -> None:
    """The mtime alone (touched), the inode alone (the same bytes and mtime under a new inode), the size alone
    (bytes appended, the mtime set back): each is another writer's doing the repair must not overwrite."""
    path = clean_log(tmp_path / f"log.{fmt}", fmt, open_tail=True)
    for change in ("mtime", "inode", "size"):
        plan = storage.load(path)
        status = os.stat(path)
        if change == "mtime":
            os.utime(path, ns=(status.st_atime_ns, status.st_mtime_ns + 1_000_000))
        elif change == "inode":
            twin = tmp_path / "twin"
            shutil.copyfile(path, twin)
            os.utime(twin, ns=(status.st_atime_ns, status.st_mtime_ns))
            os.replace(twin, path)
            assert os.stat(path).st_ino != status.st_ino and os.stat(path).st_size == status.st_size
        else:
            with open(path, "ab") as stream:
                stream.write(b" ")
            os.utime(path, ns=(status.st_atime_ns, status.st_mtime_ns))
        stale(path, plan)
        if change == "size":
            path.write_bytes(path.read_bytes()[:-1])


def test_a_session_changed_in_one_part_alone_makes_the_repair_stale(tmp_path: Path) -> None:
    """The revision alone (bumped), the row count alone (a middle row deleted), the last seq alone (the last row
    moved): each changes only its own part of the token."""
    path = clean_log(tmp_path / "log.sqlite", "sqlite", open_tail=True)
    changes = {
        "revision": "UPDATE sessions SET revision = revision + 1",
        "row count": "DELETE FROM events WHERE seq = 1",
        "last row seq": "UPDATE events SET seq = seq + 7 WHERE seq = (SELECT max(seq) FROM events)",
    }
    for part, statement in changes.items():
        copy = tmp_path / f"{part}.sqlite"
        shutil.copyfile(path, copy)
        plan = storage.load(copy)
        with contextlib.closing(sqlite3.connect(copy)) as connection:
            connection.execute(statement)
            connection.commit()
            now = (connection.execute("SELECT revision FROM sessions").fetchone()[0],
                   *connection.execute("SELECT count(*), max(seq) FROM events").fetchone())
        differing = [name for name, a, b in zip(SQLITE_PARTS, plan.revision, now, strict=True) if a != b]
        assert differing == [part]
        with pytest.raises(SpecViolation) as refused:
            storage.repair(copy, plan=plan)
        assert refused.value.rule == STALE, part
