"""Obligations of the fast paths: where a fast form accepts, the reference it speeds up accepts.

One per fast form the solver can carry (`live.fastpath.implies` declares them; proofs/README.md
says which it cannot, and why, and there the Hypothesis property in tests/test_fastpaths.py is
the obligation). Each returns (the fast form's answer, the reference's answer) and its `ensure`
says the first implies the second, or, for a fast form that returns a value, that they are equal.
Inputs are ints and short int lists, decoded here (`harness.pick`) into the values a field may hold:
valid ones and the near misses of its rule (empty, wrong kind, a bool for an int, unsafe, absent).
"""

from __future__ import annotations

import math

import icontract
from harness import ABSENT, accepts, outcome, pick
from sessionspec.envelope import Event, Replace, append_request_parts, build_event, parse_event, parse_sources
from sessionspec.errors import SpecViolation
from sessionspec.jsonvalue import FrozenList, snapshot
from sessionspec.legacy import check_current
from sessionspec.live.fastpath import (
    current_holds,
    event_of,
    message_shape_holds,
    owned,
    replace_holds,
    request_parts,
    sources_hold,
)
from sessionspec.live.fastrecord import stored_event
from sessionspec.shapes import check_message_shape
from sessionspec.surface import plan_replace

SURFACE = ("user/message", "assistant/message", "tool/result")
TEXTS = ("", "m", 5, None, True, ABSENT)
"""What a string field may hold: the empty string, a good one, a number, null, a bool, nothing."""


SEQS = (0, 1, 2, 5, 9, 2**53 - 1)
"""The event seqs tried: the reference formats the seq into its messages (f-strings realize a symbolic int, which
ends the solver's search over it), so the solver chooses among these instead of solving for one."""


def _source(n: int, seq: int) -> object:
    """An int as a source of the event at `seq`: below it, it, beyond it, negative, or a near miss of a seq."""
    return pick(n, (0, 1, seq - 1, seq, seq + 1, -1, True, 2.0, "1"))


@icontract.require(lambda raw: len(raw) <= 4)
@icontract.ensure(lambda result: not result[0] or result[1], "sources_hold implies parse_sources accepts")
def sources_fast_accept_implies_reference(kind: int, at: int, run: bool, count: int, end: int,
                                          raw: list[int]) -> tuple[bool, bool]:
    """A source list the fast form accepts is one `parse_sources` accepts (SESSION-SURFACE-PROVENANCE.1-.5).

    The list is a run of 0-4 consecutive seqs ending two below, one below, at or one above the
    event's seq (what an answer's chunks give), or up to four sources each picked by `_source`.
    Guards against: the consecutive-run shortcut taking a bool or a float for a seq, or letting
    the last source reach the event's own seq; an empty list passed on a non-assistant event.
    """
    event_type, seq = pick(kind, SURFACE), pick(at, SEQS)
    last = seq + pick(end, (-2, -1, 0, 1))
    sources = list(range(last - count % 5 + 1, last + 1)) if run else [_source(n, seq) for n in raw]
    return sources_hold(event_type, seq, sources), accepts(lambda: parse_sources(event_type, seq, FrozenList(sources)))


def _message(kind: str, changes: tuple[tuple[int, int], ...]) -> object:
    """The data of a valid `kind` event, with each (field, variant) of `changes` set to that variant (1 is valid)."""
    f = [1] * 12
    for field, variant in changes:
        f[field % 12] = variant
    source = {"kind": pick(f[0], ("", {"user/message": "user", "assistant/message": "model", "tool/result": "tool"}[kind],
                                      "tool", 5, ABSENT)),
              "provider": pick(f[1], TEXTS), "model": pick(f[2], TEXTS), "callId": pick(f[3], ("", "c1", "c2", 5, ABSENT))}
    block = {"type": pick(f[4], ("text", "tool-result", ABSENT)), "toolCallId": pick(f[5], ("c2", "c1", None, ABSENT)),
             "content": pick(f[6], ("x", [], ABSENT))}
    content = pick(f[7], ([], [block], [block, block], "x", ABSENT))
    role = pick(f[8], ("", "assistant" if kind == "assistant/message" else "user", "user", "assistant", 1, ABSENT))
    message = {"id": pick(f[9], TEXTS), "role": role, "source": pick(f[10], ("x", source, [source], ABSENT)),
               "content": content}
    message = {key: value for key, value in message.items() if value is not ABSENT}
    for part in (source, block):
        for key in [key for key, value in part.items() if value is ABSENT]:
            del part[key]
    return message if kind == "user/message" else {"turn": 1, "message": pick(f[11], ("x", message, ABSENT))}


@icontract.ensure(lambda result: not result[0] or result[1], "message_shape_holds implies check_message_shape accepts")
def message_shape_fast_accept_implies_reference(kind: int, field: int, variant: int) -> tuple[bool, bool]:
    """A message the fast form accepts is one `check_message_shape` accepts (SESSION-MESSAGE-SHAPE.1-.8).

    The message is valid but for one of its fields, set to a near miss of it: a space the solver
    can cover at the quick bounds (several changes at once are the Hypothesis property's).
    Guards against: a fast form that forgets a field (the block's toolCallId matching the call),
    takes a number or an empty string for an id, or accepts a user role on an assistant message.
    """
    event_type = SURFACE[kind % 3]
    data = _message(event_type, ((field, variant),))
    return message_shape_holds(event_type, data), accepts(lambda: check_message_shape(Event(event_type, 0, 0, data)))


_TURN_TYPES = ("turn/end", "turn/start", "steering/message", "user/message", "assistant/message", "tool/result", "x/audit")
_REASON_KINDS = ("completed", "blocked", "max-tokens", "interrupted", "aborted", "disposed", "error", "legacy", 5, ABSENT)
_REASON_EXTRAS = (ABSENT, ("reason", {"kind": "legacy"}), ("error", {"message": "m", "code": "c"}), ("message", "m"),
                  ("step", 1), ("failure", {"message": "m", "code": "c"}))


@icontract.ensure(lambda result: not result[0] or result[1], "current_holds implies check_current accepts")
def current_fast_accept_implies_reference(kind: int, reason_kind: int, extra: int, extra2: int, trigger: bool,
                                          as_list: bool) -> tuple[bool, bool]:
    """An event the fast form calls current is one no load upgrade rewrites or refuses (SESSION-LEGACY-UPGRADE.6).

    The data is a turn/start (with or without a trigger), a turn/end whose reason has one of the
    known kinds (or none, or a number) with up to two extra keys of the legacy shapes, or the same
    object under another type, or the reason itself as a list. Guards against: the cheap test
    reading a frozen object as no object at all (it once did: `type(data) is dict`), or missing a
    reason that carries a key besides its kind.
    """
    event_type = pick(kind, _TURN_TYPES)
    reason: dict[str, object] = {}
    if pick(reason_kind, _REASON_KINDS) is not ABSENT:
        reason["kind"] = pick(reason_kind, _REASON_KINDS)
    for n in (extra, extra2):
        part = pick(n, _REASON_EXTRAS)
        if isinstance(part, tuple):
            reason[part[0]] = part[1]
    data: dict[str, object] = {"turn": 1, "reason": [reason] if as_list else reason}
    if trigger:
        data["trigger"] = {"kind": "user"}
    frozen = snapshot(data)
    return current_holds(event_type, frozen), accepts(lambda: check_current(Event(event_type, 0, 0, frozen)))


_REQUEST_KEYS = ("op", "type", "data", "surfaceOp", "sourceEventSeqs", "ignorable", "extra")
_REQUEST_VALUES = ((ABSENT, "append"), ("turn/start", ABSENT, ""), ({}, ABSENT, None), (ABSENT, "append", None),
                   (ABSENT, [0], None), (ABSENT, True, False, "yes"), (ABSENT, 1))
"""Each key of an append request and what it may hold; the first is a valid request's (absent or valid)."""


@icontract.ensure(lambda result: result[0] == result[1], "request_parts returns what append_request_parts returns")
def request_parts_is_the_reference(key: int, variant: int, key2: int, variant2: int) -> tuple[object, object]:
    """An append request's parts, or its rejection, are the reference's (SESSION-EVENT-ENVELOPE.1, .5, .6).

    The request is valid but for at most two keys, each set to one of its values. Guards against:
    a request with an unknown key, no data or `ignorable: false` taken as valid.
    """
    picks = [0] * len(_REQUEST_KEYS)
    picks[key % len(picks)] = variant
    picks[key2 % len(picks)] = variant2
    request = {name: pick(n, values) for name, n, values in zip(_REQUEST_KEYS, picks, _REQUEST_VALUES, strict=True)}
    request = {name: value for name, value in request.items() if value is not ABSENT}
    return outcome(lambda: request_parts(request)), outcome(lambda: append_request_parts(request))


_TYPES = ("user/message", "assistant/message", "tool/result", "turn/start", "mode/set", "session/end-seed", "x/custom")
_OPS = ((None, False), (None, True), ("append", True), ("Append", True), ({"op": "replace", "start": 0, "end": 0}, True),
        ({"op": "replace", "start": 0}, True), (["append"], True))


@icontract.require(lambda raw: len(raw) <= 3)
@icontract.ensure(lambda result: result[0] == result[1], "event_of returns what build_event returns")
def event_of_is_build_event(kind: int, at: int, part: int, variant: int, part2: int, variant2: int,
                            raw: list[int]) -> tuple[object, object]:
    """For the parts `live` hands it, `event_of` builds the reference's event or raises its violation
    (SESSION-EVENT-ENVELOPE.7, SESSION-CORE-EVENTS, SESSION-SURFACE-PROJECTION, SESSION-SURFACE-PROVENANCE.1-.5).

    The parts are a valid append of the type (a surface type appended, a log-only type bare) but
    for at most two of marker, sources and ignorable, each set to one of its values. Guards
    against: the direct build taking an ignorable surface event, a retired type, a marker without
    its empty data, or a log-only event with surface metadata.
    """
    event_type, seq = _TYPES[kind % len(_TYPES)], pick(at, SEQS[:-1])  # whose sources are all safe integers
    picks = [2 if event_type in SURFACE else 0, 0, 0]
    picks[part % 3] = variant
    picks[part2 % 3] = variant2
    surface_op, has_op = pick(picks[0], _OPS)
    sources, has_sources = pick(picks[1], ((None, False), (None, True), (snapshot([_source(n, seq) for n in raw]), True)))
    ignorable = pick(picks[2], (False, True))
    data = snapshot(_message("user/message", ()) if event_type == "user/message" else {})
    parts = (event_type, seq, 0, data, snapshot(surface_op), has_op, sources, has_sources, ignorable)
    flags = {"has_surface_op": has_op, "has_sources": has_sources}
    return outcome(lambda: event_of(*parts)), outcome(lambda: build_event(*parts[:5], sources, ignorable, **flags))


def _leaf(n: int) -> object:
    """An int as a JSON leaf or a near miss of one: itself, unsafe, a bool, -0.0, NaN or n/8 (exact in binary)."""
    choice = n % 6
    if choice == 0:
        return n * 2**40
    if choice == 1:
        return n
    if choice == 2:
        return n > 0
    if choice == 3:
        return -0.0
    if choice == 4:
        return math.nan
    return n / 8


@icontract.require(lambda keys, numbers: len(keys) <= 3 and len(numbers) <= 3)
@icontract.ensure(lambda result: result[0] == result[1], "owned returns what snapshot returns")
def owned_is_snapshot(keys: list[int], numbers: list[int]) -> tuple[object, object]:
    """`owned` returns `snapshot`'s frozen copy or raises its violation (SESSION-LOSSLESS-JSON.1-.6).

    Guards against: the recursive fast walk letting through a value the iterative one refuses
    (an unsafe int, -0.0, NaN at some depth) or freezing a different copy. Containers are built
    here from ints, so they are real dicts and lists (as in obligations_json).
    """
    leaves = [_leaf(n) for n in numbers]
    names = ("a", "b", "c")
    value = {names[i]: [*leaves[: key % 4], {"n": leaves[:1]}] for i, key in enumerate(keys[:3])}
    return outcome(lambda: owned(value)), outcome(lambda: snapshot(value))


NODES = (5, 0, 3, 6, 2)
"""Surface nodes in an order that is not seq order: a range is read by position."""
_RESULT = {"turn": 1, "message": {"id": "r", "role": "user", "source": {"kind": "tool", "callId": "c1"},
                                  "content": [{"type": "tool-result", "toolCallId": "c1", "content": []}]}}
_REWRITES = tuple(snapshot({**_RESULT, "turn": turn}) for turn in (0, 1, 2))
"""A tool result's data, and its rewrites: the one with `turn` 1 keeps what a rewrite must keep. Built once,
concretely, outside the solver's paths (it is the solver's time that the quick bounds limit)."""
_LOG = tuple((Event("user/message", n, 0, snapshot(_message("user/message", ())), "append"),
              Event("tool/result", n, 0, _REWRITES[1], "append")) for n in range(8))


@icontract.require(lambda raw: len(raw) <= 4 and len(set(raw)) == len(raw) and all(0 <= s < 8 for s in raw))
@icontract.ensure(lambda result: not result[0] or result[1], "replace_holds implies plan_replace accepts the same range")
def replace_fast_accept_implies_reference(size: int, results: int, first: int, last: int, anywhere: bool, cover: int,
                                          raw: list[int], rewrite: int) -> tuple[bool, bool]:
    """A replace the fast form places is one `plan_replace` accepts, at the same positions
    (SESSION-SURFACE-REPLACE.1-.2, SESSION-SURFACE-PROVENANCE.6, SESSION-SURFACE-TOOL-RESULT.1-.3).

    The surface is the first 1-5 of NODES, the tool results among them named by the bits of
    `results`; the range runs from position `first` to `last` (or from and to any seq below 8),
    and its sources are the shadowed nodes, all but the last of them, or `raw`. Guards against:
    a range read by seq instead of by position, sources that miss a shadowed node, a tool-result
    rewrite of two nodes or of a user message, or one that changes more than its output.
    """
    # Comprehensions and comparisons, not slices: the solver forks on a comparison but settles a slice bound.
    nodes = [node for position, node in enumerate(NODES) if position <= size % 5]
    low, high = min(first % len(nodes), last % len(nodes)), max(first % len(nodes), last % len(nodes))
    start, end = (first % 8, last % 8) if anywhere else (nodes[first % len(nodes)], nodes[last % len(nodes)])
    shadowed = [node for position, node in enumerate(nodes) if low <= position <= high]
    sources = pick(cover, (shadowed, [node for node in shadowed if node != nodes[high]], raw))
    log = [_LOG[n][results >> n & 1 if n in nodes else 0] for n in range(8)]
    event_type = "tool/result" if rewrite % 3 else "user/message"
    data = pick(rewrite, _REWRITES)
    landed = replace_holds(nodes, {n: (log[n].type, log[n].data) for n in nodes}, event_type, start, end, sources, data)
    if landed is None:
        return False, True
    event = Event(event_type, 8, 0, data, None, FrozenList(sources))
    try:
        planned = plan_replace(nodes, log, event, Replace(start, end))
    except SpecViolation:
        return True, False
    return True, (planned.first, planned.last) == landed


_ENVELOPE_VALUES = (
    ("type", ("turn/start", "user/message", "", 5, ABSENT)),
    ("seq", (0, 3, -1, True, 2**53, ABSENT)),
    ("time", (0, -5, 1.5, 2**53, ABSENT)),
    ("data", ({}, None, [0], ABSENT)),
    ("surfaceOp", (ABSENT, "append", None, {"op": "replace", "start": 0, "end": 0})),
    ("ignorable", (ABSENT, True, False, 1)),
    ("extra", (ABSENT, 0)),
)
"""Each envelope key with its values: first a valid one (of a log-only event, bare), then near misses of its rule."""


@icontract.ensure(lambda result: result[0] == result[1], "stored_event returns what parse_event returns")
def stored_event_is_parse_event(key: int, variant: int, key2: int, variant2: int, index: int) -> tuple[object, object]:
    """For a stored record with at most two envelope keys changed, `stored_event` returns the reference's event or
    raises its violation (SESSION-EVENT-ENVELOPE.1-.8, SESSION-CORE-EVENTS, SESSION-SURFACE-PROJECTION).

    Guards against: the plain-record test taking a record the reference refuses (a bool seq, an unsafe time, an
    empty type, `ignorable` that is not exactly true, an unknown key, no data) or building another event from it.
    Its parts' own fast forms have their obligations (`owned_is_snapshot`, `event_of_is_build_event`).
    """
    picks = [0] * len(_ENVELOPE_VALUES)
    picks[key % len(picks)] = variant
    picks[key2 % len(picks)] = variant2
    raw: dict[str, object] = {}
    for (name, values), chosen in zip(_ENVELOPE_VALUES, picks, strict=True):
        value = pick(chosen, values)
        if value is not ABSENT:
            raw[name] = value
    if raw.get("type") == "user/message" and "data" in raw:
        raw["data"] = _message("user/message", ())
    at = pick(index, (0, 3))
    return outcome(lambda: stored_event(raw, at)), outcome(lambda: parse_event(raw, at))
