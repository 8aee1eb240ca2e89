"""The storage phase's self-test: each planted storage bug (`sessionspec.testing.planted_storage`) is found by the
runner's storage phase as the family it is, and minimized."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from sessionspec.conformance import runner
from sessionspec.testing import implementations
from sessionspec.testing.planted_storage import STORAGE_PLANTED

SERVE = [sys.executable, "-m", "sessionspec.cli", "serve", "--impl"]
FOUND_AS = {
    "storage-key-order": "save:SESSION-CONFORMANCE-STORAGE.2 differs:bytes",
    "storage-write-behind": "attach:SESSION-CONFORMANCE-STORAGE.3 differs:events",
    "torn-tail-as-corruption": "load:accepts envelope",
    "packed-row-times": "load:accepts differs:events",
}
"""What a run names each bug: the family a person fixes."""


def test_every_planted_storage_bug_is_named_and_served() -> None:
    assert set(FOUND_AS) == set(STORAGE_PLANTED)
    assert all(implementations.known(f"planted:{name}") for name in STORAGE_PLANTED)


@pytest.mark.parametrize("bug", sorted(STORAGE_PLANTED))
def test_the_storage_phase_finds_the_planted_bug(bug: str, tmp_path: Path) -> None:
    result = runner.run(runner.Options([*SERVE, f"planted:{bug}"], examples=0, traces_dir=tmp_path))
    families = {found.family for found in result.divergences}
    assert FOUND_AS[bug] in families, families
    found = next(d for d in result.divergences if d.family == FOUND_AS[bug])
    assert found.level == ("recommended" if bug == "storage-write-behind" else "required")
    if bug == "storage-key-order":
        # SESSION-CONFORMANCE-STORAGE.2, minimized: the shortest prefix of a session's appends still shows it (none).
        assert [request["op"] for request in found.trace] == ["create", "snapshot", "save"]
    if bug == "storage-write-behind":
        # SESSION-CONFORMANCE-STORAGE.3, minimized: killed after the fewest acknowledged appends that lose one.
        assert [request["op"] for request in found.trace] == ["create", "attach", "append"]
    if bug == "torn-tail-as-corruption":
        assert {d.id for d in result.divergences if d.family == FOUND_AS[bug]} >= {
            "SESSION-TORN-TAIL.1-jsonl", "SESSION-TORN-TAIL.3-sqlite", "SESSION-ZSTD-FRAMES.4"}
    if bug == "packed-row-times":
        assert {d.id for d in result.divergences if d.family == FOUND_AS[bug]} >= {
            "SESSION-STORAGE-LOAD.1-jsonl", "SESSION-STORAGE-LOAD.1-sqlite"}
