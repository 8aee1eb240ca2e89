"""spec/09-relational.md, the relational invariant companion: turn and step structure as a veto."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from sessionspec import model, repair
from sessionspec.envelope import Event
from sessionspec.errors import Kind, SpecViolation
from sessionspec.invariants import Companion, Trace, step
from sessionspec.jsonvalue import snapshot
from sessionspec.testing.loops import (
    Loop,
    Violation,
    agent_loops,
    append,
    assistant_data,
    build,
    pruned,
    relational_violations,
    result_data,
)

PROPERTY = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])

START = {"type": "turn/start", "data": {"turn": 1}}
STEP = {"type": "step/start", "data": {"turn": 1, "step": 1}}
CALL = {"type": "tool/call", "data": {"turn": 1, "step": 1, "callId": "c1", "name": "f", "arguments": "{}"}}
END_STEP = {"type": "step/end", "data": {"turn": 1, "step": 1}}
END = {"type": "turn/end", "data": {"turn": 1, "reason": {"kind": "completed"}}}


def watched(*requests: dict[str, Any]) -> Any:
    session = build([])
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
    return {"type": "tool/result", "data": {**result_data(turn, stp, f"r-{call_id}", call_id, "ok"), **extra},
            "surfaceOp": "append"}


def test_seqs_strictly_increase() -> None:
    # SESSION-RELATIONAL-INVARIANT.1: unreachable through a session, so checked on the pure step.
    with pytest.raises(SpecViolation) as caught:
        step(Trace(last_seq=5), Event("user/message", 5, 0, None))
    assert caught.value.rule == "SESSION-RELATIONAL-INVARIANT.1"


def test_turns_do_not_overlap_and_are_numbered_from_one() -> None:
    assert vetoed(watched(START), {"type": "turn/start", "data": {"turn": 2}}) == "SESSION-RELATIONAL-INVARIANT.2"
    assert vetoed(watched(), {"type": "turn/start", "data": {"turn": 2}}) == "SESSION-RELATIONAL-INVARIANT.3"
    assert vetoed(watched(), {"type": "turn/start", "data": {"turn": True}}) == "SESSION-RELATIONAL-INVARIANT.3"
    assert vetoed(watched(START, END), {"type": "turn/start", "data": {"turn": 1}}) == "SESSION-RELATIONAL-INVARIANT.3"


def test_a_turn_ends_as_itself_after_its_step() -> None:
    end_two = {"type": "turn/end", "data": {"turn": 2, "reason": {"kind": "completed"}}}
    assert vetoed(watched(START), end_two) == "SESSION-RELATIONAL-INVARIANT.4"
    assert vetoed(watched(), END) == "SESSION-RELATIONAL-INVARIANT.4"
    assert vetoed(watched(START, STEP), END) == "SESSION-RELATIONAL-INVARIANT.5"
    watched(START, END)  # a turn may end with zero steps


def test_steps_belong_to_the_open_turn_and_count_from_one() -> None:
    assert vetoed(watched(), STEP) == "SESSION-RELATIONAL-INVARIANT.6"
    assert vetoed(watched(START), {"type": "step/start", "data": {"turn": 2, "step": 1}}) == "SESSION-RELATIONAL-INVARIANT.6"
    assert vetoed(watched(START, STEP), {"type": "step/start", "data": {"turn": 1, "step": 2}}) == "SESSION-RELATIONAL-INVARIANT.7"
    assert vetoed(watched(START), {"type": "step/start", "data": {"turn": 1, "step": 2}}) == "SESSION-RELATIONAL-INVARIANT.8"
    second = {"type": "step/start", "data": {"turn": 1, "step": 2}}
    watched(START, STEP, END_STEP, second)


def test_execution_events_name_the_open_turn_and_step() -> None:
    # SESSION-RELATIONAL-INVARIANT.9
    chunk = {"type": "assistant/chunk", "data": {"turn": 1, "step": 1, "chunk": {}}}
    assert vetoed(watched(START), chunk) == "SESSION-RELATIONAL-INVARIANT.9"
    message = {"type": "assistant/message", "data": assistant_data(1, 2, "a", "hi", []), "surfaceOp": "append"}
    assert vetoed(watched(START, STEP), message) == "SESSION-RELATIONAL-INVARIANT.9"
    assert vetoed(watched(START, STEP), {**CALL, "data": {**CALL["data"], "turn": 2}}) == "SESSION-RELATIONAL-INVARIANT.9"
    assert vetoed(watched(START), END_STEP) == "SESSION-RELATIONAL-INVARIANT.9"
    assert vetoed(watched(START, STEP), result("c1", stp=3)) == "SESSION-RELATIONAL-INVARIANT.9"


def test_an_appended_result_answers_a_call_of_this_step_once() -> None:
    # SESSION-RELATIONAL-INVARIANT.10
    assert vetoed(watched(START, STEP), result("c1")) == "SESSION-RELATIONAL-INVARIANT.10"
    answered = watched(START, STEP, CALL, result("c1"))
    assert vetoed(answered, result("c1")) == "SESSION-RELATIONAL-INVARIANT.10"
    later = watched(START, STEP, CALL, END_STEP, {"type": "step/start", "data": {"turn": 1, "step": 2}})
    assert vetoed(later, result("c1", stp=2)) == "SESSION-RELATIONAL-INVARIANT.10"
    # Repair's not-started closer is the one result without a recorded call.
    closer = {"isError": True}
    not_started = result("c9")
    not_started["data"]["message"]["content"][0].update(closer)
    not_started["data"]["error"] = {"name": "ToolNotStartedError", "code": "TOOL_NOT_STARTED"}
    watched(START, STEP, not_started)
    unknown = result("c9")
    unknown["data"]["error"] = {"name": "ToolNotStartedError", "code": "TOOL_NOT_STARTED"}
    assert vetoed(watched(START, STEP), unknown) == "SESSION-RELATIONAL-INVARIANT.10"


def test_rewrites_and_execution_state_land_inside_turns() -> None:
    session = watched(START, STEP, CALL, result("c1"), END_STEP)
    target = session.events[-2]
    rewrite = {"type": "tool/result", "data": pruned(target.data), "sourceEventSeqs": [target.seq],
               "surfaceOp": {"op": "replace", "start": target.seq, "end": target.seq}}
    append(session, rewrite)  # inside the turn, between steps: allowed
    append(session, END)
    second = {"type": "tool/result", "data": pruned(target.data), "sourceEventSeqs": [session.events[-2].seq],
              "surfaceOp": {"op": "replace", "start": session.events[-2].seq, "end": session.events[-2].seq}}
    assert vetoed(session, second) == "SESSION-RELATIONAL-INVARIANT.11"
    for kind in ("todo/write", "request/context"):
        assert vetoed(watched(), {"type": kind, "data": {"todos": []}}) == "SESSION-RELATIONAL-INVARIANT.12"
    header = {"type": "request/header", "data": {"header": {"config": {"provider": "p", "model": "m"}}, "reason": "initial"}}
    assert vetoed(watched(), header) == "SESSION-RELATIONAL-INVARIANT.12"
    watched(START, header, {"type": "user/message", "data": {"id": "u", "role": "user", "source": {"kind": "user"},
                                                              "content": []}, "surfaceOp": "append"})


def test_a_candidate_vetoed_later_never_advances_the_trace() -> None:
    # SESSION-INVARIANT-COMMIT.1: the companion stages at precommit and applies only after the commit.
    companion = Companion()
    refusals = iter([True, False])

    def second_validator(session: Any, candidate: Event) -> None:
        if candidate.type == "turn/start" and next(refusals):
            raise RuntimeError("not now")

    session = build([])
    companion.attach(session)
    session.add_validator(second_validator)
    with pytest.raises(SpecViolation) as caught:
        append(session, START)
    assert caught.value.rule == "SESSION-APPEND-COMMIT.2"
    assert companion.trace(session) == Trace()
    append(session, START)  # had the trace advanced, this would be "turn 1 is still open"
    assert companion.trace(session).open_turn == 1
    assert companion.trace(session).last_seq == 0


def test_attaching_replays_the_log_first() -> None:
    # SESSION-INVARIANT-COMMIT.2: a log that already breaks a relation cannot be watched.
    bad = model.Session.create("bad", seed=build([STEP]).events)
    with pytest.raises(SpecViolation) as caught:
        Companion().attach(bad)
    assert (caught.value.rule, caught.value.index) == ("SESSION-RELATIONAL-INVARIANT.6", 0)
    good = build([START, STEP])
    companion = Companion().attach(good)
    assert (companion.trace(good).open_turn, companion.trace(good).open_step) == (1, 1)
    assert vetoed(good, START) == "SESSION-RELATIONAL-INVARIANT.2"


def test_the_trace_is_immutable() -> None:
    with pytest.raises(AttributeError):
        Trace().open_turn = 3  # type: ignore[misc]
    assert step(Trace(), Event("turn/start", 0, 0, snapshot({"turn": 1}))).open_turn == 1


# --- properties ------------------------------------------------------------------------------


IMPLS = ["model", "live"]


@pytest.mark.parametrize("impl", IMPLS)
@PROPERTY
@given(loop=agent_loops())
def test_every_well_formed_loop_passes(impl: str, loop: Loop) -> None:
    session = build([], impl)
    companion = Companion().attach(session)
    for request in loop.requests:
        append(session, request)
    assert companion.trace(session).open_turn is None
    assert companion.trace(session).last_seq == len(loop.requests) - 1


@PROPERTY
@given(agent_loops())
def test_every_repaired_cut_passes(loop: Loop) -> None:
    # The repair closers are allowed: TOOL_NOT_STARTED results are exempt from .10.
    for cut in loop.cuts_inside_turns()[-3:]:
        session = build(loop.requests[:cut])
        companion = Companion().attach(session)
        for closer in repair.closers(session.events):
            session.append(closer.type, closer.data, surface_op=closer.surface_op,
                           source_event_seqs=closer.source_event_seqs)
        assert companion.trace(session).open_turn is None


@pytest.mark.parametrize("impl", IMPLS)
@PROPERTY
@given(violation=relational_violations())
def test_every_relational_violation_is_vetoed_with_its_rule(impl: str, violation: Violation) -> None:
    session = build(violation.prefix, impl)
    companion = Companion().attach(session)
    trace = companion.trace(session)
    assert vetoed(session, violation.request) == violation.rule
    assert companion.trace(session) == trace
