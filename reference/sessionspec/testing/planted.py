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
from sessionspec.catalog import ASSISTANT_MESSAGE, END_SEED, SURFACE_TYPES, TOOL_RESULT
from sessionspec.envelope import Event, Replace
from sessionspec.errors import SpecViolation
from sessionspec.jsonvalue import FrozenDict, FrozenList, Json, snapshot, thaw
from sessionspec.live.surface import DerivedMessages, LivePlan, SurfaceManager
from sessionspec.shapes import message_of
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


# --- grown from the mutation lane (mutation/REPORT.md): fast checks conform missed before it was strengthened --------


def _checked_as(event: Event, **fields: Json) -> Event:
    """`event` with its message's `fields` replaced: what a lax fast check lets the full check see."""
    data = thaw(event.data)
    message = message_of(event.type, data)
    if isinstance(message, dict):
        message.update(fields)
    return Event(event.type, event.seq, event.time, snapshot(data), event.surface_op, event.source_event_seqs,
                 event.ignorable)


def _message(event: Event) -> Any:
    return message_of(event.type, event.data) if event.type in SURFACE_TYPES else None


class MessageIdTypeUnchecked(live.Session):
    """The fast message check asks only that the id is not empty (`value != ""`): a message with id 7 is logged."""

    def _check_content(self, event: Event, *, index: int | None = None) -> None:
        message = _message(event)
        if isinstance(message, dict) and message.get("id") not in ("", None) and type(message.get("id")) is not str:
            event = _checked_as(event, id="id")
        super()._check_content(event, index=index)


class RoleComparedByOrder(live.Session):
    """The role is compared with `<=`, not `!=`: a role sorting after the expected one ("zebra", or "user" on an
    assistant message) is logged."""

    def _check_content(self, event: Event, *, index: int | None = None) -> None:
        message, expected = _message(event), "assistant" if event.type == ASSISTANT_MESSAGE else "user"
        if isinstance(message, dict) and type(message.get("role")) is str and message["role"] > expected:
            event = _checked_as(event, role=expected)
        super()._check_content(event, index=index)


class ToolResultBlockCountUnchecked(live.Session):
    """The tool-result check reads `content[0]` without counting the blocks: two blocks are logged, none crashes."""

    def _check_content(self, event: Event, *, index: int | None = None) -> None:
        message = _message(event)
        if event.type == TOOL_RESULT and isinstance(message, dict) and isinstance(message.get("content"), list):
            event = _checked_as(event, content=[message["content"][0]])  # IndexError on no block: an internal error
        super()._check_content(event, index=index)


class IgnorableTruthy(live.Session):
    """`ignorable` compared with `>= True`, not `is True`: `"ignorable": 1` is logged as ignorable."""

    def append_request(self, request: Mapping[str, Json]) -> Event:
        flag = request.get("ignorable") if isinstance(request, Mapping) else None
        if type(flag) in (int, float) and flag >= 1:  # type: ignore[operator]
            request = {**request, "ignorable": True}
        return super().append_request(request)


class NegativeSourcesAccepted(live.Session):
    """Provenance checked as `0 != source < seq`: a negative seq in sourceEventSeqs is logged."""

    def _build(self, event_type: str, seq: int, time: int, data: Json, surface_op: Json, has_op: bool, sources: Json,
               has_sources: bool, ignorable: bool) -> Event:
        negative = isinstance(sources, list) and any(type(s) is int and s < 0 for s in sources)
        if not negative:
            return super()._build(event_type, seq, time, data, surface_op, has_op, sources, has_sources, ignorable)
        kept = FrozenList(s for s in sources if not (type(s) is int and s < 0))
        event = super()._build(event_type, seq, time, data, surface_op, has_op, kept or None, bool(kept), ignorable)
        return Event(event.type, event.seq, event.time, event.data, event.surface_op, sources, event.ignorable)


def _frozen_as_is(value: Any) -> Any:
    """Frozen containers, leaves kept as they are, unchecked: what a fast path that waves a leaf through returns."""
    if isinstance(value, dict):
        return FrozenDict({key: _frozen_as_is(child) for key, child in value.items()})
    if isinstance(value, list):
        return FrozenList(_frozen_as_is(child) for child in value)
    return value


class _WavedThrough(live.Session):
    """A lossless-JSON violation of rule `waved` is let through by the fast path (in process only: JSON text cannot carry it)."""

    waved = ""

    def _owned(self, value: object) -> Json:
        try:
            return super()._owned(value)
        except SpecViolation as violation:
            if violation.rule != self.waved:
                raise
            return _frozen_as_is(value)


class UnsafeIntegersAccepted(_WavedThrough):
    """Integer bounds checked on one side only (`-_MAX is not value <= _MAX`): -(2**64) in data is logged."""

    waved = "SESSION-LOSSLESS-JSON.2"


class NegativeZeroAccepted(_WavedThrough):
    """The sign of a zero float not checked: `-0.0` in data is logged (a JSON round trip gives 0)."""

    waved = "SESSION-LOSSLESS-JSON.4"


class NonJsonCrashes(live.Session):
    """The fast walk treats every unknown leaf as a float: a tuple in data raises TypeError, not SESSION-LOSSLESS-JSON.1."""

    def _owned(self, value: object) -> Json:
        stack = [value]
        while stack:
            item = stack.pop()
            if isinstance(item, (tuple, bytes, set, frozenset)):
                raise TypeError(f"must be real number, not {type(item).__name__}")
            stack.extend(item.values() if isinstance(item, dict) else item if isinstance(item, list) else ())
        return super()._owned(value)


class TopLevelDataNotCopied(live.Session):
    """The fast path returns a top-level object as it came: the logged data is the caller's own, mutable dict."""

    def _owned(self, value: object) -> Json:
        return value if type(value) is dict else super()._owned(value)


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
    "message-id-type-unchecked": MessageIdTypeUnchecked,
    "role-compared-by-order": RoleComparedByOrder,
    "tool-result-block-count-unchecked": ToolResultBlockCountUnchecked,
    "ignorable-truthy": IgnorableTruthy,
    "negative-sources-accepted": NegativeSourcesAccepted,
    "unsafe-integers-accepted": UnsafeIntegersAccepted,
    "negative-zero-accepted": NegativeZeroAccepted,
    "non-json-crashes": NonJsonCrashes,
    "top-level-data-not-copied": TopLevelDataNotCopied,
}
"""Name -> variant; each is registered as implementation `planted:<name>`."""

IN_ONE_REQUEST: frozenset[str] = frozenset({
    "message-id-type-unchecked", "role-compared-by-order", "tool-result-block-count-unchecked", "ignorable-truthy",
    "negative-sources-accepted", "unsafe-integers-accepted", "negative-zero-accepted", "non-json-crashes",
    "top-level-data-not-copied",
})
"""The bugs in checking the values of one request (grown from the mutation lane): a malformed field, a value JSON
cannot hold, the caller's data kept. The bounded explorer (`testing.explore`) applies a fixed alphabet of requests
to reach states, not values, and so cannot meet them; the near misses, the vectors and the chapter tests do."""
