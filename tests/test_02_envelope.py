"""spec/02-envelope.md: envelope, core events, message shapes, request headers and the session header."""

from __future__ import annotations

import copy
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from nearmisses import FOREIGN, NEAR_MISSES, json_or_foreign, outcome
from sessionspec.envelope import Event, Replace, parse_event
from sessionspec.errors import SpecViolation
from sessionspec.header import HEADER_KEYS, SESSION_FORMAT_VERSION, header_to_json
from sessionspec.jsonvalue import MAX_SAFE_INTEGER, FrozenDict, FrozenList, snapshot, thaw
from sessionspec.rules import RULES
from sessionspec.testing import strategies as gen
from sessionspec.testing.builders import (
    CONFIG,
    REMOVED,
    assistant_message,
    envelope,
    replace_op,
    request_header,
    tool_result,
    user_message,
    with_change,
)
from sessionspec.testing.implementations import SessionFactory, factory
from support import rejects, seed_rejects

SOURCE = ["message", "source"]
BLOCK = ["message", "content", 0]
"""Paths to the message source of an assistant message or tool result, and to a tool result's one block."""


def new_session(create: SessionFactory) -> Any:
    """Seqs 0 (turn/start) and 1 (a user message)."""
    session = create("s", clock=lambda: 7)
    session.append("turn/start", {"turn": 1})
    session.append("user/message", user_message(), surface_op="append")
    return session


def both_reject(create: SessionFactory, event_type: str, data: Any, rule: str, **surface: Any) -> None:
    """Decision 1: the same event is rejected by append and by seeding, with the same rule."""
    session = new_session(create)
    op = surface.get("surface_op")
    sources = surface.get("source_event_seqs")
    rejects(session, rule, lambda: session.append(event_type, data, surface_op=op, source_event_seqs=sources))
    fields: dict[str, Any] = {}
    if op is not None:
        fields["surfaceOp"] = op
    if sources is not None:
        fields["sourceEventSeqs"] = sources
    seed = [e.to_json() for e in session.events] + [envelope(event_type, session.seq, data, **fields)]
    seed_rejects(create, seed, rule, session.seq)


# --- the envelope ------------------------------------------------------------------------------


def test_an_append_request_that_is_not_an_object_is_refused_by_envelope_1(implementation: str) -> None:
    """The Python API (no SCP line can carry a list as the request): a list or a string is refused by the
    envelope rule, never an AttributeError, and the session is unchanged (issue 34)."""
    session = new_session(factory(implementation))
    for request in ([], "x/y", None):
        rejects(session, "SESSION-EVENT-ENVELOPE.1", lambda request=request: session.append_request(request))


def test_envelope_unknown_key_is_rejected_in_seed_and_request(create: SessionFactory) -> None:
    seed_rejects(create, [envelope("turn/start", 0, {}, extra=1)], "SESSION-EVENT-ENVELOPE.1", 0)
    seed_rejects(create, [[envelope("turn/start", 0, {})]], "SESSION-EVENT-ENVELOPE.1", 0)
    seed_rejects(create, ["turn/start"], "SESSION-EVENT-ENVELOPE.1", 0)
    session = new_session(create)
    rejects(session, "SESSION-EVENT-ENVELOPE.1", lambda: session.append_request({"type": "x/y", "data": {}, "seq": 3}))
    rejects(session, "SESSION-EVENT-ENVELOPE.1", lambda: session.append_request({"type": "x/y", "data": {}, "intent": {}}))


@pytest.mark.parametrize(("bad", "rule"), [("", "SESSION-EVENT-ENVELOPE.8"), (None, "SESSION-EVENT-ENVELOPE.2"),
                                           (1, "SESSION-EVENT-ENVELOPE.2"), (True, "SESSION-EVENT-ENVELOPE.2"),
                                           (["turn/start"], "SESSION-EVENT-ENVELOPE.2")])
def test_type_must_be_a_string_and_not_empty(create: SessionFactory, bad: Any, rule: str) -> None:
    session = new_session(create)
    rejects(session, rule, lambda: session.append(bad, {}))
    rejects(session, rule, lambda: session.append_request({"type": bad, "data": {}}))
    seed_rejects(create, [envelope(bad, 0, {})], rule, 0)
    seed_rejects(create, [{"seq": 0, "time": 0, "data": {}}], "SESSION-EVENT-ENVELOPE.2", 0)


def test_open_vocabulary_types_are_kept(create: SessionFactory) -> None:
    session = new_session(create)
    event = session.append("x/custom-plugin", {"k": [1]})
    assert event.type == "x/custom-plugin" and event.data == {"k": [1]}


@pytest.mark.parametrize("bad", [-1, True, 1.0, "0", None, MAX_SAFE_INTEGER + 1])
def test_seq_must_be_a_non_negative_safe_integer(create: SessionFactory, bad: Any) -> None:
    rule = "SESSION-LOSSLESS-JSON.2" if bad == MAX_SAFE_INTEGER + 1 else "SESSION-EVENT-ENVELOPE.3"
    seed_rejects(create, [envelope("turn/start", bad, {})], rule, 0)
    with pytest.raises(SpecViolation) as info:
        parse_event({"type": "turn/start", "time": 0, "data": {}}, 0)
    assert info.value.rule == "SESSION-EVENT-ENVELOPE.3"


@pytest.mark.parametrize("bad", [1.5, "0", None, True])
def test_time_must_be_a_safe_integer(create: SessionFactory, bad: Any) -> None:
    seed_rejects(create, [{"type": "turn/start", "seq": 0, "time": bad, "data": {}}], "SESSION-EVENT-ENVELOPE.4", 0)
    seed_rejects(create, [{"type": "turn/start", "seq": 0, "data": {}}], "SESSION-EVENT-ENVELOPE.4", 0)


def test_time_may_be_negative_and_decreasing(create: SessionFactory) -> None:
    seed = [{"type": "turn/start", "seq": 0, "time": 5, "data": {}}, {"type": "turn/end", "seq": 1, "time": -5, "data": None}]
    session = create("s", seed=seed, clock=lambda: 1)
    assert [e.time for e in session.events] == [5, -5, 1]


def test_data_must_be_present_and_null_is_kept(create: SessionFactory) -> None:
    seed_rejects(create, [{"type": "turn/start", "seq": 0, "time": 0}], "SESSION-EVENT-ENVELOPE.5", 0)
    session = new_session(create)
    rejects(session, "SESSION-EVENT-ENVELOPE.5", lambda: session.append_request({"type": "turn/start"}))
    assert session.append("x/null", None).data is None
    assert create("s", seed=[envelope("x/null", 0, None)]).events[0].to_json() == envelope("x/null", 0, None)


@pytest.mark.parametrize("bad", [False, "yes", 1, None])
def test_ignorable_is_absent_or_exactly_true(create: SessionFactory, bad: Any) -> None:
    seed_rejects(create, [envelope("x/audit", 0, {}, ignorable=bad)], "SESSION-EVENT-ENVELOPE.6", 0)
    session = new_session(create)
    rejects(session, "SESSION-EVENT-ENVELOPE.6",
            lambda: session.append_request({"type": "x/audit", "data": {}, "ignorable": bad}))
    if bad is not False:
        rejects(session, "SESSION-EVENT-ENVELOPE.6", lambda: session.append("x/audit", {}, ignorable=bad))


def test_only_log_only_events_may_be_ignorable(create: SessionFactory) -> None:
    session = new_session(create)
    rejects(session, "SESSION-EVENT-ENVELOPE.7",
            lambda: session.append("user/message", user_message("u2"), surface_op="append", ignorable=True))
    seed = [envelope("user/message", 0, user_message(), surfaceOp="append", ignorable=True)]
    seed_rejects(create, seed, "SESSION-EVENT-ENVELOPE.7", 0)
    kept = session.append("x/audit", {"a": 1}, ignorable=True)
    assert kept.ignorable is True and kept.to_json()["ignorable"] is True
    assert create("r", seed=session.events).events[kept.seq] == kept


def test_an_accepted_envelope_is_kept_exactly(create: SessionFactory) -> None:
    seed = [
        envelope("turn/start", 0, {"turn": 1}),
        envelope("user/message", 1, user_message(), surfaceOp="append"),
        envelope("assistant/chunk", 2, {"chunk": {"type": "text-delta"}}),
        envelope("assistant/message", 3, assistant_message(), sourceEventSeqs=[2], surfaceOp="append"),
        envelope("x/audit", 4, None, ignorable=True),
        envelope("user/message", 5, user_message("u2"), sourceEventSeqs=[1, 3], surfaceOp=replace_op(1, 3)),
    ]
    session = create("s", seed=seed, clock=lambda: 1)
    assert [e.to_json() for e in session.events[:-1]] == seed
    assert [list(e.to_json()) for e in session.events[:-1]] == [list(e) for e in seed]  # canonical key order


# --- core events -------------------------------------------------------------------------------


@pytest.mark.parametrize("data", [{"x": 1}, None, [], "", 0])
def test_end_seed_carries_the_empty_object(create: SessionFactory, data: Any) -> None:
    seed_rejects(create, [envelope("session/end-seed", 0, data)], "SESSION-CORE-EVENTS.1", 0)


@pytest.mark.parametrize("retired", ["request/header-delta", "mode/set"])
def test_retired_types_are_refused(create: SessionFactory, retired: str) -> None:
    both_reject(create, retired, {"mode": "x"}, "SESSION-CORE-EVENTS.2")


# --- message shapes ----------------------------------------------------------------------------


SHAPE_CASES = [
    ("user/message", None, "SESSION-MESSAGE-SHAPE.9"),
    ("user/message", "hi", "SESSION-MESSAGE-SHAPE.9"),
    ("user/message", with_change(user_message(), ["id"], REMOVED), "SESSION-MESSAGE-SHAPE.1"),
    ("user/message", with_change(user_message(), ["id"], ""), "SESSION-MESSAGE-SHAPE.1"),
    ("user/message", with_change(user_message(), ["id"], 3), "SESSION-MESSAGE-SHAPE.1"),
    ("assistant/message", {"turn": 1}, "SESSION-MESSAGE-SHAPE.9"),
    ("assistant/message", {"turn": 1, "message": None}, "SESSION-MESSAGE-SHAPE.9"),
    ("assistant/message", [], "SESSION-MESSAGE-SHAPE.9"),
    ("tool/result", {"message": "text"}, "SESSION-MESSAGE-SHAPE.9"),
    ("tool/result", {"turn": 1}, "SESSION-MESSAGE-SHAPE.9"),
    ("assistant/message", with_change(assistant_message(), ["message", "id"], REMOVED), "SESSION-MESSAGE-SHAPE.1"),
    ("user/message", with_change(user_message(), ["role"], "assistant"), "SESSION-MESSAGE-SHAPE.2"),
    ("user/message", with_change(user_message(), ["role"], REMOVED), "SESSION-MESSAGE-SHAPE.2"),
    ("assistant/message", with_change(assistant_message(), ["message", "role"], "user"), "SESSION-MESSAGE-SHAPE.2"),
    ("tool/result", with_change(tool_result(), ["message", "role"], "tool"), "SESSION-MESSAGE-SHAPE.2"),
    ("user/message", with_change(user_message(), ["source"], REMOVED), "SESSION-MESSAGE-SHAPE.3"),
    ("user/message", with_change(user_message(), ["source"], "user"), "SESSION-MESSAGE-SHAPE.3"),
    ("user/message", with_change(user_message(), ["source", "kind"], ""), "SESSION-MESSAGE-SHAPE.3"),
    ("user/message", with_change(user_message(), ["content"], "hi"), "SESSION-MESSAGE-SHAPE.4"),
    ("user/message", with_change(user_message(), ["content"], REMOVED), "SESSION-MESSAGE-SHAPE.4"),
    ("assistant/message", with_change(assistant_message(), ["message", "content"], None), "SESSION-MESSAGE-SHAPE.4"),
    ("assistant/message", with_change(assistant_message(), [*SOURCE, "kind"], "user"), "SESSION-MESSAGE-SHAPE.5"),
    ("assistant/message", with_change(assistant_message(), [*SOURCE, "model"], REMOVED), "SESSION-MESSAGE-SHAPE.5"),
    ("assistant/message", with_change(assistant_message(), [*SOURCE, "provider"], ""), "SESSION-MESSAGE-SHAPE.5"),
    ("tool/result", with_change(tool_result(), [*SOURCE, "kind"], "user"), "SESSION-MESSAGE-SHAPE.6"),
    ("tool/result", with_change(tool_result(), [*SOURCE, "callId"], ""), "SESSION-MESSAGE-SHAPE.6"),
    ("tool/result", with_change(tool_result(), ["message", "content"], []), "SESSION-MESSAGE-SHAPE.7"),
    ("tool/result", with_change(tool_result(), ["message", "content"], tool_result()["message"]["content"] * 2),
     "SESSION-MESSAGE-SHAPE.7"),
    ("tool/result", with_change(tool_result(), [*BLOCK, "type"], "text"), "SESSION-MESSAGE-SHAPE.7"),
    ("tool/result", with_change(tool_result(), [*BLOCK, "content"], "x"), "SESSION-MESSAGE-SHAPE.7"),
    ("tool/result", with_change(tool_result(), [*BLOCK, "toolCallId"], "c2"), "SESSION-MESSAGE-SHAPE.8"),
    ("tool/result", with_change(tool_result(), [*BLOCK, "toolCallId"], REMOVED), "SESSION-MESSAGE-SHAPE.8"),
]


@pytest.mark.parametrize(("event_type", "data", "rule"), SHAPE_CASES)
def test_message_shapes_are_checked_on_append_and_seed(create: SessionFactory, event_type: str, data: Any,
                                                        rule: str) -> None:
    both_reject(create, event_type, data, rule, surface_op="append")


FIELD_NAMES = [
    ("user/message", with_change(user_message(), ["id"], REMOVED), "data.id is missing"),
    ("user/message", with_change(user_message(), ["id"], ""), "data.id must be a non-empty string, not an empty string"),
    ("user/message", [1], "data is an array, not an object"),
    ("assistant/message", {"turn": 1}, "data.message is missing"),
    ("user/message", with_change(user_message(), ["role"], "assistant"), "data.role must be 'user', not 'assistant'"),
    ("user/message", with_change(user_message(), ["source"], "user"), "data.source must be an object, not 'user'"),
    ("user/message", with_change(user_message(), ["content"], REMOVED), "data.content is missing"),
    ("assistant/message", with_change(assistant_message(), [*SOURCE, "model"], REMOVED), "data.message.source.model is missing"),
    ("tool/result", with_change(tool_result(), [*SOURCE, "callId"], ""), "data.message.source.callId must be"),
    ("tool/result", with_change(tool_result(), [*BLOCK, "toolCallId"], "c2"), "data.message.content[0].toolCallId must equal"),
    ("request/header", {"header": {"config": {"provider": "deepseek"}}}, "data.header.config.model is missing"),
    ("request/header", request_header({**CONFIG, "reasoningEffort": 3}), "data.header.config.reasoningEffort must be"),
]


@pytest.mark.parametrize(("event_type", "data", "words"), FIELD_NAMES)
def test_a_refused_payload_names_the_field_it_found_wrong(create: SessionFactory, event_type: str, data: Any,
                                                          words: str) -> None:
    """Issue 17: `data.message.id is missing`, not "lacks an identified message", on every implementation."""
    session = new_session(create)
    with pytest.raises(SpecViolation) as info:
        session.append(event_type, data, surface_op="append" if event_type != "request/header" else None)
    assert words in str(info.value), str(info.value)


def test_accepted_message_shapes_are_kept_exactly(create: SessionFactory) -> None:
    plugin_user = {"id": "p1", "role": "user", "source": {"kind": "plugin", "plugin": "compaction", "x": [1]},
                   "content": [{"type": "plugin-block", "payload": {"deep": [None, True]}}], "extra": 1}
    empty = with_change(user_message("u0"), ["content"], [])
    cases = [("user/message", plugin_user), ("user/message", empty), ("assistant/message", assistant_message()),
             ("assistant/message", assistant_message("a2", [])), ("tool/result", tool_result()),
             ("tool/result", with_change(tool_result(), ["message", "content", 0, "isError"], True))]
    session = new_session(create)
    for event_type, data in cases:
        event = session.append(event_type, data, surface_op="append")
        assert event.to_json()["data"] == data
    replay = create("r", seed=session.events)
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
    (request_header({**CONFIG, "reasoningEffort": ""}), "SESSION-REQUEST-HEADER.2"),
    (request_header({**CONFIG, "reasoningEffort": None}), "SESSION-REQUEST-HEADER.2"),
    (request_header({**CONFIG, "reasoningEffort": 3}), "SESSION-REQUEST-HEADER.2"),
    (request_header(adapterDefaults={"maxTokens": True}), "SESSION-REQUEST-HEADER.3"),
    (request_header({**CONFIG, "maxTokens": 10}, adapterDefaults={"maxTokens": 1}), "SESSION-REQUEST-HEADER.3"),
    (request_header(adapterDefaults={"temperature": True}), "SESSION-REQUEST-HEADER.3"),
    (request_header(adapterDefaults=[]), "SESSION-REQUEST-HEADER.3"),
    (request_header(reason="fallback"), "SESSION-REQUEST-HEADER.4"),
]


@pytest.mark.parametrize(("data", "rule"), HEADER_CASES)
def test_request_headers_are_checked_on_append_and_seed(create: SessionFactory, data: Any, rule: str) -> None:
    both_reject(create, "request/header", data, rule)


def test_accepted_request_headers_are_kept_exactly(create: SessionFactory) -> None:
    full = request_header({**CONFIG, "reasoningEffort": "high", "maxTokens": 100, "temperature": 0.5, "stop": ["x"]},
                          adapterDefaults={"reasoningEffort": True, "maxTokens": True}, system="be brief",
                          tools=[{"name": "read"}])
    cases = [request_header(), full, request_header(reason="model-switch"),
             {"header": {"config": {"provider": "p", "model": "m"}, "adapterDefaults": {}}}]
    session = new_session(create)
    for data in cases:
        assert session.append("request/header", data).to_json()["data"] == data
    create("r", seed=session.events)


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
    (base_header(parentSession=""), "SESSION-FORMAT-HEADER.12"),
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
def test_session_header_rules(create: SessionFactory, header: Any, rule: str) -> None:
    before = copy.deepcopy(header)
    with pytest.raises(SpecViolation) as info:
        create("s", header=header)
    assert info.value.rule == rule and info.value.kind is RULES[rule].kind
    assert header == before
    with pytest.raises(SpecViolation) as seeded:
        create("s", seed=[], header=header)
    assert seeded.value.rule == rule


def test_header_version_failure_has_kind_version(create: SessionFactory) -> None:
    with pytest.raises(SpecViolation) as info:
        create("s", header=base_header(version=1))
    assert info.value.kind.value == "version"


def test_header_with_non_json_value_fails_with_its_json_rule(create: SessionFactory) -> None:
    with pytest.raises(SpecViolation) as info:
        create("s", header=base_header(agentPreset=("a",)))
    assert info.value.rule == "SESSION-LOSSLESS-JSON.1"


@pytest.mark.parametrize("session_id", ["", None, 3])
def test_session_id_is_a_non_empty_string(create: SessionFactory, session_id: Any) -> None:
    with pytest.raises(SpecViolation) as info:
        create(session_id)
    assert info.value.rule == "SESSION-FORMAT-HEADER.3"


def test_default_and_full_headers_are_kept_exactly(create: SessionFactory) -> None:
    session = create("s", clock=lambda: 42)
    assert thaw(session.header) == {"version": SESSION_FORMAT_VERSION, "id": "s", "createdAt": 42}
    full = base_header(cwd="/work", parentSession="p", seedLength=3, origin="subagent", delegationDepth=2,
                       agentPreset="")
    assert list(full) == list(HEADER_KEYS)
    kept = create("s", header=full)
    assert thaw(kept.header) == full and header_to_json(kept.header) == full
    assert list(header_to_json(kept.header)) == list(HEADER_KEYS)


def test_event_equality_is_json_equality_of_data(create: SessionFactory) -> None:
    """A `true` and a `1` are different logged facts, though Python says `True == 1`."""
    one = create("a", seed=[envelope("x/flag", 0, {"on": True})]).events[0]
    other = create("b", seed=[envelope("x/flag", 0, {"on": 1})]).events[0]
    same = create("c", seed=[envelope("x/flag", 0, {"on": True})]).events[0]
    assert one != other and one == same and hash(one) == hash(same)


# --- an Event given where an envelope is read (a seed of another session's events, a log the load gate built) ----

_OPS = st.sampled_from([None, "append", "replace", "", Replace(0, 0), Replace(1, 0), Replace(-1, 0), Replace(True, 0),
                        Replace(2**53, 0), Replace(1.0, 0), Replace(0, math.nan)])
_TYPES = st.sampled_from(["user/message", "tool/result", "turn/start", "mode/set", "x/plugin", "", "session/end-seed",
                          "steering/message", "text-chunks", None, 1, ("t",)])
_SCALARS = st.one_of(st.integers(-2, 3), st.sampled_from(NEAR_MISSES + FOREIGN))


@settings(max_examples=400, deadline=None)
@given(_TYPES, _SCALARS, _SCALARS, st.one_of(gen.json_values.map(snapshot), json_or_foreign(st.sampled_from(NEAR_MISSES + FOREIGN))),
       _OPS, st.one_of(st.none(), st.lists(st.integers(-1, 3), max_size=3).map(FrozenList),
                       json_or_foreign(st.sampled_from(NEAR_MISSES + FOREIGN))),
       st.sampled_from([False, True, 0, 1, "yes", None]), st.integers(0, 3))
def test_an_event_is_read_as_its_own_envelope_is(kind: Any, seq: Any, time: Any, data: Any, op: Any, sources: Any,
                                                  ignorable: Any, index: int) -> None:
    """An Event may hold anything (its constructor and the frozen classes' are public): read as itself (no copy,
    `envelope.as_parsed`) or not, it gives the same event, or the same violation, as its JSON envelope."""
    event = Event(kind, seq, time, data, op, sources, ignorable)
    try:
        text = event.to_json()
    except (AttributeError, TypeError) as error:  # a marker or sources of no JSON kind: no envelope to compare with
        with pytest.raises(type(error)):
            parse_event(event, index)
        return
    assert outcome(lambda: parse_event(event, index)) == outcome(lambda: parse_event(text, index))


def test_an_event_as_parsing_builds_it_is_taken_without_a_copy() -> None:
    built = parse_event(envelope("tool/result", 3, tool_result("c1"), surfaceOp=replace_op(1, 2), sourceEventSeqs=[1, 2]), 3)
    again = parse_event(built, 3)
    assert again == built and again.data is built.data and again.source_event_seqs is built.source_event_seqs
    shared = FrozenList([FrozenList([])])
    foreign = Event("x/plugin", 0, 0, FrozenDict({"a": shared, "b": shared}))
    assert parse_event(foreign, 0).data is not foreign.data  # a container met twice: copied, as `snapshot` copies it
