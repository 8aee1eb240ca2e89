#!/usr/bin/env python3
"""What each command costs to start, beside `python -c pass` and beside an earlier tree, in one run.

Every figure is a whole process, started as a user starts it (`python -m sessionspec.cli ...`),
timed from outside by the wall clock and by the CPU the kernel accounts to it (`os.wait4`), in
interleaved rounds (each round runs every command once, in turn), so the ratios of one round are
taken under the same load; the median of the rounds is printed. With `--before REV`, the tree of
that git revision (its `reference/` from `git archive`) runs beside this one, on the same
interpreter and packages, through `PYTHONPATH`; the ratio column is this tree's time over it.

The check bar (issue 6, held again by issue 21): `sessionspec check LOG` on the 2,000-turn log, as a
whole process, reaches at least 0.5 of the rate of a bare `orjson.loads` of the same file's lines
(also a whole process: `python -c` reading and parsing every line), by the wall clock.

  python benchmarks/startup.py [--before REV] [--log LOG.jsonl] [--turns 2000] [--rounds 9]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ORJSON_LINES = "import orjson,sys\nloads=orjson.loads\nfor line in open(sys.argv[1],'rb'):\n    loads(line)"


@dataclass(frozen=True)
class Case:
    name: str
    argv: list[str]
    stdin: bytes = b""
    ours: bool = True
    """Whether it runs sessionspec (and so has a `--before` twin)."""


def cases(log: Path) -> list[Case]:
    cli = ["-m", "sessionspec.cli"]
    hello = b'{"op":"hello"}\n{"op":"create","id":"s","seed":null,"header":null}\n{"op":"snapshot"}\n'
    return [
        Case("python -c pass", ["-c", "pass"], ours=False),
        Case("import sessionspec.live", ["-c", "import sessionspec.live"]),
        Case("sessionspec --help", [*cli, "--help"]),
        Case("sessionspec --version", [*cli, "--version"]),
        Case("sessionspec check --help", [*cli, "check", "--help"]),
        Case("sessionspec serve --impl live", [*cli, "serve", "--impl", "live"], stdin=hello),
        Case("sessionspec show LOG --at 5", [*cli, "show", str(log), "--at", "5"]),
        Case("sessionspec repair LOG", [*cli, "repair", str(log)]),
        Case("sessionspec bench --turns 20", [*cli, "bench", "--turns", "20", "--impl", "live"]),
        Case("sessionspec check LOG", [*cli, "check", str(log)]),
        Case("orjson.loads of LOG's lines", ["-c", ORJSON_LINES, str(log)], ours=False),
    ]


def run(argv: list[str], stdin: bytes, pythonpath: str | None) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one whole process."""
    env = dict(os.environ, SESSIONSPEC_NO_PROGRESS="1")
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath
    started = time.perf_counter()
    process = subprocess.Popen([sys.executable, *argv], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, env=env)
    assert process.stdin is not None
    process.stdin.write(stdin)
    process.stdin.close()
    _, _, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    process.returncode = 0
    return wall, usage.ru_utime + usage.ru_stime


def earlier_tree(revision: str, into: Path) -> str:
    """The `reference/` of `revision`, unpacked under `into`; returns what PYTHONPATH takes."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", revision, "reference"], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return str(into / "reference")


def bench_log(folder: Path, turns: int) -> Path:
    path = folder / "bench.jsonl"
    subprocess.run([sys.executable, "-m", "sessionspec.cli", "bench", "--turns", str(turns), "--impl", "live",
                    "--save", str(path)], check=True, capture_output=True)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", metavar="REV", help="also run the tree of this git revision, beside this one")
    parser.add_argument("--log", type=Path, help="the log check, show and repair read (default: a bench log)")
    parser.add_argument("--turns", type=int, default=2000, help="turns of the default log (default 2000)")
    parser.add_argument("--rounds", type=int, default=9, help="interleaved rounds (default 9)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        log = args.log or bench_log(Path(tmp), args.turns)
        before = earlier_tree(args.before, Path(tmp)) if args.before else None
        table = cases(log)
        sides = [("now", None), *([("before", before)] if before else [])]
        times: dict[tuple[str, str], list[tuple[float, float]]] = {}
        for _ in range(args.rounds):
            for case in table:
                for side, path in sides:
                    if side == "now" or case.ours:
                        times.setdefault((case.name, side), []).append(run(case.argv, case.stdin, path))
        report(table, times, before is not None, log, args)


def median(values: list[tuple[float, float]], index: int) -> float:
    return statistics.median(value[index] for value in values)


def report(table: list[Case], times: dict[tuple[str, str], list[tuple[float, float]]], before: bool, log: Path,
           args: argparse.Namespace) -> None:
    base = median(times[("python -c pass", "now")], 0)
    print(f"{args.rounds} interleaved rounds, medians; log {log.name}: {log.stat().st_size / 1e6:.1f} MB"
          + (f"; before = {args.before}" if before else ""))
    head = f"{'command':<32} {'wall s':>7} {'CPU s':>7} {'x pass':>7}"
    print(head + (f" {'before s':>9} {'now/before':>11}" if before else ""))
    for case in table:
        now = times[(case.name, "now")]
        line = f"{case.name:<32} {median(now, 0):>7.3f} {median(now, 1):>7.3f} {median(now, 0) / base:>7.1f}"
        if before and case.ours:
            earlier = times[(case.name, "before")]
            line += f" {median(earlier, 0):>9.3f} {median(now, 0) / median(earlier, 0):>11.2f}"
        print(line)
    check, raw = times[("sessionspec check LOG", "now")], times[("orjson.loads of LOG's lines", "now")]
    per_round = sorted(r[0] / c[0] for c, r in zip(check, raw, strict=True))
    print(f"check bar: check's rate / orjson.loads's rate, whole processes, by the wall clock: median "
          f"{statistics.median(per_round):.2f} (rounds {per_round[0]:.2f} to {per_round[-1]:.2f}); the bar is 0.50")
    helped = median(times[("sessionspec --help", "now")], 0) / median(times[("import sessionspec.live", "now")], 0)
    print(f"--help / import sessionspec.live: {helped:.2f} (the bar: at most 2)")


if __name__ == "__main__":
    main()
