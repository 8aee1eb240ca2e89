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

import orjson

from sessionspec.catalog import END_SEED
from sessionspec.wire.capabilities import DECLARED, Capabilities, learnable
from sessionspec.wire.client import Connection, RunOver, TesteeFailure, parse_answer
from sessionspec.wire.compare import differences, op_of, unchecked, unsupported
from sessionspec.wire.divergence import Divergence, divergence
from sessionspec.wire.oracle import Judged, ReferenceExecutor, judged
from sessionspec.wire.protocol import Answer, dumps
from sessionspec.wire.snapshotline import text_of

WINDOW: Final = 256
_ORJSON_ERRORS: Final = (TypeError, RecursionError, orjson.JSONEncodeError, orjson.JSONDecodeError)
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


class DivergenceFound(AssertionError):
    """A divergence of a family not known yet: the example fails, and Hypothesis shrinks it."""

    def __init__(self, found: Divergence) -> None:
        super().__init__(f"{found.family}: " + "; ".join(found.why))
        self.divergence = found


def plain_json(value: Any) -> bool:
    """Whether `value` is built only of exact JSON types: None, bool, int (any size), finite float, str, list, and dict
    with str keys. Such a value is carried by JSON text exactly, even where the lossless reader will refuse it (an
    unsafe integer, -0.0: the testee must refuse those lines, so they are sent)."""
    stack, seen = [value], set()
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is list or kind is dict:
            if id(item) in seen:
                continue
            seen.add(id(item))
            if kind is dict:
                if any(type(key) is not str for key in item):
                    return False
                stack.extend(item.values())
            else:
                stack.extend(item)
        elif kind is float:
            if item != item or item in (float("inf"), float("-inf")):
                return False
        elif item is not None and kind not in (bool, int, str):
            return False
    return True


def encodable(request: Any, known: Callable[[Any], bytes | None] | None = None) -> bytes | None:
    """The request as a line, or None when JSON text cannot carry it unchanged (tuples, NaN, integer keys).

    `known`: the lossless writer's text of a value already known to be plain JSON (the oracle's events, `ReferenceExecutor
    .known_text`), or None: a request orjson will not write that carries a list of such values (a reseed, `fold` or
    `repair` of a log holding a lone surrogate) is joined from their texts, as `dumps` would write it whole."""
    if isinstance(request, str):
        return request.encode("utf-8", "surrogatepass")
    written = False
    try:
        line = orjson.dumps(request)
        written = True
        if orjson.loads(line) == request:  # a tuple, NaN or subclass would come back otherwise
            return line
    except _ORJSON_ERRORS:
        pass
    if not written and known is not None and type(request) is dict:
        joined = _joined(request, known)
        if joined is not None:
            return joined
    if not plain_json(request):
        return None
    try:
        return dumps(request)  # integers beyond 64 bits, lone surrogates, deep nesting: the lossless writer
    except (TypeError, ValueError, RecursionError):
        return None


def _joined(request: dict[Any, Any], known: Callable[[Any], bytes | None]) -> bytes | None:
    """The lossless writer's line of `request` (`dumps` of a value orjson refuses), each of its lists whose items
    `known` writes joined from their texts; None when no list is (looked at before anything is written), or a value
    is not plain JSON. The writer's text of an object or array is its parts' texts joined (separators fixed, lone
    surrogates escaped one by one)."""
    lists = {key: texts for key, value in request.items()
             if type(value) is list and value and (texts := _texts(value, known)) is not None}
    if not lists:
        return None
    parts = []
    for key, value in request.items():
        if type(key) is not str:
            return None
        if key in lists:
            text = b"[" + b",".join(lists[key]) + b"]"
        elif plain_json(value):
            try:
                text = text_of(value)
            except (TypeError, ValueError, RecursionError):
                return None
        else:
            return None
        parts.append(text_of(key) + b":" + text)
    return b"{" + b",".join(parts) + b"}"


def _texts(items: list[Any], known: Callable[[Any], bytes | None]) -> list[bytes] | None:
    """The kept texts of `items`, or None as soon as one is not kept."""
    texts = []
    for item in items:
        text = known(item)
        if text is None:
            return None
        texts.append(text)
    return texts


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
        except TesteeFailure as failure:  # owed to the oldest request in flight: it was written with this one
            owed, owed_expected, _, trace, length, owed_breaches = self.pending.popleft()
            self.pending.clear()
            self._settle(owed, owed_expected, self._failed(failure.answer()), trace[:length], owed_breaches)
            return expected
        if len(self.pending) >= self.window:
            self._compare(self.window // 2)
        return expected

    def flush(self) -> None:
        """Read every answer in flight and compare; raises DivergenceFound for a new family."""
        self._compare(0)
        self.drain()

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
            reference = dumps(expected) if written is None else written
            if raw == reference:
                self._answer_came()
                continue
            if len(raw) > OVERSIZED_FACTOR * len(reference) + OVERSIZED_SLACK:
                # Not read, and nor is anything after it: the process goes, as after a failure to answer.
                self.pending.clear()
                abandoned = self.connection.abandon("overflow", f"an answer of {len(raw):,} bytes where the "
                                                                f"reference's has {len(reference):,}: not read")
                self._settle(request, expected, self._failed(abandoned.answer()), trace[:length], breaches)
                continue
            self._answer_came()
            try:
                actual = parse_answer(raw)
            except TesteeFailure as failure:  # not an answer; the lines after it still answer the requests after it
                actual = failure.answer()
            del raw
            self._settle(request, expected, actual, trace[:length], breaches)

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

    def _settle(self, request: Any, expected: Answer, actual: Answer, trace: list[Any], breaches: Judged = ()) -> None:
        op = op_of(request)
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
            self.quiet = True  # the sessions differ from here on: what is in flight compares nothing
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
