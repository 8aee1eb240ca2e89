"""spec/07-persistence.md, crash safety: a writer killed with SIGKILL at random points.

Every batch the writer acknowledged (append returned, so fsync or COMMIT completed) must be
present after load; nothing after it may appear out of order; whatever the crash cut is either
absent or a torn tail that load reports the same way every time and repair removes.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from sessionspec import storage

WRITER = r"""
import os
import sys
from sessionspec import storage
from tests_crash_events import batches
path = sys.argv[1]
header = {"version": 0, "id": "crash", "createdAt": 1}
log = storage.save(path, header, [])
print("ready", flush=True)
for batch in batches(400):
    log.append(batch)
    size = 0 if path.endswith(".sqlite") else os.path.getsize(path)
    print("ack", log.next_seq, size, flush=True)
"""

EVENTS = r'''
def batches(turns):
    seq = 0
    for turn in range(1, turns + 1):
        batch = [{"type": "turn/start", "seq": seq, "time": seq, "data": {"turn": turn}}]
        for k in range(turn % 6 + (40 if turn % 7 == 0 else 0)):
            batch.append({"type": "assistant/chunk", "seq": seq + 1 + k, "time": seq + 1 + k,
                          "data": {"turn": turn, "step": 1, "chunk": {"type": "text-delta", "index": 0, "text": "x" * (k * 97 % 500)}}})
        batch.append({"type": "turn/end", "seq": seq + len(batch), "time": seq + len(batch),
                      "data": {"turn": turn, "reason": {"kind": "completed"}}})
        seq += len(batch)
        yield batch
'''

FORMATS = ["log.jsonl", "log.jsonl.zstd", "log.sqlite"]


def expected_events(tmp: Path) -> list[Any]:
    namespace: dict[str, Any] = {}
    exec(EVENTS, namespace)
    return [event for batch in namespace["batches"](400) for event in batch]


def one_trial(tmp: Path, name: str, rng: random.Random, expected: list[Any]) -> None:
    (tmp / "tests_crash_events.py").write_text(EVENTS)
    path = tmp / f"{rng.randrange(10**9)}-{name}"
    child = subprocess.Popen([sys.executable, "-c", WRITER, str(path)], cwd=tmp, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, env={"PYTHONPATH": str(tmp), "SESSIONSPEC_CONTRACTS": "0",
                                                          "PATH": "/usr/bin:/bin"})
    assert child.stdout is not None
    first = child.stdout.readline()
    assert first == b"ready\n", child.stderr.read() if child.stderr else first
    time.sleep(rng.uniform(0, 0.05))
    child.send_signal(signal.SIGKILL)
    output, _ = child.communicate()
    acks = [line.split() for line in output.decode().splitlines() if line.startswith("ack")]
    acknowledged = int(acks[-1][1]) if acks else 0
    durable_size = int(acks[-1][2]) if acks else len(path.read_bytes()) if path.exists() else 0
    if not name.endswith(".sqlite") and path.exists() and path.stat().st_size > durable_size and rng.random() < 0.8:
        # What a crash may leave beyond the last fsync is any prefix of what was written: cut there.
        os.truncate(path, rng.randint(durable_size, path.stat().st_size - 1))
    if not path.exists():
        return
    result = storage.load(path, impl="live")
    stored = [event.to_json() for event in result.events]
    # every acknowledged batch is present, and nothing but a prefix of what was written
    assert len(stored) >= acknowledged, (name, len(stored), acknowledged)
    assert stored == expected[: len(stored)]
    # the torn tail, if any, is decided deterministically and repair removes it
    again = storage.load(path, impl="live")
    assert again.torn == result.torn and list(again.events) == list(result.events)
    repaired = storage.repair(path, impl="live")
    assert repaired.torn is None and not repaired.closers
    assert [event.to_json() for event in repaired.events[: len(stored)]] == stored


def test_a_small_sample_of_crashes(tmp_path: Path) -> None:
    rng = random.Random(7)
    expected = expected_events(tmp_path)
    for trial in range(6):
        one_trial(tmp_path, FORMATS[trial % 3], rng, expected)


@pytest.mark.nightly
def test_two_hundred_crashes(tmp_path: Path) -> None:
    rng = random.Random()
    expected = expected_events(tmp_path)
    for trial in range(210):
        one_trial(tmp_path, FORMATS[trial % 3], rng, expected)
