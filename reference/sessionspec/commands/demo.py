"""`sessionspec demo`: one example session, with a compaction and a tool-result pruning, shown in every view."""

from __future__ import annotations

import argparse
import json
from typing import Any

from sessionspec import impls
from sessionspec.jsonvalue import thaw


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("demo", help="build an example session and show its three views")
    parser.add_argument("--impl", default="model", help="implementation to run (default: model)")
    parser.set_defaults(handler=run)


def example_session(impl: str = "model") -> Any:
    """A two-turn session: a tool call, a pruned tool result, and a compaction summary."""
    ticks = iter(range(1_700_000_000_000, 1_700_000_001_000))
    session = impls.factory(impl)("demo", clock=lambda: next(ticks))

    def user(text: str, message_id: str, kind: str = "user") -> dict[str, Any]:
        source: dict[str, Any] = {"kind": kind} if kind == "user" else {"kind": kind, "plugin": "compaction"}
        return {"id": message_id, "role": "user", "source": source, "content": [{"type": "text", "text": text}]}

    def assistant(turn: int, content: list[Any]) -> dict[str, Any]:
        source = {"kind": "model", "provider": "deepseek", "model": "deepseek-chat"}
        return {"turn": turn, "step": 1, "message": {"id": f"a{turn}", "role": "assistant", "source": source, "content": content}}

    def result(text: str) -> dict[str, Any]:
        block = {"type": "tool-result", "toolCallId": "c1", "content": [{"type": "text", "text": text}]}
        return {"turn": 1, "step": 1, "message": {"id": "r1", "role": "user", "source": {"kind": "tool", "callId": "c1"},
                                                  "content": [block]}}

    session.append("turn/start", {"turn": 1})
    session.append("user/message", user("What is in setup.py?", "u1"), surface_op="append")
    session.append("step/start", {"turn": 1, "step": 1})
    chunk = session.append("assistant/chunk", {"turn": 1, "step": 1, "chunk": {"type": "text-delta", "index": 0, "text": "Reading."}})
    call = {"type": "tool-call", "id": "c1", "name": "read_file", "arguments": '{"path": "setup.py"}'}
    session.append("assistant/message", assistant(1, [{"type": "text", "text": "Reading."}, call]), surface_op="append",
                   source_event_seqs=[chunk.seq])
    tool_call = session.append("tool/call", {"turn": 1, "step": 1, "callId": "c1", "name": "read_file",
                                             "arguments": '{"path": "setup.py"}'})
    long_result = session.append("tool/result", result("from setuptools import setup\n" * 40), surface_op="append",
                                 source_event_seqs=[tool_call.seq])
    session.append("step/end", {"turn": 1, "step": 1})
    session.append("turn/end", {"turn": 1, "reason": {"kind": "completed"}})
    # Tool-result pruning: the same result, with only its inner content shortened.
    session.append("tool/result", result("[pruned: 40 lines]"),
                   surface_op={"op": "replace", "start": long_result.seq, "end": long_result.seq},
                   source_event_seqs=[long_result.seq])
    # Compaction: a summary takes the place of the whole first turn on the surface.
    nodes = list(session.surface.nodes)
    session.append("compaction/start", {"compactionId": "k1", "turn": None})
    session.append("user/message", user("Summary: the user asked about setup.py; it was read.", "summary1", "plugin"),
                   surface_op={"op": "replace", "start": nodes[0], "end": nodes[-1]}, source_event_seqs=nodes)
    session.append("compaction/end", {"compactionId": "k1", "turn": None})
    return session


def run(args: argparse.Namespace) -> int:
    session = example_session(args.impl)
    print(f"session {session.id!r}: {len(session.events)} events, surface generation {session.surface.replace_generation}")
    print("\n== complete log (every fact, nothing deleted)")
    for event in session.events:
        op = event.surface_op if isinstance(event.surface_op, str) or event.surface_op is None else event.surface_op.to_json()
        sources = "" if event.source_event_seqs is None else f" sources={list(event.source_event_seqs)}"
        print(f"  {event.seq:>3} {event.type:<20} surfaceOp={json.dumps(op)}{sources}")
    print(f"\n== model surface: nodes {list(session.surface.nodes)}")
    for message in session.derive_messages():
        text = " ".join(block.get("text", block.get("type", "")) for block in message["content"])[:72]
        print(f"  {message['role']:<9} {text!r}")
    print("\n== append-origin transcript (what a person saw)")
    for event in session.transcript():
        print(f"  {event.seq:>3} {event.type}")
    print("\n== last event as JSON")
    print("  " + json.dumps(thaw(session.events[-2].to_json()), ensure_ascii=False)[:160])
    return 0
