"""`sessionspec replay TRACE [--impl NAME | -- TESTEE...]`: re-execute a trace and compare it with the reference.

A trace is what `conform`, the machines and `explore` write (sessionspec.wire.trace): the
requests that reproduce a finding. In process (`--impl`, default the implementation the trace
names, else `live`) each request runs on the implementation and on the reference model through
the one executor, with the same clock, and rules and times are compared; with a testee command
after `--`, the requests go to that process and are compared as `conform` compares them. Each
answer is printed as a JSON line, followed by any difference. Exit 0 with no difference, 1 with
one, 2 when the trace cannot be read or the implementation cannot be run.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import Any

from sessionspec.cli import COMMANDS
from sessionspec.cli.words import HelpFormatter, plural
from sessionspec.conformance import report, runner
from sessionspec.model import Session
from sessionspec.testing import implementations
from sessionspec.wire.compare import differences, op_of
from sessionspec.wire.executor import Executor
from sessionspec.wire.oracle import reference_answer
from sessionspec.wire.protocol import dumps
from sessionspec.wire.trace import Trace, TraceError, read_trace

EPILOG = """examples:
  sessionspec replay /tmp/sessionspec-traces/machine-live-1a2b3c.json
  sessionspec replay TRACE.json --impl planted:off-by-one-splice
  sessionspec replay TRACE.json -- ./my-testee --scp"""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "replay", help=COMMANDS["replay"],
        description=__doc__, epilog=EPILOG, formatter_class=HelpFormatter)
    parser.add_argument("trace", metavar="TRACE.json", help="a trace file written by conform, the machine or explore")
    parser.add_argument("--impl", metavar="NAME", help="in-process implementation: model, live or planted:NAME "
                                                       "(default: the one the trace names, else live)")
    parser.add_argument("--ignore-time", action="store_true", help="in process, do not compare event times")
    parser.add_argument("--timeout", type=float, default=10.0, metavar="SECONDS",
                        help="with a testee: seconds to wait for each answer (default 10)")
    # The default makes the testee optional in argparse's eyes too (a `*` positional without one is "required").
    parser.add_argument("testee", nargs="*", default=[], metavar="-- TESTEE",
                        help="replay against this testee command (SCP v0 on stdin/stdout) instead of in process")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    try:
        trace = read_trace(args.trace)
    except TraceError as error:
        print(f"sessionspec replay: {error}", file=sys.stderr)
        return 2
    command = list(args.testee)
    if command[:1] == ["--"]:
        command = command[1:]
    if command:
        return _against_testee(trace, command, Path(args.trace), args.timeout)
    name = args.impl or trace.implementation or "live"
    try:
        factory = implementations.factory(name)
    except KeyError as error:
        print(f"sessionspec replay: {error.args[0]}", file=sys.stderr)
        return 2
    return _in_process(trace, name, factory, compare_time=not args.ignore_time)


def _in_process(trace: Trace, name: str, factory: Any, *, compare_time: bool) -> int:
    reference, testee = Executor(Session.create, "model"), Executor(factory, name)
    different = 0
    for number, request in enumerate(trace.requests):
        if isinstance(request, str):
            line = request.encode("utf-8", "surrogatepass")
            expected, actual = reference_answer(reference, line), reference_answer(testee, line)
        else:
            expected, actual = reference.run(request), testee.run(request)
        op = op_of(request)
        print(dumps({"n": number, "op": op, **actual}).decode("utf-8"))
        for line_of_difference in differences(op, expected, actual, rules=True, time=compare_time):
            different += 1
            print(f"  DIFFERENCE from the model at request {number}: {line_of_difference}")
    summary = f"{plural(different, 'difference')} from the model" if different else "no difference from the model"
    print(f"{plural(len(trace.requests), 'request')} replayed on {name}: {summary}", file=sys.stderr)
    return 1 if different else 0


def _against_testee(trace: Trace, command: list[str], path: Path, timeout: float) -> int:
    options = runner.Options(command, timeout=timeout, replay=path)
    try:
        result = runner.run(options, trace=trace)
    except runner.Unrunnable as error:
        print(f"sessionspec replay: the testee could not be run: {error}", file=sys.stderr)
        return 2
    for found in result.divergences:
        print(report.explain(found, command))
    summary = plural(len(result.divergences), "divergence") if result.divergences else "no divergence"
    print(f"{plural(len(trace.requests), 'request')} replayed on {shlex.join(command)}: {summary}", file=sys.stderr)
    return 1 if result.divergences else 0

