"""Hypothesis strategies for well-formed agent loops (their relational violations: `testing.violations`).

A well-formed loop is what a correct harness writes: turns numbered from 1, each with a user
message and steps numbered from 1; a step streams chunks, commits an assistant message whose
tool calls are each recorded (`tool/call`) and answered (`tool/result`); request headers and
todos land inside turns; compactions (a summary replacing a surface range) land between turns
or steps, and prunings (a tool result rewritten to shorter content) inside turns. Every request
is recorded with the loop state before it, so a test can cut the loop anywhere (crash repair)
or plant a violation that fits the state at the cut (the companion's veto).

A loop can also continue a log (`agent_loops(start=state_of(events, nodes))`): it finishes the
turn, step and calls the log left open, then runs new turns. `states_along` reads the state after
every event of a log the way crash repair does, so a test can cut where repair has work to do.

Requests are the protocol's append form: `{type, data, surfaceOp?, sourceEventSeqs?}`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

from hypothesis import strategies as st

from sessionspec.testing import implementations as impls
from sessionspec.testing.builders import (
    assistant_message,
    compaction_summary,
    pruned,
    replace_op,
    request_header,
    text_block,
    tool_call,
    tool_call_block,
    tool_result,
    user_message,
)

Request = dict[str, Any]


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
    unrecorded: tuple[str, ...] = ()
    """Calls of the open step's assistant message not yet recorded by `tool/call` (nor answered)."""
    recorded_at: tuple[tuple[str, int], ...] = ()
    """(call id, seq of its `tool/call`) for each call in `pending`: what its result cites."""
    committed: bool = False
    """Whether the open step's assistant message is logged (what is left of the step is its calls)."""
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


class _Builder:
    """Writes requests and keeps the state a correct harness would be in after each."""

    def __init__(self, start: LoopState | None = None) -> None:
        self.state = start if start is not None else LoopState()
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
        request = {"type": kind, "data": data, "surfaceOp": replace_op(nodes[first], nodes[last]),
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
    summary = compaction_summary(f"summary{b.state.seq}", "Summary of earlier work.")
    b.replace_range("user/message", summary, first, last)
    b.log_only("compaction/end", {"compactionId": f"k{b.state.seq}", "turn": None})


def _pruning(draw: Any, b: _Builder) -> None:
    results = b.state.results
    if not results or not draw(st.booleans()):
        return
    target, data = results[draw(st.integers(0, len(results) - 1))]
    position = b.state.nodes.index(target)
    b.replace_range("tool/result", pruned(data), position, position)


def _step(draw: Any, b: _Builder, turn: int, step: int, max_calls: int) -> None:
    b.log_only("step/start", {"turn": turn, "step": step}, open_step=step, committed=False)
    _commit(draw, b, turn, step, max_calls)
    _finish_step(draw, b, turn, step)


def _commit(draw: Any, b: _Builder, turn: int, step: int, max_calls: int) -> None:
    """The model call of the open step: streamed chunks, then the assistant message with its tool calls."""
    chunks = [b.log_only("assistant/chunk", {"turn": turn, "step": step,
                                             "chunk": {"type": "text-delta", "index": 0, "text": f"part {i}"}})
              for i in range(draw(st.integers(0, 2)))]
    calls = [f"call-{b.state.seq}-{i}" for i in range(draw(st.integers(0, max_calls)))]
    text = draw(st.sampled_from(("", "Working on it."))) if calls else "Done."
    sources = chunks if chunks else (None if draw(st.booleans()) else [])
    content = [*([text_block(text)] if text else []), *(tool_call_block(c) for c in calls)]
    b.surface("assistant/message", assistant_message(f"a{b.state.seq}", content, turn=turn, step=step), sources,
              committed=True, unrecorded=tuple(calls))


@functools.lru_cache(maxsize=16)
def _orders(n: int) -> st.SearchStrategy[list[int]]:
    """The orders of n things, one strategy per n (strategies are built once: Hypothesis validates each it meets)."""
    return st.permutations(range(n))


def _finish_step(draw: Any, b: _Builder, turn: Any, step: Any) -> None:
    """Run the committed calls still to run, then end the step.

    Calls run one by one (record, answer, record, answer), or all recorded first and answered in
    any order. A step resumed after a cut first answers what it had recorded.
    """

    def record(call_id: str) -> None:
        seq = b.state.seq
        b.log_only("tool/call", tool_call(call_id, turn=turn, step=step),
                   pending=(*b.state.pending, call_id), unrecorded=tuple(c for c in b.state.unrecorded if c != call_id),
                   recorded_at=(*b.state.recorded_at, (call_id, seq)))

    def answer(call_id: str) -> None:
        cited = [seq for c, seq in b.state.recorded_at if c == call_id]
        result = tool_result(call_id, "file contents " * 3, message_id=f"r{b.state.seq}", turn=turn, step=step)
        b.surface("tool/result", result, cited,
                  pending=tuple(c for c in b.state.pending if c != call_id),
                  recorded_at=tuple((c, seq) for c, seq in b.state.recorded_at if c != call_id))

    unrecorded, pending = b.state.unrecorded, b.state.pending
    if len(unrecorded) + len(pending) > 1 and draw(st.booleans()):
        for call_id in unrecorded:
            record(call_id)
        pending = b.state.pending
        for position in draw(_orders(len(pending))):
            call_id = pending[position]
            answer(call_id)
    else:
        for call_id in pending:
            answer(call_id)
        for call_id in unrecorded:
            record(call_id)
            answer(call_id)
    if draw(st.booleans()):
        b.log_only("todo/write", {"todos": [{"content": "read the file", "status": "completed"}]})
    b.log_only("step/end", {"turn": turn, "step": step}, open_step=None, next_step=_after(step), pending=(),
               unrecorded=(), recorded_at=(), committed=False)


def _after(number: Any) -> int:
    return number + 1 if type(number) is int else 1


def _steps(draw: Any, b: _Builder, turn: Any, steps: tuple[int, int], max_calls: int, compactions: bool) -> None:
    """The open turn's remaining steps (numbered on from `next_step`), then its turn/end."""
    first = b.state.next_step
    for step in range(first, first + draw(st.integers(*steps))):
        _pruning(draw, b)
        if compactions and step > 1:
            _compaction(draw, b)
        _step(draw, b, turn, step, max_calls)
    b.log_only("turn/end", {"turn": turn, "reason": {"kind": "completed"}}, open_turn=None,
               next_turn=max(b.state.next_turn, _after(turn)))


def _resume(draw: Any, b: _Builder, steps: tuple[int, int], max_calls: int, compactions: bool) -> None:
    """Carry on from a state cut inside a turn: finish the open step (committing it first if need be), then the turn."""
    state = b.state
    if state.open_turn is None:
        return
    if state.open_step is not None:
        if not state.committed:
            _commit(draw, b, state.open_turn, state.open_step, max_calls)
        _finish_step(draw, b, state.open_turn, state.open_step)
    _steps(draw, b, state.open_turn, (0, steps[1]), max_calls, compactions)


def agent_loop(draw: Any, max_turns: int = 3, max_steps: int = 3, max_calls: int = 2, compactions: bool = True,
               min_turns: int = 0, start: LoopState | None = None, min_steps: int = 0) -> Loop:
    """A well-formed agent loop with compactions between turns and steps, and prunings inside turns.

    `agent_loops(...)` is the strategy; this is its draw function, for a caller already drawing
    (a composite that draws a loop per step would otherwise build and validate a strategy per step).

    Without `compactions` the surface keeps every call next to its result (prunings still happen).
    With `start` (see `state_of`) the loop continues a log: it first finishes the turn and step
    left open there, then numbers its turns on from `start.next_turn`. Each new turn has between
    `min_steps` and `max_steps` steps.
    """
    b = _Builder(start)
    _resume(draw, b, (min_steps, max_steps), max_calls, compactions)
    if draw(st.booleans()):
        b.surface("user/message", user_message(f"u-pre{b.state.seq}" if b.state.seq else "u-pre", "Before any turn."))
    first = b.state.next_turn
    for turn in range(first, first + draw(st.integers(min_turns, max_turns))):
        if compactions:
            _compaction(draw, b)
        b.log_only("turn/start", {"turn": turn}, open_turn=turn, next_step=1)
        if draw(st.booleans()):
            system = {"system": "Be brief."} if draw(st.booleans()) else {}
            b.log_only("request/header", request_header(reason="initial" if turn == 1 else "change", **system))
        if draw(st.booleans()):
            b.log_only("request/context", {"provider": "deepseek", "model": "deepseek-chat"})
        b.surface("user/message", user_message(f"u{b.state.seq}", f"Request {turn}."))
        _steps(draw, b, turn, (min_steps, max_steps), max_calls, compactions)
    return Loop(tuple(b.requests), (*b.states, b.state))


agent_loops = st.composite(agent_loop)


def state_of(events: Sequence[Any], nodes: Sequence[int]) -> LoopState:
    """The loop state at the end of a log (plain JSON envelopes) with surface `nodes`: where a harness resumes."""
    state = [LoopState(), *states_along(events)][-1]
    results = tuple((n, events[n]["data"]) for n in nodes if events[n]["type"] == "tool/result")
    return replace(state, nodes=tuple(nodes), results=results)


def states_along(events: Iterable[Any]) -> Iterator[LoopState]:
    """The loop state after each event of a log (plain JSON envelopes), without the surface.

    Read the way crash repair reads a log (sessionspec.repair): any turn/start opens a turn and
    any turn/end closes it; a step/end, like a new turn, drops the calls still pending; a call
    answered anywhere before the cut is not pending. Turns are numbered on from the highest started.
    """
    answered: set[Any] = set()
    open_turn: int | None = None
    open_step: int | None = None
    highest, next_step, committed, seq = 0, 1, False, 0
    calls: dict[str, int | None] = {}
    for event in events:
        kind, data, seq = event["type"], event.get("data"), seq + 1
        if kind in ("turn/start", "turn/end", "step/start", "step/end"):
            calls.clear()
            committed = False
        if kind == "turn/start":
            number = _number(data, "turn")
            open_turn = number if number is not None else highest + 1
            highest, open_step, next_step = max(highest, open_turn), None, 1
        elif kind == "turn/end":
            open_turn = open_step = None
        elif kind == "step/start" and open_turn is not None:
            number = _number(data, "step")
            open_step = number if number is not None else next_step
            next_step = open_step + 1
        elif kind == "step/end":
            open_step = None
        elif kind == "assistant/message" and open_step is not None:
            committed = True
            # As repair reads it: a call named again is pending afresh (not recorded yet).
            calls.update((c, None) for c in _call_ids(data) if c not in answered)
        elif kind == "tool/call" and _text(_field(data, "callId")) in calls:
            calls[_field(data, "callId")] = event["seq"]
        elif kind == "tool/result":
            answered.add(_result_call(data))
            calls.pop(_result_call(data), None)
        yield LoopState(
            seq=seq, open_turn=open_turn, open_step=open_step, next_turn=highest + 1, next_step=next_step,
            pending=tuple(c for c, at in calls.items() if at is not None),
            unrecorded=tuple(c for c, at in calls.items() if at is None),
            recorded_at=tuple((c, at) for c, at in calls.items() if at is not None), committed=committed)


def _field(data: Any, key: str) -> Any:
    return data.get(key) if isinstance(data, dict) else None


def _number(data: Any, key: str) -> int | None:
    value = _field(data, key)
    return value if type(value) is int and value >= 0 else None


def _text(value: Any) -> str | None:
    """A call id as a log-only event may carry it: any JSON value (only a string names a call)."""
    return value if type(value) is str else None


def _result_call(data: Any) -> Any:
    return _text(_field(_field(_field(data, "message"), "source"), "callId"))


def _call_ids(data: Any) -> list[str]:
    content = _field(_field(data, "message"), "content")
    blocks = content if isinstance(content, list) else []
    return [b["id"] for b in blocks if isinstance(b, dict) and b.get("type") == "tool-call" and type(b.get("id")) is str]


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
