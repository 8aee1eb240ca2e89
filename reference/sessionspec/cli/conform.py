"""`sessionspec conform [options] -- TESTEE...`: run the conformance oracle against any implementation.

The testee is a command that speaks SCP v0 (JSON Lines on stdin/stdout; spec/10-conformance.md).
The run sends it every vector of spec/vectors, then searches with the stateful machine for
divergences from the reference model; every divergence family it finds is shrunk, minimized and
printed with a one-line reproduction. Exit 0: no divergence (after the failure list); 1:
divergences or stale failure-list entries; 2: the testee could not be run.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from sessionspec.cli import COMMANDS
from sessionspec.cli.progress import Progress
from sessionspec.conformance import failures, junit, runner, vectors
from sessionspec.wire.trace import TraceError, read_trace

EPILOG = """examples:
  sessionspec conform -- sessionspec serve --impl live
  sessionspec conform --examples 200 --json report.json -- node my-testee.js
  sessionspec conform --failures known.txt --junit conform.xml -- ./testee
  sessionspec conform --profile nightly --seconds 1800 -- ./testee"""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("conform", help=COMMANDS["conform"],
                                   description=__doc__, epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    budget = parser.add_mutually_exclusive_group()
    budget.add_argument("--profile", choices=("dev", "ci", "nightly"), help="Hypothesis settings profile for the machine")
    budget.add_argument("--examples", type=int, default=30, metavar="N",
                        help="machine examples per search pass (default 30; 0 skips the machine)")
    parser.add_argument("--seconds", type=float, metavar="SECONDS", help="stop searching for new families after this long")
    parser.add_argument("--json", type=Path, metavar="REPORT.json", help="write the report as JSON")
    parser.add_argument("--junit", type=Path, metavar="REPORT.xml", help="write the report as JUnit XML")
    parser.add_argument("--failures", type=Path, metavar="KNOWN.txt", help="the known-failure list (vector ids, families)")
    parser.add_argument("--fix", action="store_true", help="rewrite the failure list from what was observed")
    parser.add_argument("--timeout", type=float, default=10.0, metavar="SECONDS",
                        help="seconds to wait for each answer (default 10)")
    parser.add_argument("--replay", type=Path, metavar="TRACE.json", help="replay one trace instead of running everything")
    parser.add_argument("--vectors", type=Path, metavar="DIR", help="vector directory (default: the packaged vectors)")
    parser.add_argument("--traces", type=Path, metavar="DIR", help="where divergence traces are written (default: temp dir)")
    parser.add_argument("testee", nargs=argparse.REMAINDER, metavar="-- TESTEE...", help="the testee command")
    parser.set_defaults(handler=run)


def _options(args: argparse.Namespace, command: list[str], entries: list[failures.Entry]) -> runner.Options:
    if args.examples is not None and args.examples < 0:
        raise ValueError("--examples must be 0 or more")
    if (args.seconds is not None and args.seconds <= 0) or args.timeout <= 0:
        raise ValueError("--seconds and --timeout must be positive")
    return runner.Options(command, examples=None if args.profile else args.examples, seconds=args.seconds,
                          profile=args.profile, timeout=args.timeout, vectors_dir=args.vectors or vectors.DEFAULT_DIR,
                          replay=args.replay, traces_dir=args.traces, known=failures.known(entries))


def run(args: argparse.Namespace) -> int:
    command = list(args.testee)
    if command[:1] == ["--"]:
        command = command[1:]
    if not command:
        print("sessionspec conform: give the testee command after --", file=sys.stderr)
        return runner.UNRUNNABLE
    entries: list[failures.Entry] = []
    try:
        if args.failures is not None and args.failures.exists():
            entries = failures.parse(args.failures.read_text(encoding="utf-8"))
        options = _options(args, command, entries)
        trace = read_trace(args.replay) if args.replay is not None else None
    except (OSError, UnicodeDecodeError, ValueError, TraceError) as error:
        print(f"sessionspec conform: {error}", file=sys.stderr)
        return runner.UNRUNNABLE
    try:
        with Progress("conform") as bar:
            result = runner.run(options, trace=trace, progress=lambda stage, done, total: bar(done, total))
    except runner.Unrunnable as error:
        print(f"sessionspec conform: the testee could not be run: {error}", file=sys.stderr)
        return runner.UNRUNNABLE
    except Exception as error:  # the runner reports, it never dies with a traceback
        print(f"sessionspec conform: the run could not complete: {error!r}", file=sys.stderr)
        return runner.UNRUNNABLE
    return _report(args, command, result, entries)


def _report(args: argparse.Namespace, command: list[str], result: runner.Result, entries: list[failures.Entry]) -> int:
    verdict = failures.judge(entries, result.divergences, searched=not result.partial)
    for found in verdict.unexpected:
        print(runner.explain(found, command), file=sys.stderr)
    for stale in verdict.stale:
        print(f"STALE failure-list entry {stale}", file=sys.stderr)
    if result.stopped:
        print(f"STOPPED: {result.stopped}", file=sys.stderr)
    if result.unchecked:
        print(f"note: the testee's snapshot does not carry {', '.join(result.unchecked)}; those were not compared",
              file=sys.stderr)
    testee = result.testee.get("implementation", "?")
    rate = result.requests / result.seconds if result.seconds else 0.0
    families = len({d.family for d in result.divergences if d.source == "machine"})
    print(f"conform {testee}: vectors {result.passed} passed, {result.failed} failed; machine {result.examples} "
          f"{_plural(result.examples, 'example')}, {families} divergence {_plural(families, 'family', 'families')}; "
          f"{len(verdict.expected)} listed as known; {result.requests:,} requests in {result.seconds:.1f} s ({rate:,.0f}/s)")
    if args.json is not None:
        args.json.write_text(json.dumps(result.report(), indent=1, ensure_ascii=True, default=repr) + "\n", encoding="utf-8")
    if args.junit is not None:
        junit.write(args.junit, result.vector_ids, result.divergences, result.examples, str(testee))
    if args.fix and args.failures is not None:
        if result.partial:
            print("sessionspec conform: --fix refused on a partial run (replay, or vectors or machine skipped)",
                  file=sys.stderr)
            return runner.UNRUNNABLE
        failures.rewrite(args.failures, result.divergences)
        print(f"rewrote {args.failures} ({len(result.divergences)} {_plural(len(result.divergences), 'entry', 'entries')})")
        return runner.OK
    return runner.OK if verdict.ok else runner.DIVERGED


def _plural(count: int, one: str, many: str | None = None) -> str:
    return one if count == 1 else (many or one + "s")
