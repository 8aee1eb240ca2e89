"""spec/07-persistence.md, crash safety: writers killed with SIGKILL at random points, on every backend.

What each backend promises (spec/07 §7.6): every batch an append acknowledged survives a process
crash, and a power loss as far as the disk honours fsync. A trial forks a writer (this process,
so it starts writing at once), lets it save a log and append batches, acknowledging each on a
pipe once `append` returned, and kills it with SIGKILL after a random delay: before, inside or
after `save`, inside or between appends. For JSONL and zstd the file is then, in some trials, cut
at a random byte past the last acknowledged size: what a power loss may leave of writes that were
never fsynced. Then:

- every acknowledged event is present, and the log is a prefix of what was written (complete
  records of an unacknowledged batch may load, as in the upstream);
- the file loads (two loads agree on the torn tail) and a repair leaves it clean, every loaded
  event kept (SESSION-STORAGE-WRITE.5);
- no temp file of the dead writer is left once the log is repaired or saved again
  (SESSION-STORAGE-WRITE.6).

20 trials per backend always; 200 per backend in the nightly run.
"""

from __future__ import annotations

import contextlib
import os
import random
import select
import signal
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sessionspec import storage
from sessionspec.storage.durable import remove_stale_temps

FORMATS = ("jsonl", "jsonl.zstd", "sqlite")
HEADER = {"version": 0, "id": "crash", "createdAt": 1}


def batches(turns: int) -> Iterator[list[dict[str, Any]]]:
    """Balanced turns of varied size (a long streamed answer every seventh turn)."""
    seq = 0
    for turn in range(1, turns + 1):
        batch = [{"type": "turn/start", "seq": seq, "time": seq, "data": {"turn": turn}}]
        for k in range(turn % 6 + (40 if turn % 7 == 0 else 0)):
            batch.append({"type": "assistant/chunk", "seq": seq + 1 + k, "time": seq + 1 + k,
                          "data": {"turn": turn, "step": 1,
                                   "chunk": {"type": "text-delta", "index": 0, "text": "x" * (k * 97 % 500)}}})
        batch.append({"type": "turn/end", "seq": seq + len(batch), "time": seq + len(batch),
                      "data": {"turn": turn, "reason": {"kind": "completed"}}})
        seq += len(batch)
        yield batch


ALL = list(batches(400))
EXPECTED = [event for batch in ALL for event in batch]


def writer(path: Path, acks: int) -> None:
    """The child: save a log with the first batch, then append the rest, acknowledging each on fd `acks`."""
    log = storage.save(path, HEADER, ALL[0])
    os.write(acks, f"ack {log.next_seq} {size(path)}\n".encode())
    for batch in ALL[1:]:
        log.append(batch)
        os.write(acks, f"ack {log.next_seq} {size(path)}\n".encode())


def size(path: Path) -> int:
    return 0 if path.name.endswith(".sqlite") else path.stat().st_size


def killed_writer(path: Path, delay: float, *, after_save: bool) -> tuple[int, int]:
    """Fork a writer and SIGKILL it `delay` seconds after it started (`after_save`: after its save was acknowledged);
    returns (acknowledged events, file size when last acknowledged)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the writer: never returns into the test runner
        code = 0
        try:
            os.close(read)
            writer(path, write)
        except BaseException:
            code = 1
        finally:
            os._exit(code)
    os.close(write)
    output = b""
    if after_save:
        while b"\n" not in output and select.select([read], [], [], 30)[0]:
            chunk = os.read(read, 1 << 16)
            if not chunk:
                break
            output += chunk
    time.sleep(delay)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    while chunk := os.read(read, 1 << 16):
        output += chunk
    os.close(read)
    acks = [line.split() for line in output.decode().splitlines() if line.startswith("ack")]
    return (int(acks[-1][1]), int(acks[-1][2])) if acks else (0, 0)


def published_size(directory: Path, fmt: str) -> int:
    """The size of the log `save` publishes (the header and the first batch)."""
    path = directory / f"published.{fmt}"
    if not path.exists():
        storage.save(path, HEADER, ALL[0])
    return size(path)


def holds_a_session(path: Path) -> bool:
    with contextlib.closing(sqlite3.connect(path)) as connection:
        tables = connection.execute("SELECT count(*) FROM sqlite_master WHERE name = 'sessions'").fetchone()[0]
        return bool(tables) and connection.execute("SELECT count(*) FROM sessions").fetchone()[0] > 0


def temps(path: Path) -> list[Path]:
    return sorted(path.parent.glob(f".{path.name}.*.tmp"))


def one_trial(directory: Path, fmt: str, rng: random.Random) -> str:
    """One kill; returns what the kill left ("none", "loaded", "cut" for a power-loss cut) for the tally."""
    path = directory / f"{rng.randrange(10**9)}.{fmt}"
    # A third of the kills fall anywhere from the start (most inside `save`), the rest among the appends.
    acknowledged, durable_size = killed_writer(path, rng.uniform(0, 0.04), after_save=rng.random() < 2 / 3)
    if not path.exists() or (fmt == "sqlite" and not holds_a_session(path)):
        # Killed inside `save`, before the log was published (a file: its temp file is removed by the next save
        # to that path) or committed (SQLite: a pristine database, which the next save initialises).
        assert acknowledged == 0
        storage.save(path, HEADER, ALL[0])
        assert temps(path) == []
        return "none"
    left = "loaded"
    # What `save` published was fsynced before it was linked: a power loss may lose the link, never part of it.
    durable_size = max(durable_size, published_size(directory, fmt))
    if fmt != "sqlite" and path.stat().st_size > durable_size and rng.random() < 0.5:
        # A power loss may leave any prefix of what was written after the last fsync.
        os.truncate(path, rng.randint(durable_size, path.stat().st_size - 1))
        left = "cut"
    result = storage.load(path)
    stored = [event.to_json() for event in result.events]
    assert len(stored) >= acknowledged, (fmt, len(stored), acknowledged)
    assert stored == EXPECTED[: len(stored)]
    again = storage.load(path)
    assert again.torn == result.torn and list(again.events) == list(result.events)
    repaired = storage.repair(path)
    assert repaired.torn is None and not repaired.closers
    assert [event.to_json() for event in repaired.events[: len(stored)]] == stored
    assert temps(path) == [] and remove_stale_temps(path) == []
    return left


def trials(directory: Path, count: int, seed: int) -> dict[str, int]:
    rng = random.Random(seed)
    tally: dict[str, int] = {}
    for trial in range(count * len(FORMATS)):
        fmt = FORMATS[trial % len(FORMATS)]
        try:
            left = one_trial(directory, fmt, rng)
        except AssertionError as failed:
            raise AssertionError(f"seed {seed}, trial {trial} ({fmt}): {failed}") from failed
        tally[f"{fmt} {left}"] = tally.get(f"{fmt} {left}", 0) + 1
    return tally


def test_twenty_crashes_per_backend(tmp_path: Path) -> None:
    tally = trials(tmp_path, 20, seed=7)
    assert sum(tally.values()) == 60


@pytest.mark.nightly
def test_two_hundred_crashes_per_backend(tmp_path: Path) -> None:
    tally = trials(tmp_path, 200, seed=random.randrange(1 << 32))
    assert sum(tally.values()) == 600
    print("crash trials:", tally)
