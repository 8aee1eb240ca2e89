"""The realistic workload the benchmarks replay: an agent loop's append requests, deterministic by seed.

Each item is one append request in the conformance protocol's shape (`{"op": "append", "type",
"data", "surfaceOp"?, "sourceEventSeqs"?}`) or `{"op": "derive"}` where an agent loop builds a
provider request (once per step). Turns of steps, each step streaming chunks, an assistant
message (a tool call in every step but the last), the call and its result; every
`compact_every` turns a summary user message replaces the older half of the surface (never
splitting a call from its result), every `prune_every` turns the oldest live tool result is
pruned to a stub, both inside the turn. The same parameters give the same lines as the shared
`bench/workload.py` the benchmarks were first measured with, so `sessionspec bench --turns N`
needs nothing outside the package.
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

Op = dict[str, Any]
WORDS = ("alpha", "beta", "gamma", "delta", "file", "test", "fix", "run")
MODEL = {"kind": "model", "provider": "deepseek", "model": "deepseek-chat"}


@dataclass(frozen=True)
class Shape:
    """How large the workload is and how often the surface is reshaped."""

    turns: int = 1000
    steps: int = 3
    chunks: int = 8
    compact_every: int = 25
    prune_every: int = 5
    seed: int = 7


@dataclass
class _Writer:
    """The log being written: next seq, current surface, live tool results, messages that carry a call."""

    rnd: random.Random
    seq: int = 0
    out: list[Op] = field(default_factory=list)
    surface: list[int] = field(default_factory=list)
    tool_results: dict[int, Any] = field(default_factory=dict)
    calls: set[int] = field(default_factory=set)

    def append(self, event_type: str, data: Any, surface_op: Any = None, sources: list[int] | None = None) -> int:
        op: Op = {"op": "append", "type": event_type, "data": data}
        if sources is not None:
            op["sourceEventSeqs"] = sources
        if surface_op is not None:
            op["surfaceOp"] = surface_op
        self.out.append(op)
        self.seq += 1
        return self.seq - 1

    def words(self, count: int) -> str:
        return " ".join(self.rnd.choice(WORDS) for _ in range(count))


def workload(shape: Shape = Shape()) -> Iterator[Op]:
    """The workload's operations, one turn at a time (memory bounded by the surface, not the log)."""
    writer = _Writer(random.Random(shape.seed))
    for turn in range(1, shape.turns + 1):
        _turn(writer, shape, turn)
        yield from writer.out
        writer.out.clear()


def lines(shape: Shape = Shape()) -> Iterator[str]:
    """The workload as JSON Lines text, compact separators, as the shared script prints it."""
    for op in workload(shape):
        yield json.dumps(op, separators=(",", ":"))


def _turn(w: _Writer, shape: Shape, turn: int) -> None:
    w.append("turn/start", {"turn": turn})
    user = {"id": f"u{turn}", "role": "user", "source": {"kind": "user"}, "content": [{"type": "text", "text": w.words(12)}]}
    w.surface.append(w.append("user/message", user, "append"))
    for step in range(1, shape.steps + 1):
        _step(w, shape, turn, step)
    if shape.prune_every and turn % shape.prune_every == 0 and w.tool_results:
        _prune(w)
    if shape.compact_every and turn % shape.compact_every == 0 and len(w.surface) > 4:
        _compact(w, turn)
    w.append("turn/end", {"turn": turn, "reason": {"kind": "completed"}})


def _step(w: _Writer, shape: Shape, turn: int, step: int) -> None:
    w.append("step/start", {"turn": turn, "step": step})
    if turn == 1 and step == 1:
        w.append("request/header", {"reason": "initial", "header": {
            "config": {"provider": "deepseek", "model": "deepseek-chat"}, "system": "You are a coding agent."}})
    w.out.append({"op": "derive"})
    chunks = [w.append("assistant/chunk", {"turn": turn, "step": step,
                                           "chunk": {"type": "text-delta", "index": 0, "text": w.words(4)}})
              for _ in range(shape.chunks)]
    last = step == shape.steps
    content: list[Any] = [{"type": "text", "text": w.words(30)}]
    call_id = f"c{turn}-{step}"
    if not last:
        content.append({"type": "tool-call", "id": call_id, "name": "read_file",
                        "arguments": json.dumps({"path": f"src/{w.words(1)}.py"})})
    message = {"turn": turn, "step": step,
               "message": {"id": f"a{turn}-{step}", "role": "assistant", "source": dict(MODEL), "content": content},
               "usage": {"inputTokens": 1000 + w.seq, "outputTokens": 200}}
    seq = w.append("assistant/message", message, "append", chunks)
    w.surface.append(seq)
    if not last:
        w.calls.add(seq)
        call = w.append("tool/call", {"turn": turn, "step": step, "callId": call_id, "name": "read_file",
                                      "arguments": content[-1]["arguments"]})
        data = {"turn": turn, "step": step,
                "message": {"id": f"r{turn}-{step}", "role": "user", "source": {"kind": "tool", "callId": call_id},
                            "content": [{"type": "tool-result", "toolCallId": call_id,
                                         "content": [{"type": "text", "text": w.words(80)}]}]}}
        result = w.append("tool/result", data, "append", [call])
        w.surface.append(result)
        w.tool_results[result] = data
    w.append("step/end", {"turn": turn, "step": step})


def _prune(w: _Writer) -> None:
    """The oldest live tool result, its inner content cut to a stub (SESSION-SURFACE-TOOL-RESULT.3)."""
    target = min(w.tool_results)
    data = copy.deepcopy(w.tool_results.pop(target))
    data["message"]["content"][0]["content"] = [{"type": "text", "text": "[pruned]"}]
    pruned = w.append("tool/result", data, {"op": "replace", "start": target, "end": target}, [target])
    w.surface[w.surface.index(target)] = pruned


def _compact(w: _Writer, turn: int) -> None:
    """A summary takes the place of the older half of the surface, never splitting a call from its result."""
    cut = len(w.surface) // 2
    if w.surface[cut - 1] in w.calls:
        cut += 1
    half = w.surface[:cut]
    summary = {"id": f"summary{turn}", "role": "user", "source": {"kind": "plugin", "plugin": "compaction"},
               "content": [{"type": "text", "text": "Summary: " + w.words(60)}]}
    seq = w.append("user/message", summary, {"op": "replace", "start": half[0], "end": half[-1]}, sorted(half))
    w.surface[: len(half)] = [seq]
    for node in half:
        w.tool_results.pop(node, None)
