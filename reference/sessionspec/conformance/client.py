"""The runner's side of SCP v0: a testee process, and a Session-shaped view of it.

`Connection` owns one testee subprocess and never hangs on it: answers are read by a thread, so a
testee that stops answering is a timeout; one that exits is a crash (restarted for the next case);
a line that is not a JSON object with a boolean `ok` is a protocol error that quotes it.
`RemoteSession` exposes the read and append API of `model.Session`, built from `snapshot` answers,
for code that wants to treat an external implementation as a session.
"""

from __future__ import annotations

import contextlib
import os
import select
import subprocess
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from typing import IO, Any

import orjson

from sessionspec.conformance.protocol import Answer, dumps
from sessionspec.envelope import Event, Replace, parse_event
from sessionspec.errors import Kind, SpecViolation
from sessionspec.jsonvalue import FrozenList, snapshot, thaw
from sessionspec.surface import Surface

_EOF = b""


class TesteeFailure(Exception):
    """The testee could not answer: `crash`, `timeout` or `protocol` (a malformed answer)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message

    def answer(self) -> Answer:
        """The failure in the shape of an answer, so a report can show it beside the expected one."""
        return {"ok": False, "error": {"kind": f"testee-{self.kind}", "message": self.message, "rule": None}}


class Connection:
    """One running testee; `request` sends a request and returns its answer or raises TesteeFailure."""

    def __init__(self, command: Sequence[str], *, timeout: float = 10.0) -> None:
        self.command = list(command)
        self.timeout = timeout
        self.restarts = 0
        self.requests = 0
        self._process: subprocess.Popen[bytes] | None = None
        self._buffer = bytearray()
        self._stderr: IO[bytes] | None = None

    def start(self) -> None:
        """Start (or restart) the testee; raises TesteeFailure if it cannot be run at all."""
        self.close()
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 -- lives as long as the testee
        try:
            self._process = subprocess.Popen(self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                             stderr=self._stderr, bufsize=0)
        except OSError as error:
            raise TesteeFailure("crash", f"cannot start testee {self.command}: {error}") from None
        self._buffer = bytearray()

    def restart(self) -> None:
        self.restarts += 1
        self.start()

    def stderr_tail(self, limit: int = 600) -> str:
        if self._stderr is None:
            return ""
        self._stderr.seek(0, os.SEEK_END)
        size = self._stderr.tell()
        self._stderr.seek(max(0, size - limit))
        return self._stderr.read().decode("utf-8", "replace").strip()

    def _died(self, what: str) -> TesteeFailure:
        process = self._process
        code = process.poll() if process is not None else None
        tail = self.stderr_tail()
        self._kill()
        detail = f"; stderr: {tail}" if tail else ""
        return TesteeFailure("crash", f"testee {what} (exit code {code}){detail}")

    def request(self, request: Mapping[str, Any] | bytes) -> Answer:
        """Send one request (an object, or a raw line for the vectors that are not JSON) and read its answer."""
        if self._process is None:
            self.start()
        process = self._process
        assert process is not None and process.stdin is not None
        line = request if isinstance(request, bytes) else dumps(dict(request))
        self.requests += 1
        try:
            self._write(process.stdin, line + b"\n")
        except (BrokenPipeError, OSError):
            raise self._died("exited before reading the request") from None
        assert process.stdout is not None
        raw = self._read_line(process.stdout.fileno())
        if raw is None:
            self._kill()
            raise TesteeFailure("timeout", f"no answer within {self.timeout:g} s")
        if raw == _EOF:
            raise self._died("exited without answering")
        return parse_answer(raw)

    def _read_line(self, fd: int) -> bytes | None:
        """The next answer line, EOF (b"") or None on timeout; select keeps a silent testee from hanging us."""
        deadline = time.monotonic() + self.timeout
        buffer = self._buffer
        while True:
            end = buffer.find(b"\n")
            if end >= 0:
                line = bytes(buffer[: end + 1])
                del buffer[: end + 1]
                return line
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
                return None
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                if buffer:
                    line = bytes(buffer)
                    buffer.clear()
                    return line
                return _EOF
            buffer += chunk

    def _write(self, stdin: IO[bytes], data: bytes) -> None:
        if len(data) < 32_768:
            _write_all(stdin, data)
            return
        # A large request could fill the pipe of a testee that stopped reading: write it off-thread.
        failure: list[BaseException] = []

        def write() -> None:
            try:
                _write_all(stdin, data)
            except BaseException as error:
                failure.append(error)

        writer = threading.Thread(target=write, daemon=True)
        writer.start()
        writer.join(self.timeout)
        if writer.is_alive():
            self._kill()
            raise TesteeFailure("timeout", f"the testee did not read a request within {self.timeout:g} s")
        if failure:
            raise OSError(str(failure[0]))

    def _kill(self) -> None:
        """Kill first, then close: closing a pipe the reader thread is blocked on would wait for it."""
        process, self._process = self._process, None
        if process is None:
            return
        if process.poll() is None:
            process.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=5)
        for stream in (process.stdin, process.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass

    def close(self) -> None:
        """EOF ends the testee; one that lingers is killed."""
        process = self._process
        if process is not None and process.poll() is None and process.stdin is not None:
            try:
                process.stdin.close()
                process.wait(timeout=2)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self._kill()


def _write_all(stdin: IO[bytes], data: bytes) -> None:
    """An unbuffered pipe may take a write in parts."""
    view = memoryview(data)
    while view:
        written = stdin.write(view)
        view = view[written or 0 :]


def parse_answer(raw: bytes) -> Answer:
    """A protocol answer, or a TesteeFailure quoting the line that is not one."""
    quoted = raw.rstrip(b"\r\n").decode("utf-8", "replace")
    quoted = quoted if len(quoted) <= 300 else quoted[:300] + "..."
    try:
        answer = orjson.loads(raw)
    except orjson.JSONDecodeError:
        try:
            import json

            answer = json.loads(raw)
        except ValueError:
            raise TesteeFailure("protocol", f"answer is not JSON: {quoted!r}") from None
    if not isinstance(answer, dict) or type(answer.get("ok")) is not bool:
        raise TesteeFailure("protocol", f"answer is not an object with a boolean ok: {quoted!r}")
    if not answer["ok"]:
        error = answer.get("error")
        if not isinstance(error, dict) or type(error.get("kind")) is not str:
            raise TesteeFailure("protocol", f"failure answer without error.kind: {quoted!r}")
    return answer


def _violation(answer: Answer) -> SpecViolation:
    error = answer["error"]
    try:
        kind = Kind(error["kind"])
    except ValueError:
        kind = Kind.INTERNAL
    rule = error.get("rule")
    return SpecViolation(rule if isinstance(rule, str) else "unknown", kind, str(error.get("message", "")))


class RemoteSession:
    """A testee's session behind the `model.Session` read and append API.

    Validators and observers are in-process hooks a remote implementation cannot run; a session
    created with any is refused (the conformance machine uses the protocol directly instead).
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
