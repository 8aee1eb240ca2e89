"""Requests generated from a chooser: one Hypothesis draw can seed a whole request.

A Hypothesis draw costs tens of microseconds, and a message with a few content blocks takes
dozens of them; the conformance runner sends thousands of requests a second, so it cannot afford
that for every request. The generators here take `choose(n)` (a number in `range(n)`) instead of
a Hypothesis draw. Two choosers drive them:

- `seeded(seed)`: a `random.Random` seeded from one Hypothesis draw, so each request costs one
  draw. Hypothesis still decides how many requests, of which rule, with which seed, and shrinks
  all of that; the runner then removes every request a divergence does not need
  (`runner.minimize`). This is `st.randoms(use_true_random=True)` per request.
- `drawn(draw)`: every choice a Hypothesis draw (shrinking reaches inside the request), for
  strategies (`as_strategy`) and the in-process tests.

What is generated is valid (spec/02, spec/03): `testing.breaking` breaks it. The values lean to
the edges that matter for lossless JSON (spec/01): lone surrogates, NUL, the largest safe
integers, subnormal and huge floats, nesting.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any, Final, TypeVar

from hypothesis import strategies as st

from sessionspec.catalog import ASSISTANT_MESSAGE, TOOL_RESULT, USER_MESSAGE
from sessionspec.jsonvalue import MAX_SAFE_INTEGER, thaw
from sessionspec.testing.strategies import PLUGIN_TYPES, UNKNOWN_TYPES, Draw, Request, View, index, replace_op

Choose = Callable[[int], int]
"""`choose(n)`: a number in range(n), n >= 1."""
T = TypeVar("T")


def seeded(seed: int) -> Choose:
    """Choices from a random.Random seeded with `seed`."""
    below = random.Random(seed).randrange
    return below


def drawn(draw: Draw) -> Choose:
    """Choices drawn by Hypothesis, one draw each (shrinks towards 0)."""
    return lambda n: draw(index(n)) if n > 1 else 0


def one(choose: Choose, items: Sequence[T]) -> T:
    return items[choose(len(items))]


def as_strategy(generate: Callable[[Choose], T]) -> st.SearchStrategy[T]:
    """A strategy whose every choice is a Hypothesis draw."""
    return st.composite(lambda draw: generate(drawn(draw)))()


TEXTS: Final = ("", "hello", "compact summary", "\u00e9t\u00e9 \u65e5\u672c", "emoji \U0001f600", "a\x00b", "line\nbreak\t",
                '"quoted" \\', "\u2028\u2029", "\ufeffbom", "x" * 64, "{\"json\": 1}", " ", "\x7f\x1b[0m", "ok", "Done.")
"""Texts at the edges of JSON text."""
SURROGATES: Final = ("lone \ud800", "\udfff", "\ud83d\ude00")
"""Lone surrogates (decision 4: kept, and carried by every format). Only the lossless writers can write them, so
every answer that carries one is written slowly on both sides: they are one text in 128."""


def text(choose: Choose) -> str:
    return one(choose, SURROGATES) if choose(128) == 0 else one(choose, TEXTS)


NUMBERS: Final = (0, 1, -1, 7, 1024, MAX_SAFE_INTEGER, -MAX_SAFE_INTEGER, 0.5, -2.25, 1.0, 1e308, -1e-308, 5e-324,
                  0.1, 123456789.125)


def json_value(choose: Choose, depth: int = 0) -> Any:
    """A lossless JSON value (spec/01): scalars at the edges, lists and objects up to three deep."""
    kind = choose(8 if depth < 3 else 5)
    if kind == 0:
        return None
    if kind == 1:
        return choose(2) == 1
    if kind == 2:
        return one(choose, NUMBERS)
    if kind in (3, 4):
        return text(choose)
    if kind in (5, 6):
        return [json_value(choose, depth + 1) for _ in range(choose(4))]
    return {text(choose): json_value(choose, depth + 1) for _ in range(choose(4))}


IDS: Final = ("m1", "m2", "m3", "summary", "r1", "\u65e5", "a" * 40)
CALL_IDS: Final = ("c1", "c2", "c3", "call-\u00e9")


def block(choose: Choose) -> dict[str, Any]:
    """A content block of a user or assistant message (only the tool-result block is checked: spec/02)."""
    kind = choose(6)
    if kind == 0:
        return {"type": "text", "text": text(choose)}
    if kind == 1:
        return {"type": "reasoning", "text": text(choose)}
    if kind == 2:
        return {"type": "tool-call", "id": one(choose, CALL_IDS), "name": one(choose, ("read_file", "bash")),
                "arguments": one(choose, ('{"path": "a"}', "{}", "{"))}
    if kind == 3:
        return {"type": "image", "attachment": {"attachmentId": one(choose, ("att1", "att2")), "mediaType": "image/png",
                                                "bytes": 1 + choose(4096), "width": 1 + choose(64), "height": 1 + choose(64)}}
    if kind == 4:
        return {"type": "x-plugin/note", "value": json_value(choose)}
    return {"type": "text", "text": text(choose), **({"cache": {"ttl": 5}} if choose(2) else {})}


def user_data(choose: Choose) -> dict[str, Any]:
    source = one(choose, ({"kind": "user"}, {"kind": "plugin", "plugin": "compaction"},
                          {"kind": "plugin", "plugin": "compaction", "form": "notice", "summary": "compacted"}))
    return {"id": one(choose, IDS), "role": "user", "source": dict(source), "content": [block(choose) for _ in range(choose(4))]}


def assistant_data(choose: Choose) -> dict[str, Any]:
    """An assistant message; an empty content list (usage only) projects to no message."""
    data: dict[str, Any] = {"turn": choose(6), "step": choose(6),
                            "message": {"id": one(choose, IDS), "role": "assistant",
                                        "source": {"kind": "model", "provider": "deepseek", "model": "deepseek-chat"},
                                        "content": [block(choose) for _ in range(choose(4))]}}
    extra = choose(4)
    if extra == 1:
        data["usage"] = {"inputTokens": choose(10**6), "outputTokens": choose(10**6)}
    elif extra == 2:
        data["interrupted"] = True
    return data


def tool_result_data(choose: Choose) -> dict[str, Any]:
    call = one(choose, CALL_IDS)
    inner = [one(choose, ({"type": "text", "text": text(choose)}, block(choose))) for _ in range(choose(3))]
    result: dict[str, Any] = {"type": "tool-result", "toolCallId": call, "content": inner}
    if choose(3) == 1:
        result["isError"] = choose(2) == 1
    data: dict[str, Any] = {"turn": choose(6), "step": choose(6),
                            "message": {"id": one(choose, IDS), "role": "user", "source": {"kind": "tool", "callId": call},
                                        "content": [result]}}
    extra = choose(4)
    if extra == 1:
        data["meta"] = json_value(choose)
    elif extra == 2:
        data["error"] = {"name": "ToolError", "code": "E1"}
    return data


def log_only(choose: Choose) -> Request:
    """A log-only event of any kind: turns, steps, chunks, calls, todos, request headers, plugin and unknown types."""
    kind, turn, step = choose(9), choose(6), choose(6)
    if kind == 0:
        return {"type": "turn/start", "data": {"turn": turn}}
    if kind == 1:
        return {"type": "turn/end", "data": {"turn": turn, "reason": {"kind": "completed"}}}
    if kind == 2:
        return {"type": "step/start", "data": {"turn": turn, "step": step}}
    if kind == 3:
        chunk = one(choose, ({"type": "text-delta", "index": 0, "text": text(choose)}, {"type": "finish", "reason": "stop"},
                             {"type": "usage", "usage": {"inputTokens": 1, "outputTokens": 2}}))
        return {"type": "assistant/chunk", "data": {"turn": turn, "step": step, "chunk": chunk}}
    if kind == 4:
        return {"type": "tool/call", "data": {"turn": turn, "step": step, "callId": one(choose, CALL_IDS), "name": "bash",
                                              "arguments": "{}"}}
    if kind == 5:
        return {"type": "todo/write", "data": {"todos": [{"content": text(choose), "status": "pending"}
                                                         for _ in range(choose(3))]}}
    if kind == 6:
        config: dict[str, Any] = {"provider": "deepseek", "model": "deepseek-chat"}
        header: dict[str, Any] = {"config": config}
        if choose(2):
            config["maxTokens"] = 1 + choose(4096)
            header["adapterDefaults"] = {"maxTokens": True}
        if choose(2):
            header["tools"] = [{"name": "bash", "description": text(choose), "parameters": json_value(choose)}]
        return {"type": "request/header", "data": {"header": header, "reason": one(choose, ("initial", "resume", "change"))}}
    event_type = one(choose, PLUGIN_TYPES if kind == 7 else UNKNOWN_TYPES)
    request: Request = {"type": event_type, "data": json_value(choose)}
    if choose(3) == 0:
        request["ignorable"] = True
    return request


def sources(choose: Choose, seq: int, *, allow_empty: bool = False) -> list[int] | None:
    """An optional provenance list: distinct earlier seqs, in any order."""
    if seq == 0 or choose(2) == 0:
        return [] if allow_empty and choose(4) == 0 else None
    return list(dict.fromkeys(choose(seq) for _ in range(1 + choose(3))))


def _surface(event_type: str, data: Any, op: Any, listed: list[int] | None) -> Request:
    request: Request = {"type": event_type, "data": data, "surfaceOp": op}
    if listed is not None:
        request["sourceEventSeqs"] = listed
    return request


def valid_append(choose: Choose, view: View) -> Request:
    """Any valid append: a surface append of each type or a log-only event."""
    kind = choose(4)
    if kind == 0:
        return _surface(USER_MESSAGE, user_data(choose), "append", sources(choose, view.seq))
    if kind == 1:
        return _surface(ASSISTANT_MESSAGE, assistant_data(choose), "append", sources(choose, view.seq, allow_empty=True))
    if kind == 2:
        return _surface(TOOL_RESULT, tool_result_data(choose), "append", sources(choose, view.seq))
    return log_only(choose)


def replacement(choose: Choose, view: View) -> Request:
    """A valid replacement of the current surface (needs a non-empty surface): a compaction or a pruning."""
    nodes = view.nodes
    results = view.tool_result_nodes()
    if results and choose(2):
        target = one(choose, results)
        data = thaw(view.events[target]["data"])
        data["message"]["content"][0]["content"] = [{"type": "text", "text": text(choose)} for _ in range(choose(3))]
        return _surface(TOOL_RESULT, data, replace_op(target, target), _covering(choose, view, [target]))
    first, last = sorted((choose(len(nodes)), choose(len(nodes))))
    if choose(2):  # after a replacement the nodes are out of seq order: a range whose start seq is above its end
        backwards = [(i, j) for i in range(len(nodes)) for j in range(i + 1, len(nodes)) if nodes[i] > nodes[j]]
        first, last = one(choose, backwards) if backwards else (first, last)
    data = user_data(choose) if choose(2) else assistant_data(choose)
    event_type = USER_MESSAGE if "role" in data else ASSISTANT_MESSAGE
    return _surface(event_type, data, replace_op(nodes[first], nodes[last]), _covering(choose, view, nodes[first:last + 1]))


def _covering(choose: Choose, view: View, shadowed: Sequence[int]) -> list[int]:
    """Sources naming every shadowed node, maybe with another earlier seq, in any order."""
    listed = list(dict.fromkeys([*shadowed, *(choose(view.seq) for _ in range(choose(2)))]))
    random.Random(choose(1 << 16)).shuffle(listed)
    return listed


__all__ = [
    "Choose",
    "as_strategy",
    "assistant_data",
    "block",
    "drawn",
    "json_value",
    "log_only",
    "one",
    "replacement",
    "seeded",
    "sources",
    "text",
    "tool_result_data",
    "user_data",
    "valid_append",
]
