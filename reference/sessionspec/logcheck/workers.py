"""Processes that parse and survey blocks of a JSONL log while this one folds the blocks before.

Why: parsing a block (proving it canonical) and surveying it (`blocks.parse_block`, `survey.survey`) is most of
a check's work and needs no state, so on a machine with a core to spare it can run beside the
stateful fold. What crosses the pipes: this process sends a block's exact bytes; the surveyor
answers with whatever `work` makes of them (for the checker, the block's runs as JSON).

Trust. The surveyor is this program, forked, running `work` on bytes this process read, so its
answer is taken as a function call's would be. What is not assumed is that it lives: if it
dies, declines (an empty answer, when `work` raised) or a pipe breaks, `submit` and `answer`
say so and the caller does the work itself from the same bytes, so the findings never depend
on the surveyor. It is forked only where that is safe (Linux, one thread, two usable CPUs or
when asked, pipes wide enough that neither side can block the other), ignores SIGINT (an
interrupt is the parent's to handle), and exits when its request pipe closes: when this
process closes it, or dies.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import BinaryIO, ClassVar, Final

_PIPE_BYTES: Final = 1 << 20
"""Room in each pipe for every answer the surveyor may owe: then it never blocks on a write.

So the two never deadlock with both pipes full: the parent may block while it sends a block
(a block of one over-long line can be larger than the pipe), but the surveyor, reading requests
between answers, always drains it. The surveyor owes at most `sources.OWED` answers, each a few
dozen bytes a line of a block of at most two `BLOCK`s (a longer block is a single line)."""


def _widened(fd: int) -> bool:
    """Give a pipe `_PIPE_BYTES` of room; False where the system will not (then no surveyor is forked)."""
    try:
        import fcntl

        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, _PIPE_BYTES)
        return int(fcntl.fcntl(fd, fcntl.F_GETPIPE_SZ)) >= _PIPE_BYTES
    except (AttributeError, ImportError, OSError):
        return False


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _read_exactly(stream: BinaryIO, size: int) -> bytes | None:
    data = stream.read(size)
    return data if data is not None and len(data) == size else None


def _read_fd(fd: int, size: int) -> bytes | None:
    """Exactly `size` bytes from a pipe, unbuffered (so `select` sees all that is waiting); None at EOF."""
    parts: list[bytes] = []
    got = 0
    while got < size:
        more = os.read(fd, size - got)
        if not more:
            return None
        parts.append(more)
        got += len(more)
    return b"".join(parts)


def _framed(data: bytes) -> bytes:
    return len(data).to_bytes(4, "little") + data


def _serve(requests: BinaryIO, replies: int, work: Callable[[bytes], bytes]) -> None:
    """The surveyor's loop: a length-prefixed request in, a length-prefixed answer out, until EOF."""
    while (head := _read_exactly(requests, 4)) is not None:
        part = _read_exactly(requests, int.from_bytes(head, "little"))
        if part is None:
            return
        try:
            answer = work(part)
        except Exception:
            answer = b""
        _write_all(replies, _framed(answer))


def usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


LOOKS: Final = 3
"""How often `free_cpus` reads the runnable count, a millisecond apart: a task that only passes through is not a load."""


def runnable_others() -> int | None:
    """Tasks runnable on the machine right now besides this one (the fewest of LOOKS looks), or None where it cannot
    be read (no /proc/loadavg: not Linux).

    Its fourth field, "runnable/total", counts the tasks running or waiting for a CPU at this moment, this
    one among them. `os.getloadavg` is no substitute: a one-minute average still counts, for a minute,
    the work of a command that has ended (a benchmark's previous round, say) and takes as long to see a
    load that has begun.
    """
    fewest: int | None = None
    for look in range(LOOKS):
        if look:
            time.sleep(0.001)
        try:
            with open("/proc/loadavg", "rb") as stream:
                runnable = int(stream.read().split()[3].split(b"/")[0])
        except (OSError, IndexError, ValueError):
            return None
        fewest = runnable if fewest is None else min(fewest, runnable)
    return None if fewest is None else max(fewest - 1, 0)


def free_cpus() -> int:
    """The CPUs this process may use that no other task wants now, the one it runs on included (at least 1).

    A surveyor on a CPU that other work keeps busy shares it with that work, and costs more than it saves
    (issue 36: two processes under a load of 2 took 1.2 s where one took 0.95 s), so the default number of
    surveyors is taken from this, not from the CPUs there are.
    """
    usable = usable_cpus()
    others = runnable_others()
    if others is None:
        return usable
    return max(1, min(usable, (os.cpu_count() or usable) - others))


def can_fork() -> bool:
    """Whether a fork without exec is safe here: Linux (no macOS framework state), one thread (no lock held by another)."""
    return sys.platform == "linux" and hasattr(os, "fork") and threading.active_count() == 1


class Surveyor:
    """The parent's handle: `submit` blocks in order, read their `answer`s in the same order, then `close`."""

    _held: ClassVar[set[int]] = set()
    """The parent's ends of every open surveyor's pipes: a later surveyor closes them first thing, or an earlier
    surveyor would never see its request pipe end (and the parent would wait for it forever)."""

    def __init__(self, pid: int, requests: int, replies: int) -> None:
        self.pid = pid
        self._requests = requests
        self._replies = replies
        self.alive = True
        self.owed = 0
        """Blocks submitted and not yet answered."""

    @classmethod
    def start(cls, work: Callable[[bytes], bytes], *, forced: bool = False) -> Surveyor | None:
        """A surveyor running `work`, or None where none should be forked (see the module docstring)."""
        if not can_fork() or (not forced and usable_cpus() < 2):
            return None
        try:
            request_read, request_write = os.pipe()
        except OSError:  # out of file descriptors, say
            return None
        try:
            reply_read, reply_write = os.pipe()
        except OSError:
            os.close(request_read)
            os.close(request_write)
            return None
        pipes = (request_read, request_write, reply_read, reply_write)
        if not all(_widened(fd) for fd in (request_write, reply_write)):
            for fd in pipes:
                os.close(fd)
            return None
        try:
            pid = os.fork()
        except OSError:
            for fd in pipes:
                os.close(fd)
            return None
        if pid == 0:  # the surveyor
            code = 0
            try:
                signal.signal(signal.SIGINT, signal.SIG_IGN)
                for fd in (request_write, reply_read, *Surveyor._held):
                    os.close(fd)
                with open(request_read, "rb", buffering=_PIPE_BYTES) as requests:
                    _serve(requests, reply_write, work)
            except BaseException:
                code = 1
            finally:
                os._exit(code)
        os.close(request_read)
        os.close(reply_write)
        Surveyor._held.update((request_write, reply_read))
        return cls(pid, request_write, reply_read)

    def submit(self, part: bytes) -> bool:
        """Send one block; False if the surveyor is gone (then its answers are the caller's to make)."""
        if self.alive:
            try:
                _write_all(self._requests, _framed(part))
                self.owed += 1
            except OSError:
                self.alive = False
        return self.alive

    def ready(self) -> bool:
        """Whether `answer` would return without waiting (an answer has begun to arrive, or the surveyor is gone)."""
        if not self.alive:
            return True
        try:
            return bool(select.select([self._replies], [], [], 0)[0])
        except (OSError, ValueError):
            return True

    def answer(self) -> bytes | None:
        """The answer to the oldest unanswered block; b"" if the surveyor declined it; None if the surveyor is gone."""
        self.owed = max(self.owed - 1, 0)
        if not self.alive:
            return None
        try:
            head = _read_fd(self._replies, 4)
            answer = None if head is None else _read_fd(self._replies, int.from_bytes(head, "little"))
        except OSError:
            answer = None
        if answer is None:
            self.alive = False
        return answer

    def close(self) -> None:
        """Close the request pipe (the surveyor exits at its end) and reap the surveyor; once."""
        if self._requests < 0:
            return
        self.alive = False
        Surveyor._held.difference_update((self._requests, self._replies))
        with contextlib.suppress(OSError):
            os.close(self._requests)
        self._requests = -1
        with contextlib.suppress(OSError):
            os.close(self._replies)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self.pid, 0)


__all__ = ["Surveyor", "can_fork", "free_cpus", "usable_cpus"]
