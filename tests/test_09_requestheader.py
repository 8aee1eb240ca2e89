"""spec/09-relational.md, the request header fold: the provider configuration in force."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from sessionspec.envelope import Event
from sessionspec.errors import SpecViolation
from sessionspec.jsonvalue import FrozenDict, snapshot
from sessionspec.requestheader import (
    RequestHeaderFold,
    canonical_header,
    fold_request_context,
    fold_request_header,
    header_equals,
    request_context,
    request_header,
)
from sessionspec.testing import builders
from sessionspec.testing.loops import Loop, agent_loops, append, build

CONFIG = {"provider": "deepseek", "model": "deepseek-chat"}
TOOL = {"name": "read_file", "description": "read", "parameters": {"type": "object", "properties": {}}}


def header_event(seq: int, header: Any, reason: str = "change") -> Event:
    return Event("request/header", seq, 0, snapshot({"header": header, "reason": reason}))


def test_the_canonical_header_drops_empty_optional_fields() -> None:
    # SESSION-REQUEST-HEADER-FOLD.1
    bare = {"config": CONFIG, "system": "", "tools": [], "adapterDefaults": {}}
    assert canonical_header(bare) == {"config": CONFIG}
    full = {"config": {**CONFIG, "maxTokens": 9}, "system": "Be brief.", "tools": [TOOL],
            "adapterDefaults": {"maxTokens": True}}
    assert canonical_header(full) == full
    assert list(canonical_header(full)) == ["config", "adapterDefaults", "system", "tools"]
    assert canonical_header({"config": CONFIG, "adapterDefaults": {"maxTokens": False}}) == {"config": CONFIG}
    with pytest.raises(TypeError):
        canonical_header(full)["system"] = "x"  # type: ignore[index]


def test_header_equality_is_equality_of_canonical_forms() -> None:
    # SESSION-REQUEST-HEADER-FOLD.2
    assert header_equals({"config": CONFIG}, {"config": CONFIG, "tools": [], "system": ""})
    reordered = {"parameters": {"properties": {}, "type": "object"}, "description": "read", "name": "read_file"}
    assert header_equals({"config": CONFIG, "tools": [TOOL]}, {"config": CONFIG, "tools": [reordered]})
    assert not header_equals({"config": CONFIG}, {"config": {**CONFIG, "model": "other"}})
    assert not header_equals({"config": CONFIG}, {"config": {**CONFIG, "stop": []}})
    assert not header_equals({"config": {**CONFIG, "maxTokens": 1}},
                             {"config": {**CONFIG, "maxTokens": 1}, "adapterDefaults": {"maxTokens": True}})
    assert not header_equals({"config": {**CONFIG, "temperature": 1}}, {"config": {**CONFIG, "temperature": True}})


def test_the_header_in_force_is_the_last_snapshot() -> None:
    # SESSION-REQUEST-HEADER-FOLD.3: snapshots replace, never merge; no snapshot gives the base itself.
    events = [header_event(0, {"config": CONFIG, "system": "one"}, "initial"),
              Event("turn/start", 1, 0, snapshot({"turn": 1})),
              header_event(2, {"config": {**CONFIG, "model": "m2"}})]
    assert fold_request_header(events) == {"config": {**CONFIG, "model": "m2"}}
    assert fold_request_header(events[:2]) == {"config": CONFIG, "system": "one"}
    base = FrozenDict({"config": FrozenDict(CONFIG)})
    assert fold_request_header([], base) is base
    assert fold_request_header(events[1:2]) is None


def test_the_fold_refuses_legacy_and_incomplete_headers(implementation: str) -> None:
    # SESSION-REQUEST-HEADER.4 and .1, through the fold (a log read from anywhere, not only a session).
    with pytest.raises(SpecViolation) as caught:
        fold_request_header([header_event(0, {"config": CONFIG}, "fallback")])
    assert caught.value.rule == "SESSION-REQUEST-HEADER.4"
    with pytest.raises(SpecViolation) as caught:
        fold_request_header([header_event(0, {"config": {"provider": "deepseek"}})])
    assert caught.value.rule == "SESSION-REQUEST-HEADER.1"
    with pytest.raises(SpecViolation) as caught:
        build([{"type": "request/header", "data": builders.request_header(CONFIG, reason="fallback")}], implementation)
    assert caught.value.rule == "SESSION-REQUEST-HEADER.4"


def test_the_request_context_in_force_is_the_last_one() -> None:
    # SESSION-REQUEST-HEADER-FOLD.4
    events = [Event("request/context", 0, 0, snapshot({"provider": "a", "model": "b"})),
              Event("request/context", 1, 0, snapshot({"provider": "c", "model": "d", "contextWindow": 8}))]
    assert fold_request_context(events) == {"provider": "c", "model": "d", "contextWindow": 8}
    assert fold_request_context([]) is None


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(loop=agent_loops())
def test_the_incremental_fold_equals_the_recomputed_one(implementation: str, loop: Loop) -> None:
    # SESSION-REQUEST-HEADER-FOLD.3 / .4: what live feeds one event at a time, the model recomputes.
    session = build([], implementation)
    incremental = RequestHeaderFold()
    for request in loop.requests:
        incremental.feed(append(session, request))
        assert incremental.header == fold_request_header(session.events) == session.request_header()
        assert incremental.context == fold_request_context(session.events) == session.request_context()
    assert request_header(session) == incremental.header
    assert request_context(session) == incremental.context
