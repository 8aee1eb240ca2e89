"""SCP v0: the request and answer shapes, and their translation to the Session API (spec/10-conformance.md).

The protocol is the one thing another implementation codes against, so it is small and closed:
a JSON object per line, an `op` naming one of six operations, and an answer that is either
`{"ok": true, ...}` or `{"ok": false, "error": {kind, message, rule}}`. `Testee` is the
protocol's semantics over any implementation from `sessionspec.testing.implementations`; the testee process and the
runner's oracle both use it, so the reference answers are, by construction, what the spec says.
"""

from __future__ import annotations

import functools
import importlib.metadata
import json
import re
import traceback
from collections.abc import Callable, Mapping
from typing import Any, Final

import orjson

from sessionspec.envelope import parse_event
from sessionspec.errors import Kind, SpecViolation, check, fail
from sessionspec.jsonvalue import thaw
from sessionspec.rules import define
from sessionspec.surface import fold

PROTOCOL_VERSION: Final = 0
START_TIME: Final = 1_700_000_000_000
"""The fake clock of every `create` starts here and ticks by one per reading: answers are deterministic."""
OPS: Final = ("hello", "create", "append", "snapshot", "fold", "repair")
HOOKS: Final = "x-hooks"
"""The extension an in-process testee offers: `x-validator` / `x-observer` on append arm a veto, a raising or a
reentrant hook for that one append (what SESSION-APPEND-COMMIT.2/.4 need, and no other process can express)."""
REENTRANT_REQUEST: Final = {"type": "turn/start", "data": {"turn": 99}}

K = Kind
REQUEST_OBJECT = define("SESSION-CONFORMANCE-PROTOCOL.1", K.JSON, "a request line is one JSON object with a string op")
UNSUPPORTED_OP = define("SESSION-CONFORMANCE-PROTOCOL.2", K.UNSUPPORTED, "an op the testee does not implement is answered unsupported")
NO_SESSION = define("SESSION-CONFORMANCE-PROTOCOL.3", K.UNSUPPORTED, "append and snapshot need a session made by create")
CREATE_SHAPE = define("SESSION-CONFORMANCE-PROTOCOL.4", K.ENVELOPE,
                      "create carries exactly id, seed and header")
EVENT_LIST = define("SESSION-CONFORMANCE-PROTOCOL.5", K.ENVELOPE, "fold and repair carry exactly events, a list")

Answer = dict[str, Any]
Factory = Callable[..., Any]

_LONG_DIGITS = re.compile(rb"\d{20,}")


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def loads(line: bytes) -> Any:
    """One request line as JSON, losslessly.

    orjson is fast but turns integers beyond 64 bits into floats and refuses lone surrogates and
    1e400; those lines go to the standard parser, which keeps them exact so that the spec's own
    rules (SESSION-LOSSLESS-JSON.2/.3) reject them rather than the parser.
    """
    if not _LONG_DIGITS.search(line):
        try:
            return orjson.loads(line)
        except orjson.JSONDecodeError:
            pass
    return json.loads(line, parse_constant=_no_constants)


def dumps(answer: Answer) -> bytes:
    """One answer line (without the newline); lone surrogates are written as escapes."""
    try:
        return orjson.dumps(answer)
    except TypeError:
        return json.dumps(answer, ensure_ascii=True, separators=(",", ":"), default=repr).encode()


def error_answer(error: BaseException) -> Answer:
    """A failure answer: a SpecViolation's kind and rule, or `internal` for anything else."""
    if isinstance(error, SpecViolation):
        return {"ok": False, "error": error.to_json()}
    text = "".join(traceback.format_exception_only(error)).strip()
    return {"ok": False, "error": {"kind": Kind.INTERNAL.value, "message": text, "rule": None}}


def json_error(problem: str) -> Answer:
    """SESSION-CONFORMANCE-PROTOCOL.1: a line that is not a JSON object with an op."""
    return {"ok": False, "error": {"kind": Kind.JSON.value, "message": f"{REQUEST_OBJECT}: {problem}", "rule": REQUEST_OBJECT}}


class Testee:
    """The protocol over one implementation: holds the current session, answers one request at a time."""

    def __init__(self, name: str, factory: Factory) -> None:
        self.name = name
        self.factory = factory
        self.session: Any = None
        self._now = START_TIME
        self._validator_mode: Any = None
        self._observer_mode: Any = None
        self._reentrant: Answer | None = None

    def _clock(self) -> int:
        self._now += 1
        return self._now

    def answer_line(self, line: bytes) -> bytes:
        """Never raises: the answer to one request line, as a line."""
        try:
            request = loads(line)
        except (ValueError, RecursionError) as error:
            return dumps(json_error(f"not JSON ({error})"))
        return dumps(self.answer(request))

    def answer(self, request: Any) -> Answer:
        """Never raises: the answer to one parsed request."""
        try:
            return self._dispatch(request)
        except SpecViolation as violation:
            return error_answer(violation)
        except Exception as error:  # an implementation bug is an answer, never a dead testee
            return error_answer(error)

    def _dispatch(self, request: Any) -> Answer:
        # SESSION-CONFORMANCE-PROTOCOL.1: without an op there is nothing to dispatch on.
        check(isinstance(request, dict) and type(request.get("op")) is str, REQUEST_OBJECT,
              "a request is a JSON object with a string op")
        op = request["op"]
        if op == "hello":
            return self.hello()
        if op == "create":
            return self.create(request)
        if op == "append":
            return self.append(request)
        if op == "snapshot":
            return self.snapshot()
        if op == "fold":
            return fold_answer(request)
        if op == "repair":
            return repair_answer(request)
        # SESSION-CONFORMANCE-PROTOCOL.2: a testee says what it cannot do instead of guessing.
        fail(UNSUPPORTED_OP, f"unsupported op {op!r}")

    def hello(self) -> Answer:
        return {"ok": True, "implementation": f"sessionspec-{self.name}", "version": _version(),
                "profile": "scp-0", "protocol": PROTOCOL_VERSION, "ops": list(OPS), "extensions": [HOOKS]}

    def create(self, request: Mapping[str, Any]) -> Answer:
        # SESSION-CONFORMANCE-PROTOCOL.4: the three keys are always sent, so a misspelt one is caught.
        extra = sorted(set(request) - {"op", "id", "seed", "header"})
        check(not extra, CREATE_SHAPE, f"create has unknown keys {extra}")
        check("id" in request and "seed" in request and "header" in request, CREATE_SHAPE,
              "create carries id, seed and header (null when absent)")
        self._now = START_TIME
        # A rejected create leaves no session: appends after it are refused, never applied to the old one.
        self.session = None
        self.session = self.factory(request["id"], request["seed"], request["header"], clock=self._clock,
                                    validators=[self._validator], observers=[self._observer])
        return {"ok": True, "firstLiveSeq": self.session.first_live_seq, "seq": self.session.seq}

    def _current(self) -> Any:
        # SESSION-CONFORMANCE-PROTOCOL.3: the runner always creates before it appends.
        check(self.session is not None, NO_SESSION, "no session: send create first")
        return self.session

    def append(self, request: Mapping[str, Any]) -> Answer:
        session = self._current()
        body = {key: value for key, value in request.items() if key != "op" and not key.startswith("x-")}
        self._validator_mode, self._observer_mode = request.get("x-validator"), request.get("x-observer")
        self._reentrant = None
        try:
            event = session.append_request(body)
        finally:
            self._validator_mode = self._observer_mode = None
        answer: Answer = {"ok": True, "event": thaw(event.to_json())}
        if self._reentrant is not None:
            answer["x-reentrant"] = self._reentrant
        return answer

    def _validator(self, session: Any, candidate: Any) -> None:
        """The x-hooks validator: vetoes (SESSION-APPEND-COMMIT.2) or reenters (SESSION-APPEND-COMMIT.4) when armed."""
        if self._validator_mode == "raise":
            raise ValueError("vetoed by the x-validator hook")
        if self._validator_mode == "reentrant":
            session.append_request(dict(REENTRANT_REQUEST))

    def _observer(self, session: Any, event: Any) -> None:
        """The x-hooks observer: raises (contained) or tries to reenter (refused) when armed."""
        if self._observer_mode == "raise":
            raise RuntimeError("the x-observer hook failed")
        if self._observer_mode == "reentrant":
            try:
                session.append_request(dict(REENTRANT_REQUEST))
                self._reentrant = {"ok": True}
            except Exception as error:
                self._reentrant = error_answer(error)

    def snapshot(self) -> Answer:
        return snapshot_answer(self._current())


@functools.cache
def _version() -> str:
    try:
        return importlib.metadata.version("sessionspec")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def snapshot_answer(session: Any) -> Answer:
    """`snapshot`: everything the runner compares after a step."""
    surface = session.surface
    return {"ok": True, "events": [thaw(event.to_json()) for event in session.events],
            "surface": {"nodes": list(surface.nodes), "replaceGeneration": surface.replace_generation},
            "messages": thaw(list(session.derive_messages())), "firstLiveSeq": session.first_live_seq}


def _events_of(request: Mapping[str, Any]) -> list[Any]:
    # SESSION-CONFORMANCE-PROTOCOL.5: fold and repair read a log given whole.
    extra = sorted(set(request) - {"op", "events"})
    check(not extra, EVENT_LIST, f"{request['op']} has unknown keys {extra}")
    events = request.get("events")
    check(isinstance(events, list), EVENT_LIST, f"{request['op']} carries events, a list")
    assert isinstance(events, list)
    return [parse_event(raw, index) for index, raw in enumerate(events)]


def fold_answer(request: Mapping[str, Any]) -> Answer:
    """`fold`: the surface of a log given whole (SESSION-SURFACE-FOLD.1 checks contiguity)."""
    result = fold(_events_of(request))
    return {"ok": True, **result.to_json()}


def repair_answer(request: Mapping[str, Any]) -> Answer:
    """`repair`: the closers of an interrupted tail turn; `unsupported` where repair is not built in."""
    events = _events_of(request)
    try:
        from sessionspec.repair import closers
    except ImportError:
        fail(UNSUPPORTED_OP, "this build has no crash repair")
    return {"ok": True, "closers": [thaw(event.to_json()) for event in closers(events)]}
