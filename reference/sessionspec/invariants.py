"""The relational invariant companion: turn and step structure, as an optional validator (spec/09-relational.md).

The core session checks each event on its own; it does not know that a tool result answers a call
made in the same step, or that turns are numbered. Those relations are the agent loop's, not the
log's, so they live in a companion a deployment can attach. Its discipline is that of any
precommit validator: `check` is pure and runs before the commit (a violation vetoes the append,
kind "veto"); the transition it staged is applied only by the observer, after the commit, so a
candidate that this or any later validator vetoes never advances the trace.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from sessionspec.catalog import ASSISTANT_MESSAGE, END_SEED, REQUEST_HEADER, TOOL_RESULT, USER_MESSAGE
from sessionspec.envelope import APPEND, Event
from sessionspec.errors import Kind, SpecViolation
from sessionspec.jsonvalue import Json, json_equal
from sessionspec.preview import as_text
from sessionspec.repair import TOOL_NOT_STARTED
from sessionspec.rules import check, define

K = Kind
SEQ_INCREASES = define("SESSION-RELATIONAL-INVARIANT.1", K.VETO, "seqs strictly increase")
TURN_NOT_OPEN = define("SESSION-RELATIONAL-INVARIANT.2", K.VETO, "a turn starts only when no turn is open")
TURN_NUMBERED = define("SESSION-RELATIONAL-INVARIANT.3", K.VETO, "turns are numbered from 1 without gaps")
TURN_END_MATCHES = define("SESSION-RELATIONAL-INVARIANT.4", K.VETO, "turn/end names the open turn")
TURN_END_STEP_CLOSED = define("SESSION-RELATIONAL-INVARIANT.5", K.VETO, "a turn ends only after its step ended")
STEP_IN_TURN = define("SESSION-RELATIONAL-INVARIANT.6", K.VETO, "step/start names the open turn")
STEP_NOT_OPEN = define("SESSION-RELATIONAL-INVARIANT.7", K.VETO, "a step starts only when no step is open")
STEP_NUMBERED = define("SESSION-RELATIONAL-INVARIANT.8", K.VETO, "steps are numbered from 1 within their turn")
IN_OPEN_STEP = define("SESSION-RELATIONAL-INVARIANT.9", K.VETO,
                      "step/end, chunks, assistant messages, tool calls and appended results name the open turn and step")
RESULT_HAS_CALL = define("SESSION-RELATIONAL-INVARIANT.10", K.VETO,
                         "an appended tool result answers a tool/call pending in this step (repair's not-started closers excepted)")
REWRITE_IN_TURN = define("SESSION-RELATIONAL-INVARIANT.11", K.VETO, "a tool/result replacement lands inside an open turn")
TURN_ENCLOSED = define("SESSION-RELATIONAL-INVARIANT.12", K.VETO,
                       "todo/write, request/header and request/context land inside an open turn")
PURE_PRECOMMIT = define("SESSION-INVARIANT-COMMIT.1", K.INTERNAL,
                        "validation is pure; the staged transition is applied only after the commit")
REPLAY_ON_ATTACH = define("SESSION-INVARIANT-COMMIT.2", K.INTERNAL,
                          "attaching replays the session's log through validation first")

STEP_SCOPED = frozenset({"step/end", "assistant/chunk", ASSISTANT_MESSAGE, "tool/call"})
TURN_SCOPED = frozenset({"todo/write", REQUEST_HEADER, "request/context"})
UNCONSTRAINED = frozenset({USER_MESSAGE, END_SEED})


@dataclass(frozen=True, slots=True)
class Trace:
    """What the companion knows about a session's log so far. Immutable: a step returns a new trace."""

    last_seq: int = -1
    open_turn: Json = None
    open_step: Json = None
    next_turn: int = 1
    next_step: int = 1
    pending: frozenset[str] = field(default_factory=frozenset)


def _get(data: Json, key: str) -> Json:
    return data.get(key) if isinstance(data, dict) else None


def _same(value: Json, expected: Json) -> bool:
    """JSON equality, so that `true` never names turn 1."""
    return json_equal(value, expected)


def is_not_started_closer(event: Event) -> bool:
    """Repair's synthetic result for a call that was never recorded: the one result without a tool/call."""
    content = _get(_get(event.data, "message"), "content")
    block = content[0] if isinstance(content, list) and content else None
    return _get(block, "isError") is True and _get(_get(event.data, "error"), "code") == TOOL_NOT_STARTED


def step(trace: Trace, event: Event) -> Trace:
    """SESSION-RELATIONAL-INVARIANT: check `event` against `trace`; return the trace after it. Pure."""
    seq, kind, data = event.seq, event.type, event.data
    # .1 Seqs strictly increase (a replayed or reordered event would be checked against the wrong state).
    check(seq > trace.last_seq, SEQ_INCREASES, f"seq must strictly increase: saw {seq} after {trace.last_seq}", seq=seq)
    after = replace(trace, last_seq=seq)
    turn, stp = _get(data, "turn"), _get(data, "step")
    if kind == "turn/start":
        # .2 Turns never overlap.
        check(trace.open_turn is None, TURN_NOT_OPEN, f"turn/start {as_text(turn)} while turn {as_text(trace.open_turn)} is still open",
              seq=seq)
        # .3 Turns count from 1, one at a time.
        check(_same(turn, trace.next_turn), TURN_NUMBERED, f"turn/start expected turn {trace.next_turn}, got {as_text(turn)}",
              seq=seq)
        return replace(after, open_turn=turn, next_step=1)
    if kind == "turn/end":
        # .4 The turn that ends is the one that is open.
        check(trace.open_turn is not None and _same(turn, trace.open_turn), TURN_END_MATCHES,
              f"turn/end {as_text(turn)} does not match open turn {as_text(trace.open_turn)}", seq=seq)
        # .5 Its last step ended first.
        check(trace.open_step is None, TURN_END_STEP_CLOSED, f"turn/end {as_text(turn)} while step {as_text(trace.open_step)} is still open",
              seq=seq)
        return replace(after, open_turn=None, next_turn=trace.next_turn + 1)
    if kind == "step/start":
        # .6 A step belongs to the open turn.
        check(trace.open_turn is not None and _same(turn, trace.open_turn), STEP_IN_TURN,
              f"step/start in turn {as_text(turn)} but open turn is {as_text(trace.open_turn)}", seq=seq)
        # .7 Steps never overlap.
        check(trace.open_step is None, STEP_NOT_OPEN, f"step/start {as_text(stp)} while step {as_text(trace.open_step)} is still open",
              seq=seq)
        # .8 Steps count from 1 within the turn.
        check(_same(stp, trace.next_step), STEP_NUMBERED,
              f"step/start expected step {trace.next_step} in turn {as_text(turn)}, got {as_text(stp)}", seq=seq)
        return replace(after, open_step=stp)
    if kind in STEP_SCOPED or (kind == TOOL_RESULT and event.surface_op == APPEND):
        _check_in_open_step(trace, event)
        if kind == "step/end":
            return replace(after, open_step=None, next_step=trace.next_step + 1, pending=frozenset())
        if kind == "tool/call":
            called = _get(data, "callId")
            # Only a string can be answered (a result's callId is one, SESSION-MESSAGE-SHAPE.6); and a list is no set member.
            return replace(after, pending=trace.pending | {called}) if type(called) is str else after
        if kind == TOOL_RESULT:
            call_id = _get(_get(_get(data, "message"), "source"), "callId")
            # .10 A result answers a call recorded in this step, once; a not-started closer has no call to answer.
            # SESSION-RELATIONAL-INVARIANT.10: a result answers a pending call (or is a not-started closer).
            check((type(call_id) is str and call_id in trace.pending) or is_not_started_closer(event), RESULT_HAS_CALL,
                  f"tool/result for {as_text(call_id)} with no prior tool/call in this step", seq=seq)
            return replace(after, pending=trace.pending - {call_id})
        return after
    if kind == TOOL_RESULT:
        # .11 A rewrite (pruning) happens while the loop runs, inside a turn.
        check(trace.open_turn is not None, REWRITE_IN_TURN,
              "tool/result surface replacement appended outside any open turn", seq=seq)
        return after
    if kind in TURN_SCOPED:
        # .12 Execution state changes belong to a turn.
        check(trace.open_turn is not None, TURN_ENCLOSED,
              f"{kind} appended outside any open turn (core execution events must be turn-enclosed)", seq=seq)
    return after


def _check_in_open_step(trace: Trace, event: Event) -> None:
    """SESSION-RELATIONAL-INVARIANT.9: an execution event names the open turn and the open step."""
    turn, stp = _get(event.data, "turn"), _get(event.data, "step")
    named = trace.open_turn is not None and trace.open_step is not None
    check(named and _same(turn, trace.open_turn) and _same(stp, trace.open_step), IN_OPEN_STEP,
          f"{event.type} names {_position(turn, stp)} but {_position(trace.open_turn, trace.open_step, 'open')}",
          seq=event.seq)


def _position(turn: Json, step: Json, state: str = "") -> str:
    """Turn and step in words: "turn 2/step 1", "no turn", "turn 2 with no step open"."""
    if turn is None:
        return f"no turn is {state}" if state else "no turn"
    turn_text = as_text(turn)
    if step is None:
        return f"turn {turn_text} is {state} with no step" if state else f"turn {turn_text} and no step"
    return f"turn {turn_text}/step {as_text(step)} is {state}" if state else f"turn {turn_text}/step {as_text(step)}"


def replay(events: Any, trace: Trace | None = None) -> Trace:
    """The trace after `events`, raising the first violation (SESSION-INVARIANT-COMMIT.2)."""
    current = trace or Trace()
    for index, event in enumerate(events):
        try:
            current = step(current, event)
        except SpecViolation as violation:
            raise violation.at(index=index) from None
    return current


class Companion:
    """The optional validator. `attach(session)` replays its log, then checks every later append.

    One companion may watch several sessions; each has its own trace and its own staged candidate.
    """

    def __init__(self) -> None:
        self._traces: dict[int, Trace] = {}
        self._staged: dict[int, tuple[int, Trace]] = {}

    def attach(self, session: Any) -> Companion:
        # SESSION-INVARIANT-COMMIT.2: an existing log is checked like any append before the companion trusts it.
        self._traces[id(session)] = replay(session.events)
        session.add_validator(self.validate)
        session.add_observer(self.observe)
        return self

    def trace(self, session: Any) -> Trace:
        return self._traces[id(session)]

    def validate(self, session: Any, candidate: Event) -> None:
        """Precommit: check the candidate and stage its transition; nothing the companion holds changes."""
        key = id(session)
        # SESSION-INVARIANT-COMMIT.1: a fresh stage replaces any left by a candidate that was vetoed later.
        self._staged.pop(key, None)
        # SESSION-INVARIANT-COMMIT.1: validation is pure; the transition is only staged here.
        staged = step(self._traces[key], candidate)
        self._staged[key] = (candidate.seq, staged)

    def observe(self, session: Any, event: Event) -> None:
        """Postcommit: the committed event's staged transition becomes the trace."""
        key = id(session)
        staged = self._staged.pop(key, None)
        if staged is not None and staged[0] == event.seq:
            self._traces[key] = staged[1]
        else:
            # Committed without our precommit (attached mid-append): check it now; it cannot be vetoed any more.
            self._traces[key] = step(self._traces[key], event)
