"""spec/03-surface.md: eligibility, markers, provenance, positional replace, tool-result rewrites, fold."""

from __future__ import annotations

from typing import Any

import pytest
from sessionspec.envelope import Event, Replace
from sessionspec.errors import SpecViolation
from sessionspec.jsonvalue import FrozenDict, FrozenList, snapshot
from sessionspec.rules import RULES
from sessionspec.surface import AppendPlan, ReplacePlan, apply, fold, plan
from sessionspec.testing.builders import (
    assistant_message,
    envelope,
    replace_op,
    text_block,
    tool_result,
    user_message,
    with_change,
)
from sessionspec.testing.implementations import SessionFactory
from support import rejects, seed_rejects


def three_users(create: SessionFactory) -> Any:
    """Nodes [0, 1, 2]: three appended user messages."""
    session = create("s", clock=lambda: 1)
    for n in range(3):
        session.append("user/message", user_message(f"u{n}"), surface_op="append")
    return session


# --- eligibility and markers -------------------------------------------------------------------


@pytest.mark.parametrize("op", ["append", None, replace_op(0, 0)])
def test_log_only_events_carry_no_surface_op(create: SessionFactory, op: Any) -> None:
    session = three_users(create)
    rejects(session, "SESSION-SURFACE-PROJECTION.1",
            lambda: session.append_request({"type": "turn/start", "data": {"turn": 1}, "surfaceOp": op}))
    if op is not None:
        rejects(session, "SESSION-SURFACE-PROJECTION.1", lambda: session.append("turn/start", {}, surface_op=op))


@pytest.mark.parametrize("sources", [[0], [], None, "x"])
def test_log_only_events_carry_no_sources(create: SessionFactory, sources: Any) -> None:
    session = three_users(create)
    rejects(session, "SESSION-SURFACE-PROJECTION.2",
            lambda: session.append_request({"type": "tool/call", "data": {}, "sourceEventSeqs": sources}))
    seed_rejects(create, [envelope("tool/call", 0, {}, sourceEventSeqs=sources)], "SESSION-SURFACE-PROJECTION.2", 0)


@pytest.mark.parametrize(("event_type", "data"), [("user/message", user_message("u9")),
                                                  ("assistant/message", assistant_message()),
                                                  ("tool/result", tool_result())])
def test_surface_events_require_a_surface_op(create: SessionFactory, event_type: str, data: Any) -> None:
    session = three_users(create)
    rejects(session, "SESSION-SURFACE-PROJECTION.3", lambda: session.append(event_type, data))
    rejects(session, "SESSION-SURFACE-PROJECTION.3", lambda: session.append(event_type, data, source_event_seqs=[0]))
    rejects(session, "SESSION-SURFACE-PROJECTION.3", lambda: session.append_request({"type": event_type, "data": data}))


BAD_OPS = ["Append", "", "replace", 0, True, ["append"], {}, {"op": "append"}, {"op": "replace", "start": 0},
           {"op": "replace", "start": 0, "end": 0, "x": 1}, {"op": "replace", "start": "0", "end": 0},
           {"op": "replace", "start": -1, "end": 0}, {"op": "replace", "start": True, "end": 0},
           {"op": "replace", "start": 0, "end": 0.0}, {"op": "Replace", "start": 0, "end": 0},
           {"start": 0, "end": 0}]


@pytest.mark.parametrize("op", BAD_OPS)
def test_surface_op_shape(create: SessionFactory, op: Any) -> None:
    session = three_users(create)
    rejects(session, "SESSION-SURFACE-PROJECTION.4",
            lambda: session.append("user/message", user_message("u9"), surface_op=op, source_event_seqs=[0]))


def test_explicit_null_surface_op_on_a_surface_type_is_an_invalid_marker(create: SessionFactory) -> None:
    session = three_users(create)
    rejects(session, "SESSION-SURFACE-PROJECTION.4",
            lambda: session.append_request({"type": "user/message", "data": user_message("u9"), "surfaceOp": None}))


def test_markers_are_kept_exactly(create: SessionFactory) -> None:
    session = three_users(create)
    by_object = session.append("user/message", user_message("u3"), surface_op=Replace(0, 0), source_event_seqs=[0])
    by_json = session.append_request({"type": "user/message", "data": user_message("u4"), "surfaceOp": replace_op(1, 1),
                                      "sourceEventSeqs": [1]})
    assert by_object.surface_op == Replace(0, 0) and by_json.to_json()["surfaceOp"] == replace_op(1, 1)
    assert session.events[0].surface_op == "append"


def test_projection_of_each_surface_type(create: SessionFactory) -> None:
    """SESSION-SURFACE-PROJECTION.5: empty assistant messages project to nothing; empty user content is kept."""
    session = create("s", clock=lambda: 1)
    session.append("user/message", {**user_message(), "content": []}, surface_op="append")
    session.append("assistant/message", assistant_message("a0", []), surface_op="append", source_event_seqs=[])
    session.append("assistant/message", assistant_message("a1"), surface_op="append")
    session.append("tool/result", tool_result(), surface_op="append")
    assert list(session.surface.nodes) == [0, 1, 2, 3]
    assert [m["id"] for m in session.derive_messages()] == ["u1", "a1", "r1"]
    assert session.derive_messages()[0] is session.events[0].data
    assert session.derive_messages()[1] is session.events[2].data["message"]


# --- provenance --------------------------------------------------------------------------------


@pytest.mark.parametrize("sources", [None, {"0": 0}, "0", 0])
def test_sources_are_an_array(create: SessionFactory, sources: Any) -> None:
    session = three_users(create)
    rejects(session, "SESSION-SURFACE-PROVENANCE.1",
            lambda: session.append_request({"type": "user/message", "data": user_message("u9"), "surfaceOp": "append",
                                            "sourceEventSeqs": sources}))


@pytest.mark.parametrize(("event_type", "data"), [("user/message", user_message("u9")), ("tool/result", tool_result())])
def test_empty_sources_only_on_assistant_messages(create: SessionFactory, event_type: str, data: Any) -> None:
    session = three_users(create)
    rejects(session, "SESSION-SURFACE-PROVENANCE.2",
            lambda: session.append(event_type, data, surface_op="append", source_event_seqs=[]))
    kept = session.append("assistant/message", assistant_message(), surface_op="append", source_event_seqs=[])
    assert kept.source_event_seqs == [] and kept.to_json()["sourceEventSeqs"] == []


@pytest.mark.parametrize("bad", [-1, True, 0.0, "0", None, [0]])
def test_sources_are_non_negative_safe_integers(create: SessionFactory, bad: Any) -> None:
    session = three_users(create)
    rejects(session, "SESSION-SURFACE-PROVENANCE.3",
            lambda: session.append("user/message", user_message("u9"), surface_op="append", source_event_seqs=[0, bad]))


def test_sources_are_unique_checked_before_earlier(create: SessionFactory) -> None:
    session = three_users(create)
    rejects(session, "SESSION-SURFACE-PROVENANCE.4",
            lambda: session.append("user/message", user_message("u9"), surface_op="append", source_event_seqs=[0, 0]))
    rejects(session, "SESSION-SURFACE-PROVENANCE.4",
            lambda: session.append("user/message", user_message("u9"), surface_op="append", source_event_seqs=[5, 5]))


@pytest.mark.parametrize("late", [3, 4, 100])
def test_sources_name_strictly_earlier_events(create: SessionFactory, late: int) -> None:
    session = three_users(create)
    rejects(session, "SESSION-SURFACE-PROVENANCE.5",
            lambda: session.append("user/message", user_message("u9"), surface_op="append",
                                   source_event_seqs=[0, late]))


def test_a_replacement_names_every_node_it_shadows(create: SessionFactory) -> None:
    session = three_users(create)
    error = rejects(session, "SESSION-SURFACE-PROVENANCE.6",
                    lambda: session.append("user/message", user_message("u9"), surface_op=replace_op(0, 1),
                                           source_event_seqs=[0]))
    assert "missing 1" in error.message
    rejects(session, "SESSION-SURFACE-PROVENANCE.6",
            lambda: session.append("user/message", user_message("u9"), surface_op=replace_op(1, 1)))
    rejects(session, "SESSION-SURFACE-PROVENANCE.6",
            lambda: session.append("assistant/message", assistant_message(), surface_op=replace_op(1, 1),
                                   source_event_seqs=[]))


def test_accepted_provenance_is_kept_exactly(create: SessionFactory) -> None:
    session = three_users(create)
    session.append("turn/start", {"turn": 1})
    event = session.append("user/message", user_message("u9"), surface_op=replace_op(1, 2),
                           source_event_seqs=[3, 2, 0, 1])
    assert list(event.source_event_seqs or []) == [3, 2, 0, 1]
    # Citing an already shadowed node and a log-only event is allowed.
    later = session.append("user/message", user_message("u10"), surface_op="append", source_event_seqs=[1, 3])
    assert list(later.source_event_seqs or []) == [1, 3]


# --- replace -----------------------------------------------------------------------------------


def test_endpoints_must_be_on_the_surface(create: SessionFactory) -> None:
    session = three_users(create)
    session.append("turn/start", {"turn": 1})  # seq 3, log-only
    session.append("user/message", user_message("u4"), surface_op=replace_op(1, 1),
                   source_event_seqs=[1])  # seq 4 shadows 1
    assert list(session.surface.nodes) == [0, 4, 2]
    for start, end in [(1, 1), (0, 1), (1, 2), (3, 3), (0, 3), (9, 9), (2, 9)]:
        rejects(session, "SESSION-SURFACE-REPLACE.1",
                lambda s=start, e=end: session.append("user/message", user_message("u9"), surface_op=replace_op(s, e),
                                                      source_event_seqs=[0, 1, 2, 3, 4]))


def test_start_may_not_come_after_end_on_the_surface(create: SessionFactory) -> None:
    session = three_users(create)
    error = rejects(session, "SESSION-SURFACE-REPLACE.2",
                    lambda: session.append("user/message", user_message("u9"), surface_op=replace_op(2, 0),
                                           source_event_seqs=[0, 1, 2]))
    assert "index 2" in error.message


def test_ranges_are_positional_not_numeric(create: SessionFactory) -> None:
    """Upstream R25: after nodes become [2, 1], a replace with start=2 end=1 is valid and shadows [2, 1]."""
    session = create("s", clock=lambda: 1)
    session.append("user/message", user_message("u0"), surface_op="append")  # 0
    session.append("user/message", user_message("u1"), surface_op="append")  # 1
    session.append("user/message", user_message("u2"), surface_op=replace_op(0, 0),
                   source_event_seqs=[0])  # 2 replaces 0
    assert list(session.surface.nodes) == [2, 1]
    rejects(session, "SESSION-SURFACE-REPLACE.2",
            lambda: session.append("user/message", user_message("u9"), surface_op=replace_op(1, 2),
                                   source_event_seqs=[1, 2]))
    session.append("user/message", user_message("u3"), surface_op=replace_op(2, 1), source_event_seqs=[2, 1])
    assert list(session.surface.nodes) == [3]
    assert fold(session.events).replacements[-1].shadowed_seqs == (2, 1)


def test_splice_keeps_the_surrounding_order(create: SessionFactory) -> None:
    """SESSION-SURFACE-REPLACE.3: [0, 1, 2] with 1..1 replaced by seq 3 gives [0, 3, 2]."""
    session = three_users(create)
    session.append("assistant/message", assistant_message(), surface_op=replace_op(1, 1), source_event_seqs=[1])
    assert list(session.surface.nodes) == [0, 3, 2]
    assert [m["id"] for m in session.derive_messages()] == ["u0", "a1", "u2"]
    nodes = [0, 1, 2]
    event = Event("user/message", 3, 0, snapshot(user_message()), Replace(0, 1), FrozenList([0, 1]))
    step = plan(nodes, [], event)
    assert step == ReplacePlan(3, 0, 1, (0, 1)) and apply(nodes, step) == [3, 2] and nodes == [0, 1, 2]
    assert apply(nodes, AppendPlan(3)) == [0, 1, 2, 3] and apply(nodes, None) == nodes


def test_replace_generation_counts_committed_replacements(create: SessionFactory) -> None:
    """SESSION-SURFACE-REPLACE.4: rejected replaces do not count; seeded ones do."""
    session = three_users(create)
    assert session.surface.replace_generation == 0
    session.append("user/message", user_message("u3"), surface_op=replace_op(0, 1), source_event_seqs=[0, 1])
    rejects(session, "SESSION-SURFACE-REPLACE.1",
            lambda: session.append("user/message", user_message("u9"), surface_op=replace_op(0, 0),
                                   source_event_seqs=[0]))
    session.append("user/message", user_message("u4"), surface_op=replace_op(3, 2), source_event_seqs=[3, 2])
    assert session.surface.replace_generation == 2
    replay = create("r", seed=session.events)
    assert replay.surface.replace_generation == 2 and replay.surface.nodes == session.surface.nodes


def test_any_surface_type_may_replace_any_other(create: SessionFactory) -> None:
    session = create("s", clock=lambda: 1)
    session.append("tool/result", tool_result(), surface_op="append")
    session.append("assistant/message", assistant_message(), surface_op="append")
    session.append("user/message", user_message(), surface_op=replace_op(0, 1), source_event_seqs=[0, 1])
    assert list(session.surface.nodes) == [2]


# --- tool-result rewrites ----------------------------------------------------------------------


def tool_session(create: SessionFactory) -> Any:
    """Nodes [0, 1]: a user message and a tool result."""
    session = create("s", clock=lambda: 1)
    session.append("user/message", user_message(), surface_op="append")
    session.append("tool/result", tool_result(), surface_op="append")
    return session


def test_a_tool_result_rewrite_shadows_exactly_one_node(create: SessionFactory) -> None:
    session = tool_session(create)
    rejects(session, "SESSION-SURFACE-TOOL-RESULT.1",
            lambda: session.append("tool/result", tool_result(), surface_op=replace_op(0, 1), source_event_seqs=[0, 1]))


def test_a_tool_result_rewrite_targets_a_tool_result(create: SessionFactory) -> None:
    session = tool_session(create)
    rejects(session, "SESSION-SURFACE-TOOL-RESULT.2",
            lambda: session.append("tool/result", tool_result(), surface_op=replace_op(0, 0), source_event_seqs=[0]))


REWRITES = [
    pytest.param(tool_result(isError=False), id="isError-added"),
    pytest.param(tool_result(isError=True), id="isError-true"),
    pytest.param(with_change(tool_result(), ["turn"], 2), id="turn"),
    pytest.param(with_change(tool_result(), ["step"], 2), id="step"),
    pytest.param(with_change(tool_result(), ["error"], {"message": "x"}), id="error"),
    pytest.param(with_change(tool_result(), ["meta"], {"spilled": True}), id="meta"),
    pytest.param(with_change(tool_result(), ["message", "id"], "r2"), id="message-id"),
    pytest.param(with_change(tool_result(), ["message", "extra"], 1), id="message-extra-key"),
    pytest.param(with_change(tool_result(), ["message", "source", "plugin"], "x"), id="source"),
    pytest.param(with_change(tool_result(), ["message", "content", 0, "note"], "x"), id="block-extra-key"),
]


@pytest.mark.parametrize("data", REWRITES)
def test_a_tool_result_rewrite_may_change_only_the_inner_content(create: SessionFactory, data: dict[str, Any]) -> None:
    session = tool_session(create)
    rejects(session, "SESSION-SURFACE-TOOL-RESULT.3",
            lambda: session.append("tool/result", data, surface_op=replace_op(1, 1), source_event_seqs=[1]))


def test_a_changed_call_id_is_a_different_call(create: SessionFactory) -> None:
    session = tool_session(create)
    rejects(session, "SESSION-SURFACE-TOOL-RESULT.3",
            lambda: session.append("tool/result", tool_result("c2"), surface_op=replace_op(1, 1),
                                   source_event_seqs=[1]))


def test_a_content_only_rewrite_is_accepted_and_kept_exactly(create: SessionFactory) -> None:
    session = create("s", clock=lambda: 1)
    original = tool_result(isError=True)
    original["meta"] = {"a": [1, {"b": 2}]}
    session.append("tool/result", original, surface_op="append")
    rewrite = with_change(original, ["message", "content", 0, "content"], [text_block("[pruned]"), {"type": "image"}])
    rewrite["meta"] = {"a": [1, {"b": 2}]}  # same value, rebuilt: equality is by JSON value
    event = session.append("tool/result", rewrite, surface_op=replace_op(0, 0), source_event_seqs=[0])
    assert event.to_json()["data"] == rewrite and list(session.surface.nodes) == [1]
    assert session.derive_messages()[0]["content"][0]["content"][0]["text"] == "[pruned]"


def test_key_order_does_not_count_as_a_change(create: SessionFactory) -> None:
    session = tool_session(create)
    data = tool_result(text="short")
    reordered = {"step": data["step"], "message": dict(reversed(list(data["message"].items()))), "turn": data["turn"]}
    session.append("tool/result", reordered, surface_op=replace_op(1, 1), source_event_seqs=[1])
    assert list(session.surface.nodes) == [0, 2]


# --- fold --------------------------------------------------------------------------------------


def test_fold_requires_contiguous_seqs() -> None:
    events = [Event("user/message", n, 0, snapshot(user_message(f"u{n}")), "append") for n in range(3)]
    assert fold(events).nodes == [0, 1, 2]
    with pytest.raises(SpecViolation) as info:
        fold([events[0], events[2]])
    assert info.value.rule == "SESSION-SURFACE-FOLD.1" and info.value.kind is RULES["SESSION-SURFACE-FOLD.1"].kind
    assert info.value.index == 1
    with pytest.raises(SpecViolation) as shifted:
        fold(events[1:])
    assert shifted.value.rule == "SESSION-SURFACE-FOLD.1" and shifted.value.index == 0


def test_fold_reports_nodes_and_replacements(create: SessionFactory) -> None:
    session = three_users(create)
    session.append("user/message", user_message("u3"), surface_op=replace_op(1, 2), source_event_seqs=[1, 2])
    folded = fold(session.events)
    assert folded.to_json() == {"nodes": [0, 3], "replacements": [{"seq": 3, "start": 1, "end": 2,
                                                                    "shadowedSeqs": [1, 2]}]}
    assert folded.surface == session.surface
    assert isinstance(folded.nodes, FrozenList) and isinstance(session.events[0].data, FrozenDict)
