"""The naive reference Session: the spec as code.

Every query recomputes from the full log (`surface = fold(events)`, `messages = project(surface)`);
there is no cache and no incremental state, so there is nothing here that can drift from the
rules. Each public operation states the spec in icontract contracts. `sessionspec.live` is the
fast implementation; the stateful machine holds it to this one.
"""

from __future__ import annotations

import functools
import os
import time as _time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import icontract

from sessionspec.catalog import END_SEED
from sessionspec.envelope import (
    Event,
    Replace,
    append_request_parts,
    build_event,
    check_content,
    check_type,
    default_header,
    parse_event,
    validate_header,
)
from sessionspec.errors import SpecViolation, check, fail
from sessionspec.jsonvalue import FrozenDict, FrozenList, Json, is_safe_int, snapshot
from sessionspec.requestheader import fold_request_context, fold_request_header
from sessionspec.surface import Surface, fold, plan
from sessionspec.views import derive_messages, transcript

Clock = Callable[[], int]
Validator = Callable[[Any, Event], object]
"""A precommit validator: called with (session, candidate) before the commit; raising vetoes."""
Observer = Callable[[Any, Event], object]
"""A postcommit observer: called with (session, event) after the commit; failures are contained."""

CONTRACTS = os.environ.get("SESSIONSPEC_CONTRACTS", "1") != "0"
"""Contracts are on unless SESSIONSPEC_CONTRACTS=0 (benchmarks of the model's own growth)."""


def wall_clock() -> int:
    """Epoch milliseconds: the default clock. Time is a record, never an order (decision 9)."""
    return _time.time_ns() // 1_000_000


@dataclass(frozen=True, slots=True)
class ObserverFailure:
    """An observer that raised after `seq` committed; recorded, never able to undo the commit."""

    seq: int
    observer: int
    error: str


F = TypeVar("F", bound=Callable[..., Any])


def _state(session: Session) -> tuple[Any, ...]:
    return (tuple(session._log), session._first_live_seq, session._header)


def unchanged_on_rejection(method: F) -> F:
    """Contract: a rejected operation leaves the session exactly as it was before the call."""
    if not CONTRACTS:
        return method

    @functools.wraps(method)
    def wrapper(self: Session, *args: Any, **kwargs: Any) -> Any:
        before = _state(self)
        try:
            return method(self, *args, **kwargs)
        except SpecViolation:
            assert _state(self) == before, "a rejected append changed the session"
            raise

    return wrapper  # type: ignore[return-value]


def _nodes_are_surface_events(session: Session) -> bool:
    nodes = session.surface.nodes
    return len(set(nodes)) == len(nodes) and all(session._log[n].surface_op is not None for n in nodes)


class Session:
    """One session: a header, an append-only log, and the views derived from it."""

    __slots__ = ("_busy", "_clock", "_first_live_seq", "_header", "_id", "_log", "_observer_failures", "_observers",
                 "_validators")

    def __init__(self, session_id: str, header: FrozenDict, log: list[Event], first_live_seq: int, clock: Clock,
                 validators: Sequence[Validator], observers: Sequence[Observer]) -> None:
        self._id = session_id
        self._header = header
        self._log = log
        self._first_live_seq = first_live_seq
        self._clock = clock
        self._validators = list(validators)
        self._observers = list(observers)
        self._observer_failures: list[ObserverFailure] = []
        self._busy = False

    # --- construction -------------------------------------------------------------------------

    @classmethod
    @icontract.ensure(lambda seed, result: seed is None or result.first_live_seq == len(seed), "first_live_seq is the seed length",
                      enabled=CONTRACTS)
    @icontract.ensure(lambda seed, result: seed is not None or len(result.events) == 0, "a fresh session has no events",
                      enabled=CONTRACTS)
    @icontract.ensure(lambda seed, result: seed is None or result.events[-1].type == END_SEED, "a seeded log ends in the marker",
                      enabled=CONTRACTS)
    @icontract.ensure(lambda result: result.surface == fold(result.events).surface, "the surface is the fold of the log",
                      enabled=CONTRACTS)
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
        """SESSION-SEED-ACCEPTANCE: a new session, fresh or seeded with a prefix to replay.

        SESSION-SEED-ACCEPTANCE.3: a seed (even empty) ends in one marker, added unless it ends in one.
        """
        clock = clock or wall_clock
        check(type(session_id) is str and session_id != "", "SESSION-FORMAT-HEADER.3",
              f"session id must be a non-empty string, got {session_id!r}")
        valid_header = default_header(session_id, _read_clock(clock)) if header is None else validate_header(header, session_id)
        log: list[Event] = []
        first_live_seq = 0
        if seed is not None:
            # .1 A seed is a list of events (Event objects or their JSON envelopes).
            check(isinstance(seed, (list, tuple)), "SESSION-SEED-ACCEPTANCE.1", "the seed must be a list of events")
            for index, raw in enumerate(seed):
                try:
                    log.append(_accept_seed_event(log, raw, index))
                except SpecViolation as violation:
                    raise violation.at(index=index) from None
            first_live_seq = len(log)
            # .3 Seeding ends the inherited prefix with one marker, unless the seed already ends in one.
            if not log or log[-1].type != END_SEED:
                log.append(Event(END_SEED, len(log), _read_clock(clock), FrozenDict()))
        return cls(session_id, valid_header, log, first_live_seq, clock, validators, observers)

    # --- reads: every one recomputed from the full log ----------------------------------------

    @property
    def id(self) -> str:
        return self._id

    @property
    def header(self) -> FrozenDict:
        return self._header

    @property
    def events(self) -> FrozenList:
        """SESSION-READ-VIEWS.1: the complete log, a snapshot that never changes afterwards (SESSION-IMMUTABILITY.4)."""
        return FrozenList(self._log)

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
        return fold(self._log).surface

    def derive_messages(self) -> FrozenList:
        """SESSION-READ-VIEWS.2: the model view."""
        return derive_messages(self._log)

    def transcript(self) -> FrozenList:
        """SESSION-READ-VIEWS.3: the append-origin events."""
        return transcript(self._log)

    def request_header(self) -> FrozenDict | None:
        """The canonical form of the latest request/header snapshot, recomputed from the log."""
        return fold_request_header(self._log)

    def request_context(self) -> FrozenDict | None:
        """The latest request/context data, recomputed from the log."""
        return fold_request_context(self._log)

    @property
    def observer_failures(self) -> FrozenList:
        return FrozenList(self._observer_failures)

    def add_validator(self, validator: Validator) -> None:
        self._validators.append(validator)

    def add_observer(self, observer: Observer) -> None:
        self._observers.append(observer)

    # --- append: the two-phase transaction ----------------------------------------------------

    @icontract.snapshot(lambda self: self.events, name="events", enabled=CONTRACTS)
    @icontract.ensure(lambda self, OLD: self.events[:-1] == OLD.events, "append only appends", enabled=CONTRACTS)
    @icontract.ensure(lambda self, result: result.seq == len(self.events) - 1 and self.events[-1] is result,
                      "seq is the log position", enabled=CONTRACTS)
    @icontract.ensure(lambda self: self.seq == len(self.events), "seq is the log length", enabled=CONTRACTS)
    @icontract.ensure(lambda self: _nodes_are_surface_events(self), "nodes are unique surface events of this log",
                      enabled=CONTRACTS)
    @icontract.ensure(lambda self: self.derive_messages() == derive_messages(self.events), "messages follow the surface",
                      enabled=CONTRACTS)
    @unchanged_on_rejection
    def append(
        self,
        type: str,
        data: Json,
        *,
        surface_op: Json | Replace = None,
        source_event_seqs: Json = None,
        ignorable: bool = False,
    ) -> Event:
        """SESSION-APPEND-COMMIT: validate, plan, let validators veto, commit, then notify observers.

        `None` for `surface_op` or `source_event_seqs` means absent; `append_request` is the form
        that can also say "present and null", as the protocol can.
        """
        return self._append(type, data, surface_op, surface_op is not None, source_event_seqs,
                            source_event_seqs is not None, ignorable)

    @icontract.snapshot(lambda self: self.events, name="events", enabled=CONTRACTS)
    @icontract.ensure(lambda self, OLD: self.events[:-1] == OLD.events, "append only appends", enabled=CONTRACTS)
    @icontract.ensure(lambda self, result: result.seq == len(self.events) - 1, "seq is the log position", enabled=CONTRACTS)
    @unchanged_on_rejection
    def append_request(self, request: Mapping[str, Json]) -> Event:
        """An append given as the protocol's request object: {type, data, surfaceOp?, sourceEventSeqs?, ignorable?}."""
        return self._append(*append_request_parts(request))

    def _append(self, event_type: str, data: Json, surface_op: Json | Replace, has_op: bool, sources: Json,
                has_sources: bool, ignorable: bool) -> Event:
        """SESSION-APPEND-COMMIT.2 and SESSION-APPEND-COMMIT.3: candidate, validators (a raise vetoes), commit, observers.

        An observer runs after the commit, in order; its failure is recorded in `observer_failures`
        and cannot undo the commit: the caller's append succeeded, and later observers still run.
        """
        seq = len(self._log)
        # SESSION-APPEND-COMMIT.4: a nested append would commit between a candidate and its observers.
        # The guard covers building the candidate too: the clock is caller code and must not reenter.
        check(not self._busy, "SESSION-APPEND-COMMIT.4", "session append cannot reenter while another append is in progress",
              seq=seq)
        self._busy = True
        try:
            try:
                candidate = self._candidate(event_type, data, surface_op, has_op, sources, has_sources, ignorable)
            except SpecViolation as violation:
                raise violation.at(seq=seq) from None
            for validator in self._validators:
                _run_validator(validator, self, candidate)
            # The commit point: from here on the event is part of the log.
            self._log.append(candidate)
            for position, observer in enumerate(self._observers):
                try:
                    observer(self, candidate)
                except Exception as error:
                    self._observer_failures.append(ObserverFailure(candidate.seq, position, repr(error)))
        finally:
            self._busy = False
        return candidate

    def _candidate(self, event_type: str, data: Json, surface_op: Json | Replace, has_op: bool, sources: Json,
                   has_sources: bool, ignorable: bool) -> Event:
        """The checked candidate, in spec/04's order; SESSION-APPEND-COMMIT.6: everything a seed checks."""
        check_type(event_type)
        # SESSION-APPEND-COMMIT.5: the marker is the seed boundary; a plugin writing one would reclassify live work.
        check(event_type != END_SEED, "SESSION-APPEND-COMMIT.5", f"{END_SEED} is written only by seeding")
        # SESSION-EVENT-ENVELOPE.6: ignorable is a flag.
        check(type(ignorable) is bool, "SESSION-EVENT-ENVELOPE.6", f"ignorable must be a bool, got {ignorable!r}")
        owned = snapshot(data)
        op = surface_op.to_json() if isinstance(surface_op, Replace) else surface_op
        owned_op = snapshot(op)
        owned_sources = snapshot(sources)
        seq = len(self._log)
        # SESSION-APPEND-COMMIT.1: seq is the position; time is what the clock says, a safe integer.
        time = _read_clock(self._clock)
        event = build_event(event_type, seq, time, owned, owned_op, owned_sources, ignorable,
                            has_surface_op=has_op, has_sources=has_sources)
        # SESSION-APPEND-COMMIT.6: append checks what seeding checks (decision 1).
        check_content(event)
        plan(fold(self._log).nodes, self._log, event)
        return event


def _read_clock(clock: Clock) -> int:
    now = clock()
    check(is_safe_int(now), "SESSION-APPEND-COMMIT.1", f"the clock returned {now!r}, not a safe integer")
    return now


def _run_validator(validator: Validator, session: Session, candidate: Event) -> None:
    """SESSION-APPEND-COMMIT.2: a validator that raises vetoes; its own rule is kept when it names one."""
    try:
        validator(session, candidate)
    except SpecViolation as violation:
        raise violation.at(seq=candidate.seq) from None
    except Exception as error:
        fail("SESSION-APPEND-COMMIT.2", f"append vetoed by a precommit validator: {error!r}", seq=candidate.seq)


def _accept_seed_event(log: list[Event], raw: Event | Json, index: int) -> Event:
    """One seed entry, validated exactly as an append would validate it, plus envelope and contiguity."""
    event = parse_event(raw, index)
    # SESSION-SEED-ACCEPTANCE.2: seqs are positions, so the seed is contiguous from 0.
    check(event.seq == index, "SESSION-SEED-ACCEPTANCE.2",
          f"seed event at index {index} has seq {event.seq} (expected {index}); seed must be contiguous from 0",
          seq=event.seq, index=index)
    check_content(event, index=index)
    plan(fold(log).nodes, log, event, index=index)
    return event
