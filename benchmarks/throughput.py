#!/usr/bin/env python3
"""Requests per second of `sessionspec conform`, against testees of three speeds and a bare pipe (issue 14).

Timed, in interleaved rounds (each round runs every case once, so a slow minute of a shared
machine slows all of them, and the ratios within a round are what to read):

- **pipe**: a bare pipe round trip: the runner's `Connection` (the same batching and window)
  against a process that answers every line with `{"ok":true}`, no runner logic at all;
- **instant**: `conform` against a testee that answers instantly: a canned echo of the
  reference's answers, recorded before the rounds from the same (derandomized) run, so the
  runner's own ceiling shows;
- **live** and **model**: `conform` against `sessionspec serve --impl live` and `--impl model`.

Each `conform` runs as its own process (`--vectors` empty, `--examples N`); its rate is the
report's requests over its seconds (the clock starts after the testee answered hello, so
interpreter start-up is not counted). CPU time of the run (runner and testee, from
`getrusage(RUSAGE_CHILDREN)`) is given per request as well, and the runner's alone (`runner us`: the
conform process's own CPU inside `runner.run`, from hello to the report, without the interpreter's
start-up and imports; and its whole `getrusage(RUSAGE_SELF)`, start-up included). The instant run must end without a divergence, or the recording does
not match the run and its figure is void (it says so).

  python benchmarks/throughput.py [--examples 100] [--rounds 3] [--pipe-requests 20000] [--json]
  python benchmarks/throughput.py --serve-recording FILE    # (internal) the reference as a testee, recording
  python benchmarks/throughput.py --serve-canned FILE       # (internal) the recorded answers, in order
  python benchmarks/throughput.py --runner-cpu FILE ARGS... # (internal) `sessionspec ARGS`, its own CPU to FILE
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from sessionspec.cli import main as sessionspec_main
from sessionspec.model import Session
from sessionspec.wire.client import Connection
from sessionspec.wire.executor import Executor
from sessionspec.wire.serve import answer_line, lines

ECHO = "import sys\nw = sys.stdout.buffer\nfor line in sys.stdin.buffer:\n    w.write(b'{\"ok\":true}\\n'); w.flush()\n"
CASES = ("pipe", "instant", "live", "model")


def serve_recording(path: Path) -> None:
    """A testee answering with the reference (the model, as `serve --impl model` does) that writes each answer down."""
    executor = Executor(Session.create, "model")
    with path.open("wb") as record:
        for line in lines(sys.stdin.buffer):
            answer = answer_line(executor, line) + b"\n"
            record.write(answer)
            sys.stdout.buffer.write(answer)
            sys.stdout.buffer.flush()


def serve_canned(path: Path) -> None:
    """A testee that answers the n-th request line with the n-th recorded answer, at once."""
    answers = iter(path.read_bytes().splitlines(keepends=True))
    write, flush = sys.stdout.buffer.write, sys.stdout.buffer.flush
    for _ in lines(sys.stdin.buffer):
        write(next(answers, b'{"ok":false,"error":{"kind":"internal","message":"no more recorded answers"}}\n'))
        flush()


def runner_cpu(path: Path, argv: list[str]) -> int:
    """`sessionspec ARGV` in this process; then its CPU seconds (user + system) inside `runner.run` (the run, not the
    interpreter's start-up and imports) and in all, written to `path` as JSON."""
    runner = importlib.import_module("sessionspec.conformance.runner")  # not in the testees this file also serves
    inside = [0.0]
    run = runner.run

    def timed(*args: Any, **kwargs: Any) -> Any:
        started = time.process_time()
        try:
            return run(*args, **kwargs)
        finally:
            inside[0] += time.process_time() - started

    runner.run = timed
    try:
        code = sessionspec_main(argv)
    finally:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        path.write_text(json.dumps({"run": inside[0], "process": usage.ru_utime + usage.ru_stime}))
    return code


def pipe_rate(requests: int) -> dict[str, float]:
    """Round trips per second through the runner's Connection to an echo process (pipelined like the runner)."""
    connection = Connection([sys.executable, "-c", ECHO])
    line = b'{"op":"append","type":"turn/start","data":{"turn":1}}'
    try:
        connection.start()
        connection.request(line)
        cpu, own = _children_cpu(), time.process_time()
        started = time.perf_counter()
        for sent in range(requests):
            connection.send(line)
            if (sent + 1) % 256 == 0:
                while connection.in_flight:
                    connection.receive_raw()
        while connection.in_flight:
            connection.receive_raw()
        seconds = time.perf_counter() - started
        own = time.process_time() - own
    finally:
        connection.close()
    return {"requests": requests, "seconds": seconds, "rate": requests / seconds,
            "cpu_us": (_children_cpu() - cpu + own) / requests * 1e6}


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def conform_rate(testee: list[str], examples: int, directory: Path, timeout: float = 10.0) -> dict[str, Any]:
    """One `sessionspec conform` run against `testee`: requests, seconds, rate, CPU per request, divergences."""
    report, own = directory / "report.json", directory / "runner-cpu"
    command = [sys.executable, os.path.abspath(__file__), "--runner-cpu", str(own),
               "conform", "--vectors", str(directory / "no-vectors"),
               "--examples", str(examples), "--timeout", str(timeout), "--json", str(report), "--", *testee]
    cpu = _children_cpu()
    subprocess.run(command, capture_output=True, check=False)
    used = _children_cpu() - cpu
    data = json.loads(report.read_text())
    runner_used = json.loads(own.read_text())
    requests, seconds = data["requests"], data["seconds"]
    return {"requests": requests, "seconds": seconds, "rate": requests / seconds, "cpu_us": used / requests * 1e6,
            "runner_us": runner_used["run"] / requests * 1e6,
            "runner_process_us": runner_used["process"] / requests * 1e6, "divergences": len(data["divergences"])}


def measure(examples: int, rounds: int, pipe_requests: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        (directory / "no-vectors").mkdir()
        recorded = directory / "answers.jsonl"
        me = [sys.executable, os.path.abspath(__file__)]
        conform_rate([*me, "--serve-recording", str(recorded)], examples, directory, timeout=600.0)
        testees = {"instant": [*me, "--serve-canned", str(recorded)],
                   "live": [sys.executable, "-m", "sessionspec.cli", "serve", "--impl", "live"],
                   "model": [sys.executable, "-m", "sessionspec.cli", "serve", "--impl", "model"]}
        runs: list[dict[str, Any]] = []
        for number in range(rounds):
            row: dict[str, Any] = {"round": number + 1, "load": os.getloadavg()[0], "pipe": pipe_rate(pipe_requests)}
            for case, testee in testees.items():
                row[case] = conform_rate(testee, examples, directory)
            runs.append(row)
            print(_round_line(row), flush=True)
    return {"examples": examples, "rounds": runs, "summary": _summary(runs)}


def _round_line(row: dict[str, Any]) -> str:
    pipe = row["pipe"]["rate"]
    parts = [f"round {row['round']} (load {row['load']:.1f}): pipe {pipe:,.0f}/s"]
    for case in CASES[1:]:
        run = row[case]
        void = " VOID: diverged" if case == "instant" and run["divergences"] else ""
        parts.append(f"{case} {run['rate']:,.0f}/s ({run['rate'] / pipe:.3f} of pipe, {run['cpu_us']:.0f} us cpu/req, runner {run['runner_us']:.0f} us, "
                     f"{run['runner_process_us']:.0f} with start-up)"
                     f"{void}")
    return "; ".join(parts)


def _summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Per case: the best and median rate over rounds, and the median of the per-round ratios to the pipe."""
    out: dict[str, Any] = {}
    for case in CASES:
        rates = [row[case]["rate"] for row in runs]
        ratios = [row[case]["rate"] / row["pipe"]["rate"] for row in runs]
        out[case] = {"best": max(rates), "median": statistics.median(rates), "ratio_median": statistics.median(ratios),
                     "cpu_us_median": statistics.median(row[case]["cpu_us"] for row in runs),
                     "runner_us_median": statistics.median(row[case].get("runner_us", 0.0) for row in runs),
                     "requests": runs[0][case]["requests"]}
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--examples", type=int, default=100, help="machine examples per conform run (default 100)")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (default 3)")
    parser.add_argument("--pipe-requests", type=int, default=20_000, help="round trips timed for the bare pipe")
    parser.add_argument("--json", action="store_true", help="print the whole result as JSON")
    parser.add_argument("--serve-recording", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--serve-canned", type=Path, help=argparse.SUPPRESS)
    if sys.argv[1:2] == ["--runner-cpu"]:
        return runner_cpu(Path(sys.argv[2]), sys.argv[3:])
    args = parser.parse_args()
    if args.serve_recording is not None:
        serve_recording(args.serve_recording)
        return 0
    if args.serve_canned is not None:
        serve_canned(args.serve_canned)
        return 0
    result = measure(args.examples, args.rounds, args.pipe_requests)
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        for case, row in result["summary"].items():
            print(f"{case:8s} best {row['best']:9,.0f}/s  median {row['median']:9,.0f}/s  median ratio to pipe "
                  f"{row['ratio_median']:.3f}  cpu {row['cpu_us_median']:.0f} us/request, runner "
                  f"{row['runner_us_median']:.0f}  ({row['requests']:,} requests)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
