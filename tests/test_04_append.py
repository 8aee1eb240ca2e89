"""spec/04-append.md: the append transaction, its check order, veto, observers and reentrancy."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from sessionspec.envelope import Event
from sessionspec.errors import Kind, SpecViolation
from sessionspec.rules import RULES
from sessionspec.testing.builders import replace_op, request_header, tool_result, user_message, with_change
from sessionspec.testing.implementations import SessionFactory, factory
from support import rejects


def counter(start: int = 100) -> Callable[[], int]:
    ticks = iter(range(start, start + 10_000))
    return lambda: next(ticks)


def started(create: SessionFactory) -> Any:
    """Seqs 0 (turn/start) and 1 (a user message)."""
    session = create("s", clock=counter())
    session.append("turn/start", {"turn": 1})
    session.append("user/message", user_message(), surface_op="append")
    return session


# --- seq and time ------------------------------------------------------------------------------


def test_seq_is_the_log_length_and_time_comes_from_the_clock(create: SessionFactory) -> None:
    session = create("s", clock=counter(100))
    first = session.append("turn/start", {"turn": 1})
    second = session.append("user/message", user_message(), surface_op="append")
    assert (first.seq, first.time, second.seq, second.time) == (0, 101, 1, 102)  # 100 went to the header
    assert session.seq == len(session.events) == 2 and session.events[-1] is second


@pytest.mark.parametrize("bad", [1.5, "1", None, True, 2**53, -(2**53)])
def test_a_clock_that_is_not_a_safe_integer_rejects_the_append(create: SessionFactory, bad: Any) -> None:
    readings = iter([0])
    session = create("s", clock=lambda: next(readings, bad))
    error = rejects(session, "SESSION-APPEND-COMMIT.1", lambda: session.append("turn/start", {"turn": 1}))
    assert error.seq == 0
    with pytest.raises(SpecViolation) as info:
        create("t", clock=lambda: bad)
    assert info.value.rule == "SESSION-APPEND-COMMIT.1"


def test_negative_clock_values_are_times_like_any_other(create: SessionFactory) -> None:
    session = create("s", header={"version": 0, "id": "s", "createdAt": 0}, clock=lambda: -5)
    assert session.append("turn/start", {}).time == -5


# --- veto --------------------------------------------------------------------------------------


def test_a_raising_validator_vetoes_and_a_later_append_gets_the_same_seq(create: SessionFactory) -> None:
    seen: list[tuple[int, int]] = []

    def veto(session: Any, candidate: Event) -> None:
        seen.append((candidate.seq, len(session.events)))
        if candidate.type == "x/forbidden":
            raise RuntimeError("no")

    session = started(create)
    session.add_validator(veto)
    error = rejects(session, "SESSION-APPEND-COMMIT.2", lambda: session.append("x/forbidden", {}))
    assert error.kind is Kind.VETO and error.seq == 2 and "no" in error.message
    accepted = session.append("x/allowed", {})
    assert accepted.seq == 2
    assert seen == [(2, 2), (2, 2)]  # validators see the candidate before the commit


def test_a_veto_of_a_replace_leaves_surface_generation_and_messages(create: SessionFactory) -> None:
    """SESSION-APPEND-COMMIT.2: a vetoed candidate's plan dies with it; the next event at its seq is planned afresh."""

    def no_replaces(session: Any, candidate: Event) -> None:
        if candidate.surface_op not in ("append", None):
            raise ValueError("veto")

    session = started(create)
    session.add_validator(no_replaces)
    rejects(session, "SESSION-APPEND-COMMIT.2",
            lambda: session.append("user/message", user_message("u2"), surface_op=replace_op(1, 1),
                                   source_event_seqs=[1]))
    assert session.surface.replace_generation == 0
    session.append("user/message", user_message("u3"), surface_op="append")
    assert list(session.surface.nodes) == [1, 2] and session.surface.replace_generation == 0
    assert [m["id"] for m in session.derive_messages()] == ["u1", "u3"]


def test_a_validator_naming_a_rule_keeps_it(create: SessionFactory) -> None:
    def strict(session: Any, candidate: Event) -> None:
        raise SpecViolation("SESSION-MESSAGE-SHAPE.1", Kind.MESSAGE_SHAPE, "plugin says no")

    session = started(create)
    session.add_validator(strict)
    error = rejects(session, "SESSION-MESSAGE-SHAPE.1", lambda: session.append("turn/end", {}))
    assert error.seq == 2


def test_validators_run_in_order_and_the_first_veto_stops_the_rest(create: SessionFactory) -> None:
    calls: list[str] = []

    def ok(session: Any, candidate: Event) -> None:
        calls.append("ok")

    def no(session: Any, candidate: Event) -> None:
        calls.append("no")
        raise KeyError("x")

    def never(session: Any, candidate: Event) -> None:
        calls.append("never")

    session = create("s", clock=counter(), validators=[ok, no, never])
    rejects(session, "SESSION-APPEND-COMMIT.2", lambda: session.append("turn/start", {}))
    assert calls == ["ok", "no"]


# --- observers ---------------------------------------------------------------------------------


def test_observers_run_in_order_after_the_commit_and_failures_are_contained(create: SessionFactory) -> None:
    """SESSION-APPEND-COMMIT.3: a failing observer is recorded and cannot undo the commit."""
    calls: list[tuple[str, int, int]] = []

    def first(session: Any, event: Event) -> None:
        calls.append(("first", event.seq, len(session.events)))
        raise RuntimeError("observer broke")

    def second(session: Any, event: Event) -> None:
        assert session.events[-1] is event
        calls.append(("second", event.seq, len(session.events)))

    def third(session: Any, event: Event) -> None:
        calls.append(("third", event.seq, len(session.events)))
        raise ValueError("also broke")

    session = create("s", clock=counter(), observers=[first, second, third])
    event = session.append("turn/start", {"turn": 1})
    assert event.seq == 0 and session.events[-1] is event
    assert calls == [("first", 0, 1), ("second", 0, 1), ("third", 0, 1)]
    failures = list(session.observer_failures)
    assert [(f.seq, f.observer) for f in failures] == [(0, 0), (0, 2)]
    assert "observer broke" in failures[0].error and "also broke" in failures[1].error
    session.append("turn/end", {"turn": 1})
    assert len(session.observer_failures) == 4 and len(session.events) == 2


# --- reentrancy --------------------------------------------------------------------------------


def test_an_append_from_a_validator_is_rejected_and_vetoes_the_outer_append(create: SessionFactory) -> None:
    inner: list[SpecViolation] = []

    def reenter(session: Any, candidate: Event) -> None:
        try:
            session.append("x/nested", {})
        except SpecViolation as violation:
            inner.append(violation)
            raise

    session = started(create)
    session.add_validator(reenter)
    error = rejects(session, "SESSION-APPEND-COMMIT.4", lambda: session.append("turn/end", {}))
    assert error.kind is Kind.REENTRANT
    assert inner and inner[0].rule == "SESSION-APPEND-COMMIT.4"


def test_an_append_from_an_observer_is_rejected_and_recorded(create: SessionFactory) -> None:
    seen: list[int] = []

    def reenter(session: Any, event: Event) -> None:
        session.append("x/nested", {})

    def later(session: Any, event: Event) -> None:
        seen.append(event.seq)

    session = create("s", clock=counter(), observers=[reenter, later])
    event = session.append("turn/start", {"turn": 1})
    assert event.seq == 0 and len(session.events) == 1 and seen == [0]
    failure = session.observer_failures[0]
    assert failure.observer == 0 and "SpecViolation" in failure.error and "reenter" in failure.error
    assert session.append("turn/end", {}).seq == 1  # the guard is released


def test_an_append_from_inside_the_clock_is_rejected_as_reentrant(create: SessionFactory) -> None:
    """The guard is up before the clock is read: the clock is caller code (found in `live`, which logged two events at seq 0)."""
    nested: list[BaseException] = []
    ticks = iter(range(100, 200))

    def clock() -> int:
        if session_box and not nested:
            try:
                session_box[0].append("x/nested", {})
            except SpecViolation as violation:
                nested.append(violation)
        return next(ticks)

    session_box: list[Any] = []
    session = create("s", clock=clock)
    session_box.append(session)
    event = session.append("turn/start", {"turn": 1})
    assert nested and getattr(nested[0], "rule", None) == "SESSION-APPEND-COMMIT.4"
    assert [e.seq for e in session.events] == [0] and event.seq == 0


def test_the_guard_is_released_after_a_veto(create: SessionFactory) -> None:
    vetoes = [ZeroDivisionError("the first append is vetoed")]

    def veto_once(session: Any, candidate: Event) -> None:
        if vetoes:
            raise vetoes.pop()

    session = create("s", clock=counter())
    session.add_validator(veto_once)
    rejects(session, "SESSION-APPEND-COMMIT.2", lambda: session.append("turn/start", {}))
    assert session.append("turn/start", {}).seq == 0


# --- end-seed, ignorable, decision 1 -----------------------------------------------------------


@pytest.mark.parametrize("data", [{}, {"x": 1}])
def test_end_seed_is_reserved_to_seeding(create: SessionFactory, data: Any) -> None:
    session = started(create)
    rejects(session, "SESSION-APPEND-COMMIT.5", lambda: session.append("session/end-seed", data))
    rejects(session, "SESSION-APPEND-COMMIT.5",
            lambda: session.append_request({"type": "session/end-seed", "data": data}))


def test_ignorable_only_on_log_only_events(create: SessionFactory) -> None:
    session = started(create)
    rejects(session, "SESSION-EVENT-ENVELOPE.7",
            lambda: session.append("user/message", user_message("u2"), surface_op="append", ignorable=True))
    event = session.append_request({"type": "x/plugin-note", "data": {"n": 1}, "ignorable": True})
    assert event.ignorable is True and event.to_json() == {"type": "x/plugin-note", "seq": 2, "time": event.time,
                                                            "data": {"n": 1}, "ignorable": True}


def test_append_rejects_what_a_seed_rejects(create: SessionFactory) -> None:
    """SESSION-APPEND-COMMIT.6 (decision 1): a malformed message never commits."""
    session = started(create)
    error = rejects(session, "SESSION-MESSAGE-SHAPE.9",
                    lambda: session.append("assistant/message", {"turn": 1}, surface_op="append"))
    assert "SESSION-APPEND-COMMIT.6" in RULES
    assert error.seq == 2
    rejects(session, "SESSION-MESSAGE-SHAPE.7",
            lambda: session.append("tool/result", with_change(tool_result(), ["message", "content"], []),
                                   surface_op="append"))
    rejects(session, "SESSION-REQUEST-HEADER.1",
            lambda: session.append("request/header", request_header({"provider": "p"})))
    # And everything append accepts, a seed accepts.
    session.append("request/header", request_header({"provider": "p", "model": "m"}))
    replay = create("r", seed=session.events)
    assert [e.to_json() for e in replay.events[:-1]] == [e.to_json() for e in session.events]


# --- the check order ---------------------------------------------------------------------------


ORDER = [
    # (request, rule): each request breaks two rules; the one earlier in spec/04's order is reported
    # (SESSION-APPEND-COMMIT.7, a recommended rule: at the required level either kind matches).
    ({"type": "", "data": {}, "extra": 1}, "SESSION-EVENT-ENVELOPE.1"),
    ({"type": "", "data": {}, "surfaceOp": "prepend"}, "SESSION-EVENT-ENVELOPE.8"),
    ({"type": "session/end-seed", "ignorable": False}, "SESSION-EVENT-ENVELOPE.5"),
    ({"type": "", "data": {}, "ignorable": "x"}, "SESSION-EVENT-ENVELOPE.6"),
    ({"type": 3, "data": {"n": (1,)}}, "SESSION-EVENT-ENVELOPE.2"),
    ({"type": "session/end-seed", "data": {"n": (1,)}}, "SESSION-APPEND-COMMIT.5"),
    ({"type": "user/message", "data": {"n": (1,)}, "ignorable": True}, "SESSION-LOSSLESS-JSON.1"),
    ({"type": "user/message", "data": user_message("u2"), "surfaceOp": "append", "ignorable": True,
      "sourceEventSeqs": [(1,)]}, "SESSION-LOSSLESS-JSON.1"),
    ({"type": "request/header-delta", "data": {}, "surfaceOp": "append"}, "SESSION-CORE-EVENTS.2"),
    ({"type": "turn/start", "data": {}, "surfaceOp": "append", "sourceEventSeqs": [0]}, "SESSION-SURFACE-PROJECTION.1"),
    ({"type": "user/message", "data": None, "surfaceOp": "bad"}, "SESSION-SURFACE-PROJECTION.4"),
    ({"type": "user/message", "data": None, "surfaceOp": "append", "sourceEventSeqs": [9]},
     "SESSION-SURFACE-PROVENANCE.5"),
    ({"type": "user/message", "data": None, "surfaceOp": replace_op(9, 9)}, "SESSION-MESSAGE-SHAPE.9"),
    ({"type": "user/message", "data": user_message("u2"), "surfaceOp": replace_op(9, 9)}, "SESSION-SURFACE-REPLACE.1"),
    # Node 1 is a user message: a tool-result rewrite of it breaks TOOL-RESULT.2 too, checked after coverage.
    ({"type": "tool/result", "data": tool_result(), "surfaceOp": replace_op(1, 1)}, "SESSION-SURFACE-PROVENANCE.6"),
]


@pytest.mark.parametrize(("request_", "rule"), ORDER)
def test_the_first_failing_check_in_spec_order_is_reported(create: SessionFactory, request_: dict[str, Any],
                                                           rule: str) -> None:
    session = started(create)
    rejects(session, rule, lambda: session.append_request(request_))


def test_reentrancy_is_checked_before_anything_else(create: SessionFactory) -> None:
    errors: list[str] = []

    def reenter(session: Any, event: Event) -> None:
        try:
            session.append("", {"bad": (1,)})
        except SpecViolation as violation:
            errors.append(violation.rule)

    session = create("s", clock=counter(), observers=[reenter])
    session.append("turn/start", {})
    assert errors == ["SESSION-APPEND-COMMIT.4"]


def test_the_returned_event_is_the_logged_snapshot_not_the_input(create: SessionFactory) -> None:
    session = started(create)
    data = {"turn": 1, "nested": [1, {"a": None}]}
    event = session.append("turn/end", data)
    assert event is session.events[-1] and event.data == data and event.data is not data


def test_a_clock_that_appends_is_reentrant(create: SessionFactory) -> None:
    """SESSION-APPEND-COMMIT.4 covers building the candidate: the clock is caller code (upstream notes §5.12)."""
    holder: list[Any] = []

    def clock() -> int:
        if holder:
            holder[0].append("x/from-the-clock", {})
        return 5

    session = create("s", clock=clock)
    holder.append(session)
    error = rejects(session, "SESSION-APPEND-COMMIT.4", lambda: session.append("turn/start", {}))
    assert error.seq == 0 and session.seq == 0


# --- the Python API itself: what the protocol's ops never call (issue 34, item 6) ----------------
# Over the wire every append is `append_request` of a JSON object and every read a snapshot, so the conformance run
# leaves `append`'s return value, `complete_log()` and a request that is no object at all unasserted: these run
# against each in-process implementation by name (model and live), which is what a Python caller holds.


@pytest.mark.parametrize("kind", ["log-only", "surface", "ignorable", "replace"])
def test_append_returns_the_event_it_logged(implementation: str, kind: str) -> None:
    session = started(factory(implementation))
    calls: dict[str, tuple[str, Any, dict[str, Any]]] = {
        "log-only": ("turn/end", {"turn": 1, "reason": {"kind": "completed"}}, {}),
        "surface": ("user/message", user_message("u2", "again"), {"surface_op": "append"}),
        "ignorable": ("plugin/note", {"n": 1}, {"ignorable": True}),
        "replace": ("user/message", user_message("u3", "summary"),
                    {"surface_op": replace_op(1, 1), "source_event_seqs": [1]}),
    }
    event_type, data, options = calls[kind]
    event = session.append(event_type, data, **options)
    assert isinstance(event, Event), f"{implementation}: append returned {event!r}"
    assert (event.type, event.seq, event.data) == (event_type, 2, data)
    assert event is session.events[-1] and event.to_json() == session.events[2].to_json()


def test_append_request_returns_the_event_it_logged(implementation: str) -> None:
    session = started(factory(implementation))
    event = session.append_request({"type": "turn/end", "data": {"turn": 1, "reason": {"kind": "completed"}}})
    assert isinstance(event, Event) and event.seq == 2 and event is session.events[-1]


def test_complete_log_returns_every_event_in_seq_order(implementation: str) -> None:
    """SESSION-READ-VIEWS.1 through the Python API's own name for it."""
    session = factory(implementation)("s", clock=counter())
    assert list(session.complete_log()) == []
    first = session.append("turn/start", {"turn": 1})
    second = session.append("user/message", user_message(), surface_op="append")
    log = session.complete_log()
    assert log is not None and [event.seq for event in log] == [0, 1]
    assert log[0] is first and log[1] is second and log == session.events


@pytest.mark.parametrize("request_", [[], [["type", "turn/start"]], None, "turn/start", 1, True],
                         ids=["empty-list", "pairs", "null", "string", "number", "bool"])
def test_an_append_request_that_is_no_object_is_refused_as_the_envelope(implementation: str, request_: Any) -> None:
    """SESSION-EVENT-ENVELOPE.1: a request is a JSON object; anything else is refused by rule, not an AttributeError."""
    session = started(factory(implementation))
    rejects(session, "SESSION-EVENT-ENVELOPE.1", lambda: session.append_request(request_))
