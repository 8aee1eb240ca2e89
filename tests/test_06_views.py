"""spec/06-views.md: the complete log, the model view, the transcript and derived messages."""

from __future__ import annotations

from typing import Any

from sessionspec import model
from sessionspec.jsonvalue import FrozenList
from sessionspec.surface import fold
from sessionspec.testing.builders import assistant_message, compaction_summary, replace_op, user_message
from sessionspec.testing.implementations import SessionFactory
from sessionspec.views import derive_messages, is_append_origin, project, project_all, transcript


def compacted(create: SessionFactory) -> Any:
    """0 turn/start, 1 u1, 2 a1, 3 empty assistant, 4 turn/end, 5 summary replacing 1..3, 6 u2."""
    session = create("s", clock=lambda: 1)
    session.append("turn/start", {"turn": 1})
    session.append("user/message", user_message("u1", "u1"), surface_op="append")
    session.append("assistant/message", assistant_message("a1"), surface_op="append")
    session.append("assistant/message", assistant_message("a-usage", []), surface_op="append", source_event_seqs=[])
    session.append("turn/end", {"turn": 1})
    session.append("user/message", compaction_summary("summary", "summary"), surface_op=replace_op(1, 3),
                   source_event_seqs=[1, 2, 3])
    session.append("user/message", user_message("u2", "u2"), surface_op="append")
    return session


def test_the_complete_log_holds_every_event(create: SessionFactory) -> None:
    """SESSION-READ-VIEWS.1: log-only, shadowed, replacement events, all in seq order."""
    session = compacted(create)
    assert [e.seq for e in session.events] == list(range(7))
    assert [e.type for e in session.events] == ["turn/start", "user/message", "assistant/message", "assistant/message",
                                                "turn/end", "user/message", "user/message"]
    assert session.complete_log() == session.events


def test_the_model_view_is_the_surface_projected(create: SessionFactory) -> None:
    """SESSION-READ-VIEWS.2."""
    session = compacted(create)
    assert list(session.surface.nodes) == [5, 6]
    assert [m["id"] for m in session.derive_messages()] == ["summary", "u2"]
    assert session.derive_messages()[0] is session.events[5].data


def test_empty_assistant_messages_are_skipped_and_empty_user_ones_kept(create: SessionFactory) -> None:
    session = create("s", clock=lambda: 1)
    session.append("assistant/message", assistant_message("a0", []), surface_op="append", source_event_seqs=[])
    session.append("user/message", {**user_message("u0", "u0"), "content": []}, surface_op="append")
    interrupted = assistant_message("a1")
    interrupted["message"]["interrupted"] = True
    session.append("assistant/message", interrupted, surface_op="append")
    assert [m["id"] for m in session.derive_messages()] == ["u0", "a1"]
    assert project(session.events[0]) is None and project(session.events[1]) == session.events[1].data


def test_the_transcript_holds_append_origin_events_in_log_order(create: SessionFactory) -> None:
    """SESSION-READ-VIEWS.3: shadowed ones included, replacement copies and log-only events excluded."""
    session = compacted(create)
    assert [e.seq for e in session.transcript()] == [1, 2, 3, 6]
    assert not is_append_origin(session.events[5]) and not is_append_origin(session.events[0])
    assert transcript(session.events) == session.transcript()


def test_derived_messages_equal_a_full_fold_and_a_fresh_replay(create: SessionFactory) -> None:
    """SESSION-DERIVED-CACHE.1."""
    session = compacted(create)
    expected = project_all(session.events, fold(session.events).nodes)
    assert session.derive_messages() == expected == derive_messages(session.events)
    assert create("r", seed=session.events).derive_messages() == expected
    for cut in range(len(session.events) + 1):
        prefix = session.events[:cut]
        assert derive_messages(prefix) == project_all(prefix, fold(prefix).nodes)


def test_derived_messages_follow_every_append_and_replace(create: SessionFactory) -> None:
    """SESSION-DERIVED-CACHE.1 read after each event: a cache that misses a replace shows compacted-away messages."""
    session = create("r", clock=lambda: 1)
    for event in compacted(create).events:
        session.append(event.type, event.data, surface_op=event.surface_op, source_event_seqs=event.source_event_seqs)
        assert session.derive_messages() == project_all(session.events, fold(session.events).nodes)
        assert list(session.surface.nodes) == list(fold(session.events).nodes)


def test_views_are_frozen_snapshots(create: SessionFactory) -> None:
    """SESSION-IMMUTABILITY.4; the messages are the logged objects (SESSION-READ-VIEWS.2). An implementation may
    hand out the same frozen list twice while nothing changes (live caches it); the model builds a new one."""
    session = compacted(create)
    first, second = session.derive_messages(), session.derive_messages()
    assert first == second and first[0] is second[0]
    assert isinstance(first, FrozenList) and isinstance(session.transcript(), FrozenList)
    held = session.transcript()
    session.append("user/message", user_message("u3", "u3"), surface_op="append")
    assert [e.seq for e in held] == [1, 2, 3, 6] and len(session.transcript()) == 5


def test_the_model_recomputes_every_view_on_every_call() -> None:
    """The reference model keeps no cache (DESIGN: every query recomputes from the full log): a new list each call."""
    session = compacted(model.Session.create)
    assert session.derive_messages() is not session.derive_messages()
    assert session.transcript() is not session.transcript()
