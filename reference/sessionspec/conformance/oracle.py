"""The reference as the runner runs it: `model.Session`'s answers, at a cost that does not grow with every request.

The oracle must answer exactly what `model.Session` answers; it answers thousands of requests a
second, and the model is deliberately naive: every append refolds the whole log, and with its
contracts on every append folds it again, derives every message twice and compares the whole
log with its copy. Three things are therefore done differently here, each answer-preserving:

1. **No contracts.** The model's icontract `ensure`s and `unchanged_on_rejection` are its
   self-checks: they raise only if the model is wrong, never change an answer, and are
   exercised by the test suite (tests/test_contracts.py and every machine run with them on).
   `Reference` takes the model's own methods with the wrappers taken off (`inspect.unwrap`),
   so it runs the model's code, not a copy of it.
2. **The fold carried from one event to the next.** `fold(log + [e])` is `apply(nodes, plan(nodes,
   log, e))` on the nodes of `fold(log)` (the obligation `fold_prefix_then_one`, proofs/
   obligations_surface.py, checked by CrossHair), which is exactly the step the model's `_plan`
   takes after refolding; every event enters the log through `_commit` with the plan made for
   it on the current nodes (append, seed entry, marker), so carrying the nodes is the same fold
   done once.
3. **Views computed once per log.** The log only grows and accepted events never change
   (decision 5), so a view of the log (derived messages, transcript, request header and context)
   is a pure function of its length; each is computed when the length changed, and a message's
   plain JSON once per event.

tests/test_10_oracle.py holds `Reference` to `model.Session` answer for answer (times included)
on the vectors and on generated traces.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import orjson

from sessionspec import model
from sessionspec.conformance.executor import Executor
from sessionspec.conformance.protocol import Answer
from sessionspec.envelope import Event
from sessionspec.header import header_to_json
from sessionspec.jsonvalue import FrozenDict, FrozenList, thaw
from sessionspec.requestheader import fold_request_context, fold_request_header
from sessionspec.surface import Plan, ReplacePlan, Surface, apply, plan
from sessionspec.views import project_all, transcript

T = TypeVar("T")


class Reference(model.Session):
    """`model.Session` without its self-checks, its fold carried along and its views computed once per log length."""

    __slots__ = ("_memo", "_nodes", "_replaces")

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self._nodes: list[int] = []
        self._replaces = 0
        self._memo: dict[str, tuple[int, Any]] = {}

    create: Any = classmethod(inspect.unwrap(model.Session.__dict__["create"].__func__))
    append = inspect.unwrap(model.Session.append)
    append_request = inspect.unwrap(model.Session.append_request)

    def _plan(self, event: Event, *, index: int | None = None) -> Plan:
        # The model: plan(fold(self._log).nodes, self._log, event); the nodes are that fold, carried.
        return plan(self._nodes, self._log, event, index=index)

    def _commit(self, event: Event, step: Plan) -> None:
        super()._commit(event, step)
        self._nodes = apply(self._nodes, step)
        self._replaces += isinstance(step, ReplacePlan)

    def _once(self, name: str, compute: Callable[[], T]) -> T:
        """`compute()` for the log as it is now: its value is kept until the log grows."""
        length = len(self._log)
        hit = self._memo.get(name)
        if hit is None or hit[0] != length:
            hit = self._memo[name] = (length, compute())
        value: T = hit[1]
        return value

    @property
    def surface(self) -> Surface:
        return Surface(FrozenList(self._nodes), self._replaces)

    def derive_messages(self) -> FrozenList:
        """SESSION-READ-VIEWS.2 as views.derive_messages says: the projections of the surface's nodes."""
        return self._once("messages", lambda: project_all(self._log, self._nodes))

    def transcript(self) -> FrozenList:
        return self._once("transcript", lambda: transcript(self._log))

    def request_header(self) -> FrozenDict | None:
        return self._once("header", lambda: fold_request_header(self._log))

    def request_context(self) -> FrozenDict | None:
        return self._once("context", lambda: fold_request_context(self._log))


class ReferenceExecutor(Executor):
    """The executor over `Reference`; a snapshot is built once per session state (the log only grows)."""

    def __init__(self) -> None:
        super().__init__(Reference.create, "model")
        self._snapshot: tuple[Any, int, bool, Answer] | None = None

    def snapshot(self, request: Mapping[str, Any]) -> Answer:
        """The executor's snapshot, built from values copied once each; the same answer object while the session and
        its log are the same. The answer is shared: callers read it and never change it.

        The keys and their order are `Executor.snapshot`'s (tests/test_10_oracle.py compares the two).
        """
        session = self._current()
        messages = request.get("x-messages", True) is not False
        kept = self._snapshot
        if kept is not None and kept[0] is session and kept[1] == session.seq and kept[2] == messages:
            return kept[3]
        surface = session.surface
        answer: Answer = {
            "ok": True, "events": [self.event_json(e) for e in session.events],
            "surface": {"nodes": list(surface.nodes), "replaceGeneration": surface.replace_generation},
            "firstLiveSeq": session.first_live_seq, "seq": session.seq,
            "header": self._plain(session.header, lambda: header_to_json(session.header)),
            "transcript": [event.seq for event in session.transcript()],
            "requestHeader": self._plain(session.request_header()), "requestContext": self._plain(session.request_context()),
        }
        if messages:
            answer["messages"] = [self._plain(message) for message in session.derive_messages()]
        self._snapshot = (session, session.seq, messages, answer)
        return answer

    def event_json(self, event: Any) -> Any:
        """The plain JSON of an accepted event (`to_json` is already a plain copy), once per event object."""
        return self._plain(event, event.to_json)

    def _plain(self, value: Any, form: Callable[[], Any] | None = None) -> Any:
        """thaw(value), or `form()` when given (a plain copy itself), once per object: accepted values never change.

        thaw's copy is made by orjson's round trip where orjson writes the value exactly (in C); a lone
        surrogate or nesting deeper than orjson goes falls back to thaw itself.
        """
        if value is None:
            return None
        hit = self._json.get(id(value))
        if hit is None or hit[0] is not value:
            if form is not None:
                copy = form()
            else:
                try:
                    copy = orjson.loads(orjson.dumps(value))
                except (TypeError, orjson.JSONEncodeError):
                    copy = thaw(value)
            hit = self._json[id(value)] = (value, copy)
        return hit[1]
