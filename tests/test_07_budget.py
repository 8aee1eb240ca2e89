"""spec/07-persistence.md, SESSION-STORAGE-RECORD.3: what a compressed log costs a reader is bounded by its size.

Every frame, BLOB and packed row had its own bound, and the file none: a 90 KB zstd log of 1,000
frames, each of 65,535 lines naming a turn/end after an open turn (65 M lines, every frame within
SESSION-ZSTD-FRAMES.5), kept `check`, `show` and `repair` busy past 240 s. A reader now spends
what a log decodes to out of one budget proportional to the file's size, and stops once it is
spent: the log is refused there, never judged a torn tail.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from pathlib import Path

import pytest
import zstandard
from hostile import (
    agent_log,
    expanders,
    expanding_blobs,
    expanding_rows,
    expanding_zstd,
    lines_of,
    oracle,
    run_cli,
    write_sqlite,
    write_zstd,
)
from sessionspec import storage
from sessionspec.cli.bench import parse, replay
from sessionspec.errors import SpecViolation
from sessionspec.storage import budget, zstdlog
from sessionspec.storage.budget import Budget, Spent
from sessionspec.testing.workload import Shape, workload
from test_07_bounds import limited
from test_07_sqlite_faults import rle_frame

RULE = "SESSION-STORAGE-RECORD.3"


def refusal(path: Path) -> SpecViolation:
    with pytest.raises(SpecViolation) as refused:
        storage.load(path)
    return refused.value


def test_the_issues_log_of_a_thousand_frames_is_refused_in_seconds(tmp_path: Path) -> None:
    """The issue's file at full size, each tool in a subprocess under RLIMIT_CPU: refused with the rule, exit 1."""
    path = expanding_zstd(tmp_path, 1_000, 65_535)
    assert path.stat().st_size < 100_000
    for tool in (("check",), ("show",), ("repair",)):
        done = limited(*tool, str(path), cpu=30)
        said = done.out + done.err
        assert done.code == 1 and RULE in said and "Traceback" not in said, (tool, done.code, said[-2000:])


@pytest.fixture
def small_floors(monkeypatch: pytest.MonkeyPatch) -> tuple[int, int]:
    """Floors of 4,096 records and 4 MiB, so that a log past them is small and quick (the nightly run keeps the real)."""
    monkeypatch.setattr(budget, "RECORDS_FLOOR", 4_096)
    monkeypatch.setattr(budget, "PLAIN_FLOOR", 4 << 20)
    return budget.RECORDS_FLOOR, budget.PLAIN_FLOOR


def test_every_class_of_expanding_log_is_refused_at_its_place(tmp_path: Path, small_floors: tuple[int, int]) -> None:
    """Many frames, many packed rows (zstd, SQLite), many BLOBs: each within its own bound, the file beyond its budget."""
    for name, path in expanders(tmp_path, *small_floors):
        violation = refusal(path)
        assert violation.rule == RULE and (violation.line is not None or violation.seq is not None), (name, violation)
        for tool in (("check",), ("show",), ("repair",), ("repair", "--write")):
            ran = run_cli(*tool, str(path))
            assert ran.traceback is None and ran.code == 1 and RULE in ran.out + ran.err, (name, tool, ran)


def test_the_budget_is_the_floor_or_the_ratio_whichever_is_larger() -> None:
    """spec/07's numbers, stated here and never read from `budget` (a test that reads them moves with a mutant):
    128 bytes and 2 records a byte, at least 256 MiB and 65,536 records."""
    small, large = Budget.of(1_000), Budget.of(10 << 20)
    assert (small.plain, small.records) == (256 << 20, 65_536)
    assert (large.plain, large.records) == (128 * (10 << 20), 2 * (10 << 20))
    spent = Budget(10, 5, 5)
    spent.spend(5, 5)
    with pytest.raises(Spent):
        spent.spend(records=1)
    spent.spend(plain=0)  # taking nothing of an overdrawn part is not an overdraft


def open_log(directory: Path) -> tuple[Path, int]:
    """A zstd log of two turns, the second open; and how many records it decodes to (lines plus extra members)."""
    batches = agent_log(2, open_tail=True)
    path = write_zstd(directory / "log.jsonl.zstd", [lines_of(batch) for batch in batches])
    return path, 1 + sum(len(batch) for batch in batches)


def test_a_log_exactly_at_its_record_budget_loads_and_one_record_over_is_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path, records = open_log(tmp_path)
    monkeypatch.setattr(budget, "RECORDS_PER_BYTE", 0)
    monkeypatch.setattr(budget, "RECORDS_FLOOR", records)
    assert oracle(path).state == "repairable"
    monkeypatch.setattr(budget, "RECORDS_FLOOR", records - 1)
    violation = refusal(path)
    # The packed chunk row is the last record: its members pass the budget, at its line.
    assert violation.rule == RULE and violation.line is not None


def test_a_log_exactly_at_its_plaintext_budget_loads_and_one_byte_over_is_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path, _ = open_log(tmp_path)
    plain = sum(len(zstandard.ZstdDecompressor().decompress(frame)) for frame in _frames(path.read_bytes()))
    monkeypatch.setattr(budget, "PLAIN_PER_BYTE", 0)
    monkeypatch.setattr(budget, "PLAIN_FLOOR", plain)
    assert oracle(path).state == "repairable"
    monkeypatch.setattr(budget, "PLAIN_FLOOR", plain - 1)
    assert refusal(path).rule == RULE


def _frames(data: bytes) -> list[bytes]:
    starts = [i for i in range(len(data)) if data.startswith(b"\x28\xb5\x2f\xfd", i)]
    return [data[a:b] for a, b in zip(starts, [*starts[1:], len(data)], strict=True)]


def test_the_densest_log_a_writer_makes_of_a_workload_is_far_within_its_budget(tmp_path: Path) -> None:
    """A whole `sessionspec bench` workload in one frame (64 chunks a step): the densest the measurements found."""
    ops = parse(json.dumps(op) for op in workload(Shape(turns=40, chunks=64)))
    events = list(replay("live", ops)[0].events)
    path = tmp_path / "whole.jsonl.zstd"
    storage.save(path, {"version": 0, "id": "w", "createdAt": 1}, events)
    reader = zstdlog.ZstdReader(path)
    for _ in reader.records():
        pass
    full = Budget.of(path.stat().st_size)
    assert reader.torn is None
    assert full.plain - reader.budget.plain < full.plain // 10 and full.records - reader.budget.records < full.records // 10


def test_a_small_log_with_one_large_repetitive_record_loads(tmp_path: Path) -> None:
    """The floors: 16 MiB of one repeated character compresses to a few KB, and a log of one such record, framed as
    any zstd writer frames it (ours no longer does, below), still loads."""
    batch = agent_log(1)[0]
    big = {"type": "plugin/hostile", "seq": len(batch), "time": 0, "data": "y" * (16 << 20), "ignorable": True}
    path = write_zstd(tmp_path / "big.jsonl.zstd", [lines_of([*batch, big])])
    assert path.stat().st_size < 64_000
    assert len(storage.load(path).events) == len(batch) + 1


def test_our_writer_stores_a_batch_that_compresses_past_the_ratio_in_raw_frames(tmp_path: Path) -> None:
    """SESSION-STORAGE-RECORD.3 on the writer's side: the same batch through our writer holds the ratio of 128 bytes of
    plaintext per byte of file on its own (raw blocks), so no number of such batches can pass the budget."""
    batch = agent_log(1)[0]
    big = {"type": "plugin/hostile", "seq": len(batch), "time": 0, "data": "y" * (16 << 20), "ignorable": True}
    path = tmp_path / "ours.jsonl.zstd"
    storage.save(path, {"version": 0, "id": "h", "createdAt": 1}, [*batch, big])
    assert path.stat().st_size * 128 >= 16 << 20
    assert storage.load(path).events[-1].data == big["data"]


def test_a_blob_past_the_record_bound_is_its_rows_defect_and_its_decode_is_spent(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One BLOB bomb at the open tail is a torn tail (SESSION-STORAGE-RECORD.1); the next finds the budget spent
    (a floor of 100 MiB here, so that two bombs of 65 MiB pass it)."""
    monkeypatch.setattr(budget, "PLAIN_FLOOR", 100 << 20)
    batches = agent_log(1, open_tail=True)
    path = write_sqlite(tmp_path / "bombs.sqlite", batches)
    seq = len(batches[0])
    bomb = rle_frame(0x20, 65 << 20)
    with contextlib.closing(sqlite3.connect(path)) as connection:
        connection.execute("INSERT INTO events VALUES ('h', ?, 'plugin/hostile', 0, ?, NULL, NULL, 1)", (seq, bomb))
        connection.commit()
    one = oracle(path)
    assert one.state == "repairable" and one.torn
    with contextlib.closing(sqlite3.connect(path)) as connection:
        connection.execute("INSERT INTO events VALUES ('h', ?, 'plugin/hostile', 0, ?, NULL, NULL, 1)", (seq + 1, bomb))
        connection.commit()
    violation = refusal(path)
    assert violation.rule == RULE and violation.seq == seq + 1


def test_a_torn_final_frame_past_the_budget_is_refused_not_recovered(tmp_path: Path) -> None:
    path = expanding_zstd(tmp_path, 3, 65_535)
    path.write_bytes(path.read_bytes()[:-3])
    assert refusal(path).rule == RULE


@pytest.mark.parametrize("fmt", ["jsonl.zstd", "sqlite"])
def test_packed_rows_within_the_floor_load(tmp_path: Path, fmt: str) -> None:
    """The members of packed rows count as records, and rows within the budget load as their events."""
    rows, members = (1, 5_000) if fmt == "jsonl.zstd" else (5, 1_024)
    path = expanding_rows(tmp_path, fmt, rows, members)
    assert len(storage.load(path).events) == 3 + rows * members


def test_blobs_within_the_floor_load(tmp_path: Path) -> None:
    path = expanding_blobs(tmp_path, 3, 8 << 20)
    assert oracle(path).state == "repairable"


@pytest.mark.nightly
def test_every_class_of_expanding_log_is_refused_past_the_real_floors(tmp_path: Path) -> None:
    for name, path in expanders(tmp_path):
        for tool in (("check",), ("show",), ("repair",)):
            done = limited(*tool, str(path), cpu=30)
            assert done.code == 1 and RULE in done.out + done.err, (name, tool, done.code, done.err[-2000:])
