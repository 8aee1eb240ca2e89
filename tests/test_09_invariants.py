"""spec/09-relational.md, the relational invariant companion: turn and step structure as a veto."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from sessionspec import repair
from sessionspec.envelope import Event
from sessionspec.errors import Kind, SpecViolation
from sessionspec.invariants import Companion, Trace, step
from sessionspec.jsonvalue import snapshot
from sessionspec.testing.builders import (
    assistant_message,
    pruned,
    replace_op,
    request_header,
    text_block,
    tool_call,
    tool_result,
    user_message,
    with_change,
)
from sessionspec.testing.implementations import SessionFactory
from sessionspec.testing.loops import Loop, agent_loops, append, build, ticking_clock
from sessionspec.testing.violations import Violation, relational_violations

PROPERTY = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])

START = {"type": "turn/start", "data": {"turn": 1}}
STEP = {"type": "step/start", "data": {"turn": 1, "step": 1}}
CALL = {"type": "tool/call", "data": tool_call("c1", name="f")}
END_STEP = {"type": "step/end", "data": {"turn": 1, "step": 1}}
END = {"type": "turn/end", "data": {"turn": 1, "reason": {"kind": "completed"}}}


def watched(create: SessionFactory, *requests: dict[str, Any]) -> Any:
    """A session with the companion attached, then `requests` appended (each must pass)."""
    session = create("watched", clock=ticking_clock())
    Companion().attach(session)
    for request in requests:
        append(session, request)
    return session


def vetoed(session: Any, request: dict[str, Any]) -> str:
    before = list(session.events)
    with pytest.raises(SpecViolation) as caught:
        append(session, request)
    assert caught.value.kind is Kind.VETO
    assert list(session.events) == before
    return caught.value.rule


def result(call_id: str, turn: int = 1, stp: int = 1, **extra: Any) -> dict[str, Any]:
    data = {**tool_result(call_id, "ok", message_id=f"r-{call_id}", turn=turn, step=stp), **extra}
    return {"type": "tool/result", "data": data, "surfaceOp": "append"}


def test_seqs_strictly_increase() -> None:
    # SESSION-RELATIONAL-INVARIANT.1: unreachable through a session, so checked on the pure step.
    with pytest.raises(SpecViolation) as caught:
        step(Trace(last_seq=5), Event("user/message", 5, 0, None))
    assert caught.value.rule == "SESSION-RELATIONAL-INVARIANT.1"


def test_turns_do_not_overlap_and_are_numbered_from_one(create: SessionFactory) -> None:
    turn_two = {"type": "turn/start", "data": {"turn": 2}}
    assert vetoed(watched(create, START), turn_two) == "SESSION-RELATIONAL-INVARIANT.2"
    assert vetoed(watched(create), turn_two) == "SESSION-RELATIONAL-INVARIANT.3"
    assert vetoed(watched(create), {"type": "turn/start", "data": {"turn": True}}) == "SESSION-RELATIONAL-INVARIANT.3"
    assert vetoed(watched(create, START, END), START) == "SESSION-RELATIONAL-INVARIANT.3"


def test_a_turn_ends_as_itself_after_its_step(create: SessionFactory) -> None:
    end_two = {"type": "turn/end", "data": {"turn": 2, "reason": {"kind": "completed"}}}
    assert vetoed(watched(create, START), end_two) == "SESSION-RELATIONAL-INVARIANT.4"
    assert vetoed(watched(create), END) == "SESSION-RELATIONAL-INVARIANT.4"
    assert vetoed(watched(create, START, STEP), END) == "SESSION-RELATIONAL-INVARIANT.5"
    watched(create, START, END)  # a turn may end with zero steps


def test_steps_belong_to_the_open_turn_and_count_from_one(create: SessionFactory) -> None:
    assert vetoed(watched(create), STEP) == "SESSION-RELATIONAL-INVARIANT.6"
    second = {"type": "step/start", "data": {"turn": 1, "step": 2}}
    of_turn_two = {"type": "step/start", "data": {"turn": 2, "step": 1}}
    assert vetoed(watched(create, START), of_turn_two) == "SESSION-RELATIONAL-INVARIANT.6"
    assert vetoed(watched(create, START, STEP), second) == "SESSION-RELATIONAL-INVARIANT.7"
    assert vetoed(watched(create, START), second) == "SESSION-RELATIONAL-INVARIANT.8"
    watched(create, START, STEP, END_STEP, second)


def test_execution_events_name_the_open_turn_and_step(create: SessionFactory) -> None:
    # SESSION-RELATIONAL-INVARIANT.9
    chunk = {"type": "assistant/chunk", "data": {"turn": 1, "step": 1, "chunk": {}}}
    assert vetoed(watched(create, START), chunk) == "SESSION-RELATIONAL-INVARIANT.9"
    message = {"type": "assistant/message", "data": assistant_message("a", [text_block("hi")], step=2),
               "surfaceOp": "append"}
    assert vetoed(watched(create, START, STEP), message) == "SESSION-RELATIONAL-INVARIANT.9"
    call_of_turn_two = {**CALL, "data": {**CALL["data"], "turn": 2}}
    assert vetoed(watched(create, START, STEP), call_of_turn_two) == "SESSION-RELATIONAL-INVARIANT.9"
    assert vetoed(watched(create, START), END_STEP) == "SESSION-RELATIONAL-INVARIANT.9"
    assert vetoed(watched(create, START, STEP), result("c1", stp=3)) == "SESSION-RELATIONAL-INVARIANT.9"


def test_an_execution_event_out_of_place_is_refused_in_words() -> None:
    """SESSION-RELATIONAL-INVARIANT.9's message says what is open, never "turn None/step None" (issue 17)."""
    outside = Event("tool/call", 0, 0, snapshot(CALL["data"]))
    with pytest.raises(SpecViolation) as info:
        step(Trace(), outside)
    assert "but no turn is open" in str(info.value) and "None" not in str(info.value)


def test_an_appended_result_answers_a_call_of_this_step_once(create: SessionFactory) -> None:
    # SESSION-RELATIONAL-INVARIANT.10
    assert vetoed(watched(create, START, STEP), result("c1")) == "SESSION-RELATIONAL-INVARIANT.10"
    answered = watched(create, START, STEP, CALL, result("c1"))
    assert vetoed(answered, result("c1")) == "SESSION-RELATIONAL-INVARIANT.10"
    later = watched(create, START, STEP, CALL, END_STEP, {"type": "step/start", "data": {"turn": 1, "step": 2}})
    assert vetoed(later, result("c1", stp=2)) == "SESSION-RELATIONAL-INVARIANT.10"
    # Repair's not-started closer is the one result without a recorded call.
    closer = {"isError": True}
    not_started = result("c9")
    not_started["data"]["message"]["content"][0].update(closer)
    not_started["data"]["error"] = {"name": "ToolNotStartedError", "code": "TOOL_NOT_STARTED"}
    watched(create, START, STEP, not_started)
    unknown = result("c9")
    unknown["data"]["error"] = {"name": "ToolNotStartedError", "code": "TOOL_NOT_STARTED"}
    assert vetoed(watched(create, START, STEP), unknown) == "SESSION-RELATIONAL-INVARIANT.10"


def test_rewrites_and_execution_state_land_inside_turns(create: SessionFactory) -> None:
    session = watched(create, START, STEP, CALL, result("c1"), END_STEP)
    target = session.events[-2]
    rewrite = {"type": "tool/result", "data": pruned(target.data), "sourceEventSeqs": [target.seq],
               "surfaceOp": replace_op(target.seq, target.seq)}
    append(session, rewrite)  # inside the turn, between steps: allowed
    append(session, END)
    rewritten = session.events[-2].seq
    second = {"type": "tool/result", "data": pruned(target.data), "sourceEventSeqs": [rewritten],
              "surfaceOp": replace_op(rewritten, rewritten)}
    assert vetoed(session, second) == "SESSION-RELATIONAL-INVARIANT.11"
    for kind in ("todo/write", "request/context"):
        assert vetoed(watched(create), {"type": kind, "data": {"todos": []}}) == "SESSION-RELATIONAL-INVARIANT.12"
    header = {"type": "request/header", "data": request_header({"provider": "p", "model": "m"})}
    assert vetoed(watched(create), header) == "SESSION-RELATIONAL-INVARIANT.12"
    watched(create, START, header, {"type": "user/message", "data": with_change(user_message("u"), ["content"], []),
                                    "surfaceOp": "append"})


def test_a_candidate_vetoed_later_never_advances_the_trace(create: SessionFactory) -> None:
    # SESSION-INVARIANT-COMMIT.1: the companion stages at precommit and applies only after the commit.
    companion = Companion()
    refusals = iter([True, False])

    def second_validator(session: Any, candidate: Event) -> None:
        if candidate.type == "turn/start" and next(refusals):
            raise RuntimeError("not now")

    session = create("s", clock=ticking_clock())
    companion.attach(session)
    session.add_validator(second_validator)
    with pytest.raises(SpecViolation) as caught:
        append(session, START)
    assert caught.value.rule == "SESSION-APPEND-COMMIT.2"
    assert companion.trace(session) == Trace()
    append(session, START)  # had the trace advanced, this would be "turn 1 is still open"
    assert companion.trace(session).open_turn == 1
    assert companion.trace(session).last_seq == 0


def test_attaching_replays_the_log_first(create: SessionFactory) -> None:
    # SESSION-INVARIANT-COMMIT.2: a log that already breaks a relation cannot be watched.
    bad = create("bad", seed=[Event("step/start", 0, 0, snapshot(STEP["data"]))])
    with pytest.raises(SpecViolation) as caught:
        Companion().attach(bad)
    assert (caught.value.rule, caught.value.index) == ("SESSION-RELATIONAL-INVARIANT.6", 0)
    good = create("good", clock=ticking_clock())
    for request in (START, STEP):
        append(good, request)
    companion = Companion().attach(good)
    assert (companion.trace(good).open_turn, companion.trace(good).open_step) == (1, 1)
    assert vetoed(good, START) == "SESSION-RELATIONAL-INVARIANT.2"


def test_the_trace_is_immutable() -> None:
    with pytest.raises(AttributeError):
        Trace().open_turn = 3  # type: ignore[misc]
    assert step(Trace(), Event("turn/start", 0, 0, snapshot({"turn": 1}))).open_turn == 1


# --- properties ------------------------------------------------------------------------------


@PROPERTY
@given(loop=agent_loops())
def test_every_well_formed_loop_passes(implementation: str, loop: Loop) -> None:
    session = build([], implementation)
    companion = Companion().attach(session)
    for request in loop.requests:
        append(session, request)
    assert companion.trace(session).open_turn is None
    assert companion.trace(session).last_seq == len(loop.requests) - 1


@PROPERTY
@given(loop=agent_loops())
def test_every_repaired_cut_passes(implementation: str, loop: Loop) -> None:
    # The repair closers are allowed: TOOL_NOT_STARTED results are exempt from .10.
    for cut in loop.cuts_inside_turns()[-3:]:
        session = build(loop.requests[:cut], implementation)
        companion = Companion().attach(session)
        for closer in repair.closers(session.events):
            session.append(closer.type, closer.data, surface_op=closer.surface_op,
                           source_event_seqs=closer.source_event_seqs)
        assert companion.trace(session).open_turn is None


@PROPERTY
@given(violation=relational_violations())
def test_every_relational_violation_is_vetoed_with_its_rule(implementation: str, violation: Violation) -> None:
    session = build(violation.prefix, implementation)
    companion = Companion().attach(session)
    trace = companion.trace(session)
    assert vetoed(session, violation.request) == violation.rule
    assert companion.trace(session) == trace
