"""Progress bars for long runs, on a terminal only.

A bar is for a person watching; in a pipe, a log file or CI it is noise in someone else's
output. So it is drawn on stderr, only when stderr is a TTY, at most a few times a second, and
erased when the run ends. No dependency: a bar is one carriage-returned line.
"""

from __future__ import annotations

import os
import sys
import time
from types import TracebackType
from typing import TextIO


def interactive(stream: TextIO | None = None) -> bool:
    """True when `stream` (default stderr) is a terminal and the user has not asked for quiet."""
    stream = stream if stream is not None else sys.stderr
    return stream.isatty() and os.environ.get("TERM") != "dumb" and "SESSIONSPEC_NO_PROGRESS" not in os.environ


class Progress:
    """`with Progress("check x.jsonl") as bar: bar(done, total)`; does nothing off a terminal."""

    WIDTH = 30
    INTERVAL = 0.1

    def __init__(self, label: str, *, stream: TextIO | None = None, enabled: bool | None = None) -> None:
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = interactive(self.stream) if enabled is None else enabled
        self._last = 0.0
        self._drawn = False

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self._last < self.INTERVAL:
            return
        self._last = now
        if total > 0:
            fraction = min(done / total, 1.0)
            filled = int(fraction * self.WIDTH)
            bar = "#" * filled + "-" * (self.WIDTH - filled)
            text = f"\r{self.label} [{bar}] {fraction:4.0%}"
        else:
            text = f"\r{self.label} {done:,}"
        self.stream.write(text)
        self.stream.flush()
        self._drawn = True

    def close(self) -> None:
        """Erase the bar, so the next line of output starts clean."""
        if self._drawn:
            self.stream.write("\r\x1b[2K")
            self.stream.flush()
            self._drawn = False

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, trace: TracebackType | None) -> None:
        self.close()
