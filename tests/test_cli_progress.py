"""Progress bars (rich): on a terminal only, only after about a second, erased at the end."""

from __future__ import annotations

import io

from sessionspec.cli.progress import Progress


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
