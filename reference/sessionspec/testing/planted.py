"""Planted bugs: variants of `live`, each wrong in one way an incremental store plausibly goes wrong.

The self-test of the oracle (tests/test_planted.py) runs the machine against each and requires it
to be caught: a machine that passes a planted bug is a machine that would pass the real one.
Each variant is registered as implementation `planted:<name>`, so `sessionspec replay` and the
conformance testee can run them too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sessionspec import live
from sessionspec.catalog import END_SEED
from sessionspec.envelope import Event, Replace
from sessionspec.errors import SpecViolation
from sessionspec.jsonvalue import FrozenDict, FrozenList, Json
from sessionspec.live.surface import DerivedMessages, LivePlan, SurfaceManager
from sessionspec.surface import ReplacePlan


class _StaleDerived(DerivedMessages):
    """Only ever projects the new tail; never starts over when a replace moves nodes."""

    def messages(self) -> FrozenList:
        self._generation = self._surface.generation
        return super().messages()


class StaleDerivedCache(live.Session):
    """Derived cache not rebuilt after a replace: the model sees compacted-away messages."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self._derived = _StaleDerived(self._log, self._surface)


class _OffByOneSplice(SurfaceManager):
    def commit(self, event: Event, step: LivePlan) -> None:
        if isinstance(step, ReplacePlan):
            # The bug: an exclusive end, so the last shadowed node stays on the surface.
            self._nodes[step.first : step.last] = (step.seq,)
            self.generation += 1
            self._view = None
            return
        super().commit(event, step)


class OffByOneSplice(live.Session):
    """Off-by-one in the replace splice: `nodes[first:last]` instead of `nodes[first:last + 1]`."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self._surface = _OffByOneSplice(self._log)
        self._derived = DerivedMessages(self._log, self._surface)


class _UncheckedProvenance(SurfaceManager):
    def plan(self, event: Event, *, index: int | None = None) -> LivePlan:
        try:
            return super().plan(event, index=index)
        except SpecViolation as violation:
            if violation.rule != "SESSION-SURFACE-PROVENANCE.6":
                raise
            op = event.surface_op
            assert isinstance(op, Replace)
            first, last = self._nodes.index(op.start), self._nodes.index(op.end)
            return ReplacePlan(event.seq, first, last, tuple(self._nodes[first : last + 1]))


class ProvenanceUnchecked(live.Session):
    """Provenance coverage not checked: a replacement may shadow nodes its sources do not name."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self._surface = _UncheckedProvenance(self._log)
        self._derived = DerivedMessages(self._log, self._surface)


class _PlanCache(SurfaceManager):
    """Remembers plans by seq: after a veto, the next candidate at that seq gets the vetoed one's plan."""

    def __init__(self, log: Sequence[Event]) -> None:
        super().__init__(log)
        self.cache: dict[int, LivePlan] = {}

    def plan(self, event: Event, *, index: int | None = None) -> LivePlan:
        if event.seq not in self.cache:
            self.cache[event.seq] = super().plan(event, index=index)
        return self.cache[event.seq]


class PlanForAnotherEvent(live.Session):
    """A validated plan applied to a different event: the one a validator vetoed at the same seq."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self._surface = _PlanCache(self._log)
        self._derived = DerivedMessages(self._log, self._surface)


class EventsSnapshotNotInvalidated(live.Session):
    """The events snapshot is not invalidated on append: readers keep seeing the old log."""

    def _commit(self, event: Event, step: LivePlan) -> None:
        view = self._events_view
        super()._commit(event, step)
        if len(self._log) > 1:
            self._events_view = view


class DoubleMarker(live.Session):
    """A marker is added to a seed that already ends in one."""

    @classmethod
    def create(cls, session_id: str, seed: Sequence[Event | Json] | None = None, header: Json = None,
               **kwargs: Any) -> live.Session:
        session = super().create(session_id, seed, header, **kwargs)
        if seed and session.seq == len(seed):
            clock = kwargs.get("clock") or (lambda: 0)
            session._commit(Event(END_SEED, session.seq, clock(), FrozenDict()), None)
        return session


class _IdOnlyRewrite(SurfaceManager):
    def plan(self, event: Event, *, index: int | None = None) -> LivePlan:
        try:
            return super().plan(event, index=index)
        except SpecViolation as violation:
            if violation.rule != "SESSION-SURFACE-TOOL-RESULT.3":
                raise
            op = event.surface_op
            assert isinstance(op, Replace)
            target = self._log[op.start]
            if target.data["message"]["source"]["callId"] != event.data["message"]["source"]["callId"]:
                raise
            first = self._nodes.index(op.start)
            return ReplacePlan(event.seq, first, first, (op.start,))


class ToolResultRewriteComparesOnlyId(live.Session):
    """A tool-result rewrite compared by call id only: isError, error, meta and message id may change."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self._surface = _IdOnlyRewrite(self._log)
        self._derived = DerivedMessages(self._log, self._surface)


class NoReentrancyGuard(live.Session):
    """The reentrancy guard is missing: an observer's append commits inside the outer append."""

    @property
    def _busy(self) -> bool:
        return False

    @_busy.setter
    def _busy(self, value: bool) -> None:
        pass


class MutableMessages(live.Session):
    """Derived messages returned as a plain list: a caller can change what the next call returns."""

    def derive_messages(self) -> FrozenList:
        return list(super().derive_messages())  # type: ignore[return-value]


class IgnorableDropped(live.Session):
    """`ignorable` dropped on append (the upstream's behaviour, refused by decision 3)."""

    def append_request(self, request: Mapping[str, Json]) -> Event:
        if isinstance(request, Mapping) and request.get("ignorable") is True:
            request = {k: v for k, v in request.items() if k != "ignorable"}
        return super().append_request(request)


class StaleSurfaceView(live.Session):
    """The surface view is cached across a replace: `surface.nodes` lags behind the derived messages."""

    def _commit(self, event: Event, step: LivePlan) -> None:
        view = self._surface._view
        super()._commit(event, step)
        if isinstance(step, ReplacePlan):
            self._surface._view = view


PLANTED: dict[str, type[live.Session]] = {
    "stale-derived-cache": StaleDerivedCache,
    "off-by-one-splice": OffByOneSplice,
    "provenance-unchecked": ProvenanceUnchecked,
    "plan-for-another-event": PlanForAnotherEvent,
    "events-snapshot-not-invalidated": EventsSnapshotNotInvalidated,
    "double-marker": DoubleMarker,
    "tool-result-rewrite-compares-only-id": ToolResultRewriteComparesOnlyId,
    "no-reentrancy-guard": NoReentrancyGuard,
    "mutable-messages": MutableMessages,
    "ignorable-dropped": IgnorableDropped,
    "stale-surface-view": StaleSurfaceView,
}
"""Name -> variant; each is registered as implementation `planted:<name>`."""
