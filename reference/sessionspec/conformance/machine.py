"""The conformance machine: the reference model as oracle, an external testee as the system under test.

`sessionspec.testing.machine` drives in-process implementations and checks things only a Python
object can show (validators, observers, mutation of returned values). Over the protocol none of
that exists, so this machine speaks SCP v0 directly: each rule draws a request from the shared
strategies (`sessionspec.testing.strategies`), sends the same line to the oracle (the protocol
over `model`) and to the testee, and compares the answers; after every step both are snapshotted
and compared. A divergence fails the example, Hypothesis shrinks it, and the last (minimal)
divergence is kept on the class for the runner to report.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from sessionspec.conformance.client import Connection, TesteeFailure
from sessionspec.conformance.compare import differences, op_of, skipped
from sessionspec.conformance.protocol import Answer, Testee, dumps
from sessionspec.testing import implementations as impls
from sessionspec.testing import strategies as ss


@dataclass
class Divergence:
    """One disagreement: what was sent (from the last create on), and both answers.

    `rule` and `kind` come from the reference's rejection (or, when the reference accepted, from
    the testee's); `answered` is what the testee did (its kind, or `accepted`), which failure
    lists record so that a case that starts failing differently is noticed.
    """

    source: str
    id: str
    rule: str | None
    kind: str | None
    expected: Answer
    actual: Answer
    trace: list[Any]
    why: list[str] = field(default_factory=list)
    answered: str | None = None
    replay: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "id": self.id, "rule": self.rule, "kind": self.kind, "expected": self.expected,
                "actual": self.actual, "trace": self.trace}


def _error(answer: Answer) -> dict[str, Any] | None:
    error = answer.get("error")
    return error if not answer.get("ok") and isinstance(error, dict) else None


def divergence(source: str, case_id: str, expected: Answer, actual: Answer, trace: list[Any],
               why: list[str]) -> Divergence:
    """A Divergence filed under the reference's rule and kind, else the testee's."""
    reference, testee = _error(expected), _error(actual)
    blame = reference or testee or {}
    rule = blame.get("rule")
    kind = blame.get("kind")
    answered = "accepted" if testee is None else str(testee.get("kind"))
    return Divergence(source, case_id, rule if isinstance(rule, str) else None, kind if isinstance(kind, str) else None,
                      expected, actual, list(trace), why, answered)


def encodable(request: dict[str, Any]) -> bytes | None:
    """The request as a line, or None when JSON cannot carry it unchanged (tuples, NaN, int keys...)."""
    try:
        line = dumps(request)
        same = json.loads(line) == request and json.dumps(request, allow_nan=False) is not None
    except (TypeError, ValueError, OverflowError):
        return None
    return line if same else None


class Exchange:
    """Sends one line to the oracle and to the testee; shared by the machine and `--replay`."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self.oracle = Testee("model", impls.factory("model"))
        self.trace: list[Any] = []
        self.divergence: Divergence | None = None

    def send(self, request: Any, line: bytes | None = None) -> tuple[Answer, Answer]:
        line = dumps(request) if line is None else line
        op = op_of(request)
        if op == "create":
            self.trace = []
        self.trace.append(request)
        expected = json.loads(self.oracle.answer_line(line))
        try:
            actual = self.connection.request(line)
        except TesteeFailure as failure:
            actual = failure.answer()
            self.connection.restart()
        why = [] if skipped(op, actual) else differences(op, expected, actual)
        if why:
            self.divergence = divergence("machine", f"machine:{op}", expected, actual, self.trace, why)
        return expected, actual


class MachineBase(RuleBasedStateMachine):
    """What the runner reads from a machine class after a run."""

    last: Divergence | None = None
    examples = 0


def make_conformance_machine(connection: Connection, *, hooks: bool = False) -> type[MachineBase]:
    """A machine class bound to one running testee; `.last` holds the last divergence found.

    `hooks`: the testee offers the x-hooks extension (its hello lists it), so vetoes and
    reentrant appends are exercised too.
    """

    class ConformanceMachine(MachineBase):
        last: Divergence | None = None
        examples = 0

        def __init__(self) -> None:
            super().__init__()
            self.exchange = Exchange(connection)
            self.sessions = 0
            self.events: list[dict[str, Any]] = []
            self.nodes: list[int] = []
            type(self).examples += 1

        def send(self, request: dict[str, Any]) -> Answer:
            line = encodable(request)
            if line is None:
                return {"ok": False, "error": {"kind": "json", "message": "not sendable"}}
            expected, _ = self.exchange.send(request, line)
            divergence = self.exchange.divergence
            if divergence is not None:
                type(self).last = divergence
                raise AssertionError("; ".join(divergence.why))
            return expected

        def view(self) -> ss.View:
            return ss.View(tuple(self.events), tuple(self.nodes))

        def create(self, seed: list[Any] | None, header: Any = None) -> None:
            self.sessions += 1
            session_id = f"s{self.sessions}"
            if header is not None:
                header = {**header, "id": session_id}
            self.send({"op": "create", "id": session_id, "seed": seed, "header": header})
            self.look()

        def look(self) -> None:
            expected = self.send({"op": "snapshot"})
            if expected.get("ok"):
                self.events, self.nodes = expected["events"], expected["surface"]["nodes"]

        def append(self, request: dict[str, Any]) -> None:
            self.send({"op": "append", **request})

        @initialize(header=st.sampled_from([None, {"version": 0, "createdAt": 1, "cwd": "/w"}]))
        def start(self, header: Any) -> None:
            self.create(None, header)

        @rule(data=st.data())
        def append_valid(self, data: st.DataObject) -> None:
            self.append(data.draw(ss.append_requests(self.view()), label="request"))

        @precondition(lambda self: len(self.nodes) > 0)
        @rule(data=st.data())
        def replace(self, data: st.DataObject) -> None:
            self.append(data.draw(ss.replacements(self.view()), label="replacement"))

        @rule(data=st.data())
        def append_invalid(self, data: st.DataObject) -> None:
            self.append(data.draw(ss.invalid_requests(self.view()), label="invalid").request)

        @rule()
        def reseed(self) -> None:
            self.create(list(self.events))

        @rule(data=st.data())
        def seed_from_prefix(self, data: st.DataObject) -> None:
            cut = data.draw(st.integers(0, len(self.events)), label="cut")
            self.create(list(self.events[:cut]))

        @rule()
        def fold_log(self) -> None:
            self.send({"op": "fold", "events": list(self.events)})

        @rule()
        def repair_log(self) -> None:
            self.send({"op": "repair", "events": list(self.events)})

        @precondition(lambda self: hooks)
        @rule(data=st.data(), mode=st.sampled_from(["raise", "reentrant"]))
        def vetoed_append(self, data: st.DataObject, mode: str) -> None:
            request = data.draw(ss.append_requests(self.view()), label="request")
            self.append({**request, "x-validator": mode})

        @precondition(lambda self: hooks and len(self.nodes) > 0)
        @rule(data=st.data())
        def vetoed_replace(self, data: st.DataObject) -> None:
            """A vetoed replacement must leave nothing behind, not even its plan for the next event at that seq."""
            request = data.draw(ss.replacements(self.view()), label="replacement")
            self.append({**request, "x-validator": "raise"})

        @precondition(lambda self: hooks)
        @rule(data=st.data(), mode=st.sampled_from(["raise", "reentrant"]))
        def append_with_misbehaving_observer(self, data: st.DataObject, mode: str) -> None:
            request = data.draw(ss.append_requests(self.view()), label="request")
            self.append({**request, "x-observer": mode})

        @invariant()
        def snapshots_agree(self) -> None:
            self.look()

    return ConformanceMachine
