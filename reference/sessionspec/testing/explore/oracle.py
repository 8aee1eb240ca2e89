"""The reference model's side of the search: its state, and its answers remembered by what they read.

The oracle is `sessionspec.model`, deliberately naive: every append refolds the whole log. Most
of what it is asked it has already answered in another state, because an append reads much less
than the log. The model's append (`transaction.SessionCore._append`, spec/04's check order, with the
model's parts: `snapshot`, `build_event`, `check_content`, and `plan` on `fold(log)`) reads, besides
the request and the constant clock:

- `len(log)`, the candidate's seq (SESSION-APPEND-COMMIT.1, SESSION-SURFACE-PROVENANCE.5);
- `fold(log).nodes`, the surface the plan is made on (SESSION-SURFACE-REPLACE.1, .2,
  SESSION-SURFACE-PROVENANCE.6);
- `log[start]` when a `tool/result` replacement shadows the node `start`
  (`surface.check_tool_result_rewrite`, SESSION-SURFACE-TOOL-RESULT.2, .3);
- the validators: the one `veto` hook, which reads only the request's `x-validator`.

Nothing else: the busy flag is clear between appends, the model has no observers here, and a
rejection changes nothing (the model's `unchanged_on_rejection`). So the outcome, the logged event
(`build_event` of the request and the seq) and the new surface are a function of the key (request,
seq, nodes, the event at `start` when `start` is a node): `fold(log + [e]).nodes ==
apply(nodes, plan(nodes, log, e))` is the definition of `fold`, which
`proofs/obligations_surface.fold_prefix_then_one` states, and the plan reads nothing else. The
other views of the successor follow from it and from the state's own views:

- messages: `project` of the events at the new nodes (SESSION-READ-VIEWS.2), as the canonical
  list of each event's canonical message, remembered per interned event;
- replace generation: the state's, plus one if e's plan is a replacement (SESSION-SURFACE-REPLACE.4);
- transcript: the state's, plus e if it entered by append (`views.transcript` filters the log in
  order); the log's bytes: the state's, with e's appended;
- request header and context: the state's, unless e is a `request/header` or `request/context`
  event, the only events `RequestHeaderFold` reads; the header: the state's (seeding and appends
  never change it).

The first time a key is seen, the model itself runs and every view of its result is computed from
the whole log (`Oracle.of`); later the remembered answer is used. `verify=True` runs the model and
the full recomputation every time and raises if a remembered answer differs (`tests/test_proofs.py`
does so to depth 4). A seeded session is always the model's own: seeding reads the whole seed.
"""

from __future__ import annotations

from typing import NamedTuple

from sessionspec import model
from sessionspec.catalog import END_SEED, REQUEST_HEADER
from sessionspec.envelope import Event
from sessionspec.errors import SpecViolation
from sessionspec.jsonvalue import FrozenDict, Json
from sessionspec.requestheader import REQUEST_CONTEXT, fold_request_context, fold_request_header
from sessionspec.surface import fold
from sessionspec.testing.explore.alphabet import SESSION_ID, Request
from sessionspec.testing.explore.observation import View, canonical, envelope_json
from sessionspec.testing.explore.sessions import Outcome, constant_clock, create, model_append, veto
from sessionspec.views import is_append_origin, project, project_all, transcript


def _session(header: FrozenDict, log: tuple[Event, ...], first_live_seq: int) -> model.Session:
    """A model session whose log is `log`: the state the model would be in after building it."""
    session = model.Session(SESSION_ID, header, constant_clock, (veto,), ())
    session._log.extend(log)  # the model keeps nothing but its log (and reads it whole on every call)
    session._first_live_seq = first_live_seq
    return session


def _entry_ok(header: FrozenDict, log: tuple[Event, ...], event: Event) -> bool:
    """Whether the model's seed check accepts `event` as the seed entry after `log` (`SessionCore._accept_seed_event`)."""
    try:
        _session(header, log, 0)._accept_seed_event(event.to_json(), event.seq)
    except SpecViolation:
        return False
    return True


class Reference(NamedTuple):
    """The reference model in one state: its log (interned events) and every view of it."""

    log: tuple[Event, ...]
    log_bytes: bytes
    nodes: tuple[int, ...]
    replace_generation: int
    messages: bytes
    transcript: tuple[int, ...]
    first_live_seq: int
    header: bytes
    request_header: bytes
    request_context: bytes
    seed_ok: bool
    """Every event of the log passes the model's check of a seed entry in its place (`_accept_seed_event`)."""

    def view(self) -> View:
        # tuple.__new__: a NamedTuple's own __new__ is Python, and this runs on every transition.
        return tuple.__new__(View, (self.log_bytes, self.nodes, self.replace_generation, self.messages, self.transcript,
                                    self.first_live_seq, len(self.log), self.header, self.request_header,
                                    self.request_context))


class _Answer(NamedTuple):
    """What the model did with one request in every state with the same key (see the module docstring)."""

    outcome: Outcome
    event: Event | None
    nodes: tuple[int, ...] = ()
    replaced: bool = False
    entry_ok: bool = False


class Oracle:
    """The model's answers for one search: runs the model on a key it has not seen, remembers the answer."""

    MAX_ANSWERS = 2_000_000
    """Remembered answers are dropped, all at once, beyond this many (a few hundred MB)."""

    def __init__(self, *, verify: bool = False) -> None:
        self.verify = verify
        self.header: FrozenDict = create(model.Session.create, None).header
        self._events: dict[bytes, Event] = {}
        self._event_bytes: dict[int, bytes] = {}
        self._message_bytes: dict[int, bytes | None] = {}
        self._markers: dict[int, bool] = {}
        self._answers: dict[tuple[object, ...], _Answer] = {}
        self.hits = 0
        self.runs = 0
        self.verified = 0

    # --- states from the model itself ----------------------------------------------------------

    def start(self) -> Reference:
        """The empty session."""
        return self.of(create(model.Session.create, None), seed_ok=True)

    def seeded(self, seed: Json) -> Reference:
        """A session seeded with `seed` (raises the model's SpecViolation if it rejects the seed).

        Seeding runs without the model's contracts, as `model_append` does: they hold the model to
        itself (its own tests run them), and they were most of the cost of a reseed.
        """
        session = model.Session._new(SESSION_ID, seed, None, constant_clock, (veto,), ())
        return self.of(session, seed_ok=True)

    def reseeded(self, state: Reference, seed: Json) -> Reference:
        """The model seeded with the log of `state` (the reseed letter's `seed`), as `seeded` would answer.

        `Session.create` checks each seed entry with `_accept_seed_event`, which reads the entry,
        the nodes before it and the event a tool/result rewrite replaces, as an append does; its
        verdict for each event of the log was taken when the event entered the log
        (`Reference.seed_ok`). The seeded log is the state's with the marker after it unless it
        ends in one (SESSION-SEED-ACCEPTANCE.3), and the marker, a log-only event, changes no
        view. Raises the model's SpecViolation if it rejects the seed.
        """
        log = state.log
        marker_ok = True
        if not log or log[-1].type != END_SEED:
            marker = self.intern(Event(END_SEED, len(log), constant_clock(), FrozenDict()))
            marker_ok = self._marker_ok(state, marker)
            log = (*log, marker)
        derived = state._replace(log=log, log_bytes=self._log_bytes(log), first_live_seq=len(state.log),
                                 seed_ok=state.seed_ok and marker_ok)
        if state.seed_ok and not self.verify:
            return derived
        real = self.seeded(seed)  # raises if the model rejects the seed
        if not state.seed_ok or real._replace(seed_ok=derived.seed_ok) != derived:
            raise AssertionError(f"a derived reseed differs from the model's, seed {seed}")
        self.verified += 1
        return derived

    def of(self, session: model.Session, *, seed_ok: bool) -> Reference:
        """Every view of a model session, computed from its whole log (one fold)."""
        log = tuple(self.intern(event) for event in session._log)
        folded = fold(log)
        return Reference(log, self._log_bytes(log), tuple(folded.nodes), len(folded.replacements),
                         canonical(project_all(log, folded.nodes)), tuple(event.seq for event in transcript(log)),
                         session.first_live_seq, canonical(session.header), canonical(session.request_header()),
                         canonical(session.request_context()), seed_ok)

    def session(self, state: Reference) -> model.Session:
        """A model session in `state`, to run one request on."""
        return _session(self.header, state.log, state.first_live_seq)

    # --- one request -----------------------------------------------------------------------------

    def step(self, state: Reference, request: Request, encoded: bytes | None = None) -> tuple[Outcome, Reference | None]:
        """The model's outcome for `request` in `state` (`encoded`: its canonical bytes), and its next state when it accepts."""
        key = (encoded or canonical(request), len(state.log), state.nodes, self._target(state, request))
        known = self._answers.get(key)
        if known is not None and not self.verify:
            self.hits += 1
            return known.outcome, self._successor(state, known)
        outcome, after, entry_ok = self._run(state, request)
        if known is not None:
            if (known.outcome, self._successor(state, known)) != (outcome, after) or known.entry_ok != entry_ok:
                raise AssertionError(f"a remembered model answer differs from the model's for {request} in {state.nodes}")
            self.verified += 1
        if known is None:
            if len(self._answers) >= self.MAX_ANSWERS:
                self._answers.clear()
            self._answers[key] = self._remember(state, outcome, after, entry_ok)
        return outcome, after

    @staticmethod
    def _target(state: Reference, request: Request) -> int | None:
        """The event a replacement's plan may read (a tool/result rewrite reads its one shadowed node), by identity."""
        op = request.get("surfaceOp")
        if isinstance(op, dict) and op.get("start") in state.nodes:
            return id(state.log[op["start"]])
        return None

    def _run(self, state: Reference, request: Request) -> tuple[Outcome, Reference | None, bool]:
        """The model itself on `request`: its outcome, its next state, and its seed-entry verdict on the logged event."""
        self.runs += 1
        session = self.session(state)
        outcome = model_append(session, request)
        if not outcome.accepted:
            return outcome, None, False
        entry_ok = _entry_ok(self.header, state.log, session._log[-1])
        return outcome, self.of(session, seed_ok=state.seed_ok and entry_ok), entry_ok

    @staticmethod
    def _remember(state: Reference, outcome: Outcome, after: Reference | None, entry_ok: bool) -> _Answer:
        if after is None:
            return _Answer(outcome, None)
        return _Answer(outcome, after.log[-1], after.nodes, after.replace_generation != state.replace_generation,
                       entry_ok)

    def _marker_ok(self, state: Reference, marker: Event) -> bool:
        """The model's seed-entry verdict on a marker after the state's log; the marker is log-only, so it reads the seq only."""
        known = self._markers.get(id(marker))
        if known is None:
            known = self._markers[id(marker)] = _entry_ok(self.header, state.log, marker)
        return known

    def _successor(self, state: Reference, answer: _Answer) -> Reference | None:
        event = answer.event
        if event is None:
            return None
        encoded = self._event_bytes[id(event)]
        log_bytes = state.log_bytes[:-1] + (b"," if state.log else b"") + encoded + b"]"
        log = (*state.log, event)
        appended = is_append_origin(event)
        messages = self._messages(state, answer, log, appended)
        order = (*state.transcript, event.seq) if appended else state.transcript
        request_header, request_context = state.request_header, state.request_context
        if event.type in (REQUEST_HEADER, REQUEST_CONTEXT):  # the only events the request fold reads
            request_header, request_context = canonical(fold_request_header(log)), canonical(fold_request_context(log))
        return tuple.__new__(Reference, (  # without the NamedTuple's Python __new__: once per accepted transition
            log, log_bytes, answer.nodes, state.replace_generation + answer.replaced, messages, order, state.first_live_seq, state.header, request_header, request_context,
            state.seed_ok and answer.entry_ok))

    def _messages(self, state: Reference, answer: _Answer, log: tuple[Event, ...], appended: bool) -> bytes:
        """The successor's messages: `project` of the events at its nodes, as the canonical list of each one's bytes.

        A log-only event leaves the nodes, so the messages, as they were; an append adds its node
        last, so its message (if it has one) last; only a replacement's are joined anew.
        """
        projected = self._message_bytes
        event = log[-1]
        if not answer.replaced:
            if not appended:
                return state.messages
            part = projected[id(event)]
            if part is None:
                return state.messages
            return state.messages[:-1] + b"," + part + b"]" if len(state.messages) > 2 else b"[" + part + b"]"
        parts = [part for part in (projected[id(log[node])] for node in answer.nodes) if part is not None]
        return b"[" + b",".join(parts) + b"]"

    # --- interning ---------------------------------------------------------------------------------

    def intern(self, event: Event) -> Event:
        """The one canonical copy of `event` (equal events, one object: a key can hold `id(event)`)."""
        encoded = self._event_bytes.get(id(event))
        if encoded is not None:
            return event
        encoded = canonical(envelope_json(event))
        interned = self._events.setdefault(encoded, event)
        self._event_bytes[id(interned)] = encoded
        message = project(interned)
        self._message_bytes[id(interned)] = None if message is None else canonical(message)
        return interned

    def _log_bytes(self, log: tuple[Event, ...]) -> bytes:
        return b"[" + b",".join(self._event_bytes[id(event)] for event in log) + b"]"
