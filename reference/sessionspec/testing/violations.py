"""Relational violations: a well-formed agent loop cut anywhere, and one request that breaks one relation.

The companion (`sessionspec.invariants.Companion`, spec/09) must veto each with the rule it names.
The rule is drawn first and the cut among the loop states it fits (`testing.loops` records the
state before every request), so every rule .2-.12 of SESSION-RELATIONAL-INVARIANT is exercised.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

from sessionspec.invariants import (
    IN_OPEN_STEP,
    RESULT_HAS_CALL,
    REWRITE_IN_TURN,
    STEP_IN_TURN,
    STEP_NOT_OPEN,
    STEP_NUMBERED,
    TURN_ENCLOSED,
    TURN_END_MATCHES,
    TURN_END_STEP_CLOSED,
    TURN_NOT_OPEN,
    TURN_NUMBERED,
)
from sessionspec.testing.builders import assistant_message, pruned, replace_op, request_header, text_block, tool_result
from sessionspec.testing.loops import LoopState, Request, agent_loops


@dataclass(frozen=True, slots=True)
class Violation:
    """A prefix of a well-formed loop, then one request the companion must veto with `rule`."""

    prefix: tuple[Request, ...]
    request: Request
    rule: str
    state: LoopState = field(default_factory=LoopState)



def _other(value: int | None, draw: Any) -> int:
    """A number that is not `value`."""
    return int(draw(st.integers(0, 9).filter(lambda n: n != value)))


def _violations_for(state: LoopState, draw: Any) -> list[tuple[str, Callable[[], Request]]]:
    """The violations that fit `state`, each with the rule the companion must name."""
    t, s = state.open_turn, state.open_step
    fresh = f"stray-{state.seq}"
    out: list[tuple[str, Callable[[], Request]]] = []

    def add(rule: str, make: Callable[[], Request]) -> None:
        out.append((rule, make))

    if t is None:
        add(TURN_NUMBERED, lambda: {"type": "turn/start", "data": {"turn": _other(state.next_turn, draw)}})
        add(TURN_END_MATCHES, lambda: {"type": "turn/end", "data": {"turn": state.next_turn, "reason": {"kind": "completed"}}})
        add(STEP_IN_TURN, lambda: {"type": "step/start", "data": {"turn": state.next_turn, "step": 1}})
        add(IN_OPEN_STEP, lambda: {"type": "assistant/chunk", "data": {"turn": 1, "step": 1, "chunk": {}}})
        add(IN_OPEN_STEP, lambda: {"type": "tool/result", "surfaceOp": "append",
                                   "data": tool_result(fresh, "x", message_id=f"r-{fresh}")})
        kind = draw(st.sampled_from(["todo/write", "request/header", "request/context"]))
        data = request_header(reason="change") if kind == "request/header" else {"todos": []}
        add(TURN_ENCLOSED, lambda: {"type": kind, "data": data})
        if state.results:
            seq, result = state.results[-1]
            add(REWRITE_IN_TURN, lambda: {"type": "tool/result", "data": pruned(result),
                                          "surfaceOp": replace_op(seq, seq),
                                          "sourceEventSeqs": [seq]})
        return out
    add(TURN_NOT_OPEN, lambda: {"type": "turn/start", "data": {"turn": draw(st.sampled_from([t, t + 1]))}})
    add(TURN_END_MATCHES, lambda: {"type": "turn/end", "data": {"turn": _other(t, draw), "reason": {"kind": "completed"}}})
    add(STEP_IN_TURN, lambda: {"type": "step/start", "data": {"turn": _other(t, draw), "step": state.next_step}})
    if s is None:
        add(STEP_NUMBERED, lambda: {"type": "step/start", "data": {"turn": t, "step": _other(state.next_step, draw)}})
        add(IN_OPEN_STEP, lambda: {"type": "tool/call", "data": {"turn": t, "step": state.next_step, "callId": fresh,
                                                                  "name": "x", "arguments": "{}"}})
        add(IN_OPEN_STEP, lambda: {"type": "step/end", "data": {"turn": t, "step": state.next_step}})
        return out
    add(TURN_END_STEP_CLOSED, lambda: {"type": "turn/end", "data": {"turn": t, "reason": {"kind": "completed"}}})
    add(STEP_NOT_OPEN, lambda: {"type": "step/start", "data": {"turn": t, "step": draw(st.sampled_from([s, s + 1]))}})
    add(IN_OPEN_STEP, lambda: {"type": "assistant/message", "surfaceOp": "append",
                               "data": assistant_message(f"a-{fresh}", [text_block("hi")], turn=t,
                                                         step=_other(s, draw))})
    add(IN_OPEN_STEP, lambda: {"type": "step/end", "data": {"turn": _other(t, draw), "step": s}})
    add(RESULT_HAS_CALL, lambda: {"type": "tool/result", "surfaceOp": "append",
                                  "data": tool_result(fresh, "x", message_id=f"r-{fresh}", turn=t, step=s)})
    return out


_FITS: dict[str, Callable[[LoopState], bool]] = {
    TURN_NOT_OPEN: lambda s: s.open_turn is not None,
    TURN_NUMBERED: lambda s: s.open_turn is None,
    TURN_END_STEP_CLOSED: lambda s: s.open_step is not None,
    STEP_NOT_OPEN: lambda s: s.open_step is not None,
    STEP_NUMBERED: lambda s: s.open_turn is not None and s.open_step is None,
    RESULT_HAS_CALL: lambda s: s.open_step is not None,
    REWRITE_IN_TURN: lambda s: s.open_turn is None and bool(s.results),
    TURN_ENCLOSED: lambda s: s.open_turn is None,
}
"""The states each rule's violation needs; the rules not listed fit every state."""


def _any_state(state: LoopState) -> bool:
    return True
RULES = (TURN_NOT_OPEN, TURN_NUMBERED, TURN_END_MATCHES, TURN_END_STEP_CLOSED, STEP_IN_TURN, STEP_NOT_OPEN, STEP_NUMBERED,
         IN_OPEN_STEP, RESULT_HAS_CALL, REWRITE_IN_TURN, TURN_ENCLOSED)


@st.composite
def relational_violations(draw: Any, max_turns: int = 2, max_steps: int = 2, max_calls: int = 2) -> Violation:
    """A well-formed prefix and one request after it that breaks a relation the companion checks.

    The rule is drawn first and the cut among the states it fits, so every rule is exercised.
    """
    loop = draw(agent_loops(max_turns, max_steps, max_calls, min_turns=1))
    rule = draw(st.sampled_from(RULES))
    fits = _FITS.get(rule, _any_state)
    cuts = [k for k, state in enumerate(loop.states) if fits(state)]
    cut = draw(st.sampled_from(cuts)) if cuts else draw(st.integers(0, len(loop.requests)))
    state = loop.states[cut]
    choices = _violations_for(state, draw)
    matching = [choice for choice in choices if choice[0] == rule] or choices
    rule, make = draw(st.sampled_from(matching))
    return Violation(loop.requests[:cut], make(), rule, state)


