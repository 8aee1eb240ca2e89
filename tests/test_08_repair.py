"""spec/08-repair.md, crash repair: the closers of an interrupted tail turn."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hostile import oracle, run_cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sessionspec import repair
from sessionspec.envelope import APPEND, Event
from sessionspec.errors import SpecViolation
from sessionspec.invariants import Companion, replay
from sessionspec.testing.builders import assistant_message, tool_call, tool_call_block, tool_result, user_message
from sessionspec.testing.implementations import SessionFactory
from sessionspec.testing.loops import Loop, agent_loops, build

PROPERTY = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])


def interrupted(*, recorded: bool, answered: bool = False) -> list[Event]:
    """turn 1, step 1: an assistant message calling c1 and c2; c1 maybe recorded, maybe answered."""
    session = build([])
    session.append("turn/start", {"turn": 1})
    session.append("user/message", user_message("u1", "hi"), surface_op="append")
    session.append("step/start", {"turn": 1, "step": 1})
    session.append("assistant/message", assistant_message("a1", [tool_call_block("c1"), tool_call_block("c2")]),
                   surface_op="append")
    if recorded:
        call = session.append("tool/call", tool_call("c1"))
        if answered:
            session.append("tool/result", tool_result("c1", "ok"), surface_op="append", source_event_seqs=[call.seq])
    return list(session.events)


def test_balanced_and_empty_logs_get_no_closers() -> None:
    # SESSION-CRASH-REPAIR.1
    assert repair.closers([]) == []
    session = build([{"type": "turn/start", "data": {"turn": 1}}, {"type": "turn/end", "data": {"turn": 1, "reason": {"kind": "completed"}}}])
    assert repair.closers(session.events) == []
    assert repair.repaired(session.events) == list(session.events)
    no_turn = build([{"type": "user/message", "data": user_message("u", "x"), "surfaceOp": "append"}])
    assert repair.closers(no_turn.events) == []


def test_a_turn_or_step_without_a_number_is_closed_without_one_and_a_null_turn_opens_none() -> None:
    # SESSION-CRASH-REPAIR.8: as the upstream's scan reads `data.turn` (notes §2.Q): a missing number is left out of
    # the closers (JavaScript's undefined), a null turn opens no turn.
    unnumbered = build([{"type": "turn/start", "data": {}},
                        {"type": "step/start", "data": {"turn": 1}},
                        {"type": "assistant/message", "data": {"message": assistant_message("a1", [tool_call_block("c1")])["message"]},
                         "surfaceOp": "append"}])
    out = repair.closers(unnumbered.events)
    assert [e.type for e in out] == ["tool/result", "step/end", "turn/end"]
    assert list(out[0].data) == ["message", "error"], "no turn and no step: both keys left out, the order kept"
    assert dict(out[1].data) == {} and dict(out[2].data) == {"reason": {"kind": "interrupted"}}
    assert repair.closers(repair.repaired(unnumbered.events)) == []
    numbered_null = build([{"type": "turn/start", "data": {"turn": None}}, {"type": "step/start", "data": {"step": 1}}])
    assert repair.closers(numbered_null.events) == []
    null_step = build([{"type": "turn/start", "data": {"turn": 2}}, {"type": "step/start", "data": {"step": None}}])
    assert [dict(e.data) for e in repair.closers(null_step.events)] == [{"turn": 2, "reason": {"kind": "interrupted"}}]


def test_a_recorded_call_gets_outcome_unknown_and_an_unrecorded_one_not_started() -> None:
    # SESSION-CRASH-REPAIR.2 / .3
    events = interrupted(recorded=True)
    out = repair.closers(events)
    assert [e.type for e in out] == ["tool/result", "tool/result", "step/end", "turn/end"]
    unknown, not_started = out[0], out[1]
    assert unknown.data["error"] == {"name": "ToolOutcomeUnknownError", "code": "TOOL_OUTCOME_UNKNOWN"}
    assert unknown.source_event_seqs == [4]
    assert unknown.data["message"]["content"][0]["content"][0]["text"] == repair.OUTCOME_UNKNOWN_TEXT
    assert not_started.data["error"] == {"name": "ToolNotStartedError", "code": "TOOL_NOT_STARTED"}
    assert not_started.source_event_seqs is None
    assert not_started.data["message"]["content"][0]["content"][0]["text"] == repair.NOT_STARTED_TEXT


def test_closer_ids_and_key_order_are_the_upstreams() -> None:
    # SESSION-CRASH-REPAIR.3: the message id carries the call id and the closer's own seq.
    events = interrupted(recorded=True)
    result = repair.closers(events)[0]
    assert result.seq == len(events)
    message = result.data["message"]
    assert message["id"] == f"interrupted-tool-result-c1-{result.seq}"
    assert list(result.data) == ["turn", "step", "message", "error"]
    assert list(message) == ["id", "role", "source", "content"]
    assert list(message["content"][0]) == ["type", "toolCallId", "isError", "content"]
    assert message["source"] == {"kind": "tool", "callId": "c1"}
    assert message["content"][0]["isError"] is True
    assert (result.data["turn"], result.data["step"]) == (1, 1)
    assert result.surface_op == APPEND


def test_then_the_step_and_the_turn_close() -> None:
    # SESSION-CRASH-REPAIR.4 and .5: seqs continue, time is the last event's, all appends.
    events = interrupted(recorded=False)
    out = repair.closers(events)
    assert out[-2].type == "step/end" and out[-2].data == {"turn": 1, "step": 1}
    assert out[-1].type == "turn/end" and out[-1].data == {"turn": 1, "reason": {"kind": "interrupted"}}
    assert [e.seq for e in out] == list(range(len(events), len(events) + len(out)))
    assert {e.time for e in out} == {events[-1].time}
    assert all(e.surface_op in (None, APPEND) for e in out)
    only_turn = build([{"type": "turn/start", "data": {"turn": 7}}]).events
    assert [(e.type, e.data) for e in repair.closers(only_turn)] == [
        ("turn/end", {"turn": 7, "reason": {"kind": "interrupted"}})]


def test_answered_calls_and_ended_steps_are_not_repaired(create: SessionFactory) -> None:
    # SESSION-CRASH-REPAIR.2: an answered call, or a call whose step ended, is no longer pending.
    out = repair.closers(interrupted(recorded=True, answered=True))
    assert [e.data["message"]["source"]["callId"] for e in out if e.type == "tool/result"] == ["c2"]
    session = create("s", seed=interrupted(recorded=False))
    session.append("step/end", {"turn": 1, "step": 1})
    assert [e.type for e in repair.closers(session.events)] == ["turn/end"]


def test_a_call_answered_anywhere_in_the_log_is_never_answered_again() -> None:
    # SESSION-CRASH-REPAIR.6 (deviation): a reused call id answered in an earlier turn is not pending.
    session = build([])
    session.append("turn/start", {"turn": 1})
    session.append("step/start", {"turn": 1, "step": 1})
    session.append("assistant/message", assistant_message("a1", [tool_call_block("c1")]), surface_op="append")
    call = session.append("tool/call", tool_call("c1", name="f"))
    session.append("tool/result", tool_result("c1", "ok"), surface_op="append", source_event_seqs=[call.seq])
    session.append("step/end", {"turn": 1, "step": 1})
    session.append("turn/end", {"turn": 1, "reason": {"kind": "completed"}})
    session.append("turn/start", {"turn": 2})
    session.append("step/start", {"turn": 2, "step": 1})
    session.append("assistant/message", assistant_message("a2", [tool_call_block("c1")], turn=2), surface_op="append")
    assert [e.type for e in repair.closers(session.events)] == ["step/end", "turn/end"]


def test_repair_is_idempotent() -> None:
    # SESSION-CRASH-REPAIR.7
    events = interrupted(recorded=True)
    fixed = repair.repaired(events)
    assert repair.closers(fixed) == []
    assert repair.repaired(fixed) == fixed


def test_repair_reads_json_envelopes_and_refuses_a_gap() -> None:
    events = interrupted(recorded=True)
    as_json = [e.to_json() for e in events]
    assert repair.closers(as_json) == repair.closers(events)
    with pytest.raises(SpecViolation) as caught:
        repair.closers([events[0], events[2]])
    assert caught.value.rule == "SESSION-SURFACE-FOLD.1"


# --- properties over generated loops -------------------------------------------------------


@st.composite
def crashed(draw: Any) -> tuple[Loop, list[Event]]:
    """A well-formed loop cut at a point inside a turn: what a crash leaves."""
    loop = draw(agent_loops())
    cuts = loop.cuts_inside_turns()
    if not cuts:
        loop = Loop((*loop.requests, {"type": "turn/start", "data": {"turn": loop.states[-1].next_turn}}), loop.states)
        cuts = [len(loop.requests)]
    cut = draw(st.sampled_from(cuts))
    return loop, list(build(loop.requests[:cut]).events)


@PROPERTY
@given(crashed())
def test_a_repaired_crash_is_accepted_balanced_and_idempotent(create: SessionFactory,
                                                             case: tuple[Loop, list[Event]]) -> None:
    _, events = case
    out = repair.closers(events)
    # SESSION-CRASH-REPAIR.5: closers continue the log and never shadow.
    assert [e.seq for e in out] == list(range(len(events), len(events) + len(out)))
    assert all(e.surface_op in (None, APPEND) for e in out)
    assert out and out[-1].type == "turn/end"
    # Seeding the repaired log is accepted; the companion (closers allowed) finds it balanced.
    session = create("repaired", seed=[*events, *out])
    trace = replay(session.events)
    assert trace.open_turn is None and trace.open_step is None
    Companion().attach(session)
    # SESSION-CRASH-REPAIR.7: repairing the repaired log adds nothing.
    assert repair.closers(session.events) == []
    # SESSION-CRASH-REPAIR.6: never a result for a call with a result anywhere in the log; no call answered twice.
    before = {e.data["message"]["source"]["callId"] for e in events if e.type == "tool/result"}
    assert not before & {e.data["message"]["source"]["callId"] for e in out if e.type == "tool/result"}
    answered = [e.data["message"]["source"]["callId"] for e in session.events if e.type == "tool/result"
                and e.surface_op == APPEND]
    assert len(answered) == len(set(answered))


@PROPERTY
@given(agent_loops(), st.data())
def test_closers_exist_exactly_when_a_turn_is_open(loop: Loop, data: st.DataObject) -> None:
    # SESSION-CRASH-REPAIR.1
    cut = data.draw(st.integers(0, len(loop.requests)))
    events = build(loop.requests[:cut]).events
    assert bool(repair.closers(events)) == (loop.states[cut].open_turn is not None)


def test_repair_write_commits_the_plan_it_printed_or_nothing(tmp_path: Any, monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """SESSION-STORAGE-WRITE.4 through `sessionspec repair --write`: the live writer records c1's result after the plan
    was read, so the plan's closer for c1 would answer it twice; the command refuses and writes nothing."""
    import argparse

    from sessionspec import storage
    from sessionspec.cli import repair as repair_cmd
    from sessionspec.storage.jsonl import JsonlWriter

    path = tmp_path / "open.jsonl"
    storage.save(path, {"version": 0, "id": "s1", "createdAt": 0}, interrupted(recorded=True))
    real_load = repair_cmd.Watched.load
    written: list[bytes] = []

    def load_then_another_writer_appends(*args: Any, **kwargs: Any) -> Any:
        result = real_load(*args, **kwargs)
        seq = len(result.events)
        JsonlWriter(path, seq).append([{"type": "tool/result", "seq": seq, "time": 0, "surfaceOp": "append",
                                        "sourceEventSeqs": [seq - 1], "data": tool_result("c1", "ok")}])
        written.append(path.read_bytes())
        return result

    monkeypatch.setattr(repair_cmd.Watched, "load", load_then_another_writer_appends)
    args = argparse.Namespace(path=str(path), write=True, format="text", session=None, impl="live")
    assert repair_cmd.run(args) == 1
    error = capsys.readouterr().err
    assert "SESSION-STORAGE-WRITE.4" in error and "repair is stale" in error and "run it again" in error
    assert path.read_bytes() == written[0]
    after = storage.load(path)
    assert [closer.data["message"]["source"]["callId"] for closer in after.closers[:1]] == ["c2"]


@pytest.mark.parametrize("where", [["message", "source", "callId"], ["callId"]], ids=["tool/result", "tool/call"])
def test_a_call_named_by_no_string_answers_and_records_nothing(tmp_path: Any, where: list[str]) -> None:
    """A call is named by a string: a tool/result or tool/call naming a list answers or records no call, so the
    closers are computed and the load says what it says of the log (a tool/result's shape is refused; a tool/call's
    data has no shape rule, so that log is repairable). Before, both were a TypeError (a list as a set member, a key)."""
    events = [event.to_json() for event in interrupted(recorded=True, answered=True)]
    target = next(e for e in events if e["type"] == ("tool/result" if len(where) == 3 else "tool/call"))
    holder = target["data"]
    for key in where[:-1]:
        holder = holder[key]
    holder[where[-1]] = ["c1"]
    assert [c.type for c in repair.closers(events)][-2:] == ["step/end", "turn/end"]
    path = tmp_path / "list-id.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in [
        {"type": "session", "version": 0, "id": "s1", "createdAt": 0, "delegationDepth": 0}, *events]))
    verdict = oracle(path)
    ran = run_cli("repair", str(path))
    assert ran.traceback is None and verdict.state in ("refused", "repairable")
    assert ran.code == (1 if verdict.state == "refused" else 0) and (verdict.rule or "") in ran.err
