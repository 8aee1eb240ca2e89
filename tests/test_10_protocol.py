"""SCP v0: the testee answers every line, every op, and every protocol rule (spec/10-conformance.md)."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sessionspec.errors import SpecViolation
from sessionspec.testing import implementations
from sessionspec.wire import client, protocol, remote
from sessionspec.wire import serve as scp_testee
from sessionspec.wire.executor import Executor

SERVE = [sys.executable, "-m", "sessionspec.cli", "serve", "--impl", "model"]
USER = {"id": "u1", "role": "user", "source": {"kind": "user"}, "content": [{"type": "text", "text": "hi"}]}


def executor_for(name: str) -> Executor:
    return Executor(implementations.factory(name), name)


def ask(testee: Executor, line: str | bytes) -> dict[str, Any]:
    raw = line.encode("utf-8", "surrogatepass") if isinstance(line, str) else line
    answer: dict[str, Any] = json.loads(scp_testee.answer_line(testee, raw))
    return answer


def created(impl: str = "model") -> Executor:
    testee = executor_for(impl)
    assert ask(testee, '{"op":"create","id":"s1","seed":null,"header":null}')["ok"]
    return testee


def rule_of(answer: dict[str, Any]) -> Any:
    return answer["error"]["rule"] if not answer["ok"] else None


def deep(depth: int) -> str:
    return "[" * depth + "]" * depth


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.binary(max_size=200), st.text(max_size=200).map(lambda t: t.encode("utf-8", "surrogatepass")),
                 st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
                              lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(
                                  ["op", "type", "data", "seed", "id", "header", "events", "surfaceOp"]), inner, max_size=4),
                              max_leaves=12).map(lambda v: json.dumps(v).encode())))
def test_any_line_gets_one_well_formed_answer_that_names_a_rule(line: bytes) -> None:
    """Nothing a line holds ends the testee: every line is answered ok, or with a kind and the rule it breaks."""
    testee = created("live")
    answer = ask(testee, line)
    assert type(answer["ok"]) is bool
    if not answer["ok"]:
        assert isinstance(answer["error"]["kind"], str) and isinstance(answer["error"]["message"], str)
        assert answer["error"]["kind"] != "internal", answer
        assert str(answer["error"]["rule"]).startswith("SESSION-"), answer


def test_served_process_answers_every_line_even_garbage() -> None:
    lines = [b"not json", b"", b"\xff\xfe", b"[1,2]", b'{"op":1}', b'{"op":"nope"}', b"{" * 5000, b'"\\ud800"',
             b'{"op":"append","type":"t","data":1}', b"\xef\xbb\xbf" + b'{"op":"hello"}', b'{"op":"hello"}']
    out = subprocess.run(SERVE, input=b"\n".join(lines) + b"\n", capture_output=True, timeout=60, check=True).stdout
    answers = [json.loads(line) for line in out.splitlines()]
    assert len(answers) == len(lines)
    assert answers[-1]["ok"] and answers[-1]["implementation"] == "sessionspec-model"
    assert rule_of(answers[0]) == "SESSION-LOSSLESS-TEXT.2" and rule_of(answers[3]) == "SESSION-CONFORMANCE-PROTOCOL.1"
    assert answers[5]["error"]["kind"] == "unsupported"
    assert rule_of(answers[9]) == "SESSION-LOSSLESS-TEXT.2", "a byte-order mark is not JSON"


def test_a_request_nested_100000_deep_is_answered_and_so_is_the_next() -> None:
    """SESSION-LOSSLESS-JSON.7 over the wire: read, checked, logged and answered without recursion."""
    create = b'{"op":"create","id":"s1","seed":null,"header":null}'
    append = b'{"op":"append","type":"x/deep","data":' + deep(100_000).encode() + b"}"
    lines = [create, append, b'{"op":"snapshot"}', b'{"op":"hello"}']
    out = subprocess.run(SERVE, input=b"\n".join(lines) + b"\n", capture_output=True, timeout=120, check=True).stdout
    answers = out.splitlines()
    assert len(answers) == 4 and b'"ok":true' in answers[1] and answers[1].count(b"[") == 100_000
    assert b'"ok":true' in answers[3]


def test_a_line_over_the_bound_is_refused_by_its_rule_and_the_next_is_answered() -> None:
    """SESSION-CONFORMANCE-PROTOCOL.7: an over-long line is read in pieces and dropped, never held."""
    stream = io.BytesIO(b"x" * 5000 + b"\n" + b'{"op":"hello"}\n')
    assert list(scp_testee.lines(stream, bound=1000)) == [scp_testee.OVERLONG, b'{"op":"hello"}']
    with pytest.raises(SpecViolation) as info:
        protocol.loads(b" " * (protocol.MAX_LINE_BYTES + 1))
    assert info.value.rule == "SESSION-CONFORMANCE-PROTOCOL.7"
    out = io.BytesIO()
    scp_testee.serve(created(), io.BytesIO(b"y" * (protocol.MAX_LINE_BYTES + 10) + b'\n{"op":"hello"}\n'), out)
    first, second = (json.loads(line) for line in out.getvalue().splitlines())
    assert rule_of(first) == "SESSION-CONFORMANCE-PROTOCOL.7" and second["ok"]


def test_every_op() -> None:
    testee = created()
    hello = ask(testee, '{"op":"hello"}')
    assert hello["ok"] and hello["profile"] == "scp-0" and {"implementation", "version"} <= set(hello)
    assert set(hello["extensions"]) == {protocol.HOOKS, protocol.INPROCESS}
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


def test_snapshot_shows_everything_the_spec_defines_per_session() -> None:
    """Header, transcript, next seq and the request header and context: every rule the store enforces is observable."""
    testee = created()
    config = {"provider": "deepseek", "model": "deepseek-chat"}
    for request in ({"op": "append", "type": "turn/start", "data": {"turn": 1}},
                    {"op": "append", "type": "user/message", "data": USER, "surfaceOp": "append"},
                    {"op": "append", "type": "request/header", "data": {"header": {"config": config, "tools": []}}},
                    {"op": "append", "type": "request/context", "data": {"cwd": "/w"}}):
        assert ask(testee, json.dumps(request))["ok"]
    snap = ask(testee, '{"op":"snapshot"}')
    assert snap["header"] == {"version": 0, "id": "s1", "createdAt": protocol.START_TIME + 1}
    assert snap["transcript"] == [1] and snap["seq"] == 4
    assert snap["requestHeader"] == {"config": config} and snap["requestContext"] == {"cwd": "/w"}


def test_fold_checks_contiguity() -> None:
    gap = [{"type": "turn/start", "seq": 1, "time": 1, "data": {}}]
    assert rule_of(ask(created(), json.dumps({"op": "fold", "events": gap}))) == "SESSION-SURFACE-FOLD.1"


def test_protocol_rules() -> None:
    testee = executor_for("model")
    assert rule_of(ask(testee, '{"op":"snapshot"}')) == "SESSION-CONFORMANCE-PROTOCOL.3"
    assert rule_of(ask(testee, '["hello"]')) == "SESSION-CONFORMANCE-PROTOCOL.1"
    assert rule_of(ask(testee, '{"op":"compact"}')) == "SESSION-CONFORMANCE-PROTOCOL.2"
    assert rule_of(ask(testee, '{"op":"create","id":"s1","seed":null}')) == "SESSION-CONFORMANCE-PROTOCOL.4"
    assert rule_of(ask(testee, '{"op":"fold","events":{}}')) == "SESSION-CONFORMANCE-PROTOCOL.5"
    created_then_failed = created()
    assert not ask(created_then_failed, '{"op":"create","id":"s2","seed":null,"header":[]}')["ok"]
    assert rule_of(ask(created_then_failed, '{"op":"append","type":"t","data":1}')) == "SESSION-CONFORMANCE-PROTOCOL.3"


@pytest.mark.parametrize("extra", ['"x-validator":"sometimes"', '"x-observer":true', '"x-nonsense":1', '"x-clock":"raise"'])
def test_an_unknown_extension_key_or_value_is_refused_never_ignored(extra: str) -> None:
    """SESSION-CONFORMANCE-PROTOCOL.6: a misspelt hook would otherwise make a veto test pass for the wrong reason."""
    answer = ask(created(), '{"op":"append","type":"turn/start","data":{},' + extra + "}")
    assert rule_of(answer) == "SESSION-CONFORMANCE-PROTOCOL.6" and answer["error"]["kind"] == "unsupported"


def test_a_testee_without_the_extensions_refuses_them() -> None:
    bare = Executor(implementations.factory("live"), "live", extensions=())
    assert ask(bare, '{"op":"create","id":"s1","seed":null,"header":null}')["ok"]
    assert rule_of(ask(bare, '{"op":"append","type":"t","data":1,"x-validator":"raise"}')) == "SESSION-CONFORMANCE-PROTOCOL.6"
    assert rule_of(ask(bare, '{"op":"x-rebuild"}')) == "SESSION-CONFORMANCE-PROTOCOL.2"


@pytest.mark.parametrize("line, rule", [
    ('{"op":"append","type":"t","data":123456789012345678901234567890}', "SESSION-LOSSLESS-TEXT.4"),
    ('{"op":"append","type":"t","data":[{"n":9007199254740992}]}', "SESSION-LOSSLESS-TEXT.4"),
    ('{"op":"append","type":"t","data":1e400}', "SESSION-LOSSLESS-TEXT.3"),
    ('{"op":"append","type":"t","data":NaN}', "SESSION-LOSSLESS-TEXT.3"),
    ('{"op":"append","type":"t","data":-0}', "SESSION-LOSSLESS-TEXT.5"),
    ('{"op":"append","type":"t","data":{"x":[-0e0]}}', "SESSION-LOSSLESS-TEXT.5"),
    ('{"op":"append","type":"t","data":-0.0}', "SESSION-LOSSLESS-TEXT.5"),
    ('{"op":"append","type":"t","data":{"a":1,"a":2}}', "SESSION-LOSSLESS-TEXT.6"),
    ('{"op":"append","op":"append","type":"t","data":1}', "SESSION-LOSSLESS-TEXT.6"),
    ('\ufeff{"op":"hello"}', "SESSION-LOSSLESS-TEXT.2"),
    ('{"op":"append","type":"t","data":"\udc80"}', "SESSION-LOSSLESS-TEXT.1"),
])
def test_request_lines_are_read_losslessly(line: str, rule: str) -> None:
    """A line two JSON readers could read as two values is refused with the rule, kind json (spec/01, JSON text)."""
    answer = ask(created(), line)
    assert rule_of(answer) == rule and answer["error"]["kind"] == "json"


def test_lone_surrogate_escapes_are_kept() -> None:
    assert ask(created(), '{"op":"append","type":"t","data":"\\ud800"}')["event"]["data"] == "\ud800"


def test_hooks_extension_vetoes_and_refuses_reentry() -> None:
    testee = created()
    veto = ask(testee, '{"op":"append","type":"turn/start","data":{},"x-validator":"raise"}')
    assert rule_of(veto) == "SESSION-APPEND-COMMIT.2" and veto["x-candidate"]["seq"] == 0
    reentry = ask(testee, '{"op":"append","type":"turn/start","data":{},"x-validator":"reentrant"}')
    assert rule_of(reentry) == "SESSION-APPEND-COMMIT.4"
    observed = ask(testee, '{"op":"append","type":"turn/start","data":{},"x-observer":"reentrant"}')
    assert observed["ok"] and observed["x-reentrant"]["error"]["kind"] == "reentrant"
    clocked = ask(testee, '{"op":"append","type":"turn/end","data":{},"x-clock":"reentrant"}')
    assert clocked["ok"] and clocked["event"]["seq"] == 1 and rule_of(clocked["x-reentrant"]) == "SESSION-APPEND-COMMIT.4"
    assert ask(testee, '{"op":"append","type":"t","data":{},"x-observer":"raise"}')["x-observerFailures"] == 1


def test_remote_session_has_the_session_api() -> None:
    connection = client.Connection(SERVE)
    try:
        session = remote.RemoteSession.over(connection)("s1")
        event = session.append("user/message", USER, surface_op="append")
        assert event.seq == 0 and session.seq == 1 and list(session.surface.nodes) == [0]
        assert list(session.derive_messages()) == [USER] and session.first_live_seq == 0
        assert session.events[0].type == "user/message"
        with pytest.raises(SpecViolation) as info:
            session.append("user/message", USER)
        assert info.value.rule == "SESSION-SURFACE-PROJECTION.3"
    finally:
        connection.close()


def test_malformed_answers_are_protocol_errors_quoting_the_line() -> None:
    for raw in (b"garbage", b"[1]", b'{"ok":false}', b'{"ok":"yes"}'):
        with pytest.raises(client.TesteeFailure) as info:
            client.parse_answer(raw)
        assert info.value.kind == "protocol" and raw.decode()[:5] in info.value.message


def test_answers_beyond_orjson_are_read_exactly() -> None:
    """An answer with an integer beyond 64 bits or nested beyond orjson's limit is still an answer."""
    assert client.parse_answer(b'{"ok":true,"n":123456789012345678901234567890}')["n"] == 123456789012345678901234567890
    nested = client.parse_answer(b'{"ok":true,"v":' + deep(5000).encode() + b"}")
    assert nested["ok"] is True
