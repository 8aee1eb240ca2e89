"""Breaking one field: any place of a valid request, seed, header or log, made wrong in one of the ways a value can be.

The hand-picked invalid requests of `testing.invalid` each break one thing the authors thought of,
and the mutation study (issue 16) found what they never thought of: a seed that is not a list, a
non-contiguous seed, an assistant message without `source.model`, `sourceEventSeqs` that is not a
list, two faults in one request, requests that are not objects, unsafe integers and `-0.0` nested
in lists of objects. So this module thinks of nothing: it takes a valid document, picks any
place in it (the root, a key, an item, at any depth) and breaks the value there in one of eight
ways (`HOWS`): a value of another type, the value missing, an extra key or item, an empty value,
an unsafe integer, negative zero, a duplicate (an item twice, or a key written twice: a raw line),
or a value out of range. Sometimes it breaks two places (a double fault: spec/04's check order
decides which rule the reference reports, and the testee must report the same kind).

It does not know the rule it breaks: the reference decides (the rules a hand-picked invalid
request expects are `testing.invalid`'s); the conformance machine compares whatever the reference
answers with what the testee answers. Choices are made by a chooser (`testing.choose`): seeded for
the runner's speed, or drawn by Hypothesis (`as_strategy`) for shrinking.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Final

import orjson

from sessionspec.jsontext import dumps as lossless_dumps
from sessionspec.jsonvalue import MAX_SAFE_INTEGER, thaw
from sessionspec.testing.builders import (
    CONFIG,
    assistant_message,
    request_header,
    text_block,
    tool_call,
    tool_call_block,
    tool_result,
    user_message,
)
from sessionspec.testing.choose import Choose, one, valid_append
from sessionspec.testing.edges import edge_request
from sessionspec.testing.near_misses import NON_JSON, tagged
from sessionspec.testing.strategies import View

Path = tuple[str | int, ...]
HOWS: Final = ("type", "missing", "extra", "empty", "unsafe", "negzero", "duplicate", "range")
PLACES: Final = 400
"""Places considered in one document at most (a deep value has as many places as levels)."""
_DUPLICATE: Final = "\x01duplicate\x01"
_DUPLICATE_TEXT: Final = b'"\\u0001duplicate\\u0001":'


def places(value: Any, *, below: Callable[[Path], bool] = lambda path: True) -> list[Path]:
    """Every place of `value`, the root first, depth first (at most PLACES); `below(path)` says whether to go inside."""
    out: list[Path] = []
    stack: list[tuple[Path, Any]] = [((), value)]
    while stack and len(out) < PLACES:
        path, item = stack.pop()
        out.append(path)
        if not below(path):
            continue
        if isinstance(item, dict):
            stack.extend(((*path, key), child) for key, child in reversed(list(item.items())))
        elif isinstance(item, list):
            stack.extend(((*path, position), child) for position, child in reversed(list(enumerate(item))))
    return out


def plain_copy(value: Any) -> Any:
    """A plain deep copy of a JSON value (frozen or not)."""
    try:
        return orjson.loads(orjson.dumps(value))
    except (TypeError, orjson.JSONEncodeError):
        return thaw(value)


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _wrong_types(value: Any) -> list[Any]:
    """Values of every other JSON type (an int also as the equal float: 3 and 3.0)."""
    candidates: tuple[Any, ...] = (None, True, 7, 1.5, "x", [], {})  # built afresh: the caller may change them
    out = [v for v in candidates if _kind(v) != _kind(value)]
    if type(value) is int:
        out.insert(0, float(value))
    return out


def _empty(value: Any) -> Any:
    return {str: "", list: [], dict: {}, bool: False, int: 0, float: 0.0}.get(type(value), "")


def _out_of_range(value: Any, seq: int) -> list[Any]:
    if type(value) in (int, float):
        return [-1, seq, seq + 1, MAX_SAFE_INTEGER]
    if type(value) is str:
        return ["zzz", value.upper() if value != value.upper() else value.lower() + "z", " " + value]
    if type(value) is list:
        return [value * 2 if value else [0, 0]]
    return [-1, "zzz"]


class _Broken(Exception):
    """This way of breaking does not apply at this place (the caller falls back to another type)."""


def _replace(document: Any, path: Path, value: Any) -> Any:
    if not path:
        return value
    parent = _at(document, path[:-1])
    parent[path[-1]] = value
    return document


def _at(document: Any, path: Path) -> Any:
    for key in path:
        document = document[key]
    return document


def _remove(document: Any, path: Path) -> Any:
    if not path:
        return None  # the whole request missing: a line holding `null`
    del _at(document, path[:-1])[path[-1]]
    return document


def _extra(document: Any, path: Path, variant: int) -> Any:
    target = _at(document, path)
    key = ("extra", "x-extra", "$unknown")[variant % 3]
    if isinstance(target, dict):
        target[key] = 1
    elif isinstance(target, list):
        target.append(plain_copy(target[-1]) if target else 1)
    elif path and isinstance(parent := _at(document, path[:-1]), dict):
        parent[key] = 1
    else:
        raise _Broken
    return document


def _duplicate(document: Any, path: Path, variant: int) -> Any:
    """An item twice, or (in an object) a key written twice: a raw line, since no object can hold that."""
    target = _at(document, path)
    if isinstance(target, list) and target:
        target.insert(0, plain_copy(target[0]))
        return document
    parent = _at(document, path[:-1]) if path else None
    if isinstance(parent, list):
        parent.insert(path[-1], plain_copy(target))  # type: ignore[arg-type]
        return document
    if isinstance(target, dict) and target:
        parent, key = target, list(target)[variant % len(target)]
    elif isinstance(parent, dict):
        key = path[-1]
    else:
        raise _Broken
    again = plain_copy(parent[key]) if variant % 2 == 0 else _wrong_types(parent[key])[0]
    items = list(parent.items())
    parent.clear()
    for name, value in items:
        parent[name] = value
        if name == key:
            parent[_DUPLICATE] = again
    line = _text(document)
    if _DUPLICATE_TEXT not in line:
        raise _Broken
    return line.replace(_DUPLICATE_TEXT, json.dumps(key).encode() + b":", 1).decode("utf-8")


def _text(document: Any) -> bytes:
    try:
        return orjson.dumps(document)
    except (TypeError, orjson.JSONEncodeError):
        return lossless_dumps(document).encode("utf-8")


def break_at(document: Any, path: Path, how: str, variant: int, seq: int = 0) -> Any:
    """A copy of `document` with the value at `path` broken `how` (one of HOWS); a str is a raw request line."""
    copy = plain_copy(document)
    value = _at(copy, path)
    try:
        if how == "missing":
            return _remove(copy, path)
        if how == "extra":
            return _extra(copy, path, variant)
        if how == "duplicate":
            return _duplicate(copy, path, variant)
        if how == "empty":
            if value == _empty(value) and type(value) is type(_empty(value)):
                raise _Broken
            return _replace(copy, path, _empty(value))
        if how == "unsafe":
            return _replace(copy, path, (MAX_SAFE_INTEGER + 1, -(MAX_SAFE_INTEGER + 1), 2**64, -(10**30))[variant % 4])
        if how == "negzero":
            return _replace(copy, path, (-0.0, [-0.0], {"z": [-0.0]})[variant % 3])
        if how == "range":
            options = _out_of_range(value, seq)
            return _replace(copy, path, options[variant % len(options)])
    except _Broken:
        pass
    options = _wrong_types(value)
    return _replace(copy, path, options[variant % len(options)])


def break_somewhere(choose: Choose, document: Any, seq: int, *, below: Callable[[Path], bool] = lambda path: True) -> Any:
    """`document` broken at one place chosen among its places (one time in four at two: a double fault)."""
    broken = break_at(document, one(choose, places(document, below=below)), one(choose, HOWS), choose(8), seq)
    if isinstance(broken, (dict, list)) and choose(4) == 3:
        broken = break_at(broken, one(choose, places(broken, below=below)), one(choose, HOWS), choose(8), seq)
    return broken


# --- what is broken ----------------------------------------------------------------------------


def _logged(event: dict[str, Any]) -> dict[str, Any]:
    """A logged event as the append request that wrote it."""
    return {"op": "append", **{k: v for k, v in event.items() if k not in ("seq", "time")}}


_IMAGE = {"type": "image", "attachment": {"attachmentId": "att1", "mediaType": "image/png", "bytes": 12, "width": 3,
                                          "height": 4}}
_NESTED = {"items": [{"n": 1, "tags": ["a", 2.5, None, True]}, {"n": 2, "more": {"deep": [[0]]}}], "x": [1, [2, [3]]]}
TEMPLATES: Final[tuple[dict[str, Any], ...]] = (
    {"type": "user/message", "surfaceOp": "append",
     "data": {**user_message("u1", "hello"), "content": [text_block("hi"), _IMAGE, {"type": "x-plugin/note", "value": _NESTED}]}},
    {"type": "user/message", "surfaceOp": "append", "data": user_message("k1", "summary", kind="plugin", plugin="compaction")},
    {"type": "assistant/message", "surfaceOp": "append", "sourceEventSeqs": [],
     "data": {**assistant_message("a1", [text_block("ok"), {"type": "reasoning", "text": "r"}, tool_call_block("c1")]),
              "usage": {"inputTokens": 10, "outputTokens": 2}}},
    {"type": "tool/result", "surfaceOp": "append",
     "data": {**tool_result("c1", "out", isError=True), "meta": _NESTED, "error": {"name": "ToolError", "code": "E1"}}},
    {"type": "request/header",
     "data": request_header({**CONFIG, "reasoningEffort": "high", "maxTokens": 8}, system="be brief",
                            adapterDefaults={"maxTokens": True, "reasoningEffort": True},
                            tools=[{"name": "bash", "description": "run", "parameters": {"type": "object"}}])},
    {"type": "request/context", "data": dict(CONFIG)},
    {"type": "todo/write", "data": {"todos": [{"content": "read", "status": "pending"}, {"content": "x", "status": "completed"}]}},
    {"type": "turn/start", "data": {"turn": 1}},
    {"type": "turn/end", "data": {"turn": 1, "reason": {"kind": "completed"}}},
    {"type": "step/start", "data": {"turn": 1, "step": 1}},
    {"type": "assistant/chunk", "data": {"turn": 1, "step": 1, "chunk": {"type": "text-delta", "index": 0, "text": "p"}}},
    {"type": "tool/call", "data": tool_call("c1")},
    {"type": "plugin/note", "data": _NESTED},
    {"type": "x-vendor/metric", "data": {"value": 1.5, "series": [{"t": 1, "v": [0.25]}]}, "ignorable": True},
)
"""One valid append of every shape spec/02 defines, with nested values where a shape allows them."""


def broken_append(choose: Choose, view: View) -> Any:
    """An append request (a template, or an event of the log appended again) broken somewhere; or, one time in
    four, a request at one of the fast forms' special cases (`testing.edges`: a scalar or deep data, provenance
    out of order, several fields of another shape, equal ids that are not strings, lone surrogates a rewrite
    keeps, a line in another spelling), which breaking one place of a template reaches rarely or never."""
    if choose(4) == 0:
        return edge_request(choose, view)
    if view.events and choose(2):
        base = _logged(one(choose, view.events))
    else:
        base = {"op": "append", **one(choose, TEMPLATES)}
    return break_somewhere(choose, base, view.seq)


FULL_HEADER: Final = {"version": 0, "id": "", "createdAt": 1, "cwd": "/w", "parentSession": "p", "seedLength": 0,
                      "origin": "subagent", "delegationDepth": 1, "agentPreset": "coder"}


def broken_log_request(choose: Choose, view: View, session_id: str) -> Any:
    """A create (its seed, its header, its id), fold or repair request over a prefix of the log, broken somewhere.

    The places of the events are chosen in two steps (an event, then a place inside it), so a long
    log does not make every draw enumerate all of it.
    """
    events = list(view.events[: choose(len(view.events) + 1)])
    op = one(choose, ("create", "create", "fold", "repair"))
    key = "seed" if op == "create" else "events"
    if op == "create":
        header = one(choose, (None, {**FULL_HEADER, "id": session_id, "seedLength": len(events)},
                              {"version": 0, "id": session_id, "createdAt": 0}))
        base: dict[str, Any] = {"op": "create", "id": session_id, "seed": events, "header": header}
    else:
        base = {"op": op, "events": events}
    if events and choose(2):
        position = choose(len(events))
        inner = break_somewhere(choose, events[position], view.seq)
        if isinstance(inner, str):  # a key written twice in the event: keep the event as it was, break its seq
            inner = {**events[position], "seq": position + 1}
        base[key] = [*events[:position], inner, *events[position + 1:]]
        return base
    return break_somewhere(choose, base, view.seq, below=lambda path: not (path[:1] == (key,) and len(path) >= 2))


CARRIED_NON_JSON: Final[tuple[Callable[[], Any], ...]] = tuple(
    make for make in NON_JSON if type(make()) in (int, float, tuple, frozenset, bytes, dict))
"""The values JSON text cannot carry that an `x-append` carries as themselves (`near_misses.tagged`): unsafe
integers, NaN, the infinities, -0.0, a tuple, a frozenset, bytes, a non-string key. A subclass of a JSON type
arrives as the type itself, so it is left out."""


def non_json_append(choose: Choose, view: View) -> dict[str, Any]:
    """An `x-append` (x-inprocess): a valid append (a template, or one continuing the log) with a value JSON text
    cannot carry in place of, or beside, the value at one place of it, at any depth. A request line cannot carry
    such a value (the lossless text reader refuses the line first), so only this op reaches a store's own check of
    decision 4 across the wire; a store that waves one through, or crashes on it, is met here."""
    request = plain_copy(one(choose, TEMPLATES)) if choose(2) else plain_copy(valid_append(choose, view))
    path = one(choose, [place for place in places(request) if place and place[0] != "type"])
    value = one(choose, CARRIED_NON_JSON)()
    parent = _at(request, path[:-1])
    if isinstance(parent, list) and choose(2):
        parent.insert(int(path[-1]), value)
    else:
        parent[path[-1]] = value
    return {"op": "x-append", "request": tagged(request)}


def deep_line(depth: int, *, accepted: bool) -> str:
    """An append whose data is nested `depth` deep: a valid log-only event, or a user message without a surfaceOp."""
    data = "[" * depth + "]" * depth if accepted else '{"a":' * depth + "1" + "}" * depth
    kind = "plugin/note" if accepted else "user/message"
    return '{"op":"append","type":"' + kind + '","data":' + data + "}"


ODD_LINES: Final = (
    "null", "[]", '["snapshot"]', '"snapshot"', "1", "true", "{}", '{"op":1}', '{"op":""}', '{"op":"compact"}',
    '{"op":"Snapshot"}', "not json", '{"op":"snapshot"', '{"op":"snapshot"} {}', '\ufeff{"op":"snapshot"}',
    '{"op":"snapshot","op":"snapshot"}', '{"op":"snapshot","x-nonsense":1}', '{"op":"snapshot","x-time":1.5}',
    '{"op":"append","type":"plugin/note","data":-0}', '{"op":"append","type":"plugin/note","data":[{"x":-0e0}]}',
    '{"op":"append","type":"plugin/note","data":{"x":1e400}}', '{"op":"append","type":"plugin/note","data":[9007199254740993]}',
    '{"op":"append","type":"plugin/note","data":"\udcff"}', '{"op":"append","type":"plugin/note","data":"\\ud800"}',
    '{"op":"append","type":"plugin/note","data":{"a":1,"a":2}}', '{"op":"fold","events":{}}', '{"op":"repair"}',
    '{"op":"create","id":"s","seed":null}', '{"op":"hello","extra":1}', "",
)
"""Lines that are not a request the protocol accepts, or that the lossless reader must refuse (spec/10, spec/01)."""


def odd_line(choose: Choose) -> str:
    """A line from ODD_LINES, or (one time in 64) one nested a few thousand deep (spec/10: it must be answered).

    A deep line is rare, and accepted one time in four: reading it takes milliseconds, and once one is
    in the log every snapshot after it carries it.
    """
    if choose(64) == 0:
        return deep_line(2_000, accepted=choose(4) == 0)
    return one(choose, ODD_LINES)

__all__ = ["CARRIED_NON_JSON", "HOWS", "TEMPLATES", "break_at", "break_somewhere", "broken_append", "broken_log_request", "deep_line",
           "non_json_append", "odd_line", "places", "plain_copy"]
