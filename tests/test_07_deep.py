"""spec/07-persistence.md, repair on deep values: what a repair does to a log's values, counted (not timed).

On a valid log holding a 1,000,000-deep array, `check` took about 1 s, `repair` 16 s and
`repair --write` on its open-tail form 45 s (and up to 800 MB): the load behind a repair copies
every event's value three times over (the gate's snapshot of the parsed record; then seeding, which
turns each loaded Event back into plain JSON and snapshots it again), and `repair --write` loads the
result a second time and compares it by thawing both sides. The profile puts the cost outside
the storage readers: `envelope.parse_event` (an Event is thawed and snapshotted again when it
seeds a session: `transaction._accept_seed_event`), `jsonvalue.snapshot`, and `storage.verified`
(compares `to_json()` copies). Now a load copies a value once (the gate's snapshot): seeding takes
an Event whose fields are already as parsing gives them without copying it (`envelope.as_parsed`),
and the read-back compares events as they are (`Event.__eq__`). These tests count the copies of the
deep value, so that one coming back fails here.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hostile import HOSTILE, deep_log
from sessionspec import envelope, jsonvalue, storage

DEPTH = 2_000


@pytest.fixture
def copies(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, int]]:
    """How many times the hostile event's deep value is snapshotted (copied and frozen) and thawed (copied plain)."""
    counts = {"snapshot": 0, "thaw": 0}
    snapshot, thaw = jsonvalue.snapshot, jsonvalue.thaw

    def counting_snapshot(value: Any, **options: Any) -> Any:
        if isinstance(value, dict) and value.get("type") == HOSTILE:
            counts["snapshot"] += 1
        return snapshot(value, **options)

    def counting_thaw(value: Any) -> Any:
        if isinstance(value, list) and len(value) == 1 and isinstance(value[0], list):
            counts["thaw"] += 1
        return thaw(value)

    monkeypatch.setattr(envelope, "snapshot", counting_snapshot)
    monkeypatch.setattr(envelope, "thaw", counting_thaw)
    yield counts


@pytest.mark.parametrize("fmt", ["jsonl", "jsonl.zstd", "sqlite"])
def test_a_load_copies_a_deep_value_once(tmp_path: Path, fmt: str, copies: dict[str, int]) -> None:
    path = deep_log(tmp_path, fmt, DEPTH, open_tail=True)
    copies.update(snapshot=0, thaw=0)  # what writing it took is not the load's
    storage.load(path)
    assert copies == {"snapshot": 1, "thaw": 0}


@pytest.mark.parametrize("fmt", ["jsonl", "jsonl.zstd", "sqlite"])
def test_a_repair_reads_its_result_back_without_copying_the_log_again(tmp_path: Path, fmt: str,
                                                                      copies: dict[str, int]) -> None:
    """The read-back is a second load (one more snapshot), and nothing else copies the value."""
    path = deep_log(tmp_path, fmt, DEPTH, open_tail=True)
    copies.update(snapshot=0, thaw=0)
    storage.repair(path)
    assert copies == {"snapshot": 2, "thaw": 0}


def test_the_deep_log_loads_and_repairs_as_itself(tmp_path: Path) -> None:
    """What the counts are about is right already: the repaired log holds the deep value as it was."""
    for fmt in ("jsonl", "jsonl.zstd", "sqlite"):
        path = deep_log(tmp_path, fmt, DEPTH, open_tail=True)
        loaded = storage.load(path)
        repaired = storage.repair(path)
        deep = next(event for event in repaired.events if event.type == HOSTILE)
        assert repaired.torn is None and not repaired.closers and len(repaired.events) == len(loaded.events) + 3
        depth, value = 0, deep.data
        while isinstance(value, list) and value:
            depth, value = depth + 1, value[0]
        assert depth == DEPTH - 1
