"""spec/07-persistence.md: every refusal of a zstd log's structure names its exact rule, and where it is.

A refusal is a rule and a place (a line, or the byte of a frame), never the first exception that
happened to escape: a zstd header record over 64 MiB was refused by the frame bound or as a header
of more than one line, depending on how it ended, where the rule is the record bound
(SESSION-STORAGE-RECORD.1), met before the record ends.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path

import pytest
import zstandard
from hostile import HEADER, agent_log, frame, lines_of, run_cli, write_zstd
from sessionspec import storage
from sessionspec.errors import SpecViolation
from sessionspec.jsontext import dumps
from sessionspec.storage import budget, zstdframes
from test_07_sqlite_faults import rle_frame

MIB = 1 << 20


def header_frame() -> bytes:
    return frame(dumps(HEADER).encode() + b"\n")


def batch_frame() -> bytes:
    return frame(b"".join(line + b"\n" for line in lines_of(agent_log(1, open_tail=True)[0])))


def with_block_type(data: bytes, kind: int) -> bytes:
    """`data` (one frame) with its first block's type field set to `kind`."""
    header = zstdframes.read_frame(io.BytesIO(data), 0, len(data), "frame").header
    value = int.from_bytes(data[header:header + 3], "little")
    value = (value & ~0b110) | (kind << 1)
    return data[:header] + value.to_bytes(3, "little") + data[header + 3:]


def head_record(size: int, ending: bytes) -> bytes:
    prefix = dumps(HEADER).encode()[:-1] + b',"x":"'
    return frame(prefix + b"a" * (size - len(prefix) - 2) + b'"}' + ending)


CASES: dict[str, tuple[Callable[[], bytes], str, str]] = {
    # name: (file bytes, rule, the place the refusal names)
    "reserved block type": (lambda: header_frame() + with_block_type(batch_frame(), 3), "SESSION-ZSTD-FRAMES.1",
                            "reserved block type at byte"),
    "bad magic in a later frame": (lambda: header_frame() + b"\x00" + batch_frame()[1:], "SESSION-ZSTD-FRAMES.1",
                                   "bad frame magic at byte"),
    "reserved descriptor bit": (lambda: header_frame() + batch_frame()[:4] + bytes([batch_frame()[4] | 0x08])
                                + batch_frame()[5:], "SESSION-ZSTD-FRAMES.1", "reserved bit set at byte"),
    "trailing garbage": (lambda: header_frame() + batch_frame() + b"garbage!", "SESSION-ZSTD-FRAMES.1", "at byte"),
    "torn header frame": (lambda: header_frame()[:-3], "SESSION-ZSTD-FRAMES.2", "line 1"),
    "a header line that is not JSON": (lambda: frame(b"{\n") + batch_frame(), "SESSION-LOSSLESS-TEXT.2", "line 1"),
    "two lines in the header frame": (lambda: frame(dumps(HEADER).encode() + b"\n{}\n") + batch_frame(),
                                      "SESSION-ZSTD-FRAMES.2", "line 1"),
    "no checksum": (lambda: header_frame() + zstandard.ZstdCompressor(write_checksum=False).compress(b"{}\n"),
                    "SESSION-ZSTD-FRAMES.3", "no checksum"),
    "checksum mismatch": (lambda: header_frame() + batch_frame()[:-1] + bytes([batch_frame()[-1] ^ 0xFF]),
                          "SESSION-ZSTD-FRAMES.3", "fails to decode"),
    "a complete frame ending inside a record": (lambda: header_frame() + frame(b'{"type":"turn/start"'),
                                                "SESSION-ZSTD-FRAMES.3", "torn JSONL record"),
    "a frame of more than 65,536 records": (lambda: header_frame() + frame(b"\n" * 70_000), "SESSION-ZSTD-FRAMES.5",
                                            "more than 65536 records"),
    "a header record over 64 MiB, ended": (lambda: head_record(64 * MIB + 2, b"\n"), "SESSION-STORAGE-RECORD.1",
                                           "line 1"),
    "a header record over 64 MiB, unended": (lambda: head_record(65 * MIB, b""), "SESSION-STORAGE-RECORD.1", "line 1"),
    "a header record over 64 MiB, then more": (lambda: head_record(65 * MIB, b"\n{}\n"), "SESSION-STORAGE-RECORD.1",
                                               "line 1"),
    "a header frame of 96 MiB of one record": (lambda: head_record(96 * MIB, b"\n"), "SESSION-STORAGE-RECORD.1",
                                                "line 1"),
}


def _checked_rle(byte: int, size: int) -> bytes:
    """An RLE frame (4 bytes a 128 KiB block) with the checksum flag: without it the decode would refuse it as .3."""
    plain = rle_frame(byte, size)
    return plain[:4] + bytes([plain[4] | 0x04]) + plain[5:] + b"\x00\x00\x00\x00"


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_zstd_refusal_names_its_rule_and_place(tmp_path: Path, case: str) -> None:
    """(The file's budget, SESSION-STORAGE-RECORD.3, is one frame's bounds for these small files: each refusal here
    comes first.)"""
    make, rule, place = CASES[case]
    path = tmp_path / "log.jsonl.zstd"
    path.write_bytes(make())
    with pytest.raises(SpecViolation) as refused:
        storage.load(path)
    assert refused.value.rule == rule and place in str(refused.value), (case, refused.value)
    ran = run_cli("check", str(path))
    assert ran.traceback is None and ran.code == 1 and rule in ran.out + ran.err, (case, ran)


def test_a_frame_of_more_than_256_mib_is_refused_by_the_frame_bound(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """SESSION-ZSTD-FRAMES.5 alone: a file's budget of one frame (.3's floor) would be met at the same byte, so here
    the floor is raised out of the way."""
    monkeypatch.setattr(budget, "PLAIN_FLOOR", 1 << 30)
    path = tmp_path / "log.jsonl.zstd"
    path.write_bytes(header_frame() + _checked_rle(0x20, 257 * MIB))
    with pytest.raises(SpecViolation) as refused:
        storage.load(path)
    assert refused.value.rule == "SESSION-ZSTD-FRAMES.5" and refused.value.line == 2


def test_a_header_record_at_the_bound_is_read(tmp_path: Path) -> None:
    """64 MiB with its newline: the bound itself is no refusal (the header's unknown key is, later, by its own rule)."""
    path = tmp_path / "log.jsonl.zstd"
    path.write_bytes(head_record(64 * MIB, b"\n"))  # 64 MiB of record, then its newline (as any zstd record)
    with pytest.raises(SpecViolation) as refused:
        storage.load(path)
    assert refused.value.rule == "SESSION-FORMAT-HEADER.11"


def test_a_torn_final_frame_beyond_the_frame_bounds_recovers_nothing(tmp_path: Path) -> None:
    """SESSION-ZSTD-FRAMES.5 for a torn frame: nothing of it is recovered, the cut is at its start."""
    batches = agent_log(1, open_tail=True)
    path = write_zstd(tmp_path / "log.jsonl.zstd", [lines_of(batches[0])])
    size = path.stat().st_size
    huge = frame(b"\n" * 300_000)  # three blocks of 128 KiB (RLE) and a bit: two complete ones pass the bound
    path.write_bytes(path.read_bytes() + huge[:-6])
    result = storage.load(path)
    assert result.torn is not None and result.torn.offset == size and result.recovered == 0
    assert result.torn.rule == "SESSION-TORN-TAIL.1"  # recovered nothing: a fragment, not a defect


def test_a_defect_before_a_torn_final_frame_cuts_from_the_defects_frame(tmp_path: Path) -> None:
    """SESSION-ZSTD-FRAMES.4 with SESSION-TORN-TAIL.3: the repair rewrites from the frame of the first defect, not from
    the torn frame after it."""
    batches = agent_log(2, open_tail=True)
    path = write_zstd(tmp_path / "log.jsonl.zstd", [lines_of(batches[0])])
    defect_at = path.stat().st_size
    torn = frame(b"".join(line + b"\n" for line in lines_of(batches[1])))[:-6]
    path.write_bytes(path.read_bytes() + frame(b"{\n") + torn)
    result = storage.load(path)
    assert result.torn is not None and result.torn.offset == defect_at and result.torn.rule == "SESSION-TORN-TAIL.3"
    assert storage.repair(path).torn is None
