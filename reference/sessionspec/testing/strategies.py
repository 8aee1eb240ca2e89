"""Hypothesis strategies for session operations, valid and deliberately invalid.

Public so that any implementation of the session model can reuse them. Every strategy produces
a request in the protocol's append shape, `{type, data, surfaceOp?, sourceEventSeqs?, ignorable?}`
(apply it with `Session.append_request`). Strategies that depend on the session take a `View`
(the current events and surface nodes) and are drawn inside a rule with `st.data()`, because what
is valid depends on what has been logged: sources must name earlier seqs, a replacement must name
nodes that are on the surface now.

Invalid operations come as `Invalid(request, rule)`: the rule the reference model rejects it with.
The machine checks that the model really does (so a strategy that drifts into valid input is
caught) and that the system under test rejects it with the same rule and kind.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from sessionspec.catalog import (
    ASSISTANT_MESSAGE,
    DSH_0_1_1,
    END_SEED,
    REQUEST_HEADER,
    SURFACE_TYPES,
    TOOL_RESULT,
    USER_MESSAGE,
)
from sessionspec.envelope import Replace
from sessionspec.jsonvalue import MAX_SAFE_INTEGER, thaw

Request = dict[str, Any]
S = st.SearchStrategy


@dataclass(frozen=True)
class View:
    """What a strategy may look at: the log as plain JSON envelopes, and the surface nodes."""

    events: tuple[dict[str, Any], ...]
    nodes: tuple[int, ...]

    @classmethod
    def of(cls, session: Any) -> View:
        return cls(tuple(e.to_json() for e in session.events), tuple(session.surface.nodes))

    @property
    def seq(self) -> int:
        return len(self.events)

    def shadowed(self) -> list[int]:
        """Surface events no longer on the surface."""
        on = set(self.nodes)
        return [e["seq"] for e in self.events if "surfaceOp" in e and e["seq"] not in on]

    def tool_result_nodes(self) -> list[int]:
        return [n for n in self.nodes if self.events[n]["type"] == TOOL_RESULT]


@dataclass(frozen=True)
class Invalid:
    """A request the model rejects, and the rule it rejects it with."""

    request: Request
    rule: str
    why: str


# --- JSON payloads ------------------------------------------------------------------------------

TEXTS = st.one_of(
    st.text(max_size=12),
    st.sampled_from(["", "hello", "compact summary", "\u00e9t\u00e9 \u65e5\u672c", "emoji \U0001f600", "lone \ud800", "a\x00b"]),
)
safe_ints = st.integers(-MAX_SAFE_INTEGER, MAX_SAFE_INTEGER)
finite_floats = st.floats(allow_nan=False, allow_infinity=False).map(lambda x: 0.0 if x == 0 else x)
json_scalars = st.one_of(st.none(), st.booleans(), safe_ints, finite_floats, TEXTS)
json_values: S[Any] = st.recursive(
    json_scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(TEXTS, inner, max_size=3)),
    max_leaves=6,
)
"""Lossless JSON: what SESSION-LOSSLESS-JSON accepts, edge values included."""

ids = st.sampled_from(["m1", "m2", "m3", "summary", "r1", "\u65e5"])
call_ids = st.sampled_from(["c1", "c2", "c3"])
small = st.integers(0, 5)


# --- content blocks and messages -------------------------------------------------------------

text_blocks = st.builds(lambda t: {"type": "text", "text": t}, TEXTS)
reasoning_blocks = st.builds(lambda t: {"type": "reasoning", "text": t}, TEXTS)
tool_call_blocks = st.builds(lambda i, n, a: {"type": "tool-call", "id": i, "name": n, "arguments": a},
                             call_ids, st.sampled_from(["read_file", "bash"]), st.sampled_from(['{"path": "a"}', "{}", "{"]))
image_blocks = st.builds(
    lambda i, m, w, h: {"type": "image", "attachment": {"attachmentId": i, "mediaType": m, "bytes": w * h, "width": w,
                                                        "height": h}},
    st.sampled_from(["att1", "att2"]), st.sampled_from(["image/png", "image/jpeg", "image/webp", "image/gif"]),
    st.integers(1, 4096), st.integers(1, 4096),
)
plugin_blocks = st.builds(lambda v: {"type": "x-plugin/note", "value": v}, json_values)
result_inner_blocks = st.lists(st.one_of(text_blocks, image_blocks), max_size=3)
tool_result_blocks = st.builds(
    lambda c, inner, err: {"type": "tool-result", "toolCallId": c, "content": inner, **err},
    call_ids, result_inner_blocks, st.sampled_from([{}, {"isError": True}, {"isError": False}]),
)
content_blocks = st.one_of(text_blocks, reasoning_blocks, tool_call_blocks, image_blocks, plugin_blocks)

user_sources = st.one_of(
    st.just({"kind": "user"}),
    st.builds(lambda p: {"kind": "plugin", "plugin": p}, st.sampled_from(["compaction", "memory"])),
    st.just({"kind": "plugin", "plugin": "compaction", "form": "notice", "summary": "compacted"}),
)
MODEL_SOURCE = {"kind": "model", "provider": "deepseek", "model": "deepseek-chat"}


@functools.cache
def user_message_data(content: S[list[Any]] | None = None) -> S[dict[str, Any]]:
    return st.builds(lambda i, s, c: {"id": i, "role": "user", "source": s, "content": c},
                     ids, user_sources, content or st.lists(st.one_of(text_blocks, image_blocks, plugin_blocks), max_size=3))


usages = st.builds(lambda i, o: {"inputTokens": i, "outputTokens": o}, st.integers(0, 10**6), st.integers(0, 10**6))


@functools.cache
def assistant_message_data() -> S[dict[str, Any]]:
    """An assistant message; an empty content list (usage only) projects to no message."""
    return st.builds(
        lambda t, s, i, c, extra: {"turn": t, "step": s, "message": {"id": i, "role": "assistant", "source": MODEL_SOURCE,
                                                                      "content": c}, **extra},
        small, small, ids, st.lists(content_blocks, max_size=3),
        st.one_of(st.just({}), st.builds(lambda u: {"usage": u}, usages), st.just({"interrupted": True})),
    )


@functools.cache
def tool_result_data(call_id: S[str] = call_ids, inner: S[list[Any]] = result_inner_blocks) -> S[dict[str, Any]]:
    return st.builds(
        lambda t, s, i, c, content, is_error, extra: {
            "turn": t, "step": s,
            "message": {"id": i, "role": "user", "source": {"kind": "tool", "callId": c},
                        "content": [{"type": "tool-result", "toolCallId": c, "content": content, **is_error}]},
            **extra},
        small, small, ids, call_id, inner, st.sampled_from([{}, {"isError": True}, {"isError": False}]),
        st.one_of(st.just({}), st.builds(lambda m: {"meta": m}, json_values),
                  st.just({"error": {"name": "ToolError", "code": "E1"}})),
    )


# --- log-only events ----------------------------------------------------------------------------

chunks = st.one_of(
    st.builds(lambda i, t: {"type": "text-delta", "index": i, "text": t}, small, TEXTS),
    st.builds(lambda i, t: {"type": "reasoning-delta", "index": i, "text": t}, small, TEXTS),
    st.builds(lambda i, c: {"type": "tool-call-delta", "index": i, "id": c, "argumentsDelta": "{"}, small, call_ids),
    st.builds(lambda i: {"type": "block-start", "index": i, "blockType": "text"}, small),
    st.builds(lambda u: {"type": "usage", "usage": u}, usages),
    st.sampled_from([{"type": "finish", "reason": "stop"}, {"type": "finish", "reason": "tool-calls"}]),
)
request_headers = st.builds(
    lambda effort, defaults, reason, system: {
        "header": {"config": {"provider": "deepseek", "model": "deepseek-chat", **effort}, **defaults, **system},
        "reason": reason},
    st.sampled_from([{}, {"reasoningEffort": "high"}, {"reasoningEffort": "low", "maxTokens": 1024}]),
    st.just({}),
    st.sampled_from(["initial", "resume", "change"]),
    st.sampled_from([{}, {"system": "be brief"}, {"tools": [{"name": "bash", "description": "run", "parameters": {}}]}]),
)
todos = st.builds(lambda items: {"todos": items}, st.lists(
    st.builds(lambda c, s: {"content": c, "status": s}, TEXTS, st.sampled_from(["pending", "in_progress", "completed"])),
    max_size=3))
PLUGIN_TYPES = sorted(DSH_0_1_1.types - {*SURFACE_TYPES, END_SEED, REQUEST_HEADER})
UNKNOWN_TYPES = ["x-vendor/metric", "plugin/unheard-of", "a"]


_NEVER = st.just(False)


def _log_only(event_type: str, data: S[Any], ignorable: S[bool] = _NEVER) -> S[Request]:
    return st.builds(lambda d, ig: {"type": event_type, "data": d, **({"ignorable": True} if ig else {})}, data, ignorable)


log_only_requests: S[Request] = st.one_of(
    st.builds(lambda t: {"type": "turn/start", "data": {"turn": t}}, small),
    st.builds(lambda t: {"type": "turn/end", "data": {"turn": t, "reason": {"kind": "completed"}}}, small),
    st.builds(lambda t, s: {"type": "step/start", "data": {"turn": t, "step": s}}, small, small),
    st.builds(lambda t, s, c: {"type": "assistant/chunk", "data": {"turn": t, "step": s, "chunk": c}}, small, small, chunks),
    st.builds(lambda c: {"type": "tool/call", "data": {"turn": 1, "step": 1, "callId": c, "name": "bash", "arguments": "{}"}},
              call_ids),
    _log_only("todo/write", todos),
    _log_only(REQUEST_HEADER, request_headers),
    st.builds(lambda t, d, ig: {"type": t, "data": d, **({"ignorable": True} if ig else {})},
              st.sampled_from(PLUGIN_TYPES), json_values, st.booleans()),
    st.builds(lambda t, d, ig: {"type": t, "data": d, **({"ignorable": True} if ig else {})},
              st.sampled_from(UNKNOWN_TYPES), json_values, st.booleans()),
)
"""Every log-only kind: turns, steps, chunks, tool calls, todos, request headers, plugin and unknown types."""


# --- surface appends --------------------------------------------------------------------------


@functools.lru_cache(maxsize=512)
def sources_before(seq: int, *, allow_empty: bool = False) -> S[list[int] | None]:
    """An optional provenance list: distinct earlier seqs, in any order."""
    if seq == 0:
        return st.one_of(st.none(), st.just([])) if allow_empty else st.none()
    listed = st.lists(st.integers(0, seq - 1), unique=True, min_size=0 if allow_empty else 1, max_size=4)
    return st.one_of(st.none(), listed)


def _surface(event_type: str, data: Any, op: Any, sources: list[int] | None) -> Request:
    request: Request = {"type": event_type, "data": data, "surfaceOp": op}
    if sources is not None:
        request["sourceEventSeqs"] = sources
    return request


def user_message_requests(view: View) -> S[Request]:
    return st.builds(lambda d, s: _surface(USER_MESSAGE, d, "append", s), user_message_data(), sources_before(view.seq))


def assistant_message_requests(view: View) -> S[Request]:
    return st.builds(lambda d, s: _surface(ASSISTANT_MESSAGE, d, "append", s), assistant_message_data(),
                     sources_before(view.seq, allow_empty=True))


def tool_result_requests(view: View) -> S[Request]:
    return st.builds(lambda d, s: _surface(TOOL_RESULT, d, "append", s), tool_result_data(), sources_before(view.seq))


def append_requests(view: View) -> S[Request]:
    """Any valid append: a surface append of each type or a log-only event."""
    return st.one_of(user_message_requests(view), assistant_message_requests(view), tool_result_requests(view),
                     log_only_requests)


# --- replacements ------------------------------------------------------------------------------


def _replace_op(start: int, end: int) -> dict[str, Any]:
    return Replace(start, end).to_json()


def _covering_sources(draw: st.DrawFn, view: View, shadowed: Sequence[int]) -> list[int]:
    extra = draw(st.lists(st.integers(0, view.seq - 1), unique=True, max_size=2))
    return draw(st.permutations(sorted({*shadowed, *extra})))


def positional_ranges(view: View) -> S[Any]:
    """Positions first <= last on the surface; prefers ranges whose start seq is above the end seq.

    After a replacement the node list is no longer sorted by seq, and a range is read by
    position: `{start: 9, end: 4}` is valid when node 9 sits before node 4.
    """
    n = len(view.nodes)
    ordered = st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)).map(sorted).map(tuple)
    reversed_pairs = [(i, j) for i in range(n) for j in range(i + 1, n) if view.nodes[i] > view.nodes[j]]
    if reversed_pairs:
        return st.one_of(ordered, st.sampled_from(reversed_pairs))
    return ordered


@st.composite
def summary_replacements(draw: st.DrawFn, view: View) -> Request:
    """A compaction: a user or assistant message takes the place of a surface range."""
    first, last = draw(positional_ranges(view))
    shadowed = view.nodes[first:last + 1]
    sources = _covering_sources(draw, view, shadowed)
    event_type, data = draw(st.one_of(st.tuples(st.just(USER_MESSAGE), user_message_data()),
                                      st.tuples(st.just(ASSISTANT_MESSAGE), assistant_message_data())))
    return _surface(event_type, data, _replace_op(view.nodes[first], view.nodes[last]), sources)


@st.composite
def tool_result_rewrites(draw: st.DrawFn, view: View) -> Request:
    """A pruning: the same tool result with only its inner content changed (decision 7)."""
    target = draw(st.sampled_from(view.tool_result_nodes()))
    data = thaw(view.events[target]["data"])
    data["message"]["content"][0]["content"] = draw(result_inner_blocks)
    return _surface(TOOL_RESULT, data, _replace_op(target, target), _covering_sources(draw, view, [target]))


def replacements(view: View) -> S[Request]:
    """A valid replacement of the current surface (requires a non-empty surface)."""
    options = [summary_replacements(view)]
    if view.tool_result_nodes():
        options.append(tool_result_rewrites(view))
    return st.one_of(options)


# --- deliberately invalid operations -------------------------------------------------------------


class NonJson:
    """Python values a JSON round trip would change, each with the rule that refuses it."""

    VALUES: tuple[tuple[Callable[[], Any], str], ...] = (
        (lambda: (1, 2), "SESSION-LOSSLESS-JSON.1"),
        (lambda: {"set": frozenset()}, "SESSION-LOSSLESS-JSON.1"),
        (lambda: b"bytes", "SESSION-LOSSLESS-JSON.1"),
        (lambda: MAX_SAFE_INTEGER + 1, "SESSION-LOSSLESS-JSON.2"),
        (lambda: -(2**64), "SESSION-LOSSLESS-JSON.2"),
        (lambda: math.nan, "SESSION-LOSSLESS-JSON.3"),
        (lambda: math.inf, "SESSION-LOSSLESS-JSON.3"),
        (lambda: -0.0, "SESSION-LOSSLESS-JSON.4"),
        (lambda: {1: "int key"}, "SESSION-LOSSLESS-JSON.5"),
    )


def _bad_json(index: int, where: str) -> Invalid:
    make, rule = NonJson.VALUES[index]
    data = {"turn": 1, "value": [make()]} if where == "nested" else make()
    return Invalid({"type": "turn/start", "data": data}, rule, f"non-JSON data ({where})")


_BAD_JSON = st.builds(_bad_json, st.integers(0, len(NonJson.VALUES) - 1), st.sampled_from(["nested", "top"]))


def _user(view: View) -> S[dict[str, Any]]:
    return user_message_data()


def _fixed(view: View) -> list[S[Invalid]]:
    return _fixed_at(view.seq)


@functools.lru_cache(maxsize=512)
def _fixed_at(seq: int) -> list[S[Invalid]]:
    """Invalid requests that do not depend on the surface (built once per seq: strategies validate once)."""
    user = user_message_data()
    return [
        _BAD_JSON,
        st.builds(lambda d: Invalid({"type": USER_MESSAGE, "data": d, "surfaceOp": "append", "x": 1},
                                    "SESSION-EVENT-ENVELOPE.1", "unknown request key"), user),
        st.just(Invalid({"type": "turn/start", "seq": 0, "data": {}}, "SESSION-EVENT-ENVELOPE.1", "seq in an append request")),
        st.just(Invalid({"type": "turn/start"}, "SESSION-EVENT-ENVELOPE.5", "no data")),
        st.just(Invalid({"type": "", "data": {}}, "SESSION-EVENT-ENVELOPE.2", "empty type")),
        st.just(Invalid({"type": 7, "data": {}}, "SESSION-EVENT-ENVELOPE.2", "type not a string")),
        st.just(Invalid({"type": "turn/start", "data": {}, "ignorable": False}, "SESSION-EVENT-ENVELOPE.6",
                        "ignorable false")),
        st.builds(lambda d: Invalid({"type": USER_MESSAGE, "data": d, "surfaceOp": "append", "ignorable": True},
                                    "SESSION-EVENT-ENVELOPE.7", "ignorable surface event"), user),
        st.just(Invalid({"type": END_SEED, "data": {}}, "SESSION-APPEND-COMMIT.5", "marker by append")),
        st.builds(lambda t: Invalid({"type": t, "data": {}}, "SESSION-CORE-EVENTS.2", "retired type"),
                  st.sampled_from(["request/header-delta", "mode/set"])),
        st.just(Invalid({"type": "turn/start", "data": {}, "surfaceOp": "append"}, "SESSION-SURFACE-PROJECTION.1",
                        "surfaceOp on a log-only event")),
        st.just(Invalid({"type": "todo/write", "data": {"todos": []}, "sourceEventSeqs": [0]},
                        "SESSION-SURFACE-PROJECTION.2", "sources on a log-only event")),
        st.builds(lambda d: Invalid({"type": USER_MESSAGE, "data": d}, "SESSION-SURFACE-PROJECTION.3", "no surfaceOp"), user),
        st.builds(lambda d, op: Invalid({"type": USER_MESSAGE, "data": d, "surfaceOp": op}, "SESSION-SURFACE-PROJECTION.4",
                                        "malformed surfaceOp"),
                  user, st.sampled_from([None, "prepend", {"op": "replace", "start": 0}, {"op": "replace", "start": -1, "end": 0},
                                         {"op": "replace", "start": True, "end": 0},
                                         {"op": "replace", "start": 0, "end": 0, "x": 1}])),
        st.builds(lambda d: Invalid({"type": USER_MESSAGE, "data": d, "surfaceOp": "append", "sourceEventSeqs": {"0": 0}},
                                    "SESSION-SURFACE-PROVENANCE.1", "sources not an array"), user),
        st.builds(lambda d: Invalid({"type": USER_MESSAGE, "data": d, "surfaceOp": "append", "sourceEventSeqs": []},
                                    "SESSION-SURFACE-PROVENANCE.2", "empty sources on a user message"), user),
        st.builds(lambda d, s: Invalid({"type": USER_MESSAGE, "data": d, "surfaceOp": "append", "sourceEventSeqs": [s]},
                                       "SESSION-SURFACE-PROVENANCE.3", "a source that is not a seq"),
                  user, st.sampled_from([-1, True, 1.5, "0"])),
        st.builds(lambda d: Invalid({"type": USER_MESSAGE, "data": d, "surfaceOp": "append", "sourceEventSeqs": [0, 0]},
                                    "SESSION-SURFACE-PROVENANCE.4", "duplicate sources"), user),
        st.builds(lambda d, k: Invalid({"type": USER_MESSAGE, "data": d, "surfaceOp": "append",
                                        "sourceEventSeqs": [seq + k]}, "SESSION-SURFACE-PROVENANCE.5",
                                       "future provenance"), user, st.integers(0, 3)),
        st.builds(lambda d: Invalid({"type": USER_MESSAGE, "data": {**d, "id": ""}, "surfaceOp": "append"},
                                    "SESSION-MESSAGE-SHAPE.1", "unidentified message"), user),
        st.builds(lambda d: Invalid({"type": USER_MESSAGE, "data": {**d, "role": "assistant"}, "surfaceOp": "append"},
                                    "SESSION-MESSAGE-SHAPE.2", "wrong role"), user),
        st.builds(lambda d: Invalid({"type": ASSISTANT_MESSAGE, "data": {**d, "message": {**d["message"], "source": {"kind": "user"}}},
                                     "surfaceOp": "append"}, "SESSION-MESSAGE-SHAPE.5", "assistant without model source"),
                  assistant_message_data()),
        st.builds(lambda d: Invalid({"type": TOOL_RESULT, "data": _with_inner_call(d, "other"), "surfaceOp": "append"},
                                    "SESSION-MESSAGE-SHAPE.8", "mismatched tool call ids"), tool_result_data()),
        st.just(Invalid({"type": REQUEST_HEADER, "data": {"header": {"config": {"provider": "deepseek"}}, "reason": "initial"}},
                        "SESSION-REQUEST-HEADER.1", "request header without model")),
        st.just(Invalid({"type": REQUEST_HEADER, "data": {"header": {"config": {"provider": "p", "model": "m"}}, "reason": "fallback"}},
                        "SESSION-REQUEST-HEADER.4", "legacy fallback reason")),
    ]


def _with_inner_call(data: dict[str, Any], call_id: str) -> dict[str, Any]:
    out = thaw(data)
    out["message"]["content"][0]["toolCallId"] = call_id
    return out  # type: ignore[no-any-return]


def _missing_endpoint(view: View) -> S[Invalid]:
    off = [e["seq"] for e in view.events if "surfaceOp" not in e] + [view.seq, view.seq + 5]
    start_or_end = st.sampled_from(off)
    anchor = st.sampled_from(view.nodes) if view.nodes else start_or_end
    return st.builds(lambda d, bad, good, at_start: Invalid(
        {"type": USER_MESSAGE, "data": d, "surfaceOp": _replace_op(bad, good) if at_start else _replace_op(good, bad)},
        "SESSION-SURFACE-REPLACE.1", "endpoint not in the log or log-only"), _user(view), start_or_end, anchor, st.booleans())


def _surface_dependent(view: View) -> list[S[Invalid]]:
    out = [_missing_endpoint(view)]
    shadowed = view.shadowed()
    if shadowed and view.nodes:
        out.append(st.builds(lambda d, s, n: Invalid({"type": USER_MESSAGE, "data": d, "surfaceOp": _replace_op(s, n),
                                                      "sourceEventSeqs": sorted({s, n})},
                                                     "SESSION-SURFACE-REPLACE.1", "shadowed endpoint"),
                             _user(view), st.sampled_from(shadowed), st.sampled_from(view.nodes)))
    if len(view.nodes) >= 2:
        pairs = st.tuples(st.integers(0, len(view.nodes) - 1), st.integers(0, len(view.nodes) - 1)).filter(lambda p: p[0] > p[1])
        out.append(st.builds(lambda d, p: Invalid({"type": USER_MESSAGE, "data": d,
                                                   "surfaceOp": _replace_op(view.nodes[p[0]], view.nodes[p[1]]),
                                                   "sourceEventSeqs": list(view.nodes)},
                                                  "SESSION-SURFACE-REPLACE.2", "start after end"), _user(view), pairs))
    if view.nodes:
        out.append(incomplete_provenance_replacements(view))
    if view.tool_result_nodes():
        out.append(forged_tool_result_rewrites(view))
    others = [n for n in view.nodes if view.events[n]["type"] != TOOL_RESULT]
    if others:
        out.append(st.builds(lambda d, n: Invalid({"type": TOOL_RESULT, "data": d, "surfaceOp": _replace_op(n, n),
                                                   "sourceEventSeqs": [n]}, "SESSION-SURFACE-TOOL-RESULT.2",
                                                  "rewrite of a node that is not a tool result"),
                             tool_result_data(), st.sampled_from(others)))
    if len(view.nodes) >= 2:
        out.append(st.builds(lambda d, i: Invalid({"type": TOOL_RESULT, "data": d,
                                                   "surfaceOp": _replace_op(view.nodes[i], view.nodes[i + 1]),
                                                   "sourceEventSeqs": [view.nodes[i], view.nodes[i + 1]]},
                                                  "SESSION-SURFACE-TOOL-RESULT.1", "rewrite of two nodes"),
                             tool_result_data(), st.integers(0, len(view.nodes) - 2)))
    return out


@st.composite
def incomplete_provenance_replacements(draw: st.DrawFn, view: View) -> Invalid:
    """A replacement whose sources omit one shadowed node (or that has no sources at all)."""
    first, last = draw(positional_ranges(view))
    shadowed = list(view.nodes[first:last + 1])
    omitted = draw(st.sampled_from(shadowed))
    sources = [s for s in shadowed if s != omitted]
    request = _surface(ASSISTANT_MESSAGE, draw(assistant_message_data()),
                       _replace_op(view.nodes[first], view.nodes[last]), draw(st.permutations(sources)))
    if draw(st.booleans()):
        del request["sourceEventSeqs"]
    return Invalid(request, "SESSION-SURFACE-PROVENANCE.6", "sources omit a shadowed node")


REWRITE_CHANGES: dict[str, Callable[[dict[str, Any]], object]] = {
    "message id": lambda d: d["message"].__setitem__("id", d["message"]["id"] + "-forged"),
    "call id": lambda d: (d["message"]["source"].__setitem__("callId", "forged"),
                          d["message"]["content"][0].__setitem__("toolCallId", "forged")),
    "isError": lambda d: d["message"]["content"][0].__setitem__("isError", not d["message"]["content"][0].get("isError", False)),
    "error": lambda d: d.__setitem__("error", {"name": "Forged", "code": "X"}) if "error" not in d else d.pop("error"),
    "meta": lambda d: d.__setitem__("meta", {"forged": True}) if d.get("meta") != {"forged": True} else d.pop("meta"),
    "turn": lambda d: d.__setitem__("turn", d["turn"] + 1),
}


@st.composite
def forged_tool_result_rewrites(draw: st.DrawFn, view: View) -> Invalid:
    """A tool-result rewrite that changes more than the inner content: an id, isError, error or meta."""
    target = draw(st.sampled_from(view.tool_result_nodes()))
    data = thaw(view.events[target]["data"])
    change = draw(st.sampled_from(sorted(REWRITE_CHANGES)))
    REWRITE_CHANGES[change](data)
    data["message"]["content"][0]["content"] = draw(result_inner_blocks)
    return Invalid(_surface(TOOL_RESULT, data, _replace_op(target, target), [target]), "SESSION-SURFACE-TOOL-RESULT.3",
                   f"rewrite changes the {change}")


def invalid_requests(view: View) -> S[Invalid]:
    """A deliberately invalid append for the session `view` shows, with the rule that refuses it."""
    return st.one_of(*_fixed(view), *_surface_dependent(view))


__all__ = [
    "Invalid",
    "View",
    "append_requests",
    "assistant_message_requests",
    "chunks",
    "content_blocks",
    "forged_tool_result_rewrites",
    "incomplete_provenance_replacements",
    "invalid_requests",
    "json_values",
    "log_only_requests",
    "replacements",
    "request_headers",
    "sources_before",
    "summary_replacements",
    "todos",
    "tool_result_requests",
    "tool_result_rewrites",
    "user_message_requests",
]
