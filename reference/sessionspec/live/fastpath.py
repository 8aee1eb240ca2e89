"""Fast accept, exact reject: the write-boundary checks of `live`, on its hot path.

Each function here answers the question the foundation's check answers, for the common case, in
less time; whenever its answer is not a plain "valid", it hands the value to the foundation's own
check, which raises the exact SpecViolation (rule, kind, message, location) the reference model
raises. So a fast path can only be too cautious (and slow), never more permissive: what `live`
accepts is what `model` accepts, and what it rejects it rejects with the same rule.

Why not orjson for the lossless-JSON check: profiled on the 2,000-turn workload, a round trip
through orjson (dumps, loads, an equality check for what it converts silently) costs about as
much as the whole recursive check below, and the copy it returns must still be walked in Python
to freeze it. The walk is the cost; the checks ride along with it (benchmarks/README.md).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from sessionspec.catalog import ASSISTANT_MESSAGE, END_SEED, RETIRED_TYPES, SURFACE_TYPES, TOOL_RESULT
from sessionspec.envelope import (
    APPEND,
    APPEND_REQUEST_KEYS,
    Event,
    append_request_parts,
    build_event,
    check_message_shape,
    message_of,
)
from sessionspec.jsonvalue import MAX_SAFE_INTEGER, FrozenDict, FrozenList, Json, snapshot

_MAX = MAX_SAFE_INTEGER
_DEPTH = 64
"""Deeper values (and cycles, which are infinitely deep) go to the iterative `snapshot`."""

# Frozen containers are filled in C, the way their own constructors fill them, minus a Python frame.
_new_dict, _fill_dict = dict.__new__, dict.update
_new_list, _fill_list = list.__new__, list.extend
_set_item, _set_position = dict.__setitem__, list.__setitem__


class _Slow(Exception):
    """The fast path cannot vouch for the value: let `snapshot` decide, and raise if it must."""


def owned(value: object) -> Json:
    """`jsonvalue.snapshot(value)`: the same frozen copy, or the same SpecViolation.

    Accepts on the fast path only exact `dict` (or FrozenDict) with `str` keys, exact `list` (or
    FrozenList), `str`, `bool`, `None`, safe `int`s and finite non-negative-zero `float`s, at
    most 64 levels deep; anything else is re-read by `snapshot` from the start.
    """
    kind = type(value)
    if kind is str or kind is bool or value is None:
        return value
    try:
        if kind is dict or kind is FrozenDict:
            return _dict(value, 0)  # type: ignore[arg-type]
        if kind is list or kind is FrozenList:
            return _list(value, 0)  # type: ignore[arg-type]
        if kind is int and -_MAX <= value <= _MAX:  # type: ignore[operator]
            return value
        if kind is float:
            return _float(value)  # type: ignore[arg-type]
    except _Slow:
        pass
    return snapshot(value)


def _float(value: float) -> float:
    if math.isfinite(value) and (value != 0.0 or math.copysign(1.0, value) > 0):
        return value
    raise _Slow


def _dict(source: dict[Any, Any], depth: int) -> FrozenDict:
    """Copy in C, then check every item and put frozen copies in place of the containers."""
    if depth > _DEPTH:
        raise _Slow
    frozen = _new_dict(FrozenDict)
    _fill_dict(frozen, source)
    for key, child in source.items():
        if type(key) is not str:
            raise _Slow
        kind = type(child)
        if kind is str or kind is bool or child is None:
            continue
        if kind is int:
            if not -_MAX <= child <= _MAX:
                raise _Slow
        elif kind is dict or kind is FrozenDict:
            _set_item(frozen, key, _dict(child, depth + 1))
        elif kind is list or kind is FrozenList:
            _set_item(frozen, key, _list(child, depth + 1))
        elif kind is float:
            _float(child)
        else:
            raise _Slow
    return frozen


def _list(source: list[Any], depth: int) -> FrozenList:
    """Copy in C, then check every item and put frozen copies in place of the containers."""
    if depth > _DEPTH:
        raise _Slow
    frozen = _new_list(FrozenList)
    _fill_list(frozen, source)
    for position, child in enumerate(source):
        kind = type(child)
        if kind is str or kind is bool or child is None:
            continue
        if kind is int:
            if not -_MAX <= child <= _MAX:
                raise _Slow
        elif kind is dict or kind is FrozenDict:
            _set_position(frozen, position, _dict(child, depth + 1))
        elif kind is list or kind is FrozenList:
            _set_position(frozen, position, _list(child, depth + 1))
        elif kind is float:
            _float(child)
        else:
            raise _Slow
    return frozen


def request_parts(request: Mapping[str, Json]) -> tuple[Any, Json, Json, bool, Json, bool, bool]:
    """`envelope.append_request_parts`, without building its messages when the request is fine."""
    if (
        type(request) is dict
        and request.keys() <= APPEND_REQUEST_KEYS
        and "data" in request
        and request.get("ignorable", True) is True
    ):
        return (request.get("type"), request["data"], request.get("surfaceOp"), "surfaceOp" in request,
                request.get("sourceEventSeqs"), "sourceEventSeqs" in request, "ignorable" in request)
    return append_request_parts(request)


_EVENT_FIELDS = ("type", "seq", "time", "data", "surface_op", "source_event_seqs", "ignorable")
assert set(Event.__slots__) == set(_EVENT_FIELDS), "livecheck.new_event must set every Event field"
_set_fields = tuple(getattr(Event, name).__set__ for name in _EVENT_FIELDS)
_new_object = object.__new__


def new_event(event_type: str, seq: int, time: int, data: Json, surface_op: Any, sources: FrozenList | None,
              ignorable: bool) -> Event:
    """`Event(...)` without its Python `__init__`: the slots are set by their descriptors, in C."""
    set_type, set_seq, set_time, set_data, set_op, set_sources, set_ignorable = _set_fields
    event: Event = _new_object(Event)
    set_type(event, event_type)
    set_seq(event, seq)
    set_time(event, time)
    set_data(event, data)
    set_op(event, surface_op)
    set_sources(event, sources)
    set_ignorable(event, ignorable)
    return event


def _sources_ok(event_type: str, seq: int, sources: Json) -> bool:
    """SESSION-SURFACE-PROVENANCE.1-.5 hold: a non-empty (or assistant) list of unique earlier seqs."""
    if type(sources) is not FrozenList or (not sources and event_type != ASSISTANT_MESSAGE):
        return False
    for source in sources:
        if type(source) is not int or not 0 <= source < seq:
            return False
    return len(set(sources)) == len(sources)


def event_of(event_type: str, seq: int, time: int, data: Json, surface_op: Json, has_op: bool, sources: Json,
             has_sources: bool, ignorable: bool) -> Event:
    """`envelope.build_event` for owned parts; `event_type` has passed `check_type`.

    The two shapes almost every append has (a log-only event with no surface metadata, and a
    surface event appended with valid provenance) are built directly; every other shape, valid
    or not, goes through `build_event` and its rules.
    """
    if event_type in SURFACE_TYPES:
        if has_op and surface_op == APPEND and type(surface_op) is str and not ignorable and (
            not has_sources or _sources_ok(event_type, seq, sources)
        ):
            return new_event(event_type, seq, time, data, APPEND, sources if has_sources else None, False)
    elif not has_op and not has_sources and event_type not in RETIRED_TYPES and event_type != END_SEED:
        return new_event(event_type, seq, time, data, None, None, ignorable)
    return build_event(event_type, seq, time, data, surface_op, sources, ignorable,
                       has_surface_op=has_op, has_sources=has_sources)


def _nonempty_str(value: object) -> bool:
    return type(value) is str and value != ""


def message_ok(event: Event) -> bool:
    """The conditions of `envelope.check_message_shape`, in the same terms, without its messages."""
    kind, data = event.type, event.data
    message = message_of(kind, data)
    if not isinstance(message, dict) or not _nonempty_str(message.get("id")):
        return False
    role = message.get("role")
    if type(role) is not str or role != ("assistant" if kind == ASSISTANT_MESSAGE else "user"):
        return False
    source = message.get("source")
    if not isinstance(source, dict) or not _nonempty_str(source.get("kind")):
        return False
    content = message.get("content")
    if not isinstance(content, list):
        return False
    if kind == ASSISTANT_MESSAGE:
        return source.get("kind") == "model" and _nonempty_str(source.get("provider")) and _nonempty_str(source.get("model"))
    if kind == TOOL_RESULT:
        if source.get("kind") != "tool" or not _nonempty_str(source.get("callId")) or len(content) != 1:
            return False
        block = content[0]
        return (isinstance(block, dict) and block.get("type") == "tool-result" and isinstance(block.get("content"), list)
                and block.get("toolCallId") == source.get("callId"))
    return True


def check_message(event: Event, *, index: int | None = None) -> None:
    """SESSION-MESSAGE-SHAPE, exactly as `envelope.check_message_shape` raises it."""
    if not message_ok(event):
        check_message_shape(event, index=index)
