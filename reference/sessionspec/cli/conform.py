"""`sessionspec conform [options] -- TESTEE...`: run the conformance oracle against any implementation.

The testee is a command that speaks SCP v0 (JSON Lines on stdin/stdout; spec/10-conformance.md).
The run sends it every vector of spec/vectors, then searches with the stateful machine for
divergences from the reference model; each divergence family found is minimized to its root cause
and reported once, with its level (required: the seeds state the rule; recommended: this spec
added it), what the testee's session answers afterwards, and a one-line reproduction. Every run
ends by itself (`--deadline`), and whatever stops it, the report of what was found is written.

Exit 0: no unexpected failure (divergences in the failure list, or, with `--level required`, of
the recommended level, are expected); 1: unexpected failures or stale failure-list entries; 2: the
testee could not be run, the run could not finish, or the oracle itself failed (said so); 128+N: a signal N
(SIGTERM, SIGINT, SIGHUP) stopped the run, whose report of everything found so far is written all the same.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sessionspec.cli import COMMANDS
from sessionspec.cli.progress import Progress
from sessionspec.cli.words import HelpFormatter, plural
from sessionspec.conformance import failures, junit, report, runner, vectors
from sessionspec.conformance.outcome import FAILED, Outcome, outcome
from sessionspec.conformance.stopping import deferred_signals, stop_on_signals
from sessionspec.wire.trace import TraceError, read_trace

SIGNALLED = 128
"""A run a signal stopped exits 128 + the signal's number (130 for Ctrl-C, 143 for SIGTERM), as a shell reports it,
after its report is written."""

EPILOG = """examples:
  sessionspec conform -- sessionspec serve --impl live
  sessionspec conform --examples 200 --json report.json -- node my-testee.js
  sessionspec conform --failures known.txt --junit conform.xml -- ./testee
  sessionspec conform --level required --failures known.txt -- node adapters/dsh-session/testee.mjs
  sessionspec conform --profile nightly --seconds 1800 -- ./testee"""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("conform", help=COMMANDS["conform"], description=__doc__, epilog=EPILOG,
                                   formatter_class=HelpFormatter)
    budget = parser.add_mutually_exclusive_group()
    budget.add_argument("--profile", choices=("dev", "ci", "nightly"), help="Hypothesis settings profile for the machine")
    budget.add_argument("--examples", type=int, default=runner.Options.examples, metavar="N",
                        help=f"machine examples (default {runner.Options.examples}; 0 skips the machine)")
    parser.add_argument("--seconds", type=float, metavar="SECONDS", help="the machine's search budget")
    parser.add_argument("--deadline", type=float, default=runner.DEADLINE, metavar="SECONDS",
                        help=f"the whole run's budget: past it the run stops and reports (default {runner.DEADLINE:g})")
    parser.add_argument("--level", choices=("required", "recommended"), default="recommended",
                        help="the level enforced: required (the seeds' rules only) or recommended (both; default)")
    parser.add_argument("--json", type=Path, metavar="REPORT.json", help="write the report as JSON")
    parser.add_argument("--junit", type=Path, metavar="REPORT.xml", help="write the report as JUnit XML")
    parser.add_argument("--failures", type=Path, metavar="KNOWN.txt", help="the known-failure list (vector ids, families)")
    parser.add_argument("--fix", action="store_true", help="rewrite the failure list from what was observed")
    parser.add_argument("--timeout", type=float, default=10.0, metavar="SECONDS",
                        help="seconds to wait for each answer (default 10)")
    parser.add_argument("--replay", type=Path, metavar="TRACE.json", help="replay one trace instead of running everything")
    parser.add_argument("--vectors", type=Path, metavar="DIR", help="vector directory (default: the packaged vectors)")
    parser.add_argument("--traces", type=Path, metavar="DIR",
                        help="where divergence traces are written (default: a fresh directory per run, named in the report)")
    parser.add_argument("--verbose", action="store_true", help="show every divergence, not only each family once")
    parser.add_argument("testee", nargs=argparse.REMAINDER, metavar="-- TESTEE...", help="the testee command")
    parser.set_defaults(handler=run)


def _options(args: argparse.Namespace, command: list[str], entries: list[failures.Entry]) -> runner.Options:
    if args.examples is not None and args.examples < 0:
        raise ValueError("--examples must be 0 or more")
    if (args.seconds is not None and args.seconds <= 0) or args.timeout <= 0 or args.deadline <= 0:
        raise ValueError("--seconds, --deadline and --timeout must be positive")
    return runner.Options(command, examples=None if args.profile else args.examples, seconds=args.seconds,
                          profile=args.profile, timeout=args.timeout, deadline=args.deadline,
                          vectors_dir=args.vectors or vectors.DEFAULT_DIR, replay=args.replay, traces_dir=args.traces)


def run(args: argparse.Namespace) -> int:
    command = list(args.testee)
    if command[:1] == ["--"]:
        command = command[1:]
    if not command:
        print("sessionspec conform: give the testee command after --", file=sys.stderr)
        return runner.UNRUNNABLE
    entries: list[failures.Entry] = []
    try:
        if args.failures is not None and not args.failures.exists() and not args.fix:
            raise ValueError(f"no failure list at {args.failures} (--fix writes one)")
        if args.failures is not None and args.failures.exists():
            entries = failures.parse(args.failures.read_text(encoding="utf-8"))
        options = _options(args, command, entries)
        trace = read_trace(args.replay) if args.replay is not None else None
    except (OSError, UnicodeDecodeError, ValueError, TraceError) as error:
        print(f"sessionspec conform: {error}", file=sys.stderr)
        return runner.UNRUNNABLE
    try:
        with stop_on_signals(), Progress("conform") as bar:
            result = runner.run(options, trace=trace, progress=lambda phase, done, total: bar(done, total, phase))
    except runner.Unrunnable as error:
        print(f"sessionspec conform: the testee could not be run: {error}", file=sys.stderr)
        if error.result is not None:  # the report says why, for a CI that reads it
            with deferred_signals():
                _write_reports(args, command, error.result, outcome(error.result, failures.judge([], []), enforce=args.level))
        return runner.UNRUNNABLE
    with deferred_signals():
        code = _report(args, command, result, entries)
    return SIGNALLED + result.signal if result.signal is not None else code


def _report(args: argparse.Namespace, command: list[str], result: runner.Result, entries: list[failures.Entry]) -> int:
    verdict = failures.judge(entries, result.divergences, searched=result.searched)
    judged = outcome(result, verdict, enforce=args.level)
    lines = list(report.text(result, judged, command, verbose=args.verbose))
    head = report.summary_lines(result, judged)
    for line in lines[: len(lines) - len(head)]:
        print(line, file=sys.stderr)
    for line in head:
        print(line)
    written = _write_reports(args, command, result, judged)
    if args.fix and args.failures is not None:
        if result.partial or result.crash is not None:
            print("sessionspec conform: --fix refused on a partial run (replay, vectors or machine skipped, stopped)",
                  file=sys.stderr)
            return runner.UNRUNNABLE
        failures.rewrite(args.failures, result.divergences)
        print(f"rewrote {args.failures} ({plural(len(result.divergences), 'entry')})")
        return runner.OK
    if result.crash is not None or not written:
        return runner.UNRUNNABLE
    if judged.count(FAILED):
        return runner.DIVERGED
    return runner.UNRUNNABLE if result.stopped and not result.searched and result.partial else runner.OK


@contextlib.contextmanager
def replaced(path: Path) -> Iterator[Path]:
    """A file written whole or not at all: written beside `path` under a temporary name, then renamed over it, so a
    reader (or a second signal) never meets half a report."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        yield temporary
        os.replace(temporary, path)
    finally:
        with contextlib.suppress(OSError):
            temporary.unlink()


def _write_reports(args: argparse.Namespace, command: list[str], result: runner.Result, judged: Outcome) -> bool:
    """Write --json and --junit; False (with one line said) when a report cannot be written."""
    try:
        if args.json is not None:
            text = json.dumps(report.to_json(result, judged, command), indent=1, ensure_ascii=True, default=str) + "\n"
            with replaced(args.json) as temporary:
                temporary.write_text(text, encoding="utf-8")
        if args.junit is not None:
            with replaced(args.junit) as temporary:
                junit.write(temporary, judged, str(result.testee.get("implementation", "?")))
    except (OSError, ValueError, RecursionError) as error:
        print(f"sessionspec conform: cannot write the report: {error}", file=sys.stderr)
        return False
    return True
