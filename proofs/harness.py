"""Shared builders for the obligations: small ints in, valid session values out.

CrossHair explores ints and short lists of ints well and rich JSON badly, so each obligation
takes ints and decodes them here into events the session accepts. The decoders are total: any
int list decodes to some valid log, so the solver never wastes paths on inputs we would reject.
"""

from __future__ import annotations

from collections.abc import Callable

from sessionspec.envelope import APPEND, Event, Replace
from sessionspec.errors import SpecViolation
from sessionspec.jsonvalue import FrozenList, Json, snapshot

USER = snapshot({"id": "u", "role": "user", "source": {"kind": "user"}, "content": [{"type": "text", "text": "hi"}]})
SUMMARY = snapshot({"id": "s", "role": "user", "source": {"kind": "plugin"}, "content": [{"type": "text", "text": "sum"}]})
LOG_ONLY = snapshot({"turn": 1})


def replace_event(seq: int, nodes: list[int], first: int, last: int, sources: list[int] | None = None) -> Event:
    """A summary that replaces positions first..last of `nodes`, naming `sources` (default: exactly the shadowed)."""
    named = nodes[first : last + 1] if sources is None else sources
    return Event("user/message", seq, 0, SUMMARY, Replace(nodes[first], nodes[last]), FrozenList(named))


def decode_log(ops: list[int]) -> list[Event]:
    """A valid log from ints: op % 3 is 0 append a user message, 1 a log-only event, 2 a replace.

    A replace picks its range from the rest of the op (op // 3) over the surface as it is then;
    on an empty surface it becomes a log-only event. Provenance is always exactly the shadowed range.
    """
    events: list[Event] = []
    nodes: list[int] = []
    for op in ops:
        seq = len(events)
        kind = op % 3
        if kind == 0:
            events.append(Event("user/message", seq, 0, USER, APPEND))
            nodes.append(seq)
        elif kind == 1 or not nodes:
            events.append(Event("turn/start", seq, 0, LOG_ONLY))
        else:
            rest = op // 3
            first = rest % len(nodes)
            last = first + (rest // len(nodes)) % (len(nodes) - first)
            events.append(replace_event(seq, nodes, first, last))
            nodes = [*nodes[:first], seq, *nodes[last + 1 :]]
    return events


def tool_result_data(outer: dict[str, int], block_extra: dict[str, int], inner: int) -> Json:
    """tool/result data with extra top-level fields `outer`, extra block fields and inner text `inner`."""
    block: dict[str, Json] = {"type": "tool-result", "toolCallId": "c1", "content": [{"type": "text", "text": str(inner)}]}
    block.update(block_extra)
    message = {"id": "r", "role": "user", "source": {"kind": "tool", "callId": "c1"}, "content": [block]}
    data: dict[str, Json] = {"turn": 1, "step": 1, "message": message}
    data.update(outer)
    return snapshot(data)


RESERVED_OUTER = frozenset({"turn", "step", "message"})
RESERVED_BLOCK = frozenset({"type", "toolCallId", "content"})


# --- for the fast-path obligations ----------------------------------------------------------------

ABSENT = object()
"""A picked field that is left out of its object."""


def pick(n: int, options: tuple[object, ...]) -> object:
    """The option `n` names (mod their number): the solver branches over a field's values by one int."""
    return options[n % len(options)]


def accepts(call: Callable[[], object]) -> bool:
    """Whether the reference accepts: `call` returns rather than raise a SpecViolation."""
    try:
        call()
    except SpecViolation:
        return False
    return True


def image(value: object) -> object:
    """A comparable image of a result: containers and events spelled out with their exact types."""
    if isinstance(value, Event):
        return ("Event", value.type, value.seq, value.time, image(value.data), value.surface_op,
                image(value.source_event_seqs), value.ignorable)
    if isinstance(value, dict):
        return (type(value).__name__, [(key, image(child)) for key, child in value.items()])
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, [image(child) for child in value])
    return (type(value).__name__, value)


def outcome(call: Callable[[], object]) -> tuple[str, object]:
    """("ok", the image of what `call` returned) or ("rejected", the rule of its SpecViolation)."""
    try:
        return "ok", image(call())
    except SpecViolation as violation:
        return "rejected", violation.rule
