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

And three things are done differently in `ReferenceExecutor.answer`, the runner's way in:

4. **Answers remembered by the lines that led to them.** The executor is a deterministic function
   of its state and a request line (its clock is its own, every cache in it is keyed by identity
   and checked), and a create that gets past its shape check puts it in a state that depends on
   that line alone (`Executor.create` resets the clock and the session before it calls the
   factory). So the answer to a line, and the state after it, are a function of the lines since
   the last such create. Hypothesis builds most examples by changing a part of an earlier one, so
   about half the lines of a run repeat a path already taken (measured over 100 examples: 53%);
   those are answered from a tree of paths (`_Step`) without running them, and when a path leaves
   the tree the state at its last known step is restored (`Reference.state`/`Reference.at`) and
   the model runs from there.
5. **Breaches worked out when a divergence asks.** Every rule a rejected line breaks (`breaches_of`:
   each check of the request run on its own, on the session it met) only ever judges a divergence:
   a testee that answers as the reference does never needs them. So a step keeps what they are
   worked out from (the line, the answer and the state the session was in, which a rejection
   leaves as it found it) and works them out the first time they are asked for, on that state
   restored (`Reference.at`), once per step.
6. **A snapshot's line from its events' text, each written once.** The machine asks for a snapshot
   after every step, and its answer holds the whole log: once the log holds a value orjson will
   not write, `dumps` wrote every event again at every step with the lossless writer, in Python.
   `sessionspec.wire.snapshotline` joins such a line from each event's text, kept by the event's
   plain copy, to the same bytes `dumps` writes.

tests/test_10_oracle.py holds `Reference` to `model.Session` answer for answer (times included)
on the vectors and on generated traces, and `answer` to a fresh model on traces that share
prefixes and branch.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, TypeVar

import orjson

from sessionspec import model
from sessionspec.envelope import Event
from sessionspec.errors import SpecViolation
from sessionspec.header import header_to_json
from sessionspec.jsonvalue import FrozenDict, FrozenList, thaw
from sessionspec.requestheader import fold_request_context, fold_request_header
from sessionspec.surface import Plan, ReplacePlan, Surface, apply, plan
from sessionspec.views import project_all, transcript
from sessionspec.wire.breaching import breaches_of
from sessionspec.wire.executor import Executor
from sessionspec.wire.protocol import Answer, dumps, line_error, loads
from sessionspec.wire.snapshotline import SnapshotLines
from sessionspec.wire.verdict import Breach

T = TypeVar("T")
REMEMBERED: Final = (50_000, 64 << 20)
"""Steps, and bytes of their answers' lines, the tree of paths holds before it is dropped and grown again (memory:
a step keeps its answer, and a snapshot's answer holds the whole log)."""


def reference_answer(oracle: Executor, line: bytes) -> Answer:
    """What the reference answers to a line: exactly what a testee reads from it."""
    try:
        request = loads(line)
    except SpecViolation as violation:
        return line_error(violation)
    return oracle.run(request)


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

    def state(self) -> tuple[Any, ...]:
        """What `at` needs to make a session as this one is now: the log only grows, so its length names it."""
        return (self, len(self._log), self._nodes, self._replaces, dict(self._memo), len(self._observer_failures))

    @staticmethod
    def at(state: tuple[Any, ...]) -> Reference:
        """A new session as `state` was when taken (the old one may have grown since; a new object, so nothing
        kept by identity for the old one is taken for it)."""
        session, length, nodes, replaces, memo, failures = state
        again: Reference = copy.copy(session)
        again._log = session._log[:length]
        again._observer_failures = session._observer_failures[:failures]
        again._nodes, again._replaces, again._memo = nodes, replaces, dict(memo)
        return again

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


class Judgement:
    """Every rule a rejected line breaks (`breaching.breaches_of`), worked out the first time it is asked for: only a
    divergence asks (point 5 above). Calling it gives the breaches; `()` for a line the reference accepted."""

    __slots__ = ("_answer", "_found", "_line", "_state")

    def __init__(self, line: bytes, answer: Answer, state: tuple[Any, ...] | None) -> None:
        self._line: bytes | None = line
        self._answer = answer
        self._state = state
        """The session's state after the line (`Reference.state`), which is the one the line met, since a rejection
        leaves the session as it found it; None when no session is judged with (a create, which replaces the session,
        or no session at all)."""
        self._found: tuple[Breach, ...] | None = None

    def __call__(self) -> tuple[Breach, ...]:
        if self._found is None:
            assert self._line is not None
            session = None if self._state is None else Reference.at(self._state)
            self._found = breaches_of(self._line, self._answer, session)
            self._line = self._state = None  # what they were worked out from is not needed again
        return self._found


Judged = Judgement | tuple[Breach, ...]
"""Breaches as the exchange carries them: known (a vector records them), or a `Judgement` worked out when asked."""


def judged(breaches: Judged) -> tuple[Breach, ...]:
    """The breaches themselves, worked out now if they were not yet."""
    return breaches if isinstance(breaches, tuple) else breaches()


@dataclass(slots=True, eq=False)
class _Step:
    """A line answered after a known path: its answer, the state it left, and the lines answered after it."""

    answer: Answer
    written: bytes
    """The answer as the protocol writes it: what a testee that agrees writes, byte for byte."""
    state: tuple[Any, ...]
    breaches: Judged = ()
    """Every rule the line's request breaks, when the reference rejected it (`sessionspec.breaches`)."""
    after: dict[bytes, _Step] = field(default_factory=dict)


class ReferenceExecutor(Executor):
    """The executor over `Reference`; a snapshot is built once per session state (the log only grows), and `answer`
    remembers every line's answer by the path of lines that led to it."""

    def __init__(self) -> None:
        super().__init__(self._create, "model")
        self._snapshot: tuple[Any, int, bool, Answer] | None = None
        self._starts: dict[bytes, _Step] = {}
        """Lines that reset the executor (a create past its shape check): their steps start paths."""
        self._step: _Step | None = None
        """The last line's step (None before the first line); kept when the tree is dropped, so its path goes on."""
        self._behind = False
        """The executor's own state is not the one `_step` left (lines since were answered from the tree)."""
        self._steps = self._bytes = 0
        self._reset = False
        self._written: tuple[Answer | None, bytes] = (None, b"")
        """The last answer the tree kept and its line: a snapshot's answer is the same object while the session is."""
        self._lines = SnapshotLines()
        self._plains: dict[int, tuple[Any, Any]] = {}
        """`_plain`'s copies, by identity: kept across creates while the tree keeps their sessions."""

    def _create(self, *args: Any, **kwargs: Any) -> Reference:
        # `create` calls its factory once it has reset the clock and set the session to None; `x-rebuild` calls it
        # too, but only with a session.
        self._reset = self._reset or self.session is None
        session: Reference = Reference.create(*args, **kwargs)
        return session

    def answer(self, line: bytes) -> tuple[Answer, bytes]:
        """`reference_answer(self, line)` and its line as the protocol writes it (`dumps`), from the tree of paths
        when this path was taken before.

        The answer is shared: callers read it and never change it."""
        step = self._starts.get(line)
        if step is None and self._step is not None:
            step = self._step.after.get(line)
        if step is not None:
            self._step, self._behind = step, True
            return step.answer, step.written
        self._catch_up()
        before = self.session
        self._reset = False
        answer = reference_answer(self, line)
        kept = None if self.session is None else self.session.state()
        written = self._line(answer)
        found: Judged = () if answer.get("ok") is not False else \
            Judgement(line, answer, kept if before is self.session else None)
        step = _Step(answer, written, (kept, self._now), found)
        if self._steps >= REMEMBERED[0] or self._bytes >= REMEMBERED[1]:
            self._starts, self._steps, self._bytes = {}, 0, 0
            self._plains.clear()
            self._lines.clear()
        self._steps += 1
        self._bytes += len(step.written)
        if self._reset:
            self._starts[line] = step
        elif self._step is not None:
            self._step.after[line] = step
        self._step = step
        return answer, step.written

    def _line(self, answer: Answer) -> bytes:
        """`dumps(answer)`, byte for byte: a snapshot's from its parts (point 6), the same answer's line once."""
        if answer is self._written[0]:
            return self._written[1]
        kept = self._snapshot
        written = self._lines.line(answer) if kept is not None and kept[3] is answer else dumps(answer)
        self._written = (answer, written)
        return written

    def known_text(self, value: Any) -> bytes | None:
        """The lossless writer's text of one of the oracle's plain events, when a snapshot's line kept it (point 6)."""
        return self._lines.known(value)

    def _catch_up(self) -> None:
        """The executor's own state made the one the last line's step left (lines were answered from the tree)."""
        if self._behind:
            assert self._step is not None
            kept, self._now = self._step.state
            self.session = None if kept is None else Reference.at(kept)
            self._behind = False

    def current(self) -> tuple[str, list[Any], Any] | None:
        """The session the lines so far left, as a create would seed it: (id, events, header), or None for none."""
        self._catch_up()
        session = self.session
        if session is None:
            return None
        return session.id, [self.event_json(event) for event in session.events], header_to_json(session.header)

    def breaches(self) -> tuple[Breach, ...]:
        """Every rule the last line answered breaks (empty unless the reference rejected it)."""
        return judged(self.judgement())

    def judgement(self) -> Judged:
        """`breaches()`, to be worked out when a divergence asks for them (point 5 of the module's docstring)."""
        return self._step.breaches if self._step is not None else ()

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
        hit = self._plains.get(id(value))
        if hit is None or hit[0] is not value:
            if form is not None:
                plain = form()
            else:
                try:
                    plain = orjson.loads(orjson.dumps(value))
                except (TypeError, orjson.JSONEncodeError):
                    plain = thaw(value)
            hit = self._plains[id(value)] = (value, plain)
        return hit[1]
