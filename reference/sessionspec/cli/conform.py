"""`sessionspec conform [options] -- CMD ARGS...`: the conformance runner (spec/10-conformance.md)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("conform", help="run the vectors and the stateful machine against a testee (SCP v0)")
    budget = parser.add_mutually_exclusive_group()
    budget.add_argument("--profile", help="Hypothesis settings profile for the machine (dev, ci, nightly)")
    budget.add_argument("--examples", type=int, default=30, help="machine examples (default 30; 0 skips the machine)")
    parser.add_argument("--json", type=Path, help="write the report as JSON")
    parser.add_argument("--junit", type=Path, help="write the report as JUnit XML")
    parser.add_argument("--failures", type=Path, help="the known-failure list")
    parser.add_argument("--fix", action="store_true", help="rewrite the failure list from what was observed")
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for each answer (default 10)")
    parser.add_argument("--replay", type=Path, help="replay one trace instead of running everything")
    parser.add_argument("--vectors", type=Path, help="vector directory (default: the committed spec/vectors)")
    parser.add_argument("--traces", type=Path, help="where divergence traces are written (default: a temporary directory)")
    parser.add_argument("testee", nargs=argparse.REMAINDER, help="-- CMD ARGS...: the testee command")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from sessionspec.conformance import failures, junit, runner, vectors

    command = list(args.testee)
    if command[:1] == ["--"]:
        command = command[1:]
    if not command:
        print("sessionspec conform: give the testee command after --", file=sys.stderr)
        return runner.UNRUNNABLE
    entries = []
    if args.failures is not None and args.failures.exists():
        entries = failures.parse(args.failures.read_text(encoding="utf-8"))
    options = runner.Options(command, examples=None if args.profile else args.examples, profile=args.profile,
                             timeout=args.timeout, vectors_dir=args.vectors or vectors.DEFAULT_DIR, replay=args.replay,
                             traces_dir=args.traces)
    try:
        result = runner.run(options)
    except runner.Unrunnable as error:
        print(f"sessionspec conform: the testee could not be run: {error}", file=sys.stderr)
        return runner.UNRUNNABLE
    except Exception as error:  # the runner reports, it never dies with a traceback
        print(f"sessionspec conform: the run could not complete: {error!r}", file=sys.stderr)
        return runner.UNRUNNABLE
    verdict = failures.judge(entries, result.divergences)
    for found in verdict.unexpected:
        print(runner.explain(found, command), file=sys.stderr)
    for stale in verdict.stale:
        print(f"STALE failure-list entry {stale}", file=sys.stderr)
    testee = result.testee.get("implementation", "?")
    rate = result.requests / result.seconds if result.seconds else 0.0
    print(f"conform {testee}: vectors {result.passed} passed, {result.failed} failed; machine {result.examples} examples, "
          f"{sum(d.source == 'machine' for d in result.divergences)} divergences; "
          f"{len(verdict.expected)} listed as known; {result.requests} requests in {result.seconds:.1f} s ({rate:,.0f}/s)")
    if args.json is not None:
        args.json.write_text(json.dumps(result.report(), indent=1, ensure_ascii=True) + "\n", encoding="utf-8")
    if args.junit is not None:
        junit.write(args.junit, result.vector_ids, result.divergences, result.examples, str(testee))
    if args.fix and args.failures is not None:
        if result.partial:
            print("sessionspec conform: --fix refused on a partial run (replay, or vectors or machine skipped)",
                  file=sys.stderr)
            return runner.UNRUNNABLE
        failures.rewrite(args.failures, result.divergences)
        print(f"rewrote {args.failures} ({len(result.divergences)} entries)")
        return runner.OK
    return runner.OK if verdict.ok else runner.DIVERGED
