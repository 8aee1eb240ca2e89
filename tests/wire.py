"""The chapter tests over the protocol: a session whose every call is a request line and an answer line.

`wire:NAME` runs a chapter test against implementation NAME through SCP v0 itself: each session
call is written as a request line (the runner's encoding), read back by the testee's lossless
reader, run by the one executor, answered as a line and parsed as the runner parses it. So what the
protocol can express of each chapter runs over the wire too, the same checks any other testee
meets. What it cannot express is skipped by name: in-process validators and observers (the
x-hooks extension covers those in the machines), Python values JSON text cannot carry, and the
identity of returned objects.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pytest
from sessionspec.envelope import Event, Replace, parse_event
from sessionspec.errors import Kind, SpecViolation
from sessionspec.jsonvalue import FrozenDict, FrozenList, json_equal, snapshot
from sessionspec.testing import implementations
from sessionspec.views import project
from sessionspec.wire.client import parse_answer
from sessionspec.wire.executor import Executor
from sessionspec.wire.protocol import Answer, dumps
from sessionspec.wire.remote import RemoteSession
from sessionspec.wire.serve import answer_line

PREFIX = "wire:"


class LineTestee:
    """An in-process testee reached only through request and answer lines: the protocol without the pipe."""

    def __init__(self, name: str) -> None:
        self.executor = Executor(implementations.factory(name), name)

    def use_clock(self, clock: Callable[[], int]) -> None:
        """The test's clock, read by the testee as its own (what a test asserts about times stays true)."""
        self.executor.clock = clock  # type: ignore[method-assign]

    def request(self, request: Mapping[str, Any] | bytes) -> Answer:
        line = request if isinstance(request, bytes) else _line(request)
        return parse_answer(answer_line(self.executor, line))


_WHERE = re.compile(r"^[A-Z0-9.-]+ \[[a-z-]+\](?: \([^)]*\))?: ")

PYTHON_ONLY = frozenset({"SESSION-LOSSLESS-JSON.1", "SESSION-LOSSLESS-JSON.3", "SESSION-LOSSLESS-JSON.5",
                         "SESSION-LOSSLESS-JSON.6"})
"""Values JSON text has no way to write: a subclass, a tuple, NaN or an infinite float (text can only overflow to
one, `1e400`, which the vectors send), a non-string key, a cycle."""
AS_TEXT = {"SESSION-LOSSLESS-TEXT.4": "SESSION-LOSSLESS-JSON.2", "SESSION-LOSSLESS-TEXT.3": "SESSION-LOSSLESS-JSON.3",
           "SESSION-LOSSLESS-TEXT.5": "SESSION-LOSSLESS-JSON.4"}
"""A value rule's spelling in JSON text: the lossless reader refuses the text first (spec/10, "Transport")."""


def _line(request: Mapping[str, Any]) -> bytes:
    try:
        snapshot(dict(request), frozen=False)
    except SpecViolation as violation:
        if violation.rule in PYTHON_ONLY:
            pytest.skip(f"JSON text cannot carry this value ({violation.rule} is a Python-only case)")
    return dumps(dict(request))


def _violation(answer: Answer) -> SpecViolation:
    """The rejection as the testee answered it: rule, kind, message, and where (seq, index).

    A value refused as text (`2**60` read by the lossless reader) is reported as the value rule the
    in-process API names for it, which is what the chapter tests state.
    """
    error = answer["error"]
    rule, seq, index = AS_TEXT.get(error.get("rule"), error.get("rule")), error.get("seq"), error.get("index")
    message = _WHERE.sub("", str(error.get("message", "")), count=1)  # the answer's text starts with rule and where
    violation = SpecViolation(rule if isinstance(rule, str) else "unknown", Kind(error["kind"]), message,
                              seq=seq if isinstance(seq, int) else None, index=index if isinstance(index, int) else None)
    violation.read_as_text = error.get("rule") in AS_TEXT  # type: ignore[attr-defined]
    return violation


def read_as_text(violation: SpecViolation) -> bool:
    """The request line was refused as it was read: there is no seed index or seq to name (a whole line)."""
    return bool(getattr(violation, "read_as_text", False))


class WireSession(RemoteSession):
    """`RemoteSession` with every view the snapshot carries, and rejections located as answered.

    An event read back equal to one read before is the same object, and a derived message equal
    to its node's logged message is that object: identity is not observable over the wire, but
    equality is, and it is the testee's answers that are compared, never a local recomputation.
    """

    _seen: dict[int, Event]

    def _event(self, raw: Any, index: int) -> Event:
        event = parse_event(raw, index)
        seen = self.__dict__.setdefault("_seen", {})
        known = seen.get(event.seq)
        if known is not None and known == event:
            return known
        seen[event.seq] = event
        return event

    @property
    def events(self) -> FrozenList:
        return FrozenList(self._event(raw, index) for index, raw in enumerate(self._look()["events"]))

    def derive_messages(self) -> FrozenList:
        events, nodes = self.events, self._look()["surface"]["nodes"]
        logged = [message for message in (project(events[node]) for node in nodes if node < len(events)) if message is not None]
        answered = snapshot(self._look()["messages"])
        if len(logged) == len(answered):
            answered = [mine if json_equal(mine, theirs) else theirs for mine, theirs in zip(logged, answered, strict=True)]
        return FrozenList(answered)

    def append(self, type: str, data: Any, *, surface_op: Any = None, source_event_seqs: Any = None,
               ignorable: bool = False) -> Any:
        """The request exactly as given (no copy that could turn a subclass into a dict or loop on a cycle)."""
        request: dict[str, Any] = {"type": type, "data": data}
        if surface_op is not None:
            request["surfaceOp"] = surface_op.to_json() if isinstance(surface_op, Replace) else surface_op
        if source_event_seqs is not None:
            request["sourceEventSeqs"] = source_event_seqs
        if ignorable is not False:
            request["ignorable"] = ignorable
        return self.append_request(request)

    def append_request(self, request: Mapping[str, Any]) -> Any:
        self._snapshot = None
        answer = self._connection.request({"op": "append", **request})
        if not answer["ok"]:
            raise _violation(answer)
        return self._event(answer["event"], 0)

    @property
    def header(self) -> FrozenDict:
        header: FrozenDict = snapshot(self._look()["header"])
        return header

    def transcript(self) -> FrozenList:
        events = self.events
        return FrozenList(events[seq] for seq in self._look()["transcript"])

    def request_header(self) -> FrozenDict | None:
        value: FrozenDict | None = snapshot(self._look()["requestHeader"])
        return value

    def request_context(self) -> FrozenDict | None:
        value: FrozenDict | None = snapshot(self._look()["requestContext"])
        return value

    def complete_log(self) -> FrozenList:
        return self.events

    @property
    def observer_failures(self) -> FrozenList:
        pytest.skip("observer failures are in-process bookkeeping (x-hooks reports them in the machines)")

    def add_validator(self, validator: Any) -> None:
        pytest.skip("a precommit validator is caller code, which only x-hooks can plant over the wire")

    def add_observer(self, observer: Any) -> None:
        pytest.skip("an observer is caller code, which only x-hooks can plant over the wire")


def factory(name: str) -> Callable[..., WireSession]:
    """`create` for `wire:NAME`: each session on a fresh line testee of implementation NAME."""

    def create(session_id: str, seed: Sequence[Any] | None = None, header: Any = None, *, clock: Any = None,
               validators: Sequence[Any] = (), observers: Sequence[Any] = ()) -> WireSession:
        if validators or observers:
            pytest.skip("validators and observers are caller code, which only x-hooks can plant over the wire")
        testee = LineTestee(name)
        if clock is not None:
            testee.use_clock(clock)
        plain_seed = [e.to_json() if hasattr(e, "to_json") else e for e in seed] if isinstance(seed, (list, tuple)) else seed
        answer = testee.request({"op": "create", "id": session_id, "seed": plain_seed, "header": header})
        if not answer["ok"]:
            raise _violation(answer)
        return WireSession(testee, session_id)  # type: ignore[arg-type]

    return create
