"""`sessionspec replay TRACE [--impl NAME | -- TESTEE...]`: re-execute a trace and compare it with the reference.

A trace is what `conform`, the machines and `explore` write (sessionspec.wire.trace): the
requests that reproduce a finding. In process (`--impl`, default the implementation the trace
names, else `live`) each request runs on the implementation and on the reference model through
the one executor, with the same clock, and rules and times are compared; with a testee command
after `--`, the requests go to that process and are compared as `conform` compares them. Each request is
printed with the answer it got and, where that differs from the reference's, the reference's
answer and every difference; against a testee, the divergence's family follows. On a terminal
this is for reading; piped, or with --json, it is one JSON object per line (`{"n", "op",
"request", "answer", "same"}`, plus `"reference"` and `"differences"` where they differ, and
`{"divergence": ...}` for a testee's). A request a testee does not declare what it needs for is
not sent, and said so. Exit 0 with no difference, 1 with one, 2 when the trace cannot be read or
the implementation cannot be run.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import Any, Final, TextIO

from sessionspec.cli import COMMANDS
from sessionspec.cli.words import HelpFormatter, plural
from sessionspec.conformance import report, runner
from sessionspec.model import Session
from sessionspec.preview import clipped
from sessionspec.testing import implementations
from sessionspec.wire.compare import describe, differences, op_of
from sessionspec.wire.executor import Executor
from sessionspec.wire.oracle import reference_answer
from sessionspec.wire.protocol import Answer, dumps
from sessionspec.wire.trace import Trace, TraceError, read_trace, written

SHOWN: Final = 300
"""Characters of a request or an answer a terminal line shows (the JSON lines carry them whole)."""

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
    parser.add_argument("--json", action="store_true",
                        help="one JSON object per line (the default when the output is not a terminal)")
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
    printer = Printer(trace, as_json=args.json or not sys.stdout.isatty())
    if command:
        return _against_testee(trace, command, Path(args.trace), args.timeout, printer)
    name = args.impl or trace.implementation or "live"
    try:
        factory = implementations.factory(name)
    except KeyError as error:
        print(f"sessionspec replay: {error.args[0]}", file=sys.stderr)
        return 2
    return _in_process(trace, name, factory, printer, compare_time=not args.ignore_time)


class Printer:
    """Each request, the answer it got and, where it differs from the reference's, how: for a person on a terminal,
    one JSON object per line otherwise. Requests are matched to the trace by position (a testee's exchange reports
    only what it sent: what it skipped is said to be not sent)."""

    def __init__(self, trace: Trace, *, as_json: bool, out: TextIO | None = None) -> None:
        self.trace, self.as_json, self.out = trace, as_json, out or sys.stdout
        self.next = 0

    def _emit(self, value: dict[str, Any]) -> None:
        print(dumps(value).decode("utf-8"), file=self.out, flush=True)

    def _not_sent(self, upto: int) -> None:
        while self.next < upto:
            request = self.trace.requests[self.next]
            if self.as_json:
                self._emit({"n": self.next, "op": op_of(request), "request": written(request), "sent": False})
            else:
                print(f"[{self.next}] {op_of(request) or 'line'}: not sent (the testee does not declare what it "
                      "needs)", file=self.out)
            self.next += 1

    def answer(self, request: Any, expected: Answer, actual: Answer, why: list[str]) -> None:
        """One request answered: `why` are the differences from the reference's answer (none: the same)."""
        number = next((n for n in range(self.next, len(self.trace.requests)) if self.trace.requests[n] is request),
                      self.next)
        self._not_sent(number)
        self.next = number + 1
        op = op_of(request)
        if self.as_json:
            line: dict[str, Any] = {"n": number, "op": op, "request": written(request), "answer": actual,
                                    "same": not why}
            if why:
                line.update(reference=expected, differences=why)
            self._emit(line)
            return
        print(f"[{number}] {op or 'line'}: {describe(actual)}" + ("" if why else " (as the reference)"), file=self.out)
        print(f"    sent:       {_short(request)}", file=self.out)
        print(f"    answer:     {_short(actual)}", file=self.out)
        if why:
            print(f"    reference:  {_short(expected)}", file=self.out)
            for difference in why:
                print(f"    DIFFERENCE: {difference}", file=self.out)

    def divergence(self, text: str, found: Any) -> None:
        self._not_sent(self.next)
        if self.as_json:
            self._emit({"divergence": found.to_json()})
        else:
            print(text, file=self.out)


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else dumps(written(value)).decode("utf-8")
    return clipped(text, SHOWN)


def _in_process(trace: Trace, name: str, factory: Any, printer: Printer, *, compare_time: bool) -> int:
    reference, testee = Executor(Session.create, "model"), Executor(factory, name)
    different = 0
    for request in trace.requests:
        if isinstance(request, (str, bytes)):
            line = request if isinstance(request, bytes) else request.encode("utf-8", "surrogatepass")
            expected, actual = reference_answer(reference, line), reference_answer(testee, line)
        else:
            expected, actual = reference.run(request), testee.run(request)
        why = differences(op_of(request), expected, actual, rules=True, time=compare_time)
        different += len(why)
        printer.answer(request, expected, actual, why)
    summary = f"{plural(different, 'difference')} from the model" if different else "no difference from the model"
    print(f"{plural(len(trace.requests), 'request')} replayed on {name}: {summary}", file=sys.stderr)
    return 1 if different else 0


def _against_testee(trace: Trace, command: list[str], path: Path, timeout: float, printer: Printer) -> int:
    def watch(request: Any, expected: Answer, actual: Answer) -> None:
        printer.answer(request, expected, actual, differences(op_of(request), expected, actual))

    options = runner.Options(command, timeout=timeout, replay=path, watch=watch)
    try:
        result = runner.run(options, trace=trace)
    except runner.Unrunnable as error:
        print(f"sessionspec replay: the testee could not be run: {error}", file=sys.stderr)
        return 2
    for found in result.divergences:
        printer.divergence(report.explain(found, command), found)
    summary = plural(len(result.divergences), "divergence") if result.divergences else "no divergence"
    print(f"{plural(len(trace.requests), 'request')} replayed on {shlex.join(command)}: {summary}", file=sys.stderr)
    return 1 if result.divergences else 0

