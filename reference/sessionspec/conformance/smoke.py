"""`conform --smoke`: whether an adapter speaks SCP v0 at all, in seconds, before any verdict on what it adapts.

Bowtie's `smoke` in spirit: a first adapter is mostly plumbing (a print without a flush, a
pretty-printed answer, an error with no kind, an op it declares and forgot to wire), and a full run
against such an adapter buries the one plumbing fault under hundreds of divergences of the
implementation. So the smoke run sends a few requests and checks the protocol alone:

- `hello` answers its fields (SESSION-CONFORMANCE-PROTOCOL.15);
- every op `hello` declares (or, when it declares none, the core ops) is answered, not refused
  as `unsupported` (.9), with an answer valid against `spec/schema/answer.schema.json` that
  carries its op's fields (.16); an op `hello`'s list leaves out is refused as `unsupported` (.2),
  so a starter adapter of `hello`, `create` and `append` passes;
- a pipeline of requests sent at once gets one answer a line, each to its request, in order (.16);
- a line that is not a request is refused as `json` (.1) and an unknown op as `unsupported` (.2).

What the implementation accepts or rejects is not judged here (that is `conform`'s job): every
finding is the adapter's, and says so. Exit codes as `conform`: 0 the adapter speaks the protocol,
1 findings, 2 the testee cannot be started or does not answer `hello`.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Final

from sessionspec.conformance.schemacheck import problems
from sessionspec.wire.client import Connection, TesteeFailure, parse_answer
from sessionspec.wire.compare import describe
from sessionspec.wire.protocol import OPS, OPTIONAL_OPS, Answer

HELLO, ANSWERS = "SESSION-CONFORMANCE-PROTOCOL.15", "SESSION-CONFORMANCE-PROTOCOL.16"
DECLARED = "SESSION-CONFORMANCE-PROTOCOL.9"
NOT_A_REQUEST, UNSUPPORTED = "SESSION-CONFORMANCE-PROTOCOL.1", "SESSION-CONFORMANCE-PROTOCOL.2"
PROFILE: Final = "scp-0"
FIELDS: Final = {"hello": ("implementation", "version", "profile"), "create": ("firstLiveSeq", "seq"),
                 "append": ("event",), "snapshot": ("events", "surface", "messages", "firstLiveSeq"),
                 "fold": ("nodes", "replacements"), "repair": ("closers",)}
"""The fields an accepting answer of each op carries (spec/10, "Requests and answers")."""
UNKNOWN_OP: Final = {"op": "x-sessionspec-smoke-no-such-op"}
CREATE: Final = {"op": "create", "id": "smoke", "seed": None, "header": None}
APPEND: Final = {"op": "append", "type": "x-sessionspec/smoke", "data": {}}


class NoHello(Exception):
    """The testee cannot be started, or does not answer hello with ok: the smoke run cannot begin (exit 2)."""


@dataclass(frozen=True)
class Finding:
    rule: str
    message: str

    def line(self) -> str:
        return f"{self.rule}: {self.message} (the adapter's fault, not the implementation's)"


@dataclass
class Smoke:
    hello: Answer = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    checks: int = 0
    seconds: float = 0.0

    def expect(self, holds: bool, rule: str, message: str) -> bool:
        self.checks += 1
        if not holds:
            self.findings.append(Finding(rule, message))
        return holds


def smoke(command: list[str], *, timeout: float = 10.0) -> Smoke:
    """The smoke run against `command`; raises NoHello when it cannot begin."""
    started = time.perf_counter()
    connection = Connection(command, timeout=timeout, deadline=time.monotonic() + 30 * timeout)
    out = Smoke()
    try:
        try:
            connection.start()
            out.hello = connection.request({"op": "hello"})
        except TesteeFailure as failure:
            if failure.kind != "protocol":  # it did not start, died or stayed silent: nothing to judge
                raise NoHello(f"{failure.kind}: {failure.message}") from None
            out.expect(False, ANSWERS, f"hello's answer line is not an answer: {failure.message}")
            return out
        if out.hello.get("ok") is not True:
            raise NoHello(f"the testee refused hello: {describe(out.hello)}")
        _hello(out)
        _ops(connection, out)
        _pipeline(connection, out)
    except TesteeFailure as failure:
        out.findings.append(Finding(ANSWERS, f"the testee failed mid-run: {failure.kind}: {failure.message}"))
    finally:
        connection.close()
        out.seconds = time.perf_counter() - started
    return out


def declared(hello: Answer) -> list[str]:
    """The ops to try: those hello declares (the protocol's own ones; x- ops are in-process extensions), else the
    core ones and the optional ones, which may then be refused as unsupported."""
    ops = hello.get("ops")
    if isinstance(ops, list) and all(isinstance(op, str) for op in ops):
        return [op for op in OPS if op in ops and op != "hello"]
    return [op for op in OPS if op != "hello"]


def _hello(out: Smoke) -> None:
    hello = out.hello
    for name in ("implementation", "version"):
        value = hello.get(name)
        out.expect(isinstance(value, str) and bool(value), HELLO, f"hello's {name} is not a non-empty string: {value!r}")
    out.expect(hello.get("profile") == PROFILE, HELLO, f"hello's profile is {hello.get('profile')!r}, not {PROFILE!r}")
    for name in ("ops", "extensions", "storage"):
        if name in hello:
            value = hello[name]
            out.expect(isinstance(value, list) and all(isinstance(v, str) for v in value), HELLO,
                       f"hello's {name} is not a list of strings: {str(value)[:80]}")
    _valid(out, "hello", hello)


def _valid(out: Smoke, op: str, answer: Answer) -> None:
    """The answer is valid against answer.schema.json and, when it accepts, carries its op's fields."""
    found = problems(answer, "answer.schema.json")
    out.expect(not found, ANSWERS, f"the answer to {op} is not valid against answer.schema.json: {'; '.join(found)}")
    if answer.get("ok") is True:
        missing = [name for name in FIELDS.get(op, ()) if name not in answer]
        out.expect(not missing, ANSWERS, f"the answer accepting {op} lacks {', '.join(missing)}")


def _requests(events: list[Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    yield "create", CREATE
    yield "append", APPEND
    yield "snapshot", {"op": "snapshot"}
    yield "fold", {"op": "fold", "events": events}
    yield "repair", {"op": "repair", "events": events}


def _ops(connection: Connection, out: Smoke) -> None:
    """Each op tried with a valid request: a declared op answered (not refused as unsupported), in the schema's shape."""
    wanted = declared(out.hello)
    listed = isinstance(out.hello.get("ops"), list)
    events: list[Any] = []
    for op, request in _requests(events):
        answer = connection.request(request)
        error = answer.get("error")
        refused = answer.get("ok") is False and isinstance(error, dict) and error.get("kind") == "unsupported"
        if refused and (op in OPTIONAL_OPS and not listed):
            continue  # an optional op the testee does not declare: refusing it is the protocol
        if op not in wanted:  # declared it does not implement (a starter adapter): it must say so
            out.expect(refused, UNSUPPORTED, f"{op} is not in hello's ops, but was answered {_said(answer)}, not "
                                             "refused as unsupported")
            continue
        out.expect(not refused, DECLARED, f"{op} is declared (hello's ops{'' if listed else ': none given, so the core'}) "
                                       f"but refused as unsupported")
        _valid(out, op, answer)
        if op == "snapshot" and isinstance(answer.get("events"), list):
            events.extend(answer["events"])


def _pipeline(connection: Connection, out: Smoke) -> None:
    """Five requests sent at once: five answer lines, each to its own request, in order."""
    lines: list[bytes] = [b'{"op":"hello"}', b'{"op":"snapshot"}', b'["not", "a", "request"]',
                          b'{"op":"x-sessionspec-smoke-no-such-op"}', b'{"op":"hello"}']
    for line in lines:
        connection.send(line)
    answers: list[Answer | None] = []
    for _ in lines:
        try:
            answers.append(parse_answer(connection.receive_raw()))
        except TesteeFailure as failure:
            out.expect(False, ANSWERS, f"a pipeline of {len(lines)} requests got {len(answers)} answer lines, then "
                                       f"{failure.kind}: {failure.message}")
            return
    hello_first, snapshot, not_request, unknown, hello_last = answers
    out.expect(_kind(not_request) == "json", NOT_A_REQUEST,
               f"a line that is not a request was answered {_said(not_request)}, not refused as json")
    out.expect(_kind(unknown) == "unsupported", UNSUPPORTED,
               f"an unknown op was answered {_said(unknown)}, not refused as unsupported")
    in_order = all(a is not None and a.get("implementation") == out.hello.get("implementation")
                   for a in (hello_first, hello_last)) and snapshot is not None and "implementation" not in snapshot
    out.expect(in_order, ANSWERS, "the answers to a pipeline of requests sent at once are not one a line, each to its "
                                  "own request in order (the hellos' answers are not first and last)")
    for answer in answers:
        if answer is not None:
            _valid(out, "a pipelined request", answer)


def _kind(answer: Answer | None) -> object:
    error = None if answer is None else answer.get("error")
    return error.get("kind") if isinstance(error, dict) and answer is not None and answer.get("ok") is False else None


def _said(answer: Answer | None) -> str:
    return "nothing" if answer is None else describe(answer)


def lines(result: Smoke, command: list[str]) -> list[str]:
    """The smoke report: each finding on a line of its own, then one summary line."""
    name = str(result.hello.get("implementation", "?"))
    out = [finding.line() for finding in result.findings]
    verdict = "speaks SCP v0" if not result.findings else f"{len(result.findings)} finding(s), the adapter's"
    out.append(f"smoke {name}: {verdict} ({result.checks} checks in {result.seconds:.1f} s)")
    return out
