"""The runner's side of SCP v0: one testee process, driven so that nothing it does can hang or crash the runner.

`Connection` writes request lines and reads answer lines on its own threads, so requests can be
pipelined (many in flight, answers matched in order) and a testee that misbehaves is named, never
waited on forever: a deadline per answer that a partial line does not extend, a bound on an answer
line (read in linear time, dropped as soon as it is over), and a kind for each way a testee fails:
it could not start, exited (with its code), closed stdout but lives, timed out, overflowed the line
bound, or wrote something that is not an answer. Its stderr is kept as a bounded tail for reports.
`RemoteSession` exposes the read and append API of `model.Session` over a connection.
"""

from __future__ import annotations

import collections
import contextlib
import json
import os
import queue
import re
import select
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from typing import IO, Any, Final

import orjson

from sessionspec.conformance.protocol import MAX_LINE_BYTES, Answer, dumps
from sessionspec.envelope import Event, Replace, parse_event
from sessionspec.errors import Kind, SpecViolation
from sessionspec.jsonvalue import FrozenList, snapshot, thaw
from sessionspec.storage.losslessparse import parse
from sessionspec.surface import Surface

STDERR_TAIL: Final = 4096
_LONG_DIGITS: Final = re.compile(rb"\d{20,}")
_EOF: Final = object()
_OVERFLOW: Final = object()


class TesteeFailure(Exception):
    """The testee could not answer: `unstartable`, `exited`, `closed`, `timeout`, `overflow` or `protocol`."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message

    def answer(self) -> Answer:
        """The failure in the shape of an answer, so a report can show it beside the expected one."""
        return {"ok": False, "error": {"kind": f"testee-{self.kind}", "message": self.message, "rule": None}}


def _read_answers(stream: IO[bytes], lines: queue.Queue[Any], bound: int) -> None:
    """The reader thread: whole lines into `lines`, in linear time; then _OVERFLOW or _EOF, and stop."""
    fd = stream.fileno()
    pending = bytearray()
    while True:
        try:
            chunk = os.read(fd, 1 << 16)
        except OSError:
            chunk = b""
        if not chunk:
            lines.put(_EOF)
            return
        start = 0
        end = chunk.find(b"\n")
        while end >= 0:
            pending += chunk[start:end]
            lines.put(bytes(pending))
            pending.clear()
            start = end + 1
            end = chunk.find(b"\n", start)
        pending += chunk[start:]
        if len(pending) > bound:
            lines.put(_OVERFLOW)
            return


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
    """One running testee. `send` writes a request line, `receive` reads the next answer; `request` does both."""

    def __init__(self, command: Sequence[str], *, timeout: float = 10.0, bound: int | None = None) -> None:
        self.command = list(command)
        self.timeout = timeout
        self.bound = bound if bound is not None else MAX_LINE_BYTES
        self.restarts = 0
        self.requests = 0
        self._process: subprocess.Popen[bytes] | None = None
        self._lines: queue.Queue[Any] = queue.Queue()
        self._tail: collections.deque[bytes] = collections.deque()
        self._sent: collections.deque[float] = collections.deque()
        self._last_answer = 0.0

    # --- the process ----------------------------------------------------------------------------

    def start(self) -> None:
        """Start (or restart) the testee; raises TesteeFailure("unstartable") if it cannot be run at all."""
        self.close()
        try:
            process = subprocess.Popen(self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                       stderr=subprocess.PIPE, bufsize=0)
        except (OSError, ValueError) as error:
            raise TesteeFailure("unstartable", f"cannot start testee {self.command}: {error}") from None
        assert process.stdin is not None and process.stdout is not None and process.stderr is not None
        self._process = process
        self._lines = queue.Queue()
        self._tail = collections.deque()
        self._sent.clear()
        threading.Thread(target=_read_answers, args=(process.stdout, self._lines, self.bound), daemon=True).start()
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
        self._kill()
        tail = self.stderr_tail()
        return TesteeFailure(kind, what + (f"; stderr: {tail[-600:]}" if tail else ""))

    def _kill(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
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
        """Write one request line without waiting for its answer (pipelining); raises TesteeFailure."""
        if self._process is None:
            self.start()
        process = self._process
        assert process is not None and process.stdin is not None
        line = request if isinstance(request, bytes) else dumps(dict(request))
        self.requests += 1
        self._write(process.stdin, line + b"\n")
        self._sent.append(time.monotonic())

    def _write(self, stdin: IO[bytes], data: bytes) -> None:
        """Write all of `data` by the deadline: a testee that stops reading cannot hold the runner."""
        fd = stdin.fileno()
        os.set_blocking(fd, False)
        view = memoryview(data)
        deadline = time.monotonic() + self.timeout
        while view:
            try:
                written = os.write(fd, view)
            except BlockingIOError:
                written = 0
            except OSError:  # EPIPE: it is gone
                raise self._failure("closed", "before reading the request") from None
            view = view[written:]
            if view:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not select.select([], [fd], [], remaining)[1]:
                    raise self._failure("timeout", f"did not read a request within {self.timeout:g} s")

    def receive(self) -> Answer:
        """The answer to the oldest request in flight; raises TesteeFailure."""
        sent = self._sent.popleft() if self._sent else time.monotonic()
        # An answer is due `timeout` seconds after its request was sent or the answer before it came, whichever
        # is later: a testee working through a pipeline is not late, one that stalls is; partial lines do not count.
        deadline = max(sent, self._last_answer) + self.timeout
        try:
            item = self._lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            raise self._failure("timeout", f"no answer within {self.timeout:g} s") from None
        if item is _EOF:
            raise self._failure("closed", "closed its stdout without answering")
        if item is _OVERFLOW:
            raise self._failure("overflow", f"wrote an answer line over {self.bound:,} bytes")
        self._last_answer = time.monotonic()
        return parse_answer(item)

    def request(self, request: Mapping[str, Any] | bytes) -> Answer:
        """Send one request and read its answer (lock-step)."""
        self.send(request)
        return self.receive()

    @property
    def in_flight(self) -> int:
        return len(self._sent)


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


def _violation(answer: Answer) -> SpecViolation:
    error = answer["error"]
    try:
        kind = Kind(error["kind"])
    except ValueError:
        kind = Kind.INTERNAL
    rule = error.get("rule")
    return SpecViolation(rule if isinstance(rule, str) else "unknown", kind, str(error.get("message", "")))


class RemoteSession:
    """A testee's session behind the `model.Session` read and append API, built from `snapshot` answers.

    Validators and observers are in-process hooks a remote implementation cannot run; a session
    created with any is refused (the machines use the protocol's x-hooks instead).
    """

    def __init__(self, connection: Connection, session_id: str) -> None:
        self._connection = connection
        self._id = session_id
        self._snapshot: Answer | None = None

    @classmethod
    def over(cls, connection: Connection) -> Any:
        """A factory with the signature of `model.Session.create`, creating sessions on `connection`."""

        def create(session_id: str, seed: Sequence[Any] | None = None, header: Any = None, *, clock: Any = None,
                   validators: Sequence[Any] = (), observers: Sequence[Any] = ()) -> RemoteSession:
            if validators or observers:
                raise TypeError("a remote session cannot run in-process validators or observers")
            plain_seed = None if seed is None else [thaw(e.to_json()) if isinstance(e, Event) else thaw(e) for e in seed]
            answer = connection.request({"op": "create", "id": session_id, "seed": plain_seed, "header": thaw(header)})
            if not answer["ok"]:
                raise _violation(answer)
            return cls(connection, session_id)

        return create

    def _look(self) -> Answer:
        if self._snapshot is None:
            answer = self._connection.request({"op": "snapshot"})
            if not answer["ok"]:
                raise _violation(answer)
            self._snapshot = answer
        return self._snapshot

    @property
    def id(self) -> str:
        return self._id

    @property
    def events(self) -> FrozenList:
        return FrozenList(parse_event(raw, index) for index, raw in enumerate(self._look()["events"]))

    @property
    def seq(self) -> int:
        return len(self._look()["events"])

    @property
    def first_live_seq(self) -> int:
        value: int = self._look()["firstLiveSeq"]
        return value

    @property
    def surface(self) -> Surface:
        surface = self._look()["surface"]
        return Surface(FrozenList(surface["nodes"]), surface["replaceGeneration"])

    def derive_messages(self) -> FrozenList:
        messages = snapshot(self._look()["messages"])
        return messages if isinstance(messages, FrozenList) else FrozenList(messages)

    def append_request(self, request: Mapping[str, Any]) -> Event:
        self._snapshot = None
        answer = self._connection.request({"op": "append", **request})
        if not answer["ok"]:
            raise _violation(answer)
        return parse_event(answer["event"], 0)

    def append(self, type: str, data: Any, *, surface_op: Any = None, source_event_seqs: Any = None,
               ignorable: bool = False) -> Event:
        request: dict[str, Any] = {"type": type, "data": thaw(data)}
        if surface_op is not None:
            request["surfaceOp"] = surface_op.to_json() if isinstance(surface_op, Replace) else thaw(surface_op)
        if source_event_seqs is not None:
            request["sourceEventSeqs"] = thaw(source_event_seqs)
        if ignorable:
            request["ignorable"] = True
        return self.append_request(request)
