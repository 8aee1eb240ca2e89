"""The stateful machine: `live` held to the reference model, step by step (spec/04-append.md, spec/03-surface.md).

The machines and properties a fuzzer runs live in the package (`sessionspec.testing.fuzz`), so an
installed `sessionspec[fuzz]` fuzzes the same tests (`pytest --pyargs sessionspec.testing.fuzz`);
they are collected here, and the trace and replay tests beside them.
"""

import pytest
from sessionspec.cli import main
from sessionspec.testing.fuzz import (
    TestCompanionLiveAgainstModel,
    TestLiveAgainstModel,
    TestModelAgainstItself,
    test_a_loop_cut_anywhere_is_read_back_and_continues_well_formed,
    test_every_invalid_operation_is_refused_by_the_model_with_its_rule,
)
from sessionspec.wire.trace import Trace, parse_trace, render, write_trace

__all__ = ["TestCompanionLiveAgainstModel", "TestLiveAgainstModel", "TestModelAgainstItself",
           "test_a_loop_cut_anywhere_is_read_back_and_continues_well_formed",
           "test_every_invalid_operation_is_refused_by_the_model_with_its_rule"]


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
