"""The reference and a testee side by side: every request to both, the answers compared in order.

The machine's next request never depends on the testee's answer (the reference decides what is
valid and what the log now holds), so requests are sent without waiting (pipelined, up to `window`
in flight) and answers are compared when the example ends or the window fills. A divergence is
filed under its family (`Divergence.family`); a family already known (found earlier in the run,
or named by the failure list) ends the example's talk with the testee quietly, so the search goes
on for new families; a new family is raised, for Hypothesis to shrink.

The reference is `oracle.ReferenceExecutor`: `model.Session`'s answers without its self-checks,
each remembered by the path of lines that led to it (see `sessionspec.wire.oracle` for why
that is the same reference). An answer line that is byte for byte the reference's answer as the
protocol writes it agrees with it (the same text is the same JSON value); only other lines are
parsed and compared field by field (`compare.differences`), so a testee that answers exactly, as
ours do, costs one `bytes` compare per request. A full window reads only the older half of the
answers in flight, so the runner waits for the testee only at the end of an example.
"""

from __future__ import annotations

import collections
import time
from collections.abc import Callable
from typing import Any, Final

from sessionspec.catalog import END_SEED
from sessionspec.wire.capabilities import DECLARED, Capabilities, learnable
from sessionspec.wire.client import Connection, RunOver, TesteeFailure, parse_answer
from sessionspec.wire.compare import differences, op_of, unchecked, unsupported
from sessionspec.wire.divergence import Divergence, divergence
from sessionspec.wire.oracle import Judged, ReferenceExecutor, judged
from sessionspec.wire.protocol import Answer, dumps
from sessionspec.wire.requestline import encodable

WINDOW: Final = 256
READS: Final = frozenset({"hello", "snapshot", "fold", "repair"})
"""Ops that leave the session as it is: one not sent for want of a capability keeps the two sessions alike."""
GIVE_UP: Final = 3
"""Testee failures in a row (no answer between them) after which the run stops asking: a testee that answers
hello and then hangs must not cost a timeout per vector."""
OVERSIZED_FACTOR: Final = 16
OVERSIZED_SLACK: Final = 1 << 20
"""An answer line longer than 16 times the reference's answer, plus 1 MiB, is not read: no answer to the same request
can need that much (JSON's longest spelling of a value is its escapes, six bytes a character), and a testee that
answers every request with 64 MiB would otherwise cost the run gigabytes read, parsed and kept, for hours. It counts
as a failure toward GIVE_UP, so such a testee is declared unusable after three."""
HEALTHY: Final = 16
"""Answers after which an incarnation of the testee counts as working: until then, a stall or an overflow counts
toward giving up whatever it answered before (a testee that answers `hello`, or one request, after each restart and
then stalls would otherwise cost a full timeout per request until the restart limit: 520 s, measured)."""
COSTLY: Final = frozenset({"testee-timeout", "testee-overflow"})
"""The failures that cost the run a wait (a timeout) or a stream not read: counted across restarts."""
MAX_RESTARTS: Final = 50
"""Restarts after which the testee is declared unusable: one that answers a few requests and then dies, every
time, would otherwise be started again for every vector and every example."""


def _sessions_still_alike(op: str | None, expected: Answer, actual: Answer) -> bool:
    """Whether the testee's session is still the reference's after a divergence: a request both rejected (with
    different kinds) changed neither. Anything else changed one of them, or showed that they already differ."""
    return expected.get("ok") is False and actual.get("ok") is False


def _parsed(raw: bytes) -> Answer:
    """An answer line as an answer; one that is not an answer is a failure of its own (the lines after it still
    answer the requests after it)."""
    try:
        return parse_answer(raw)
    except TesteeFailure as failure:
        return failure.answer()


class DivergenceFound(AssertionError):
    """A divergence of a family not known yet: the example fails, and Hypothesis shrinks it."""

    def __init__(self, found: Divergence) -> None:
        super().__init__(f"{found.family}: " + "; ".join(found.why))
        self.divergence = found


class Exchange:
    """One testee and the reference; shared by the vectors, the machine and the trace minimiser."""

    def __init__(self, connection: Connection, *, known: Callable[[Divergence], bool] = lambda found: False,
                 window: int = WINDOW, deadline: float | None = None, capabilities: Capabilities | None = None) -> None:
        self.connection = connection
        self.capabilities = capabilities or Capabilities.everything()
        """What the testee declared (spec/10, "Capabilities"): a request needing anything else is not sent to it."""
        self.not_applicable: collections.Counter[str] = collections.Counter()
        """Requests not sent because they need what the testee does not declare, by what they need."""
        self.needed: list[str] = []
        """What the current case needed that the testee does not implement (undeclared, or answered unsupported by a
        testee that lists no ops), in order: the case is not applicable (an optional op) or not judged (a core op)."""
        self.deadline = deadline
        """time.monotonic() of the run's end: past it, `send` raises RunOver."""
        self.max_restarts = MAX_RESTARTS
        self.collecting = False
        """When set (the machine's search), a divergence of a new family is collected, not raised: the search goes on
        through the example's budget. After a divergence that leaves the sessions apart, the answers in flight are
        dropped and, at the next request, both sides are given the reference's session as a seed (`_resync`), so
        the example goes on finding what else differs instead of ending its talk with the testee."""
        self.collected: list[Divergence] = []
        self.apart = False
        """The sessions went apart and have not been made one again yet."""
        self.resyncing = False
        self.known = known
        self.window = window
        self.oracle = ReferenceExecutor()
        self.trace: list[Any] = []
        self.pending: collections.deque[tuple[Any, Answer, bytes | None, list[Any], int, Judged]] = collections.deque()
        """In flight: each request, the reference's answer (and its line, when the oracle gave it), and its trace as
        the list it was appended to and its length then. A create starts a new list rather than clearing this one, so a request still in flight when
        the next session is created keeps its own trace (a divergence once carried the next session's requests)."""
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
        self.stalls = 0
        """Costly failures (COSTLY) since an incarnation last gave HEALTHY answers (see GIVE_UP)."""
        self.answered = 0
        """Answers the testee's current incarnation gave."""
        self.watch: Callable[[Any, Answer, Answer], None] | None = None
        """Told each request the testee answered, with the reference's answer and the testee's (`sessionspec replay`
        prints every answer), in the order sent."""

    @property
    def gave_up(self) -> bool:
        return self.streak >= GIVE_UP or self.stalls >= GIVE_UP

    @property
    def past_deadline(self) -> bool:
        return self.deadline is not None and time.monotonic() > self.deadline

    def begin(self, source: str = "machine", case: str | None = None) -> None:
        """A new example (or vector, named `case`): nothing in flight, nothing diverged."""
        self.drain()
        self.trace = []
        self.needed = []
        self.quiet = self.apart = self.resyncing = False
        self.source, self.case = source, case

    def send(self, request: Any, *, expected: Answer | None = None, breaches: Judged = ()) -> Answer:
        """Send `request` (an object, or a raw line as str) to both; returns the reference's answer.

        `expected`: the reference's answer as recorded (a vector's), instead of asking the reference now, and
        `breaches` the rules it records the request breaking.
        The answer returned is the reference's own (shared with later calls): read it, never change it.
        """
        if self.past_deadline:
            raise RunOver("the run's deadline passed")
        if self.apart and self.collecting and op_of(request) != "create":
            self._resync()
        need = self.capabilities.needs(request)
        if need is not None:  # not sent: the testee does not declare what it needs (the reference still answers it)
            self.not_applicable[need] += 1
            self.needed.append(need)
            if expected is None and (line := encodable(request)) is not None:
                expected, _ = self.oracle.answer(line)
            if expected is not None and expected.get("ok") is True and op_of(request) not in READS:
                self._apart()  # the reference's session changed and the testee's did not: nothing after compares
            return expected if expected is not None else {"ok": True}
        line = encodable(request, self.oracle.known_text)
        if line is None:
            return {"ok": False, "error": {"kind": "json", "message": "JSON text cannot carry this request", "rule": None}}
        if op_of(request) == "create":
            self.trace = []
        self.trace.append(request)
        written = None
        if expected is None:
            expected, written = self.oracle.answer(line)
            breaches = self.oracle.judgement()  # worked out only if a divergence asks
        if self.quiet:
            return expected
        self.pending.append((request, expected, written, self.trace, len(self.trace), breaches))
        try:
            self.connection.send(line)
        except TesteeFailure as failure:  # owed to the first request in flight it did not answer
            self._owed(failure)
            return expected
        if len(self.pending) >= self.window:
            self._compare(self.window // 2)
        return expected

    def flush(self) -> None:
        """Read every answer in flight and compare; raises DivergenceFound for a new family."""
        self._compare(0)
        self.drain()

    def _owed(self, failure: TesteeFailure) -> None:
        """The testee failed while lines were written: the answers it gave before it went are compared as any are, and
        the failure is owed to the first request it did not answer. Lines are written in batches, so the oldest one
        in flight may have been answered (a create, before the line that killed the testee): blaming it would file
        the failure under a trace that does not reproduce it."""
        actual = self._failed(failure.answer())
        while self.pending:
            owed, owed_expected, written, trace, length, owed_breaches = self.pending.popleft()
            raw = self.connection.leftover()
            if raw is not None and raw == (dumps(owed_expected) if written is None else written):
                self._watched(owed, owed_expected, owed_expected)
                continue  # answered as the reference answers: not the one it failed on
            if raw is not None:  # answered otherwise: that is the divergence, whatever killed it after
                actual = _parsed(raw)
            self.pending.clear()
            self._settle(owed, owed_expected, actual, trace[:length], owed_breaches)

    def _compare(self, left: int) -> None:
        """Read and compare the oldest answers in flight until `left` are: a full window waits for the testee's
        oldest answers, not for it to catch up with the newest request (the runner would then wait for all of it)."""
        while len(self.pending) > left and not self.quiet:
            request, expected, written, trace, length, breaches = self.pending.popleft()
            try:
                raw = self.connection.receive_raw()
            except TesteeFailure as failure:  # the testee is gone, and the answers in flight with it
                self.pending.clear()
                self._settle(request, expected, self._failed(failure.answer()), trace[:length], breaches)
                continue
            self._answered(request, expected, written, raw, trace[:length], breaches)

    def _answered(self, request: Any, expected: Answer, written: bytes | None, raw: bytes, trace: list[Any],
                  breaches: Judged) -> None:
        """One answer line compared with the reference's answer to its request."""
        reference = dumps(expected) if written is None else written
        if raw == reference:
            self._answer_came()
            self._watched(request, expected, expected)
            return
        if len(raw) > OVERSIZED_FACTOR * len(reference) + OVERSIZED_SLACK:
            # Not read, and nor is anything after it: the process goes, as after a failure to answer.
            self.pending.clear()
            abandoned = self.connection.abandon("overflow", f"an answer of {len(raw):,} bytes where the "
                                                            f"reference's has {len(reference):,}: not read")
            self._settle(request, expected, self._failed(abandoned.answer()), trace, breaches)
            return
        self._answer_came()
        actual = _parsed(raw)
        del raw
        self._settle(request, expected, actual, trace, breaches)

    def _answer_came(self) -> None:
        self.streak = 0
        self.answered += 1
        if self.answered >= HEALTHY:
            self.stalls = 0

    def _failed(self, answer: Answer) -> Answer:
        """Count a testee failure toward giving up (GIVE_UP, HEALTHY); its next incarnation starts from no answers."""
        self.streak += 1
        error = answer.get("error")
        if isinstance(error, dict) and error.get("kind") in COSTLY:
            self.stalls += 1
        self.answered = 0
        return answer

    def _watched(self, request: Any, expected: Answer, actual: Answer) -> None:
        if self.watch is not None:
            self.watch(request, expected, actual)

    def _settle(self, request: Any, expected: Answer, actual: Answer, trace: list[Any], breaches: Judged = ()) -> None:
        op = op_of(request)
        self._watched(request, expected, actual)
        if not self.connection.running and not self.quiet:
            self.connection.restart()
            self.quiet = True  # the new process has no session: nothing after this point can be compared
        if unsupported(actual) and not unsupported(expected) and learnable(self.capabilities, op):
            # A testee that lists no ops shows what it does not implement by answering so (PROTOCOL.2), never a
            # divergence: from here on the op is not sent, and what needs it is not applicable.
            assert op is not None
            self.capabilities = self.capabilities.without(op)
            self.needed.append(op)
            return
        self.unchecked.update(unchecked(expected, actual))
        why = differences(op, expected, actual)
        if not why:
            return
        found = divergence(self.source, self.case or f"{self.source}:{op}", op, expected, actual,
                           trace, why, breaches=judged(breaches))
        if unsupported(actual) and not unsupported(expected) and self.capabilities.owes(op):
            found.named, found.level = DECLARED, "required"  # SESSION-CONFORMANCE-PROTOCOL.9: declared, so owed
        if self.collecting:
            # Every family's first divergence, listed or not: what the search finds, and how it is minimized and
            # named, must not depend on the failure list (which changes the verdict, never the search).
            if not any(found.family == seen.family for seen in self.collected):
                self.collected.append(found)
        elif not self.known(found):
            self.quiet = True
            self.drain()
            self.last = found
            raise DivergenceFound(found)
        else:
            self.met.setdefault(found.family, found)
        if not (self.connection.running and _sessions_still_alike(op, expected, actual)):
            self._apart()

    def _apart(self) -> None:
        """The sessions differ from here on: what is in flight compares nothing, and the search (collecting) gives both
        sides the reference's session at the next request, so a trace starts from a session both hold."""
        self.quiet = True
        self.apart = not self.resyncing
        self.drain()

    def _resync(self) -> None:
        """Both sides given the reference's session again, compared as any request is: a fresh session and its events
        appended again, or, for a log holding a seed's marker (which append cannot write), a create seeded with it.
        Nothing when the reference has no session."""
        self.apart = False
        current = self.oracle.current()
        if current is None or not self.connection.running:
            return
        session_id, events, header = current
        self.quiet = False
        self.resyncing = True  # if the testee takes even this otherwise, the example stops comparing
        if any(event.get("type") == END_SEED for event in events):
            self.send({"op": "create", "id": session_id, "seed": events, "header": header})
            return
        self.send({"op": "create", "id": session_id, "seed": None, "header": header})
        for event in events:
            self.send({"op": "append", **{key: value for key, value in event.items() if key not in ("seq", "time")}})

    def drain(self) -> None:
        """Read and drop the answers still in flight (after a divergence they compare nothing)."""
        while self.pending:
            self.pending.popleft()
            try:
                self.connection.receive_raw()
            except TesteeFailure:
                self.pending.clear()
                if not self.connection.running:
                    self.connection.restart()
