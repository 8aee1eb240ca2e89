"""The reference and a testee side by side: every request to both, the answers compared in order.

The machine's next request never depends on the testee's answer (the reference decides what is
valid and what the log now holds), so requests are sent without waiting (pipelined, up to `window`
in flight) and answers are compared when the example ends or the window fills. A divergence is
filed under its family (`Divergence.family`); a family already known (found earlier in the run,
or named by the failure list) ends the example's talk with the testee quietly, so the search goes
on for new families; a new family is raised, for Hypothesis to shrink.
"""

from __future__ import annotations

import collections
from collections.abc import Callable
from typing import Any, Final

from sessionspec.conformance.client import Connection, TesteeFailure
from sessionspec.conformance.compare import differences, op_of, skipped, unchecked
from sessionspec.conformance.divergence import Divergence, divergence
from sessionspec.conformance.executor import Executor
from sessionspec.conformance.protocol import Answer, dumps, line_error, loads
from sessionspec.errors import SpecViolation
from sessionspec.model import Session

WINDOW: Final = 256
GIVE_UP: Final = 3
"""Testee failures in a row (no answer between them) after which the run stops asking: a testee that answers
hello and then hangs must not cost a timeout per vector."""


class DivergenceFound(AssertionError):
    """A divergence of a family not known yet: the example fails, and Hypothesis shrinks it."""

    def __init__(self, found: Divergence) -> None:
        super().__init__(f"{found.family}: " + "; ".join(found.why))
        self.divergence = found


def encodable(request: Any) -> bytes | None:
    """The request as a line, or None when JSON text cannot carry it unchanged (tuples, NaN, integer keys)."""
    if isinstance(request, str):
        return request.encode("utf-8", "surrogatepass")
    try:
        line = dumps(request)
        return line if loads(line) == request else None
    except (TypeError, ValueError, SpecViolation, RecursionError):
        return None


def reference_answer(oracle: Executor, line: bytes) -> Answer:
    """What the reference answers to a line: exactly what a testee reads from it."""
    try:
        request = loads(line)
    except SpecViolation as violation:
        return line_error(violation)
    return oracle.run(request)


class Exchange:
    """One testee and the reference; shared by the vectors, the machine and the trace minimiser."""

    def __init__(self, connection: Connection, *, known: Callable[[Divergence], bool] = lambda found: False,
                 window: int = WINDOW) -> None:
        self.connection = connection
        self.known = known
        self.window = window
        self.oracle = Executor(Session.create, "model")
        self.trace: list[Any] = []
        self.pending: collections.deque[tuple[Any, Answer, int]] = collections.deque()
        self.quiet = False
        """The example hit a known divergence: the rest goes to the reference only."""
        self.unchecked: set[str] = set()
        self.last: Divergence | None = None
        self.met: dict[str, Divergence] = {}
        """The known families the search met (the first divergence of each), so a failure list is judged."""
        self.source = "machine"
        self.case: str | None = None
        self.streak = 0
        """Testee failures since its last answer (see GIVE_UP)."""

    @property
    def gave_up(self) -> bool:
        return self.streak >= GIVE_UP

    def begin(self, source: str = "machine", case: str | None = None) -> None:
        """A new example (or vector, named `case`): nothing in flight, nothing diverged."""
        self.drain()
        self.trace = []
        self.quiet = False
        self.source, self.case = source, case

    def send(self, request: Any, *, expected: Answer | None = None) -> Answer:
        """Send `request` (an object, or a raw line as str) to both; returns the reference's answer.

        `expected`: the reference's answer as recorded (a vector's), instead of asking the reference now.
        """
        line = encodable(request)
        if line is None:
            return {"ok": False, "error": {"kind": "json", "message": "JSON text cannot carry this request", "rule": None}}
        if op_of(request) == "create":
            self.trace = []
        self.trace.append(request)
        if expected is None:
            expected = reference_answer(self.oracle, line)
        if self.quiet:
            return expected
        try:
            self.connection.send(line)
        except TesteeFailure as failure:
            self.streak += 1
            self._settle(request, expected, failure.answer())
            return expected
        self.pending.append((request, expected, len(self.trace)))
        if len(self.pending) >= self.window:
            self.flush()
        return expected

    def flush(self) -> None:
        """Read every answer in flight and compare; raises DivergenceFound for a new family."""
        while self.pending and not self.quiet:
            request, expected, length = self.pending.popleft()
            try:
                actual = self.connection.receive()
                self.streak = 0
            except TesteeFailure as failure:
                self.pending.clear()
                self.streak += 1
                actual = failure.answer()
            self._settle(request, expected, actual, length)
        self.drain()

    def _settle(self, request: Any, expected: Answer, actual: Answer, length: int | None = None) -> None:
        op = op_of(request)
        if not self.connection.running and not self.quiet:
            self.connection.restart()
            self.quiet = True  # the new process has no session: nothing after this point can be compared
        if skipped(op, actual):
            return
        self.unchecked.update(unchecked(expected, actual))
        why = differences(op, expected, actual)
        if not why:
            return
        found = divergence(self.source, self.case or f"{self.source}:{op}", op, expected, actual,
                           self.trace[: length or len(self.trace)], why)
        self.quiet = True
        self.drain()
        if not self.known(found):
            self.last = found
            raise DivergenceFound(found)
        self.met.setdefault(found.family, found)

    def drain(self) -> None:
        """Read and drop the answers still in flight (after a divergence they compare nothing)."""
        while self.pending:
            self.pending.popleft()
            try:
                self.connection.receive()
            except TesteeFailure:
                self.pending.clear()
                if not self.connection.running:
                    self.connection.restart()
