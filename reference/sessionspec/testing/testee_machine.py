"""The conformance machine: the reference model as oracle, a testee process as the implementation under test.

`sessionspec.testing.machine` drives in-process implementations; this one speaks SCP v0 through an
`Exchange` (`sessionspec.wire.exchange`): each rule sends requests to the reference and to
the testee, and a snapshot after every step is compared too. Requests are pipelined; the answers
of an example are compared when it ends. A divergence of a new family fails the example,
Hypothesis shrinks it, and the runner (`sessionspec.conformance.runner`) records it and searches
on for the next family.

What it sends: an agent at work (a well-formed loop continuing the log, stopped anywhere, from
`testing.loops`), batches of appends (valid ones, replacements, hand-picked invalid ones from
`testing.invalid` and ones broken anywhere by `testing.breaking`), creates (fresh, seeded from the
log or a prefix of it, or broken: seed, header, id), `fold` and `repair` of the log (whole or
broken), lines that are not requests at all (not JSON, not objects, refused spellings, rarely
nested a few thousand deep); under x-hooks, vetoed, reentrant and observed appends, clocks that
append and callers that change their data after the append; under x-inprocess, appends holding
values JSON text cannot carry (`x-append`), attempts to change what the session returned
(`x-mutate`) and a rebuild from the log (`x-rebuild`).

Speed (the runner should be bound by the testee): a Hypothesis step costs far more than a
request, so a step sends many requests (a loop, a batch), and every rule argument is drawn by one
strategy built at import, which reads the machine it runs in (`st.runner()`) and draws from
strategies built once; nothing is built, validated or drawn through `st.data()` per step.

The testee is a class attribute: `testee_machine(exchange, hooks=...)` makes the subclass bound to
one running testee. `hooks`: the testee's hello lists the x-hooks extension.
"""

from __future__ import annotations

import collections
import dataclasses
import time
from typing import Any, ClassVar

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from sessionspec.catalog import TOOL_RESULT
from sessionspec.testing import breaking, invalid, loops
from sessionspec.testing import choose as generate
from sessionspec.testing import strategies as ss
from sessionspec.testing.choose import Choose
from sessionspec.wire.client import RunOver
from sessionspec.wire.exchange import Exchange
from sessionspec.wire.protocol import Answer

HEADERS = st.sampled_from([None, {"version": 0, "createdAt": 1, "cwd": "/w"}])
SEED = st.integers(0, 2**32 - 1)
BATCH = st.integers(1, 48)
ODD_BATCH = st.integers(1, 4)
HOOKS: tuple[dict[str, str], ...] = (
    {"x-validator": "raise"}, {"x-validator": "violation"}, {"x-validator": "reentrant"}, {"x-observer": "raise"},
    {"x-observer": "reentrant"}, {"x-clock": "reentrant"}, {"x-mutate-input": "data"},
)
"""What an append may arm under x-hooks: a vetoing, reentrant or observed append, a clock that appends, and a
caller that changes its request's data, at every level, once the append returns (SESSION-IMMUTABILITY.3)."""
RETURNED: tuple[str, ...] = ("everything", "messages.append", "events.append")
"""What `x-mutate` tries to change (x-inprocess): every value the session returned, at every level, or one list."""


_RUNNER = st.runner()


def _machine(draw: st.DrawFn) -> TesteeMachine:
    machine: TesteeMachine = draw(_RUNNER)
    return machine


def append_request(choose: Choose, view: ss.View, hooks: bool, inprocess: bool = False) -> Any:
    """One append request (with its op); a str is a raw line. Of eight: three valid, one replacement (or another
    valid one on an empty surface), three broken anywhere, and one of the invalid kinds found rarely by breaking:
    a double fault whose rule spec/04's order decides, a replacement missing a shadowed node in its sources, a
    pruning that forges more than the content. Under x-inprocess, one in eight is instead an `x-append` holding
    a value JSON text cannot carry (`breaking.non_json_append`)."""
    if inprocess and choose(8) == 0:
        return breaking.non_json_append(choose, view)
    kind = choose(8)
    if kind >= 5:
        return breaking.broken_append(choose, view)
    if kind == 4:
        return {"op": "append", **_hand_picked(choose, view)}
    request = generate.replacement(choose, view) if kind == 3 and view.nodes else generate.valid_append(choose, view)
    armed = generate.one(choose, HOOKS) if hooks and choose(4) == 0 else {}
    return {"op": "append", **request, **armed}


def _hand_picked(choose: Choose, view: ss.View) -> dict[str, Any]:
    kind = choose(3)
    if kind == 1 and view.nodes:
        return invalid.incomplete_provenance(choose, view).request
    if kind == 2 and view.tool_result_nodes():
        return invalid.forged_rewrite(choose, view).request
    return generate.one(choose, invalid.DOUBLE_FAULTS).request


@st.composite
def _appends(draw: st.DrawFn) -> list[Any]:
    """A batch of appends for the log as the step began, generated from one drawn seed (a shorter batch is a prefix)."""
    machine = _machine(draw)
    view, count, choose = machine.view(), draw(BATCH), generate.seeded(draw(SEED))
    return [append_request(choose, view, machine.hooks, machine.inprocess) for _ in range(count)]


@st.composite
def _agent_loop(draw: st.DrawFn) -> tuple[dict[str, Any], ...]:
    """A harness at work: the well-formed continuation of the log's agent loop, stopped at any request."""
    machine = _machine(draw)
    start = machine.loop_state()
    loop = loops.agent_loop(draw, max_turns=1, min_turns=1, min_steps=1, max_steps=3, start=start)
    stop = len(loop.requests)
    if stop and draw(st.booleans()):
        stop = draw(st.integers(1, stop))
    return loop.requests[:stop]


@st.composite
def _odd(draw: st.DrawFn) -> list[Any]:
    """Requests that are not appends: creates, folds and repairs broken somewhere, lines that are not requests."""
    machine = _machine(draw)
    out = []
    count, choose = draw(ODD_BATCH), generate.seeded(draw(SEED))
    for number in range(count):
        if choose(2):
            out.append(breaking.odd_line(choose))
        else:
            out.append(breaking.broken_log_request(choose, machine.view(), f"s{machine.sessions + number + 1}"))
    return out


@st.composite
def _cut(draw: st.DrawFn) -> int | None:
    """Where to cut the log for a seed: None for the whole log."""
    machine = _machine(draw)
    cut: int | None = None if draw(st.booleans()) else draw(st.integers(0, len(machine.events)))
    return cut


APPENDS, AGENT_LOOP, ODD, CUT = _appends(), _agent_loop(), _odd(), _cut()


class _LoopReader:
    """`loops.state_of(events, nodes)`, read on from where it stopped: within one session the log only grows."""

    def __init__(self) -> None:
        self.feed: collections.deque[dict[str, Any]] = collections.deque()
        self.reader = loops.states_along(iter(self.feed.popleft, None))
        self.read = 0
        self.state = loops.LoopState()

    def state_of(self, events: list[dict[str, Any]], nodes: list[int]) -> loops.LoopState:
        for event in events[self.read:]:
            self.feed.append(event)
            self.state = next(self.reader)  # reads exactly the one event just fed
        self.read = len(events)
        results = tuple((n, events[n]["data"]) for n in nodes if events[n]["type"] == TOOL_RESULT)
        return dataclasses.replace(self.state, nodes=tuple(nodes), results=results)


class SearchOver(KeyboardInterrupt):
    """The search ends now: its budget is spent (its --seconds passed, the testee keeps failing; `why` is None) or
    the run's deadline passed mid-example (`why` says so). Raised by the machine, caught by the search.

    A KeyboardInterrupt because that is what Hypothesis lets leave a test at once, as "the user wants to stop",
    recording nothing for the example it interrupted. Any other exception is a failure to Hypothesis: it records
    the example's shorter draws in its tree of choices, sees "inconsistent data generation" against the earlier
    example that went further on the same first draws (FlakyStrategyDefinition), and reports that as the failure
    of a test the user never wrote; `hypothesis.reject()` records the example the same way."""

    def __init__(self, why: str | None = None) -> None:
        super().__init__(why)
        self.why = why


class TesteeMachine(RuleBasedStateMachine):
    """The reference and the testee, request by request; `exchange` is the testee (set by `testee_machine`)."""

    exchange: ClassVar[Exchange]
    hooks: ClassVar[bool] = False
    inprocess: ClassVar[bool] = False
    """The testee's hello lists x-inprocess: it takes `x-append`, `x-mutate` and `x-rebuild`."""
    deadline: ClassVar[float | None] = None
    """time.monotonic() after which no example starts (`SearchOver`): the run's --seconds budget."""
    examples: ClassVar[int] = 0

    def __init__(self) -> None:
        super().__init__()
        self.sessions = 0
        self.events: list[dict[str, Any]] = []
        self.nodes: list[int] = []
        self._view: ss.View | None = None
        self._loop = _LoopReader()
        type(self).examples += 1
        self.exchange.begin("machine")

    def view(self) -> ss.View:
        if self._view is None:
            self._view = ss.View(tuple(self.events), tuple(self.nodes))
        return self._view

    def loop_state(self) -> loops.LoopState:
        """Where an agent resumes in this log (`loops.state_of`)."""
        return self._loop.state_of(self.events, self.nodes)

    def send(self, request: Any) -> Answer:
        if isinstance(request, dict) and request.get("op") == "create":
            self._loop = _LoopReader()  # a new session (or none): its log is read from the start
        try:
            return self.exchange.send(request)
        except RunOver as over:
            raise SearchOver(f"the run's deadline passed mid-example ({over})") from over

    def create(self, seed: list[Any] | None, header: Any = None) -> None:
        self.sessions += 1
        session_id = f"s{self.sessions}"
        if header is not None:
            header = {**header, "id": session_id}
        self.send({"op": "create", "id": session_id, "seed": seed, "header": header})
        self.look()

    def look(self) -> None:
        """A snapshot, compared; the reference's is the log the next step's requests are drawn for (read-only)."""
        expected = self.send({"op": "snapshot"})
        if expected.get("ok"):
            self.events, self.nodes = expected["events"], expected["surface"]["nodes"]
            self._view = None

    @initialize(header=HEADERS)
    def start(self, header: Any) -> None:
        deadline = type(self).deadline
        spent = (deadline is not None and time.monotonic() > deadline) or self.exchange.gave_up \
            or self.exchange.connection.restarts > self.exchange.max_restarts
        if spent:
            raise SearchOver  # the budget is spent, or the testee keeps failing: end the search now
        self.create(None, header)

    @rule(requests=AGENT_LOOP)
    def agent_works(self, requests: tuple[dict[str, Any], ...]) -> None:
        for request in requests:
            self.send({"op": "append", **request})

    @rule(requests=APPENDS)
    def appends(self, requests: list[Any]) -> None:
        """Valid, replacing, invalid and broken appends (some with hooks armed), drawn for the log as the step began."""
        for request in requests:
            self.send(request)

    @rule(requests=ODD)
    def odd_requests(self, requests: list[Any]) -> None:
        """Broken creates, folds and repairs, and lines that are not requests. A rejected create leaves no
        session (SESSION-CONFORMANCE-PROTOCOL.3), so a fresh one follows it."""
        for request in requests:
            answer = self.send(request)
            if isinstance(request, dict) and request.get("op") == "create":
                self.sessions += 1
                if not answer.get("ok"):
                    self.create(None)

    @rule(kind=st.sampled_from(("reseed", "fold and repair")), cut=CUT)
    def whole_log_requests(self, kind: str, cut: int | None) -> None:
        """A new session seeded with the log (or a prefix of it); or `fold` and `repair` of it (a prefix ending
        in an interrupted turn gives repair work). Each reads the whole log, so they are one rule, not two."""
        events = list(self.events if cut is None else self.events[:cut])
        if kind == "reseed":
            self.create(events)
            return
        self.send({"op": "fold", "events": events})
        self.send({"op": "repair", "events": events})

    @precondition(lambda self: self.inprocess)
    @rule(what=st.sampled_from(RETURNED))
    def returned_values_refuse_change(self, what: str) -> None:
        """x-inprocess: what the session returned refuses every change (decision 5), and a fresh session of the
        testee's own, seeded with its log, shows the same surface and messages (SESSION-DERIVED-CACHE.1)."""
        self.send({"op": "x-mutate", "target": what})
        self.send({"op": "x-rebuild"})

    @invariant()
    def snapshots_agree(self) -> None:
        self.look()

    def teardown(self) -> None:
        try:
            self.exchange.flush()
        except RunOver as over:
            raise SearchOver(f"the run's deadline passed mid-example ({over})") from over


def testee_machine(exchange: Exchange, *, hooks: bool, inprocess: bool = False,
                   deadline: float | None = None) -> type[TesteeMachine]:
    """The machine class bound to one running testee (through `exchange`)."""
    return type("TesteeMachine", (TesteeMachine,), {"exchange": exchange, "hooks": hooks, "inprocess": inprocess,
                                                   "deadline": deadline, "examples": 0, "__module__": __name__})
