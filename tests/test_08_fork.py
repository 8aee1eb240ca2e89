"""spec/08-repair.md, fork: a child seeded with a prefix of its parent's log."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sessionspec.envelope import Event
from sessionspec.fork import INVALID_BOUNDARY, OPEN_TURN, ForkError, fork
from sessionspec.jsonvalue import FrozenDict
from sessionspec.surface import fold
from sessionspec.testing.builders import user_message
from sessionspec.testing.implementations import SessionFactory
from sessionspec.testing.loops import Loop, agent_loops, build, ticking_clock

PROPERTY = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])

TURN = [
    {"type": "turn/start", "data": {"turn": 1}},
    {"type": "user/message", "data": user_message("u1", "hi"), "surfaceOp": "append"},
    {"type": "step/start", "data": {"turn": 1, "step": 1}},
    {"type": "step/end", "data": {"turn": 1, "step": 1}},
    {"type": "turn/end", "data": {"turn": 1, "reason": {"kind": "completed"}}},
    {"type": "todo/write", "data": {"todos": []}},
]


def parent(create: SessionFactory, header_extra: dict[str, Any] | None = None) -> Any:
    """One finished turn (seqs 0-4), then a todo/write at seq 5."""
    header = {"version": 0, "id": "p", "createdAt": 5, **(header_extra or {})}
    session = create("p", header=header, clock=ticking_clock())
    for request in TURN:
        session.append(request["type"], request["data"], surface_op=request.get("surfaceOp"))
    return session


def rule_of(call: Any) -> ForkError:
    with pytest.raises(ForkError) as caught:
        call()
    return caught.value


def test_the_child_is_seeded_with_the_prefix_through_the_boundary(create: SessionFactory) -> None:
    # SESSION-FORK.4: default boundary is the last event; seed is inclusive of it.
    source = parent(create)
    child = fork(source, child_id="c", factory=create, clock=lambda: 9)
    assert list(child.events[: len(source.events)]) == list(source.events)
    assert child.events[-1].type == "session/end-seed"
    assert child.first_live_seq == len(source.events)
    at_end = fork(source, 4, child_id="c2", factory=create)
    assert list(at_end.events[:5]) == list(source.events[:5])
    assert at_end.first_live_seq == 5
    # The parent is untouched.
    assert len(source.events) == len(TURN)


def test_the_child_header_records_lineage_and_inherits_only_cwd(create: SessionFactory) -> None:
    # SESSION-FORK.5
    source = parent(create, {"cwd": "/work", "origin": "subagent", "delegationDepth": 2, "agentPreset": "coder"})
    child = fork(source, 4, child_id="c", factory=create, clock=lambda: 9)
    assert child.header == FrozenDict({"version": 0, "id": "c", "createdAt": 9, "cwd": "/work", "parentSession": "p",
                                       "seedLength": 5})
    assert "cwd" not in fork(parent(create), child_id="d", factory=create).header
    assert fork(parent(create), child_id=None, factory=create).id == "p-fork-5"


def test_an_empty_source_forks_to_an_empty_seed(create: SessionFactory) -> None:
    # SESSION-FORK.4
    empty = create("e")
    child = fork(empty, child_id="c", factory=create)
    assert [e.type for e in child.events] == ["session/end-seed"]
    assert child.header["seedLength"] == 0


@pytest.mark.parametrize("boundary", [-1, True, "3", 1.5, 2**53])
def test_the_boundary_is_a_seq(create: SessionFactory, boundary: Any) -> None:
    # SESSION-FORK.1
    error = rule_of(lambda: fork(parent(create), boundary, child_id="c", factory=create))
    assert (error.rule, error.code) == ("SESSION-FORK.1", INVALID_BOUNDARY)


def test_the_boundary_names_an_event_of_the_source(create: SessionFactory) -> None:
    # SESSION-FORK.2
    error = rule_of(lambda: fork(parent(create), 6, child_id="c", factory=create))
    assert (error.rule, error.code) == ("SESSION-FORK.2", INVALID_BOUNDARY)
    assert "last seq: 5" in error.message
    assert "last seq: none" in rule_of(lambda: fork(create("e"), 0, child_id="c", factory=create)).message
    gappy = SimpleNamespace(id="g", header={}, events=[Event("x", 0, 0, None), Event("x", 5, 0, None)])
    error = rule_of(lambda: fork(gappy, 1, child_id="c", factory=create))
    assert (error.rule, error.code) == ("SESSION-FORK.2", INVALID_BOUNDARY)
    assert error.to_json()["code"] == INVALID_BOUNDARY


@pytest.mark.parametrize("boundary", [0, 1, 2, 3])
def test_the_boundary_does_not_end_inside_an_open_turn(create: SessionFactory, boundary: int) -> None:
    # SESSION-FORK.3: only turn/start and turn/end count.
    error = rule_of(lambda: fork(parent(create), boundary, child_id="c", factory=create))
    assert (error.rule, error.code) == ("SESSION-FORK.3", OPEN_TURN)
    assert "open turn 1" in error.message


def test_a_boundary_after_the_turn_ends_is_allowed(create: SessionFactory) -> None:
    # SESSION-FORK.3: a later log-only event after turn/end is a fine boundary.
    assert fork(parent(create), 5, child_id="c", factory=create).header["seedLength"] == 6


@PROPERTY
@given(agent_loops(), st.data())
def test_a_fork_has_the_views_of_replaying_its_prefix(implementation: str, create: SessionFactory, loop: Loop,
                                                      data: st.DataObject) -> None:
    # SESSION-FORK.4: whatever compactions the source did after the boundary.
    source = build(loop.requests, implementation, session_id="src")
    allowed = [b for b in range(len(source.events)) if loop.states[b + 1].open_turn is None]
    if not allowed:
        return
    b = data.draw(st.sampled_from(allowed))
    child = fork(source, b, child_id="child", factory=create)
    prefix = list(source.events[: b + 1])
    replayed = create("replay", seed=prefix)
    assert child.surface.nodes == fold(prefix).nodes == replayed.surface.nodes
    assert child.derive_messages() == replayed.derive_messages()
    assert child.header["seedLength"] == b + 1
