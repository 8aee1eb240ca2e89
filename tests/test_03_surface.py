"""spec/03-surface.md: eligibility, markers, provenance, positional replace, tool-result rewrites, fold."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from sessionspec.envelope import Event, Replace
from sessionspec.errors import SpecViolation
from sessionspec.jsonvalue import FrozenDict, FrozenList, snapshot
from sessionspec.model import Session
from sessionspec.rules import RULES
from sessionspec.surface import AppendPlan, ReplacePlan, apply, fold, plan
from support import rejects

MODEL = {"kind": "model", "provider": "deepseek", "model": "deepseek-chat"}


def user(message_id: str = "u1", text: str = "hi") -> dict[str, Any]:
    return {"id": message_id, "role": "user", "source": {"kind": "user"}, "content": [{"type": "text", "text": text}]}


def assistant(message_id: str = "a1", content: list[Any] | None = None) -> dict[str, Any]:
    message = {"id": message_id, "role": "assistant", "source": dict(MODEL),
               "content": [{"type": "text", "text": "ok"}] if content is None else content}
    return {"turn": 1, "step": 1, "message": message}


def tool_result(call_id: str = "c1", text: str = "out", **block_extra: Any) -> dict[str, Any]:
    block = {"type": "tool-result", "toolCallId": call_id, "content": [{"type": "text", "text": text}], **block_extra}
    return {"turn": 1, "step": 1, "message": {"id": "r1", "role": "user", "source": {"kind": "tool", "callId": call_id},
                                              "content": [block]}}




def replace(start: int, end: int) -> dict[str, Any]:
    return {"op": "replace", "start": start, "end": end}


def three_users() -> Session:
    """Nodes [0, 1, 2]: three appended user messages."""
    session = Session.create("s", clock=lambda: 1)
    for n in range(3):
        session.append("user/message", user(f"u{n}"), surface_op="append")
    return session


# --- eligibility and markers -------------------------------------------------------------------


@pytest.mark.parametrize("op", ["append", None, replace(0, 0)])
def test_log_only_events_carry_no_surface_op(op: Any) -> None:
    session = three_users()
    rejects(session, "SESSION-SURFACE-PROJECTION.1",
            lambda: session.append_request({"type": "turn/start", "data": {"turn": 1}, "surfaceOp": op}))
    if op is not None:
        rejects(session, "SESSION-SURFACE-PROJECTION.1", lambda: session.append("turn/start", {}, surface_op=op))


@pytest.mark.parametrize("sources", [[0], [], None, "x"])
def test_log_only_events_carry_no_sources(sources: Any) -> None:
    session = three_users()
    rejects(session, "SESSION-SURFACE-PROJECTION.2",
            lambda: session.append_request({"type": "tool/call", "data": {}, "sourceEventSeqs": sources}))
    seed = [{"type": "tool/call", "seq": 0, "time": 0, "data": {}, "sourceEventSeqs": sources}]
    with pytest.raises(SpecViolation) as info:
        Session.create("s", seed=seed)
    assert info.value.rule == "SESSION-SURFACE-PROJECTION.2"


@pytest.mark.parametrize(("event_type", "data"), [("user/message", user("u9")), ("assistant/message", assistant()),
                                                  ("tool/result", tool_result())])
def test_surface_events_require_a_surface_op(event_type: str, data: Any) -> None:
    session = three_users()
    rejects(session, "SESSION-SURFACE-PROJECTION.3", lambda: session.append(event_type, data))
    rejects(session, "SESSION-SURFACE-PROJECTION.3", lambda: session.append(event_type, data, source_event_seqs=[0]))
    rejects(session, "SESSION-SURFACE-PROJECTION.3", lambda: session.append_request({"type": event_type, "data": data}))


BAD_OPS = ["Append", "", "replace", 0, True, ["append"], {}, {"op": "append"}, {"op": "replace", "start": 0},
           {"op": "replace", "start": 0, "end": 0, "x": 1}, {"op": "replace", "start": "0", "end": 0},
           {"op": "replace", "start": -1, "end": 0}, {"op": "replace", "start": True, "end": 0},
           {"op": "replace", "start": 0, "end": 0.0}, {"op": "Replace", "start": 0, "end": 0},
           {"start": 0, "end": 0}]


@pytest.mark.parametrize("op", BAD_OPS)
def test_surface_op_shape(op: Any) -> None:
    session = three_users()
    rejects(session, "SESSION-SURFACE-PROJECTION.4", lambda: session.append("user/message", user("u9"), surface_op=op,
                                                                          source_event_seqs=[0]))


def test_explicit_null_surface_op_on_a_surface_type_is_an_invalid_marker() -> None:
    session = three_users()
    rejects(session, "SESSION-SURFACE-PROJECTION.4",
            lambda: session.append_request({"type": "user/message", "data": user("u9"), "surfaceOp": None}))


def test_markers_are_kept_exactly() -> None:
    session = three_users()
    by_object = session.append("user/message", user("u3"), surface_op=Replace(0, 0), source_event_seqs=[0])
    by_json = session.append_request({"type": "user/message", "data": user("u4"), "surfaceOp": replace(1, 1),
                                      "sourceEventSeqs": [1]})
    assert by_object.surface_op == Replace(0, 0) and by_json.to_json()["surfaceOp"] == replace(1, 1)
    assert session.events[0].surface_op == "append"


def test_projection_of_each_surface_type() -> None:
    """SESSION-SURFACE-PROJECTION.5: empty assistant messages project to nothing; empty user content is kept."""
    session = Session.create("s", clock=lambda: 1)
    session.append("user/message", {**user(), "content": []}, surface_op="append")
    session.append("assistant/message", assistant("a0", []), surface_op="append", source_event_seqs=[])
    session.append("assistant/message", assistant("a1"), surface_op="append")
    session.append("tool/result", tool_result(), surface_op="append")
    assert list(session.surface.nodes) == [0, 1, 2, 3]
    assert [m["id"] for m in session.derive_messages()] == ["u1", "a1", "r1"]
    assert session.derive_messages()[0] is session.events[0].data
    assert session.derive_messages()[1] is session.events[2].data["message"]


# --- provenance --------------------------------------------------------------------------------


@pytest.mark.parametrize("sources", [None, {"0": 0}, "0", 0])
def test_sources_are_an_array(sources: Any) -> None:
    session = three_users()
    rejects(session, "SESSION-SURFACE-PROVENANCE.1",
            lambda: session.append_request({"type": "user/message", "data": user("u9"), "surfaceOp": "append",
                                            "sourceEventSeqs": sources}))


@pytest.mark.parametrize(("event_type", "data"), [("user/message", user("u9")), ("tool/result", tool_result())])
def test_empty_sources_only_on_assistant_messages(event_type: str, data: Any) -> None:
    session = three_users()
    rejects(session, "SESSION-SURFACE-PROVENANCE.2",
            lambda: session.append(event_type, data, surface_op="append", source_event_seqs=[]))
    kept = session.append("assistant/message", assistant(), surface_op="append", source_event_seqs=[])
    assert kept.source_event_seqs == [] and kept.to_json()["sourceEventSeqs"] == []


@pytest.mark.parametrize("bad", [-1, True, 0.0, "0", None, [0]])
def test_sources_are_non_negative_safe_integers(bad: Any) -> None:
    session = three_users()
    rejects(session, "SESSION-SURFACE-PROVENANCE.3",
            lambda: session.append("user/message", user("u9"), surface_op="append", source_event_seqs=[0, bad]))


def test_sources_are_unique_checked_before_earlier() -> None:
    session = three_users()
    rejects(session, "SESSION-SURFACE-PROVENANCE.4",
            lambda: session.append("user/message", user("u9"), surface_op="append", source_event_seqs=[0, 0]))
    rejects(session, "SESSION-SURFACE-PROVENANCE.4",
            lambda: session.append("user/message", user("u9"), surface_op="append", source_event_seqs=[5, 5]))


@pytest.mark.parametrize("late", [3, 4, 100])
def test_sources_name_strictly_earlier_events(late: int) -> None:
    session = three_users()
    rejects(session, "SESSION-SURFACE-PROVENANCE.5",
            lambda: session.append("user/message", user("u9"), surface_op="append", source_event_seqs=[0, late]))


def test_a_replacement_names_every_node_it_shadows() -> None:
    session = three_users()
    error = rejects(session, "SESSION-SURFACE-PROVENANCE.6",
                    lambda: session.append("user/message", user("u9"), surface_op=replace(0, 1), source_event_seqs=[0]))
    assert "missing 1" in error.message
    rejects(session, "SESSION-SURFACE-PROVENANCE.6",
            lambda: session.append("user/message", user("u9"), surface_op=replace(1, 1)))
    rejects(session, "SESSION-SURFACE-PROVENANCE.6",
            lambda: session.append("assistant/message", assistant(), surface_op=replace(1, 1), source_event_seqs=[]))


def test_accepted_provenance_is_kept_exactly() -> None:
    session = three_users()
    session.append("turn/start", {"turn": 1})
    event = session.append("user/message", user("u9"), surface_op=replace(1, 2), source_event_seqs=[3, 2, 0, 1])
    assert list(event.source_event_seqs or []) == [3, 2, 0, 1]
    # Citing an already shadowed node and a log-only event is allowed.
    later = session.append("user/message", user("u10"), surface_op="append", source_event_seqs=[1, 3])
    assert list(later.source_event_seqs or []) == [1, 3]


# --- replace -----------------------------------------------------------------------------------


def test_endpoints_must_be_on_the_surface() -> None:
    session = three_users()
    session.append("turn/start", {"turn": 1})  # seq 3, log-only
    session.append("user/message", user("u4"), surface_op=replace(1, 1), source_event_seqs=[1])  # seq 4 shadows 1
    assert list(session.surface.nodes) == [0, 4, 2]
    for start, end in [(1, 1), (0, 1), (1, 2), (3, 3), (0, 3), (9, 9), (2, 9)]:
        rejects(session, "SESSION-SURFACE-REPLACE.1",
                lambda s=start, e=end: session.append("user/message", user("u9"), surface_op=replace(s, e),
                                                      source_event_seqs=[0, 1, 2, 3, 4]))


def test_start_may_not_come_after_end_on_the_surface() -> None:
    session = three_users()
    error = rejects(session, "SESSION-SURFACE-REPLACE.2",
                    lambda: session.append("user/message", user("u9"), surface_op=replace(2, 0),
                                           source_event_seqs=[0, 1, 2]))
    assert "index 2" in error.message


def test_ranges_are_positional_not_numeric() -> None:
    """Upstream R25: after nodes become [2, 1], a replace with start=2 end=1 is valid and shadows [2, 1]."""
    session = Session.create("s", clock=lambda: 1)
    session.append("user/message", user("u0"), surface_op="append")  # 0
    session.append("user/message", user("u1"), surface_op="append")  # 1
    session.append("user/message", user("u2"), surface_op=replace(0, 0), source_event_seqs=[0])  # 2 replaces 0
    assert list(session.surface.nodes) == [2, 1]
    rejects(session, "SESSION-SURFACE-REPLACE.2",
            lambda: session.append("user/message", user("u9"), surface_op=replace(1, 2), source_event_seqs=[1, 2]))
    session.append("user/message", user("u3"), surface_op=replace(2, 1), source_event_seqs=[2, 1])
    assert list(session.surface.nodes) == [3]
    assert fold(session.events).replacements[-1].shadowed_seqs == (2, 1)


def test_splice_keeps_the_surrounding_order() -> None:
    """SESSION-SURFACE-REPLACE.3: [0, 1, 2] with 1..1 replaced by seq 3 gives [0, 3, 2]."""
    session = three_users()
    session.append("assistant/message", assistant(), surface_op=replace(1, 1), source_event_seqs=[1])
    assert list(session.surface.nodes) == [0, 3, 2]
    assert [m["id"] for m in session.derive_messages()] == ["u0", "a1", "u2"]
    nodes = [0, 1, 2]
    event = Event("user/message", 3, 0, snapshot(user()), Replace(0, 1), FrozenList([0, 1]))
    step = plan(nodes, [], event)
    assert step == ReplacePlan(3, 0, 1, (0, 1)) and apply(nodes, step) == [3, 2] and nodes == [0, 1, 2]
    assert apply(nodes, AppendPlan(3)) == [0, 1, 2, 3] and apply(nodes, None) == nodes


def test_replace_generation_counts_committed_replacements() -> None:
    """SESSION-SURFACE-REPLACE.4: rejected replaces do not count; seeded ones do."""
    session = three_users()
    assert session.surface.replace_generation == 0
    session.append("user/message", user("u3"), surface_op=replace(0, 1), source_event_seqs=[0, 1])
    rejects(session, "SESSION-SURFACE-REPLACE.1",
            lambda: session.append("user/message", user("u9"), surface_op=replace(0, 0), source_event_seqs=[0]))
    session.append("user/message", user("u4"), surface_op=replace(3, 2), source_event_seqs=[3, 2])
    assert session.surface.replace_generation == 2
    replay = Session.create("r", seed=session.events)
    assert replay.surface.replace_generation == 2 and replay.surface.nodes == session.surface.nodes


def test_any_surface_type_may_replace_any_other() -> None:
    session = Session.create("s", clock=lambda: 1)
    session.append("tool/result", tool_result(), surface_op="append")
    session.append("assistant/message", assistant(), surface_op="append")
    session.append("user/message", user(), surface_op=replace(0, 1), source_event_seqs=[0, 1])
    assert list(session.surface.nodes) == [2]


# --- tool-result rewrites ----------------------------------------------------------------------


def tool_session() -> Session:
    """Nodes [0, 1]: a user message and a tool result."""
    session = Session.create("s", clock=lambda: 1)
    session.append("user/message", user(), surface_op="append")
    session.append("tool/result", tool_result(), surface_op="append")
    return session


def test_a_tool_result_rewrite_shadows_exactly_one_node() -> None:
    session = tool_session()
    rejects(session, "SESSION-SURFACE-TOOL-RESULT.1",
            lambda: session.append("tool/result", tool_result(), surface_op=replace(0, 1), source_event_seqs=[0, 1]))


def test_a_tool_result_rewrite_targets_a_tool_result() -> None:
    session = tool_session()
    rejects(session, "SESSION-SURFACE-TOOL-RESULT.2",
            lambda: session.append("tool/result", tool_result(), surface_op=replace(0, 0), source_event_seqs=[0]))


def _changed(path: list[Any], value: Any) -> dict[str, Any]:
    data = tool_result()
    node: Any = data
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return data


REWRITES = [
    pytest.param(tool_result(isError=False), id="isError-added"),
    pytest.param(tool_result(isError=True), id="isError-true"),
    pytest.param(_changed(["turn"], 2), id="turn"),
    pytest.param(_changed(["step"], 2), id="step"),
    pytest.param(_changed(["error"], {"message": "x"}), id="error"),
    pytest.param(_changed(["meta"], {"spilled": True}), id="meta"),
    pytest.param(_changed(["message", "id"], "r2"), id="message-id"),
    pytest.param(_changed(["message", "extra"], 1), id="message-extra-key"),
    pytest.param(_changed(["message", "source", "plugin"], "x"), id="source"),
    pytest.param(_changed(["message", "content", 0, "note"], "x"), id="block-extra-key"),
]


@pytest.mark.parametrize("data", REWRITES)
def test_a_tool_result_rewrite_may_change_only_the_inner_content(data: dict[str, Any]) -> None:
    session = tool_session()
    rejects(session, "SESSION-SURFACE-TOOL-RESULT.3",
            lambda: session.append("tool/result", data, surface_op=replace(1, 1), source_event_seqs=[1]))


def test_a_changed_call_id_is_a_different_call() -> None:
    session = tool_session()
    rejects(session, "SESSION-SURFACE-TOOL-RESULT.3",
            lambda: session.append("tool/result", tool_result("c2"), surface_op=replace(1, 1), source_event_seqs=[1]))


def test_a_content_only_rewrite_is_accepted_and_kept_exactly() -> None:
    session = Session.create("s", clock=lambda: 1)
    original = tool_result(isError=True)
    original["meta"] = {"a": [1, {"b": 2}]}
    session.append("tool/result", original, surface_op="append")
    pruned = copy.deepcopy(original)
    pruned["message"]["content"][0]["content"] = [{"type": "text", "text": "[pruned]"}, {"type": "image"}]
    pruned["meta"] = {"a": [1, {"b": 2}]}  # same value, rebuilt: equality is by JSON value
    event = session.append("tool/result", pruned, surface_op=replace(0, 0), source_event_seqs=[0])
    assert event.to_json()["data"] == pruned and list(session.surface.nodes) == [1]
    assert session.derive_messages()[0]["content"][0]["content"][0]["text"] == "[pruned]"


def test_key_order_does_not_count_as_a_change() -> None:
    session = tool_session()
    data = tool_result(text="short")
    reordered = {"step": data["step"], "message": dict(reversed(list(data["message"].items()))), "turn": data["turn"]}
    session.append("tool/result", reordered, surface_op=replace(1, 1), source_event_seqs=[1])
    assert list(session.surface.nodes) == [0, 2]


# --- fold --------------------------------------------------------------------------------------


def test_fold_requires_contiguous_seqs() -> None:
    session = three_users()
    events = list(session.events)
    with pytest.raises(SpecViolation) as info:
        fold([events[0], events[2]])
    assert info.value.rule == "SESSION-SURFACE-FOLD.1" and info.value.kind is RULES["SESSION-SURFACE-FOLD.1"].kind
    assert info.value.index == 1
    with pytest.raises(SpecViolation) as shifted:
        fold(events[1:])
    assert shifted.value.rule == "SESSION-SURFACE-FOLD.1" and shifted.value.index == 0


def test_fold_reports_nodes_and_replacements() -> None:
    session = three_users()
    session.append("user/message", user("u3"), surface_op=replace(1, 2), source_event_seqs=[1, 2])
    folded = fold(session.events)
    assert folded.to_json() == {"nodes": [0, 3], "replacements": [{"seq": 3, "start": 1, "end": 2,
                                                                    "shadowedSeqs": [1, 2]}]}
    assert folded.surface == session.surface
    assert isinstance(folded.nodes, FrozenList) and isinstance(session.events[0].data, FrozenDict)
