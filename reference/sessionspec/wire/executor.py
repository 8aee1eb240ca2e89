"""The one op executor: a protocol request applied to a session of one implementation.

The testee process, the in-process machines, the vectors, the explorer's traces and `sessionspec
replay` all run requests through `Executor.run`, so a request means the same thing wherever it is
sent, and a trace written by any of them replays through any other. It never raises: whatever the
implementation does, the answer is a protocol answer (`internal` for a crash).

The x-hooks extension arms in-process hooks for one append, so the rules that need caller code
(SESSION-APPEND-COMMIT.1/.2/.3/.4) are checkable across a process boundary: `x-validator` vetoes
or reenters, `x-observer` raises or reenters, `x-clock: reentrant` is a clock that appends while
the candidate is built, `x-time` fixes what the clock reads, `x-mutate-input` changes the
caller's request after the append (SESSION-IMMUTABILITY.3).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

from sessionspec.envelope import parse_event
from sessionspec.errors import Kind, SpecViolation
from sessionspec.header import header_to_json
from sessionspec.jsonvalue import is_safe_int, thaw
from sessionspec.preview import as_text, clipped, shown
from sessionspec.repair import closers
from sessionspec.rules import check, fail
from sessionspec.shapes import check_content
from sessionspec.surface import fold
from sessionspec.version import __version__
from sessionspec.wire.immutability import attempt_mutation, mutate_everywhere
from sessionspec.wire.protocol import (
    CREATE_SHAPE,
    EVENT_LIST,
    EXTENSION,
    HOOK_VALUES,
    HOOKS,
    INPROCESS,
    NO_SESSION,
    OPS,
    PROTOCOL_VERSION,
    REENTRANT_REQUEST,
    REQUEST_OBJECT,
    START_TIME,
    UNSUPPORTED_OP,
    Answer,
    error_answer,
)
from sessionspec.wire.storageops import STORAGE_OPS, StorageOps
from sessionspec.wire.trace import untag

Factory = Callable[..., Any]
"""An implementation's `create(session_id, seed, header, *, clock, validators, observers)`."""


def event_json(event: Any) -> Any:
    """The plain JSON envelope of an accepted event."""
    return thaw(event.to_json())


class Executor:
    """The protocol over one implementation: holds the current session and answers one request at a time."""

    def __init__(self, factory: Factory, name: str = "model", *, extensions: tuple[str, ...] = (HOOKS, INPROCESS),
                 storage: tuple[str, ...] = ()) -> None:
        self.factory = factory
        self.name = name
        self.extensions = extensions
        self.storage = StorageOps(storage, factory)
        """The storage capability (spec/10): the backends `hello` declares, and the log the session is attached to."""
        self.session: Any = None
        self.candidate: Any = None
        """The candidate the last armed validator saw (its JSON), for the answer's `x-candidate`."""
        self._now = START_TIME
        self._fixed: int | None = None
        self._hooks: dict[str, str] = {}
        self._nested: Answer | None = None
        self._json: dict[int, tuple[Any, Any]] = {}

    # --- the clock and the hooks: caller code, as an embedding harness would give it ----------

    def clock(self) -> int:
        """The fake clock: `x-time` when the request fixed it, else a tick from START_TIME per reading."""
        if self._hooks.get("x-clock") == "reentrant" and self._nested is None:
            self._nested = self._reenter()
        if self._fixed is not None:
            return self._fixed
        self._now += 1
        return self._now

    def _reenter(self) -> Answer:
        try:
            self.session.append_request(copy.deepcopy(REENTRANT_REQUEST))
        except Exception as error:
            return error_answer(error)
        return {"ok": True}

    def _validator(self, session: Any, candidate: Any) -> None:
        mode = self._hooks.get("x-validator")
        if mode is None:
            return
        self.candidate = event_json(candidate)
        if mode == "raise":
            raise ValueError("vetoed by the x-validator hook")
        if mode == "violation":
            raise SpecViolation("SESSION-APPEND-COMMIT.2", Kind.VETO, "vetoed with the validator's own rule")
        session.append_request(copy.deepcopy(REENTRANT_REQUEST))

    def _observer(self, session: Any, event: Any) -> None:
        mode = self._hooks.get("x-observer")
        if mode == "raise":
            raise RuntimeError("the x-observer hook failed")
        if mode == "reentrant" and self._nested is None:
            self._nested = self._reenter()

    # --- requests -------------------------------------------------------------------------------

    def run(self, request: Any) -> Answer:
        """The answer to one parsed request; never raises."""
        try:
            return self._dispatch(request)
        except SpecViolation as violation:
            return error_answer(violation)
        except Exception as error:  # an implementation bug is an answer, never a dead testee
            return error_answer(error)
        finally:
            self._fixed = None
            self._hooks = {}

    def _dispatch(self, request: Any) -> Answer:
        # SESSION-CONFORMANCE-PROTOCOL.1: without an op there is nothing to dispatch on.
        check(isinstance(request, dict) and type(request.get("op")) is str, REQUEST_OBJECT,
              "a request is a JSON object with a string op")
        op = request["op"]
        if op == "create":
            self.storage.detach()
            # SESSION-CONFORMANCE-PROTOCOL.3: a rejected create leaves no session, whatever refuses it (its x- keys and
            # its own shape included); a session kept from before would make what follows depend on history.
            self.session = None
        if "x-time" in request:
            # SESSION-CONFORMANCE-PROTOCOL.6: x-time is an x-hooks key, and a clock reading is a safe integer.
            check(HOOKS in self.extensions and is_safe_int(request["x-time"]), EXTENSION,
                  f"x-time must be a safe integer under {HOOKS}, got {shown(request['x-time'])}")
            self._fixed = request["x-time"]
        handler = _OPS.get(op)
        if handler is None or (op.startswith("x-") and INPROCESS not in self.extensions):
            # SESSION-CONFORMANCE-PROTOCOL.2: a testee says what it cannot do instead of guessing.
            fail(UNSUPPORTED_OP, f"unsupported op {shown(op)}")
        if op != "append":  # an append's hooks are armed, each value checked, by `_arm`
            # SESSION-CONFORMANCE-PROTOCOL.6: an x- key this op does not take is refused, before the op's own shape.
            unknown = sorted(key for key in request if key.startswith("x-") and not self._offers(op, key))
            check(not unknown, EXTENSION, f"unknown extension key(s) {shown(unknown)} on {op}")
        method: Callable[[Mapping[str, Any]], Answer] = getattr(self, handler.__name__)  # a subclass's own, if it has one
        return method(request)

    def _offers(self, op: str, key: str) -> bool:
        """Whether this executor takes the request key `key` on `op`: `x-time` anywhere under x-hooks, `x-messages` on a
        snapshot under x-inprocess (leave the derived cache alone once)."""
        if key == "x-time":
            return HOOKS in self.extensions
        return key == "x-messages" and op == "snapshot" and INPROCESS in self.extensions

    def hello(self, request: Mapping[str, Any]) -> Answer:
        answer: Answer = {"ok": True, "implementation": f"sessionspec-{self.name}", "version": __version__,
                          "profile": "scp-0", "protocol": PROTOCOL_VERSION, "ops": list(OPS), "extensions": list(self.extensions)}
        if self.storage.backends:
            answer["ops"].extend(STORAGE_OPS)
            answer["storage"] = list(self.storage.backends)
        return answer

    def create(self, request: Mapping[str, Any]) -> Answer:
        # SESSION-CONFORMANCE-PROTOCOL.4: the three keys are always sent, so a misspelt one is caught.
        extra = sorted(key for key in set(request) - {"op", "id", "seed", "header"} if key != "x-time")
        check(not extra, CREATE_SHAPE, f"create has unknown keys {shown(extra)}")
        check("id" in request and "seed" in request and "header" in request, CREATE_SHAPE,
              "create carries id, seed and header (null when absent)")
        self._now = START_TIME
        self._json.clear()
        self.storage.detach()
        self.session = self.factory(request["id"], request["seed"], request["header"], clock=self.clock,
                                    validators=[self._validator], observers=[self._observer])
        return {"ok": True, "firstLiveSeq": self.session.first_live_seq, "seq": self.session.seq}

    def _current(self) -> Any:
        # SESSION-CONFORMANCE-PROTOCOL.3: the runner always creates before it appends.
        check(self.session is not None, NO_SESSION, "no session: send create first")
        return self.session

    def _arm(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """The append request without its x- keys, with the hooks those keys arm (SESSION-CONFORMANCE-PROTOCOL.6)."""
        body: dict[str, Any] = {}
        for key, value in request.items():
            if key == "op" or key == "x-time":
                continue
            if not key.startswith("x-"):
                body[key] = value
                continue
            allowed = HOOK_VALUES.get(key)
            check(HOOKS in self.extensions and allowed is not None and value in allowed, EXTENSION,
                  f"unknown extension {clipped(key, 120)}: {shown(value)}")
            self._hooks[key] = value
        return body

    def append(self, request: Mapping[str, Any]) -> Answer:
        session = self._current()
        body = self._arm(request)
        if self._hooks.get("x-mutate-input") and "data" in body:
            body["data"] = thaw(body["data"])  # the caller's own copy: the request may be run on another side too
        self.candidate = self._nested = None
        failures = len(session.observer_failures)
        try:
            event = session.append_request(body)
        except SpecViolation as violation:
            return self._with_hooks(error_answer(violation), failures)
        # SESSION-CONFORMANCE-STORAGE.3: an attached session's event is durable before its append is answered.
        self.storage.persist(event)
        if self._hooks.get("x-mutate-input") and isinstance(body.get("data"), (dict, list)):
            mutate_everywhere(body["data"])  # SESSION-IMMUTABILITY.3: the caller's copy, never the log
        return self._with_hooks({"ok": True, "event": self.event_json(event)}, failures)

    def append_values(self, request: Mapping[str, Any]) -> Answer:
        """`x-append` (x-inprocess): `append` of `request["request"]` with its tagged values (`{"$int": "9007199254740993"}`,
        `{"$float": "-0.0"}`, `{"$tuple": [...]}`, `{"$pairs": [[1, "v"]]}`) turned into the Python values they name, so
        decision 4 (values JSON text cannot carry) is checked across the wire for an implementation that takes objects."""
        try:
            body = untag(request.get("request"))
        except ValueError as error:
            fail(REQUEST_OBJECT, f"x-append: {error}")
        # SESSION-CONFORMANCE-PROTOCOL.1: x-append carries exactly one append request object.
        check(set(request) <= {"op", "request", "x-time"} and isinstance(body, dict) and "op" not in body, REQUEST_OBJECT,
              "x-append carries exactly request, an append request object")
        return self.append(body)

    def _with_hooks(self, answer: Answer, failures: int) -> Answer:
        """What the armed hooks saw: the nested append's answer, the candidate, the observer failures recorded."""
        if self._nested is not None:
            answer["x-reentrant"] = self._nested
        if self.candidate is not None:
            answer["x-candidate"] = self.candidate
        if self._hooks.get("x-observer") == "raise":
            answer["x-observerFailures"] = len(self.session.observer_failures) - failures
        return answer

    def event_json(self, event: Any) -> Any:
        """The plain JSON of an accepted event, computed once per event object (events never change)."""
        hit = self._json.get(id(event))
        if hit is None or hit[0] is not event:
            hit = self._json[id(event)] = (event, event_json(event))
        return hit[1]

    def snapshot(self, request: Mapping[str, Any]) -> Answer:
        """Everything the spec defines per session: the log, the surface, the three views, the header and folds."""
        session = self._current()
        surface = session.surface
        answer: Answer = {
            "ok": True, "events": [self.event_json(e) for e in session.events],
            "surface": {"nodes": list(surface.nodes), "replaceGeneration": surface.replace_generation},
            "firstLiveSeq": session.first_live_seq, "seq": session.seq, "header": header_to_json(session.header),
            "transcript": [event.seq for event in session.transcript()],
            "requestHeader": thaw(session.request_header()), "requestContext": thaw(session.request_context()),
        }
        if request.get("x-messages", True) is not False:  # false: leave the derived cache alone this once
            answer["messages"] = thaw(list(session.derive_messages()))
        return answer

    def fold(self, request: Mapping[str, Any]) -> Answer:
        """`fold`: the surface of a log given whole (SESSION-SURFACE-FOLD.1 checks contiguity)."""
        return {"ok": True, **fold(_events_of(request)).to_json()}

    def repair(self, request: Mapping[str, Any]) -> Answer:
        """`repair`: the closers of an interrupted tail turn (spec/08)."""
        return {"ok": True, "closers": [event_json(event) for event in closers(_events_of(request))]}

    def rebuild(self, request: Mapping[str, Any]) -> Answer:
        """`x-rebuild`: a fresh session of this implementation seeded with the current events (SESSION-DERIVED-CACHE.1)."""
        fresh = self.factory("rebuild", self._current().events, clock=self.clock)
        surface = fresh.surface
        return {"ok": True, "seq": fresh.seq, "firstLiveSeq": fresh.first_live_seq,
                "surface": {"nodes": list(surface.nodes), "replaceGeneration": surface.replace_generation},
                "messages": thaw(list(fresh.derive_messages()))}

    def mutate(self, request: Mapping[str, Any]) -> Answer:
        """`x-mutate`: try to mutate what the session returned (decision 5); the answer names what did not refuse."""
        return {"ok": True, "raised": attempt_mutation(self._current(), as_text(request.get("target")))}


    # --- the storage capability (spec/10, "Storage capability"; `wire.storageops`) -------------------

    def load(self, request: Mapping[str, Any]) -> Answer:
        return self.storage.load(request)

    def save(self, request: Mapping[str, Any]) -> Answer:
        return self.storage.save(request, self._current())

    def attach(self, request: Mapping[str, Any]) -> Answer:
        return self.storage.save(request, self._current(), attach=True)

    def repair_file(self, request: Mapping[str, Any]) -> Answer:
        return self.storage.repair_file(request)


def _events_of(request: Mapping[str, Any]) -> list[Any]:
    # SESSION-CONFORMANCE-PROTOCOL.5: fold and repair read a log given whole.
    extra = sorted(set(request) - {"op", "events", "x-time"})
    check(not extra, EVENT_LIST, f"{request['op']} has unknown keys {shown(extra)}")
    events = request.get("events")
    if not isinstance(events, list):
        fail(EVENT_LIST, f"{request['op']} carries events, a list")
    parsed = []
    for index, raw in enumerate(events):
        # ... each read as a seed entry is (chapter 05): its envelope, then its content.
        event = parse_event(raw, index)
        check_content(event, index=index)
        parsed.append(event)
    return parsed


_OPS: dict[str, Callable[[Executor, Mapping[str, Any]], Answer]] = {
    "hello": Executor.hello, "create": Executor.create, "append": Executor.append, "snapshot": Executor.snapshot,
    "fold": Executor.fold, "repair": Executor.repair, "x-rebuild": Executor.rebuild, "x-mutate": Executor.mutate,
    "x-append": Executor.append_values, "load": Executor.load, "save": Executor.save, "attach": Executor.attach,
    "repair-file": Executor.repair_file,
}

