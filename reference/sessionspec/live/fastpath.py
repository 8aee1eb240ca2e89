"""Fast accept, exact reject: the one faster form of each reference rule that needs one.

The reference (`jsonvalue`, `envelope`, `surface`) states every rule once, naively, and builds its
messages as it checks. The hot paths (a `live` append, `sessionspec check` on a long log) need
the same answers in less time, so each rule family that needs it has exactly one faster form,
here, shared by `live` and `logcheck`. A fast form only ever says "certainly valid": a predicate
returns True only where the reference accepts, and a fast form that returns a value (`owned`,
`request_parts`, `event_of`) returns the very value the reference returns. Anything else goes to
the reference function, which raises the exact SpecViolation (rule, kind, message, location). So
a fast path can only be too cautious (and slower), never more permissive.

Each fast form is declared with `@implies`: the reference function it implies and the rule IDs
it covers. `tests/test_fastpaths.py` reads the reference's source and fails when it raises a rule
the declaration misses (a rule added to the reference and not here), and holds each fast form to
its implication with a Hypothesis property; `proofs/obligations_fastpaths.py` states the same
implications for CrossHair where the solver can carry them (proofs/README.md).

Why not orjson for the lossless-JSON check: profiled on the 2,000-turn workload, a round trip
through orjson (dumps, loads, an equality check for what it converts silently) costs about as
much as the whole recursive check below, and the copy it returns must still be walked in Python
to freeze it. The walk is the cost; the checks ride along with it (benchmarks/README.md).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import islice
from operator import lt
from typing import Any, Final, TypeVar

import orjson

from sessionspec.catalog import ASSISTANT_MESSAGE, END_SEED, RETIRED_TYPES, SURFACE_TYPES, TOOL_RESULT, USER_MESSAGE
from sessionspec.envelope import (
    APPEND,
    APPEND_REQUEST_KEYS,
    Event,
    Replace,
    append_request_parts,
    build_event,
    parse_sources,
)
from sessionspec.jsonvalue import MAX_SAFE_INTEGER, FrozenDict, FrozenList, Json, snapshot
from sessionspec.legacy import check_current, may_upgrade
from sessionspec.shapes import check_message_shape
from sessionspec.surface import check_tool_result_rewrite, kept_by_rewrite, plan_replace

# --- the registry ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FastForm:
    """A faster form of reference checks: where `fast` accepts, every function of `reference` accepts.

    `rules` are the rule IDs the fast form decides itself; `assumes` those its callers have
    established before they call it (a precondition, said in the fast form's docstring). Together
    they cover every rule the reference functions raise.
    """

    fast: Callable[..., Any]
    reference: tuple[Callable[..., Any], ...]
    rules: tuple[str, ...]
    assumes: tuple[str, ...]

    @property
    def name(self) -> str:
        return f"{self.fast.__module__}.{self.fast.__qualname__}"


FAST_FORMS: list[FastForm] = []
"""Every declared fast form, in the order their modules were imported."""

_F = TypeVar("_F", bound=Callable[..., Any])


def implies(*, reference: Callable[..., Any] | tuple[Callable[..., Any], ...], rules: Sequence[str],
            assumes: Sequence[str] = ()) -> Callable[[_F], _F]:
    """Declare the decorated function a fast form of `reference` covering `rules`; returns it unchanged."""
    references = reference if isinstance(reference, tuple) else (reference,)

    def register(fast: _F) -> _F:
        FAST_FORMS.append(FastForm(fast, references, tuple(rules), tuple(assumes)))
        return fast

    return register


def rule_ids(family: str, first: int, last: int) -> tuple[str, ...]:
    """`family.first` to `family.last`: the rules of one family a fast form covers."""
    return tuple(f"{family}.{number}" for number in range(first, last + 1))


# --- SESSION-LOSSLESS-JSON: `owned` is `snapshot` ------------------------------------------------

_MAX = MAX_SAFE_INTEGER
_DEPTH = 64
"""Deeper values (and cycles, which are infinitely deep) go to the iterative `snapshot`."""

# Frozen containers are filled in C, the way their own constructors fill them, minus a Python frame.
_new_dict, _fill_dict = dict.__new__, dict.update
_new_list, _fill_list = list.__new__, list.extend
_set_item, _set_position = dict.__setitem__, list.__setitem__


class Unvouched(Exception):
    """The fast path cannot vouch for the value: let `snapshot` decide, and raise if it must."""


@implies(reference=snapshot, rules=rule_ids("SESSION-LOSSLESS-JSON", 1, 6))
def owned(value: object) -> Json:
    """`jsonvalue.snapshot(value)`: the same frozen copy, or the same SpecViolation.

    Accepts on the fast path only exact `dict` (or FrozenDict) with `str` keys, exact `list` (or
    FrozenList), `str`, `bool`, `None`, safe `int`s and finite non-negative-zero `float`s, at
    most 64 levels deep; anything else is re-read by `snapshot` from the start.
    """
    try:
        return owned_fast(value)
    except Unvouched:
        return snapshot(value)


def owned_fast(value: object) -> Json:
    """`owned(value)` where the fast path vouches for `value`; raises Unvouched where only `snapshot` may decide."""
    kind = type(value)
    if kind is str or kind is bool or value is None or (kind is int and -_MAX <= value <= _MAX):  # type: ignore[operator]
        return value
    if kind is dict or kind is FrozenDict or kind is list or kind is FrozenList:
        return _container(value, 0)
    if kind is float:
        return _float(value)  # type: ignore[arg-type]
    raise Unvouched


def _float(value: float) -> float:
    if math.isfinite(value) and (value != 0.0 or math.copysign(1.0, value) > 0):
        return value
    raise Unvouched


def _container(source: Any, depth: int) -> Any:
    """Copy a dict or list in C, then check every item and put frozen copies in place of the containers."""
    if depth > _DEPTH:
        raise Unvouched
    if type(source) is dict or type(source) is FrozenDict:
        frozen: Any = _new_dict(FrozenDict)
        _fill_dict(frozen, source)
        items: Any = source.items()
        put: Callable[[Any, Any, Any], None] = _set_item
    else:
        frozen = _new_list(FrozenList)
        _fill_list(frozen, source)
        items = enumerate(source)
        put = _set_position
    for key, child in items:
        if type(key) is not str and put is _set_item:
            raise Unvouched
        kind = type(child)
        if kind is str or kind is bool or child is None:
            continue
        if kind is int:
            if not -_MAX <= child <= _MAX:
                raise Unvouched
        elif kind is dict or kind is FrozenDict or kind is list or kind is FrozenList:
            put(frozen, key, _container(child, depth + 1))
        elif kind is float:
            _float(child)
        else:
            raise Unvouched
    return frozen


# --- SESSION-EVENT-ENVELOPE: the append request and the event ------------------------------------


@implies(reference=append_request_parts, rules=("SESSION-EVENT-ENVELOPE.1", "SESSION-EVENT-ENVELOPE.5",
                                                 "SESSION-EVENT-ENVELOPE.6"))
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
assert set(Event.__slots__) == set(_EVENT_FIELDS), "new_event must set every Event field"
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


_INT: Final = frozenset({int})


@implies(reference=parse_sources, rules=rule_ids("SESSION-SURFACE-PROVENANCE", 1, 5))
def sources_hold(event_type: str, seq: int, sources: Json) -> bool:
    """SESSION-SURFACE-PROVENANCE.1-.5 hold: a list of unique earlier seqs, empty only on an assistant message.

    `seq` is the event's own (a non-negative safe integer) and `sources` a lossless JSON value,
    as `owned` or a reader returns it. Spelled for the lists logs are full of: one source (a
    tool call), a run of consecutive seqs (an answer's chunks), an ascending list.
    """
    if not isinstance(sources, list):
        return False
    count = len(sources)
    if count == 1:
        only = sources[0]
        return type(only) is int and 0 <= only < seq
    if not count:
        return event_type == ASSISTANT_MESSAGE
    low = sources[0]
    if type(low) is int and low > 1 and sources == list(range(low, low + count)) and type(sum(sources)) is int:
        # A run of consecutive seqs: equal to ints above 1 (so no bool), an int sum (so no float), distinct.
        return low + count <= seq
    if set(map(type, sources)) != _INT:
        return False
    if all(map(lt, sources, islice(sources, 1, None))):
        # Ascending ints are distinct, from the first to the last.
        return low >= 0 and sources[-1] < seq  # type: ignore[no-any-return]
    return min(sources) >= 0 and max(sources) < seq and len(set(sources)) == count


_REPLACE_KEYS: Final = frozenset({"op", "start", "end"})


def _marker(surface_op: Json) -> Any:
    """What `parse_surface_op` returns for an owned marker it accepts ("append", or a Replace), else None.

    SESSION-SURFACE-PROJECTION.4: "append", or exactly {op: "replace", start, end} with
    non-negative safe integers; any other value is the reference's to refuse.
    """
    if type(surface_op) is str:
        return APPEND if surface_op == APPEND else None
    if (type(surface_op) is FrozenDict or type(surface_op) is dict) and surface_op.keys() == _REPLACE_KEYS:
        kind, start, end = surface_op["op"], surface_op["start"], surface_op["end"]
        if (type(kind) is str and kind == "replace" and type(start) is int and type(end) is int
                and 0 <= start <= _MAX and 0 <= end <= _MAX):
            return Replace(start, end)
    return None


@implies(reference=build_event, assumes=("SESSION-EVENT-ENVELOPE.2", "SESSION-EVENT-ENVELOPE.8"),
         rules=("SESSION-EVENT-ENVELOPE.7", *rule_ids("SESSION-CORE-EVENTS", 1, 2),
                *rule_ids("SESSION-SURFACE-PROJECTION", 1, 4), *rule_ids("SESSION-SURFACE-PROVENANCE", 1, 5)))
def event_of(event_type: str, seq: int, time: int, data: Json, surface_op: Json, has_op: bool, sources: Json,
             has_sources: bool, ignorable: bool, *, index: int | None = None) -> Event:
    """`envelope.build_event` for owned parts: the same Event, or the same SpecViolation.

    `event_type` has passed `check_type` (SESSION-EVENT-ENVELOPE.2 and .8: `live` checks it first, in
    the reference's order). The shapes almost every append has (a log-only event with no surface
    metadata, and a surface event appended or replacing with a valid marker and valid provenance)
    are built directly; every other shape, valid or not, goes through `build_event` and its rules.
    The reference formats every rule's message as it checks, which made a replace's build cost
    three times an append's. `index` is the seed index a rejection names (`build_event`'s).
    """
    if event_type in SURFACE_TYPES:
        marker = _marker(surface_op) if has_op and not ignorable else None
        if marker is not None:
            if not has_sources:
                return new_event(event_type, seq, time, data, marker, None, False)
            if sources_hold(event_type, seq, sources):
                frozen = sources if isinstance(sources, FrozenList) else FrozenList(sources)
                return new_event(event_type, seq, time, data, marker, frozen, False)
    elif not has_op and not has_sources and event_type not in RETIRED_TYPES and event_type != END_SEED:
        return new_event(event_type, seq, time, data, None, None, ignorable)
    return build_event(event_type, seq, time, data, surface_op, sources, ignorable,
                       has_surface_op=has_op, has_sources=has_sources, index=index)


# --- SESSION-MESSAGE-SHAPE ---------------------------------------------------------------------


@implies(reference=check_message_shape, rules=rule_ids("SESSION-MESSAGE-SHAPE", 1, 9))
def message_shape_holds(event_type: str, data: Json) -> bool:
    """SESSION-MESSAGE-SHAPE.1-.9 hold for an event of `event_type` carrying `data` (a lossless JSON value).

    A missing key, or a value of another kind where an object or array was wanted, ends the
    question at its lookup (KeyError, TypeError, IndexError): False, and the reference decides.
    Of the JSON values only an object answers a lookup by a string key, so a message, its source
    and its block that answer are objects. Non-empty strings are tested in line (`type(x) is str and x`)
    rather than by `jsonvalue.is_nonempty_str`: up to four calls a message were half of what
    this predicate added to the survey of a block (benchmarks/README.md).
    """
    try:
        message = data if event_type == USER_MESSAGE else data["message"]
        ident, role, source, content = message["id"], message["role"], message["source"], message["content"]
        kind = source["kind"]
        if (type(ident) is not str or not ident or type(kind) is not str or not kind or type(role) is not str
                or not isinstance(content, list)):
            return False
        if event_type == ASSISTANT_MESSAGE:
            provider, model = source["provider"], source["model"]
            return (role == "assistant" and kind == "model" and type(provider) is str and provider != ""
                    and type(model) is str and model != "")
        if role != "user":
            return False
        if event_type == USER_MESSAGE:
            return True
        call_id = source["callId"]
        if event_type != TOOL_RESULT or kind != "tool" or type(call_id) is not str or not call_id or len(content) != 1:
            return False
        block = content[0]
        return block["type"] == "tool-result" and isinstance(block["content"], list) and block["toolCallId"] == call_id
    except (KeyError, TypeError, IndexError):
        return False


def check_message(event: Event, *, index: int | None = None) -> None:
    """SESSION-MESSAGE-SHAPE, exactly as `shapes.check_message_shape` raises it."""
    if not message_shape_holds(event.type, event.data):
        check_message_shape(event, index=index)


# --- SESSION-LEGACY-UPGRADE.6 -------------------------------------------------------------------


@implies(reference=check_current, rules=("SESSION-LEGACY-UPGRADE.6",))
def current_holds(event_type: str, data: Json) -> bool:
    """SESSION-LEGACY-UPGRADE.6 holds for an event of `event_type` carrying `data`: no load upgrade applies to it.

    `legacy.may_upgrade` looks at the type and at most one key (and a turn/end's reason) where the
    reference runs the whole upgrade on a built event; where it says no upgrade could apply, none does.
    """
    return not may_upgrade(event_type, data)


# --- SESSION-SURFACE-REPLACE and SESSION-SURFACE-TOOL-RESULT -------------------------------------


def _kept_bytes(data: Json) -> bytes | None:
    """The canonical bytes of what a rewrite keeps of `data`; None where there is no one block (the shape is the
    reference's to refuse) or orjson cannot write it (a lone surrogate: JSONEncodeError is a TypeError)."""
    try:
        return orjson.dumps(kept_by_rewrite(data))
    except (KeyError, IndexError, TypeError, ValueError):
        return None


@implies(reference=check_tool_result_rewrite, rules=("SESSION-SURFACE-TOOL-RESULT.3",),
         assumes=("SESSION-SURFACE-TOOL-RESULT.1", "SESSION-SURFACE-TOOL-RESULT.2"))
def rewrite_keeps(target: Json, data: Json) -> bool:
    """SESSION-SURFACE-TOOL-RESULT.3 holds: `data` keeps what a rewrite of the result `target` must keep.

    Both are lossless JSON tool/result data, and the caller knows the rewrite shadows exactly
    the one tool/result `target` (.1, .2). Equal canonical bytes (same keys in the same order,
    same typed values) imply `json_equal` of `surface.kept_by_rewrite` of each; unequal bytes (a
    key order changed, say) only mean the reference must decide.
    """
    kept = _kept_bytes(target)
    return kept is not None and kept == _kept_bytes(data)


def _itself(data: Json) -> Json:
    return data


@implies(reference=plan_replace, rules=("SESSION-SURFACE-REPLACE.1", "SESSION-SURFACE-REPLACE.2",
                                        "SESSION-SURFACE-PROVENANCE.6", *rule_ids("SESSION-SURFACE-TOOL-RESULT", 1, 3)))
def replace_holds(nodes: Sequence[int], current: Mapping[int, tuple[str, Any]], event_type: str, start: int, end: int,
                  sources: Sequence[int] | None, data: Json,
                  resolve: Callable[[Any], Json] = _itself) -> tuple[int, int] | None:
    """`surface.plan_replace` accepts: the positions (first, last) of the range it shadows, else None.

    `current` maps exactly the seqs of `nodes` to their (type, data), `resolve(data)` giving the
    JSON data where it is kept in another form; `sources` has passed `sources_hold`.
    """
    if not sources or start not in current or end not in current:
        return None
    first = nodes.index(start)
    last = first if end == start else nodes.index(end)
    shadowed = nodes[first : last + 1]
    if not shadowed or not set(sources).issuperset(shadowed):
        return None
    if event_type == TOOL_RESULT:
        kind, target = current[start]
        if len(shadowed) != 1 or kind != TOOL_RESULT or not rewrite_keeps(resolve(target), data):
            return None
    return first, last
