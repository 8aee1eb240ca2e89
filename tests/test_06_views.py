"""spec/06-views.md: the complete log, the model view, the transcript and derived messages."""

from __future__ import annotations

from typing import Any

from sessionspec.jsonvalue import FrozenList
from sessionspec.model import Session
from sessionspec.surface import fold
from sessionspec.views import derive_messages, is_append_origin, project, project_all, transcript

MODEL = {"kind": "model", "provider": "deepseek", "model": "deepseek-chat"}


def user(message_id: str, kind: str = "user") -> dict[str, Any]:
    return {"id": message_id, "role": "user", "source": {"kind": kind}, "content": [{"type": "text", "text": message_id}]}


def assistant(message_id: str, content: list[Any] | None = None) -> dict[str, Any]:
    return {"turn": 1, "step": 1, "message": {"id": message_id, "role": "assistant", "source": dict(MODEL),
                                              "content": [{"type": "text", "text": "ok"}] if content is None else content}}


def compacted() -> Session:
    """0 turn/start, 1 u1, 2 a1, 3 empty assistant, 4 turn/end, 5 summary replacing 1..3, 6 u2."""
    session = Session.create("s", clock=lambda: 1)
    session.append("turn/start", {"turn": 1})
    session.append("user/message", user("u1"), surface_op="append")
    session.append("assistant/message", assistant("a1"), surface_op="append")
    session.append("assistant/message", assistant("a-usage", []), surface_op="append", source_event_seqs=[])
    session.append("turn/end", {"turn": 1})
    session.append("user/message", user("summary", "plugin"), surface_op={"op": "replace", "start": 1, "end": 3},
                   source_event_seqs=[1, 2, 3])
    session.append("user/message", user("u2"), surface_op="append")
    return session


def test_the_complete_log_holds_every_event() -> None:
    """SESSION-READ-VIEWS.1: log-only, shadowed, replacement events, all in seq order."""
    session = compacted()
    assert [e.seq for e in session.events] == list(range(7))
    assert [e.type for e in session.events] == ["turn/start", "user/message", "assistant/message", "assistant/message",
                                                "turn/end", "user/message", "user/message"]
    assert session.complete_log() == session.events


def test_the_model_view_is_the_surface_projected() -> None:
    """SESSION-READ-VIEWS.2."""
    session = compacted()
    assert list(session.surface.nodes) == [5, 6]
    assert [m["id"] for m in session.derive_messages()] == ["summary", "u2"]
    assert session.derive_messages()[0] is session.events[5].data


def test_empty_assistant_messages_are_skipped_and_empty_user_ones_kept() -> None:
    session = Session.create("s", clock=lambda: 1)
    session.append("assistant/message", assistant("a0", []), surface_op="append", source_event_seqs=[])
    session.append("user/message", {**user("u0"), "content": []}, surface_op="append")
    interrupted = assistant("a1")
    interrupted["message"]["interrupted"] = True
    session.append("assistant/message", interrupted, surface_op="append")
    assert [m["id"] for m in session.derive_messages()] == ["u0", "a1"]
    assert project(session.events[0]) is None and project(session.events[1]) == session.events[1].data


def test_the_transcript_holds_append_origin_events_in_log_order() -> None:
    """SESSION-READ-VIEWS.3: shadowed ones included, replacement copies and log-only events excluded."""
    session = compacted()
    assert [e.seq for e in session.transcript()] == [1, 2, 3, 6]
    assert not is_append_origin(session.events[5]) and not is_append_origin(session.events[0])
    assert transcript(session.events) == session.transcript()


def test_derived_messages_equal_a_full_fold_and_a_fresh_replay() -> None:
    """SESSION-DERIVED-CACHE.1."""
    session = compacted()
    expected = project_all(session.events, fold(session.events).nodes)
    assert session.derive_messages() == expected == derive_messages(session.events)
    assert Session.create("r", seed=session.events).derive_messages() == expected
    for cut in range(len(session.events) + 1):
        prefix = session.events[:cut]
        assert derive_messages(prefix) == project_all(prefix, fold(prefix).nodes)


def test_views_are_fresh_frozen_snapshots() -> None:
    session = compacted()
    first, second = session.derive_messages(), session.derive_messages()
    assert first == second and first is not second and first[0] is second[0]
    assert isinstance(first, FrozenList) and isinstance(session.transcript(), FrozenList)
    held = session.transcript()
    session.append("user/message", user("u3"), surface_op="append")
    assert [e.seq for e in held] == [1, 2, 3, 6] and len(session.transcript()) == 5
