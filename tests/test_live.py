"""`live`, the incremental Session: what only an incremental implementation can get wrong.

The stateful machine compares `live` with `model` on random operations; these tests pin the
incremental machinery itself: returned sequences never change (SESSION-IMMUTABILITY.4), the
derived-message cache starts over only when `replace_generation` changes
(SESSION-DERIVED-CACHE.1), the events snapshot is kept until the next append, the fast checks
reject exactly what the foundation's checks reject (each fast form is held to its reference in
test_fastpaths.py), and `sessionspec bench` replays a workload.
"""

from __future__ import annotations

import enum
import itertools
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sessionspec import cli, live, model
from sessionspec.envelope import Event
from sessionspec.errors import SpecViolation
from sessionspec.jsonvalue import FrozenDict, FrozenList, thaw
from sessionspec.live import surface as livesurface
from sessionspec.live.fastpath import new_event
from sessionspec.testing.builders import (
    assistant_message,
    replace_op,
    tool_call,
    tool_result,
    user_message,
    with_change,
)
from sessionspec.testing.workload import Shape
from sessionspec.testing.workload import lines as workload_lines


def clock() -> Callable[[], int]:
    return itertools.count(1_700_000_000_000).__next__


def fresh(impl: Any = live.Session, **kwargs: Any) -> Any:
    return impl.create("s", clock=clock(), **kwargs)


def conversation(session: Any) -> Any:
    """user, assistant (empty: no message), tool call + result, assistant: four nodes, three messages."""
    session.append("turn/start", {"turn": 1})
    session.append("user/message", user_message("u1"), surface_op="append")
    session.append("assistant/message", assistant_message("a0", []), surface_op="append", source_event_seqs=[])
    call = session.append("tool/call", tool_call("c1", name="read"))
    session.append("tool/result", tool_result("c1", "long output"), surface_op="append", source_event_seqs=[call.seq])
    session.append("assistant/message", assistant_message("a1"), surface_op="append", source_event_seqs=[])
    return session


# --- returned sequences never change (SESSION-IMMUTABILITY.4) --------------------------------


def test_returned_sequences_never_change_after_appends_and_replaces() -> None:
    session = conversation(fresh())
    held = {
        "events": session.events,
        "nodes": session.surface.nodes,
        "messages": session.derive_messages(),
        "transcript": session.transcript(),
    }
    before = {name: thaw([e.to_json() if hasattr(e, "to_json") else e for e in value]) for name, value in held.items()}
    nodes = list(session.surface.nodes)
    session.append("user/message", user_message("summary"), surface_op=replace_op(nodes[0], nodes[-1]),
                   source_event_seqs=nodes)
    session.append("user/message", user_message("u2"), surface_op="append")
    after = {name: thaw([e.to_json() if hasattr(e, "to_json") else e for e in value]) for name, value in held.items()}
    assert after == before
    assert len(session.surface.nodes) == 2 and len(session.derive_messages()) == 2


@pytest.mark.parametrize("view", ["events", "nodes", "messages", "transcript", "observer_failures"])
def test_returned_sequences_refuse_mutation(view: str) -> None:
    session = conversation(fresh())
    value = {
        "events": lambda: session.events,
        "nodes": lambda: session.surface.nodes,
        "messages": lambda: session.derive_messages(),
        "transcript": lambda: session.transcript(),
        "observer_failures": lambda: session.observer_failures,
    }[view]()
    assert isinstance(value, FrozenList)
    with pytest.raises(TypeError):
        value.append(0)
    with pytest.raises(TypeError):
        value[:0] = [1]


def test_derived_messages_are_the_logged_objects_and_frozen() -> None:
    session = conversation(fresh())
    first, second = session.derive_messages(), session.derive_messages()
    assert all(a is b for a, b in zip(first, second, strict=True))
    assert first[0] is session.events[1].data
    with pytest.raises(TypeError):
        first[0]["content"].append({"type": "text", "text": "injected"})


# --- the derived-message cache (SESSION-DERIVED-CACHE.1) ---------------------------------------


def test_cache_projects_each_node_once_while_the_generation_is_unchanged(monkeypatch: pytest.MonkeyPatch) -> None:
    projected: list[int] = []
    real = livesurface.project

    def counting(event: Any) -> Any:
        projected.append(event.seq)
        return real(event)

    monkeypatch.setattr(livesurface, "project", counting)
    session = fresh()
    for turn in range(5):
        session.append("user/message", user_message(f"u{turn}"), surface_op="append")
        session.derive_messages()
        session.derive_messages()
    assert projected == [0, 1, 2, 3, 4]
    assert session._derived.rebuilds == 0


def test_cache_rebuilds_only_when_the_replace_generation_changes() -> None:
    session = conversation(fresh())
    derived = session._derived
    session.derive_messages()
    session.append("turn/end", {"turn": 1, "reason": {"kind": "completed"}})
    session.append("user/message", user_message("u2"), surface_op="append")
    session.derive_messages()
    assert derived.rebuilds == 0
    result_seq = 4
    session.append("tool/result", tool_result("c1", "[pruned]"), surface_op=replace_op(result_seq, result_seq),
                   source_event_seqs=[result_seq])
    assert session.surface.replace_generation == 1
    messages = session.derive_messages()
    session.derive_messages()
    assert derived.rebuilds == 1
    assert messages == model.Session.create("s", seed=session.events).derive_messages()
    assert messages[1]["content"][0]["content"][0]["text"] == "[pruned]"


def test_a_rejected_replace_leaves_surface_and_cache_alone() -> None:
    session = conversation(fresh())
    surface, messages = session.surface, session.derive_messages()
    with pytest.raises(SpecViolation) as caught:
        session.append("user/message", user_message("bad"), surface_op=replace_op(1, 99), source_event_seqs=[1])
    assert caught.value.rule == "SESSION-SURFACE-REPLACE.1"
    assert session.surface is surface and session.derive_messages() is messages
    assert session._derived.rebuilds == 0


# --- the events snapshot ------------------------------------------------------------------------


def test_events_snapshot_is_cached_until_the_next_append() -> None:
    session = conversation(fresh())
    events = session.events
    assert session.events is events and session.complete_log() is events
    session.append("turn/end", {"turn": 1, "reason": {"kind": "completed"}})
    assert session.events is not events
    assert len(events) == 6 and len(session.events) == 7


def test_a_rejected_append_keeps_the_cached_snapshots() -> None:
    session = conversation(fresh())
    events, transcript = session.events, session.transcript()
    with pytest.raises(SpecViolation):
        session.append("turn/start", {"bad": float("nan")})
    assert session.events is events and session.transcript() is transcript


# --- the same rejections as the reference model --------------------------------------------------


class Level(float, enum.Enum):
    HIGH = 1.5


class Key(str):
    pass


def _cycle() -> list[Any]:
    loop: list[Any] = []
    loop.append(loop)
    return loop


BAD_APPENDS: dict[str, tuple[str, dict[str, Any]]] = {
    "nan": ("SESSION-LOSSLESS-JSON.3", {"type": "turn/start", "data": {"x": float("nan")}}),
    "infinity in a list": ("SESSION-LOSSLESS-JSON.3", {"type": "turn/start", "data": [1, [float("inf")]]}),
    "negative zero": ("SESSION-LOSSLESS-JSON.4", {"type": "turn/start", "data": {"x": -0.0}}),
    "unsafe integer": ("SESSION-LOSSLESS-JSON.2", {"type": "turn/start", "data": {"x": 2**53}}),
    "tuple": ("SESSION-LOSSLESS-JSON.1", {"type": "turn/start", "data": {"x": (1, 2)}}),
    "float enum": ("SESSION-LOSSLESS-JSON.1", {"type": "turn/start", "data": {"x": Level.HIGH}}),
    "str subclass key": ("SESSION-LOSSLESS-JSON.5", {"type": "turn/start", "data": {Key("k"): 1}}),
    "cycle": ("SESSION-LOSSLESS-JSON.6", {"type": "turn/start", "data": {"x": _cycle()}}),
    "end-seed": ("SESSION-APPEND-COMMIT.5", {"type": "session/end-seed", "data": {}}),
    "empty type": ("SESSION-EVENT-ENVELOPE.8", {"type": "", "data": {}}),
    "ignorable surface": ("SESSION-EVENT-ENVELOPE.7",
                          {"type": "user/message", "data": user_message("x"), "surface_op": "append",
                           "ignorable": True}),
    "marker on log-only": ("SESSION-SURFACE-PROJECTION.1", {"type": "turn/start", "data": {}, "surface_op": "append"}),
    "no marker": ("SESSION-SURFACE-PROJECTION.3", {"type": "user/message", "data": user_message("x")}),
    "bool source": ("SESSION-SURFACE-PROVENANCE.3",
                    {"type": "user/message", "data": user_message("x"), "surface_op": "append",
                     "source_event_seqs": [True]}),
    "duplicate sources": ("SESSION-SURFACE-PROVENANCE.4",
                          {"type": "user/message", "data": user_message("x"), "surface_op": "append",
                           "source_event_seqs": [1, 1]}),
    "future source": ("SESSION-SURFACE-PROVENANCE.5",
                      {"type": "user/message", "data": user_message("x"), "surface_op": "append",
                       "source_event_seqs": [6]}),
    "empty sources": ("SESSION-SURFACE-PROVENANCE.2",
                      {"type": "user/message", "data": user_message("x"), "surface_op": "append",
                       "source_event_seqs": []}),
    "shadowed endpoint": ("SESSION-SURFACE-REPLACE.1",
                          {"type": "user/message", "data": user_message("x"), "surface_op": replace_op(0, 1),
                           "source_event_seqs": [0, 1]}),
    "reversed range": ("SESSION-SURFACE-REPLACE.2",
                       {"type": "user/message", "data": user_message("x"), "surface_op": replace_op(5, 1),
                        "source_event_seqs": [1, 4, 5]}),
    "missing provenance": ("SESSION-SURFACE-PROVENANCE.6",
                           {"type": "user/message", "data": user_message("x"), "surface_op": replace_op(1, 4),
                            "source_event_seqs": [1]}),
    "tool result changes isError": ("SESSION-SURFACE-TOOL-RESULT.3",
                                    {"type": "tool/result", "data": tool_result("c1", "short", isError=True),
                                     "surface_op": replace_op(4, 4), "source_event_seqs": [4]}),
    "assistant without model source": ("SESSION-MESSAGE-SHAPE.5",
                                       {"type": "assistant/message",
                                        "data": with_change(assistant_message("a"), ["message", "source"],
                                                            {"kind": "user"}),
                                        "surface_op": "append", "source_event_seqs": []}),
    "tool result with two blocks": ("SESSION-MESSAGE-SHAPE.7",
                                    {"type": "tool/result",
                                     "data": with_change(tool_result("c1", "x"), ["message", "content"],
                                                         tool_result("c1", "x")["message"]["content"] * 2),
                                     "surface_op": "append", "source_event_seqs": [3]}),
    "request header without model": ("SESSION-REQUEST-HEADER.1",
                                     {"type": "request/header", "data": {"reason": "initial", "header": {"config": {}}}}),
}


def _outcome(session: Any, request: dict[str, Any]) -> tuple[str, str, int | None, str]:
    with pytest.raises(SpecViolation) as caught:
        session.append(request["type"], request["data"], surface_op=request.get("surface_op"),
                       source_event_seqs=request.get("source_event_seqs"), ignorable=request.get("ignorable", False))
    violation = caught.value
    return violation.rule, violation.kind.value, violation.seq, violation.message


@pytest.mark.parametrize("case", sorted(BAD_APPENDS))
def test_live_rejects_as_the_model_does(case: str) -> None:
    rule, request = BAD_APPENDS[case]
    sut, reference = conversation(fresh()), conversation(fresh(model.Session))
    before = (sut.events, sut.surface, sut.derive_messages(), sut.transcript())
    expected = _outcome(reference, request)
    assert expected[0] == rule
    assert _outcome(sut, request) == expected
    assert (sut.events, sut.surface, sut.derive_messages(), sut.transcript()) == before


def test_reentrant_append_and_veto_are_rejected_as_the_model_does() -> None:
    outcomes = []
    for impl in (live.Session, model.Session):
        seen: list[str] = []

        def nested(session: Any, event: Any, seen: list[str] = seen) -> None:
            try:
                session.append("turn/start", {"turn": 99})
            except SpecViolation as violation:
                seen.append(violation.rule)

        def veto(session: Any, event: Any) -> None:
            if event.type == "turn/end":
                raise RuntimeError("no")

        session = fresh(impl, observers=[nested], validators=[veto])
        session.append("turn/start", {"turn": 1})
        with pytest.raises(SpecViolation) as caught:
            session.append("turn/end", {"turn": 1})
        outcomes.append((seen, caught.value.rule, caught.value.seq, session.seq, len(session.observer_failures)))
    assert outcomes[0] == outcomes[1] == (["SESSION-APPEND-COMMIT.4"], "SESSION-APPEND-COMMIT.2", 1, 1, 0)


def test_seeding_matches_the_model_and_adds_one_marker() -> None:
    source = conversation(fresh())
    seeded = live.Session.create("s", seed=source.events, clock=clock())
    reference = model.Session.create("s", seed=source.events, clock=clock())
    assert seeded.events == reference.events and seeded.surface == reference.surface
    assert seeded.first_live_seq == 6 and seeded.events[-1].type == "session/end-seed"
    again = live.Session.create("s", seed=seeded.events, clock=clock())
    assert len(again.events) == len(seeded.events)
    with pytest.raises(SpecViolation) as caught:
        live.Session.create("s", seed=[*source.events[:2], source.events[3]], clock=clock())
    assert (caught.value.rule, caught.value.index) == ("SESSION-SEED-ACCEPTANCE.2", 2)


# --- sessionspec bench ------------------------------------------------------------------------------


def _workload(path: Path) -> Path:
    lines = [
        {"op": "append", "type": "turn/start", "data": {"turn": 1}},
        {"op": "append", "type": "user/message", "data": user_message("u1"), "surfaceOp": "append"},
        {"op": "derive"},
        {"op": "append", "type": "assistant/message", "data": assistant_message("a1"), "surfaceOp": "append",
         "sourceEventSeqs": []},
        {"op": "append", "type": "user/message", "data": user_message("s"), "surfaceOp": replace_op(1, 2),
         "sourceEventSeqs": [1, 2]},
        {"op": "derive"},
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


@pytest.mark.parametrize("impl", ["live", "model"])
def test_bench_replays_a_workload(impl: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    workload = _workload(tmp_path / "w.jsonl")
    saved = tmp_path / "log.jsonl"
    assert cli.main(["bench", "--workload", str(workload), "--impl", impl, "--json", "--save", str(saved)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["impl"], report["events"], report["derives"]) == (impl, 4, 2)
    assert report["events_per_s"] > 0 and saved.is_file()


def test_bench_reports_a_rejected_workload(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    workload = tmp_path / "bad.jsonl"
    workload.write_text(json.dumps({"op": "append", "type": "session/end-seed", "data": {}}) + "\n", encoding="utf-8")
    assert cli.main(["bench", "--workload", str(workload)]) == 1
    assert "SESSION-APPEND-COMMIT.5" in capsys.readouterr().err


def test_new_event_is_an_event() -> None:
    made = new_event("turn/start", 3, 7, FrozenDict({"turn": 1}), None, None, False)
    assert made == Event("turn/start", 3, 7, FrozenDict({"turn": 1})) and repr(made).startswith("Event('turn/start'")
    with pytest.raises(TypeError):
        made.seq = 4  # type: ignore[misc]


def test_bench_generates_its_own_workload(capsys: pytest.CaptureFixture[str]) -> None:
    """`sessionspec bench --turns N` needs nothing outside the package (sessionspec.testing.workload)."""
    assert cli.main(["bench", "--turns", "3", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["impl"] == "live" and result["events"] > 3 * 30 and result["derives"] == 9


def test_the_workload_is_the_shared_generators_line_for_line() -> None:
    """Same parameters, same lines as the generator the benchmarks were first measured with."""
    script = Path(__file__).resolve().parents[2] / "shared" / "bench" / "workload.py"
    if not script.is_file():
        pytest.skip("the shared generator is not beside this checkout")
    shared = subprocess.run([sys.executable, str(script), "--turns", "30"], capture_output=True, text=True, check=True)
    assert shared.stdout.splitlines() == list(workload_lines(Shape(turns=30)))


@pytest.mark.parametrize("turns", ["0", "-3", "x"])
def test_bench_refuses_a_bad_number_of_turns(turns: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        cli.main(["bench", "--turns", turns])
    assert info.value.code == 2 and "--turns" in capsys.readouterr().err


def test_request_header_and_context_are_folded_as_events_commit() -> None:
    header = {"reason": "initial", "header": {"config": {"provider": "deepseek", "model": "deepseek-chat"}, "system": "s"}}
    sessions = [fresh(impl) for impl in (live.Session, model.Session)]
    for session in sessions:
        assert session.request_header() is None and session.request_context() is None
        session.append("request/header", header)
        session.append("request/context", {"cwd": "/work"})
    assert sessions[0].request_header() == sessions[1].request_header() is not None
    assert sessions[0].request_context() == sessions[1].request_context() == {"cwd": "/work"}
    reseeded = live.Session.create("s", seed=sessions[0].events, clock=clock())
    assert reseeded.request_header() == sessions[1].request_header()
