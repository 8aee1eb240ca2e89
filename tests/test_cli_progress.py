"""Progress bars (rich): on a terminal only, only after about a second, erased at the end."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from sessionspec import storage
from sessionspec.cli import prove as prove_command
from sessionspec.cli import repair as repair_command
from sessionspec.cli.progress import Progress
from sessionspec.testing import crosshair as proving
from sessionspec.testing import implementations
from sessionspec.testing.builders import user_message


def test_no_bar_off_a_terminal() -> None:
    quiet = io.StringIO()  # a StringIO is not a terminal
    with Progress("check", stream=quiet, delay=0) as bar:
        bar(5, 10)
    assert quiet.getvalue() == "" and not bar.drawn


def test_no_bar_for_a_quick_run() -> None:
    loud = io.StringIO()
    with Progress("check", stream=loud, enabled=True, delay=60) as bar:
        bar(5, 10)
        assert not bar.drawn
    assert loud.getvalue() == ""


def test_a_bar_for_a_slow_run_shows_progress_and_is_erased() -> None:
    loud = io.StringIO()
    with Progress("check", stream=loud, enabled=True, delay=0) as bar:
        bar(5, 10)
        assert bar.drawn
    assert not bar.drawn
    text = loud.getvalue()
    assert "check" in text and "5/10" in text


class Phases:
    """A bar that keeps the phases it was told, in order."""

    def __init__(self) -> None:
        self.seen: list[str | None] = []

    def __call__(self, done: int, total: int, phase: str | None = None) -> None:
        if not self.seen or self.seen[-1] != phase:
            self.seen.append(phase)


def test_a_bar_names_its_phase() -> None:
    loud = io.StringIO()
    with Progress("prove", stream=loud, enabled=True, delay=0) as bar:
        bar(1, 14, "fold_prefix_then_one")
    assert "prove: fold_prefix_then_one" in loud.getvalue()


def test_repair_tells_reading_validating_writing_and_verifying(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "open.jsonl"
    events = [{"type": "turn/start", "seq": 0, "time": 1, "data": {"turn": 1}},
              {"type": "user/message", "seq": 1, "time": 2, "data": user_message("u1", "hi"), "surfaceOp": "append"}]
    storage.save(path, {"version": 0, "id": "s", "createdAt": 1}, events)
    monkeypatch.setattr(repair_command, "EVERY", 1)
    phases = Phases()
    watched = repair_command.Watched(phases, implementations.factory("live"))  # type: ignore[arg-type]
    result = watched.load(path, None)
    assert result.needs_repair and len(result.closers) == 1
    phases(0, 0, "writing")
    watched.seeding = "verifying what was written"
    storage.repair(path, create=watched.create, plan=result)
    assert phases.seen == ["reading", "validating", "writing", "verifying what was written"]
    assert len(storage.load(path).events) == 3


def test_prove_names_the_obligations_running(capsys: pytest.CaptureFixture[str]) -> None:
    phases = Phases()
    tally = prove_command.Tally(phases, 2, quiet=False)  # type: ignore[arg-type]
    first, second = (proving.Obligation("obligations_x", name, "") for name in ("first", "second"))
    tally.starting(first)
    tally.starting(second)
    tally.finished(proving.Result(first, proving.NO_COUNTEREXAMPLE, "", 4.0, 4.2))
    assert phases.seen == ["first", "first (+1)", "second"]
    assert "obligations_x.first: no counterexample within the bound (4.0 s, 4.2 s CPU)" in capsys.readouterr().err
