"""How a conform run stops on a signal: as at its deadline, with the report of everything found so far.

A CI job's own timeout ends a step with SIGTERM (then SIGKILL), a person with Ctrl-C (SIGINT), a
closed terminal with SIGHUP. Each used to kill the run where it stood: no `--json`, no summary, and
a testee that ignored SIGTERM left running. Now the first of them raises `Interrupted` where the
run is (a KeyboardInterrupt, which Hypothesis lets leave a test at once without recording the
example as a failure); the runner stops its phases, kills the testee's process group, and returns
what it found; the report is written while further signals are only noted (`deferred_signals`), and
the command exits 128 + the signal's number, as a shell reports a process a signal ended.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import traceback
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Any, Final

STOPS: Final = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


class Interrupted(KeyboardInterrupt):
    """A signal asked the run to stop; raised once, where the run is."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum
        self.name = signal.Signals(signum).name


class _State:
    received: int | None = None
    """The first stopping signal this run received."""
    raising = False
    """Whether that signal raises `Interrupted` now (the run is going) or is only noted (the report is being written)."""


def _handler(signum: int, frame: FrameType | None) -> None:
    first = _State.received is None
    if first:
        _State.received = signum
    if first and _State.raising:
        raise Interrupted(signum)


def _unraisable(unraisable: sys.UnraisableHookArgs) -> None:
    """`Interrupted` raised where Python drops exceptions (a gc or weakref callback, as Hypothesis's gc timer is, or a
    `__del__`) would print "Exception ignored" with a traceback and leave the run going: instead it is not printed,
    and the signal is sent again a moment later, to be raised where the run is."""
    stop = unraisable.exc_value
    if isinstance(stop, Interrupted):
        _State.received = None  # so that the handler raises it again
        threading.Timer(0.05, os.kill, (os.getpid(), stop.signum)).start()
        return
    sys.__unraisablehook__(unraisable)


def received() -> int | None:
    """The stopping signal the run received, if any (however late: during its report too)."""
    return _State.received


def note_signals() -> dict[int, Any]:
    """From the start of the process, a stopping signal is noted rather than fatal: the command's own imports take a
    second or more, and a CI's timeout may come then; the run that follows stops at once and says so. Returns the
    handlers it replaced, for a caller that runs the command as a function (`restore`)."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    return {signum: signal.signal(signum, _handler) for signum in STOPS}


def restore(previous: dict[int, Any]) -> None:
    """The handlers `note_signals` replaced, back: `cli.main` called as a function (a test, a library's caller)
    leaves the process's signals as it found them; a later process forked from it would otherwise only note a
    SIGTERM, and outlive the pool that sent it."""
    for signum, handler in previous.items():
        signal.signal(signum, handler)
    _State.received = None


@contextlib.contextmanager
def stop_on_signals() -> Iterator[None]:
    """SIGTERM, SIGINT and SIGHUP stop the run inside the block (`Interrupted`) instead of killing the process; the
    handlers before it are restored after. A signal noted before the block (`note_signals`) stops the run as soon as it
    starts (`runner.run` asks `received`). Only the main thread can take signals: elsewhere the block does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {signum: signal.signal(signum, _handler) for signum in STOPS}
    hook, sys.unraisablehook = sys.unraisablehook, _unraisable
    _State.raising = True
    try:
        yield
    finally:
        _State.raising = False
        sys.unraisablehook = hook
        for signum, handler in previous.items():
            signal.signal(signum, handler)


@contextlib.contextmanager
def deferred_signals() -> Iterator[None]:
    """A stopping signal inside the block is noted, not raised: the block (killing the testee, writing a report)
    finishes. Outside `stop_on_signals` it changes nothing."""
    raising, _State.raising = _State.raising, False
    try:
        yield
    finally:
        _State.raising = raising


def crash_report(error: BaseException, directory: Path) -> str:
    """How a run the oracle's own fault stopped says so: the error in a line, its traceback in a file of the run's
    directory (named, when it could be written)."""
    path = directory / "oracle-traceback.txt"
    try:
        path.write_text("".join(traceback.format_exception(error)), encoding="utf-8")
        where = f"; the traceback is in {path}"
    except OSError:
        where = ""
    return f"{type(error).__name__}: {str(error)[:300]}{where}"
