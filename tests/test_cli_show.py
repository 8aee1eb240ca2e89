"""`sessionspec show` and `sessionspec demo`, run as a user runs them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
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


def test_messages_at_a_seq_are_what_the_model_saw_then(log: Path) -> None:
    result = sessionspec("show", str(log), "--view", "messages", "--at", "9")  # piped: JSON by default
    assert result.returncode == 0, result.stderr
    shown = json.loads(result.stdout)
    events = example_session("model").events[:10]
    assert [item["message"] for item in shown["items"]] == derive_messages(events)
    assert (shown["at"], shown["nodes"], shown["replaceGeneration"]) == (9, [1, 4, 7], 1)


def test_diff_names_what_each_replace_shadowed_and_its_sources(log: Path) -> None:
    shown = json.loads(sessionspec("show", str(log), "--view", "surface", "--diff").stdout)
    assert [(r["seq"], r["shadowedSeqs"], r["sources"]) for r in shown["replacements"]] == [
        (7, [6], [6]), (11, [1, 4, 7], [1, 4, 7])]
    assert shown["replacements"][1]["shadowed"][0]["type"] == "user/message"


def test_text_when_asked_has_no_colour_in_a_pipe(log: Path) -> None:
    result = sessionspec("show", str(log), "--view", "transcript", "--format", "text", "--diff")
    assert result.returncode == 0
    assert "\x1b[" not in result.stdout
    assert "== transcript at seq 12" in result.stdout and "What is in setup.py?" in result.stdout
    assert "seq 11 user/message replaced 1..7: shadowed [1, 4, 7], sources [1, 4, 7]" in result.stdout


def test_the_log_view_and_out_of_range_seqs(log: Path) -> None:
    shown = json.loads(sessionspec("show", str(log), "--view", "log", "--at", "3").stdout)
    assert [item["seq"] for item in shown["items"]] == [0, 1, 2, 3]
    assert sessionspec("show", str(log), "--at", "99").returncode == 2


def test_point_in_time_matches_the_reference_views() -> None:
    events = example_session("model").events
    for at in range(len(events)):
        point = point_in_time(events, at)
        assert [m for _, m in point.messages()] == derive_messages(events[: at + 1])
        assert point.transcript() == transcript(events[: at + 1])


def test_show_stops_at_an_invalid_log(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    events = [e.to_json() for e in example_session("model").events]
    events[11]["surfaceOp"] = {"op": "replace", "start": 99, "end": 99}
    head = {"type": "session", "version": 0, "id": "demo", "createdAt": 1, "delegationDepth": 0}
    path.write_text("\n".join(json.dumps(v) for v in [head, *events]) + "\n")
    result = sessionspec("show", str(path))
    assert result.returncode == 1 and "SESSION-SURFACE-REPLACE.1" in result.stderr


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
