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

from sessionspec.cli import COMMANDS, jobs
from sessionspec.cli.progress import Progress
from sessionspec.cli.words import HelpFormatter, plural
from sessionspec.conformance import (
    baseline,
    failures,
    header,
    junit,
    markdown,
    regressions,
    report,
    runner,
    selection,
    smoke,
    vectors,
)
from sessionspec.conformance.outcome import FAILED, Outcome, outcome
from sessionspec.conformance.stopping import deferred_signals, stop_on_signals
from sessionspec.conformance.storagevectors import vectorfiles as storage_vectors
from sessionspec.wire.trace import TraceError, read_trace

SIGNALLED = 128
"""A run a signal stopped exits 128 + the signal's number (130 for Ctrl-C, 143 for SIGTERM), as a shell reports it,
after its report is written."""

EPILOG = """examples:
  sessionspec conform -- sessionspec serve --impl live
  sessionspec conform --examples 200 --json report.json -- node my-testee.js
  sessionspec conform --failures known.txt --junit conform.xml -- ./testee
  sessionspec conform --level required --failures known.txt -- node adapters/dsh-session/testee.mjs
  sessionspec conform --profile nightly --seconds 1800 -- ./testee
  sessionspec conform --smoke -- node my-testee.js
  sessionspec conform --baseline main.json --json pr.json --markdown summary.md -- ./testee
  sessionspec conform --list | grep SESSION-SEED
  sessionspec conform --run 'SESSION-LOSSLESS-TEXT.*' --skip 'machine:*' -- ./testee"""


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
    parser.add_argument("--baseline", type=Path, metavar="OLD.json",
                        help="a previous --json report: only what it does not have fails the run; what it had and this "
                             "run has not is listed as fixed")
    parser.add_argument("--markdown", type=Path, metavar="FILE",
                        help="write the summary as markdown (also appended to $GITHUB_STEP_SUMMARY when that is set)")
    parser.add_argument("--verify", type=int, default=runner.Options.verify, metavar="N",
                        help="replay each family's trace N times against fresh testees; one that does not show every "
                             "time is reported as flaky, not as a divergence (default 0: off)")
    parser.add_argument("--seed", type=int, default=runner.Options.seed, metavar="S",
                        help="the machine's seed: round N is generated from S + N (default 0; printed in every report)")
    parser.add_argument("--shard", type=_shard, metavar="I/N",
                        help="run part I of N (the vectors by index, the machine's rounds by number); "
                             "sessionspec merge joins the parts' --json reports into the whole's")
    parser.add_argument("--jobs", type=int, default=1, metavar="N",
                        help="run the N shards of the run at once, each with its own testee, and merge their reports "
                             "(the same families as --jobs 1 with the same --seed; default 1)")
    parser.add_argument("--smoke", action="store_true",
                        help="check only that the adapter speaks the protocol (hello, each declared op, one answer a "
                             "line, unknown ops refused), in seconds; findings are the adapter's")
    parser.add_argument("--list", action="store_true",
                        help="list the selectable ids (vectors, storage cases, rules, the machine's op families) with "
                             "their levels; needs no testee")
    parser.add_argument("--run", action="append", default=[], metavar="PATTERN",
                        help="run only what matches this glob (a vector id, a storage case, a rule id, machine:OP); "
                             "repeatable")
    parser.add_argument("--skip", action="append", default=[], metavar="PATTERN",
                        help="leave out what matches this glob (as --run); repeatable; a pattern matching nothing is exit 2")
    parser.add_argument("testee", nargs=argparse.REMAINDER, metavar="-- TESTEE...", help="the testee command")
    parser.set_defaults(handler=run)


def _options(args: argparse.Namespace, command: list[str], entries: list[failures.Entry]) -> runner.Options:
    if args.examples is not None and args.examples < 0:
        raise ValueError("--examples must be 0 or more")
    if args.verify < 0:
        raise ValueError("--verify must be 0 or more")
    if (args.seconds is not None and args.seconds <= 0) or args.timeout <= 0 or args.deadline <= 0:
        raise ValueError("--seconds, --deadline and --timeout must be positive")
    chosen = selection.Selection(tuple(args.run), tuple(args.skip))
    if chosen.active:
        directory = args.vectors or vectors.DEFAULT_DIR
        chosen.check(vectors.load(directory), storage_vectors.load(directory / "storage"))
    return runner.Options(command, examples=None if args.profile else args.examples, seconds=args.seconds,
                          profile=args.profile, timeout=args.timeout, deadline=args.deadline,
                          vectors_dir=args.vectors or vectors.DEFAULT_DIR, replay=args.replay, traces_dir=args.traces,
                          selection=chosen, verify=args.verify, seed=args.seed, shard=args.shard)


def _write_markdown(path: Path | None, text: str) -> None:
    """`--markdown FILE`, and the job summary of a GitHub Actions step when `$GITHUB_STEP_SUMMARY` names one."""
    if path is not None:
        path.write_text(text, encoding="utf-8")
    step = os.environ.get("GITHUB_STEP_SUMMARY")
    if step:
        with open(step, "a", encoding="utf-8") as summary:
            summary.write(text)


def _smoke(command: list[str], timeout: float) -> int:
    """`--smoke` (conformance.smoke): the protocol alone; 0 it is spoken, 1 findings (the adapter's), 2 no hello."""
    try:
        found = smoke.smoke(command, timeout=timeout)
    except smoke.NoHello as error:
        print(f"sessionspec conform --smoke: the testee could not be run: {error}", file=sys.stderr)
        return runner.UNRUNNABLE
    for line in smoke.lines(found, command):
        print(line)
    return runner.DIVERGED if found.findings else runner.OK


def _shard(text: str) -> tuple[int, int]:
    """`I/N` with 1 <= I <= N."""
    part, _, whole = text.partition("/")
    try:
        shard = int(part), int(whole)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--shard {text!r}: write I/N, e.g. 1/4") from None
    if not 1 <= shard[0] <= shard[1]:
        raise argparse.ArgumentTypeError(f"--shard {text!r}: I must be from 1 to N")
    return shard


def _list(args: argparse.Namespace) -> int:
    """`--list`: every selectable id with its level, aligned on a terminal, one tab-separated line each when piped."""
    directory = args.vectors or vectors.DEFAULT_DIR
    try:
        found, stored = vectors.load(directory), storage_vectors.load(directory / "storage")
    except (OSError, ValueError) as error:
        print(f"sessionspec conform: {error}", file=sys.stderr)
        return runner.UNRUNNABLE
    entries = selection.catalog(found, stored)
    if args.run or args.skip:
        chosen = selection.Selection(tuple(args.run), tuple(args.skip))
        try:
            chosen.check(found, stored)
        except selection.SelectionError as error:
            print(f"sessionspec conform: {error}", file=sys.stderr)
            return runner.UNRUNNABLE
        entries = [e for e in entries if chosen.wants([e.id, *e.rules])]
    for line in selection.listing(entries, tty=sys.stdout.isatty()):
        print(line)
    return runner.OK


def run(args: argparse.Namespace) -> int:
    if args.list:
        return _list(args)
    command = list(args.testee)
    if command[:1] == ["--"]:
        command = command[1:]
    if not command:
        print("sessionspec conform: give the testee command after --", file=sys.stderr)
        return runner.UNRUNNABLE
    if args.smoke:
        return _smoke(command, args.timeout)
    why = jobs.refused(args) if args.jobs != 1 else None
    if why is not None:
        print(f"sessionspec conform: {why}", file=sys.stderr)
        return runner.UNRUNNABLE
    entries: list[failures.Entry] = []
    try:
        if args.failures is not None and not args.failures.exists() and not args.fix:
            raise ValueError(f"no failure list at {args.failures} (--fix writes one)")
        if args.failures is not None and args.failures.exists():
            entries = failures.parse(args.failures.read_text(encoding="utf-8"))
        options = _options(args, command, entries)
        args.baseline_report = baseline.read(args.baseline) if args.baseline is not None else None
        trace = read_trace(args.replay) if args.replay is not None else None
    except (OSError, UnicodeDecodeError, ValueError, TraceError, baseline.BaselineError) as error:
        print(f"sessionspec conform: {error}", file=sys.stderr)
        return runner.UNRUNNABLE
    if args.jobs != 1:
        return jobs.run_jobs(args, command)
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
    narrowed = result.options is not None and (result.options.selection.active or result.options.shard is not None)
    if narrowed:
        ran = {v.id for v in result.vectors if v.status != "skipped"}
        verdict = selection.narrowed_verdict(entries, result.divergences, ran, searched=result.searched)
    judged = outcome(result, verdict, enforce=args.level)
    comparison = None
    if getattr(args, "baseline_report", None) is not None:
        comparison = regressions.apply(judged, args.baseline_report, report.to_json(result, judged, command), args.baseline)
    lines = list(report.text(result, judged, command, verbose=args.verbose))
    head = report.summary_lines(result, judged) + ([f"  {baseline.summary(comparison)}"] if comparison else [])
    for line in lines[: len(lines) - len(head)]:
        print(line, file=sys.stderr)
    for line in head:
        print(line)
    written = _write_reports(args, command, result, judged, comparison)
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


def _write_reports(args: argparse.Namespace, command: list[str], result: runner.Result, judged: Outcome,
                   comparison: baseline.Comparison | None = None) -> bool:
    """Write --json, --junit and --markdown (and $GITHUB_STEP_SUMMARY); False (with one line said) when a report
    cannot be written."""
    try:
        data = report.to_json(result, judged, command)
        if comparison is not None:
            data["baseline"] = comparison.to_json()
        if args.json is not None:
            text = json.dumps(data, indent=1, ensure_ascii=True, default=str) + "\n"
            with replaced(args.json) as temporary:
                temporary.write_text(text, encoding="utf-8")
        _write_markdown(args.markdown, markdown.summary(data, comparison))
        if args.junit is not None:
            with replaced(args.junit) as temporary:
                junit.write(temporary, judged, str(result.testee.get("implementation", "?")),
                            header.properties(header.header(result, command), header.footer(result)))
    except (OSError, ValueError, RecursionError) as error:
        print(f"sessionspec conform: cannot write the report: {error}", file=sys.stderr)
        return False
    return True
