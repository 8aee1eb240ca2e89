"""The conformance machine: the reference model as oracle, a testee process as the implementation under test.

`sessionspec.testing.machine` drives in-process implementations; this one speaks SCP v0 through an
`Exchange` (`sessionspec.conformance.exchange`): each rule draws a request from the shared
strategies (`sessionspec.testing.strategies`), sends it to the reference and to the testee, and a
snapshot after every step is compared too. Requests are pipelined; the answers of an example are
compared when it ends. A divergence of a new family fails the example, Hypothesis shrinks it, and
the runner (`sessionspec.conformance.runner`) records it and searches on for the next family.

The testee is a class attribute: `testee_machine(exchange, hooks=...)` makes the subclass bound to
one running testee. `hooks`: the testee's hello lists the x-hooks extension, so vetoes, reentrant
appends and clocks, and observer failures are exercised too.
"""

from __future__ import annotations

import time
from typing import Any, ClassVar

from hypothesis import reject
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from sessionspec.conformance.exchange import Exchange
from sessionspec.conformance.protocol import Answer
from sessionspec.testing import strategies as ss

HEADERS = st.sampled_from([None, {"version": 0, "createdAt": 1, "cwd": "/w"}])


class TesteeMachine(RuleBasedStateMachine):
    """The reference and the testee, one request at a time; `exchange` is the testee (set by `testee_machine`)."""

    exchange: ClassVar[Exchange]
    hooks: ClassVar[bool] = False
    deadline: ClassVar[float | None] = None
    """time.monotonic() after which examples are rejected at once: the run's --seconds budget."""
    examples: ClassVar[int] = 0

    def __init__(self) -> None:
        super().__init__()
        self.sessions = 0
        self.events: list[dict[str, Any]] = []
        self.nodes: list[int] = []
        type(self).examples += 1
        self.exchange.begin("machine")

    def send(self, request: dict[str, Any]) -> Answer:
        return self.exchange.send(request)

    def view(self) -> ss.View:
        return ss.View(tuple(self.events), tuple(self.nodes))

    def create(self, seed: list[Any] | None, header: Any = None) -> None:
        self.sessions += 1
        session_id = f"s{self.sessions}"
        if header is not None:
            header = {**header, "id": session_id}
        self.send({"op": "create", "id": session_id, "seed": seed, "header": header})
        self.look()

    def look(self) -> None:
        expected = self.send({"op": "snapshot"})
        if expected.get("ok"):
            self.events, self.nodes = expected["events"], expected["surface"]["nodes"]

    def append(self, request: dict[str, Any], **hooks: str) -> None:
        self.send({"op": "append", **request, **(hooks if self.hooks else {})})

    @initialize(header=HEADERS)
    def start(self, header: Any) -> None:
        deadline = type(self).deadline
        if (deadline is not None and time.monotonic() > deadline) or self.exchange.gave_up:
            reject()  # the budget is spent, or the testee keeps failing: end the run quickly
        self.create(None, header)

    @rule(data=st.data())
    def append_valid(self, data: st.DataObject) -> None:
        self.append(data.draw(ss.append_requests(self.view()), label="request"))

    @precondition(lambda self: len(self.nodes) > 0)
    @rule(data=st.data())
    def replace(self, data: st.DataObject) -> None:
        self.append(data.draw(ss.replacements(self.view()), label="replacement"))

    @rule(data=st.data())
    def append_invalid(self, data: st.DataObject) -> None:
        self.append(data.draw(ss.invalid_requests(self.view()), label="invalid").request)

    @precondition(lambda self: bool(self.view().tool_result_nodes()))
    @rule(data=st.data())
    def forged_tool_result_rewrite(self, data: st.DataObject) -> None:
        self.append(data.draw(ss.forged_tool_result_rewrites(self.view()), label="forged rewrite").request)

    @precondition(lambda self: len(self.nodes) > 0)
    @rule(data=st.data())
    def incomplete_provenance(self, data: st.DataObject) -> None:
        self.append(data.draw(ss.incomplete_provenance_replacements(self.view()), label="incomplete provenance").request)

    @rule()
    def reseed(self) -> None:
        self.create(list(self.events))

    @rule(data=st.data())
    def seed_from_prefix(self, data: st.DataObject) -> None:
        self.create(list(self.events[: data.draw(st.integers(0, len(self.events)), label="cut")]))

    @rule()
    def fold_log(self) -> None:
        self.send({"op": "fold", "events": list(self.events)})

    @rule()
    def repair_log(self) -> None:
        self.send({"op": "repair", "events": list(self.events)})

    @precondition(lambda self: self.hooks)
    @rule(data=st.data(), mode=st.sampled_from(["raise", "violation", "reentrant"]))
    def vetoed_append(self, data: st.DataObject, mode: str) -> None:
        self.append(data.draw(ss.append_requests(self.view()), label="request"), **{"x-validator": mode})

    @precondition(lambda self: self.hooks and len(self.nodes) > 0)
    @rule(data=st.data())
    def vetoed_replace(self, data: st.DataObject) -> None:
        """A vetoed replacement must leave nothing behind, not even its plan for the next event at that seq."""
        self.append(data.draw(ss.replacements(self.view()), label="replacement"), **{"x-validator": "raise"})

    @precondition(lambda self: self.hooks)
    @rule(data=st.data(), mode=st.sampled_from(["raise", "reentrant"]))
    def append_with_misbehaving_observer(self, data: st.DataObject, mode: str) -> None:
        self.append(data.draw(ss.append_requests(self.view()), label="request"), **{"x-observer": mode})

    @precondition(lambda self: self.hooks)
    @rule(data=st.data())
    def append_with_a_clock_that_appends(self, data: st.DataObject) -> None:
        """SESSION-APPEND-COMMIT.4 across the wire: the clock is caller code and may not reenter."""
        self.append(data.draw(ss.append_requests(self.view()), label="request"), **{"x-clock": "reentrant"})

    @invariant()
    def snapshots_agree(self) -> None:
        self.look()

    def teardown(self) -> None:
        self.exchange.flush()


def testee_machine(exchange: Exchange, *, hooks: bool, deadline: float | None = None) -> type[TesteeMachine]:
    """The machine class bound to one running testee (through `exchange`)."""
    return type("TesteeMachine", (TesteeMachine,), {"exchange": exchange, "hooks": hooks, "deadline": deadline,
                                                   "examples": 0, "__module__": __name__})
