"""The event envelope: spec/02's SESSION-EVENT-ENVELOPE and SESSION-CORE-EVENTS, and the
event-local surface rules of spec/03 (projection and provenance, checked where the event is built).

These are the checks that need nothing but the event itself. They are the same on append and on
seed (DESIGN decision 1): a log that `append` can build is a log that seeding accepts, so a live
session can never write a log it cannot replay. What an event's payload must hold (message shapes,
request headers) is `sessionspec.shapes`; the session header is `sessionspec.header`.

A check whose message shows a value is spelled `if not <rule holds>: fail(...)`, not `check(...)`:
seeding runs these checks on every event of a log, and a message is built only for an event that
breaks its rule.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final, Literal, NoReturn, TypeAlias

from sessionspec.catalog import (
    ASSISTANT_MESSAGE,
    END_SEED,
    RETIRED_TYPES,
    SURFACE_TYPES,
)
from sessionspec.jsonvalue import (
    FrozenList,
    Json,
    is_frozen,
    is_nonneg_safe_int,
    is_safe_int,
    json_equal,
    snapshot,
    thaw,
)
from sessionspec.preview import shown
from sessionspec.rules import check, fail

ENVELOPE_KEYS: Final = frozenset({"type", "seq", "time", "data", "surfaceOp", "sourceEventSeqs", "ignorable"})


class _Immutable:
    __slots__ = ()

    def __setattr__(self, name: str, value: object) -> NoReturn:
        raise TypeError(f"{type(self).__name__} is immutable (SESSION-IMMUTABILITY.1)")

    def __delattr__(self, name: str) -> NoReturn:
        raise TypeError(f"{type(self).__name__} is immutable (SESSION-IMMUTABILITY.1)")


class Replace(_Immutable):
    """`{op: "replace", start, end}`: shadow the surface range from node `start` to node `end`."""

    __slots__ = ("end", "start")
    start: int
    end: int

    def __init__(self, start: int, end: int) -> None:
        object.__setattr__(self, "start", start)
        object.__setattr__(self, "end", end)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Replace) and (self.start, self.end) == (other.start, other.end)

    def __hash__(self) -> int:
        return hash((self.start, self.end))

    def __repr__(self) -> str:
        return f"Replace(start={self.start}, end={self.end})"

    def to_json(self) -> dict[str, Json]:
        return {"op": "replace", "start": self.start, "end": self.end}


APPEND: Final = "append"
REPR_LIMIT: Final = 2000
"""An event's `repr` shows its data in full up to about this many characters (a test's failure reads it), then in part."""
SurfaceOp: TypeAlias = Literal["append"] | Replace


class Event(_Immutable):
    """One logged fact. Immutable; `data` is frozen JSON; `source_event_seqs` a FrozenList."""

    __slots__ = ("data", "ignorable", "seq", "source_event_seqs", "surface_op", "time", "type")
    type: str
    seq: int
    time: int
    data: Json
    surface_op: SurfaceOp | None
    source_event_seqs: FrozenList | None
    ignorable: bool

    def __init__(
        self,
        type: str,
        seq: int,
        time: int,
        data: Json,
        surface_op: SurfaceOp | None = None,
        source_event_seqs: FrozenList | None = None,
        ignorable: bool = False,
    ) -> None:
        setter = object.__setattr__
        setter(self, "type", type)
        setter(self, "seq", seq)
        setter(self, "time", time)
        setter(self, "data", data)
        setter(self, "surface_op", surface_op)
        setter(self, "source_event_seqs", source_event_seqs)
        setter(self, "ignorable", ignorable)

    def _key(self) -> tuple[Any, ...]:
        """Everything but `data`, which `json_equal` compares without recursion (SESSION-LOSSLESS-JSON.7)."""
        return (self.type, self.seq, self.time, self.surface_op, self.source_event_seqs, self.ignorable)

    def __eq__(self, other: object) -> bool:
        """Equal envelopes with JSON-equal data: `true` in one log and `1` in another are different facts."""
        return isinstance(other, Event) and self._key() == other._key() and json_equal(self.data, other.data)

    def __hash__(self) -> int:
        return hash((self.type, self.seq, self.time))

    def __repr__(self) -> str:
        """Bounded (`shown`): an accepted event's data may be 100,000 levels deep, or a 10 MiB string."""
        extra = ""
        if self.surface_op is not None:
            extra += f", surface_op={self.surface_op!r}"
        if self.source_event_seqs is not None:
            extra += f", source_event_seqs={shown(list(self.source_event_seqs), REPR_LIMIT)}"
        if self.ignorable:
            extra += ", ignorable=True"
        return f"Event({shown(self.type)}, seq={self.seq}, time={self.time}, data={shown(self.data, REPR_LIMIT)}{extra})"

    def to_json(self) -> dict[str, Json]:
        """The plain JSON envelope, in canonical key order: type, seq, time, data, sourceEventSeqs, surfaceOp, ignorable."""
        out: dict[str, Json] = {"type": self.type, "seq": self.seq, "time": self.time, "data": thaw(self.data)}
        if self.source_event_seqs is not None:
            out["sourceEventSeqs"] = list(self.source_event_seqs)
        if self.surface_op is not None:
            out["surfaceOp"] = self.surface_op if isinstance(self.surface_op, str) else self.surface_op.to_json()
        if self.ignorable:
            out["ignorable"] = True
        return out

    def replace_seq(self, seq: int, time: int | None = None) -> Event:
        """The same fact at another position (used by repair and tests; never changes `self`)."""
        return Event(self.type, seq, self.time if time is None else time, self.data, self.surface_op, self.source_event_seqs, self.ignorable)


# --- the envelope ---------------------------------------------------------------------------


def check_type(event_type: object, *, seq: int | None = None, index: int | None = None) -> None:
    # SESSION-EVENT-ENVELOPE.2: the type discriminates the union; a missing one, or one that is not a string, names nothing.
    if type(event_type) is not str:
        fail("SESSION-EVENT-ENVELOPE.2", f"event type must be a string, got {shown(event_type)}", seq=seq, index=index)
    # SESSION-EVENT-ENVELOPE.8: nor does the empty string (decision: the upstream core accepts it).
    check(event_type != "", "SESSION-EVENT-ENVELOPE.8", "event type must not be empty", seq=seq, index=index)


def parse_surface_op(event_type: str, raw: Json, *, seq: int | None = None, index: int | None = None) -> SurfaceOp:
    """SESSION-SURFACE-PROJECTION.4: the marker is "append" or exactly {op: "replace", start, end}."""
    if isinstance(raw, Replace):
        raw = raw.to_json()
    if raw == APPEND and type(raw) is str:
        return APPEND
    is_replace = (
        isinstance(raw, dict)
        and set(raw) == {"op", "start", "end"}
        and raw["op"] == "replace"
        and type(raw["op"]) is str
        and is_nonneg_safe_int(raw["start"])
        and is_nonneg_safe_int(raw["end"])
    )
    if not is_replace:
        fail("SESSION-SURFACE-PROJECTION.4", f"session event {shown(event_type)} carries an invalid surfaceOp {shown(raw)}",
             seq=seq, index=index)
    return Replace(raw["start"], raw["end"])


def parse_sources(event_type: str, seq: int, raw: Json, *, index: int | None = None) -> FrozenList:
    """SESSION-SURFACE-PROVENANCE.1-.5: the checks a source list needs nothing but its event for."""
    # .1 A source list is an array: order is free, but it is a list of seqs.
    if not isinstance(raw, list):
        fail("SESSION-SURFACE-PROVENANCE.1", f"sourceEventSeqs on event at seq {seq} must be an array when present",
             seq=seq, index=index)
    # .2 [] means "a provider stream known to be empty", which only an assistant message can be.
    check(len(raw) > 0 or event_type == ASSISTANT_MESSAGE, "SESSION-SURFACE-PROVENANCE.2",
          f"sourceEventSeqs must not be empty except on {ASSISTANT_MESSAGE}", seq=seq, index=index)
    # .3 Sources are seqs: non-negative safe integers (a bool is not a number).
    for source in raw:
        if not is_nonneg_safe_int(source):
            fail("SESSION-SURFACE-PROVENANCE.3",
                 f"session event {shown(event_type)} sourceEventSeqs must densely contain non-negative safe integers, got {shown(source)}",
                 seq=seq, index=index)
    # .4 A source named twice says nothing more and hides a producer bug.
    check(len(set(raw)) == len(raw), "SESSION-SURFACE-PROVENANCE.4", "sourceEventSeqs must not contain duplicates",
          seq=seq, index=index)
    # .5 Provenance points back in time: a fact cannot derive from itself or the future.
    late = [source for source in raw if source >= seq]
    if late:
        fail("SESSION-SURFACE-PROVENANCE.5", f"sourceEventSeqs must reference earlier events: {late[0]} >= current seq {seq}",
             seq=seq, index=index)
    return raw if isinstance(raw, FrozenList) else FrozenList(raw)


def build_event(
    event_type: Json,
    seq: int,
    time: int,
    data: Json,
    surface_op: Json = None,
    source_event_seqs: Json = None,
    ignorable: bool = False,
    *,
    has_surface_op: bool | None = None,
    has_sources: bool | None = None,
    index: int | None = None,
) -> Event:
    """Build an Event from already-snapshotted parts, checking everything the event alone decides.

    `has_surface_op` and `has_sources` distinguish a present `null` from an absent key (a log-only
    event may carry neither, not even as null); they default to "present when not None".
    """
    check_type(event_type, seq=seq, index=index)
    has_op = surface_op is not None if has_surface_op is None else has_surface_op
    has_src = source_event_seqs is not None if has_sources is None else has_sources
    surface = event_type in SURFACE_TYPES
    # SESSION-EVENT-ENVELOPE.7: dropping a surface event changes what the model sees, so it is never ignorable.
    if ignorable and surface:
        fail("SESSION-EVENT-ENVELOPE.7", f"surface event {shown(event_type)} cannot be ignorable", seq=seq, index=index)
    # SESSION-CORE-EVENTS.2: a retired type would be read with semantics no current reader has.
    if event_type in RETIRED_TYPES:
        fail("SESSION-CORE-EVENTS.2", f"session event {shown(event_type)} uses an unsupported legacy format",
             seq=seq, index=index)
    if event_type == END_SEED:
        # SESSION-CORE-EVENTS.1: the marker carries no payload; data would be a second channel.
        check(isinstance(data, dict) and len(data) == 0, "SESSION-CORE-EVENTS.1",
              f"{END_SEED} must carry {{}} as data", seq=seq, index=index)
    if not surface:
        # SESSION-SURFACE-PROJECTION.1: only surface types enter the surface.
        if has_op:
            fail("SESSION-SURFACE-PROJECTION.1",
                 f"session event {shown(event_type)} is not surface-eligible and cannot carry surfaceOp", seq=seq, index=index)
        # SESSION-SURFACE-PROJECTION.2: provenance is surface metadata; a log-only event has none.
        if has_src:
            fail("SESSION-SURFACE-PROJECTION.2",
                 f"session event {shown(event_type)} is not surface-eligible and cannot carry sourceEventSeqs", seq=seq, index=index)
        return Event(event_type, seq, time, data, None, None, ignorable)
    # SESSION-SURFACE-PROJECTION.3: a surface event without a marker would vanish from the model's history.
    if not has_op:
        fail("SESSION-SURFACE-PROJECTION.3",
             f"session event {shown(event_type)} is surface-eligible and requires a surfaceOp marker", seq=seq, index=index)
    op = parse_surface_op(event_type, surface_op, seq=seq, index=index)
    sources = parse_sources(event_type, seq, source_event_seqs, index=index) if has_src else None
    return Event(event_type, seq, time, data, op, sources, ignorable)


def as_parsed(event: Event) -> bool:
    """Whether every field of `event` is what parsing its own JSON envelope would give it back.

    So are the events parsing builds: exactly an Event, a string type, safe-integer seq and
    time, a bool flag, a marker that is "append"-like text or a Replace of two seqs, and sources
    and data that are frozen lossless JSON (`jsonvalue.is_frozen`). An Event made by hand may hold
    anything (its constructor and the frozen classes' are public), so being an Event proves
    nothing by itself; these fields do, since thawing and snapshotting them again yields equal ones.
    """
    op, sources = event.surface_op, event.source_event_seqs
    return (
        type(event) is Event
        and type(event.type) is str
        and is_nonneg_safe_int(event.seq)
        and is_safe_int(event.time)
        and type(event.ignorable) is bool
        and (op is None or type(op) is str
             or (type(op) is Replace and is_nonneg_safe_int(op.start) and is_nonneg_safe_int(op.end)))
        and (sources is None or (type(sources) is FrozenList and is_frozen(sources)))
        and is_frozen(event.data)
    )


class EventSequence(Sequence[Event]):
    """An immutable sequence of Events that is not a list: what a loaded log's events are when they are kept as stored
    and built when read (`storage.storedevents`). A seed may be one (SESSION-SEED-ACCEPTANCE.1), as it may be the
    list it equals, so a loaded log seeds a session as it always did."""

    __slots__ = ()


def parse_event(raw: Json, index: int) -> Event:
    """An event from its JSON envelope (a seed entry, a protocol request, a stored line).

    `raw` may be an Event already (a seed taken from another session's events, a log the load gate
    built). One whose fields are as parsing gives them (`as_parsed`) is checked as it is: the
    checks that hold for such fields by construction (a closed envelope with data, a flag, lossless
    values) are passed over, and its data is not copied again. Any other is read as its JSON envelope.
    """
    if isinstance(raw, Event):
        if as_parsed(raw):
            # SESSION-EVENT-ENVELOPE.2, .8: the one envelope rule such fields can still break (an empty type).
            check_type(raw.type, index=index)
            return build_event(raw.type, raw.seq, raw.time, raw.data, raw.surface_op, raw.source_event_seqs,
                               raw.ignorable, has_surface_op=raw.surface_op is not None,
                               has_sources=raw.source_event_seqs is not None, index=index)
        raw = raw.to_json()
    value = snapshot(raw)
    # SESSION-EVENT-ENVELOPE.1: the envelope is closed; an unknown key is a format this build cannot read.
    check(isinstance(value, dict), "SESSION-EVENT-ENVELOPE.1", "event is not a JSON object", index=index)
    extra = sorted(set(value) - ENVELOPE_KEYS)
    if extra:
        fail("SESSION-EVENT-ENVELOPE.1", f"event has unknown envelope keys {shown(extra)}", index=index)
    check_type(value.get("type"), index=index)
    seq = value.get("seq")
    # SESSION-EVENT-ENVELOPE.3: seq is the one ordering authority.
    if not is_nonneg_safe_int(seq):
        fail("SESSION-EVENT-ENVELOPE.3", f"seq must be a non-negative safe integer, got {shown(seq)}", index=index)
    time = value.get("time")
    # SESSION-EVENT-ENVELOPE.4: time is a wall-clock record, any safe integer; it orders nothing.
    if not is_safe_int(time):
        fail("SESSION-EVENT-ENVELOPE.4", f"time must be a safe integer, got {shown(time)}", seq=seq, index=index)
    # SESSION-EVENT-ENVELOPE.5: every event has a payload, even if it is null.
    check("data" in value, "SESSION-EVENT-ENVELOPE.5", "event has no data", seq=seq, index=index)
    ignorable = value.get("ignorable", True)
    # SESSION-EVENT-ENVELOPE.6: ignorable is a flag a writer sets; false or "yes" is a different format.
    if ignorable is not True:
        fail("SESSION-EVENT-ENVELOPE.6", f"ignorable must be absent or true, got {shown(ignorable)}", seq=seq, index=index)
    return build_event(
        value["type"], seq, time, value["data"], value.get("surfaceOp"), value.get("sourceEventSeqs"),
        "ignorable" in value, has_surface_op="surfaceOp" in value, has_sources="sourceEventSeqs" in value, index=index,
    )


APPEND_REQUEST_KEYS: Final = frozenset({"op", "type", "data", "surfaceOp", "sourceEventSeqs", "ignorable"})


def append_request_parts(request: Mapping[str, Json]) -> tuple[Any, Json, Json, bool, Json, bool, bool]:
    """The protocol's append request as (type, data, surface_op, has_op, sources, has_sources, ignorable).

    Presence is kept: `"surfaceOp": null` is present (and invalid), an absent key is absent.
    """
    # SESSION-EVENT-ENVELOPE.1: the request is the envelope without seq and time; nothing else.
    check(isinstance(request, Mapping), "SESSION-EVENT-ENVELOPE.1", "an append request is a JSON object")
    extra = sorted(set(request) - APPEND_REQUEST_KEYS)
    check(not extra, "SESSION-EVENT-ENVELOPE.1", f"append request has unknown keys {shown(extra)}")
    # SESSION-EVENT-ENVELOPE.5: every event has a payload, even if it is null.
    check("data" in request, "SESSION-EVENT-ENVELOPE.5", "append request has no data")
    ignorable = request.get("ignorable", False)
    # SESSION-EVENT-ENVELOPE.6: ignorable is absent or exactly true.
    check("ignorable" not in request or ignorable is True, "SESSION-EVENT-ENVELOPE.6",
          f"ignorable must be absent or true, got {shown(ignorable)}")
    return (request.get("type"), request["data"], request.get("surfaceOp"), "surfaceOp" in request,
            request.get("sourceEventSeqs"), "sourceEventSeqs" in request, bool(ignorable))
