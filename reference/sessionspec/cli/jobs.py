"""`conform --jobs N`: the N shards of one run at once on this machine, merged into one report.

A run keeps about 1.4 cores busy (the runner and the testee are two processes), so a machine with
more cores is used by running more testees. The project adds no scheduler of its own: `--jobs N`
starts `conform --shard I/N --seed S` for I in 1..N as child processes, each with its own testee,
and joins their `--json` reports with `sessionspec merge`'s code; with the same seed the families
found are those of `--jobs 1` (spec/10, "Shards"; tests/test_10_shards.py). Across machines the
same is a CI matrix of `--shard` jobs and a last job that merges.

A stop keeps its report: SIGTERM, SIGINT or SIGHUP is passed on to every child, each writes its
partial report as a single run does, and the parts are merged (`complete: false`, the signal
named); the exit is 128 + the signal's number. A part that is missing (a child that could not
run) leaves the parts' directory in place, named, and the exit is 2.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Final

from sessionspec.cli import merge as merge_command
from sessionspec.conformance import baseline, merge, runner
from sessionspec.conformance.stopping import Interrupted, deferred_signals, stop_on_signals

GRACE: Final = 30.0
"""Seconds a signalled child has to kill its testee and write its partial report before it is killed."""
SIGNALLED: Final = 128
REFUSED: Final = {"fix": "--fix (a failure list is rewritten from one whole run)",
                  "replay": "--replay (one trace is one run)", "shard": "--shard (--jobs runs every shard itself)",
                  "baseline": "--baseline (write --json, then compare with `sessionspec diff OLD.json NEW.json`)"}


def refused(args: argparse.Namespace) -> str | None:
    """Why `--jobs` cannot go with the options given, or None."""
    if args.jobs < 1:
        return "--jobs must be 1 or more"
    for name, why in REFUSED.items():
        if getattr(args, name):
            return f"--jobs {args.jobs} cannot go with {why}"
    return None


def shard_command(args: argparse.Namespace, command: list[str], index: int, part: Path) -> list[str]:
    """The child `conform` of shard `index`: the parent's options, its own shard, report and traces."""
    words = ["conform", "--shard", f"{index}/{args.jobs}", "--seed", str(args.seed), "--json", str(part),
             "--deadline", repr(args.deadline), "--level", args.level, "--timeout", repr(args.timeout),
             "--verify", str(args.verify)]
    words += ["--profile", args.profile] if args.profile else ["--examples", str(args.examples)]
    optional = {"--seconds": args.seconds, "--failures": args.failures, "--vectors": args.vectors,
                "--traces": None if args.traces is None else args.traces / f"shard-{index}"}
    for flag, value in optional.items():
        if value is not None:
            words += [flag, str(value)]
    for pattern in args.run:
        words += ["--run", pattern]
    for pattern in args.skip:
        words += ["--skip", pattern]
    return [sys.executable, "-m", "sessionspec", *words, "--", *command]


def run_jobs(args: argparse.Namespace, command: list[str]) -> int:
    """Run the shards, pass a stop on to them, merge their reports; exit as `conform` does."""
    directory = Path(tempfile.mkdtemp(prefix="sessionspec-jobs-"))
    parts = [directory / f"part-{index}.json" for index in range(1, args.jobs + 1)]
    print(f"conform: {args.jobs} shards of seed {args.seed} at once (their logs in {directory})", file=sys.stderr)
    children: list[subprocess.Popen[bytes]] = []
    signal_number: int | None = None
    try:
        with stop_on_signals():
            for index, part in enumerate(parts, start=1):
                with open(directory / f"part-{index}.log", "wb") as log:
                    children.append(subprocess.Popen(shard_command(args, command, index, part), stdin=subprocess.DEVNULL,
                                                     stdout=log, stderr=subprocess.STDOUT))
            _wait(children)
    except Interrupted as stop:
        signal_number = stop.signum
        with deferred_signals():
            _stop(children, stop.signum)
    with deferred_signals():
        code = _merged(args, parts, directory, [child.returncode for child in children])
    return SIGNALLED + signal_number if signal_number is not None else code


def _wait(children: list[subprocess.Popen[bytes]]) -> None:
    """Wait for every child; a signal raises `Interrupted` here (polling, so the handler runs at once)."""
    while any(child.poll() is None for child in children):
        time.sleep(0.05)


def _stop(children: list[subprocess.Popen[bytes]], signum: int) -> None:
    """Pass the signal on; a child not done within the grace is killed (its part is then missing)."""
    for child in children:
        if child.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                child.send_signal(signum)
    ends = time.monotonic() + GRACE
    for child in children:
        try:
            child.wait(max(0.0, ends - time.monotonic()))
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


def _merged(args: argparse.Namespace, parts: list[Path], directory: Path, codes: list[int | None]) -> int:
    """The whole's report from the parts, written where `conform` would have written it."""
    missing = [str(part) for part in parts if not part.exists()]
    if missing:
        for index, code in enumerate(codes, start=1):
            if code not in (0, 1):
                print(f"conform: shard {index}/{args.jobs} ended with exit {code}: see {directory}/part-{index}.log",
                      file=sys.stderr)
        print(f"conform: no report from {', '.join(missing)}; the parts and their logs are kept in {directory}",
              file=sys.stderr)
        return runner.UNRUNNABLE
    try:
        reports = [baseline.read(part) for part in parts]
        whole = merge.merge(reports, [str(part) for part in parts])
    except (baseline.BaselineError, merge.MergeError, KeyError, TypeError, json.JSONDecodeError) as error:
        print(f"conform: the shards' reports cannot be merged: {error} (kept in {directory})", file=sys.stderr)
        return runner.UNRUNNABLE
    merge_command.print_summary(whole, len(parts))
    try:
        merge_command.write(args, whole)
    except OSError as error:
        print(f"conform: cannot write the report: {error} (the parts are kept in {directory})", file=sys.stderr)
        return runner.UNRUNNABLE
    shutil.rmtree(directory, ignore_errors=True)
    if runner.UNRUNNABLE in codes:  # a shard whose testee could not run: its report says why, the whole is not judged
        return runner.UNRUNNABLE
    return runner.DIVERGED if whole["summary"]["unexpected"] else runner.OK
