"""The naive reference Session: the spec as code.

Every query recomputes from the full log (`surface = fold(events)`, `messages = project(surface)`);
there is no cache and no incremental state, so there is nothing here that can drift from the
rules. Each public operation states the spec in icontract contracts. `sessionspec.live` is the
fast implementation; the stateful machine holds it to this one.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import icontract

from sessionspec.catalog import END_SEED
from sessionspec.envelope import Event, Replace, append_request_parts, build_event
from sessionspec.errors import SpecViolation
from sessionspec.jsonvalue import FrozenDict, FrozenList, Json, snapshot
from sessionspec.requestheader import fold_request_context, fold_request_header
from sessionspec.shapes import check_content
from sessionspec.surface import Plan, Surface, fold, plan
from sessionspec.transaction import Clock, Observer, ObserverFailure, SessionCore, Validator, wall_clock
from sessionspec.views import derive_messages, transcript

__all__ = ["Clock", "Event", "Observer", "ObserverFailure", "Session", "Validator", "wall_clock"]

CONTRACTS = os.environ.get("SESSIONSPEC_CONTRACTS", "1") != "0"
"""Contracts are on unless SESSIONSPEC_CONTRACTS=0 (benchmarks of the model's own growth)."""

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


class Session(SessionCore):
    """One session: a header, an append-only log, and the views derived from it, each recomputed on every call.

    Creation, seeding and the append transaction are `SessionCore`'s (shared with `live`); what
    is the model's own is naivety: every check and plan reads the whole log.
    """

    __slots__ = ()

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
        return cls._new(session_id, seed, header, clock, validators, observers)

    # --- reads: every one recomputed from the full log ----------------------------------------

    @property
    def events(self) -> FrozenList:
        """SESSION-READ-VIEWS.1: the complete log, a snapshot that never changes afterwards (SESSION-IMMUTABILITY.4)."""
        return FrozenList(self._log)

    def complete_log(self) -> FrozenList:
        return self.events

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

    # --- append: the two-phase transaction of SessionCore, under the spec's contracts ---------

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

    # --- the model's parts of the transaction: the reference functions, on the whole log -------

    def _owned(self, value: object) -> Json:
        return snapshot(value)

    def _build(self, event_type: str, seq: int, time: int, data: Json, surface_op: Json, has_op: bool, sources: Json,
               has_sources: bool, ignorable: bool) -> Event:
        return build_event(event_type, seq, time, data, surface_op, sources, ignorable,
                           has_surface_op=has_op, has_sources=has_sources)

    def _check_content(self, event: Event, *, index: int | None = None) -> None:
        check_content(event, index=index)

    def _plan(self, event: Event, *, index: int | None = None) -> Plan:
        return plan(fold(self._log).nodes, self._log, event, index=index)

    def _commit(self, event: Event, step: Plan) -> None:
        self._log.append(event)
