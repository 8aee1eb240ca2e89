"""The runner's side of SCP v0: one testee process, driven so that nothing it does can hang or crash the runner.

`Connection` writes request lines and reads answer lines so that requests can be pipelined (many
in flight, answers matched in order) and a testee that misbehaves is named, never waited on
forever: a deadline per answer that a partial line does not extend, a bound on an answer line
(read in linear time, dropped as soon as it is over), and a kind for each way a testee fails: it
could not start, exited (with its code), closed stdout but lives, timed out, overflowed the line
bound, or wrote something that is not an answer. Its stderr is kept as a bounded tail for reports.

Throughput: requests are written in batches (`batch` lines or `BATCH_BYTES`, whichever comes
first, and whatever is left when an answer is wanted), and answers are read in the calling
thread, in large reads, when they are wanted. A write per request and a reader thread each cost
a wake-up of one process by the other and a handover of the interpreter lock, which on a busy
machine was most of the time a request spent in the pipe. While a batch is written the answers
already waiting are read too, so a testee blocked on a full stdout can never hold a write, and
after it what the testee answered meanwhile is read without waiting, so a testee is not left
blocked on a full stdout (snapshot answers are large) until the runner next wants an answer.
"""

from __future__ import annotations

import collections
import contextlib
import json
import os
import re
import select
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from typing import IO, Any, Final

import orjson

from sessionspec.errors import SpecViolation
from sessionspec.jsontext import parse
from sessionspec.wire.protocol import MAX_LINE_BYTES, Answer, dumps

STDERR_TAIL: Final = 4096
EXIT_POLL: Final = 0.25
"""Seconds between looks at whether the testee has exited while its answer is awaited."""
BATCH: Final = 32
"""Request lines held before they are written (unless an answer is wanted first)."""
BATCH_BYTES: Final = 1 << 16
READ_BYTES: Final = 1 << 18
_LONG_DIGITS: Final = re.compile(rb"\d{20,}")


class RunOver(Exception):
    """The run's own deadline passed while the runner waited: not the testee's failure, the end of the run."""


class TesteeFailure(Exception):
    """The testee could not answer: `unstartable`, `exited`, `closed`, `timeout`, `overflow` or `protocol`."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message

    def answer(self) -> Answer:
        """The failure in the shape of an answer, so a report can show it beside the expected one."""
        return {"ok": False, "error": {"kind": f"testee-{self.kind}", "message": self.message, "rule": None}}


class _Answers:
    """Answer lines split from what the testee writes, in linear time; `ended` once it closed stdout or overflowed."""

    def __init__(self, bound: int) -> None:
        self.bound = bound
        self.lines: collections.deque[bytes] = collections.deque()
        self.partial = bytearray()
        self.ended: str | None = None
        """None while reading; "closed" after EOF; "overflow" after a line over the bound (reading stops)."""

    def feed(self, chunk: bytes) -> None:
        if not chunk:
            self.ended = "closed"
            return
        start = 0
        end = chunk.find(b"\n")
        while end >= 0:
            if self.partial:
                self.partial += chunk[start:end]
                self.lines.append(bytes(self.partial))
                self.partial.clear()
            else:
                self.lines.append(chunk[start:end])
            start = end + 1
            end = chunk.find(b"\n", start)
        self.partial += chunk[start:]
        if len(self.partial) > self.bound:
            self.partial.clear()
            self.ended = "overflow"


def _keep_tail(stream: IO[bytes], tail: collections.deque[bytes]) -> None:
    """The stderr thread: drain everything (a full pipe would stall the testee), keep the last STDERR_TAIL bytes."""
    fd = stream.fileno()
    kept = 0
    while True:
        try:
            chunk = os.read(fd, 1 << 16)
        except OSError:
            return
        if not chunk:
            return
        tail.append(chunk)
        kept += len(chunk)
        while kept - len(tail[0]) >= STDERR_TAIL:
            kept -= len(tail.popleft())


class Connection:
    """One running testee. `send` queues a request line, `receive` reads the next answer; `request` does both."""

    def __init__(self, command: Sequence[str], *, timeout: float = 10.0, bound: int | None = None,
                 batch: int = BATCH, deadline: float | None = None) -> None:
        self.command = list(command)
        self.timeout = timeout
        self.deadline = deadline
        """time.monotonic() past which no wait goes on: RunOver, the run's end, not a testee failure."""
        self.bound = bound if bound is not None else MAX_LINE_BYTES
        self.batch = max(1, batch)
        self.restarts = 0
        self.requests = 0
        self._process: subprocess.Popen[bytes] | None = None
        self._answers = _Answers(self.bound)
        self._tail: collections.deque[bytes] = collections.deque()
        self._queued: list[bytes] = []
        self._queued_bytes = 0
        self._sent: collections.deque[float] = collections.deque()
        self._last_answer = 0.0

    # --- the process ----------------------------------------------------------------------------

    def start(self) -> None:
        """Start (or restart) the testee; raises TesteeFailure("unstartable") if it cannot be run at all."""
        self.close()
        try:
            # Its own process group (session): whatever it forks is killed with it, and holds no pipe of ours after.
            process = subprocess.Popen(self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                       stderr=subprocess.PIPE, bufsize=0, start_new_session=True)
        except (OSError, ValueError) as error:
            raise TesteeFailure("unstartable", f"cannot start testee {self.command}: {error}") from None
        assert process.stdin is not None and process.stdout is not None and process.stderr is not None
        os.set_blocking(process.stdin.fileno(), False)
        os.set_blocking(process.stdout.fileno(), False)
        self._process = process
        self._answers = _Answers(self.bound)
        self._tail = collections.deque()
        self._queued, self._queued_bytes = [], 0
        self._sent.clear()
        threading.Thread(target=_keep_tail, args=(process.stderr, self._tail), daemon=True).start()

    def restart(self) -> None:
        self.restarts += 1
        self.start()

    @property
    def running(self) -> bool:
        return self._process is not None

    def stderr_tail(self) -> str:
        return b"".join(self._tail)[-STDERR_TAIL:].decode("utf-8", "replace").strip()

    def _failure(self, kind: str, what: str) -> TesteeFailure:
        """Name what went wrong, then make sure the process is gone: the next case starts a fresh one."""
        process = self._process
        code = process.poll() if process is not None else None
        if kind == "closed" and process is not None and code is None:
            # EOF on stdout usually means the process is exiting: give it a moment to say so.
            with contextlib.suppress(subprocess.TimeoutExpired):
                code = process.wait(timeout=0.5)
        if kind == "closed" and code is not None:
            kind, what = "exited", f"exited with code {code} {what}"
            self._read_rest()
        self._kill()
        tail = self.stderr_tail()
        return TesteeFailure(kind, what + (f"; stderr: {tail[-600:]}" if tail else ""))

    def _read_rest(self) -> None:
        """What an exited testee wrote before it went, still in the pipe: the answers it gave are its own, and a request
        it answered is not the one it died on (`leftover`)."""
        process = self._process
        if process is None or process.stdout is None:
            return
        while self._answers.ended is None:
            try:
                chunk = os.read(process.stdout.fileno(), READ_BYTES)
            except BlockingIOError:
                return
            except OSError:
                chunk = b""
            self._answers.feed(chunk)

    def leftover(self) -> bytes | None:
        """The next answer line the testee wrote before it failed, or None: read without waiting, after a failure."""
        return self._answers.lines.popleft() if self._answers.lines else None

    def abandon(self, kind: str, what: str) -> TesteeFailure:
        """Stop reading this process: it is killed (with its group) and the failure that says why is returned. For
        an answer the runner will not read (`Exchange`: far larger than the reference's), whose stream, and every
        answer still in flight on it, would cost as much again to drain."""
        return self._failure(kind, what)

    def _kill(self) -> None:
        """The testee and every process it started (its process group) killed, its pipes closed."""
        process, self._process = self._process, None
        self._queued, self._queued_bytes = [], 0
        self._sent.clear()
        if process is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)  # the group: a child still holding stdout goes too
        if process.poll() is None:
            process.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=5)
        for stream in (process.stdin, process.stdout, process.stderr):
            with contextlib.suppress(OSError):
                if stream is not None:
                    stream.close()

    def close(self) -> None:
        """EOF ends the testee; one that lingers is killed."""
        process = self._process
        if process is not None and process.poll() is None and process.stdin is not None:
            with contextlib.suppress(OSError, subprocess.TimeoutExpired):
                process.stdin.close()
                process.wait(timeout=2)
        self._kill()

    # --- requests and answers -------------------------------------------------------------------

    def send(self, request: Mapping[str, Any] | bytes) -> None:
        """Queue one request line without waiting for its answer (pipelining); raises TesteeFailure."""
        if self._process is None:
            self.start()
        line = request if isinstance(request, bytes) else dumps(dict(request))
        self.requests += 1
        self._queued.append(line + b"\n")
        self._queued_bytes += len(line) + 1
        if len(self._queued) >= self.batch or self._queued_bytes >= BATCH_BYTES:
            self._push()

    def _push(self) -> None:
        """Write every queued line by the deadline, reading answers meanwhile: a testee cannot hold the runner."""
        if not self._queued:
            return
        process = self._process
        assert process is not None and process.stdin is not None and process.stdout is not None
        count = len(self._queued)
        view = memoryview(b"".join(self._queued))
        self._queued, self._queued_bytes = [], 0
        stdin, stdout = process.stdin.fileno(), process.stdout.fileno()
        deadline = time.monotonic() + self.timeout
        while view:
            try:
                view = view[os.write(stdin, view):]
            except BlockingIOError:
                pass
            except OSError:  # EPIPE: it is gone
                raise self._failure("closed", "before reading the request") from None
            if not view:
                break
            remaining = deadline - time.monotonic()
            readable, writable, _ = select.select([stdout] if self._answers.ended is None else [], [stdin], [],
                                                  max(0.0, remaining))
            if readable:
                self._read(stdout)
            elif not writable:
                raise self._failure("timeout", f"did not read a request within {self.timeout:g} s")
        if self._answers.ended is None:
            self._read(stdout)  # what it answered meanwhile: a full stdout would stall it until the next receive
        now = time.monotonic()
        self._sent.extend([now] * count)

    def _read(self, fd: int) -> None:
        try:
            chunk = os.read(fd, READ_BYTES)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        self._answers.feed(chunk)

    def receive_raw(self) -> bytes:
        """The answer line to the oldest request in flight, unparsed (without its newline); raises TesteeFailure."""
        self._push()
        answers = self._answers
        if not answers.lines and answers.ended is None:
            process = self._process
            assert process is not None and process.stdout is not None
            fd = process.stdout.fileno()
            # An answer is due `timeout` seconds after its request was sent or the answer before it came, whichever
            # is later: a testee working through a pipeline is not late, one that stalls is; partial lines do not count.
            sent = self._sent[0] if self._sent else time.monotonic()
            deadline = max(sent, self._last_answer) + self.timeout
            while not answers.lines and answers.ended is None:
                self._wait(fd, deadline)
        if not answers.lines:
            if answers.ended == "overflow":
                raise self._failure("overflow", f"wrote an answer line over {self.bound:,} bytes")
            raise self._failure("closed", "closed its stdout without answering")
        if self._sent:
            self._sent.popleft()
        self._last_answer = time.monotonic()
        return answers.lines.popleft()

    def _wait(self, fd: int, deadline: float) -> None:
        """Read what the testee writes next, by `deadline` (the answer's) and the run's own deadline.

        Waits in short slices, so a testee that exited is noticed even when a process it started still
        holds its stdout open (EOF would then never come): its answers end with it."""
        while True:
            now = time.monotonic()
            if self.deadline is not None and now >= self.deadline:
                self._kill()
                raise RunOver("the run's deadline passed")
            if now >= deadline:
                raise self._failure("timeout", f"no answer within {self.timeout:g} s")
            ready = select.select([fd], [], [], min(EXIT_POLL, deadline - now))[0]
            if ready:
                self._read(fd)
                return
            process = self._process
            if process is not None and process.poll() is not None:
                self._read(fd)  # what it wrote before it exited, if anything is there now
                if not self._answers.lines:
                    self._answers.ended = "closed"
                return

    def receive(self) -> Answer:
        """The answer to the oldest request in flight; raises TesteeFailure."""
        return parse_answer(self.receive_raw())

    def request(self, request: Mapping[str, Any] | bytes) -> Answer:
        """Send one request and read its answer (lock-step)."""
        self.send(request)
        return self.receive()

    @property
    def in_flight(self) -> int:
        return len(self._sent) + len(self._queued)


def parse_answer(raw: bytes) -> Answer:
    """A protocol answer, or TesteeFailure("protocol") quoting the line that is not one."""
    quoted = raw.rstrip(b"\r").decode("utf-8", "replace")
    quoted = quoted if len(quoted) <= 300 else quoted[:300] + "..."
    if _LONG_DIGITS.search(raw):  # orjson reads an integer beyond 64 bits as a float: read it exactly
        answer = _slow_answer(raw, quoted)
    else:
        try:
            answer = orjson.loads(raw)
        except orjson.JSONDecodeError:
            answer = _slow_answer(raw, quoted)
    if not isinstance(answer, dict) or type(answer.get("ok")) is not bool:
        raise TesteeFailure("protocol", f"answer is not an object with a boolean ok: {quoted!r}")
    if not answer["ok"]:
        error = answer.get("error")
        if not isinstance(error, dict) or type(error.get("kind")) is not str:
            raise TesteeFailure("protocol", f"failure answer without error.kind: {quoted!r}")
    return answer


def _slow_answer(raw: bytes, quoted: str) -> Any:
    """An answer orjson will not read: integers beyond 64 bits (read exactly), or nesting beyond its limit."""
    try:
        return json.loads(raw)
    except RecursionError:
        try:
            return parse(raw)
        except SpecViolation as violation:
            raise TesteeFailure("protocol", f"answer is not lossless JSON ({violation.rule}): {quoted!r}") from None
    except ValueError:
        raise TesteeFailure("protocol", f"answer is not JSON: {quoted!r}") from None
