"""Progress bars for long runs, on a terminal only, drawn by rich.

A bar is for a person watching; in a pipe, a log file or CI it is noise in someone else's
output. So it is drawn on stderr, only when stderr is a terminal (and neither `TERM=dumb` nor
`SESSIONSPEC_NO_PROGRESS` says otherwise), only once a run has taken about a second (a quick
command stays quiet), and erased when the run ends. rich does the drawing: refresh rate, width,
rate and time-left estimates are what a well-kept library does better than a hand-drawn line.
rich is imported when a bar is first drawn: a command that ends within the delay, or runs in a
pipe, never loads it.
"""

from __future__ import annotations

import importlib
import os
import sys
import time
from types import TracebackType
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from rich.progress import Progress as RichProgress
    from rich.progress import TaskID

DELAY = 1.0
"""Seconds a run may take before its bar appears."""


def interactive(stream: TextIO | None = None) -> bool:
    """True when `stream` (default stderr) is a terminal and the user has not asked for quiet."""
    stream = stream if stream is not None else sys.stderr
    return stream.isatty() and os.environ.get("TERM") != "dumb" and "SESSIONSPEC_NO_PROGRESS" not in os.environ


class Progress:
    """`with Progress("check x.jsonl") as bar: bar(done, total)`, or `bar(done, total, phase)`; nothing off a terminal."""

    def __init__(self, label: str, *, stream: TextIO | None = None, enabled: bool | None = None,
                 delay: float = DELAY) -> None:
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = interactive(self.stream) if enabled is None else enabled
        self._started = time.monotonic()
        self._delay = delay
        self._bar: RichProgress | None = None
        self._task: TaskID | None = None

    @property
    def drawn(self) -> bool:
        return self._bar is not None

    def __call__(self, done: int, total: int, phase: str | None = None) -> None:
        """`done` of `total` (0: not known); `phase` names the step under way ("validating", an obligation...)."""
        if not self.enabled or time.monotonic() - self._started < self._delay:
            return
        description = self.label if phase is None else f"{self.label}: {phase}"
        if self._bar is None:
            rich: Any = importlib.import_module("rich.progress")
            console = importlib.import_module("rich.console").Console(file=self.stream, force_terminal=True)
            self._bar = rich.Progress(rich.TextColumn("{task.description}"), rich.BarColumn(), rich.MofNCompleteColumn(),
                                      rich.TimeRemainingColumn(), console=console, transient=True)
            self._bar.start()
            self._task = self._bar.add_task(description, total=total or None)
        assert self._task is not None
        self._bar.update(self._task, completed=done, total=total or None, description=description)

    def close(self) -> None:
        """Erase the bar, so the next line of output starts clean."""
        if self._bar is not None:
            self._bar.stop()
            self._bar = None

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, trace: TracebackType | None) -> None:
        self.close()
