"""spec/07-persistence.md at the sizes that matter: logs larger than every read block, defects across block boundaries.

A reader meets a log a block at a time: the JSONL readers in 1 MiB pieces (storage) and 32 KiB
blocks (`check`), zstd in blocks of up to 128 KiB of plaintext and a 4 MiB buffer past which a
frame is decoded twice, and after a defect in whole blocks that are counted, not parsed, when
they cannot hold a `turn/end`. A defect or a `turn/end` that straddles a block boundary must be
judged as if there were no boundary: a defect with a committed `turn/end` after it is corruption
(SESSION-TORN-TAIL.2), never a torn tail that a repair would cut; without one it is a torn tail
from the defect's own line (.3).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import zstandard
from hostile import HEADER, agent_log, frame, lines_of, oracle, run_cli
from sessionspec import storage
from sessionspec.errors import SpecViolation
from sessionspec.jsontext import dumps

MIB = 1 << 20
DEFECT = b'{"type":"plugin/hostile","seq":SEQ,"time":0,"data":NaN,"ignorable":true}'
TURN_END = b'{"type":"turn/end","seq":SEQ,"time":0,"data":{"turn":1,"reason":{"kind":"completed"}}}'
FILLER_MAX = 200 << 10


def filler(seq: int, size: int) -> bytes:
    """An ignorable event line of exactly `size` bytes (at least 70), its text free of any escape or `turn/end`."""
    head = b'{"type":"plugin/pad","seq":%d,"time":0,"data":"' % seq
    tail = b'","ignorable":true}'
    return head + b"p" * (size - len(head) - len(tail)) + tail


def straddling(base: int, placed: list[tuple[int, bytes]], end: int) -> list[bytes]:
    """Lines (without newlines) of an open turn, then fillers, such that each (boundary, line) of `placed` starts 20
    bytes before its boundary; then fillers to `end`. `base` is the plaintext offset of the first line written here."""
    lines = lines_of(agent_log(1, open_tail=True)[0])
    seq = len(agent_log(1, open_tail=True)[0])
    offset = base + sum(len(line) + 1 for line in lines)
    for boundary, special in [*placed, (end, b"")]:
        while offset < boundary - 20:
            gap = boundary - 20 - offset
            size = min(FILLER_MAX, gap - 1) if gap - 1 <= FILLER_MAX or gap - 1 - FILLER_MAX >= 100 else gap - 101
            line = filler(seq, size)
            lines.append(line)
            offset, seq = offset + len(line) + 1, seq + 1
        if special:
            lines.append(special.replace(b"SEQ", str(seq).encode()))
            offset, seq = offset + len(lines[-1]) + 1, seq + 1
    return lines


def header_line() -> bytes:
    return dumps(HEADER).encode()


def write(path: Path, placed: list[tuple[int, bytes]], end: int) -> Path:
    if path.name.endswith(".zstd"):
        # One frame of records after the header frame: its plaintext offsets start at 0.
        plain = b"".join(line + b"\n" for line in straddling(0, placed, end))
        path.write_bytes(frame(header_line() + b"\n") + frame(plain))
    else:
        head = header_line()
        lines = straddling(len(head) + 1, placed, end)
        path.write_bytes(b"".join(line + b"\n" for line in [head, *lines]))
    for boundary, special in placed:
        assert _starts_before(path, boundary, special), (path.name, boundary)
    return path


def plaintext(path: Path) -> bytes:
    """The bytes the block boundaries are counted in: the file for JSONL, the records' frame for zstd."""
    if not path.name.endswith(".zstd"):
        return path.read_bytes()
    data = path.read_bytes()
    second = data.index(b"\x28\xb5\x2f\xfd", 4)
    return zstandard.ZstdDecompressor().decompress(data[second:], max_output_size=64 << 20)


def _starts_before(path: Path, boundary: int, special: bytes) -> bool:
    """The special line starts 20 bytes before the boundary."""
    return plaintext(path).find(special.split(b"SEQ")[0], boundary - 20) == boundary - 20


def line_of(path: Path, needle: bytes) -> int:
    """The log line (the header is line 1) of the first record holding `needle`."""
    lines = plaintext(path).split(b"\n")
    index = next(k for k, line in enumerate(lines) if needle in line)
    return index + 1 if not path.name.endswith(".zstd") else index + 2


CASES = {
    # (format, boundaries of the defect and of the turn/end): the read blocks each format has.
    "jsonl, the storage reader's 1 MiB pieces": ("jsonl", 1 * MIB, 3 * MIB),
    # After a defect the storage reader reads 1 MiB blocks from the end of the defect's line: the turn/end across one.
    "jsonl, the storage reader's blocks after a defect": ("jsonl", 1 * MIB, 2 * MIB - 20 + len(DEFECT.replace(b"SEQ", b"14")) + 1),
    "jsonl, check's 32 KiB blocks": ("jsonl", 32 << 10, (32 << 10) * 41),
    "zstd, a 128 KiB block of plaintext": ("jsonl.zstd", 128 << 10, (128 << 10) * 9),
    "zstd, past the 4 MiB buffer": ("jsonl.zstd", 4 * MIB + (128 << 10), 5 * MIB),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_defect_across_a_block_with_a_turn_end_across_a_later_one_is_corruption(tmp_path: Path, case: str) -> None:
    fmt, defect_at, turn_end_at = CASES[case]
    path = write(tmp_path / f"log.{fmt}", [(defect_at, DEFECT), (turn_end_at, TURN_END)], turn_end_at + MIB)
    assert len(plaintext(path)) > MIB
    with pytest.raises(SpecViolation) as refused:
        storage.load(path)
    assert refused.value.rule == "SESSION-LOSSLESS-TEXT.3" and "SESSION-TORN-TAIL.2" in refused.value.message
    checked = run_cli("check", str(path))
    assert checked.code == 1 and "SESSION-LOSSLESS-TEXT.3" in checked.out and "SESSION-TORN-TAIL.3" not in checked.out
    data = path.read_bytes()
    written = run_cli("repair", "--write", str(path))
    assert written.code == 1 and path.read_bytes() == data, written


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_defect_across_a_block_with_no_turn_end_after_is_a_torn_tail_from_its_line(tmp_path: Path, case: str) -> None:
    fmt, defect_at, _ = CASES[case]
    path = write(tmp_path / f"log.{fmt}", [(defect_at, DEFECT)], defect_at + 2 * MIB)
    result = storage.load(path)
    assert result.torn is not None and result.torn.rule == "SESSION-TORN-TAIL.3"
    assert "SESSION-LOSSLESS-TEXT.3" in result.torn.reason
    assert result.torn.line == line_of(path, b'"data":NaN')
    assert run_cli("repair", "--write", str(path)).code == 0
    after = oracle(path)
    assert after.state == "clean" and len(after.events) == len(result.events) + len(result.closers)


def test_a_turn_end_escaped_across_a_block_still_proves_corruption(tmp_path: Path) -> None:
    """A `turn/end` written with an escape (`turn\\/end`) is found too: after a defect a block is passed over only
    when it holds neither the literal name nor a backslash."""
    escaped = TURN_END.replace(b"turn/end", b"turn\\/end")
    path = write(tmp_path / "log.jsonl", [(MIB, DEFECT), (2 * MIB, escaped)], 3 * MIB)
    with pytest.raises(SpecViolation) as refused:
        storage.load(path)
    assert "SESSION-TORN-TAIL.2" in refused.value.message


def big_record_log(path: Path, size: int) -> Path:
    """A log whose middle record is `size` bytes (its newline included), straddling every block boundary it spans."""
    batches = agent_log(2)
    seq = len(batches[0])
    record: dict[str, Any] = {"type": "plugin/big", "seq": seq, "time": 0, "data": "", "ignorable": True}
    record["data"] = "b" * (size - 1 - len(json.dumps(record, separators=(",", ":"))))
    for event in batches[1]:
        event["seq"] += 1
        if "sourceEventSeqs" in event:
            event["sourceEventSeqs"] = [s + 1 for s in event["sourceEventSeqs"]]
    events = [*batches[0], record, *batches[1]]
    storage.save(path, {"version": 0, "id": "h", "createdAt": 1}, events)
    return path


@pytest.mark.nightly
@pytest.mark.parametrize("fmt", ["jsonl", "jsonl.zstd", "sqlite"])
def test_a_record_at_the_bound_loads_and_one_byte_more_is_refused_on_every_backend(tmp_path: Path, fmt: str) -> None:
    """SESSION-STORAGE-RECORD.1 at its real size: 64 MiB (with its newline) loads; a byte more is refused at its place."""
    bound = 64 * MIB
    suffix = fmt
    at = big_record_log(tmp_path / f"at.{suffix}", bound if fmt != "sqlite" else bound - 100)
    assert at.stat().st_size > bound // 2 or fmt != "jsonl"
    assert oracle(at).state == "clean"
    assert run_cli("check", str(at)).code == 0
    over = tmp_path / f"over.{suffix}"
    if fmt == "jsonl":
        head = at.read_bytes()
        line_start = head.index(b'{"type":"plugin/big"')
        over.write_bytes(head[:line_start] + head[line_start:].replace(b'"data":"b', b'"data":"bb', 1))
    else:
        with pytest.raises(SpecViolation) as refused_on_write:
            big_record_log(over, bound + 1)
        assert refused_on_write.value.rule == "SESSION-STORAGE-RECORD.1"
        return
    with pytest.raises(SpecViolation) as refused:
        storage.load(over)
    assert refused.value.rule == "SESSION-STORAGE-RECORD.1"
