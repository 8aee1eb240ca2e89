"""spec/05-seed.md: seed acceptance, the end-seed marker, first_live_seq, atomic rejection."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from sessionspec.errors import SpecViolation
from sessionspec.jsonvalue import thaw
from sessionspec.testing.builders import envelope, replace_op, request_header, user_message
from sessionspec.testing.implementations import SessionFactory
from support import seed_rejects


def ev(event_type: str, seq: int, data: Any = None, **fields: Any) -> dict[str, Any]:
    """A seed entry written at time 10 + seq; data `{}` unless given."""
    return envelope(event_type, seq, {} if data is None else data, time=10 + seq, **fields)


MARKER = "session/end-seed"


def conversation() -> list[dict[str, Any]]:
    return [ev("turn/start", 0, {"turn": 1}), ev("user/message", 1, user_message(), surfaceOp="append"),
            ev("turn/end", 2, {"turn": 1})]


@pytest.mark.parametrize("seed", [{"0": ev("turn/start", 0)}, "events", 3, ev("turn/start", 0)])
def test_the_seed_is_a_list(create: SessionFactory, seed: Any) -> None:
    seed_rejects(create, seed, "SESSION-SEED-ACCEPTANCE.1", None)


@pytest.mark.parametrize("seqs", [[1], [0, 2], [0, 0], [0, 1, 1], [1, 0]])
def test_seed_seqs_are_contiguous_from_zero(create: SessionFactory, seqs: list[int]) -> None:
    seed = [ev("turn/start", seq) for seq in seqs]
    bad = next(i for i, seq in enumerate(seqs) if seq != i)
    error = seed_rejects(create, seed, "SESSION-SEED-ACCEPTANCE.2", bad)
    assert error.seq == seqs[bad]


def test_a_fresh_session_gets_no_marker(create: SessionFactory) -> None:
    session = create("s", clock=lambda: 1)
    assert len(session.events) == 0 and session.first_live_seq == 0 and session.seq == 0


def test_an_empty_seed_gets_one_marker(create: SessionFactory) -> None:
    session = create("s", seed=[], clock=lambda: 77)
    assert [e.to_json() for e in session.events] == [{"type": MARKER, "seq": 0, "time": 77, "data": {}}]
    assert session.first_live_seq == 0


def test_a_seed_gets_one_marker_at_first_live_seq(create: SessionFactory) -> None:
    """SESSION-SEED-ACCEPTANCE.3 and .4."""
    seed = conversation()
    session = create("s", seed=seed, clock=lambda: 5)
    assert session.first_live_seq == 3 and session.seq == 4
    marker = session.events[3]
    assert marker.to_json() == {"type": MARKER, "seq": 3, "time": 5, "data": {}}
    assert marker.surface_op is None and marker.source_event_seqs is None and not marker.ignorable
    assert [e.to_json() for e in session.events[:3]] == seed


def test_a_seed_ending_in_a_marker_gets_none(create: SessionFactory) -> None:
    """SESSION-SEED-ACCEPTANCE.4: first_live_seq is the seed length, the old marker at first_live_seq - 1."""
    seed = [*conversation(), ev(MARKER, 3)]
    session = create("s", seed=seed, clock=lambda: 5)
    assert [e.to_json() for e in session.events] == seed
    assert session.first_live_seq == 4 and session.events[session.first_live_seq - 1].type == MARKER


def test_reopening_is_idempotent(create: SessionFactory) -> None:
    first = create("s", seed=conversation(), clock=lambda: 5)
    first.append("turn/start", {"turn": 2})
    again = create("s", seed=first.events, clock=lambda: 6)
    assert [e.to_json() for e in again.events[:5]] == [e.to_json() for e in first.events]
    assert again.events[5].type == MARKER and again.first_live_seq == 5
    third = create("s", seed=again.events, clock=lambda: 7)
    assert third.events == again.events and third.first_live_seq == 6


def test_a_marker_in_the_middle_counts_for_nothing(create: SessionFactory) -> None:
    seed = [ev(MARKER, 0), ev("turn/start", 1, {"turn": 1})]
    session = create("s", seed=seed, clock=lambda: 5)
    assert [e.type for e in session.events] == [MARKER, "turn/start", MARKER]
    assert session.first_live_seq == 2 and session.events[2].seq == 2


def test_seeded_surface_and_messages_match_the_source(create: SessionFactory) -> None:
    source = create("a", clock=lambda: 1)
    source.append("user/message", user_message("u0"), surface_op="append")
    source.append("user/message", user_message("u1"), surface_op="append")
    source.append("user/message", user_message("u2"), surface_op=replace_op(0, 1),
                  source_event_seqs=[0, 1])
    replay = create("b", seed=source.events, clock=lambda: 1)
    assert replay.surface == source.surface and replay.derive_messages() == source.derive_messages()
    assert replay.transcript() == source.transcript()


def test_seed_entries_may_be_events_or_envelopes(create: SessionFactory) -> None:
    source = create("a", seed=conversation(), clock=lambda: 1)
    mixed = [source.events[0], source.events[1].to_json(), source.events[2]]
    replay = create("b", seed=mixed, clock=lambda: 1)
    assert replay.events[:3] == source.events[:3]


def test_a_rejected_seed_reports_the_first_bad_index_and_creates_nothing(create: SessionFactory) -> None:
    """Atomicity: a late bad entry rejects the whole seed; no observer or validator ever runs."""
    calls: list[Any] = []
    seed = [*conversation(), ev("user/message", 3, user_message("u2"), surfaceOp=replace_op(0, 0),
                                sourceEventSeqs=[0])]
    before = copy.deepcopy(seed)
    with pytest.raises(SpecViolation) as info:
        create("s", seed=seed, clock=lambda: 1, validators=[lambda s, e: calls.append(e)],
                       observers=[lambda s, e: calls.append(e)])
    assert info.value.rule == "SESSION-SURFACE-REPLACE.1" and info.value.index == 3 and info.value.seq == 3
    assert seed == before and calls == []


def test_seeding_runs_no_validators_or_observers(create: SessionFactory) -> None:
    calls: list[Any] = []
    session = create("s", seed=conversation(), clock=lambda: 1, validators=[lambda s, e: calls.append(e)],
                             observers=[lambda s, e: calls.append(e)])
    assert calls == [] and session.seq == 4
    session.append("turn/start", {"turn": 2})
    assert len(calls) == 2


@pytest.mark.parametrize(("entry", "rule"), [
    (ev("turn/start", 3, {"x": (1,)}), "SESSION-LOSSLESS-JSON.1"),
    (ev("turn/start", 3, extra=True), "SESSION-EVENT-ENVELOPE.1"),
    (ev("user/message", 3, user_message("u2")), "SESSION-SURFACE-PROJECTION.3"),
    (ev("user/message", 3, {"id": "x"}, surfaceOp="append"), "SESSION-MESSAGE-SHAPE.2"),
    (ev("request/header", 3, request_header({})), "SESSION-REQUEST-HEADER.1"),
    (ev(MARKER, 3, {"x": 1}), "SESSION-CORE-EVENTS.1"),
    (ev("mode/set", 3), "SESSION-CORE-EVENTS.2"),
])
def test_each_seed_entry_is_validated_as_an_append_would_be(create: SessionFactory, entry: dict[str, Any],
                                                           rule: str) -> None:
    seed_rejects(create, [*conversation(), entry], rule, 3)


def test_contiguity_is_checked_after_the_envelope_and_before_content(create: SessionFactory) -> None:
    seed_rejects(create, [ev("user/message", 5, {"id": "x"}, surfaceOp="append")], "SESSION-SEED-ACCEPTANCE.2", 0)
    seed_rejects(create, [ev("user/message", 5, user_message(), surfaceOp="bad")], "SESSION-SURFACE-PROJECTION.4", 0)


def test_header_is_validated_before_the_seed(create: SessionFactory) -> None:
    """SESSION-SEED-ACCEPTANCE.5: the first failing check in spec/05's order is reported (a recommended rule)."""
    with pytest.raises(SpecViolation) as info:
        create("s", seed=[ev("turn/start", 9)], header={"version": 1, "id": "s", "createdAt": 0})
    assert info.value.rule == "SESSION-FORMAT-HEADER.2"
    with pytest.raises(SpecViolation) as info:
        create("s", seed=[ev("turn/start", 0), ev("turn/end", 2)], header={"version": 0, "id": "s", "createdAt": -1})
    assert info.value.rule == "SESSION-FORMAT-HEADER.4"


def test_seeded_values_are_frozen_and_thaw_to_the_seed(create: SessionFactory) -> None:
    seed = conversation()
    session = create("s", seed=seed, clock=lambda: 1)
    assert [thaw(e.data) for e in session.events[:3]] == [e["data"] for e in seed]
    with pytest.raises(TypeError):
        session.events[1].data["content"].append(1)
