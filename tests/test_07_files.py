"""spec/07-persistence.md, the file under a log: what it is (SESSION-STORAGE-RECORD.2) and whether it holds still (.4).

A symbolic link to `/proc/self/mem` was a regular file by its mode: `check`, `show` and `repair`
ended in an `OSError` traceback and exit 1. A zstd log truncated while it was read sent the
reader into an endless loop of empty reads.
"""

from __future__ import annotations

import io
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
from hostile import SPECIAL_FILES, agent_log, clean_log, lines_of, run_cli, special_files, write_zstd
from sessionspec import storage
from sessionspec.errors import SpecViolation
from sessionspec.logcheck.checkfile import check_path
from sessionspec.storage import formats, jsonlread, zstdlog
from sessionspec.storage.formats import Unreadable
from sessionspec.storage.zstdlog import ZstdReader

TOOLS = (("check",), ("show",), ("repair",), ("repair", "--write"))
RECORD_2, RECORD_4 = "SESSION-STORAGE-RECORD.2", "SESSION-STORAGE-RECORD.4"


@pytest.mark.parametrize("kind", sorted(SPECIAL_FILES))
def test_a_log_that_is_not_a_regular_file_after_links_is_unreadable_by_its_rule(tmp_path: Path, kind: str) -> None:
    """Pseudo files and devices behind a link named as a log of each backend: exit 2, the rule, what the file is."""
    links = list(special_files(tmp_path, (kind,)))
    if not links:
        pytest.skip(f"{SPECIAL_FILES[kind]} does not exist here")
    for _, link in links:
        for tool in TOOLS:
            ran = run_cli(*tool, str(link))
            assert ran.traceback is None and ran.code == 2, (link.name, tool, ran)
            assert RECORD_2 in ran.err and "not a regular file" in ran.err, (link.name, tool, ran.err)
        with pytest.raises(Unreadable) as refused:
            storage.load(link)
        assert refused.value.rule == RECORD_2


def test_the_pseudo_file_system_is_named_and_storage_is_not() -> None:
    with open("/proc/self/status", "rb") as proc:
        assert formats.pseudo_file_system(proc.fileno()) == "proc"
    with open(__file__, "rb") as source:
        assert formats.pseudo_file_system(source.fileno()) is None


def test_without_a_mount_table_to_ask_a_file_is_judged_by_its_type_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    real_open = open

    def no_mounts(name: Any, *args: Any, **kwargs: Any) -> Any:
        if str(name) == "/proc/self/mountinfo":
            raise FileNotFoundError(name)
        return real_open(name, *args, **kwargs)

    monkeypatch.setattr("builtins.open", no_mounts)
    with real_open("/proc/self/status", "rb") as proc:
        assert formats.pseudo_file_system(proc.fileno()) is None


def test_a_file_system_without_blocks_that_the_mount_table_does_not_name_is_storage(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """ramfs has no blocks either, and holds real files: only a file system the mount table names pseudo is refused."""

    class NoBlocks:
        f_blocks = 0

    monkeypatch.setattr(os, "fstatvfs", lambda fd: NoBlocks())
    path = clean_log(tmp_path / "log.jsonl", "jsonl")
    with open(path, "rb") as stream:
        assert formats.pseudo_file_system(stream.fileno()) is None
    assert storage.load(path).torn is None


class FailingStream(io.RawIOBase):
    """A file whose reads fail with EIO once `good` bytes have been read: a disk that gives up under the reader."""

    def __init__(self, data: bytes, good: int) -> None:
        self._data, self._good, self._pos = data, good, 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        self._pos = {io.SEEK_SET: offset, io.SEEK_CUR: self._pos + offset, io.SEEK_END: len(self._data) + offset}[whence]
        return self._pos

    def readinto(self, buffer: Any) -> int:
        if self._pos >= self._good:
            raise OSError(5, "Input/output error")
        chunk = self._data[self._pos: min(self._good, self._pos + len(buffer))]
        buffer[: len(chunk)] = chunk
        self._pos += len(chunk)
        return len(chunk)


class FailingFile(io.FileIO):
    """A log file whose reads fail with EIO once `good` bytes have been read (a file, so a reader can fstat it)."""

    def __init__(self, path: Path, good: int) -> None:
        super().__init__(path, "rb")
        self._good = good

    def readinto(self, buffer: Any) -> int:
        at = self.tell()
        if at >= self._good:
            raise OSError(5, "Input/output error")
        return super().readinto(memoryview(buffer).cast("B")[: self._good - at])


def test_a_first_read_that_fails_makes_the_log_unreadable_by_its_rule(tmp_path: Path) -> None:
    with pytest.raises(Unreadable) as refused:
        formats.read_or_refuse(io.BufferedReader(FailingStream(b"{}", 0)), 16, tmp_path / "log.jsonl")
    assert refused.value.rule == RECORD_4 and "fails to read" in str(refused.value)


def test_a_zstd_read_that_fails_later_is_refused_at_its_line_never_a_torn_tail(tmp_path: Path) -> None:
    path = clean_log(tmp_path / "log.jsonl.zstd", "jsonl.zstd", turns=3)
    data = path.read_bytes()
    stream = io.BufferedReader(FailingStream(data, len(data) - 40), buffer_size=64)
    reader = ZstdReader(path, stream=stream)
    with pytest.raises(SpecViolation) as refused:
        list(reader.records())
    assert refused.value.rule == RECORD_4 and refused.value.line is not None and "a read failed" in refused.value.message


@pytest.fixture
def watchdog() -> Iterator[None]:
    """A read that loops for ever fails the test after 30 s instead of hanging the run (SIGALRM, main thread)."""

    def expire(signum: int, frame: FrameType | None) -> None:
        raise TimeoutError("the reader did not return")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(30)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


@pytest.mark.parametrize("keep", [0.5, 0.0, 0.99])
def test_a_zstd_log_truncated_while_it_is_read_is_refused(tmp_path: Path, watchdog: None, keep: float) -> None:
    """SESSION-STORAGE-RECORD.4: reads come back short of the size at open; the reader looped on them before."""
    path = clean_log(tmp_path / "log.jsonl.zstd", "jsonl.zstd", turns=300)
    size = path.stat().st_size
    assert size > 100_000  # beyond the reader's buffer, so the cut is met by a read, not served from memory
    reader = ZstdReader(path)
    records = reader.records()
    next(records)
    os.truncate(path, int(size * keep))
    with pytest.raises(SpecViolation) as refused:
        list(records)
    assert refused.value.rule == RECORD_4 and "shrank" in refused.value.message
    assert reader.torn is None


def test_a_zstd_log_truncated_before_its_structure_is_read_is_refused_by_the_structure(
        tmp_path: Path, watchdog: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """The structural pass reads frame headers at offsets the size at open promised; a cut file breaks that promise."""
    batches = agent_log(40)
    path = write_zstd(tmp_path / "log.jsonl.zstd", [lines_of(batch) for batch in batches])
    size = path.stat().st_size
    real_fstat = os.fstat
    monkeypatch.setattr(os, "fstat", lambda fd: _grown(real_fstat(fd), size))
    path.write_bytes(path.read_bytes()[: size // 2])
    with pytest.raises(SpecViolation) as refused:
        storage.load(path)
    assert refused.value.rule == RECORD_4 and "byte" in refused.value.message


def _grown(status: os.stat_result, size: int) -> os.stat_result:
    """`status` with the size it had before the file was cut (what a reader that opened it then saw)."""
    fields = list(status)
    fields[6] = size
    return os.stat_result(fields)


def test_a_large_frame_truncated_between_its_two_decodes_is_refused(
        tmp_path: Path, watchdog: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """A frame past the reader's buffer is decoded twice; a file cut between the two is refused (.4), never read short."""
    monkeypatch.setattr(zstdlog, "PLAIN_BUFFER", 1)
    batch = [{"type": "plugin/x", "seq": k, "time": 0, "data": os.urandom(2000).hex(), "ignorable": True}
             for k in range(300)]
    path = tmp_path / "log.jsonl.zstd"
    storage.save(path, {"version": 0, "id": "h", "createdAt": 1}, batch)
    size = path.stat().st_size
    records = ZstdReader(path).records()
    next(records)
    os.truncate(path, size // 2)
    with pytest.raises(SpecViolation) as refused:
        list(records)
    assert refused.value.rule == RECORD_4 and "changed while it was read" in refused.value.message


def test_a_jsonl_log_truncated_while_it_is_read_is_judged_as_it_was_read(tmp_path: Path, watchdog: None) -> None:
    """A JSONL reader reads to the end of what is there: a log cut under it is a log that ends in a fragment (a torn
    tail, SESSION-TORN-TAIL.1), whose revision token is of the cut file, so a repair of that plan commits to the file
    as it now is, and to nothing another writer could have changed since (SESSION-STORAGE-WRITE.4)."""
    path = clean_log(tmp_path / "log.jsonl", "jsonl", turns=300)
    size = path.stat().st_size
    reader = storage.jsonl.JsonlReader(path)
    records = reader.records()
    read = [next(records)]
    cut = path.read_bytes().index(b"\n", size // 2) + 5  # inside a line
    os.truncate(path, cut)
    read.extend(records)
    assert reader.torn is not None and reader.torn.rule == "SESSION-TORN-TAIL.1" and reader.revision[2] == cut
    plan = storage.load(path)
    assert storage.repair(path, plan=plan).torn is None


def test_a_jsonl_read_that_fails_later_is_refused_at_its_line(tmp_path: Path) -> None:
    path = clean_log(tmp_path / "log.jsonl", "jsonl", turns=3)
    data = path.read_bytes()
    reader = storage.jsonl.JsonlReader(path, stream=io.BufferedReader(FailingStream(data, len(data) - 40), buffer_size=64))
    with pytest.raises(SpecViolation) as refused:
        list(reader.records())
    assert refused.value.rule == RECORD_4 and refused.value.line is not None and "fails to read" in refused.value.message
    assert reader.torn is None  # never judged a torn tail: no repair may cut what could not be read


@pytest.mark.parametrize(("good", "block"), [(20, None), (2000, None), (-40, None), (5000, 64)],
                         ids=["header", "middle", "end", "inside a line longer than a block"])
def test_every_jsonl_reader_refuses_a_read_that_fails_at_its_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  good: int, block: int | None) -> None:
    """SESSION-STORAGE-RECORD.4 on every tool's way through the one JSONL reader: the load gate, the checker's runs
    (logcheck), `repair`; refused at the line it could not read (exit 1), never a traceback or a torn tail."""
    if block is not None:
        monkeypatch.setattr(jsonlread, "BLOCK", block)
    path = clean_log(tmp_path / "log.jsonl", "jsonl", turns=40)
    data = path.read_bytes()
    cut = good % len(data)
    line = data[:cut].count(b"\n") + 1
    monkeypatch.setattr(jsonlread, "open_regular", lambda name: io.BufferedReader(FailingFile(name, cut), buffer_size=64))
    with pytest.raises(SpecViolation) as refused:
        storage.load(path)
    assert refused.value.rule == RECORD_4 and refused.value.line is not None and refused.value.line <= line
    for jobs in (1, 2):
        report = check_path(str(path), jobs=jobs)
        assert [(f.rule, f.line) for f in report.findings] == [(RECORD_4, refused.value.line)], report.findings
    for tool in (("repair",), ("repair", "--write")):
        ran = run_cli(*tool, str(path))
        assert ran.traceback is None and ran.code == 1 and RECORD_4 in ran.err, ran
    assert path.read_bytes() == data
