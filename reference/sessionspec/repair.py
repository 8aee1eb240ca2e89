"""Crash repair: the closers that end an interrupted tail turn (spec/08-repair.md).

A process that dies mid-turn leaves a log whose last turn never ended, whose step may still be
open and whose tool calls may have no results. A provider refuses a history with an unanswered
tool call, and a reader cannot tell a crashed turn from a running one. Repair is pure: it reads
the log and returns the events to append, so the same log always gets the same closers, and
appending them (durably, before anything else) makes the log balanced.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Final

from sessionspec.catalog import ASSISTANT_MESSAGE, TOOL_RESULT
from sessionspec.envelope import APPEND, Event, parse_event
from sessionspec.errors import Kind
from sessionspec.jsonvalue import FrozenList, Json, snapshot
from sessionspec.rules import check, define

TOOL_OUTCOME_UNKNOWN: Final = "TOOL_OUTCOME_UNKNOWN"
TOOL_NOT_STARTED: Final = "TOOL_NOT_STARTED"
OUTCOME_UNKNOWN_ERROR: Final = {"name": "ToolOutcomeUnknownError", "code": TOOL_OUTCOME_UNKNOWN}
NOT_STARTED_ERROR: Final = {"name": "ToolNotStartedError", "code": TOOL_NOT_STARTED}
OUTCOME_UNKNOWN_TEXT: Final = (
    "The tool call was interrupted after it was recorded, but no result was durably recorded. Its outcome is "
    "unknown. Decide whether to retry from the tool semantics: retry only if the operation is read-only or "
    "idempotent; if it may have side effects, first verify external state or ask the user. Do not retry blindly."
)
NOT_STARTED_TEXT: Final = (
    "The tool call was interrupted before the Harness recorded it as started. Retry it if it is still needed."
)

K = Kind
BALANCED = define("SESSION-CRASH-REPAIR.1", K.INTERNAL, "a log with no open turn gets no closers")
PENDING_RESULTS = define("SESSION-CRASH-REPAIR.2", K.INTERNAL,
                         "each call pending in the open step gets one error tool/result, in call order")
CLOSER_SHAPE = define("SESSION-CRASH-REPAIR.3", K.INTERNAL,
                      "a closer result has the fixed id, texts, error name and code, and key order")
CLOSE_STEP_TURN = define("SESSION-CRASH-REPAIR.4", K.INTERNAL,
                         "then step/end if a step is open, then turn/end with reason interrupted")
CONTINUES_LOG = define("SESSION-CRASH-REPAIR.5", K.INTERNAL,
                       "closers continue the log's seqs, reuse the last event's time, and only append")
NEVER_ANSWERED_TWICE = define("SESSION-CRASH-REPAIR.6", K.INTERNAL,
                              "a call with a result anywhere in the log is never answered again")
IDEMPOTENT = define("SESSION-CRASH-REPAIR.7", K.INTERNAL, "the repaired log is balanced: repairing it adds nothing")
UNNUMBERED = define("SESSION-CRASH-REPAIR.8", K.INTERNAL,
                   "a turn or step opened without a number is closed without one; a turn/start whose turn is null opens none")


@dataclass(slots=True)
class _Pending:
    """A call registered by an assistant tool-call block: its step, and the tool/call that recorded it."""

    step: Json | _Absent
    call_seq: int | None = None


def _field(data: Json, key: str) -> Json:
    return data.get(key) if isinstance(data, dict) else None


class _Absent:
    """A turn or step number the log does not give (its key is missing, or its data is not an object)."""

    def __repr__(self) -> str:
        return "ABSENT"


ABSENT: Final = _Absent()


def _number(data: Json, key: str) -> Json | _Absent:
    """A turn or step number as the upstream's scan reads it (`data.turn`): the value when the key is there, `null`
    included; ABSENT when it is not, which the upstream's closers then leave out (JavaScript's `undefined`)."""
    return data[key] if isinstance(data, dict) and key in data else ABSENT


def _numbered(**fields: Json | _Absent) -> dict[str, Json]:
    """The closer's data with every ABSENT number left out, in the order given."""
    return {key: value for key, value in fields.items() if value is not ABSENT}


def _tool_call_ids(data: Json) -> list[str]:
    """The ids of an assistant message's tool-call blocks, in block order."""
    content = _field(_field(data, "message"), "content")
    if not isinstance(content, list):
        return []
    return [block["id"] for block in content
            if isinstance(block, dict) and block.get("type") == "tool-call" and type(block.get("id")) is str]


def _call_id(value: Json) -> str | None:
    """A call is named by a string; anything else names no call (a message shape refuses it), so it answers none."""
    return value if type(value) is str else None


def result_call_id(data: Json) -> str | None:
    """The call a tool/result's data answers."""
    return _call_id(_field(_field(_field(data, "message"), "source"), "callId"))


def _as_events(events: Sequence[Event | Json]) -> list[Event]:
    log = [raw if isinstance(raw, Event) else parse_event(raw, index) for index, raw in enumerate(events)]
    for position, event in enumerate(log):
        # SESSION-SURFACE-FOLD.1: closers take the seqs after the last one, so the log must be contiguous.
        check(event.seq == position, "SESSION-SURFACE-FOLD.1",
              f"session event seq {event.seq} is not contiguous; expected {position}", seq=event.seq, index=position)
    return log


def closers(events: Sequence[Event | Json]) -> list[Event]:
    """SESSION-CRASH-REPAIR: the events that close the interrupted tail turn of `events`, or [] if none is open.

    `events` is a log as a session holds it (Event objects or their JSON envelopes).
    """
    log = _as_events(events)
    # SESSION-CRASH-REPAIR.6: the calls answered anywhere in the log.
    answered = {result_call_id(e.data) for e in log if e.type == TOOL_RESULT}
    return open_turn_closers(log, answered, last_seq=log[-1].seq if log else -1, last_time=log[-1].time if log else 0)


def open_turn_closers(events: Iterable[Event], answered: AbstractSet[str | None], *, last_seq: int,
                      last_time: int) -> list[Event]:
    """The closers of the turn `events` leave open, after the log's last event (`last_seq`, `last_time`).

    `events` are a log's events in order; the walk reads only its turn and step bounds, assistant
    messages, tool calls and results, and forgets everything at a turn/start, so the events from the
    last turn/start on are as good as the whole log. `answered` holds the call of every tool/result
    in the whole log (SESSION-CRASH-REPAIR.6).
    """
    # The open turn and step as the upstream's scan holds them: None when none is open (a turn/start whose turn is
    # null opens none), ABSENT for one opened without a number (SESSION-CRASH-REPAIR.8).
    open_turn: Json | _Absent = None
    open_step: Json | _Absent = None
    pending: dict[str, _Pending] = {}
    for event in events:
        kind, data = event.type, event.data
        if kind == "turn/start":
            open_turn, open_step = _number(data, "turn"), None
            pending.clear()
        elif kind == "turn/end":
            open_turn, open_step = None, None
            pending.clear()
        elif kind == "step/start":
            open_step = _number(data, "step")
        elif kind == "step/end":
            open_step = None
            pending.clear()
        elif kind == ASSISTANT_MESSAGE:
            for call_id in _tool_call_ids(data):
                # SESSION-CRASH-REPAIR.6: a call answered anywhere in the log (even before it, by a reused id) is not pending.
                if call_id not in answered:
                    pending[call_id] = _Pending(_number(data, "step"))
        elif kind == "tool/call":
            called = _call_id(_field(data, "callId"))
            entry = pending.get(called) if called is not None else None
            if entry is not None:
                entry.call_seq = event.seq
        elif kind == TOOL_RESULT:
            result = result_call_id(data)
            if result is not None:
                pending.pop(result, None)
    # .1 A balanced (or empty) log has nothing to close.
    if open_turn is None:
        return []
    out: list[Event] = []
    # .5 Closers continue the log; their time is the last event's, since no clock ran after the crash.
    seq, time = last_seq + 1, last_time
    # .2 One error result per pending call, in the order the calls were made.
    for call_id, entry in pending.items():
        out.append(_closer_result(seq, time, open_turn, entry, call_id))
        seq += 1
    # .4 Then the open step, then the turn.
    if open_step is not None:
        out.append(Event("step/end", seq, time, snapshot(_numbered(turn=open_turn, step=open_step))))
        seq += 1
    out.append(Event("turn/end", seq, time, snapshot(_numbered(turn=open_turn, reason={"kind": "interrupted"}))))
    return out


def _closer_result(seq: int, time: int, turn: Json | _Absent, entry: _Pending, call_id: str) -> Event:
    """SESSION-CRASH-REPAIR.3: the synthetic result, byte for byte the upstream's (data key order included)."""
    recorded = entry.call_seq is not None
    text = OUTCOME_UNKNOWN_TEXT if recorded else NOT_STARTED_TEXT
    block = {"type": "tool-result", "toolCallId": call_id, "isError": True, "content": [{"type": "text", "text": text}]}
    message = {"id": f"interrupted-tool-result-{call_id}-{seq}", "role": "user",
               "source": {"kind": "tool", "callId": call_id}, "content": [block]}
    error = OUTCOME_UNKNOWN_ERROR if recorded else NOT_STARTED_ERROR
    data = snapshot(_numbered(turn=turn, step=entry.step, message=message, error=dict(error)))
    # TOOL_OUTCOME_UNKNOWN cites the tool/call it answers; a call never started has nothing to cite.
    sources = FrozenList([entry.call_seq]) if entry.call_seq is not None else None
    return Event(TOOL_RESULT, seq, time, data, APPEND, sources)


def repaired(events: Sequence[Event | Json]) -> list[Event]:
    """SESSION-CRASH-REPAIR.7: the log with its closers appended; a balanced log comes back unchanged."""
    log = _as_events(events)
    return [*log, *closers(log)]
