"""The save check's committed layouts (`storagevectors.layouts`): a saved file is held to the records and frames the
reference's writer laid out when the vectors were generated, so a writer that moves (ours included) is seen to move.

SESSION-CHUNK-ROWS.6 (runs of 3 or more chunks are packed, shorter ones are not) and SESSION-ZSTD-FRAMES.2 (the
header line is a frame of its own, a batch one more) stated as data: the layouts below are written out by hand
from the spec, never read from the writer under test.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sessionspec.conformance.storagephase.saves import judge_file
from sessionspec.conformance.storagevectors import layouts, saved, vectorfiles
from sessionspec.conformance.storagevectors.cases import SUFFIX
from sessionspec.wire.storageops import BACKENDS

CHUNK_KINDS = [["turn/start", 0], ["step/start", 1], ["tool-call-chunks", 2], ["tool-call-chunks", 6],
               ["assistant/chunk", 9], ["assistant/chunk", 10], ["text-chunks", 11], ["assistant/chunk", 14]]
"""chunk_kinds: a named tool call's 4 deltas (seqs 2-5) and an unnamed one's 3 (6-8) each one row, 2 reasoning
deltas verbatim, 3 text deltas one row, a lone text delta verbatim."""
HEADER = ["session", None]


def saved_file(tmp_path: Path, backend: str) -> tuple[Path, list[Any]]:
    """chunk_kinds saved by the reference (as `serve --impl live` saves it), and its events as answered."""
    executor = saved.built_by_reference("chunk-kinds", saved.chunk_kinds())
    path = saved.save(executor, tmp_path / f"k{SUFFIX[backend]}", backend)
    return path, list(executor.run({"op": "snapshot"})["events"])


@pytest.mark.parametrize(("backend", "expected"), [("jsonl", [HEADER, *CHUNK_KINDS]),
                                                   ("jsonl.zstd", [[HEADER], CHUNK_KINDS]),
                                                   ("sqlite", CHUNK_KINDS)])
def test_a_saved_logs_layout_is_its_records_and_frames_as_spec_07_packs_them(
        backend: str, expected: list[Any], tmp_path: Path) -> None:
    path, _ = saved_file(tmp_path, backend)
    assert layouts.layout(path, backend) == expected


def test_the_committed_layouts_name_every_saved_session_in_every_backend() -> None:
    committed = layouts.read(vectorfiles.DEFAULT_DIR)
    assert set(committed) == {(name, backend) for name in saved.builders() for backend in BACKENDS}
    assert not set(saved.BOUNDS) & set(saved.builders()), "a bound session (64 MiB) has no committed layout"
    assert committed[("chunk-kinds", "jsonl")] == [HEADER, *CHUNK_KINDS]


def test_runs_of_three_left_verbatim_are_a_layout_divergence(tmp_path: Path) -> None:
    """A writer that packs no run of 3 (and the reference's writer moved alike, so the bytes agree) is still found."""
    path, events = saved_file(tmp_path, "jsonl")
    unpacked = [HEADER, *CHUNK_KINDS[:6], *(["assistant/chunk", seq] for seq in (11, 12, 13)), CHUNK_KINDS[7]]
    why = judge_file(path, "jsonl", events, unpacked)
    assert len(why) == 1 and why[0].startswith("layout: expected 11 stored records as spec/07 packs them"), why
    assert "the first to differ is record 7: expected ['assistant/chunk', 11], got ['text-chunks', 11]" in why[0]
    assert judge_file(path, "jsonl", events, [HEADER, *CHUNK_KINDS]) == []


def test_a_batch_in_two_frames_is_a_frame_divergence(tmp_path: Path) -> None:
    path, events = saved_file(tmp_path, "jsonl.zstd")
    why = judge_file(path, "jsonl.zstd", events, [[HEADER], CHUNK_KINDS[:4], CHUNK_KINDS[4:]])
    assert why == ["layout: expected the records in 3 zstd frames (SESSION-ZSTD-FRAMES.2: one a batch), got 2"]


def test_a_file_no_plain_reader_reads_has_no_layout(tmp_path: Path) -> None:
    broken = tmp_path / "x.jsonl.zstd"
    broken.write_bytes(b"\x28\xb5\x2f\xfd garbage")
    assert layouts.layout(broken, "jsonl.zstd") is None
    assert layouts.read(tmp_path) == {}
