"""The cases the vectors are generated from: for each rule a request that breaks it and a near miss that does not.

A case is a setup (requests that all succeed) and one final request, given as an object or, for
the few inputs JSON objects cannot carry (a line that is not JSON, `1e400`), as a raw line. The
expected answers are never written here: `vectors.generate` computes them with the reference
model, and refuses a case whose final answer does not reject with the rule the case names.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sessionspec.conformance.registry import all_rules
from sessionspec.testing.builders import (
    CONFIG,
    REMOVED,
    assistant_message,
    replace_op,
    request_header,
    tool_call,
    tool_call_block,
    tool_result,
    user_message,
    with_change,
)

Request = dict[str, Any]
Step = Request | str
"""A request object, or a raw line (str) for inputs a JSON object cannot carry."""


@dataclass(frozen=True)
class Case:
    id: str
    rules: tuple[str, ...]
    steps: tuple[Step, ...]
    rejects: bool
    summary: str = ""
    setup_may_fail: bool = False
    """Only for the case that needs a rejected create before its last step."""


def create(session_id: str = "s1", seed: Any = None, header: Any = None) -> Request:
    return {"op": "create", "id": session_id, "seed": seed, "header": header}


def append(event_type: str, data: Any, op: Any = None, sources: Any = None, **extra: Any) -> Request:
    request: Request = {"op": "append", "type": event_type, "data": data}
    if op is not None:
        request["surfaceOp"] = op
    if sources is not None:
        request["sourceEventSeqs"] = sources
    request.update(extra)
    return request


CALL = tool_call_block("c1")
TURN: tuple[Step, ...] = (
    create(),
    append("turn/start", {"turn": 1}),                                     # 0
    append("user/message", user_message("u1", "hello"), "append"),        # 1
    append("step/start", {"turn": 1, "step": 1}),                          # 2
    append("assistant/message", assistant_message(content=[CALL]), "append"),  # 3
    append("tool/call", tool_call("c1")),                                  # 4
    append("tool/result", tool_result("c1", "output"), "append", [4]),     # 5
    append("step/end", {"turn": 1, "step": 1}),                            # 6
)
"""A turn with a tool call; the surface is [1, 3, 5]."""
NOTE = "plugin/note"


def seed_event(position: int, **overrides: Any) -> dict[str, Any]:
    event: dict[str, Any] = {"type": "turn/start", "seq": position, "time": 5, "data": {"turn": position}}
    event.update(overrides)
    return {k: v for k, v in event.items() if v is not REMOVED}


HEADER = {"version": 0, "id": "s1", "createdAt": 1}


Pair = tuple[str, tuple[Step, ...], Step, Step]
"""(rule, setup, request that breaks the rule, near miss that does not)."""


def _pairs() -> list[Pair]:
    fresh: tuple[Step, ...] = (create(),)
    u, a, r = user_message("u1", "hello"), assistant_message(), tool_result("c1", "output")
    u2, k, summary = user_message("u2", "hello"), user_message("k", "hello"), user_message("k", "hello", kind="plugin")
    short = tool_result("c1", "short")
    m = ("message",)
    return [
        # Request lines are JSON text, read by the lossless text reader (spec/01, "JSON text").
        ("SESSION-LOSSLESS-TEXT.1", fresh, '{"op":"append","type":"plugin/note","data":"\udcff"}',
         '{"op":"append","type":"plugin/note","data":"\\udcff"}'),
        ("SESSION-LOSSLESS-TEXT.2", fresh, "not json", '{"op":"snapshot"}'),
        ("SESSION-LOSSLESS-TEXT.2", fresh, '\ufeff{"op":"snapshot"}', '{"op":"snapshot"}'),
        ("SESSION-LOSSLESS-TEXT.3", fresh, '{"op":"append","type":"plugin/note","data":{"x":1e400}}',
         '{"op":"append","type":"plugin/note","data":{"x":1e300}}'),
        ("SESSION-LOSSLESS-TEXT.4", fresh, append(NOTE, {"n": 2**53}), append(NOTE, {"n": 2**53 - 1})),
        ("SESSION-LOSSLESS-TEXT.4", fresh, append(NOTE, [{"n": [-(2**64)]}]), append(NOTE, [{"n": [-(2**53 - 1)]}])),
        ("SESSION-LOSSLESS-TEXT.5", fresh, append(NOTE, {"x": [-0.0]}), append(NOTE, {"x": [0.0]})),
        ("SESSION-LOSSLESS-TEXT.5", fresh, '{"op":"append","type":"plugin/note","data":{"x":-0}}',
         '{"op":"append","type":"plugin/note","data":{"x":0}}'),
        ("SESSION-LOSSLESS-TEXT.5", fresh, '{"op":"append","type":"plugin/note","data":[{"x":[-0e0]}]}',
         '{"op":"append","type":"plugin/note","data":[{"x":[0e0]}]}'),
        ("SESSION-LOSSLESS-TEXT.6", fresh, '{"op":"append","type":"plugin/note","data":{"a":1,"a":1}}',
         '{"op":"append","type":"plugin/note","data":{"a":1,"b":1}}'),
        ("SESSION-EVENT-ENVELOPE.1", fresh, append(NOTE, {}, seq=0), append(NOTE, {})),
        ("SESSION-EVENT-ENVELOPE.1", fresh, create(seed=[{**seed_event(0), "extra": 1}]), create(seed=[seed_event(0)])),
        ("SESSION-EVENT-ENVELOPE.2", fresh, append(7, {}), append(NOTE, {})),  # type: ignore[arg-type]
        ("SESSION-EVENT-ENVELOPE.8", fresh, append("", {}), append(NOTE, {})),
        ("SESSION-EVENT-ENVELOPE.3", fresh, create(seed=[seed_event(0, seq=-1)]), create(seed=[seed_event(0, seq=0)])),
        ("SESSION-EVENT-ENVELOPE.4", fresh, create(seed=[seed_event(0, time=1.5)]), create(seed=[seed_event(0, time=-3)])),
        ("SESSION-EVENT-ENVELOPE.5", fresh, {"op": "append", "type": NOTE}, append(NOTE, None)),
        ("SESSION-EVENT-ENVELOPE.6", fresh, append(NOTE, {}, ignorable=False), append(NOTE, {}, ignorable=True)),
        ("SESSION-EVENT-ENVELOPE.7", fresh, append("user/message", u, "append", ignorable=True),
         append(NOTE, {}, ignorable=True)),
        ("SESSION-FORMAT-HEADER.1", fresh, create(header=[]), create(header=HEADER)),
        ("SESSION-FORMAT-HEADER.2", fresh, create(header={**HEADER, "version": 1}), create(header=HEADER)),
        ("SESSION-FORMAT-HEADER.3", fresh, create(header={**HEADER, "id": "other"}), create(header=HEADER)),
        ("SESSION-FORMAT-HEADER.4", fresh, create(header={**HEADER, "createdAt": -1}), create(header={**HEADER, "createdAt": 0})),
        ("SESSION-FORMAT-HEADER.5", fresh, create(header={**HEADER, "cwd": "work"}), create(header={**HEADER, "cwd": "/work"})),
        ("SESSION-FORMAT-HEADER.6", fresh, create(header={**HEADER, "parentSession": 5}),
         create(header={**HEADER, "parentSession": "p"})),
        ("SESSION-FORMAT-HEADER.12", fresh, create(header={**HEADER, "parentSession": ""}),
         create(header={**HEADER, "parentSession": "p"})),
        ("SESSION-FORMAT-HEADER.7", fresh, create(header={**HEADER, "seedLength": -1}), create(header={**HEADER, "seedLength": 0})),
        ("SESSION-FORMAT-HEADER.8", fresh, create(header={**HEADER, "origin": "user"}),
         create(header={**HEADER, "origin": "subagent"})),
        ("SESSION-FORMAT-HEADER.9", fresh, create(header={**HEADER, "delegationDepth": True}),
         create(header={**HEADER, "delegationDepth": 2})),
        ("SESSION-FORMAT-HEADER.10", fresh, create(header={**HEADER, "agentPreset": 3}),
         create(header={**HEADER, "agentPreset": "coder"})),
        ("SESSION-FORMAT-HEADER.11", fresh, create(header={**HEADER, "title": "x"}), create(header=HEADER)),
        ("SESSION-CORE-EVENTS.1", fresh, create(seed=[seed_event(0, type="session/end-seed", data={"x": 1})]),
         create(seed=[seed_event(0, type="session/end-seed", data={})])),
        ("SESSION-CORE-EVENTS.2", fresh, append("mode/set", {"mode": "plan"}), append("mode/change", {"mode": "plan"})),
        # A log-only event in a shape the load would upgrade (or refuse) would not load as itself (spec/07).
        ("SESSION-LEGACY-UPGRADE.6", fresh, append("turn/end", {"turn": 0, "reason": {}}),
         append("turn/end", {"turn": 0, "reason": {"kind": "completed"}})),
        ("SESSION-LEGACY-UPGRADE.6", fresh, append("turn/end", {"turn": 1, "reason": {"kind": "disposed"}}),
         append("turn/end", {"turn": 1, "reason": {"kind": "aborted", "reason": {"kind": "disposed"}}})),
        ("SESSION-LEGACY-UPGRADE.6", fresh, create(seed=[seed_event(0, data={"turn": 1, "trigger": {"kind": "user"}})]),
         create(seed=[seed_event(0, data={"turn": 1})])),
        ("SESSION-LEGACY-UPGRADE.6", fresh, append("steering/message", {"turn": 1, "message": u}, ignorable=True),
         append("steering/note", {"turn": 1, "message": u}, ignorable=True)),
        ("SESSION-MESSAGE-SHAPE.9", fresh, append("assistant/message", {"turn": 1, "step": 1}, "append"),
         append("assistant/message", a, "append")),
        ("SESSION-MESSAGE-SHAPE.9", fresh, append("user/message", "hi", "append"), append("user/message", u, "append")),
        ("SESSION-MESSAGE-SHAPE.1", fresh, append("user/message", with_change(u, ("id",), ""), "append"),
         append("user/message", with_change(u, ("id",), "u2"), "append")),
        ("SESSION-MESSAGE-SHAPE.2", fresh, append("user/message", with_change(u, ("role",), "assistant"), "append"),
         append("user/message", u, "append")),
        ("SESSION-MESSAGE-SHAPE.3", fresh, append("user/message", with_change(u, ("source",), {"kind": ""}), "append"),
         append("user/message", with_change(u, ("source",), {"kind": "plugin"}), "append")),
        ("SESSION-MESSAGE-SHAPE.4", fresh, append("user/message", with_change(u, ("content",), "hi"), "append"),
         append("user/message", with_change(u, ("content",), []), "append")),
        ("SESSION-MESSAGE-SHAPE.5", fresh,
         append("assistant/message", with_change(a, (*m, "source", "provider"), ""), "append"),
         append("assistant/message", a, "append")),
        ("SESSION-MESSAGE-SHAPE.6", fresh,
         append("tool/result", with_change(r, (*m, "source", "kind"), "user"), "append"),
         append("tool/result", r, "append")),
        ("SESSION-MESSAGE-SHAPE.7", fresh,
         append("tool/result", with_change(r, (*m, "content", 0, "content"), "text"), "append"),
         append("tool/result", with_change(r, (*m, "content", 0, "content"), []), "append")),
        ("SESSION-MESSAGE-SHAPE.8", fresh,
         append("tool/result", with_change(r, (*m, "content", 0, "toolCallId"), "c2"), "append"),
         append("tool/result", r, "append")),
        ("SESSION-MESSAGE-SHAPE.8", fresh,  # an id that sorts before the call's: equal, not ordered
         append("tool/result", with_change(r, (*m, "content", 0, "toolCallId"), "c0"), "append"),
         append("tool/result", r, "append")),
        ("SESSION-REQUEST-HEADER.1", fresh, append("request/header", request_header({"provider": "deepseek"})),
         append("request/header", request_header(CONFIG))),
        ("SESSION-REQUEST-HEADER.2", fresh, append("request/header", request_header({**CONFIG, "reasoningEffort": ""})),
         append("request/header", request_header({**CONFIG, "reasoningEffort": "high"}))),
        ("SESSION-REQUEST-HEADER.3", fresh, append("request/header", request_header(CONFIG, adapterDefaults={"maxTokens": True})),
         append("request/header", request_header({**CONFIG, "maxTokens": 8}, adapterDefaults={"maxTokens": True}))),
        ("SESSION-REQUEST-HEADER.4", fresh, append("request/header", request_header(CONFIG, reason="fallback")),
         append("request/header", request_header(CONFIG))),
        ("SESSION-SURFACE-PROJECTION.1", fresh, append("turn/start", {"turn": 1}, "append"), append("turn/start", {"turn": 1})),
        ("SESSION-SURFACE-PROJECTION.2", TURN, append("turn/end", {"turn": 1}, sources=[0]), append("turn/end", {"turn": 1})),
        ("SESSION-SURFACE-PROJECTION.3", fresh, append("user/message", u), append("user/message", u, "append")),
        ("SESSION-SURFACE-PROJECTION.4", fresh, append("user/message", u, "prepend"), append("user/message", u, "append")),
        ("SESSION-SURFACE-PROVENANCE.1", TURN, append("user/message", u2, "append", 1),
         append("user/message", u2, "append", [1])),
        ("SESSION-SURFACE-PROVENANCE.2", TURN, append("user/message", u2, "append", []),
         append("assistant/message", assistant_message("a2", []), "append", [])),
        ("SESSION-SURFACE-PROVENANCE.3", TURN, append("user/message", u2, "append", [True]),
         append("user/message", u2, "append", [0])),
        ("SESSION-SURFACE-PROVENANCE.4", TURN, append("user/message", u2, "append", [1, 1]),
         append("user/message", u2, "append", [1, 0])),
        ("SESSION-SURFACE-PROVENANCE.5", TURN, append("user/message", u2, "append", [7]),
         append("user/message", u2, "append", [6])),
        ("SESSION-SURFACE-PROVENANCE.6", TURN, append("user/message", summary, replace_op(1, 5), [1, 5]),
         append("user/message", summary, replace_op(1, 5), [1, 3, 5])),
        ("SESSION-SURFACE-REPLACE.1", TURN, append("user/message", k, replace_op(0, 3), [0, 3]),
         append("user/message", k, replace_op(1, 3), [1, 3])),
        ("SESSION-SURFACE-REPLACE.2", TURN, append("user/message", k, replace_op(5, 1), [1, 3, 5]),
         append("user/message", k, replace_op(3, 3), [3])),
        ("SESSION-SURFACE-TOOL-RESULT.1", TURN, append("tool/result", short, replace_op(3, 5), [3, 5]),
         append("tool/result", short, replace_op(5, 5), [5])),
        ("SESSION-SURFACE-TOOL-RESULT.2", TURN, append("tool/result", short, replace_op(3, 3), [3]),
         append("tool/result", short, replace_op(5, 5), [4, 5])),
        ("SESSION-SURFACE-TOOL-RESULT.3", TURN,
         append("tool/result", tool_result("c1", "output", message_id="r2"), replace_op(5, 5), [5]),
         append("tool/result", tool_result("c1", ""), replace_op(5, 5), [5])),
        ("SESSION-SURFACE-FOLD.1", fresh, {"op": "fold", "events": [seed_event(0), seed_event(2)]},
         {"op": "fold", "events": [seed_event(0), seed_event(1)]}),
        ("SESSION-APPEND-COMMIT.5", fresh, append("session/end-seed", {}),
         create(seed=[seed_event(0), seed_event(1, type="session/end-seed", data={})])),
        ("SESSION-SEED-ACCEPTANCE.1", fresh, create(seed={"events": []}), create(seed=[])),
        ("SESSION-SEED-ACCEPTANCE.2", fresh, create(seed=[seed_event(1)]), create(seed=[seed_event(0), seed_event(1)])),
        ("SESSION-CONFORMANCE-PROTOCOL.1", fresh, '["snapshot"]', '{"op":"hello"}'),
        ("SESSION-CONFORMANCE-PROTOCOL.2", fresh, {"op": "compact"}, {"op": "snapshot"}),
        ("SESSION-CONFORMANCE-PROTOCOL.3", (*TURN, create(header=[])), append(NOTE, {}), create()),
        ("SESSION-CONFORMANCE-PROTOCOL.4", fresh, {"op": "create", "id": "s1", "seed": None}, create()),
        ("SESSION-CONFORMANCE-PROTOCOL.5", fresh, {"op": "fold", "events": {}}, {"op": "fold", "events": []}),
        ("SESSION-CONFORMANCE-PROTOCOL.6", fresh, append(NOTE, {}, **{"x-nonsense": 1}), append(NOTE, {})),
    ]


def scenarios() -> list[Case]:
    """Accepting sessions that exercise the guarantees (kind `internal`) end to end."""
    compaction = (*TURN,
                  append("turn/end", {"turn": 1, "reason": {"kind": "completed"}}),
                  append("tool/result", tool_result("c1", "[pruned]"), replace_op(5, 5), [5]),
                  append("compaction/start", {"compactionId": "k1", "turn": None}),
                  append("user/message", user_message("summary", "the user asked; a file was read", kind="plugin"),
                         replace_op(1, 8), [1, 3, 8]),
                  append("compaction/end", {"compactionId": "k1", "turn": None}),
                  {"op": "snapshot"})
    positional = (*TURN, append("user/message", user_message("k", "hello"), replace_op(3, 5), [3, 5]),
                  append("user/message", user_message("k2", "hello"), replace_op(7, 7), [7]), {"op": "snapshot"})
    hello = user_message("u1", "hello")
    seeded = (create(seed=[seed_event(0), seed_event(1, type="user/message", data=hello, surfaceOp="append")]),
              append(NOTE, {}), {"op": "snapshot"})
    empty_assistant = (create(), append("assistant/message", assistant_message("a0", []), "append", []),
                       {"op": "snapshot"})
    calling = assistant_message(content=[CALL], turn=0)
    open_turn = [seed_event(0), seed_event(1, type="step/start", data={"turn": 0, "step": 1}),
                 seed_event(2, type="assistant/message", data=calling, surfaceOp="append")]
    uncalled = {key: value for key, value in calling.items() if key not in ("turn", "step")}
    unnumbered = [seed_event(0, data={}), seed_event(1, type="step/start", data={}),
                  seed_event(2, type="assistant/message", data=uncalled, surfaceOp="append")]
    return [
        Case("scenario-compaction", ("SESSION-SURFACE-REPLACE.3", "SESSION-SURFACE-REPLACE.4", "SESSION-READ-VIEWS.2",
                                     "SESSION-DERIVED-CACHE.1"), compaction, False, "tool-result pruning, then a compaction"),
        Case("scenario-positional-replace", ("SESSION-SURFACE-REPLACE.3",), positional, False,
             "a replacement can itself be replaced"),
        Case("scenario-seed", ("SESSION-SEED-ACCEPTANCE.3", "SESSION-SEED-ACCEPTANCE.4"), seeded, False,
             "seeding adds the marker; first live seq is the seed length"),
        Case("scenario-empty-assistant", ("SESSION-SURFACE-PROJECTION.5",), empty_assistant, False,
             "an empty assistant message is a node but projects to no message"),
        Case("scenario-repair-open-turn", ("SESSION-CRASH-REPAIR.2", "SESSION-CRASH-REPAIR.4"),
             (create(), {"op": "repair", "events": open_turn}), False, "closers for a turn cut off after a tool call"),
        Case("scenario-repair-balanced", ("SESSION-CRASH-REPAIR.1",),
             (create(), {"op": "repair", "events": [seed_event(0, type="plugin/note", data={})]}), False,
             "a log with no open turn gets no closers"),
        Case("scenario-repair-unnumbered-turn", ("SESSION-CRASH-REPAIR.8",),
             (create(), {"op": "repair", "events": unnumbered}), False,
             "a turn and a step opened without numbers are closed without them"),
        Case("scenario-repair-null-turn", ("SESSION-CRASH-REPAIR.8",),
             (create(), {"op": "repair", "events": [seed_event(0, data={"turn": None}),
                                                    seed_event(1, type="step/start", data={"step": 1})]}), False,
             "a turn/start whose turn is null opens no turn: no closers"),
    ]


def pair_cases() -> list[Case]:
    """A reject and an accept case for each pair, in order; a rule's second pair is suffixed -2, and so on."""
    out: list[Case] = []
    counts: dict[str, int] = {}
    rules = all_rules()
    for rule, setup, bad, good in _pairs():
        counts[rule] = counts.get(rule, 0) + 1
        suffix = "" if counts[rule] == 1 else f"-{counts[rule]}"
        may_fail = rule == "SESSION-CONFORMANCE-PROTOCOL.3"
        said = rules[rule].summary
        out.append(Case(f"{rule}-reject{suffix}", (rule,), (*setup, bad), True, f"breaks it: {said}",
                        setup_may_fail=may_fail))
        out.append(Case(f"{rule}-accept{suffix}", (rule,), (*setup, good), False,
                        f"a near miss of the rejecting case, valid: {said}", setup_may_fail=may_fail))
    return out
