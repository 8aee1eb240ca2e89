"""spec/07-persistence.md, bounds: what a small or strange file can cost a reader is bounded by rules with IDs.

Issue 15, findings 6 and 7: a 16 KB zstd log of 100 MB of newlines kept every tool busy; a 25 MB
line holding a packed row of 5 M members ran `repair` out of memory; a FIFO blocked every tool;
a JSONL whose first line is `[]` named no rule; a writer killed inside `save` left a temp file
that nothing removed.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest
import zstandard
from hostile import HEADER, agent_log, clean_log, frame, lines_of, oracle, oracle_peak, run_cli, write_jsonl, write_zstd
from sessionspec import jsontext, storage
from sessionspec.errors import SpecViolation
from sessionspec.jsontext import dumps, parse
from sessionspec.storage import chunkrows, durable, zstdframes, zstdlog

TOOLS = (("check",), ("show",), ("repair",), ("repair", "--write"))


def test_a_frame_of_a_hundred_million_newlines_is_refused_at_once(tmp_path: Path) -> None:
    """SESSION-ZSTD-FRAMES.5: a frame decodes to at most 65,536 records; the 100 MB frame is refused, not scanned."""
    batches = agent_log(1)
    path = write_zstd(tmp_path / "newlines.jsonl.zstd", [lines_of(batch) for batch in batches])
    with open(path, "ab") as stream:
        stream.write(zstandard.ZstdCompressor(level=19, write_checksum=True).compress(b"\n" * (100 << 20)))
    assert path.stat().st_size < 64_000
    verdict = oracle(path)
    assert (verdict.state, verdict.rule) == ("refused", "SESSION-ZSTD-FRAMES.5")
    for tool in TOOLS:
        ran = run_cli(*tool, str(path))
        assert ran.traceback is None and ran.code == 1 and "SESSION-ZSTD-FRAMES.5" in ran.out + ran.err, (tool, ran)


def test_a_writer_splits_a_batch_into_frames_within_the_bounds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """SESSION-ZSTD-FRAMES.5: what the writer writes the reader reads (a batch over the bound is several frames)."""
    monkeypatch.setattr(zstdframes, "MAX_FRAME_RECORDS", 5)
    events = [event for batch in agent_log(3) for event in batch]
    path = tmp_path / "split.jsonl.zstd"
    storage.save(path, {"version": 0, "id": "h", "createdAt": 1}, events)
    with open(path, "rb") as stream:
        frames = list(zstdlog.frames(stream, path.stat().st_size, str(path)))
    records = len(chunkrows.pack(events))
    assert len(frames) == 1 + -(-records // 5)
    assert [e.to_json() for e in storage.load(path).events] == events


def test_a_tail_of_junk_after_a_defect_is_passed_over_unparsed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """SESSION-TORN-TAIL.2: after a defect, lines that cannot hold a turn/end are counted, not parsed."""
    batches = agent_log(2, open_tail=True)
    path = write_jsonl(tmp_path / "junk.jsonl", [lines_of(batch) for batch in batches] + [[b"{"] + [b"x"] * 200_000])
    parsed: list[int] = []
    original = jsontext.parse

    def counting(raw: bytes | str) -> object:
        parsed.append(1)
        return original(raw)

    monkeypatch.setattr("sessionspec.storage.gate.read_line", counting)
    result = storage.load(path)
    assert result.torn is not None and result.torn.line == 2 + sum(len(lines_of(b)) for b in batches)
    assert len(parsed) < 100
    ran = run_cli("check", str(path))
    assert ran.code == 1 and "SESSION-TORN-TAIL.3" in ran.out


def members_row(seq: int, members: int) -> bytes:
    data = {"turn": 1, "step": 1, "index": 0, "dt": [0] * (members - 1), "texts": [""] * members}
    return dumps({"type": "text-chunks", "seq0": seq, "time0": 0, "data": data}).encode()


def test_a_packed_row_of_more_than_65536_members_is_refused_before_expanding(tmp_path: Path) -> None:
    """SESSION-CHUNK-ROWS.8 (finding 6): the bound holds on every backend, in `check` and `repair` alike."""
    batches = agent_log(1, open_tail=True)
    seq = len(batches[0])
    tail = [lines_of(batches[0]), [members_row(seq, 70_000)]]
    for fmt, write in (("jsonl", write_jsonl), ("jsonl.zstd", write_zstd)):
        path = write(tmp_path / f"row.{fmt}", tail)
        verdict, peak = oracle_peak(path)
        assert verdict.state == "repairable" and verdict.torn and peak < 64 << 20
        checked = run_cli("check", str(path))
        assert checked.code == 1 and "SESSION-CHUNK-ROWS.8" in checked.out, checked
        assert run_cli("repair", "--write", str(path)).code == 0 and oracle(path).state == "clean"


def test_the_writer_splits_a_run_longer_than_the_member_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(chunkrows, "MAX_MEMBERS", 4)
    batch = agent_log(1)[0]
    chunks = [event for event in batch if event["type"] == "assistant/chunk"]
    more = [{**chunks[0], "seq": chunks[-1]["seq"] + 1 + k} for k in range(5)]
    rows = chunkrows.pack([*chunks, *more])
    assert [len(r["data"]["texts"]) if r["type"] == "text-chunks" else 1 for r in rows] == [4, 4, 1]


@pytest.mark.nightly
def test_a_25_mb_line_of_5_million_members_is_refused_in_bounded_memory(tmp_path: Path) -> None:
    """The issue's case, each tool in a subprocess: repair must not need gigabytes (it reached 5.8 GB)."""
    batches = agent_log(1, open_tail=True)
    path = write_jsonl(tmp_path / "row.jsonl", [lines_of(batches[0]), [members_row(len(batches[0]), 5_000_000)]])
    size = path.stat().st_size
    assert size > 20 << 20
    for tool in TOOLS:
        done = limited(*tool, str(path))
        assert done.code in (0, 1) and "Traceback" not in done.err, (tool, done.err[-2000:])
        assert done.peak < MEMORY_FLOOR + 32 * size, (tool, done.peak)


MEMORY_FLOOR = 256 << 20
"""What a tool may hold whatever the file: the interpreter, and one record at the bound (64 MiB) a few times over."""


@dataclass(frozen=True)
class Limited:
    code: int
    err: str
    peak: int
    """The child's peak resident memory in bytes (ru_maxrss)."""
    out: str = ""


LAUNCHER = """
import resource, sys
cpu, memory, report = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
try:
    from sessionspec.cli import main
    code = main(sys.argv[4:])
finally:
    with open("/proc/self/status") as status, open(report, "w") as out:
        out.write(next(line for line in status if line.startswith("VmHWM:")).split()[1])
sys.exit(code)
"""
"""Runs `sessionspec ARGS` under the limits and reports its resident peak from /proc (VmHWM, of this process's own
memory: ru_maxrss would count the pages of the test process the child was spawned from)."""


def limited(*argv: str, cpu: int = 120, memory: int = 4 << 30) -> Limited:
    """`sessionspec ARGV` in a subprocess under RLIMIT_CPU (and a generous RLIMIT_AS, against a runaway), its peak measured.

    Resource limits and measurements, not timing assertions: a run over its CPU limit is killed
    (a negative code). The address-space limit is generous on purpose: orjson reserves virtual
    memory well beyond what it touches and crashes where a reservation fails, so the memory
    bound is asserted on the resident peak, not enforced by the limit.
    """
    with tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch) / "peak"
        try:
            done = subprocess.run([sys.executable, "-c", LAUNCHER, str(cpu), str(memory), str(report), *argv],
                                  capture_output=True, text=True, timeout=cpu * 3,
                                  env={**os.environ, "SESSIONSPEC_NO_PROGRESS": "1"})
        except subprocess.TimeoutExpired:
            return Limited(-9, "killed after the wall-clock watchdog", 0)
        peak = int(report.read_text()) * 1024 if report.exists() else 0
        return Limited(done.returncode, done.stderr, peak, done.stdout)


def test_integer_text_is_judged_by_its_length_before_conversion(monkeypatch: pytest.MonkeyPatch) -> None:
    """SESSION-LOSSLESS-TEXT.4: a 1,000,000-digit integer is refused without `int` ever seeing more than 16 digits."""
    seen: list[int] = []

    def spy(text: str) -> int:
        seen.append(len(text))
        return int(text)

    monkeypatch.setattr(jsontext, "int", spy, raising=False)
    for text in ("9" * 1_000_000, "-" + "1" * 17, "[" + "5" * 5000 + "]"):
        with pytest.raises(SpecViolation) as refused:
            parse(text)
        assert refused.value.rule == "SESSION-LOSSLESS-TEXT.4"
    assert parse("-9007199254740991") == -9007199254740991
    assert max(seen) <= 17


@pytest.mark.parametrize("kind", ["fifo", "directory", "device", "symlink-loop"])
def test_a_log_that_is_not_a_regular_file_is_refused_up_front(tmp_path: Path, kind: str) -> None:
    """SESSION-STORAGE-RECORD.2 (finding 7): every tool exits 2 at once; a FIFO blocks none of them."""
    path = tmp_path / "log.jsonl"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
    elif kind == "device":
        os.symlink("/dev/zero", path)
    else:
        os.symlink(tmp_path / "other.jsonl", path)
        os.symlink(path, tmp_path / "other.jsonl")
    for tool in TOOLS:
        if kind == "fifo":
            # In a subprocess, so that a reader that blocks fails this test instead of hanging the run.
            done = subprocess.run([sys.executable, "-m", "sessionspec.cli", *tool, str(path)], capture_output=True,
                                  text=True, timeout=60)
            code, err = done.returncode, done.stderr
        else:
            ran = run_cli(*tool, str(path))
            assert ran.traceback is None, (tool, ran.traceback)
            code, err = ran.code, ran.err
        assert code == 2 and "Traceback" not in err and "SESSION-STORAGE-RECORD.2" in err, (tool, err)
    with pytest.raises(storage.Unreadable) as refused:
        storage.load(path)
    assert refused.value.rule == "SESSION-STORAGE-RECORD.2"


def test_a_fifo_named_sqlite_does_not_block_either(tmp_path: Path) -> None:
    path = tmp_path / "log.sqlite"
    os.mkfifo(path)
    done = subprocess.run([sys.executable, "-m", "sessionspec.cli", "check", str(path)], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 2 and "SESSION-STORAGE-RECORD.2" in done.stderr


@pytest.mark.parametrize("name", ["log", "log.jsonl"])
def test_a_first_line_that_is_an_array_names_the_header_rule(tmp_path: Path, name: str) -> None:
    """Finding 7: `[]` as the first line is a JSONL log with a bad header, as its zstd form is (SESSION-STORAGE-HEADER.2)."""
    path = tmp_path / name
    path.write_bytes(b"[]\n")
    for tool in TOOLS:
        ran = run_cli(*tool, str(path))
        assert ran.traceback is None and ran.code == 1 and "SESSION-STORAGE-HEADER.2" in ran.out + ran.err, (tool, ran)
    zstd = tmp_path / "array.jsonl.zstd"
    zstd.write_bytes(frame(b"[]\n"))
    assert "SESSION-STORAGE-HEADER.2" in run_cli("check", str(zstd)).out


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


@pytest.mark.parametrize("fmt", ["jsonl", "jsonl.zstd"])
def test_a_temp_file_of_a_dead_writer_is_removed_by_the_next_save_or_repair(tmp_path: Path, fmt: str) -> None:
    """SESSION-STORAGE-WRITE.6 (finding 7): a writer killed inside `save` leaves its temp file for a short while only."""
    path = tmp_path / f"log.{fmt}"
    stale = tmp_path / f".{path.name}.{dead_pid()}.0123456789ab.tmp"
    stale.write_bytes(b"half a log")
    other = tmp_path / f".{path.name}.{os.getpid()}.0123456789ab.tmp"  # a live writer's: kept
    other.write_bytes(b"")
    storage.save(path, {"version": 0, "id": "h", "createdAt": 1}, agent_log(1, open_tail=True)[0])
    assert not stale.exists() and other.exists()
    stale.write_bytes(b"half a log")
    assert run_cli("repair", "--write", str(path)).code == 0
    assert not stale.exists()
    assert durable.remove_stale_temps(path) == []


def test_the_header_frame_bound_holds_for_a_header_too(tmp_path: Path) -> None:
    path = tmp_path / "header.jsonl.zstd"
    path.write_bytes(frame(b"\n" * 70_000))
    assert oracle(path).rule == "SESSION-ZSTD-FRAMES.5"


def test_clean_logs_still_load_on_every_backend(tmp_path: Path) -> None:
    for fmt in ("jsonl", "jsonl.zstd", "sqlite"):
        path = clean_log(tmp_path / f"clean.{fmt}", fmt)
        assert oracle(path).state == "clean"
        assert HEADER["id"] == storage.load(path).header["id"]
