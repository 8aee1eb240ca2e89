"""spec/02-envelope.md: envelope, core events, message shapes, request headers and the session header."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from sessionspec.envelope import HEADER_KEYS, SESSION_FORMAT_VERSION, header_to_json, parse_event
from sessionspec.errors import SpecViolation
from sessionspec.jsonvalue import MAX_SAFE_INTEGER, thaw
from sessionspec.model import Session
from sessionspec.rules import RULES
from support import rejects

MODEL = {"kind": "model", "provider": "deepseek", "model": "deepseek-chat"}


def user(message_id: str = "u1", **extra: Any) -> dict[str, Any]:
    return {"id": message_id, "role": "user", "source": {"kind": "user"}, "content": [{"type": "text", "text": "hi"}],
            **extra}


def assistant(message_id: str = "a1", content: list[Any] | None = None) -> dict[str, Any]:
    message = {"id": message_id, "role": "assistant", "source": dict(MODEL),
               "content": [{"type": "text", "text": "ok"}] if content is None else content}
    return {"turn": 1, "step": 1, "message": message}


def tool_result(call_id: str = "c1", text: str = "out") -> dict[str, Any]:
    block = {"type": "tool-result", "toolCallId": call_id, "content": [{"type": "text", "text": text}]}
    return {"turn": 1, "step": 1, "message": {"id": "r1", "role": "user", "source": {"kind": "tool", "callId": call_id},
                                              "content": [block]}}


def request_header(**config: Any) -> dict[str, Any]:
    return {"header": {"config": {"provider": "deepseek", "model": "deepseek-chat", **config}}, "reason": "initial"}


def new_session() -> Session:
    session = Session.create("s", clock=lambda: 7)
    session.append("turn/start", {"turn": 1})
    session.append("user/message", user(), surface_op="append")
    return session




def seed_rejects(seed: list[Any], rule: str, index: int | None = None) -> SpecViolation:
    """Seeding `seed` is rejected with `rule`; the caller's seed is left as it was."""
    before = copy.deepcopy(seed)
    with pytest.raises(SpecViolation) as info:
        Session.create("s", seed=seed, clock=lambda: 1)
    assert info.value.rule == rule, str(info.value)
    assert info.value.kind is RULES[rule].kind
    if index is not None:
        assert info.value.index == index
    assert seed == before
    return info.value


def ev(event_type: str, seq: int, data: Any, **fields: Any) -> dict[str, Any]:
    return {"type": event_type, "seq": seq, "time": 0, "data": data, **fields}


def both_reject(event_type: str, data: Any, rule: str, **surface: Any) -> None:
    """Decision 1: the same event is rejected by append and by seeding, with the same rule."""
    session = new_session()
    op = surface.get("surface_op")
    sources = surface.get("source_event_seqs")
    rejects(session, rule, lambda: session.append(event_type, data, surface_op=op, source_event_seqs=sources))
    fields: dict[str, Any] = {}
    if op is not None:
        fields["surfaceOp"] = op
    if sources is not None:
        fields["sourceEventSeqs"] = sources
    seed = [e.to_json() for e in session.events] + [ev(event_type, session.seq, data, **fields)]
    seed_rejects(seed, rule, index=session.seq)


# --- the envelope ------------------------------------------------------------------------------


def test_envelope_unknown_key_is_rejected_in_seed_and_request() -> None:
    seed_rejects([ev("turn/start", 0, {}, extra=1)], "SESSION-EVENT-ENVELOPE.1", 0)
    seed_rejects([[ev("turn/start", 0, {})]], "SESSION-EVENT-ENVELOPE.1", 0)
    seed_rejects(["turn/start"], "SESSION-EVENT-ENVELOPE.1", 0)
    session = new_session()
    rejects(session, "SESSION-EVENT-ENVELOPE.1", lambda: session.append_request({"type": "x/y", "data": {}, "seq": 3}))
    rejects(session, "SESSION-EVENT-ENVELOPE.1", lambda: session.append_request({"type": "x/y", "data": {}, "intent": {}}))


@pytest.mark.parametrize("bad", ["", None, 1, True, ["turn/start"]])
def test_type_must_be_a_non_empty_string(bad: Any) -> None:
    session = new_session()
    rejects(session, "SESSION-EVENT-ENVELOPE.2", lambda: session.append(bad, {}))
    rejects(session, "SESSION-EVENT-ENVELOPE.2", lambda: session.append_request({"type": bad, "data": {}}))
    seed_rejects([ev(bad, 0, {})], "SESSION-EVENT-ENVELOPE.2", 0)
    seed_rejects([{"seq": 0, "time": 0, "data": {}}], "SESSION-EVENT-ENVELOPE.2", 0)


def test_open_vocabulary_types_are_kept() -> None:
    session = new_session()
    event = session.append("x/custom-plugin", {"k": [1]})
    assert event.type == "x/custom-plugin" and event.data == {"k": [1]}


@pytest.mark.parametrize("bad", [-1, True, 1.0, "0", None, MAX_SAFE_INTEGER + 1])
def test_seq_must_be_a_non_negative_safe_integer(bad: Any) -> None:
    rule = "SESSION-LOSSLESS-JSON.2" if bad == MAX_SAFE_INTEGER + 1 else "SESSION-EVENT-ENVELOPE.3"
    seed_rejects([ev("turn/start", bad, {})], rule, 0)
    with pytest.raises(SpecViolation) as info:
        parse_event({"type": "turn/start", "time": 0, "data": {}}, 0)
    assert info.value.rule == "SESSION-EVENT-ENVELOPE.3"


@pytest.mark.parametrize("bad", [1.5, "0", None, True])
def test_time_must_be_a_safe_integer(bad: Any) -> None:
    seed_rejects([{"type": "turn/start", "seq": 0, "time": bad, "data": {}}], "SESSION-EVENT-ENVELOPE.4", 0)
    seed_rejects([{"type": "turn/start", "seq": 0, "data": {}}], "SESSION-EVENT-ENVELOPE.4", 0)


def test_time_may_be_negative_and_decreasing() -> None:
    seed = [{"type": "turn/start", "seq": 0, "time": 5, "data": {}}, {"type": "turn/end", "seq": 1, "time": -5, "data": None}]
    session = Session.create("s", seed=seed, clock=lambda: 1)
    assert [e.time for e in session.events] == [5, -5, 1]


def test_data_must_be_present_and_null_is_kept() -> None:
    seed_rejects([{"type": "turn/start", "seq": 0, "time": 0}], "SESSION-EVENT-ENVELOPE.5", 0)
    session = new_session()
    rejects(session, "SESSION-EVENT-ENVELOPE.5", lambda: session.append_request({"type": "turn/start"}))
    assert session.append("x/null", None).data is None
    assert Session.create("s", seed=[ev("x/null", 0, None)]).events[0].to_json() == ev("x/null", 0, None)


@pytest.mark.parametrize("bad", [False, "yes", 1, None])
def test_ignorable_is_absent_or_exactly_true(bad: Any) -> None:
    seed_rejects([ev("x/audit", 0, {}, ignorable=bad)], "SESSION-EVENT-ENVELOPE.6", 0)
    session = new_session()
    rejects(session, "SESSION-EVENT-ENVELOPE.6",
            lambda: session.append_request({"type": "x/audit", "data": {}, "ignorable": bad}))
    if bad is not False:
        rejects(session, "SESSION-EVENT-ENVELOPE.6", lambda: session.append("x/audit", {}, ignorable=bad))


def test_only_log_only_events_may_be_ignorable() -> None:
    session = new_session()
    rejects(session, "SESSION-EVENT-ENVELOPE.7",
            lambda: session.append("user/message", user("u2"), surface_op="append", ignorable=True))
    seed = [ev("user/message", 0, user(), surfaceOp="append", ignorable=True)]
    seed_rejects(seed, "SESSION-EVENT-ENVELOPE.7", 0)
    kept = session.append("x/audit", {"a": 1}, ignorable=True)
    assert kept.ignorable is True and kept.to_json()["ignorable"] is True
    assert Session.create("r", seed=session.events).events[kept.seq] == kept


def test_an_accepted_envelope_is_kept_exactly() -> None:
    seed = [
        ev("turn/start", 0, {"turn": 1}),
        ev("user/message", 1, user(), surfaceOp="append"),
        ev("assistant/chunk", 2, {"chunk": {"type": "text-delta"}}),
        ev("assistant/message", 3, assistant(), sourceEventSeqs=[2], surfaceOp="append"),
        ev("x/audit", 4, None, ignorable=True),
        ev("user/message", 5, user("u2"), sourceEventSeqs=[1, 3], surfaceOp={"op": "replace", "start": 1, "end": 3}),
    ]
    session = Session.create("s", seed=seed, clock=lambda: 1)
    assert [e.to_json() for e in session.events[:-1]] == seed
    assert [list(e.to_json()) for e in session.events[:-1]] == [list(e) for e in seed]  # canonical key order


# --- core events -------------------------------------------------------------------------------


@pytest.mark.parametrize("data", [{"x": 1}, None, [], "", 0])
def test_end_seed_carries_the_empty_object(data: Any) -> None:
    seed_rejects([ev("session/end-seed", 0, data)], "SESSION-CORE-EVENTS.1", 0)


@pytest.mark.parametrize("retired", ["request/header-delta", "mode/set"])
def test_retired_types_are_refused(retired: str) -> None:
    both_reject(retired, {"mode": "x"}, "SESSION-CORE-EVENTS.2")


# --- message shapes ----------------------------------------------------------------------------


def _with(data: dict[str, Any], path: list[Any], value: Any) -> dict[str, Any]:
    out = copy.deepcopy(data)
    node: Any = out
    for key in path[:-1]:
        node = node[key]
    if value is _DELETE:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return out


_DELETE = object()

SHAPE_CASES = [
    ("user/message", None, "SESSION-MESSAGE-SHAPE.1"),
    ("user/message", _with(user(), ["id"], _DELETE), "SESSION-MESSAGE-SHAPE.1"),
    ("user/message", _with(user(), ["id"], ""), "SESSION-MESSAGE-SHAPE.1"),
    ("user/message", _with(user(), ["id"], 3), "SESSION-MESSAGE-SHAPE.1"),
    ("assistant/message", {"turn": 1}, "SESSION-MESSAGE-SHAPE.1"),
    ("assistant/message", {"turn": 1, "message": None}, "SESSION-MESSAGE-SHAPE.1"),
    ("tool/result", {"message": "text"}, "SESSION-MESSAGE-SHAPE.1"),
    ("user/message", _with(user(), ["role"], "assistant"), "SESSION-MESSAGE-SHAPE.2"),
    ("user/message", _with(user(), ["role"], _DELETE), "SESSION-MESSAGE-SHAPE.2"),
    ("assistant/message", _with(assistant(), ["message", "role"], "user"), "SESSION-MESSAGE-SHAPE.2"),
    ("tool/result", _with(tool_result(), ["message", "role"], "tool"), "SESSION-MESSAGE-SHAPE.2"),
    ("user/message", _with(user(), ["source"], _DELETE), "SESSION-MESSAGE-SHAPE.3"),
    ("user/message", _with(user(), ["source"], "user"), "SESSION-MESSAGE-SHAPE.3"),
    ("user/message", _with(user(), ["source", "kind"], ""), "SESSION-MESSAGE-SHAPE.3"),
    ("user/message", _with(user(), ["content"], "hi"), "SESSION-MESSAGE-SHAPE.4"),
    ("user/message", _with(user(), ["content"], _DELETE), "SESSION-MESSAGE-SHAPE.4"),
    ("assistant/message", _with(assistant(), ["message", "content"], None), "SESSION-MESSAGE-SHAPE.4"),
    ("assistant/message", _with(assistant(), ["message", "source", "kind"], "user"), "SESSION-MESSAGE-SHAPE.5"),
    ("assistant/message", _with(assistant(), ["message", "source", "model"], _DELETE), "SESSION-MESSAGE-SHAPE.5"),
    ("assistant/message", _with(assistant(), ["message", "source", "provider"], ""), "SESSION-MESSAGE-SHAPE.5"),
    ("tool/result", _with(tool_result(), ["message", "source", "kind"], "user"), "SESSION-MESSAGE-SHAPE.6"),
    ("tool/result", _with(tool_result(), ["message", "source", "callId"], ""), "SESSION-MESSAGE-SHAPE.6"),
    ("tool/result", _with(tool_result(), ["message", "content"], []), "SESSION-MESSAGE-SHAPE.7"),
    ("tool/result", _with(tool_result(), ["message", "content"], tool_result()["message"]["content"] * 2),
     "SESSION-MESSAGE-SHAPE.7"),
    ("tool/result", _with(tool_result(), ["message", "content", 0, "type"], "text"), "SESSION-MESSAGE-SHAPE.7"),
    ("tool/result", _with(tool_result(), ["message", "content", 0, "content"], "x"), "SESSION-MESSAGE-SHAPE.7"),
    ("tool/result", _with(tool_result(), ["message", "content", 0, "toolCallId"], "c2"), "SESSION-MESSAGE-SHAPE.8"),
    ("tool/result", _with(tool_result(), ["message", "content", 0, "toolCallId"], _DELETE), "SESSION-MESSAGE-SHAPE.8"),
]


@pytest.mark.parametrize(("event_type", "data", "rule"), SHAPE_CASES)
def test_message_shapes_are_checked_on_append_and_seed(event_type: str, data: Any, rule: str) -> None:
    both_reject(event_type, data, rule, surface_op="append")


def test_accepted_message_shapes_are_kept_exactly() -> None:
    plugin_user = {"id": "p1", "role": "user", "source": {"kind": "plugin", "plugin": "compaction", "x": [1]},
                   "content": [{"type": "plugin-block", "payload": {"deep": [None, True]}}], "extra": 1}
    empty = {"id": "u0", "role": "user", "source": {"kind": "user"}, "content": []}
    cases = [("user/message", plugin_user), ("user/message", empty), ("assistant/message", assistant()),
             ("assistant/message", assistant("a2", [])), ("tool/result", tool_result()),
             ("tool/result", _with(tool_result(), ["message", "content", 0, "isError"], True))]
    session = new_session()
    for event_type, data in cases:
        event = session.append(event_type, data, surface_op="append")
        assert event.to_json()["data"] == data
    replay = Session.create("r", seed=session.events)
    assert [e.to_json() for e in replay.events[: session.seq]] == [e.to_json() for e in session.events]


# --- request headers ---------------------------------------------------------------------------

HEADER_CASES = [
    ({"header": {"config": {"provider": "deepseek"}}}, "SESSION-REQUEST-HEADER.1"),
    ({"header": {"config": {"model": "m"}}}, "SESSION-REQUEST-HEADER.1"),
    ({"header": {"config": {"provider": "", "model": "m"}}}, "SESSION-REQUEST-HEADER.1"),
    ({"header": "deepseek"}, "SESSION-REQUEST-HEADER.1"),
    ({"header": {}}, "SESSION-REQUEST-HEADER.1"),
    (None, "SESSION-REQUEST-HEADER.1"),
    ({"header": {"config": {"provider": "deepseek"}}, "reason": "fallback"}, "SESSION-REQUEST-HEADER.1"),
    (request_header(reasoningEffort=""), "SESSION-REQUEST-HEADER.2"),
    (request_header(reasoningEffort=None), "SESSION-REQUEST-HEADER.2"),
    (request_header(reasoningEffort=3), "SESSION-REQUEST-HEADER.2"),
    ({**request_header(), "header": {**request_header()["header"], "adapterDefaults": {"maxTokens": True}}},
     "SESSION-REQUEST-HEADER.3"),
    ({**request_header(maxTokens=10), "header": {**request_header(maxTokens=10)["header"],
                                                 "adapterDefaults": {"maxTokens": 1}}}, "SESSION-REQUEST-HEADER.3"),
    ({**request_header(), "header": {**request_header()["header"], "adapterDefaults": {"temperature": True}}},
     "SESSION-REQUEST-HEADER.3"),
    ({**request_header(), "header": {**request_header()["header"], "adapterDefaults": []}}, "SESSION-REQUEST-HEADER.3"),
    ({**request_header(), "reason": "fallback"}, "SESSION-REQUEST-HEADER.4"),
]


@pytest.mark.parametrize(("data", "rule"), HEADER_CASES)
def test_request_headers_are_checked_on_append_and_seed(data: Any, rule: str) -> None:
    both_reject("request/header", data, rule)


def test_accepted_request_headers_are_kept_exactly() -> None:
    full = request_header(reasoningEffort="high", maxTokens=100, temperature=0.5, stop=["x"])
    full["header"].update({"adapterDefaults": {"reasoningEffort": True, "maxTokens": True}, "system": "be brief",
                           "tools": [{"name": "read"}]})
    cases = [request_header(), full, {**request_header(), "reason": "model-switch"},
             {"header": {"config": {"provider": "p", "model": "m"}, "adapterDefaults": {}}}]
    session = new_session()
    for data in cases:
        assert session.append("request/header", data).to_json()["data"] == data
    Session.create("r", seed=session.events)


# --- the session header ------------------------------------------------------------------------


def base_header(**fields: Any) -> dict[str, Any]:
    return {"version": 0, "id": "s", "createdAt": 1_700_000_000_000, **fields}


HEADER_RULES = [
    ([], "SESSION-FORMAT-HEADER.1"),
    ("header", "SESSION-FORMAT-HEADER.1"),
    (base_header(version=1), "SESSION-FORMAT-HEADER.2"),
    (base_header(version="0"), "SESSION-FORMAT-HEADER.2"),
    (base_header(version=False), "SESSION-FORMAT-HEADER.2"),
    (base_header(version=0.0), "SESSION-FORMAT-HEADER.2"),
    ({"id": "s", "createdAt": 0}, "SESSION-FORMAT-HEADER.2"),
    (base_header(id="other"), "SESSION-FORMAT-HEADER.3"),
    ({"version": 0, "createdAt": 0}, "SESSION-FORMAT-HEADER.3"),
    (base_header(createdAt=-1), "SESSION-FORMAT-HEADER.4"),
    (base_header(createdAt=1.0), "SESSION-FORMAT-HEADER.4"),
    (base_header(createdAt=True), "SESSION-FORMAT-HEADER.4"),
    ({"version": 0, "id": "s"}, "SESSION-FORMAT-HEADER.4"),
    (base_header(cwd="relative/dir"), "SESSION-FORMAT-HEADER.5"),
    (base_header(cwd="C:\\work"), "SESSION-FORMAT-HEADER.5"),
    (base_header(cwd=None), "SESSION-FORMAT-HEADER.5"),
    (base_header(parentSession=""), "SESSION-FORMAT-HEADER.6"),
    (base_header(parentSession=3), "SESSION-FORMAT-HEADER.6"),
    (base_header(seedLength=-1), "SESSION-FORMAT-HEADER.7"),
    (base_header(seedLength="3"), "SESSION-FORMAT-HEADER.7"),
    (base_header(origin="user"), "SESSION-FORMAT-HEADER.8"),
    (base_header(origin=None), "SESSION-FORMAT-HEADER.8"),
    (base_header(delegationDepth=True), "SESSION-FORMAT-HEADER.9"),
    (base_header(delegationDepth=-1), "SESSION-FORMAT-HEADER.9"),
    (base_header(agentPreset=3), "SESSION-FORMAT-HEADER.10"),
    (base_header(agentPreset=None), "SESSION-FORMAT-HEADER.10"),
    (base_header(title="x"), "SESSION-FORMAT-HEADER.11"),
    (base_header(meta={}), "SESSION-FORMAT-HEADER.11"),
]


@pytest.mark.parametrize(("header", "rule"), HEADER_RULES)
def test_session_header_rules(header: Any, rule: str) -> None:
    before = copy.deepcopy(header)
    with pytest.raises(SpecViolation) as info:
        Session.create("s", header=header)
    assert info.value.rule == rule and info.value.kind is RULES[rule].kind
    assert header == before
    with pytest.raises(SpecViolation) as seeded:
        Session.create("s", seed=[], header=header)
    assert seeded.value.rule == rule


def test_header_version_failure_has_kind_version() -> None:
    with pytest.raises(SpecViolation) as info:
        Session.create("s", header=base_header(version=1))
    assert info.value.kind.value == "version"


def test_header_with_non_json_value_fails_with_its_json_rule() -> None:
    with pytest.raises(SpecViolation) as info:
        Session.create("s", header=base_header(agentPreset=("a",)))
    assert info.value.rule == "SESSION-LOSSLESS-JSON.1"


@pytest.mark.parametrize("session_id", ["", None, 3])
def test_session_id_is_a_non_empty_string(session_id: Any) -> None:
    with pytest.raises(SpecViolation) as info:
        Session.create(session_id)
    assert info.value.rule == "SESSION-FORMAT-HEADER.3"


def test_default_and_full_headers_are_kept_exactly() -> None:
    session = Session.create("s", clock=lambda: 42)
    assert thaw(session.header) == {"version": SESSION_FORMAT_VERSION, "id": "s", "createdAt": 42}
    full = base_header(cwd="/work", parentSession="p", seedLength=3, origin="subagent", delegationDepth=2,
                       agentPreset="")
    assert list(full) == list(HEADER_KEYS)
    kept = Session.create("s", header=full)
    assert thaw(kept.header) == full and header_to_json(kept.header) == full
    assert list(header_to_json(kept.header)) == list(HEADER_KEYS)


def test_event_equality_is_json_equality_of_data() -> None:
    """A `true` and a `1` are different logged facts, though Python says `True == 1`."""
    one = Session.create("a", seed=[ev("x/flag", 0, {"on": True})]).events[0]
    other = Session.create("b", seed=[ev("x/flag", 0, {"on": 1})]).events[0]
    same = Session.create("c", seed=[ev("x/flag", 0, {"on": True})]).events[0]
    assert one != other and one == same and hash(one) == hash(same)
