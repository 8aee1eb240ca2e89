#!/usr/bin/env python3
"""How far realistic logs compress: the measurements behind SESSION-STORAGE-RECORD.3's constants.

A compressed log (zstd frames, SQLite `data` BLOBs) may decode to at most PLAIN_PER_BYTE bytes of
plaintext and RECORDS_PER_BYTE records (a packed row counted as its members) per byte of the file
(`sessionspec.storage.budget`). This script writes the `sessionspec bench` workloads
(`sessionspec.testing.workload`, several shapes) through the zstd writer, one frame per event, per
turn and per whole log (the densest a writer makes), and through the SQLite writer, one batch per
turn; then a synthetic stream of one-token text deltas (ten words, 5 to 15 ms apart), denser than
any model's. For each it prints the file size, plaintext per byte, records per byte and events per
byte, and the margin the budget leaves over the largest.

  python benchmarks/compression.py [--turns 500] [--json]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import sqlite3
import sys
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import zstandard
from sessionspec import storage
from sessionspec.cli.bench import parse, replay
from sessionspec.envelope import Event, parse_event
from sessionspec.storage import budget, zstdframes
from sessionspec.testing.workload import Shape, workload

HEADER = {"version": 0, "id": "ratio", "createdAt": 1}
WORDS = ("alpha", " beta", " gamma", ".", " file", " test", ",", " run", "a", "b")


def shapes(turns: int) -> dict[str, Shape]:
    return {"bench": Shape(turns=turns), "64 chunks a step": Shape(turns=turns // 2, chunks=64),
            "1 chunk a step": Shape(turns=turns, chunks=1), "10 steps a turn": Shape(turns=turns // 2, steps=10)}


def workload_events(shape: Shape) -> list[Event]:
    ops = parse(json.dumps(op) for op in workload(shape))
    return list(replay("live", ops)[0].events)


def dense_deltas(count: int = 20_000, seed: int = 1) -> list[Event]:
    rnd = random.Random(seed)
    raw: list[dict[str, Any]] = [{"type": "turn/start", "seq": 0, "time": 1000, "data": {"turn": 1}},
                                 {"type": "step/start", "seq": 1, "time": 1000, "data": {"turn": 1, "step": 1}}]
    time = 1000
    for _ in range(count):
        time += rnd.randint(5, 15)
        raw.append({"type": "assistant/chunk", "seq": len(raw), "time": time, "data": {
            "turn": 1, "step": 1, "chunk": {"type": "text-delta", "index": 0, "text": rnd.choice(WORDS)}}})
    return [parse_event(event, event["seq"]) for event in raw]


def batches(events: list[Event], per: str) -> Iterator[list[Event]]:
    batch: list[Event] = []
    for event in events:
        batch.append(event)
        if per == "event" or (per == "turn" and event.type == "turn/end"):
            yield batch
            batch = []
    if batch:
        yield batch


def write(path: Path, events: list[Event], per: str) -> None:
    log = storage.save(path, HEADER, [])
    for batch in batches(events, per):
        log.append(batch)


def zstd_plaintext(path: Path) -> tuple[int, int]:
    """(plaintext bytes, lines) of every frame of a zstd log."""
    size, plain, lines = path.stat().st_size, 0, 0
    with open(path, "rb") as stream:
        for frame in zstdframes.frames(stream, size, str(path)):
            for piece in zstdframes.plaintext(stream, frame, zstandard.ZstdDecompressor()):
                plain, lines = plain + len(piece), lines + piece.count(b"\n")
    return plain, lines


def sqlite_plaintext(path: Path) -> tuple[int, int]:
    """(plaintext of the compressed `data` BLOBs, rows) of a SQLite log."""
    with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as connection:
        blobs = [row[0] for row in connection.execute("SELECT data FROM events WHERE typeof(data) = 'blob'")]
        rows = connection.execute("SELECT count(*) FROM events").fetchone()[0]
    return sum(len(zstandard.ZstdDecompressor().decompress(blob)) for blob in blobs), rows


def measure(name: str, events: list[Event], directory: Path) -> Iterable[dict[str, Any]]:
    for per in ("event", "turn", "whole"):
        path = directory / f"{name.replace(' ', '-')}-{per}.jsonl.zstd"
        write(path, events, per)
        plain, lines = zstd_plaintext(path)
        size = path.stat().st_size
        yield {"log": name, "format": f"zstd, a frame per {per}", "bytes": size, "plain/byte": plain / size,
               "records/byte": lines / size, "events/byte": len(events) / size}
    path = directory / f"{name.replace(' ', '-')}.sqlite"
    write(path, events, "turn")
    plain, rows = sqlite_plaintext(path)
    size = path.stat().st_size
    yield {"log": name, "format": "sqlite, a batch per turn", "bytes": size, "plain/byte": plain / size,
           "records/byte": rows / size, "events/byte": len(events) / size}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=500)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as scratch:
        for name, shape in shapes(args.turns).items():
            rows.extend(measure(name, workload_events(shape), Path(scratch)))
        rows.extend(measure("dense one-token deltas", dense_deltas(), Path(scratch)))
    if args.json:
        json.dump(rows, sys.stdout, indent=1)
        print()
        return 0
    print("| log | format | bytes | plaintext/byte | records/byte | events/byte |")
    print("|---|---|---:|---:|---:|---:|")
    for row in rows:
        print(f"| {row['log']} | {row['format']} | {row['bytes']:,} | {row['plain/byte']:.2f} | "
              f"{row['records/byte']:.4f} | {row['events/byte']:.4f} |")
    plain = max(row["plain/byte"] for row in rows)
    events = max(row["events/byte"] for row in rows if row["log"] != "dense one-token deltas")
    dense = max(row["events/byte"] for row in rows)
    print(f"\nbudget: {budget.PLAIN_PER_BYTE} bytes and {budget.RECORDS_PER_BYTE} records a byte: margins "
          f"{budget.PLAIN_PER_BYTE / plain:.0f}x (plaintext), {budget.RECORDS_PER_BYTE / events:.0f}x (events of the "
          f"workloads), {budget.RECORDS_PER_BYTE / dense:.1f}x (the dense deltas)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
