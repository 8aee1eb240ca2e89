#!/usr/bin/env python3
"""How fast `sessionspec check` reads a JSONL log, against a bare `orjson.loads` of the same lines.

The issue's bar: check reaches at least half the rate of orjson.loads, measured in one run.
Given a log, it is measured as is; without one, `sessionspec bench --turns N --save` writes one
from the shared workload (live implementation, JSONL backend). If bench is unavailable, the
workload's appends are given seqs and clock times and stored with the JSONL writer directly.

  python benchmarks/check_speed.py [LOG.jsonl] [--turns 2000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson
from sessionspec.storage.jsonl import JsonlWriter
from sessionspec.tools import sources
from sessionspec.tools.checker import check_path

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


def orjson_rate(path: Path) -> tuple[float, int]:
    loads = orjson.loads
    start = time.process_time()
    count = 0
    with open(path, "rb") as stream:
        for line in stream:
            loads(line)
            count += 1
    return count / (time.process_time() - start), count


def parse_rate(path: Path, lines: int) -> float:
    """The checker's floor: read the log in blocks and prove each block canonical (`sources._block`), no checks."""
    start = time.process_time()
    with open(path, "rb") as stream:
        stream.readline()
        carry = b""
        while block := stream.read(sources.BLOCK):
            data = carry + block
            cut = data.rfind(b"\n") + 1
            part, carry = data[: cut - 1], data[cut:]
            if part:
                sources._block(part)
    return lines / (time.process_time() - start)


def check_rate(path: Path, lines: int, strict: bool) -> tuple[float, int, int]:
    start = time.process_time()
    report = check_path(str(path), strict=strict)
    elapsed = time.process_time() - start
    return lines / elapsed, report.events, len(report.findings)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("log", nargs="?", type=Path)
    parser.add_argument("--turns", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5, help="interleaved rounds; best of N for each side")
    parser.add_argument("--strict", action="store_true", help="also time check --strict (not part of the bar)")
    parser.add_argument("--floor", action="store_true", help="also time the block parse alone (where the time goes)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = args.log or bench_log(Path(tmp), args.turns)
        # Interleaved rounds, CPU time, best of each: the machine is shared, so wall time and
        # back-to-back batches would compare different loads.
        raws: list[tuple[float, int]] = []
        checks: list[tuple[float, int, int]] = []
        floors: list[float] = []
        for _ in range(args.repeat):
            raws.append(orjson_rate(path))
            checks.append(check_rate(path, raws[-1][1], False))
            if args.floor:
                floors.append(parse_rate(path, raws[-1][1]))
        raw, lines = max(raws)
        rate, events, findings = max(checks)
        print(f"log: {path.name}, {lines} lines, {events} events, {path.stat().st_size / 1e6:.1f} MB")
        print(f"orjson.loads: {raw:,.0f} lines/s")
        print(f"check:        {rate:,.0f} lines/s ({rate * events / lines:,.0f} events/s), {findings} findings")
        print(f"ratio check/orjson: {rate / raw:.2f} (bar: 0.50)")
        if floors:
            floor = max(floors)
            print(f"block parse alone: {floor:,.0f} lines/s (ratio {floor / raw:.2f}); per line: parse "
                  f"{1e6 / floor - 1e6 / raw:+.2f} us over loads, checks {1e6 / rate - 1e6 / floor:.2f} us")
        if args.strict:
            strict_rate, _, strict_findings = max(check_rate(path, lines, True) for _ in range(args.repeat))
            print(f"check --strict: {strict_rate:,.0f} lines/s, {strict_findings} findings, ratio {strict_rate / raw:.2f}")


if __name__ == "__main__":
    main()
