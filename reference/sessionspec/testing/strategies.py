"""Hypothesis strategies for valid session operations; the deliberately invalid ones are `testing.invalid`'s.

Public so that any implementation of the session model can reuse them. Every strategy produces
a request in the protocol's append shape, `{type, data, surfaceOp?, sourceEventSeqs?, ignorable?}`
(apply it with `Session.append_request`). Strategies that depend on the session take a `View`
(the current events and surface nodes), because what is valid depends on what has been logged:
sources must name earlier seqs, a replacement must name nodes that are on the surface now.

Speed: a strategy is validated by Hypothesis the first time it is drawn from, and building one
(`st.builds`, `st.one_of`, `st.sampled_from` of a fresh list) costs more than drawing from it.
So every strategy here is built once: at import, or cached by the numbers it depends on (the
next seq, a count). What depends on the log itself is a *draw function* `f(draw, view)`, which
draws indices and contents from those built strategies and reads the rest from the view;
`st.composite` wraps it for callers that want a strategy.
"""

from __future__ import annotations

import functools
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
Draw = Callable[[S[Any]], Any]
"""What a draw function draws with: `st.DrawFn` inside a composite, `DataObject.draw` in a rule."""


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

    def log_only(self) -> list[int]:
        """Seqs of log-only events: never on the surface."""
        return [e["seq"] for e in self.events if "surfaceOp" not in e]


@functools.lru_cache(maxsize=1024)
def index(n: int) -> S[int]:
    """A position in a sequence of `n` (n >= 1): one strategy per length, so it is validated once."""
    return st.integers(0, n - 1)


def pick(draw: Draw, items: Sequence[Any]) -> Any:
    """One of `items`, chosen by position (shrinks towards the first)."""
    return items[draw(index(len(items)))]


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


@functools.lru_cache(maxsize=1024)
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


@functools.lru_cache(maxsize=1024)
def _user_requests(seq: int) -> S[Request]:
    return st.builds(lambda d, s: _surface(USER_MESSAGE, d, "append", s), user_message_data(), sources_before(seq))


@functools.lru_cache(maxsize=1024)
def _assistant_requests(seq: int) -> S[Request]:
    return st.builds(lambda d, s: _surface(ASSISTANT_MESSAGE, d, "append", s), assistant_message_data(),
                     sources_before(seq, allow_empty=True))


@functools.lru_cache(maxsize=1024)
def _tool_result_requests(seq: int) -> S[Request]:
    return st.builds(lambda d, s: _surface(TOOL_RESULT, d, "append", s), tool_result_data(), sources_before(seq))


@functools.lru_cache(maxsize=1024)
def _append_requests(seq: int) -> S[Request]:
    return st.one_of(_user_requests(seq), _assistant_requests(seq), _tool_result_requests(seq), log_only_requests)


def user_message_requests(view: View) -> S[Request]:
    return _user_requests(view.seq)


def assistant_message_requests(view: View) -> S[Request]:
    return _assistant_requests(view.seq)


def tool_result_requests(view: View) -> S[Request]:
    return _tool_result_requests(view.seq)


def append_requests(view: View) -> S[Request]:
    """Any valid append: a surface append of each type or a log-only event."""
    return _append_requests(view.seq)


# --- replacements ------------------------------------------------------------------------------


def replace_op(start: int, end: int) -> dict[str, Any]:
    return Replace(start, end).to_json()


@functools.lru_cache(maxsize=1024)
def _extra_sources(seq: int) -> S[list[int]]:
    return st.lists(st.integers(0, seq - 1), unique=True, max_size=2)


@functools.lru_cache(maxsize=64)
def order(n: int) -> S[list[int]]:
    """An order of n things (a permutation of their positions)."""
    return st.permutations(range(n))


def covering_sources(draw: Draw, view: View, shadowed: Sequence[int]) -> list[int]:
    """Sources naming every shadowed node, maybe with a few other earlier seqs, in any order."""
    listed = sorted({*shadowed, *draw(_extra_sources(view.seq))})
    return [listed[i] for i in draw(order(len(listed)))] if len(listed) > 1 else listed


def positional_range(draw: Draw, view: View) -> tuple[int, int]:
    """Positions first <= last on the surface; often one whose start seq is above its end seq.

    After a replacement the node list is no longer sorted by seq, and a range is read by
    position: `{start: 9, end: 4}` is valid when node 9 sits before node 4.
    """
    nodes = view.nodes
    reversed_pairs = [(i, j) for i in range(len(nodes)) for j in range(i + 1, len(nodes)) if nodes[i] > nodes[j]]
    if reversed_pairs and draw(st.booleans()):
        first, last = pick(draw, reversed_pairs)
        return first, last
    first, last = draw(index(len(nodes))), draw(index(len(nodes)))
    return min(first, last), max(first, last)


_SUMMARY_DATA = st.one_of(st.tuples(st.just(USER_MESSAGE), user_message_data()),
                          st.tuples(st.just(ASSISTANT_MESSAGE), assistant_message_data()))


def summary_replacement(draw: Draw, view: View) -> Request:
    """A compaction: a user or assistant message takes the place of a surface range (needs a non-empty surface)."""
    first, last = positional_range(draw, view)
    sources = covering_sources(draw, view, view.nodes[first:last + 1])
    event_type, data = draw(_SUMMARY_DATA)
    return _surface(event_type, data, replace_op(view.nodes[first], view.nodes[last]), sources)


def tool_result_rewrite(draw: Draw, view: View) -> Request:
    """A pruning: the same tool result with only its inner content changed (decision 7; needs a tool-result node)."""
    target = pick(draw, view.tool_result_nodes())
    data = thaw(view.events[target]["data"])
    data["message"]["content"][0]["content"] = draw(result_inner_blocks)
    return _surface(TOOL_RESULT, data, replace_op(target, target), covering_sources(draw, view, [target]))


def replacement(draw: Draw, view: View) -> Request:
    """A valid replacement of the current surface (needs a non-empty surface)."""
    if view.tool_result_nodes() and draw(st.booleans()):
        return tool_result_rewrite(draw, view)
    return summary_replacement(draw, view)


@st.composite
def summary_replacements(draw: st.DrawFn, view: View) -> Request:
    return summary_replacement(draw, view)


@st.composite
def tool_result_rewrites(draw: st.DrawFn, view: View) -> Request:
    return tool_result_rewrite(draw, view)


@st.composite
def replacements(draw: st.DrawFn, view: View) -> Request:
    """A valid replacement of the current surface (requires a non-empty surface)."""
    return replacement(draw, view)


__all__ = [
    "View",
    "append_requests",
    "assistant_message_requests",
    "chunks",
    "content_blocks",
    "covering_sources",
    "json_values",
    "log_only_requests",
    "order",
    "pick",
    "positional_range",
    "replace_op",
    "replacement",
    "replacements",
    "request_headers",
    "sources_before",
    "summary_replacement",
    "summary_replacements",
    "todos",
    "tool_result_requests",
    "tool_result_rewrite",
    "tool_result_rewrites",
    "user_message_requests",
]
