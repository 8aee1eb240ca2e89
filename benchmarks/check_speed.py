#!/usr/bin/env python3
"""How fast `sessionspec check` reads a JSONL log, against a bare `orjson.loads` of the same lines.

The issue's bar: check reaches at least half the rate of orjson.loads, measured in one run.
Timed: a bare `orjson.loads` of every line; `check` as it runs by default on such a log (one
process per usable CPU, up to four: forked surveyors survey blocks while the first folds them);
`check --jobs 1` (one process);
optionally the block parse alone and `check --strict`. Each by the wall clock and by CPU time.
Given a log, it is measured as is; without one, `sessionspec bench --turns N --save` writes one
from the shared workload (live implementation, JSONL backend). If bench is unavailable, the
workload's appends are given seqs and clock times and stored with the JSONL writer directly.

  python benchmarks/check_speed.py [LOG.jsonl] [--turns 2000] [--repeat 9] [--floor] [--strict]
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from sessionspec.live import fasttext
from sessionspec.logcheck import reader as sources
from sessionspec.logcheck import workers as surveyor
from sessionspec.logcheck.checkfile import check_path
from sessionspec.storage import jsonlread
from sessionspec.storage.jsonl import JsonlWriter

WORKLOAD = Path("/work/shared/bench/workload.py")


def bench_log(directory: Path, turns: int) -> Path:
    """The log `sessionspec bench --save` writes (the issue's reference input)."""
    path = directory / "bench.jsonl"
    done = subprocess.run([sys.executable, "-m", "sessionspec.cli", "bench", "--turns", str(turns), "--save", str(path)],
                          capture_output=True, text=True)
    if done.returncode != 0 or not path.is_file():
        print(f"sessionspec bench --save failed ({done.stderr.strip()[:200]}); storing the workload directly")
        return workload_log(directory, turns)
    return path


def workload_log(directory: Path, turns: int) -> Path:
    """The workload's appends as a stored log (seq = position, time from a ticking clock)."""
    ops = subprocess.run([sys.executable, str(WORKLOAD), "--turns", str(turns)], check=True, capture_output=True,
                         text=True).stdout.splitlines()
    events: list[Any] = []
    for line in ops:
        op = json.loads(line)
        if op.pop("op") != "append":
            continue
        events.append({"seq": len(events), "time": 1_700_000_000_000 + len(events), **op})
    path = directory / "bench.jsonl"
    JsonlWriter.create(path, {"version": 0, "id": "bench", "createdAt": 1_700_000_000_000}, events)
    return path


def cpu_seconds() -> float:
    """CPU time of this process and of its reaped children (the surveyor is reaped when a check ends)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@dataclass(frozen=True)
class Rate:
    """Lines per second of one timed run, by the wall clock and by CPU time (children included)."""

    wall: float
    cpu: float


def timed(run: Callable[[], object], lines: int) -> Rate:
    cpu, wall = cpu_seconds(), time.perf_counter()
    run()
    wall, cpu = time.perf_counter() - wall, cpu_seconds() - cpu
    return Rate(lines / wall, lines / max(cpu, 1e-9))


def count_lines(path: Path) -> int:
    with open(path, "rb") as stream:
        return sum(1 for _ in stream)


def orjson_loads(path: Path) -> None:
    loads = orjson.loads
    with open(path, "rb") as stream:
        for line in stream:
            loads(line)


def block_parse(path: Path) -> None:
    """The checker's floor: read the log in blocks and prove each block canonical (`fasttext.parse_block`), no checks."""
    with open(path, "rb") as stream:
        stream.readline()
        carry = b""
        while block := stream.read(jsonlread.BLOCK):
            data = carry + block
            cut = data.rfind(b"\n") + 1
            part, carry = data[: cut - 1], data[cut:]
            if part:
                fasttext.parse_block(part)


def best(rates: list[Rate]) -> Rate:
    return Rate(max(r.wall for r in rates), max(r.cpu for r in rates))


def ratios(rates: list[Rate], raws: list[Rate]) -> list[float]:
    """Each round's wall-clock ratio to the orjson.loads run beside it (same round, so the same load)."""
    return sorted(rate.wall / raw.wall for rate, raw in zip(rates, raws, strict=True))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("log", nargs="?", type=Path)
    parser.add_argument("--turns", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=9, help="interleaved rounds; best of N for each side")
    parser.add_argument("--strict", action="store_true", help="also time check --strict (not part of the bar)")
    parser.add_argument("--floor", action="store_true", help="also time the block parse alone (where the time goes)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = args.log or bench_log(Path(tmp), args.turns)
        lines = count_lines(path)
        # Interleaved rounds, best of each: the machine is shared, so back-to-back batches would
        # compare different loads. The bar is a rate, so the wall clock decides it; CPU time
        # (children included) says what the second process costs.
        runs: dict[str, Callable[[], object]] = {
            "orjson.loads": lambda: orjson_loads(path),
            "check": lambda: check_path(str(path)),
            "check --jobs 1": lambda: check_path(str(path), jobs=1),
        }
        if args.floor:
            runs["block parse alone"] = lambda: block_parse(path)
        if args.strict:
            runs["check --strict"] = lambda: check_path(str(path), strict=True)
        rates: dict[str, list[Rate]] = {name: [] for name in runs}
        for _ in range(args.repeat):
            for name, run in runs.items():
                rates[name].append(timed(run, lines))
        report = check_path(str(path))
        raw = best(rates["orjson.loads"])
        print(f"log: {path.name}, {lines} lines, {report.events} events, {path.stat().st_size / 1e6:.1f} MB, "
              f"{len(report.findings)} findings; {jsonlread.BLOCK >> 10} KiB blocks; best of {args.repeat}")
        print(f"{'':<20} {'lines/s (wall)':>15} {'ratio':>6} {'lines/s (CPU)':>15} {'ratio':>6}   round ratios (wall): "
              "min median max")
        for name in runs:
            rate = best(rates[name])
            within = ratios(rates[name], rates["orjson.loads"])
            print(f"{name:<20} {rate.wall:>15,.0f} {rate.wall / raw.wall:>6.2f} {rate.cpu:>15,.0f} {rate.cpu / raw.cpu:>6.2f}"
                  f"   {within[0]:.2f} {statistics.median(within):.2f} {within[-1]:.2f}")
        processes = min(surveyor.usable_cpus(), sources.DEFAULT_JOBS) if path.stat().st_size >= sources.PARALLEL_BYTES else 1
        print(f"bar: check at 0.50 of orjson.loads by the wall clock; `check` ran as {processes} process(es) "
              f"on {surveyor.usable_cpus()} usable CPU(s)")


if __name__ == "__main__":
    main()
