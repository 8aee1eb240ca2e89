"""Bounded exhaustive exploration: every sequence of abstract operations up to a depth, TLC style.

Random testing samples the state space; this walks all of it up to a bound. From the empty
session, breadth first, every operation of a small alphabet is applied to the implementation
under test and to the reference model (`sessionspec.model`) side by side:

- append of each surface type (user, assistant, tool result) and of two log-only events (one ignorable);
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

What the search costs, and why it is built as it is (measurements in proofs/README.md):

- Nearly every accepted sequence is its own state: the log records order, so two letters that
  commute on the surface still make two logs. The state space is a tree of about 10 children per
  state for the full alphabet; there is no sound merging of its nodes short of forgetting part of
  the log, which the invariants read. Depth 7 of the full alphabet is about 3.8 million states.
  The `compact` alphabet (`ALPHABETS`) is the smaller one for depth 7: it is a bound on the
  alphabet (a TLC state constraint), not a reduction, and says so in every report.
- A frontier state is a recipe, not a live object: the model's log as a tuple of interned events
  and the implementation's seed and appends as a tuple of interned requests. Expanding it
  rebuilds the model from its log (a list copy) and the implementation by one replay, which is
  pickled (`freeze`); every step then runs on a fresh unpickling, a third of a replay's cost and
  a small fraction of a re-seed's. Done states keep only a parent index and a step label
  (`StateTable`); the visited set holds 16-byte digests.
- Views are compared as canonical JSON bytes made by orjson straight from the frozen values (no
  thaw), and the model's are computed from one fold, only for a state not seen before.
- The model runs without its contracts (`_model_append`): they check the model against itself,
  which its own tests do, and they were a third of the model's cost per append.
- Two invariants moved from states to transitions, where they cost nothing extra: the reentrancy
  guard is probed by an observer on every session (`NestedAppend`) after every accepted append,
  and `fresh-rebuild-agrees` is the reseed letter's check (a session seeded with a state's log
  shows that state's surface and messages). A state at the last depth has no successors, so it
  is not re-seeded, as no other letter is applied to it.
"""

from __future__ import annotations

import hashlib
import io
import pickle
import time
import types
from array import array
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from sessionspec import model
from sessionspec.catalog import TOOL_RESULT
from sessionspec.envelope import Event, Replace, append_request_parts
from sessionspec.errors import SpecViolation
from sessionspec.jsonvalue import FrozenDict, FrozenList, Json, thaw
from sessionspec.surface import fold
from sessionspec.testing import implementations as impls
from sessionspec.views import project_all, transcript

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


ALPHABETS = ("full", "compact")
"""`full`: every letter below. `compact`: the smaller alphabet that reaches depth 7 in the time
budget (proofs/README.md): one log-only letter whose kind alternates, a tool/result only while a
tool call is unanswered, and replace ranges of at most two nodes."""


def default_alphabet(depth: int) -> str:
    """`full` up to depth 6; `compact` beyond, where the full alphabet's ~10x growth per depth does not fit."""
    return "full" if depth <= 6 else "compact"


def _log_only_letters(events: Sequence[Event], alphabet: str) -> list[Step]:
    turn = Step("append turn/start (log-only)", (append_request("turn/start", {"turn": 1}),))
    title = Step("append session/title (log-only, ignorable)",
                 ({**append_request("session/title", {"title": "t"}), "ignorable": True},))
    if alphabet == "full":
        return [turn, title]
    # Log-only events are interchangeable on the surface: one letter, alternating between the
    # two kinds, so both kinds (and the ignorable flag) still occur, in every position.
    logged = sum(1 for event in events if event.type in ("turn/start", "session/title"))
    return [turn if logged % 2 == 0 else title]


def _tool_result_offered(events: Sequence[Event], alphabet: str) -> bool:
    if alphabet == "full":
        return True
    calls = sum(1 for event in events if event.type == "assistant/message")
    results = sum(1 for event in events if event.type == TOOL_RESULT and event.surface_op == "append")
    return calls > results


def steps(session: Any, alphabet: str = "full") -> Iterator[Step]:
    """Every operation the alphabet offers in the state of the reference `session`."""
    events: Sequence[Event] = session.events
    nodes = list(session.surface.nodes)
    span = len(nodes) if alphabet == "full" else 1
    yield Step("append user/message", (append_request("user/message", user_message(), "append"),))
    yield Step("append assistant/message", (append_request("assistant/message", assistant_message(), "append"),))
    if _tool_result_offered(events, alphabet):
        yield Step("append tool/result", (append_request(TOOL_RESULT, tool_result(), "append"),))
    yield from _log_only_letters(events, alphabet)
    # The vetoed letters come just before the replaces: a rejected step leaves the sessions as
    # they are, so the replaces after it run on a session that has just seen a veto.
    yield Step("append turn/start (vetoed)", (append_request("turn/start", {"turn": 1, "veto": True}),))
    if nodes:
        vetoed = {**user_message("v", "vetoed summary"), "veto": True}
        yield Step(f"replace {nodes[0]}..{nodes[-1]} (vetoed)",
                   (append_request("user/message", vetoed, _replace(nodes[0], nodes[-1]), nodes),))
    for first, start in enumerate(nodes):
        for last, end in enumerate(nodes):
            if abs(last - first) > span:
                continue
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


NESTED_REJECTED = Outcome(False, "SESSION-APPEND-COMMIT.4")


def veto(session: Any, candidate: Event) -> None:
    """The explorer's one precommit validator: it vetoes any event whose data says `"veto": true`.

    A vetoed event passed every check and was planned; the implementation must drop the plan
    with it (SESSION-APPEND-COMMIT.2). The protocol has no validators, so a testee replaying a
    trace accepts such an append; the explorer's own replay does not.
    """
    if isinstance(candidate.data, dict) and candidate.data.get("veto") is True:
        raise RuntimeError("vetoed by the explorer")


def create(factory: Callable[..., Any], seed: Json, observers: Sequence[Callable[[Any, Event], object]] = ()) -> Any:
    return factory(SESSION_ID, seed=seed, header=None, clock=_clock, validators=[veto], observers=observers)


def append(session: Any, request: Request) -> Outcome:
    try:
        session.append_request(request)
    except SpecViolation as violation:
        return Outcome(False, violation.rule)
    except Exception as error:
        return Outcome(False, crash=repr(error))
    return Outcome(True)


def _model_append(reference: model.Session, request: Request) -> Outcome:
    """An append on the reference model without its contracts.

    The contracts hold the model to itself, and the model's own tests run them; here the model is
    the oracle, and its contracts (a refold and two projections per append) were a third of the
    model's cost per append.
    """
    try:
        reference._append(*append_request_parts(request))
    except SpecViolation as violation:
        return Outcome(False, violation.rule)
    except Exception as error:
        return Outcome(False, crash=repr(error))
    return Outcome(True)


class NestedAppend:
    """A postcommit observer on every session of the implementation: it tries one nested append.

    SESSION-APPEND-COMMIT.4: an append made from inside another must be rejected, whatever the
    state; the explorer checks what this observer saw after every accepted append. It is shared,
    not copied, when a session is copied.
    """

    def __init__(self) -> None:
        self.request: Request = {"op": "append", "type": "turn/start", "data": {"turn": 1}}
        self.outcomes: list[Outcome] = []
        self.armed = True

    def __call__(self, session: Any, event: Event) -> None:
        if not self.armed:
            return
        self.armed = False
        try:
            self.outcomes.append(append(session, self.request))
        finally:
            self.armed = True


_SHARED = (Event, FrozenDict, FrozenList, NestedAppend, types.FunctionType, types.BuiltinFunctionType)


class _Pickler(pickle.Pickler):
    """Pickles a session by value, except what is immutable or shared: those travel by reference."""

    def __init__(self, out: io.BytesIO, shared: list[object]) -> None:
        super().__init__(out, protocol=pickle.HIGHEST_PROTOCOL)
        self.shared = shared

    def persistent_id(self, obj: object) -> int | None:
        if isinstance(obj, _SHARED):
            self.shared.append(obj)
            return len(self.shared) - 1
        return None


class _Unpickler(pickle.Unpickler):
    def __init__(self, data: io.BytesIO, shared: list[object]) -> None:
        super().__init__(data)
        self.shared = shared

    def persistent_load(self, pid: Any) -> object:
        return self.shared[pid]


Frozen = tuple[bytes, list[object]]
"""A pickled session and the shared objects its pickle refers to."""


def freeze(session: Any) -> Frozen:
    shared: list[object] = []
    out = io.BytesIO()
    _Pickler(out, shared).dump(session)
    return out.getvalue(), shared


def thaw_frozen(frozen: Frozen) -> Any:
    """A new, independent session from a frozen one; each call makes another."""
    data, shared = frozen
    return _Unpickler(io.BytesIO(data), shared).load()


def clone(session: Any) -> Any:
    """An independent copy of a session: its own lists and caches, sharing events, frozen JSON and functions."""
    return thaw_frozen(freeze(session))


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


def _canonical(value: Any) -> bytes:
    """Canonical JSON bytes: sorted keys, no spaces. orjson reads frozen containers as they are (no thaw)."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def _envelope(event: Any) -> Any:
    """`Event.to_json()` without copying the frozen data: the same bytes once canonicalised."""
    if type(event) is not Event:
        return event.to_json()
    out: dict[str, Any] = {"type": event.type, "seq": event.seq, "time": event.time, "data": event.data}
    if event.source_event_seqs is not None:
        out["sourceEventSeqs"] = event.source_event_seqs
    op = event.surface_op
    if op is not None:
        out["surfaceOp"] = op.to_json() if isinstance(op, Replace) else op
    if event.ignorable:
        out["ignorable"] = True
    return out


def events_bytes(events: Sequence[Any]) -> bytes:
    return _canonical([_envelope(event) for event in events])


def observe(session: Any) -> View:
    surface = session.surface
    return View(
        events=events_bytes(session.events),
        nodes=tuple(surface.nodes),
        replace_generation=surface.replace_generation,
        messages=_canonical(session.derive_messages()),
        transcript=tuple(event.seq for event in session.transcript()),
        first_live_seq=session.first_live_seq,
        seq=session.seq,
    )


def state_key(model_log: bytes, first_live_seq: int, actual: View) -> bytes:
    """The 128-bit digest of a state: the model's log and first live seq, and the implementation's views.

    The model's other views are functions of its log, so they add nothing to the key.
    """
    digest = hashlib.blake2b(model_log, digest_size=16)
    digest.update(repr((first_live_seq, actual.nodes, actual.replace_generation, actual.transcript,
                        actual.first_live_seq, actual.seq)).encode())
    digest.update(actual.events)
    digest.update(actual.messages)
    return digest.digest()


# --- the invariants --------------------------------------------------------------------------


def _same_views(reference: View, actual: View, session: Any) -> str | None:
    for name in ("events", "nodes", "replace_generation", "messages", "transcript", "first_live_seq", "seq"):
        if getattr(reference, name) != getattr(actual, name):
            return f"{name} differs: model {_show(getattr(reference, name))} != impl {_show(getattr(actual, name))}"
    return None


def _show(value: object) -> str:
    text = value.decode() if isinstance(value, bytes) else repr(value)
    return text if len(text) <= 300 else text[:300] + "..."


def _surface_is_own_fold(reference: View, actual: View, session: Any) -> str | None:
    """The surface is the fold of the implementation's own log.

    Implied when the logs are equal (the fold is a function of the log, and `impl-matches-model`
    has compared the surfaces): folded only when they differ.
    """
    if actual.events == reference.events:
        return None
    folded = fold(session.events).surface
    if tuple(folded.nodes) != actual.nodes or folded.replace_generation != actual.replace_generation:
        return f"surface {actual.nodes} is not the fold of its own log {tuple(folded.nodes)}"
    return None


def _nodes_are_unique_surface_events(reference: View, actual: View, session: Any) -> str | None:
    events = session.events
    if len(set(actual.nodes)) != len(actual.nodes):
        return f"surface nodes repeat: {actual.nodes}"
    stray = [n for n in actual.nodes if not 0 <= n < len(events) or events[n].surface_op is None]
    return f"surface nodes {stray} are not surface events of the log" if stray else None


def _returned_views_are_immutable(reference: View, actual: View, session: Any) -> str | None:
    """SESSION-IMMUTABILITY: the events, nodes and messages handed out cannot be changed by the caller."""
    for name, value in (("events", session.events), ("surface nodes", session.surface.nodes),
                        ("derived messages", session.derive_messages())):
        try:
            value.append(None)
        except (TypeError, AttributeError):
            continue
        return f"the returned {name} accepted a mutation"
    return None


Invariant = Callable[[View, View, Any], "str | None"]
INVARIANTS: tuple[tuple[str, Invariant], ...] = (
    ("impl-matches-model", _same_views),
    ("surface-is-fold-of-log", _surface_is_own_fold),
    ("nodes-are-unique-surface-events", _nodes_are_unique_surface_events),
    ("returned-views-are-immutable", _returned_views_are_immutable),
)
"""Checked on every distinct state. Outcome agreement, unchanged-on-rejection, snapshot stability
and the nested-append guard are checked on every transition, `fresh-rebuild-agrees` on every
reseed transition."""


def check_state(reference: View, actual: View, session: Any) -> tuple[str, str] | None:
    for name, invariant in INVARIANTS:
        try:
            problem = invariant(reference, actual, session)
        except Exception as error:
            problem = f"raised {error!r}"
        if problem is not None:
            return name, problem
    return None


# --- the search ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Frontier:
    """A state to expand at the next depth, as the recipe that rebuilds both sides.

    The implementation is rebuilt by `seed` (the last reseed on the path, or None) and `appends`;
    the model from `events`, its log. Events and requests are interned, so a frontier state costs
    two tuples of references.
    """

    index: int
    seed: Json
    appends: tuple[Request, ...]
    events: tuple[Event, ...]
    first_live_seq: int


class StateTable:
    """Every distinct state, as its parent's index and the label of the step that reached it."""

    __slots__ = ("_ids", "_labels", "_parents", "_steps")

    def __init__(self) -> None:
        self._parents = array("q")
        self._steps = array("q")
        self._labels: list[str | None] = []
        self._ids: dict[str | None, int] = {}

    def add(self, parent: int, label: str | None) -> int:
        step = self._ids.get(label)
        if step is None:
            step = self._ids[label] = len(self._labels)
            self._labels.append(label)
        self._parents.append(parent)
        self._steps.append(step)
        return len(self._parents) - 1

    def __len__(self) -> int:
        return len(self._parents)

    def labels(self, index: int) -> list[str]:
        """The labels of the steps from the empty session to state `index`."""
        labels: list[str] = []
        while index >= 0:
            label = self._labels[self._steps[index]]
            if label is not None:
                labels.append(label)
            index = self._parents[index]
        labels.reverse()
        return labels


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
    alphabet: str = "full"
    depth: int = 0
    distinct_states: int = 0
    transitions: int = 0
    seconds: float = 0.0
    """CPU seconds (time.process_time) of the search."""
    levels: list[dict[str, Json]] = field(default_factory=list)
    violations: list[Violation] = field(default_factory=list)

    @property
    def states_per_second(self) -> float:
        return self.distinct_states / self.seconds if self.seconds > 0 else 0.0

    def to_json(self) -> dict[str, Json]:
        return {"impl": self.impl, "alphabet": self.alphabet, "depth": self.depth, "distinct_states": self.distinct_states,
                "transitions": self.transitions, "states_per_second": round(self.states_per_second, 1),
                "seconds": round(self.seconds, 3), "levels": self.levels,
                "violations": [v.to_json() for v in self.violations]}


class Explorer:
    """Breadth-first search over the alphabet for one implementation against the reference model."""

    def __init__(self, impl: str = "live", alphabet: str = "full") -> None:
        if alphabet not in ALPHABETS:
            raise KeyError(f"unknown alphabet {alphabet!r}; known: {', '.join(ALPHABETS)}")
        self.impl = impl
        self.alphabet = alphabet
        self.factory = impls.factory(impl)
        self.states = StateTable()
        self.seen: set[bytes] = set()
        self.report = Report(impl, alphabet)
        self.max_depth = 0
        self.rejected: list[Step] = []
        self.nested = NestedAppend()
        self.header: Any = None
        self._events: dict[bytes, Event] = {}
        self._event_bytes: dict[int, bytes] = {}
        self._requests: dict[bytes, Request] = {}
        self._copies = True

    # --- rebuilding states ---------------------------------------------------------------------

    def _new_impl(self, seed: Json) -> Any:
        return create(self.factory, seed, [self.nested])

    def _model_at(self, state: Frontier) -> model.Session:
        session = model.Session(SESSION_ID, self.header, _clock, (veto,), ())
        session._log.extend(state.events)  # an accepted state: the model rereads the whole log on every call anyway
        session._first_live_seq = state.first_live_seq
        return session

    def _impl_at(self, state: Frontier) -> Any:
        """The implementation in `state`, replayed; the nested-append probe is off (these appends were checked)."""
        self.nested.armed = False
        try:
            session = self._new_impl(state.seed)
            for request in state.appends:
                outcome = append(session, request)
                if not outcome.accepted:
                    raise RuntimeError(f"replay of an accepted append was {outcome.describe()}: {request}")
        finally:
            self.nested.armed = True
        return session

    def _working_copies(self, state: Frontier) -> tuple[View, Callable[[], Any]]:
        """The view of the implementation in `state`, and a source of fresh copies of it to run steps on.

        The state is replayed once and pickled (`freeze`); each copy is one unpickling, a third
        of a replay at depth 6 and a small fraction of a re-seed. The pickle is taken before the
        views are read, so every copy starts with cold caches, as a replay would. An
        implementation that cannot be pickled is replayed for every copy.
        """
        pristine = self._impl_at(state)
        frozen = None
        if self._copies:
            try:
                frozen = freeze(pristine)
            except Exception:  # an implementation holding what pickle cannot copy: replay instead
                self._copies = False
        view = observe(pristine)
        if frozen is None:
            return view, lambda: self._impl_at(state)
        return view, lambda: thaw_frozen(frozen)

    def _log_bytes(self, log: list[Event]) -> bytes:
        """The model's log as canonical bytes; each event is interned (replaced by its one canonical copy)."""
        parts = []
        for position, event in enumerate(log):
            encoded = self._event_bytes.get(id(event))
            if encoded is None:
                encoded = _canonical(_envelope(event))
                canonical = self._events.setdefault(encoded, event)
                self._event_bytes[id(canonical)] = encoded
                log[position] = canonical
            parts.append(encoded)
        return b"[" + b",".join(parts) + b"]"

    def _interned(self, requests: tuple[Request, ...]) -> tuple[Request, ...]:
        return tuple(self._requests.setdefault(_canonical(request), request) for request in requests)

    # --- traces --------------------------------------------------------------------------------

    def path(self, index: int, *last: Step) -> tuple[list[str], list[Request]]:
        """The labels and protocol requests from the empty session to state `index` (then `last`).

        States keep only their step's label (a reseed's request holds a whole log); the requests
        are found again by walking the labels on the reference model.
        """
        labels = self.states.labels(index)
        requests: list[Request] = [{"op": "create", "id": SESSION_ID, "seed": None, "header": None}]
        reference = create(model.Session.create, None)
        for label in labels:
            step = next(step for step in steps(reference, self.alphabet) if step.label == label)
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

    # --- the search ----------------------------------------------------------------------------

    def _add(self, parent: int, step: Step | None, reference: model.Session, actual: Any, depth: int, seed: Json,
             appends: tuple[Request, ...]) -> Frontier | None:
        """Record a successor and check the invariants if it is new. Returns it if it is to be expanded."""
        log = reference._log
        model_log = self._log_bytes(log)
        actual_view = observe(actual)
        key = state_key(model_log, reference.first_live_seq, actual_view)
        if key in self.seen:
            return None
        self.seen.add(key)
        # The model's views, from one fold (the model's own properties would fold once each).
        folded = fold(log)
        reference_view = View(model_log, tuple(folded.nodes), len(folded.replacements),
                              _canonical(project_all(log, folded.nodes)), tuple(event.seq for event in transcript(log)),
                              reference.first_live_seq, len(log))
        problem = check_state(reference_view, actual_view, actual)
        if problem is not None:
            self._violate(depth, parent, step, *problem)
            return None
        index = self.states.add(parent, None if step is None else step.label)
        if depth >= self.max_depth:  # states at the last depth are never expanded
            return None
        return Frontier(index, seed, self._interned(appends), tuple(log), reference.first_live_seq)

    def run(self, depth: int, *, progress: Callable[[dict[str, Json]], None] | None = None) -> Report:
        started = time.process_time()
        report = self.report
        self.max_depth = depth
        reference, actual = create(model.Session.create, None), self._new_impl(None)
        self.header = reference.header
        first = self._add(-1, None, reference, actual, 0, None, ())
        frontier = [] if first is None else [first]
        for level in range(1, depth + 1):
            if report.violations or not frontier:
                break
            transitions_before, states_before, next_frontier = report.transitions, len(self.seen), []
            for state in frontier:
                next_frontier.extend(self._expand(state, level))
                if report.violations:
                    break
            frontier = next_frontier
            report.depth = level
            report.distinct_states = len(self.seen)
            report.seconds = time.process_time() - started
            row: dict[str, Json] = {"depth": level, "new_states": len(self.seen) - states_before,
                                    "distinct_states": len(self.seen),
                                    "transitions": report.transitions - transitions_before,
                                    "seconds": round(report.seconds, 2)}
            report.levels.append(row)
            if progress is not None:
                progress(row)
        report.distinct_states = len(self.seen)
        report.seconds = time.process_time() - started
        return report

    def _expand(self, state: Frontier, depth: int) -> list[Frontier]:
        view, copies = self._working_copies(state)
        reference, actual = self._model_at(state), copies()
        self.rejected = []
        children: list[Frontier] = []
        for step in list(steps(reference, self.alphabet)):
            self.report.transitions += 1
            if step.requests[0]["op"] == "create":
                saved, self.rejected = self.rejected, []
                child = self._reseed(state, view, step, depth)
                self.rejected = saved
            else:
                child, dirty = self._append_step(state, view, step, reference, actual, depth)
                if dirty:
                    reference, actual = self._model_at(state), copies()
                    self.rejected = []
                else:
                    self.rejected.append(step)
            if child is not None:
                children.append(child)
            if self.report.violations:
                break
        return children

    def _reseed(self, state: Frontier, view: View, step: Step, depth: int) -> Frontier | None:
        """Reseed, and check `fresh-rebuild-agrees`: the seeded session shows the surface and messages it was seeded from."""
        seed = step.requests[0]["seed"]
        try:
            reference = create(model.Session.create, seed)
        except SpecViolation as violation:
            self._violate(depth, state.index, step, "seed-accepts-own-log", f"the model rejects its own log: {violation}")
            return None
        try:
            actual = self._new_impl(seed)
        except Exception as error:
            self._violate(depth, state.index, step, "same-outcome", f"model accepted the seed, impl raised {error!r}")
            return None
        try:
            nodes, messages = tuple(actual.surface.nodes), _canonical(actual.derive_messages())
        except Exception as error:
            nodes, messages = (), repr(error).encode()
        if nodes != view.nodes or messages != view.messages:
            what = f"surface {nodes}, not {view.nodes}" if nodes != view.nodes else "different messages"
            self._violate(depth, state.index, step, "fresh-rebuild-agrees", f"a session seeded with this log has {what}")
            return None
        return self._add(state.index, step, reference, actual, depth, seed, ())

    def _append_step(self, state: Frontier, view: View, step: Step, reference: model.Session, actual: Any,
                     depth: int) -> tuple[Frontier | None, bool]:
        """Apply the step's appends to both sides. Returns (new child, whether the sessions changed)."""
        held = actual.events
        for position, request in enumerate(step.requests):
            expected, got = _model_append(reference, request), append(actual, request)
            changed = position > 0 or expected.accepted or got.accepted
            if expected.crash is not None or got.crash is not None or expected != got:
                self._violate(depth, state.index, step, "same-outcome",
                              f"request {position}: model {expected.describe()}, impl {got.describe()}")
                return None, changed
            if self.nested.outcomes:
                nested, self.nested.outcomes[:] = self.nested.outcomes[:], []
                wrong = [outcome for outcome in nested if outcome != NESTED_REJECTED]
                if wrong:
                    self._violate(depth, state.index, step, "nested-append-rejected",
                                  f"an observer's nested append was {wrong[0].describe()}")
                    return None, True
            if not expected.accepted:
                if step.label == "repair":
                    self._violate(depth, state.index, step, "closers-are-appendable",
                                  f"closer {position} was {expected.describe()}")
                    return None, changed
                after = observe(actual)
                if after != view:
                    self._violate(depth, state.index, step, "unchanged-on-rejection",
                                  "the implementation changed after a rejected append: "
                                  + (_same_views(view, after, actual) or "views differ"))
                return None, changed
        if events_bytes(held) != view.events:
            self._violate(depth, state.index, step, "snapshots-never-change", "an events list returned earlier changed later")
            return None, True
        appends = state.appends + step.requests
        return self._add(state.index, step, reference, actual, depth, state.seed, appends), True


def explore(depth: int, impl: str = "live", *, alphabet: str | None = None,
            progress: Callable[[dict[str, Json]], None] | None = None) -> Report:
    """Explore every state within `depth` steps of the empty session for `impl` (alphabet: `default_alphabet`)."""
    return Explorer(impl, alphabet or default_alphabet(depth)).run(depth, progress=progress)


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
