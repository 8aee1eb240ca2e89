"""Bounded exhaustive exploration: every sequence of abstract operations up to a depth, TLC style.

Random testing samples the state space; this walks all of it up to a bound. From the empty
session, breadth first, every operation of a small alphabet is applied to the implementation
under test and to the reference model (`sessionspec.model`) side by side:

- append of each surface type (user, assistant, tool result) and of a log-only event;
- replace over every ordered (start, end) pair of the current surface, with full provenance and
  with incomplete provenance (so both the accepted and the rejected branch of every range);
- tool-result rewrites of each tool result on the surface, one that changes only the inner
  content and one that forges the message id;
- an append that the sessions' one precommit validator vetoes (see `veto`);
- reseed (a new session seeded with the current log) and repair (append the crash closers).

Both sides must accept or reject each operation alike, with the same rule, and a rejection must
leave the implementation exactly as it was. Every distinct state (deduplicated by a canonical
hash of the model's log and the implementation's observable views) is checked with the
invariants below. Because the search is breadth first, the first violation found is one of the
shortest, and it is reported as a replayable trace of protocol requests and, optionally, as an
Informal Trace Format file for TLA+ and Quint tooling.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from sessionspec import impls, model
from sessionspec.catalog import TOOL_RESULT
from sessionspec.envelope import Event, Replace
from sessionspec.errors import SpecViolation
from sessionspec.jsonvalue import Json, thaw
from sessionspec.surface import fold

SESSION_ID = "explore"
Request = dict[str, Json]


def _clock() -> int:
    """A constant clock: time orders nothing, and a constant keeps equal states equal."""
    return 0


# --- the alphabet -----------------------------------------------------------------------------


def user_message(message_id: str = "u", text: str = "hi") -> Json:
    return {"id": message_id, "role": "user", "source": {"kind": "user"}, "content": [{"type": "text", "text": text}]}


def assistant_message() -> Json:
    call = {"type": "tool-call", "id": "c1", "name": "read", "arguments": "{}"}
    source = {"kind": "model", "provider": "p", "model": "m"}
    return {"turn": 1, "step": 1, "message": {"id": "a", "role": "assistant", "source": source, "content": [call]}}


def tool_result(text: str = "out", message_id: str = "r") -> Json:
    block = {"type": "tool-result", "toolCallId": "c1", "content": [{"type": "text", "text": text}]}
    source = {"kind": "tool", "callId": "c1"}
    return {"turn": 1, "step": 1, "message": {"id": message_id, "role": "user", "source": source, "content": [block]}}


def append_request(event_type: str, data: Json, surface_op: Json = None, sources: Json = None) -> Request:
    request: Request = {"op": "append", "type": event_type, "data": data}
    if surface_op is not None:
        request["surfaceOp"] = surface_op
    if sources is not None:
        request["sourceEventSeqs"] = sources
    return request


def _replace(start: int, end: int) -> Json:
    return {"op": "replace", "start": start, "end": end}


@dataclass(frozen=True, slots=True)
class Step:
    """One letter of the alphabet: a label and the protocol requests that perform it.

    `reseed` steps carry one `create` request; every other step carries appends (repair carries
    one append per closer).
    """

    label: str
    requests: tuple[Request, ...]


def _closers() -> Callable[[Sequence[Event]], list[Event]] | None:
    try:
        from sessionspec.repair import closers
    except ImportError:
        return None
    return closers


def steps(session: Any) -> Iterator[Step]:
    """Every operation the alphabet offers in the state of the reference `session`."""
    events: Sequence[Event] = session.events
    nodes = list(session.surface.nodes)
    yield Step("append user/message", (append_request("user/message", user_message(), "append"),))
    yield Step("append assistant/message", (append_request("assistant/message", assistant_message(), "append"),))
    yield Step("append tool/result", (append_request(TOOL_RESULT, tool_result(), "append"),))
    yield Step("append turn/start (log-only)", (append_request("turn/start", {"turn": 1}),))
    yield Step("append session/title (log-only, ignorable)", ({**append_request("session/title", {"title": "t"}),
                                                               "ignorable": True},))
    # The vetoed letters come just before the replaces: a rejected step leaves the sessions as
    # they are, so the replaces after it run on a session that has just seen a veto.
    yield Step("append turn/start (vetoed)", (append_request("turn/start", {"turn": 1, "veto": True}),))
    if nodes:
        vetoed = {**user_message("v", "vetoed summary"), "veto": True}
        yield Step(f"replace {nodes[0]}..{nodes[-1]} (vetoed)",
                   (append_request("user/message", vetoed, _replace(nodes[0], nodes[-1]), nodes),))
    for first, start in enumerate(nodes):
        for last, end in enumerate(nodes):
            shadowed = nodes[first : last + 1]
            summary = user_message("s", "summary")
            yield Step(f"replace {start}..{end}", (append_request("user/message", summary, _replace(start, end), shadowed or [start]),))
            incomplete = shadowed[:-1] or None
            yield Step(f"replace {start}..{end} (incomplete provenance)",
                       (append_request("user/message", summary, _replace(start, end), incomplete),))
    for node in nodes:
        if events[node].type == TOOL_RESULT:
            yield Step(f"rewrite tool/result {node}",
                       (append_request(TOOL_RESULT, tool_result("pruned"), _replace(node, node), [node]),))
            yield Step(f"rewrite tool/result {node} (forged id)",
                       (append_request(TOOL_RESULT, tool_result("pruned", "r2"), _replace(node, node), [node]),))
    seed = [event.to_json() for event in events]
    yield Step("reseed", ({"op": "create", "id": SESSION_ID, "seed": seed, "header": None},))
    closers = _closers()
    if closers is not None:
        pending = closers(events)
        if pending:
            requests = [append_request(e.type, thaw(e.data), _op_json(e), _sources_json(e)) for e in pending]
            yield Step("repair", tuple(requests))


def _op_json(event: Event) -> Json:
    op = event.surface_op
    return op.to_json() if isinstance(op, Replace) else op


def _sources_json(event: Event) -> Json:
    return None if event.source_event_seqs is None else list(event.source_event_seqs)


# --- applying steps and observing states -------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one side did with a request: accepted, rejected with a rule, or crashed."""

    accepted: bool
    rule: str | None = None
    crash: str | None = None

    def describe(self) -> str:
        if self.crash is not None:
            return f"crashed: {self.crash}"
        return "accepted" if self.accepted else f"rejected ({self.rule})"


def veto(session: Any, candidate: Event) -> None:
    """The explorer's one precommit validator: it vetoes any event whose data says `"veto": true`.

    A vetoed event passed every check and was planned; the implementation must drop the plan
    with it (SESSION-APPEND-COMMIT.2). The protocol has no validators, so a testee replaying a
    trace accepts such an append; the explorer's own replay does not.
    """
    if isinstance(candidate.data, dict) and candidate.data.get("veto") is True:
        raise RuntimeError("vetoed by the explorer")


def create(factory: Callable[..., Any], seed: Json) -> Any:
    return factory(SESSION_ID, seed=seed, header=None, clock=_clock, validators=[veto])


def append(session: Any, request: Request) -> Outcome:
    try:
        session.append_request(request)
    except SpecViolation as violation:
        return Outcome(False, violation.rule)
    except Exception as error:
        return Outcome(False, crash=repr(error))
    return Outcome(True)


@dataclass(frozen=True, slots=True)
class View:
    """Everything observable about a session, as canonical JSON bytes per view."""

    events: bytes
    nodes: tuple[int, ...]
    replace_generation: int
    messages: bytes
    transcript: tuple[int, ...]
    first_live_seq: int
    seq: int


def _canonical(value: Json) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def observe(session: Any) -> View:
    surface = session.surface
    return View(
        events=_canonical([event.to_json() for event in session.events]),
        nodes=tuple(surface.nodes),
        replace_generation=surface.replace_generation,
        messages=_canonical(thaw(session.derive_messages())),
        transcript=tuple(event.seq for event in session.transcript()),
        first_live_seq=session.first_live_seq,
        seq=session.seq,
    )


def state_key(reference: View, actual: View) -> bytes:
    """The canonical hash of a state: the reference's log and the implementation's views."""
    digest = hashlib.blake2b(digest_size=16)
    for view in (reference, actual):
        digest.update(view.events)
        digest.update(repr((view.nodes, view.replace_generation, view.transcript, view.first_live_seq, view.seq)).encode())
        digest.update(view.messages)
    return digest.digest()


# --- the invariants --------------------------------------------------------------------------


def _same_views(reference: View, actual: View, session: Any, factory: Callable[..., Any]) -> str | None:
    for name in ("events", "nodes", "replace_generation", "messages", "transcript", "first_live_seq", "seq"):
        if getattr(reference, name) != getattr(actual, name):
            return f"{name} differs: model {_show(getattr(reference, name))} != impl {_show(getattr(actual, name))}"
    return None


def _show(value: object) -> str:
    text = value.decode() if isinstance(value, bytes) else repr(value)
    return text if len(text) <= 300 else text[:300] + "..."


def _surface_is_own_fold(reference: View, actual: View, session: Any, factory: Callable[..., Any]) -> str | None:
    folded = fold(session.events).surface
    if tuple(folded.nodes) != actual.nodes or folded.replace_generation != actual.replace_generation:
        return f"surface {actual.nodes} is not the fold of its own log {tuple(folded.nodes)}"
    return None


def _nodes_are_unique_surface_events(reference: View, actual: View, session: Any, factory: Callable[..., Any]) -> str | None:
    events = session.events
    if len(set(actual.nodes)) != len(actual.nodes):
        return f"surface nodes repeat: {actual.nodes}"
    stray = [n for n in actual.nodes if not 0 <= n < len(events) or events[n].surface_op is None]
    return f"surface nodes {stray} are not surface events of the log" if stray else None


def _fresh_rebuild_agrees(reference: View, actual: View, session: Any, factory: Callable[..., Any]) -> str | None:
    """A session of the same implementation seeded with this log shows the same surface and messages.

    The rebuilt session also carries an observer that tries to append: the reentrancy guard
    (SESSION-APPEND-COMMIT.4) must reject that nested append whatever the state.
    """
    nested: list[Outcome] = []
    attempted: list[bool] = []
    nested_request = append_request("turn/start", {"turn": 1})

    def reenter(inner: Any, event: Event) -> None:
        if not attempted:
            attempted.append(True)
            nested.append(append(inner, nested_request))

    fresh = factory("rebuild", seed=list(session.events), clock=_clock, observers=[reenter])
    if tuple(fresh.surface.nodes) != actual.nodes:
        return f"a session seeded with this log has surface {tuple(fresh.surface.nodes)}, not {actual.nodes}"
    if _canonical(thaw(fresh.derive_messages())) != actual.messages:
        return "a session seeded with this log derives different messages"
    append(fresh, nested_request)
    if nested != [Outcome(False, "SESSION-APPEND-COMMIT.4")]:
        return f"an observer's nested append was {nested[0].describe() if nested else 'never attempted'}"
    return None


def _returned_views_are_immutable(reference: View, actual: View, session: Any, factory: Callable[..., Any]) -> str | None:
    """SESSION-IMMUTABILITY: the events, nodes and messages handed out cannot be changed by the caller."""
    for name, value in (("events", session.events), ("surface nodes", session.surface.nodes),
                        ("derived messages", session.derive_messages())):
        try:
            value.append(None)
        except (TypeError, AttributeError):
            continue
        return f"the returned {name} accepted a mutation"
    return None


Invariant = Callable[[View, View, Any, Callable[..., Any]], "str | None"]
INVARIANTS: tuple[tuple[str, Invariant], ...] = (
    ("impl-matches-model", _same_views),
    ("surface-is-fold-of-log", _surface_is_own_fold),
    ("nodes-are-unique-surface-events", _nodes_are_unique_surface_events),
    ("fresh-rebuild-agrees", _fresh_rebuild_agrees),
    ("returned-views-are-immutable", _returned_views_are_immutable),
)
"""Checked on every distinct state. Outcome agreement, unchanged-on-rejection and snapshot
stability are checked on every transition."""


def check_state(reference: View, actual: View, session: Any, factory: Callable[..., Any]) -> tuple[str, str] | None:
    for name, invariant in INVARIANTS:
        try:
            problem = invariant(reference, actual, session, factory)
        except Exception as error:
            problem = f"raised {error!r}"
        if problem is not None:
            return name, problem
    return None


# --- the search ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Rebuild:
    """How to rebuild a state on the frontier: the implementation's recipe and the model's log."""

    seed: Json
    appends: tuple[Request, ...]
    events: tuple[Event, ...]
    header: Any
    first_live_seq: int
    view: View


@dataclass(slots=True)
class State:
    """A distinct state: how it was reached, and (while on the frontier) how to rebuild it."""

    parent: int
    label: str | None
    rebuild: Rebuild | None


@dataclass(slots=True)
class Violation:
    invariant: str
    message: str
    depth: int
    labels: list[str]
    trace: list[Request]

    def to_json(self) -> dict[str, Json]:
        return {"invariant": self.invariant, "message": self.message, "depth": self.depth, "steps": self.labels,
                "trace": self.trace}


@dataclass(slots=True)
class Report:
    impl: str
    depth: int = 0
    distinct_states: int = 0
    transitions: int = 0
    seconds: float = 0.0
    levels: list[dict[str, Json]] = field(default_factory=list)
    violations: list[Violation] = field(default_factory=list)

    @property
    def states_per_second(self) -> float:
        return self.distinct_states / self.seconds if self.seconds > 0 else 0.0

    def to_json(self) -> dict[str, Json]:
        return {"impl": self.impl, "depth": self.depth, "distinct_states": self.distinct_states,
                "transitions": self.transitions, "states_per_second": round(self.states_per_second, 1),
                "seconds": round(self.seconds, 3), "levels": self.levels,
                "violations": [v.to_json() for v in self.violations]}


class Explorer:
    """Breadth-first search over the alphabet for one implementation against the reference model."""

    def __init__(self, impl: str = "live") -> None:
        self.impl = impl
        self.factory = impls.factory(impl)
        self.states: list[State] = []
        self.seen: set[bytes] = set()
        self.report = Report(impl)
        self.max_depth = 0
        self.rejected: list[Step] = []

    def _model_at(self, state: Rebuild) -> model.Session:
        return model.Session(SESSION_ID, state.header, list(state.events), state.first_live_seq, _clock, (veto,), ())

    def _impl_at(self, state: Rebuild) -> Any:
        session = create(self.factory, state.seed)
        for request in state.appends:
            outcome = append(session, request)
            if not outcome.accepted:
                raise RuntimeError(f"replay of an accepted append was {outcome.describe()}: {request}")
        return session

    def path(self, index: int, *last: Step) -> tuple[list[str], list[Request]]:
        """The labels and protocol requests from the empty session to state `index` (then `last`).

        States keep only their step's label (a reseed's request holds a whole log); the requests
        are found again by walking the labels on the reference model.
        """
        labels: list[str] = []
        while index >= 0:
            state = self.states[index]
            if state.label is not None:
                labels.append(state.label)
            index = state.parent
        labels.reverse()
        requests: list[Request] = [{"op": "create", "id": SESSION_ID, "seed": None, "header": None}]
        reference = create(model.Session.create, None)
        for label in labels:
            step = next(step for step in steps(reference) if step.label == label)
            requests.extend(step.requests)
            if step.requests[0]["op"] == "create":
                reference = create(model.Session.create, step.requests[0]["seed"])
            else:
                for request in step.requests:
                    append(reference, request)
        for step in last:
            labels.append(step.label)
            requests.extend(step.requests)
        return labels, requests

    def _violate(self, depth: int, parent: int, step: Step | None, invariant: str, message: str) -> None:
        # The rejected steps the sessions went through since they were last rebuilt are part of
        # the path: a rejection must change nothing, and an implementation that it did change
        # is caught only with them in the trace.
        labels, trace = self.path(parent, *self.rejected, *([] if step is None else [step]))
        self.report.violations.append(Violation(invariant, message, depth, labels, trace))

    def _add(self, parent: int, step: Step | None, seed: Json, appends: tuple[Request, ...], reference: Any,
             actual: Any, depth: int) -> int | None:
        """Record a successor; check the invariants if it is new. Returns its index if new."""
        reference_view, actual_view = observe(reference), observe(actual)
        key = state_key(reference_view, actual_view)
        if key in self.seen:
            return None
        self.seen.add(key)
        problem = check_state(reference_view, actual_view, actual, self.factory)
        if problem is not None:
            self._violate(depth, parent, step, *problem)
            return None
        # States at the last depth are never expanded: keep only their place in the path.
        rebuild = None if depth >= self.max_depth else Rebuild(
            seed, appends, tuple(reference.events), reference.header, reference.first_live_seq, actual_view)
        self.states.append(State(parent, None if step is None else step.label, rebuild))
        return len(self.states) - 1

    def run(self, depth: int, *, progress: Callable[[dict[str, Json]], None] | None = None) -> Report:
        started = time.perf_counter()
        report = self.report
        self.max_depth = depth
        reference, actual = create(model.Session.create, None), create(self.factory, None)
        first = self._add(-1, None, None, (), reference, actual, 0)
        frontier = [] if first is None else [first]
        for level in range(1, depth + 1):
            if report.violations or not frontier:
                break
            transitions_before, next_frontier = report.transitions, []
            for index in frontier:
                next_frontier.extend(self._expand(index, level))
                if report.violations:
                    break
            frontier = next_frontier
            report.depth = level
            report.distinct_states = len(self.seen)
            report.seconds = time.perf_counter() - started
            row: dict[str, Json] = {"depth": level, "new_states": len(frontier), "distinct_states": len(self.seen),
                                    "transitions": report.transitions - transitions_before,
                                    "seconds": round(report.seconds, 2)}
            report.levels.append(row)
            if progress is not None:
                progress(row)
        report.distinct_states = len(self.seen)
        report.seconds = time.perf_counter() - started
        return report

    def _expand(self, index: int, depth: int) -> list[int]:
        state = self.states[index].rebuild
        assert state is not None, "a state is expanded once"
        self.states[index].rebuild = None  # expanded states keep only their place in the path
        reference, actual = self._model_at(state), self._impl_at(state)
        self.rejected = []
        children: list[int] = []
        for step in list(steps(reference)):
            self.report.transitions += 1
            if step.requests[0]["op"] == "create":
                saved, self.rejected = self.rejected, []
                child = self._reseed(index, step, depth)
                self.rejected = saved
            else:
                child, dirty = self._append_step(index, state, step, reference, actual, depth)
                if dirty:
                    reference, actual = self._model_at(state), self._impl_at(state)
                    self.rejected = []
                else:
                    self.rejected.append(step)
            if child is not None:
                children.append(child)
            if self.report.violations:
                break
        return children

    def _reseed(self, index: int, step: Step, depth: int) -> int | None:
        seed = step.requests[0]["seed"]
        try:
            reference = create(model.Session.create, seed)
        except SpecViolation as violation:
            self._violate(depth, index, step, "seed-accepts-own-log", f"the model rejects its own log: {violation}")
            return None
        try:
            actual = create(self.factory, seed)
        except Exception as error:
            self._violate(depth, index, step, "same-outcome", f"model accepted the seed, impl raised {error!r}")
            return None
        return self._add(index, step, seed, (), reference, actual, depth)

    def _append_step(self, index: int, state: Rebuild, step: Step, reference: Any, actual: Any,
                     depth: int) -> tuple[int | None, bool]:
        """Apply the step's appends to both sides. Returns (new child, whether the sessions changed)."""
        held = actual.events
        for position, request in enumerate(step.requests):
            expected, got = append(reference, request), append(actual, request)
            changed = position > 0 or expected.accepted or got.accepted
            if expected.crash is not None or got.crash is not None or expected != got:
                self._violate(depth, index, step, "same-outcome",
                              f"request {position}: model {expected.describe()}, impl {got.describe()}")
                return None, changed
            if not expected.accepted:
                if step.label == "repair":
                    self._violate(depth, index, step, "closers-are-appendable",
                                  f"closer {position} was {expected.describe()}")
                    return None, changed
                after = observe(actual)
                if after != state.view:
                    self._violate(depth, index, step, "unchanged-on-rejection",
                                  "the implementation changed after a rejected append: "
                                  + (_same_views(state.view, after, actual, self.factory) or "views differ"))
                return None, changed
        if _canonical([event.to_json() for event in held]) != state.view.events:
            self._violate(depth, index, step, "snapshots-never-change", "an events list returned earlier changed later")
            return None, True
        appends = state.appends + step.requests
        return self._add(index, step, state.seed, appends, reference, actual, depth), True


def explore(depth: int, impl: str = "live", *, progress: Callable[[dict[str, Json]], None] | None = None) -> Report:
    """Explore every state within `depth` steps of the empty session for `impl`."""
    return Explorer(impl).run(depth, progress=progress)


# --- Informal Trace Format -------------------------------------------------------------------


def _itf_value(value: Json) -> Json:
    """A JSON value in ITF: records stay objects, arrays are sequences; null and floats have no ITF form."""
    if value is None or isinstance(value, float):
        return {"#unserializable": repr(value)}
    if isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return value if abs(value) < 2**53 else {"#bigint": str(value)}
    if isinstance(value, dict):
        return {key: _itf_value(child) for key, child in value.items()}
    return [_itf_value(child) for child in value]


def to_itf(violation: Violation, impl: str = "live") -> dict[str, Json]:
    """The violation's trace as an ITF document (https://apalache-mc.org/docs/adr/015adr-trace.html).

    One ITF state per request: the reference model's log, surface and first live seq after it,
    the implementation's surface beside it, and what each side did.
    """
    factory = impls.factory(impl)
    reference: Any = None
    actual: Any = None
    states: list[Json] = []
    for index, request in enumerate(violation.trace):
        if request["op"] == "create":
            ref_outcome, impl_outcome = "accepted", "accepted"
            reference = create(model.Session.create, request["seed"])
            try:
                actual = create(factory, request["seed"])
            except Exception as error:
                impl_outcome = f"raised {error!r}"
        else:
            ref_outcome = append(reference, request).describe()
            impl_outcome = append(actual, request).describe()
        surface = reference.surface
        impl_surface = actual.surface
        states.append({
            "#meta": {"index": index},
            "request": _itf_value(request),
            "events": _itf_value([thaw(event.to_json()) for event in reference.events]),
            "nodes": list(surface.nodes),
            "replaceGeneration": surface.replace_generation,
            "firstLiveSeq": reference.first_live_seq,
            "implNodes": list(impl_surface.nodes),
            "implReplaceGeneration": impl_surface.replace_generation,
            "modelOutcome": ref_outcome,
            "implOutcome": impl_outcome,
        })
    return {
        "#meta": {"format": "ITF", "format-description": "https://apalache-mc.org/docs/adr/015adr-trace.html",
                  "source": f"sessionspec explore --impl {impl}",
                  "description": f"{violation.invariant}: {violation.message}"},
        "vars": ["request", "events", "nodes", "replaceGeneration", "firstLiveSeq", "implNodes",
                 "implReplaceGeneration", "modelOutcome", "implOutcome"],
        "states": states,
    }
