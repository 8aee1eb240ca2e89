#!/usr/bin/env python3
"""The scaling study: per-event cost of `live` and `model` at 10^3, 10^4 and 10^5 events.

For each size N the session first holds the workload's first N - K events (built untimed), then
the last K append operations (and the derives between them) are timed: the cost of an event
when the log already holds about N. `live` should stay flat; the naive `model` refolds the whole
log on every append and derive, so its cost grows with N; it runs with its contracts off
(SESSIONSPEC_CONTRACTS=0, which this script sets) and within a time limit per size, and the
table says how many events it measured. The model's prefix is the log `live` built from the
same operations and clock (the model would need O(N^2) to build it).

The figures are ratios measured in one run on one machine; CPU time (process_time) is the
primary figure because the wall clock is shared with whatever else the machine runs.

    python benchmarks/scaling.py [--sizes 1000,10000,100000] [--window 1000] [--model-limit 20] [--json]
    python benchmarks/scaling.py --collector-share     # live with the garbage collector on and off
    python benchmarks/scaling.py --load [--log LOG.jsonl] [--sizes 1000,10000,100000,1000000]

`--load` measures `sessionspec.load` instead (issue 36): each size is a prefix of one workload log
(LOG, or one `sessionspec bench --save` writes) cut at the first turn/end from that many events on,
loaded in a process of its own, several times for a small log (CPU time of the fastest load: the
per-event figure), and that process's peak memory as the kernel accounts it, beside the file's size;
the best of the rounds.
"""

from __future__ import annotations

import os

os.environ.setdefault("SESSIONSPEC_CONTRACTS", "0")

import argparse
import gc
import itertools
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson
from repair_speed import bench_log
from sessionspec import live, model
from sessionspec.cli.bench import CLOCK_START, generate, parse
from sessionspec.storage.chunkrows import decode

EVENTS_PER_TURN = 39


def workload(events: int) -> list[dict[str, Any] | None]:
    """The first `events` appends of the shared workload, with the derives among them."""
    ops = parse(generate(events // EVENTS_PER_TURN + 2))
    out: list[dict[str, Any] | None] = []
    appends = 0
    for op in ops:
        if op is not None:
            if appends == events:
                break
            appends += 1
        out.append(op)
    return out


def _split(ops: list[dict[str, Any] | None], window: int) -> int:
    """The index where the last `window` appends begin."""
    appends = 0
    for index in range(len(ops) - 1, -1, -1):
        if ops[index] is not None:
            appends += 1
            if appends == window:
                return index
    return 0


def timed(session: Any, ops: list[dict[str, Any] | None], limit: float) -> tuple[int, float, float]:
    """Apply ops until done or `limit` CPU seconds; returns (appends, cpu seconds, wall seconds)."""
    append, derive = session.append_request, session.derive_messages
    appends = 0
    wall, cpu = time.perf_counter(), time.process_time()
    for op in ops:
        if op is None:
            derive()
        else:
            append(op)
            appends += 1
            if time.process_time() - cpu > limit:
                break
    return appends, time.process_time() - cpu, time.perf_counter() - wall


def build(ops: list[dict[str, Any] | None], split: int) -> tuple[live.Session, float, int, float, float]:
    """A live session replaying ops: (session, prefix CPU seconds, window appends, window CPU, window wall)."""
    sut = live.Session.create("bench", clock=itertools.count(CLOCK_START).__next__)
    start = time.process_time()
    for op in ops[:split]:
        if op is None:
            sut.derive_messages()
        else:
            sut.append_request(op)
    prefix_cpu = time.process_time() - start
    appends, cpu, wall = timed(sut, ops[split:], float("inf"))
    return sut, prefix_cpu, appends, cpu, wall


def measure(sizes: list[int], window: int, model_limit: float, repeats: int) -> list[dict[str, Any]]:
    """Every size, `repeats` rounds of live replays interleaved (so load drift hits all sizes alike), then the model."""
    workloads = {size: workload(size) for size in sizes}
    splits = {size: _split(ops, min(window, size)) for size, ops in workloads.items()}
    gc.collect()
    gc.freeze()  # the parsed workloads are input, not the store: keep them out of the collector's walks
    best: dict[int, tuple[float, int, float, float]] = {}
    sessions: dict[int, live.Session] = {}
    for _ in range(repeats):
        for size in sizes:
            sut, prefix_cpu, appends, cpu, wall = build(workloads[size], splits[size])
            full, window_cpu = prefix_cpu + cpu, cpu
            if size in best:
                old_full, _, old_window, old_wall = best[size]
                full, window_cpu, wall = min(full, old_full), min(window_cpu, old_window), min(wall, old_wall)
            best[size] = (full, appends, window_cpu, wall)
            sessions[size] = sut
            del sut
            gc.collect()
    rows = []
    for size in sizes:
        full, live_n, live_cpu, live_wall = best[size]
        sut = sessions.pop(size)
        prefix = list(sut.events[: len(sut.events) - live_n])
        # The model, over the same prefix (taken from live: identical events, same clock).
        reference = model.Session("bench", sut.header, itertools.count(CLOCK_START + len(prefix)).__next__, (), ())
        reference._log = prefix  # the model keeps nothing but its log: every query folds it again
        del sut
        model_n, model_cpu, model_wall = timed(reference, workloads[size][splits[size]:], model_limit)
        rows.append({
            "events": size,
            "window": live_n,
            "repeats": repeats,
            "live_us_per_event": live_cpu / live_n * 1e6,
            "live_wall_us_per_event": live_wall / live_n * 1e6,
            "live_full_us_per_event": full / size * 1e6,
            "model_events_measured": model_n,
            "model_us_per_event": model_cpu / model_n * 1e6,
            "model_wall_us_per_event": model_wall / model_n * 1e6,
        })
    gc.unfreeze()
    return rows


def collector_share(sizes: list[int], repeats: int) -> None:
    """Whole live replays with the cyclic collector on and off, interleaved: whose growth is it?"""
    workloads = {size: workload(size) for size in sizes}
    gc.collect()
    gc.freeze()
    best: dict[tuple[bool, int], float] = {}
    for _ in range(repeats):
        for collect in (True, False):
            for size in sizes:
                if not collect:
                    gc.disable()
                _, prefix_cpu, _, cpu, _ = build(workloads[size], len(workloads[size]))
                gc.enable()
                gc.collect()
                key = (collect, size)
                best[key] = min(best.get(key, float("inf")), (prefix_cpu + cpu) / size * 1e6)
    gc.unfreeze()
    print("| events | collector on: us/event | vs first | collector off: us/event | vs first |")
    print("|---:|---:|---:|---:|---:|")
    for size in sizes:
        on, off = best[(True, size)], best[(False, size)]
        print(f"| {size:,} | {on:.1f} | {on / best[(True, sizes[0])]:.2f}x | {off:.1f} | {off / best[(False, sizes[0])]:.2f}x |")


LOAD = """
import sys, time
from sessionspec import load
path, times, best = sys.argv[1], int(sys.argv[2]), float("inf")
for _ in range(times):
    start = time.process_time()
    load(path)
    best = min(best, time.process_time() - start)
print(best)
"""
"""`load(LOG)` `times` times in one process, the fastest printed: a small log's load is far below the start-up."""


def prefixes(log: Path, sizes: list[int], folder: Path) -> dict[int, tuple[Path, int]]:
    """For each size, the log cut at the first turn/end from `size` events on: (its path, its events).

    Streamed, a line at a time: this process stays small (a child's peak memory counts what its parent held)."""
    out: dict[int, tuple[Path, int]] = {}
    wanted = sorted(sizes)
    events = 0
    growing = folder / "growing.jsonl"
    with open(log, "rb") as stream, open(growing, "wb") as sink:
        sink.write(stream.readline())  # the header
        for line in stream:
            sink.write(line)
            record = orjson.loads(line)
            events += len(decode(record))
            if wanted and events >= wanted[0] and record.get("type") == "turn/end":
                sink.flush()
                path = folder / f"load-{wanted[0]}.jsonl"
                shutil.copyfile(growing, path)
                out[wanted.pop(0)] = (path, events)
                if not wanted:
                    break
    if wanted:
        raise SystemExit(f"{log} holds {events:,} events, fewer than {max(sizes):,}")
    return out


def timed_load(path: Path, events: int) -> tuple[float, float]:
    """(CPU seconds of the fastest load, peak MB of the process), a whole process loading `path` several times."""
    times = max(1, min(50, 200_000 // events))
    env = dict(os.environ, SESSIONSPEC_NO_PROGRESS="1")
    process = subprocess.Popen([sys.executable, "-c", LOAD, str(path), str(times)], stdout=subprocess.PIPE, env=env)
    out = process.stdout.read() if process.stdout is not None else b""
    _, status, usage = os.wait4(process.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"load of {path} failed")
    return float(out), usage.ru_maxrss / 1024


def load_scaling(sizes: list[int], log: Path | None, repeats: int) -> None:
    """`load` of each prefix, interleaved rounds, the fastest kept: CPU per event, and peak memory beside the file."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        logs = prefixes(log or bench_log(folder, max(sizes) // EVENTS_PER_TURN + 2), sizes, folder)
        best: dict[int, tuple[float, float]] = {}
        for _ in range(repeats):
            for size in sizes:
                got = timed_load(*logs[size])
                best[size] = min(best.get(size, got), got)
        print("| events | file MB | load: CPU s | us/event | vs first | peak MB (process) | peak / file size |")
        print("|---:|---:|---:|---:|---:|---:|---:|")
        first = None
        for size in sizes:
            path, events = logs[size]
            cpu, peak = best[size]
            per = cpu / events * 1e6
            first = first or per
            mb = path.stat().st_size / 2**20
            print(f"| {events:,} | {mb:.1f} | {cpu:.3f} | {per:.2f} | {per / first:.2f}x | {peak:.0f} | {peak / mb:.2f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--window", type=int, default=1000, help="appends timed at each size (default 1000)")
    parser.add_argument("--model-limit", type=float, default=20.0, help="CPU seconds the model may take per size")
    parser.add_argument("--repeats", type=int, default=5, help="live replays per size; the fastest is reported")
    parser.add_argument("--collector-share", action="store_true",
                        help="instead: whole live replays with the garbage collector on and off")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--load", action="store_true", help="instead: `sessionspec.load` of logs of these sizes")
    parser.add_argument("--log", type=Path, help="with --load: the workload log to cut (default: one generated)")
    args = parser.parse_args()
    if args.load:
        load_scaling([int(size) for size in args.sizes.split(",")], args.log, min(args.repeats, 3))
        return
    if args.collector_share:
        collector_share([int(size) for size in args.sizes.split(",")], min(args.repeats, 3))
        return
    rows = measure([int(size) for size in args.sizes.split(",")], args.window, args.model_limit, args.repeats)
    if args.json:
        print(json.dumps(rows, indent=1))
        return
    base, base_full = rows[0]["live_us_per_event"], rows[0]["live_full_us_per_event"]
    print("| events in the log | live: us/event, last K | vs 10^3 | live: us/event, whole replay | vs 10^3 "
          "| model: us/event, last K (K measured) | model / live |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        print(f"| {row['events']:,} | {row['live_us_per_event']:.1f} | {row['live_us_per_event'] / base:.2f}x "
              f"| {row['live_full_us_per_event']:.1f} | {row['live_full_us_per_event'] / base_full:.2f}x "
              f"| {row['model_us_per_event']:,.0f} ({row['model_events_measured']}) "
              f"| {row['model_us_per_event'] / row['live_us_per_event']:,.0f}x |")


if __name__ == "__main__":
    main()
