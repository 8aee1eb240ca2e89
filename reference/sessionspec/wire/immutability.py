"""Mutation attempts on what a session returns (DESIGN decision 5, SESSION-IMMUTABILITY.1-.4).

Only an implementation that hands out Python objects can be asked this, so the attempts run in
process (the `x-mutate` op of the x-inprocess extension). Every attempt must raise `TypeError`
and change nothing; a store that freezes only the top level of `data`, or only events and not
messages, is caught by `everything`, which tries every container reachable from every view.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Final

from sessionspec.preview import clipped

FORGED: Final = "forged"
MAX_CONTAINERS: Final = 4096
"""How many containers `everything` tries per call: enough for the machine's logs, bounded for a large one."""


def _append_to_events(session: Any) -> None:
    session.events.append(None)


MUTATIONS: dict[str, Callable[[Any], None]] = {
    "events.append": _append_to_events,
    "events[0]=": lambda s: s.events.__setitem__(0, None),
    "event.type=": lambda s: setattr(s.events[-1], "type", FORGED),
    "event.seq=": lambda s: setattr(s.events[-1], "seq", 10**6),
    "event.data[k]=": lambda s: _mutate(s.events[-1].data),
    "event.sourceEventSeqs.append": lambda s: s.events[-1].source_event_seqs.append(0),
    "messages.append": lambda s: s.derive_messages().append({}),
    "message[k]=": lambda s: s.derive_messages()[-1].__setitem__("id", FORGED),
    "message.content.append": lambda s: s.derive_messages()[-1]["content"].append({"type": "text", "text": "x"}),
    "surface.nodes.append": lambda s: s.surface.nodes.append(0),
    "surface.nodes.reverse": lambda s: s.surface.nodes.reverse(),
    "transcript.append": lambda s: s.transcript().append(None),
    "header[k]=": lambda s: s.header.__setitem__("id", FORGED),
}
"""One mutation each of the returned kinds of value; `everything` reaches every level of all of them."""


def _mutate(value: Any) -> None:
    if isinstance(value, dict):
        value[FORGED] = True
    elif isinstance(value, list):
        value.append(FORGED)
    else:
        raise LookupError("a scalar has nothing to mutate")


def containers(value: Any, path: str) -> Iterator[tuple[str, Any]]:
    """Every dict and list reachable from `value`, with its path; iterative, so any depth is walked."""
    stack = [(path, value)]
    while stack:
        where, node = stack.pop()
        if isinstance(node, dict):
            yield where, node
            stack.extend((f"{where}.{clipped(str(key), 40)}", child) for key, child in node.items())  # a key may be 64 MiB
        elif isinstance(node, list):
            yield where, node
            stack.extend((f"{where}[{index}]", child) for index, child in enumerate(node))


def _returned(session: Any) -> Iterator[tuple[str, Any]]:
    """Every value a session hands out, by the name a caller reads it under."""
    events = session.events
    yield "events", events
    for index, event in enumerate(events):
        yield f"events[{index}].data", event.data
        if event.source_event_seqs is not None:
            yield f"events[{index}].sourceEventSeqs", event.source_event_seqs
    yield "messages", session.derive_messages()
    yield "surface.nodes", session.surface.nodes
    yield "transcript", session.transcript()
    yield "header", session.header


def mutable_path(session: Any) -> str | None:
    """The first returned container that took a mutation without raising TypeError, or None if all refused."""
    tried = 0
    for name, value in _returned(session):
        for path, container in containers(value, name):
            tried += 1
            if tried > MAX_CONTAINERS:
                return None
            try:
                _mutate(container)
            except TypeError:
                continue
            return path
    return None


def attempt_mutation(session: Any, target: str) -> str | None:
    """The exception type name the attempt raised, "n/a" when there was nothing to attempt it on, else None.

    `everything` answers "TypeError" when every container refused, else `mutable: PATH`.
    """
    if target == "everything":
        path = mutable_path(session)
        return "TypeError" if path is None else f"mutable: {path}"
    mutation = MUTATIONS.get(target)
    if mutation is None:
        return "n/a"
    try:
        mutation(session)
    except (IndexError, LookupError, AttributeError) as error:
        if isinstance(error, AttributeError) and "immutable" in str(error):
            return type(error).__name__
        return "n/a"
    except Exception as error:
        return type(error).__name__
    return None


def mutate_everywhere(value: Any) -> None:
    """The caller changing every level of its own request after the append (SESSION-IMMUTABILITY.3)."""
    for _, container in list(containers(value, "$")):
        _mutate(container)
