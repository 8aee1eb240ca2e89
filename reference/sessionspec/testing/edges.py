"""The fast forms' special cases, each met from both sides: requests generated from what `live/fastpath.py` decides alone.

A fast form (spec/README.md) decides the common case itself and hands every other case to the
reference. Each special case it makes (a type, a depth, an order, a length, an identity, an
encoding) is a boundary a bug can move, and the strategies that draw valid requests stay well
inside it: an independent mutation study (issue 25) found mutants of the store surviving the whole
oracle because no generator sent a top-level float, a value deeper than the fast walk's depth, an
unordered provenance list ending at the new seq, a message with several fields of another shape,
two equal ids that are not strings, or a lone surrogate on both sides of a tool-result rewrite.
`SPECIAL_CASES` lists every special case of the fast forms with the generator here that produces
inputs on both sides of it; `edge_request` draws one of them. Whether a request is valid is not
decided here: the reference says, and the machines require the implementation to say the same.

Generators take a chooser (`testing.choose`) and the session's view, so the conformance machine
(through `breaking.broken_append`), the in-process machine (`sessionspec.testing.machine`, every
kind each step) and the tests draw the same inputs. Values nested deeper than a request object
comfortably holds are raw lines (`nested_line`).
"""

from __future__ import annotations

import functools
import json
import random
from collections.abc import Callable
from typing import Any, Final

from sessionspec.catalog import ASSISTANT_MESSAGE, END_SEED, TOOL_RESULT, USER_MESSAGE
from sessionspec.jsonvalue import MAX_SAFE_INTEGER, thaw
from sessionspec.live.fasttext import FAST_BYTES
from sessionspec.testing.choose import Choose, one, valid_append
from sessionspec.testing.strategies import Request, View

NOTE: Final = "plugin/note"
SURFACE: Final = (USER_MESSAGE, ASSISTANT_MESSAGE, TOOL_RESULT)
MODEL_SOURCE: Final = {"kind": "model", "provider": "deepseek", "model": "deepseek-chat"}

SPECIAL_CASES: Final = (
    ("owned", "type: a top-level str, bool or null returned as is; a safe int; a finite float that is not -0.0 "
              "(`_float`); a dict or list walked; anything else to `snapshot`", "scalar_data"),
    ("owned/_container", "depth: containers walked to _DEPTH (64) levels, deeper ones to `snapshot` (iterative); "
                         "past the recursion limit (about 1,000) and the line reader's orjson limit (1,024)", "deep_data"),
    ("owned/_container", "identity: exact dict and list, or the FrozenDict and FrozenList a session hands out",
     "the in-process machine's frozen inputs (testing.api_rules)"),
    ("request_parts", "type: an exact dict; keys within the append keys; data present; ignorable absent or `is True`",
     "ignorable_edges; requests that are not dicts: testing.api_rules"),
    ("sources_hold", "length 0, 1, 2 or more; order: a run of consecutive seqs from above 1, ascending, any other; "
                     "range: the last or largest below the new seq, the first or smallest not negative; "
                     "type: int only (a bool, an equal float)", "provenance_edges"),
    ("_marker", "type and identity: exactly 'append', or exactly {op, start, end} with op 'replace' and safe "
                "non-negative int endpoints", "surface_op_edges"),
    ("event_of", "a surface type with a marker and not ignorable; a log-only type with no op, no sources, "
                 "not retired, not the end-seed marker", "surface_op_edges, ignorable_edges"),
    ("message_shape_holds", "shape: the message at data (user) or data.message (the others), looked up "
                            "field by field; several fields of another shape at once", "shape_swaps"),
    ("message_shape_holds", "identity: callId and toolCallId compared with `==` after a str check "
                            "(5 and 5, 1 and True match by `==`)", "matching_ids"),
    ("rewrite_keeps", "encoding: the kept form's canonical bytes; a lone surrogate cannot be written, so the "
                      "reference decides", "surrogate_rewrites"),
    ("fast_parse", "encoding: canonical text only (orjson's own bytes, no -0.0)", "respelled_lines"),
    ("fast_parse", "length: a line over FAST_BYTES to the reference reader", "long_lines"),
)
"""(fast form, the special case, the generator that meets it on both sides)."""

DEPTHS: Final = (63, 64, 65, 66, 100, 1_023, 1_024, 1_025, 2_000)
"""Around the fast walk's hand-over (64), the recursion limit, the line reader's orjson limit (1,024) and past them."""
SHALLOW: Final = 200
"""Values up to this deep are sent as request objects; deeper ones as raw lines."""


def nested_text(depth: int, shape: str, leaf: str) -> str:
    """The JSON text of a value nested `depth` levels: objects, arrays, or both alternately, around `leaf` (JSON text)."""
    opens, closes = [], []
    for level in range(depth):
        if shape == "object" or (shape == "alternating" and level % 2 == 0):
            opens.append('{"a":')
            closes.append("}")
        else:
            opens.append("[")
            closes.append("]")
    return "".join(opens) + leaf + "".join(reversed(closes))


DEEP_PLACES: Final = (
    ("log-only data", '{"op":"append","type":"plugin/note","data":%s}'),
    ("surface data without a surfaceOp", '{"op":"append","type":"user/message","data":%s}'),
    ("a user message's plugin block", '{"op":"append","type":"user/message","surfaceOp":"append","data":{"id":"d",'
                                      '"role":"user","source":{"kind":"user"},"content":[{"type":"x-plugin/note",'
                                      '"value":%s}]}}'),
    ("the sources", '{"op":"append","type":"user/message","surfaceOp":"append","data":{"id":"d","role":"user",'
                    '"source":{"kind":"user"},"content":[]},"sourceEventSeqs":%s}'),
    ("the surfaceOp", '{"op":"append","type":"user/message","surfaceOp":%s,"data":{"id":"d","role":"user",'
                      '"source":{"kind":"user"},"content":[]}}'),
)
"""Where a deep value sits: accepted (data, a block) or refused after the lossless copy (no surfaceOp, sources, op)."""


def deep_data(choose: Choose, view: View, *, deepest: int = DEPTHS[-1]) -> Any:
    """A value nested at one of DEPTHS (up to `deepest`), in one of DEEP_PLACES: a request object when shallow, else
    a raw line. The deepest are mostly refused ones: every snapshot after an accepted one carries it.
    """
    depth = one(choose, [d for d in DEPTHS if d <= deepest])
    places = DEEP_PLACES if depth < 1_000 or choose(4) == 0 else DEEP_PLACES[1:2] + DEEP_PLACES[3:]
    _, template = one(choose, places)
    line = template % nested_text(depth, one(choose, ("object", "array", "alternating")),
                                  one(choose, ("1", '"leaf"', "null", "{}", "[]", "-1.5", "0.25")))
    return json.loads(line) if depth <= SHALLOW else line


SCALARS: Final[tuple[Any, ...]] = (0.5, -2.25, 1.0, 1e308, 5e-324, 123456789.125, 0.0, 0, -1, 7, MAX_SAFE_INTEGER,
                                   -MAX_SAFE_INTEGER, "", "x", "lone \ud800", True, False, None)
"""Every kind of top-level scalar the lossless copy returns without a walk (or checks alone: int, float)."""


def scalar_data(choose: Choose, view: View) -> Request:
    """An append whose data is a scalar: a log-only event (accepted), a surface event or the marker (refused)."""
    event_type = one(choose, (NOTE, NOTE, "x-vendor/metric", "turn/start", USER_MESSAGE, TOOL_RESULT, END_SEED))
    request: Request = {"op": "append", "type": event_type, "data": one(choose, SCALARS)}
    if event_type in SURFACE:
        request["surfaceOp"] = "append"
    elif choose(4) == 0:
        request["ignorable"] = True
    return request


def _source_list(choose: Choose, seq: int) -> list[Any]:
    """A provenance list at the edges of `sources_hold`'s cases, for an event at `seq` (the lists are mostly valid
    when `seq` allows, then moved across one boundary one time in two)."""
    below = list(range(seq))
    shape = choose(6)
    if shape == 0 and seq > 3:  # a run of consecutive seqs from above 1, ending at seq - 1
        count = 2 + choose(min(4, seq - 2))
        listed: list[Any] = list(range(seq - count, seq))
    elif shape == 1 and below:  # descending: the largest first
        listed = sorted({choose(seq) for _ in range(1 + choose(4))} | {seq - 1}, reverse=True)
    elif shape in (2, 3) and below:  # any order, ending at or holding the largest
        listed = list(dict.fromkeys([choose(seq) for _ in range(1 + choose(5))] + [seq - 1]))
        random.Random(choose(1 << 16)).shuffle(listed)
    elif shape == 4 and below:  # one source
        listed = [one(choose, below)]
    else:
        listed = []
    return _moved(choose, listed, seq) if choose(2) or not listed else listed


def _moved(choose: Choose, listed: list[Any], seq: int) -> list[Any]:
    """`listed` with one item set to, or one added of, a value at a boundary: the new seq, past it, -1, a duplicate,
    a bool, a float equal to an int, a run's next seq."""
    value = one(choose, (seq, seq, seq + 1, -1, True, False, 2.0, float(max(seq - 1, 0)), MAX_SAFE_INTEGER,
                         listed[0] if listed else 0, (listed[-1] + 1) if listed else 1))
    out = list(listed)
    if out and choose(2):
        out[choose(len(out))] = value
    else:
        out.insert(choose(len(out) + 1), value)
    return out


def provenance_edges(choose: Choose, view: View) -> Request:
    """A surface append whose sources sit at an edge of `sources_hold`: order, length, range, type."""
    event_type = one(choose, SURFACE)
    data = {USER_MESSAGE: _user, ASSISTANT_MESSAGE: _assistant, TOOL_RESULT: _tool_result}[event_type](choose)
    return {"op": "append", "type": event_type, "data": data, "surfaceOp": "append",
            "sourceEventSeqs": _source_list(choose, view.seq)}


def _user(choose: Choose) -> dict[str, Any]:
    return {"id": one(choose, ("u1", "u2")), "role": "user", "source": {"kind": "user"},
            "content": [{"type": "text", "text": "hi"}]}


def _assistant(choose: Choose) -> dict[str, Any]:
    return {"turn": 1, "step": 1, "message": {"id": "a1", "role": "assistant", "source": dict(MODEL_SOURCE),
                                              "content": [{"type": "text", "text": "ok"}] if choose(2) else []}}


def _tool_result(choose: Choose, call: Any = "c1", text: str = "out") -> dict[str, Any]:
    block = {"type": "tool-result", "toolCallId": call, "content": [{"type": "text", "text": text}]}
    return {"turn": 1, "step": 1, "message": {"id": "r1", "role": "user", "source": {"kind": "tool", "callId": call},
                                              "content": [block]}}


MARKERS: Final[tuple[Any, ...]] = ("append", "Append", "append ", "", "replace", None, 0, ["append"], {"op": "append"})
ENDPOINTS: Final[tuple[Any, ...]] = (-1, True, False, 1.0, "1", None, MAX_SAFE_INTEGER, [0])


def surface_op_edges(choose: Choose, view: View) -> Request:
    """A surfaceOp at an edge of `_marker`: near "append", a replace with an endpoint or key at an edge, on a surface
    type (ignorable one time in six) or a log-only one."""
    nodes = list(view.nodes) or [0]
    start, end = one(choose, nodes), one(choose, nodes)
    if nodes.index(start) > nodes.index(end):
        start, end = end, start
    op: Any = {"op": "replace", "start": start, "end": end}
    what = choose(5)
    if what == 0:
        op = one(choose, MARKERS)
    elif what == 1:
        op[one(choose, ("start", "end"))] = one(choose, ENDPOINTS)
    elif what == 2:
        op["op"] = one(choose, ("Replace", "append", None, 1, "replace "))
    elif what == 3:
        del op[one(choose, ("op", "start", "end"))]
        if choose(2):
            op[one(choose, ("first", "extra", "op "))] = start
    event_type = one(choose, (USER_MESSAGE, USER_MESSAGE, ASSISTANT_MESSAGE, NOTE, "turn/start"))
    data = _user(choose) if event_type == USER_MESSAGE else _assistant(choose) if event_type == ASSISTANT_MESSAGE else {}
    request: Request = {"op": "append", "type": event_type, "data": data, "surfaceOp": op}
    if isinstance(op, dict) and view.nodes:
        request["sourceEventSeqs"] = [n for n in view.nodes if n in (start, end)] if choose(4) == 0 else list(view.nodes)
    if choose(6) == 0:
        request["ignorable"] = True
    return request


IGNORABLES: Final[tuple[Any, ...]] = (True, True, False, 1, 1.0, 0, "true", None, [True], {})


def ignorable_edges(choose: Choose, view: View) -> Request:
    """`ignorable` at the edge of `request_parts` (`is True`) on a log-only, retired, surface or marker type."""
    event_type = one(choose, (NOTE, "turn/start", "x-vendor/metric", "mode/set", END_SEED, USER_MESSAGE, TOOL_RESULT))
    request: Request = {"op": "append", "type": event_type, "data": {"turn": 1}, "ignorable": one(choose, IGNORABLES)}
    if event_type in SURFACE:
        request.update(data=_user(choose) if event_type == USER_MESSAGE else _tool_result(choose), surfaceOp="append")
    return request


_SOURCES: Final[tuple[Any, ...]] = (
    {"kind": "user"}, MODEL_SOURCE, {"kind": "tool", "callId": "c1"}, {"kind": "plugin", "plugin": "compaction"},
    {"kind": "model", "provider": "deepseek"}, {"kind": "tool"}, {"kind": ""}, "user")
_CONTENTS: Final[tuple[Any, ...]] = (
    [{"type": "text", "text": "hi"}], [], [{"type": "tool-result", "toolCallId": "c1", "content": []}],
    [{"type": "tool-result", "toolCallId": "c1", "content": []}, {"type": "text", "text": "and"}],
    [{"type": "tool-result", "toolCallId": "c1", "content": "out"}], {"type": "text", "text": "hi"})


_RIGHT: Final[dict[str, tuple[int, str, Any, Any]]] = {
    USER_MESSAGE: (0, "user", _SOURCES[0], _CONTENTS[0]), ASSISTANT_MESSAGE: (1, "assistant", _SOURCES[1], _CONTENTS[0]),
    TOOL_RESULT: (1, "user", _SOURCES[2], _CONTENTS[2])}
"""Each surface type's own nesting (0 flat, 1 under `message`), role, source and content."""


def shape_swaps(choose: Choose, view: View) -> Request:
    """A surface event whose message takes each of its nesting, id, role, source and content from its own type's shape
    two times in three, else from any type's (or none): several fields of another shape at once, and the valid ones."""
    event_type = one(choose, SURFACE)
    nesting, role, source, content = (right if choose(3) else one(choose, pool) for right, pool in zip(
        _RIGHT[event_type], ((0, 1, 2), ("user", "assistant", "tool"), _SOURCES, _CONTENTS), strict=True))
    message: dict[str, Any] = {"id": "m1" if choose(3) else one(choose, (5, "", ["m1"])), "role": role,
                               "source": thaw(source), "content": thaw(content)}
    for key in ("id", "role", "source", "content"):
        if choose(16) == 0:
            del message[key]
    data: Any = message if nesting == 0 else {"turn": 1, "step": 1, "message": message}
    if nesting == 2:  # both: the message at the top and under `message`
        data = {**message, "turn": 1, "message": dict(message)}
    return {"op": "append", "type": event_type, "data": data, "surfaceOp": "append"}


IDS: Final[tuple[Any, ...]] = (5, 0, 1, True, False, 1.5, None, [], {}, ["c1"], {"c": 1}, "", "c1")
UNEQUAL_MATCHES: Final[tuple[tuple[Any, Any], ...]] = ((1, True), (1, 1.0), (0, False), ("5", 5), ("c1", "c1 "),
                                                       ("c1", "C1"), ("c1", ["c1"]), ("", None))


def matching_ids(choose: Choose, view: View) -> Request:
    """A tool result whose callId and toolCallId are the same value that is not a non-empty string, or two values
    `==` or a sort can confuse; or a message id, provider or model that is not a string."""
    if choose(4):
        same = one(choose, IDS)
        call, tool_call_id = (same, same) if choose(2) else one(choose, UNEQUAL_MATCHES)
        data = _tool_result(choose, call)
        data["message"]["content"][0]["toolCallId"] = tool_call_id
        return {"op": "append", "type": TOOL_RESULT, "data": data, "surfaceOp": "append"}
    data = _assistant(choose)
    if choose(2):
        data["message"]["id"] = one(choose, IDS)
    data["message"]["source"][one(choose, ("provider", "model"))] = one(choose, IDS)
    return {"op": "append", "type": ASSISTANT_MESSAGE, "data": data, "surfaceOp": "append"}


LONE: Final = ("\ud800", "\udfff", "x\udc00y")
_KEPT_PLACES: Final = ("id", "meta", "call", "error")


def _with_surrogate(data: dict[str, Any], place: str, lone: str) -> dict[str, Any]:
    if place == "id":
        data["message"]["id"] = "r" + lone
    elif place == "meta":
        data["meta"] = {"note": lone}
    elif place == "call":
        data["message"]["source"]["callId"] = data["message"]["content"][0]["toolCallId"] = "c" + lone
    else:
        data["error"] = {"name": lone, "code": "E1"}
    return data


def _kept_surrogate(data: Any) -> bool:
    text = json.dumps({k: v for k, v in data.items() if k != "message"}) + json.dumps(
        {k: v for k, v in data["message"].items() if k != "content"}) + json.dumps(data["message"]["content"][0].get("toolCallId"))
    return "\\ud8" in text or "\\udc" in text or "\\udf" in text


def surrogate_rewrites(choose: Choose, view: View) -> Request:
    """A tool result with a lone surrogate in what a rewrite keeps (canonical bytes cannot be written); once one is on
    the surface, a rewrite of it: with the same kept form (valid), another surrogate there, or the surrogate gone."""
    targets = [n for n in view.tool_result_nodes() if _kept_surrogate(view.events[n]["data"])]
    if not targets or choose(4) == 0:
        data = _with_surrogate(_tool_result(choose), one(choose, _KEPT_PLACES), one(choose, LONE))
        return {"op": "append", "type": TOOL_RESULT, "data": data, "surfaceOp": "append"}
    target = one(choose, targets)
    data = thaw(view.events[target]["data"])
    data["message"]["content"][0]["content"] = [{"type": "text", "text": "[pruned \ud800]" if choose(2) else "[pruned]"}]
    change = choose(3)
    if change == 1:
        data = _with_surrogate(data, one(choose, _KEPT_PLACES), one(choose, LONE))
    elif change == 2:
        data = _with_surrogate(data, one(choose, _KEPT_PLACES), "")
    return {"op": "append", "type": TOOL_RESULT, "data": data, "surfaceOp": {"op": "replace", "start": target, "end": target},
            "sourceEventSeqs": [target]}


REFUSED_SPELLINGS: Final = ('"data": {"a": 1, "a": 2}', '"data": -0', '"data": [1E400]', '"data": 9007199254740993',
                            '"data": -0.0', '"data": {"x": "\\ud800"}', '"data": 1.5E2', '"data": "\\u0041"')


def respelled_lines(choose: Choose, view: View) -> str:
    """A request line in a spelling orjson would not write (spaces, escapes), valid or holding a value the lossless
    reader refuses: the fast reader must hand each to the reference reader."""
    if choose(2):
        request = {"op": "append", **valid_append(choose, view)}
        return json.dumps(request, ensure_ascii=bool(choose(2)), separators=(", ", ": ") if choose(2) else (",", ":"))
    return '{"op": "append", "type": "plugin/note", ' + one(choose, REFUSED_SPELLINGS) + "}"


def long_lines(choose: Choose, view: View) -> str:
    """A line of FAST_BYTES bytes, one less or one more (the fast reader's bound: longer ones go to the reference
    reader), refused after it is read (a user message without a surfaceOp, or a key written twice): a long line
    that was logged would be carried by every snapshot after it."""
    size = FAST_BYTES + one(choose, (-1, 0, 1))
    head, tail = ('{"op":"append","type":"plugin/note","data":{"a":1,"a":"', '"}}') if choose(2) else (
        '{"op":"append","type":"user/message","data":{"id":"u","role":"user","source":{"kind":"user"},"content":[],'
        '"pad":"', '"}}')
    return head + "x" * (size - len(head) - len(tail)) + tail


EDGES: Final[dict[str, Callable[[Choose, View], Any]]] = {
    "scalar_data": scalar_data, "deep_data": deep_data, "provenance_edges": provenance_edges,
    "surface_op_edges": surface_op_edges, "ignorable_edges": ignorable_edges, "shape_swaps": shape_swaps,
    "matching_ids": matching_ids, "surrogate_rewrites": surrogate_rewrites, "respelled_lines": respelled_lines,
    "long_lines": long_lines,
}
"""Every generator of SPECIAL_CASES, by name."""


IN_PROCESS: Final = 129
"""The deepest value the in-process machine sends: its invariants compare values with `==`, which recurses."""
OBJECT_EDGES: Final[dict[str, Callable[[Choose, View], Any]]] = {
    **{name: generate for name, generate in EDGES.items() if name not in ("respelled_lines", "long_lines")},
    "deep_data": functools.partial(deep_data, deepest=IN_PROCESS),
}
"""EDGES as request objects only, for an implementation driven in process: no raw lines (spellings are the line
reader's, and the deepest values are sent by the conformance machine)."""


def edge_request(choose: Choose, view: View, *, lines: bool = True) -> Any:
    """One request (or, with `lines`, a raw line) at a special case of a fast form, of a kind drawn among EDGES."""
    return one(choose, list((EDGES if lines else OBJECT_EDGES).values()))(choose, view)


__all__ = ["DEPTHS", "EDGES", "OBJECT_EDGES", "SPECIAL_CASES", "deep_data", "edge_request", "matching_ids", "nested_text",
           "provenance_edges", "respelled_lines", "scalar_data", "shape_swaps", "surface_op_edges", "surrogate_rewrites"]
