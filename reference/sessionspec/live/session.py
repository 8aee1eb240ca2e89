"""The incremental Session: what a Python program uses as its session store.

Same API, same rules and the same errors as `sessionspec.model.Session`, which the stateful
machine holds it to, step by step. What differs is the cost: the model refolds the whole log on
every call, this one keeps

- one `SurfaceManager` (the ordered node list), to which each candidate is planned without
  changing it and the validated plan is applied on commit, never validated twice;
- a derived-message cache that projects each new node once and starts over only when
  `replace_generation` changes;
- snapshots of the events, the surface and the transcript, each built once and kept until an
  append changes it, so a returned sequence never changes (decision 5).

An append costs O(its own data), plus O(surface) for a replace; nothing on the append or derive
path reads the log as a whole. The hot path checks with `livecheck`, which hands anything not
plainly valid to the foundation's own checks, so every rejection is the reference's rejection.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sessionspec.catalog import END_SEED, REQUEST_HEADER, SURFACE_TYPES
from sessionspec.envelope import (
    Event,
    Replace,
    check_content,
    check_request_header,
    check_type,
    default_header,
    parse_event,
    validate_header,
)
from sessionspec.errors import SpecViolation, check, fail
from sessionspec.jsonvalue import MAX_SAFE_INTEGER, FrozenDict, FrozenList, Json
from sessionspec.live.fastpath import check_message, event_of, owned, request_parts
from sessionspec.live.surface import DerivedMessages, LivePlan, SurfaceManager
from sessionspec.model import Clock, Observer, ObserverFailure, Validator, wall_clock
from sessionspec.requestheader import REQUEST_CONTEXT, RequestHeaderFold
from sessionspec.surface import Surface

_MAX = MAX_SAFE_INTEGER
_REQUEST_TYPES = frozenset({REQUEST_HEADER, REQUEST_CONTEXT})


class Session:
    """One session: a header, an append-only log, and incrementally maintained views of it."""

    __slots__ = ("_busy", "_clock", "_derived", "_events_view", "_first_live_seq", "_header", "_id", "_log",
                 "_observer_failures", "_observers", "_requests", "_surface", "_transcript", "_transcript_view", "_validators")

    def __init__(self, session_id: str, header: FrozenDict, clock: Clock, validators: Sequence[Validator],
                 observers: Sequence[Observer]) -> None:
        self._id = session_id
        self._header = header
        self._log: list[Event] = []
        self._first_live_seq = 0
        self._clock = clock
        self._validators = list(validators)
        self._observers = list(observers)
        self._observer_failures: list[ObserverFailure] = []
        self._busy = False
        self._surface = SurfaceManager(self._log)
        self._derived = DerivedMessages(self._log, self._surface)
        self._transcript: list[Event] = []
        self._requests = RequestHeaderFold()
        self._events_view: FrozenList | None = None
        self._transcript_view: FrozenList | None = None

    # --- construction -------------------------------------------------------------------------

    @classmethod
    def create(
        cls,
        session_id: str,
        seed: Sequence[Event | Json] | None = None,
        header: Json = None,
        *,
        clock: Clock | None = None,
        validators: Sequence[Validator] = (),
        observers: Sequence[Observer] = (),
    ) -> Session:
        """SESSION-SEED-ACCEPTANCE: a new session, fresh or seeded with a prefix to replay."""
        clock = clock or wall_clock
        check(type(session_id) is str and session_id != "", "SESSION-FORMAT-HEADER.3",
              f"session id must be a non-empty string, got {session_id!r}")
        valid_header = default_header(session_id, _read_clock(clock)) if header is None else validate_header(header, session_id)
        session = cls(session_id, valid_header, clock, validators, observers)
        if seed is not None:
            # .1 A seed is a list of events (Event objects or their JSON envelopes).
            check(isinstance(seed, (list, tuple)), "SESSION-SEED-ACCEPTANCE.1", "the seed must be a list of events")
            for index, raw in enumerate(seed):
                try:
                    session._accept_seed_event(raw, index)
                except SpecViolation as violation:
                    raise violation.at(index=index) from None
            log = session._log
            session._first_live_seq = len(log)
            # .3 Seeding ends the inherited prefix with one marker, unless the seed already ends in one.
            if not log or log[-1].type != END_SEED:
                session._commit(Event(END_SEED, len(log), _read_clock(clock), FrozenDict()), None)
        return session

    def _accept_seed_event(self, raw: Event | Json, index: int) -> None:
        """One seed entry, validated exactly as an append would validate it, plus envelope and contiguity."""
        event = parse_event(raw, index)
        # SESSION-SEED-ACCEPTANCE.2: seqs are positions, so the seed is contiguous from 0.
        check(event.seq == index, "SESSION-SEED-ACCEPTANCE.2",
              f"seed event at index {index} has seq {event.seq} (expected {index}); seed must be contiguous from 0",
              seq=event.seq, index=index)
        check_content(event, index=index)
        self._commit(event, self._surface.plan(event, index=index))

    # --- reads: each a snapshot kept until the next change -------------------------------------

    @property
    def id(self) -> str:
        return self._id

    @property
    def header(self) -> FrozenDict:
        return self._header

    @property
    def events(self) -> FrozenList:
        """SESSION-READ-VIEWS.1: the complete log, a snapshot that never changes afterwards."""
        view = self._events_view
        if view is None:
            view = self._events_view = FrozenList(self._log)
        return view

    def complete_log(self) -> FrozenList:
        return self.events

    @property
    def seq(self) -> int:
        """The next seq: the log length."""
        return len(self._log)

    @property
    def first_live_seq(self) -> int:
        """SESSION-SEED-ACCEPTANCE.4: the seed length (0 for a fresh session)."""
        return self._first_live_seq

    @property
    def surface(self) -> Surface:
        return self._surface.surface()

    def derive_messages(self) -> FrozenList:
        """SESSION-READ-VIEWS.2: the model view, from the derived-message cache."""
        return self._derived.messages()

    def transcript(self) -> FrozenList:
        """SESSION-READ-VIEWS.3: the append-origin events, kept as they commit."""
        view = self._transcript_view
        if view is None:
            view = self._transcript_view = FrozenList(self._transcript)
        return view

    def request_header(self) -> FrozenDict | None:
        """The canonical form of the latest request/header snapshot, folded as events commit."""
        return self._requests.header

    def request_context(self) -> FrozenDict | None:
        """The latest request/context data, folded as events commit."""
        return self._requests.context

    @property
    def observer_failures(self) -> FrozenList:
        return FrozenList(self._observer_failures)

    def add_validator(self, validator: Validator) -> None:
        self._validators.append(validator)

    def add_observer(self, observer: Observer) -> None:
        self._observers.append(observer)

    # --- append: the two-phase transaction ----------------------------------------------------

    def append(
        self,
        type: str,
        data: Json,
        *,
        surface_op: Json | Replace = None,
        source_event_seqs: Json = None,
        ignorable: bool = False,
    ) -> Event:
        """SESSION-APPEND-COMMIT: validate, plan, let validators veto, commit, then notify observers."""
        return self._append(type, data, surface_op, surface_op is not None, source_event_seqs,
                            source_event_seqs is not None, ignorable)

    def append_request(self, request: Mapping[str, Json]) -> Event:
        """An append given as the protocol's request object: {type, data, surfaceOp?, sourceEventSeqs?, ignorable?}."""
        return self._append(*request_parts(request))

    def _append(self, event_type: str, data: Json, surface_op: Json | Replace, has_op: bool, sources: Json,
                has_sources: bool, ignorable: bool) -> Event:
        seq = len(self._log)
        try:
            # SESSION-APPEND-COMMIT.4: a nested append would commit between a candidate and its observers.
            if self._busy:
                fail("SESSION-APPEND-COMMIT.4", "session append cannot reenter while another append is in progress")
            if type(event_type) is not str or not event_type:
                check_type(event_type)
            # SESSION-APPEND-COMMIT.5: the marker is the seed boundary; only seeding writes it.
            if event_type == END_SEED:
                fail("SESSION-APPEND-COMMIT.5", f"{END_SEED} is written only by seeding")
            # SESSION-EVENT-ENVELOPE.6: ignorable is a flag.
            if type(ignorable) is not bool:
                fail("SESSION-EVENT-ENVELOPE.6", f"ignorable must be a bool, got {ignorable!r}")
            owned_data = owned(data)
            # The usual shapes (absent, "append") are exact scalars `owned` would return as they are.
            if surface_op is None or type(surface_op) is str:
                owned_op = surface_op
            else:
                owned_op = owned(surface_op.to_json() if isinstance(surface_op, Replace) else surface_op)
            owned_sources = None if sources is None else owned(sources)
            # SESSION-APPEND-COMMIT.1: seq is the position; time is what the clock says, a safe integer.
            time = _read_clock(self._clock)
            event = event_of(event_type, seq, time, owned_data, owned_op, has_op, owned_sources, has_sources, ignorable)
            # SESSION-APPEND-COMMIT.6: append checks what seeding checks (decision 1).
            if event_type in SURFACE_TYPES:
                check_message(event)
            elif event_type == REQUEST_HEADER:
                check_request_header(event)
            step = self._surface.plan(event)
        except SpecViolation as violation:
            raise violation.at(seq=seq) from None
        self._busy = True
        try:
            for validator in self._validators:
                _run_validator(validator, self, event)
            # The commit point: from here on the event is part of the log.
            self._commit(event, step)
            for position, observer in enumerate(self._observers):
                try:
                    observer(self, event)
                except Exception as error:
                    self._observer_failures.append(ObserverFailure(event.seq, position, repr(error)))
        finally:
            self._busy = False
        return event

    def _commit(self, event: Event, step: LivePlan) -> None:
        """Log the event and apply the plan validated for it; invalidate the snapshots it changes."""
        self._surface.commit(event, step)  # first: a plan that does not fit raises before anything changes
        self._log.append(event)
        self._events_view = None
        if type(event.surface_op) is str:  # SESSION-READ-VIEWS.3: append-origin
            self._transcript.append(event)
            self._transcript_view = None
        elif event.type in _REQUEST_TYPES:
            self._requests.feed(event)


def _read_clock(clock: Clock) -> int:
    now = clock()
    if type(now) is not int or not -_MAX <= now <= _MAX:
        fail("SESSION-APPEND-COMMIT.1", f"the clock returned {now!r}, not a safe integer")
    return now


def _run_validator(validator: Validator, session: Session, candidate: Event) -> None:
    """SESSION-APPEND-COMMIT.2: a validator that raises vetoes; its own rule is kept when it names one."""
    try:
        validator(session, candidate)
    except SpecViolation as violation:
        raise violation.at(seq=candidate.seq) from None
    except Exception as error:
        fail("SESSION-APPEND-COMMIT.2", f"append vetoed by a precommit validator: {error!r}", seq=candidate.seq)
