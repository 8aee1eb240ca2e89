"""The relational companion on both sides: the same loops accepted, the same violations vetoed (spec/09).

`sessionspec.invariants.Companion` is an optional precommit validator that holds a log to the
agent loop's relations (turns, steps, calls). Attached to the model and to the implementation
under test, it must accept every well-formed loop and veto every generated relational violation
with the same rule on both. A loop's requests name absolute seqs, so each rule starts afresh.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from sessionspec.envelope import APPEND
from sessionspec.invariants import Companion, replay
from sessionspec.repair import closers, repaired
from sessionspec.testing import implementations, loops, violations
from sessionspec.wire.compare import differences
from sessionspec.wire.executor import Executor
from sessionspec.wire.protocol import START_TIME, Answer


def with_companion(factory: Callable[..., Any]) -> Callable[..., Any]:
    """`factory`, with a fresh Companion attached to every session it creates."""

    def create(*args: Any, **kwargs: Any) -> Any:
        session = factory(*args, **kwargs)
        Companion().attach(session)
        return session

    return create


class CompanionMachine(RuleBasedStateMachine):
    """Both sides with the companion attached, driven by well-formed agent loops and relational violations."""

    implementation: ClassVar[str] = "live"

    def __init__(self) -> None:
        super().__init__()
        self.now = START_TIME
        self.model = Executor(with_companion(implementations.factory("model")), "model")
        self.sut = Executor(with_companion(implementations.factory(self.implementation)), self.implementation)
        self.sessions = 0

    def run(self, request: dict[str, Any]) -> Answer:
        self.now += 1
        request = {**request, "x-time": self.now}
        expected, actual = self.model.run(request), self.sut.run(request)
        diff = differences(request["op"], expected, actual, rules=True, time=True)
        assert not diff, f"{request['op']} answered differently by {self.implementation} with the companion: " + "; ".join(diff)
        return expected

    def fresh(self, seed: list[Any] | None = None) -> None:
        self.sessions += 1
        answer = self.run({"op": "create", "id": f"c{self.sessions}", "seed": seed, "header": None})
        assert answer["ok"], f"the companion refused a seed: {answer}"

    @initialize()
    def start(self) -> None:
        self.fresh()

    @rule(loop=loops.agent_loops(max_turns=2, max_steps=2))
    def well_formed_loop_is_accepted_by_both(self, loop: loops.Loop) -> None:
        self.fresh()
        for request in loop.requests:
            answer = self.run({"op": "append", **request})
            assert answer["ok"], f"the companion vetoed a well-formed loop: {answer}"

    @rule(violation=violations.relational_violations())
    def violation_is_vetoed_with_the_same_rule(self, violation: violations.Violation) -> None:
        self.fresh()
        for request in violation.prefix:
            assert self.run({"op": "append", **request})["ok"], "the companion vetoed a well-formed prefix"
        answer = self.run({"op": "append", **violation.request})
        assert not answer["ok"], f"the companion let through a {violation.rule} violation"
        assert answer["error"]["rule"] == violation.rule, f"vetoed with {answer['error']['rule']}, not {violation.rule}"

    @rule(data=st.data(), loop=loops.agent_loops(max_turns=2, max_steps=2, min_turns=1))
    def repaired_cut_loop_passes_the_companion(self, data: st.DataObject, loop: loops.Loop) -> None:
        """SESSION-INVARIANT-COMMIT.2 on a repaired crash: the companion replays the balanced log."""
        cut = data.draw(st.integers(1, len(loop.requests)), label="cut")
        built = loops.build(loop.requests[:cut], impl="live")
        added = closers(built.events)
        assert bool(added) == (loop.states[cut].open_turn is not None), "closers for a balanced log, or none for an open one"
        assert all(c.surface_op in (None, APPEND) for c in added), "SESSION-CRASH-REPAIR.5: a closer shadows"
        whole = repaired(built.events)
        assert closers(whole) == [], "SESSION-CRASH-REPAIR.7: the repaired log still has closers"
        self.fresh([e.to_json() for e in whole])

    @invariant()
    def companion_traces_equal(self) -> None:
        """Both logs replay to the same companion trace (what is open, what is pending)."""
        if self.model.session is not None:
            assert replay(self.model.session.events) == replay(self.sut.session.events), "companion traces differ"
