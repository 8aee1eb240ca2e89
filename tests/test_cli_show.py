"""`sessionspec show` and `sessionspec demo`, run as a user runs them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hostile import HEADER, agent_log, lines_of, run_cli, write_jsonl
from sessionspec import storage
from sessionspec.cli.demo import example_session
from sessionspec.cli.render import point_in_time
from sessionspec.views import derive_messages, transcript


def sessionspec(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "sessionspec.cli", *args], capture_output=True, text=True, timeout=60)


@pytest.fixture(scope="module", params=["jsonl", "jsonl.zstd", "sqlite"])
def log(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    session = example_session("model")
    path = tmp_path_factory.mktemp("show") / f"demo.{request.param}"
    storage.save(path, session.header, session.events)
    return path


def json_lines(text: str) -> list[Any]:
    return [json.loads(line) for line in text.splitlines()]


def test_messages_at_a_seq_are_what_the_model_saw_then(log: Path) -> None:
    result = sessionspec("show", str(log), "--view", "messages", "--at", "9", "--format", "json")
    assert result.returncode == 0, result.stderr
    shown = json.loads(result.stdout)
    events = example_session("model").events[:10]
    assert [item["message"] for item in shown["items"]] == derive_messages(events)
    assert (shown["at"], shown["nodes"], shown["replaceGeneration"]) == (9, [1, 4, 7], 1)


def test_piped_output_is_json_lines_with_the_summary_last(log: Path) -> None:
    """Issue 17: one object a line when piped (the default) or with --format jsonl."""
    for args in ((), ("--format", "jsonl")):
        ran = run_cli("show", str(log), "--view", "log", *args)
        assert ran.code == 0, ran
        lines = json_lines(ran.out)
        assert [item["seq"] for item in lines[:-1]] == list(range(13))
        assert lines[-1] == {"view": "log", "at": 12, "events": 13, "nodes": [11], "replaceGeneration": 2}
    messages = json_lines(run_cli("show", str(log), "--at", "9").out)
    assert [item["message"] for item in messages[:-1]] == derive_messages(example_session("model").events[:10])


def test_diff_names_what_each_replace_shadowed_and_its_sources(log: Path) -> None:
    shown = json.loads(sessionspec("show", str(log), "--view", "surface", "--diff", "--format", "json").stdout)
    assert [(r["seq"], r["shadowedSeqs"], r["sources"]) for r in shown["replacements"]] == [
        (7, [6], [6]), (11, [1, 4, 7], [1, 4, 7])]
    assert shown["replacements"][1]["shadowed"][0]["type"] == "user/message"
    lines = json_lines(run_cli("show", str(log), "--view", "surface", "--diff").out)
    assert [line["replaced"]["seq"] for line in lines if "replaced" in line] == [7, 11]


def test_text_when_asked_has_no_colour_in_a_pipe(log: Path) -> None:
    result = sessionspec("show", str(log), "--view", "transcript", "--format", "text", "--diff")
    assert result.returncode == 0
    assert "\x1b[" not in result.stdout
    assert "== transcript at seq 12" in result.stdout and "What is in setup.py?" in result.stdout
    assert "seq 11 user/message replaced 1..7: shadowed [1, 4, 7], sources [1, 4, 7]" in result.stdout


def test_the_log_view_and_out_of_range_seqs(log: Path) -> None:
    shown = json.loads(sessionspec("show", str(log), "--view", "log", "--at", "3", "--format", "json").stdout)
    assert [item["seq"] for item in shown["items"]] == [0, 1, 2, 3]
    assert run_cli("show", str(log), "--at", "99").code == 2
    for bad in ("-1", "x", "1.5"):
        refused = run_cli("show", str(log), "--at", bad)
        assert refused.code == 2 and "--at" in refused.err


def test_point_in_time_matches_the_reference_views() -> None:
    events = example_session("model").events
    for at in range(len(events)):
        point = point_in_time(events, at)
        assert [m for _, m in point.messages()] == derive_messages(events[: at + 1])
        assert point.transcript() == transcript(events[: at + 1])


def test_the_streaming_viewer_matches_the_reference_fold() -> None:
    """The viewer keeps only the surface, yet shows what the reference fold of the same prefix shows."""
    from sessionspec.cli.view import Viewer

    events = example_session("model").events
    for at in range(len(events)):
        streamed: list[Any] = []
        viewer = Viewer("demo", example_session("model").header, at=at, diff=True, streamed=streamed.append)
        for event in events:
            viewer.feed(None, event.to_json())
        point = point_in_time(events, at)
        assert [m for _, m in viewer.messages()] == derive_messages(events[: at + 1])
        assert tuple(viewer.nodes) == point.nodes and viewer.generation == len(point.replacements)
        assert streamed == [e.to_json() for e in events[: at + 1]]


def forged(tmp_path: Path) -> Path:
    path = tmp_path / "bad.jsonl"
    events = [e.to_json() for e in example_session("model").events]
    events[7]["data"]["message"]["content"][0]["toolCallId"] = "other"  # the pruning forges another call
    head = {"type": "session", "version": 0, "id": "demo", "createdAt": 1, "delegationDepth": 0}
    path.write_text("\n".join(json.dumps(v) for v in [head, *events]) + "\n")
    return path


def test_show_stops_at_an_invalid_log(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    events = [e.to_json() for e in example_session("model").events]
    events[11]["surfaceOp"] = {"op": "replace", "start": 99, "end": 99}
    head = {"type": "session", "version": 0, "id": "demo", "createdAt": 1, "delegationDepth": 0}
    path.write_text("\n".join(json.dumps(v) for v in [head, *events]) + "\n")
    result = sessionspec("show", str(path))
    assert result.returncode == 1 and "SESSION-SURFACE-REPLACE.1" in result.stderr


def test_show_refuses_what_check_refuses(tmp_path: Path) -> None:
    """Finding 4: a message check refuses (SESSION-MESSAGE-SHAPE.8) is no longer shown with exit 0."""
    path = forged(tmp_path)
    assert run_cli("check", str(path)).code == 1
    ran = run_cli("show", str(path))
    assert ran.code == 1 and "SESSION-MESSAGE-SHAPE.8" in ran.err and ":9:" in ran.err


def write_events(path: Path, events: list[dict[str, Any]], tail: bytes = b"") -> Path:
    write_jsonl(path, [lines_of(events)])
    with open(path, "ab") as stream:
        stream.write(tail)
    return path


def test_a_torn_tail_is_said_and_is_a_finding(tmp_path: Path) -> None:
    """Finding 4: `show` on a torn log shows the committed events, says where the tail is torn, and exits 1."""
    path = write_events(tmp_path / "torn.jsonl", agent_log(1, open_tail=True)[0], b'{"type":"tool/res')
    ran = run_cli("show", str(path), "--view", "log")
    assert ran.code == 1 and "torn tail from seq 9" in ran.err and "SESSION-TORN-TAIL.1" in ran.err
    assert json_lines(ran.out)[-1]["events"] == 9


def test_a_lone_surrogate_is_shown_escaped_in_text_and_json(tmp_path: Path) -> None:
    """Finding 4: a message holding a lone surrogate (valid, decision 4) no longer fails to encode."""
    events = agent_log(1)[0]
    events[1]["data"]["content"][0]["text"] = "half \ud800 a pair"
    path = write_events(tmp_path / "surrogate.jsonl", events)
    assert run_cli("check", str(path)).code == 0
    for fmt in ("text", "json", "jsonl"):
        ran = run_cli("show", str(path), "--format", fmt, "--view", "messages")
        assert ran.traceback is None and ran.code == 0, (fmt, ran)
        assert "\\ud800" in ran.out


def test_terminal_escapes_in_a_message_are_not_passed_to_the_terminal(tmp_path: Path) -> None:
    events = agent_log(1)[0]
    events[1]["data"]["content"][0]["text"] = "clear \x1b[2J\x07 and \u202e reversed"
    path = write_events(tmp_path / "escapes.jsonl", events)
    ran = run_cli("show", str(path), "--format", "text", "--view", "transcript")
    assert ran.code == 0 and "\x1b" not in ran.out and "\\x1b[2J\\x07" in ran.out and "\\u202e" in ran.out


def test_nesting_of_100000_levels_is_shown(tmp_path: Path) -> None:
    """Finding 4: the JSON output of a 100,000-deep value (valid, decision 4) encodes without recursion."""
    deep = "[" * 100_000 + "]" * 100_000
    path = tmp_path / "deep.jsonl"
    path.write_text(json.dumps(HEADER, separators=(",", ":")) + "\n"
                    + '{"type":"plugin/deep","seq":0,"time":0,"data":' + deep + ',"ignorable":true}\n')
    for fmt in ("json", "jsonl", "text"):
        ran = run_cli("show", str(path), "--view", "log", "--format", fmt)
        assert ran.traceback is None and ran.code == 0, (fmt, ran.traceback)
    assert deep in run_cli("show", str(path), "--view", "log", "--format", "jsonl").out


def test_a_misspelt_message_key_is_named_not_raised(tmp_path: Path) -> None:
    """Finding 4: where `check` names SESSION-MESSAGE-SHAPE.9 (no message object), so does `show` (it raised KeyError)."""
    events = agent_log(1)[0]
    events[7]["data"]["mesage"] = events[7]["data"].pop("message")
    path = write_events(tmp_path / "misspelt.jsonl", events)
    assert "SESSION-MESSAGE-SHAPE.9" in run_cli("check", str(path)).out
    for view in ("messages", "surface", "log"):
        ran = run_cli("show", str(path), "--view", view, "--format", "text")
        assert ran.traceback is None and ran.code == 1 and "SESSION-MESSAGE-SHAPE.9" in ran.err, (view, ran)


def test_a_newer_format_and_a_foreign_database_cannot_be_read(tmp_path: Path) -> None:
    """Issue 17: exit 2 (cannot read), not 1 (findings), with the rule named."""
    fixtures = Path(__file__).parent / "fixtures" / "storage"
    for name, rule in (("newer.jsonl", "SESSION-FORMAT-VERSION.1"), ("foreign.sqlite", "SESSION-SQLITE-SCHEMA.3"),
                       ("v18.sqlite", "SESSION-SQLITE-SCHEMA.1")):
        for tool in (("show",), ("check",), ("repair",), ("repair", "--write")):
            ran = run_cli(*tool, str(fixtures / name))
            assert ran.code == 2 and rule in ran.err, (name, tool, ran)


def test_legacy_logs_show_as_they_load() -> None:
    """The load gate's legacy upgrades are applied by the viewer too: show agrees with load."""
    path = Path(__file__).parent / "fixtures" / "storage" / "legacy.jsonl"
    ran = run_cli("show", str(path), "--format", "jsonl")
    loaded = storage.load(path)
    assert ran.code == 0, ran
    messages = [item["message"] for item in json_lines(ran.out)[:-1]]
    assert messages == list(derive_messages(loaded.events))


@pytest.mark.parametrize("fmt", ["jsonl", "sqlite"])
def test_demo_stores_checks_and_shows_the_example(tmp_path: Path, fmt: str) -> None:
    result = sessionspec("demo", "--dir", str(tmp_path), "--format", fmt)
    assert result.returncode == 0, result.stderr
    path = tmp_path / f"demo.{fmt}"
    out = result.stdout
    assert f"{path}: ok: 13 events ({fmt})" in out
    for heading in ("--view surface --diff", "--view transcript", "--view messages"):
        assert heading in out
    assert "seq 7 tool/result replaced 6..6" in out and "[pruned: 40 lines]" in out
    assert sessionspec("check", "--strict", str(path)).returncode == 0


def test_demo_with_no_arguments_uses_a_temporary_directory() -> None:
    result = sessionspec("demo")
    assert result.returncode == 0
    first = result.stdout.splitlines()[0]
    assert first.startswith("wrote 13 events") and "sessionspec-demo-" in first
    Path(first.rsplit(" ", 1)[1]).unlink()
