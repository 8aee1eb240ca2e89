"""Hypothesis strategies for well-formed agent loops, and for relational violations of them.

A well-formed loop is what a correct harness writes: turns numbered from 1, each with a user
message and steps numbered from 1; a step streams chunks, commits an assistant message whose
tool calls are each recorded (`tool/call`) and answered (`tool/result`); request headers and
todos land inside turns; compactions (a summary replacing a surface range) land between turns
or steps, and prunings (a tool result rewritten to shorter content) inside turns. Every request
is recorded with the loop state before it, so a test can cut the loop anywhere (crash repair)
or plant a violation that fits the state at the cut (the companion's veto).

Requests are the protocol's append form: `{type, data, surfaceOp?, sourceEventSeqs?}`.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from hypothesis import strategies as st

from sessionspec import impls
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

Request = dict[str, Any]
PROVIDER = {"kind": "model", "provider": "deepseek", "model": "deepseek-chat"}


@dataclass(frozen=True, slots=True)
class LoopState:
    """The loop between two requests: what is open, what comes next, and the surface."""

    seq: int = 0
    open_turn: int | None = None
    open_step: int | None = None
    next_turn: int = 1
    next_step: int = 1
    pending: tuple[str, ...] = ()
    """Calls recorded by `tool/call` in the open step and not yet answered."""
    nodes: tuple[int, ...] = ()
    results: tuple[tuple[int, Any], ...] = ()
    """(seq, data) of the tool/result nodes currently on the surface: what a pruning can rewrite."""


@dataclass(frozen=True, slots=True)
class Loop:
    """A generated loop: its requests, and `states[i]`, the state before `requests[i]` (one more at the end)."""

    requests: tuple[Request, ...]
    states: tuple[LoopState, ...]

    def cuts_inside_turns(self) -> list[int]:
        """The prefix lengths after which a turn is open: where a crash leaves work to repair."""
        return [k for k, state in enumerate(self.states) if state.open_turn is not None]


@dataclass(frozen=True, slots=True)
class Violation:
    """A prefix of a well-formed loop, then one request the companion must veto with `rule`."""

    prefix: tuple[Request, ...]
    request: Request
    rule: str
    state: LoopState = field(default_factory=LoopState)


def user_message(message_id: str, text: str, kind: str = "user") -> dict[str, Any]:
    source: dict[str, Any] = {"kind": kind} if kind == "user" else {"kind": kind, "plugin": "compaction"}
    return {"id": message_id, "role": "user", "source": source, "content": [{"type": "text", "text": text}]}


def assistant_data(turn: Any, step: Any, message_id: str, text: str, calls: Sequence[str]) -> dict[str, Any]:
    content: list[Any] = [{"type": "text", "text": text}] if text else []
    content += [{"type": "tool-call", "id": c, "name": "read_file", "arguments": "{}"} for c in calls]
    return {"turn": turn, "step": step, "message": {"id": message_id, "role": "assistant", "source": dict(PROVIDER),
                                                    "content": content}}


def result_data(turn: Any, step: Any, message_id: str, call_id: str, text: str) -> dict[str, Any]:
    block = {"type": "tool-result", "toolCallId": call_id, "content": [{"type": "text", "text": text}]}
    return {"turn": turn, "step": step,
            "message": {"id": message_id, "role": "user", "source": {"kind": "tool", "callId": call_id},
                        "content": [block]}}


def pruned(data: Any) -> dict[str, Any]:
    """The same tool/result data with only the block's inner content shortened (a valid rewrite)."""
    out = copy.deepcopy(_plain(data))
    out["message"]["content"][0]["content"] = [{"type": "text", "text": "[pruned]"}]
    return out  # type: ignore[no-any-return]


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def request_header_data(reason: str, system: str = "") -> dict[str, Any]:
    header: dict[str, Any] = {"config": {"provider": "deepseek", "model": "deepseek-chat"}}
    if system:
        header["system"] = system
    return {"header": header, "reason": reason}


class _Builder:
    """Writes requests and keeps the state a correct harness would be in after each."""

    def __init__(self) -> None:
        self.state = LoopState()
        self.requests: list[Request] = []
        self.states: list[LoopState] = []

    def add(self, request: Request, after: LoopState) -> int:
        seq = self.state.seq
        self.requests.append(request)
        self.states.append(self.state)
        self.state = replace(after, seq=seq + 1)
        return seq

    def log_only(self, kind: str, data: Any, **changes: Any) -> int:
        return self.add({"type": kind, "data": data}, replace(self.state, **changes))

    def surface(self, kind: str, data: Any, sources: list[int] | None = None, **changes: Any) -> int:
        request: Request = {"type": kind, "data": data, "surfaceOp": "append"}
        if sources is not None:
            request["sourceEventSeqs"] = sources
        state = replace(self.state, **changes)
        seq = self.state.seq
        results = (*state.results, (seq, data)) if kind == "tool/result" else state.results
        return self.add(request, replace(state, nodes=(*state.nodes, seq), results=results))

    def replace_range(self, kind: str, data: Any, first: int, last: int) -> int:
        nodes = self.state.nodes
        shadowed = list(nodes[first : last + 1])
        seq = self.state.seq
        request = {"type": kind, "data": data, "surfaceOp": {"op": "replace", "start": nodes[first], "end": nodes[last]},
                   "sourceEventSeqs": shadowed}
        results = tuple((s, d) for s, d in self.state.results if s not in shadowed)
        if kind == "tool/result":
            results = (*results, (seq, data))
        new_nodes = (*nodes[:first], seq, *nodes[last + 1 :])
        return self.add(request, replace(self.state, nodes=new_nodes, results=results))


def _compaction(draw: Any, b: _Builder) -> None:
    nodes = b.state.nodes
    if not nodes or not draw(st.booleans()):
        return
    first = draw(st.integers(0, len(nodes) - 1))
    last = draw(st.integers(first, len(nodes) - 1))
    b.log_only("compaction/start", {"compactionId": f"k{b.state.seq}", "turn": None})
    b.replace_range("user/message", user_message(f"summary{b.state.seq}", "Summary of earlier work.", "plugin"), first, last)
    b.log_only("compaction/end", {"compactionId": f"k{b.state.seq}", "turn": None})


def _pruning(draw: Any, b: _Builder) -> None:
    results = b.state.results
    if not results or not draw(st.booleans()):
        return
    target, data = draw(st.sampled_from(results))
    position = b.state.nodes.index(target)
    b.replace_range("tool/result", pruned(data), position, position)


def _step(draw: Any, b: _Builder, turn: int, step: int, max_calls: int) -> None:
    b.log_only("step/start", {"turn": turn, "step": step}, open_step=step)
    chunks = [b.log_only("assistant/chunk", {"turn": turn, "step": step,
                                             "chunk": {"type": "text-delta", "index": 0, "text": f"part {i}"}})
              for i in range(draw(st.integers(0, 2)))]
    calls = [f"call-{b.state.seq}-{i}" for i in range(draw(st.integers(0, max_calls)))]
    text = draw(st.sampled_from(["", "Working on it."])) if calls else "Done."
    sources = chunks if chunks else draw(st.sampled_from([None, []]))
    b.surface("assistant/message", assistant_data(turn, step, f"a{b.state.seq}", text, calls), sources)
    # Calls run one by one (record, answer, record, answer), or all recorded first and answered in any order.
    batched = len(calls) > 1 and draw(st.booleans())
    recorded: dict[str, int] = {}

    def record(call_id: str) -> None:
        recorded[call_id] = b.log_only("tool/call", {"turn": turn, "step": step, "callId": call_id, "name": "read_file",
                                                     "arguments": "{}"}, pending=(*b.state.pending, call_id))

    def answer(call_id: str) -> None:
        b.surface("tool/result", result_data(turn, step, f"r{b.state.seq}", call_id, "file contents " * 3),
                  [recorded[call_id]], pending=tuple(c for c in b.state.pending if c != call_id))

    if batched:
        for call_id in calls:
            record(call_id)
        for call_id in draw(st.permutations(calls)):
            answer(call_id)
    else:
        for call_id in calls:
            record(call_id)
            answer(call_id)
    if draw(st.booleans()):
        b.log_only("todo/write", {"todos": [{"content": "read the file", "status": "completed"}]})
    b.log_only("step/end", {"turn": turn, "step": step}, open_step=None, next_step=step + 1, pending=())


@st.composite
def agent_loops(draw: Any, max_turns: int = 3, max_steps: int = 3, max_calls: int = 2, compactions: bool = True,
                min_turns: int = 0) -> Loop:
    """A well-formed agent loop with compactions between turns and steps, and prunings inside turns.

    Without `compactions` the surface keeps every call next to its result (prunings still happen).
    """
    b = _Builder()
    if draw(st.booleans()):
        b.surface("user/message", user_message("u-pre", "Before any turn."))
    for turn in range(1, draw(st.integers(min_turns, max_turns)) + 1):
        if compactions:
            _compaction(draw, b)
        b.log_only("turn/start", {"turn": turn}, open_turn=turn, next_step=1)
        if draw(st.booleans()):
            b.log_only("request/header", request_header_data("initial" if turn == 1 else "change",
                                                             draw(st.sampled_from(["", "Be brief."]))))
        if draw(st.booleans()):
            b.log_only("request/context", {"provider": "deepseek", "model": "deepseek-chat"})
        b.surface("user/message", user_message(f"u{b.state.seq}", f"Request {turn}."))
        for step in range(1, draw(st.integers(0, max_steps)) + 1):
            _pruning(draw, b)
            if compactions and step > 1:
                _compaction(draw, b)
            _step(draw, b, turn, step, max_calls)
        b.log_only("turn/end", {"turn": turn, "reason": {"kind": "completed"}}, open_turn=None, next_turn=turn + 1)
    return Loop(tuple(b.requests), (*b.states, b.state))


# --- relational violations ------------------------------------------------------------------


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
                                   "data": result_data(1, 1, f"r-{fresh}", fresh, "x")})
        kind = draw(st.sampled_from(["todo/write", "request/header", "request/context"]))
        data = request_header_data("change") if kind == "request/header" else {"todos": []}
        add(TURN_ENCLOSED, lambda: {"type": kind, "data": data})
        if state.results:
            seq, result = state.results[-1]
            add(REWRITE_IN_TURN, lambda: {"type": "tool/result", "data": pruned(result),
                                          "surfaceOp": {"op": "replace", "start": seq, "end": seq},
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
                               "data": assistant_data(t, _other(s, draw), f"a-{fresh}", "hi", [])})
    add(IN_OPEN_STEP, lambda: {"type": "step/end", "data": {"turn": _other(t, draw), "step": s}})
    add(RESULT_HAS_CALL, lambda: {"type": "tool/result", "surfaceOp": "append",
                                  "data": result_data(t, s, f"r-{fresh}", fresh, "x")})
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


# --- building sessions ----------------------------------------------------------------------


def ticking_clock(start: int = 1_700_000_000_000) -> Callable[[], int]:
    """A deterministic clock: one millisecond per call."""
    ticks = iter(range(start, start + 10**9))
    return lambda: next(ticks)


def append(session: Any, request: Request) -> Any:
    """Append one request (the protocol's form) to any implementation's session."""
    return session.append(request["type"], request["data"], surface_op=request.get("surfaceOp"),
                          source_event_seqs=request.get("sourceEventSeqs"))


def build(requests: Iterable[Request], impl: str = "model", session_id: str = "loop", *,
          validators: Sequence[Any] = (), observers: Sequence[Any] = ()) -> Any:
    """A fresh session of `impl` with `requests` appended in order."""
    session = impls.factory(impl)(session_id, clock=ticking_clock(), validators=validators, observers=observers)
    for request in requests:
        append(session, request)
    return session
