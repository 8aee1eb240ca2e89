"""What every Session shares: creation, seeding and the append transaction (spec/04, spec/05).

The reference model and the incremental store differ in how they check and plan an event (a full
refold, or an incremental surface with fast forms of the checks), never in the order of the
steps, the reentrancy guard, the clock, the validators or the observers. Those live here, once:
a second copy of the transaction is where the two drifted before (the store set its guard after
reading the clock, so a clock that appends logged two events at one seq).

A subclass supplies the parts that may differ, each of which must raise exactly what the
reference raises: `_owned` (the lossless copy), `_build` (the event alone), `_check_content`
(shapes and request headers), `_plan` (the surface transition) and `_commit` (recording it).
"""

from __future__ import annotations

import time as _time
from abc import ABC, abstractmethod
from collections.abc import Callable, Container, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from sessionspec.catalog import END_SEED
from sessionspec.envelope import Event, EventSequence, Replace, check_type, parse_event
from sessionspec.errors import SpecViolation
from sessionspec.header import default_header, validate_header
from sessionspec.jsonvalue import FrozenDict, FrozenList, Json, is_safe_int
from sessionspec.preview import shown
from sessionspec.rules import check, fail

Clock = Callable[[], int]
Validator = Callable[[Any, Event], object]
"""A precommit validator: called with (session, candidate) before the commit; raising vetoes."""
Observer = Callable[[Any, Event], object]
"""A postcommit observer: called with (session, event) after the commit; failures are contained."""

S = TypeVar("S", bound="SessionCore")


def wall_clock() -> int:
    """Epoch milliseconds: the default clock. Time is a record, never an order (decision 9)."""
    return _time.time_ns() // 1_000_000


@dataclass(frozen=True, slots=True)
class ObserverFailure:
    """An observer that raised after `seq` committed; recorded, never able to undo the commit."""

    seq: int
    observer: int
    error: str


def read_clock(clock: Clock) -> int:
    """SESSION-APPEND-COMMIT.1: time is what the clock says, and it must say a safe integer."""
    now = clock()
    check(is_safe_int(now), "SESSION-APPEND-COMMIT.1", f"the clock returned {shown(now)}, not a safe integer")
    return now


def run_validator(validator: Validator, session: object, candidate: Event) -> None:
    """SESSION-APPEND-COMMIT.2: a validator that raises vetoes; its own rule is kept when it names one."""
    try:
        validator(session, candidate)
    except SpecViolation as violation:
        raise violation.at(seq=candidate.seq) from None
    except Exception as error:
        fail("SESSION-APPEND-COMMIT.2", f"append vetoed by a precommit validator: {shown(error, 1000)}", seq=candidate.seq)


class SessionCore(ABC):
    """A header, an append-only log, and the transaction that grows it; views are the subclass's."""

    __slots__ = ("_busy", "_clock", "_first_live_seq", "_header", "_id", "_log", "_observer_failures", "_observers",
                 "_validators")

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

    # --- creation and seeding (spec/05) ---------------------------------------------------------

    @classmethod
    def _new(cls: type[S], session_id: str, seed: Sequence[Event | Json] | None, header: Json, clock: Clock | None,
             validators: Sequence[Validator], observers: Sequence[Observer]) -> S:
        """SESSION-SEED-ACCEPTANCE: a new session, fresh or seeded with a prefix to replay."""
        clock = clock or wall_clock
        # SESSION-FORMAT-HEADER.3: a session is named; the header must name the same session.
        check(type(session_id) is str and session_id != "", "SESSION-FORMAT-HEADER.3",
              f"session id must be a non-empty string, got {shown(session_id)}")
        valid_header = default_header(session_id, read_clock(clock)) if header is None else validate_header(header, session_id)
        session = cls(session_id, valid_header, clock, validators, observers)
        if seed is not None:
            session._seed(seed)
        return session

    @classmethod
    def _seeded_parsed(cls: type[S], session_id: str, seed: Sequence[Event | Json], header: Json, clock: Clock,
                       parsed: Container[int]) -> S:
        """`create(session_id, seed=seed, header=header, clock=clock)`, taking the seed entries at the indices in `parsed`
        as parsed.

        Those are Events that `parse_event` (or its fast form) built from their JSON envelopes in this
        process, which nobody else has held since: the load gate's (`storage.gate`). Parsing one again
        would give it back as it is, after the same envelope rules; every other rule a seed entry
        is held to (contiguity, content, the surface) is checked as for any seed.
        """
        session = cls._new(session_id, None, header, clock, (), ())
        session._seed(seed, parsed)
        return session

    def _seed(self, seed: Sequence[Event | Json], parsed: Container[int] = ()) -> None:
        """Replay the seed as the inherited prefix; seeding runs no validators or observers (history, not new work)."""
        # .1 A seed is a list of events (Event objects or their JSON envelopes), or a loaded log's events as it keeps them.
        check(isinstance(seed, (list, tuple, EventSequence)), "SESSION-SEED-ACCEPTANCE.1", "the seed must be a list of events")
        for index, raw in enumerate(seed):
            try:
                self._accept_seed_event(raw, index, parsed=index in parsed)
            except SpecViolation as violation:
                raise violation.at(index=index) from None
        log = self._log
        # .4 first_live_seq is the seed length, measured before any marker is added.
        self._first_live_seq = len(log)
        # .3 Seeding ends the inherited prefix with one marker, unless the seed already ends in one.
        if not log or log[-1].type != END_SEED:
            marker = Event(END_SEED, len(log), read_clock(self._clock), FrozenDict())
            self._commit(marker, self._plan(marker))

    def _accept_seed_event(self, raw: Event | Json, index: int, *, parsed: bool = False) -> None:
        """One seed entry, validated exactly as an append would validate it, plus envelope and contiguity.

        `parsed`: `raw` is an Event that `parse_event` built, and has passed every envelope rule already.
        """
        event = raw if parsed and type(raw) is Event else parse_event(raw, index)
        # .2 Seqs are positions, so the seed is contiguous from 0 (the message is built only for a seed that breaks it).
        if event.seq != index:
            fail("SESSION-SEED-ACCEPTANCE.2",
                 f"seed event at index {index} has seq {event.seq} (expected {index}); seed must be contiguous from 0",
                 seq=event.seq, index=index)
        self._check_content(event, index=index)
        self._commit(event, self._plan(event, index=index))

    # --- reads every implementation answers the same way --------------------------------------

    @property
    def id(self) -> str:
        return self._id

    @property
    def header(self) -> FrozenDict:
        return self._header

    @property
    def seq(self) -> int:
        """The next seq: the log length."""
        return len(self._log)

    @property
    def first_live_seq(self) -> int:
        """SESSION-SEED-ACCEPTANCE.4: the seed length (0 for a fresh session)."""
        return self._first_live_seq

    @property
    def observer_failures(self) -> FrozenList:
        return FrozenList(self._observer_failures)

    def add_validator(self, validator: Validator) -> None:
        self._validators.append(validator)

    def add_observer(self, observer: Observer) -> None:
        self._observers.append(observer)

    # --- the append transaction (spec/04) -----------------------------------------------------

    def _append(self, event_type: Any, data: Json, surface_op: Json | Replace, has_op: bool, sources: Json,
                has_sources: bool, ignorable: Any) -> Event:
        """SESSION-APPEND-COMMIT: guard, candidate, validators (a raise vetoes), commit, then observers."""
        seq = len(self._log)
        # SESSION-APPEND-COMMIT.4: a nested append would commit between a candidate and its observers. The
        # guard is up before anything that calls out: the clock, the validators and the observers are caller code.
        check(not self._busy, "SESSION-APPEND-COMMIT.4", "session append cannot reenter while another append is in progress",
              seq=seq)
        self._busy = True
        try:
            try:
                candidate, step = self._candidate(event_type, data, surface_op, has_op, sources, has_sources, ignorable)
            except SpecViolation as violation:
                raise violation.at(seq=seq) from None
            for validator in self._validators:
                run_validator(validator, self, candidate)
            # The commit point: from here on the event is part of the log.
            self._commit(candidate, step)
            for position, observer in enumerate(self._observers):
                try:
                    observer(self, candidate)
                except Exception as error:
                    # SESSION-APPEND-COMMIT.3: contained and recorded; nothing can undo a commit.
                    self._observer_failures.append(ObserverFailure(candidate.seq, position, shown(error, 1000)))
        finally:
            self._busy = False
        return candidate

    def _candidate(self, event_type: Any, data: Json, surface_op: Json | Replace, has_op: bool, sources: Json,
                   has_sources: bool, ignorable: Any) -> tuple[Event, Any]:
        """The checked candidate and its surface plan, in spec/04's order (steps 2 to 9)."""
        # 2. SESSION-EVENT-ENVELOPE.2: the type discriminates the union.
        check_type(event_type)
        # 3. SESSION-APPEND-COMMIT.5: the marker is the seed boundary; a plugin writing one would reclassify live work.
        check(event_type != END_SEED, "SESSION-APPEND-COMMIT.5", f"{END_SEED} is written only by seeding")
        # 4. SESSION-EVENT-ENVELOPE.6: ignorable is a flag.
        check(type(ignorable) is bool, "SESSION-EVENT-ENVELOPE.6", f"ignorable must be a bool, got {shown(ignorable)}")
        # 5. SESSION-LOSSLESS-JSON: data, then the marker, then the sources, each copied and frozen.
        owned = self._owned(data)
        owned_op = self._owned(surface_op.to_json() if isinstance(surface_op, Replace) else surface_op)
        owned_sources = self._owned(sources)
        # 6. SESSION-APPEND-COMMIT.1: seq is the position; time is what the clock says.
        seq = len(self._log)
        time = read_clock(self._clock)
        # 7. The event alone.
        event = self._build(event_type, seq, time, owned, owned_op, has_op, owned_sources, has_sources, ignorable)
        # 8. SESSION-APPEND-COMMIT.6: append checks the content a seed checks (decision 1).
        self._check_content(event)
        # 9. The surface plan on the current surface.
        return event, self._plan(event)

    # --- what an implementation supplies ------------------------------------------------------

    @abstractmethod
    def _owned(self, value: object) -> Json:
        """`jsonvalue.snapshot(value)`, or a faster form that returns the same copy or raises the same violation."""

    @abstractmethod
    def _build(self, event_type: str, seq: int, time: int, data: Json, surface_op: Json, has_op: bool, sources: Json,
               has_sources: bool, ignorable: bool) -> Event:
        """`envelope.build_event`, or a faster form with the same result."""

    @abstractmethod
    def _check_content(self, event: Event, *, index: int | None = None) -> None:
        """`shapes.check_content`, or a faster form that raises exactly what it raises."""

    @abstractmethod
    def _plan(self, event: Event, *, index: int | None = None) -> Any:
        """The transition `event` makes on the current surface (`surface.plan`); pure: raises or returns a plan."""

    @abstractmethod
    def _commit(self, event: Event, step: Any) -> None:
        """Record `event` and apply the plan validated for it."""
