"""The stateful machine: `live` held to the reference model, step by step (spec/04-append.md, spec/03-surface.md)."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sessionspec.cli import main
from sessionspec.invariants import Companion
from sessionspec.repair import closers
from sessionspec.testing import implementations, invalid, loops
from sessionspec.testing import strategies as ss
from sessionspec.testing.companion_machine import CompanionMachine
from sessionspec.testing.machine import LiveMachine, ModelMachine
from sessionspec.wire.trace import Trace, parse_trace, render, write_trace

TestLiveAgainstModel = LiveMachine.TestCase
TestModelAgainstItself = ModelMachine.TestCase
TestModelAgainstItself.settings = settings(TestModelAgainstItself.settings, max_examples=10)


@given(st.data())
def test_every_invalid_operation_is_refused_by_the_model_with_its_rule(data: st.DataObject) -> None:
    """The strategy's own check: each invalid request is refused with the rule it names."""
    session = implementations.factory("model")("s", clock=lambda: 1)
    for request in data.draw(st.lists(ss.append_requests(ss.View.of(session)), max_size=4)):
        session.append_request(request)
    bad = data.draw(invalid.invalid_requests(ss.View.of(session)))
    try:
        session.append_request(bad.request)
    except Exception as error:
        assert getattr(error, "rule", None) == bad.rule, (bad.why, error)
    else:
        raise AssertionError(f"accepted: {bad.why}")


def test_trace_encoding_keeps_values_json_cannot_hold() -> None:
    data = [(1, 2), float("nan"), 2**70, -0.0, {1: "k"}, {"$x": b"\x00"}]
    text = render(Trace([{"op": "append", "type": "turn/start", "data": data}], "machine"))
    back = parse_trace(text).requests[0]["data"]
    assert back[0] == (1, 2) and back[1] != back[1] and back[2] == 2**70 and str(back[3]) == "-0.0"
    assert back[4] == {1: "k"} and back[5] == {"$x": b"\x00"}


def test_a_request_nested_too_deep_for_a_json_document_is_written_as_its_line() -> None:
    deep: object = 1
    for _ in range(5_000):
        deep = [deep]
    trace = parse_trace(render(Trace([{"op": "append", "type": "x/deep", "data": deep}], "conform")))
    assert isinstance(trace.requests[0], str) and trace.requests[0].startswith('{"op":"append"')


def test_replay_reports_a_difference_from_the_model(capsys: pytest.CaptureFixture[str]) -> None:
    """`sessionspec replay` re-executes a trace: exit 0 on live, 1 on a planted bug, with the difference printed."""
    user = {"id": "u1", "role": "user", "source": {"kind": "user"}, "content": [{"type": "text", "text": "hi"}]}
    requests = [{"op": "create", "id": "s1", "seed": None, "header": None, "x-time": 5},
                {"op": "append", "type": "user/message", "data": user, "surfaceOp": "append", "x-observer": "reentrant",
                 "x-time": 6},
                {"op": "snapshot", "x-time": 7}]
    path = str(write_trace(Trace(requests, "machine", "replay-test", "live")))
    assert main(["replay", path, "--impl", "live"]) == 0
    assert main(["replay", path, "--impl", "planted:no-reentrancy-guard"]) == 1
    assert "SESSION-APPEND-COMMIT.4" in capsys.readouterr().out


TestCompanionLiveAgainstModel = CompanionMachine.TestCase
TestCompanionLiveAgainstModel.settings = settings(TestCompanionLiveAgainstModel.settings, max_examples=15,
                                                  stateful_step_count=6)


@given(loops.agent_loops(max_turns=2, max_steps=2, min_turns=1), st.data())
def test_a_loop_cut_anywhere_is_read_back_and_continues_well_formed(loop: loops.Loop, data: st.DataObject) -> None:
    """What `agent_works` relies on: `state_of` reads back the open turn, step and calls of a cut loop,
    and a loop started from it finishes them in a way the companion accepts, ending balanced."""
    cut = data.draw(st.integers(0, len(loop.requests)), label="cut")
    session = implementations.factory("model")("loop", clock=loops.ticking_clock())
    Companion().attach(session)
    for request in loop.requests[:cut]:
        loops.append(session, request)
    start = loops.state_of([e.to_json() for e in session.events], list(session.surface.nodes))
    built = loop.states[cut]
    assert (start.open_turn, start.open_step, start.committed) == (built.open_turn, built.open_step, built.committed)
    assert (start.pending, start.unrecorded, start.recorded_at) == (built.pending, built.unrecorded, built.recorded_at)
    assert start.nodes == built.nodes and dict(start.results) == dict(built.results)
    rest = data.draw(loops.agent_loops(max_turns=1, max_steps=2, start=start), label="rest")
    for request in rest.requests:
        loops.append(session, request)
    assert rest.states[-1].open_turn is None and closers(session.events) == []
