"""SCP v0: the testee answers every line, every op, and every protocol rule (spec/10-conformance.md)."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from sessionspec.conformance import client, protocol
from sessionspec.conformance import testee as scp_testee
from sessionspec.errors import SpecViolation

SERVE = [sys.executable, "-m", "sessionspec.cli", "serve", "--impl", "model"]
USER = {"id": "u1", "role": "user", "source": {"kind": "user"}, "content": [{"type": "text", "text": "hi"}]}


def ask(testee: protocol.Testee, line: str | bytes) -> dict[str, Any]:
    raw = line.encode("utf-8", "surrogatepass") if isinstance(line, str) else line
    answer: dict[str, Any] = json.loads(testee.answer_line(raw))
    return answer


def created(impl: str = "model") -> protocol.Testee:
    testee = scp_testee.testee_for(impl)
    assert ask(testee, '{"op":"create","id":"s1","seed":null,"header":null}')["ok"]
    return testee


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.binary(max_size=200), st.text(max_size=200).map(lambda t: t.encode("utf-8", "surrogatepass")),
                 st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
                              lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(
                                  ["op", "type", "data", "seed", "id", "header", "events", "surfaceOp"]), inner, max_size=4),
                              max_leaves=12).map(lambda v: json.dumps(v).encode())))
def test_any_line_gets_one_well_formed_answer(line: bytes) -> None:
    """Nothing a line holds ends the testee: every line is answered with ok true or an error with a kind."""
    testee = created("live")
    answer = ask(testee, line)
    assert type(answer["ok"]) is bool
    if not answer["ok"]:
        assert isinstance(answer["error"]["kind"], str) and isinstance(answer["error"]["message"], str)
        assert answer["error"]["kind"] != "internal", answer


def test_served_process_survives_garbage() -> None:
    lines = [b"not json", b"", b"\xff\xfe", b"[1,2]", b'{"op":1}', b'{"op":"nope"}', b"{" * 5000, b'"\\ud800"',
             b'{"op":"append","type":"t","data":1}', b'{"op":"hello"}']
    out = subprocess.run(SERVE, input=b"\n".join(lines) + b"\n", capture_output=True, timeout=60, check=True).stdout
    answers = [json.loads(line) for line in out.splitlines()]
    assert len(answers) == len(lines)
    assert answers[-1]["ok"] and answers[-1]["implementation"] == "sessionspec-model"
    assert answers[0]["error"]["rule"] == "SESSION-CONFORMANCE-PROTOCOL.1"
    assert answers[5]["error"]["kind"] == "unsupported"


def test_every_op() -> None:
    testee = created()
    hello = ask(testee, '{"op":"hello"}')
    assert hello["ok"] and hello["profile"] == "scp-0" and {"implementation", "version"} <= set(hello)
    user = ask(testee, json.dumps({"op": "append", "type": "user/message", "data": USER, "surfaceOp": "append"}))
    assert user["event"] == {"type": "user/message", "seq": 0, "time": protocol.START_TIME + 2, "data": USER, "surfaceOp": "append"}
    snap = ask(testee, '{"op":"snapshot"}')
    assert snap["surface"] == {"nodes": [0], "replaceGeneration": 0} and snap["messages"] == [USER] and snap["firstLiveSeq"] == 0
    replace = {"op": "append", "type": "user/message", "data": {**USER, "id": "k"}, "surfaceOp": {"op": "replace", "start": 0, "end": 0},
               "sourceEventSeqs": [0]}
    assert ask(testee, json.dumps(replace))["ok"]
    events = ask(testee, '{"op":"snapshot"}')["events"]
    folded = ask(testee, json.dumps({"op": "fold", "events": events}))
    assert folded == {"ok": True, "nodes": [1], "replacements": [{"seq": 1, "start": 0, "end": 0, "shadowedSeqs": [0]}]}
    open_turn = [{"type": "turn/start", "seq": 0, "time": 1, "data": {"turn": 1}}]
    closers = ask(testee, json.dumps({"op": "repair", "events": open_turn}))["closers"]
    assert [c["type"] for c in closers] == ["turn/end"]


def test_fold_checks_contiguity() -> None:
    gap = [{"type": "turn/start", "seq": 1, "time": 1, "data": {}}]
    assert ask(created(), json.dumps({"op": "fold", "events": gap}))["error"]["rule"] == "SESSION-SURFACE-FOLD.1"


def test_protocol_rules() -> None:
    testee = scp_testee.testee_for("model")
    assert ask(testee, '{"op":"snapshot"}')["error"]["rule"] == "SESSION-CONFORMANCE-PROTOCOL.3"
    assert ask(testee, '["hello"]')["error"]["rule"] == "SESSION-CONFORMANCE-PROTOCOL.1"
    assert ask(testee, '{"op":"compact"}')["error"]["rule"] == "SESSION-CONFORMANCE-PROTOCOL.2"
    assert ask(testee, '{"op":"create","id":"s1","seed":null}')["error"]["rule"] == "SESSION-CONFORMANCE-PROTOCOL.4"
    assert ask(testee, '{"op":"fold","events":{}}')["error"]["rule"] == "SESSION-CONFORMANCE-PROTOCOL.5"
    created_then_failed = created()
    assert not ask(created_then_failed, '{"op":"create","id":"s2","seed":null,"header":[]}')["ok"]
    answer = ask(created_then_failed, '{"op":"append","type":"t","data":1}')
    assert answer["error"]["rule"] == "SESSION-CONFORMANCE-PROTOCOL.3"


def test_numbers_and_surrogates_are_read_exactly() -> None:
    testee = created()
    assert ask(testee, '{"op":"append","type":"t","data":123456789012345678901234567890}')["error"]["rule"] == "SESSION-LOSSLESS-JSON.2"
    assert ask(testee, '{"op":"append","type":"t","data":1e400}')["error"]["rule"] == "SESSION-LOSSLESS-JSON.3"
    assert ask(testee, '{"op":"append","type":"t","data":NaN}')["error"]["rule"] == "SESSION-CONFORMANCE-PROTOCOL.1"
    assert ask(testee, '{"op":"append","type":"t","data":"\\ud800"}')["event"]["data"] == "\ud800"


def test_hooks_extension_vetoes_and_refuses_reentry() -> None:
    testee = created()
    veto = ask(testee, '{"op":"append","type":"turn/start","data":{},"x-validator":"raise"}')
    assert veto["error"]["rule"] == "SESSION-APPEND-COMMIT.2"
    reentry = ask(testee, '{"op":"append","type":"turn/start","data":{},"x-validator":"reentrant"}')
    assert reentry["error"]["rule"] == "SESSION-APPEND-COMMIT.4"
    observed = ask(testee, '{"op":"append","type":"turn/start","data":{},"x-observer":"reentrant"}')
    assert observed["ok"] and observed["x-reentrant"]["error"]["kind"] == "reentrant"


def test_remote_session_has_the_session_api() -> None:
    connection = client.Connection(SERVE)
    try:
        session = client.RemoteSession.over(connection)("s1")
        event = session.append("user/message", USER, surface_op="append")
        assert event.seq == 0 and session.seq == 1 and list(session.surface.nodes) == [0]
        assert list(session.derive_messages()) == [USER] and session.first_live_seq == 0
        assert session.events[0].type == "user/message"
        try:
            session.append("user/message", USER)
        except SpecViolation as violation:
            assert violation.rule == "SESSION-SURFACE-PROJECTION.3"
        else:
            raise AssertionError("a surface event without surfaceOp was accepted")
    finally:
        connection.close()


def test_malformed_answers_are_protocol_errors_quoting_the_line() -> None:
    for raw in (b"garbage\n", b"[1]\n", b'{"ok":false}\n', b'{"ok":"yes"}\n'):
        try:
            client.parse_answer(raw)
        except client.TesteeFailure as failure:
            assert failure.kind == "protocol" and raw.strip().decode()[:5] in failure.message
        else:
            raise AssertionError(f"{raw!r} accepted as an answer")
