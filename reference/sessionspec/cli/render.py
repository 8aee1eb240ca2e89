"""The views of a stored log as they were at one point in its history (`sessionspec show`).

"What did the model see at seq N?" is the question a person debugging an agent asks. The
answer is the surface folded from the log's first N+1 events, projected to messages; the
append-origin transcript and the complete log cut at the same point are the other two views.
`--diff` adds, for each replacement up to that point, what it shadowed and its sources, so a
compaction or a pruning can be read next to what it took the place of.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sessionspec.envelope import Event
from sessionspec.jsonvalue import Json, thaw
from sessionspec.surface import Replacement, ReplacePlan, apply, plan
from sessionspec.views import is_append_origin, project

VIEWS = ("log", "surface", "messages", "transcript")


@dataclass(frozen=True)
class PointInTime:
    """A log cut after seq `at`: its events, the surface then, and the replacements that built it."""

    events: Sequence[Event]
    nodes: tuple[int, ...]
    replacements: tuple[Replacement, ...]

    @property
    def at(self) -> int:
        return len(self.events) - 1

    def messages(self) -> list[tuple[int, Json]]:
        """(node seq, message) for every node that projects to a message: what the next request sends."""
        out = []
        for node in self.nodes:
            message = project(self.events[node])
            if message is not None:
                out.append((node, message))
        return out

    def transcript(self) -> list[Event]:
        return [event for event in self.events if is_append_origin(event)]


def point_in_time(events: Iterable[Event], at: int | None = None) -> PointInTime:
    """Fold the log up to and including seq `at` (the whole log when None).

    Incremental: each transition is planned against the log as read so far, which is what
    `surface.fold` does, without re-slicing the log for every event.
    """
    log: list[Event] = []
    nodes: list[int] = []
    replacements: list[Replacement] = []
    for event in events:
        if at is not None and event.seq > at:
            break
        step = plan(nodes, log, event)
        if isinstance(step, ReplacePlan):
            op: Any = event.surface_op
            replacements.append(Replacement(event.seq, op.start, op.end, step.shadowed))
        nodes = apply(nodes, step)
        log.append(event)
    return PointInTime(log, tuple(nodes), tuple(replacements))


# --- rendering -----------------------------------------------------------------------------------


def summary(message: Json, width: int = 88) -> str:
    """One line for a message: its text, tool calls as name(arguments), tool results by their text."""
    parts: list[str] = []
    content = message.get("content") if isinstance(message, dict) else None
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text" or kind == "reasoning":
            parts.append(str(block.get("text", "")))
        elif kind == "tool-call":
            parts.append(f"{block.get('name')}({block.get('arguments', '')})")
        elif kind == "tool-result":
            parts.append("result: " + summary({"content": block.get("content")}, width))
        else:
            parts.append(f"[{kind}]")
    text = " ".join(" ".join(parts).split())
    return text if len(text) <= width else text[: width - 1] + "…"


def event_message(event: Event) -> Json:
    data: Any = event.data
    return data if event.type == "user/message" else data.get("message") if isinstance(data, dict) else None


def _op(event: Event) -> str:
    op = event.surface_op
    if op is None:
        return ""
    return "append" if isinstance(op, str) else f"replace {op.start}..{op.end}"


class Style:
    """ANSI colour when writing to a terminal; plain text otherwise."""

    def __init__(self, colour: bool) -> None:
        self.colour = colour

    def _wrap(self, code: str, text: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.colour else text

    def dim(self, text: str) -> str:
        return self._wrap("2", text)

    def bold(self, text: str) -> str:
        return self._wrap("1", text)

    def old(self, text: str) -> str:
        return self._wrap("31", text)

    def new(self, text: str) -> str:
        return self._wrap("32", text)


def render_text(point: PointInTime, view: str, *, diff: bool, style: Style) -> list[str]:
    out = [style.bold(f"== {view} at seq {point.at}") + style.dim(
        f"  ({len(point.events)} events, {len(point.nodes)} nodes, generation {len(point.replacements)})")]
    if view == "log":
        for event in point.events:
            sources = "" if event.source_event_seqs is None else f" sources={list(event.source_event_seqs)}"
            out.append(f"{event.seq:>6} {event.type:<22} {style.dim(_op(event) + sources)}")
    elif view == "surface":
        for node in point.nodes:
            event = point.events[node]
            message = event_message(event)
            out.append(f"{node:>6} {event.type:<18} {summary(message)}")
    elif view == "messages":
        for node, message in point.messages():
            out.append(f"{style.dim(f'{node:>6}')} {message.get('role')!s:<9} {summary(message)}")
    else:
        for event in point.transcript():
            out.append(f"{event.seq:>6} {event.type:<18} {summary(event_message(event))}")
    if diff:
        out.append(style.bold(f"== replacements up to seq {point.at}"))
        if not point.replacements:
            out.append(style.dim("  (none)"))
        for replacement in point.replacements:
            event = point.events[replacement.seq]
            named = list(event.source_event_seqs or ())
            out.append(f"seq {replacement.seq} {event.type} replaced {replacement.start}..{replacement.end}: "
                       f"shadowed {list(replacement.shadowed_seqs)}, sources {named}")
            for seq in replacement.shadowed_seqs:
                shadowed = point.events[seq]
                out.append(style.old(f"  - {seq:>5} {shadowed.type:<18} {summary(event_message(shadowed), 72)}"))
            out.append(style.new(f"  + {replacement.seq:>5} {event.type:<18} {summary(event_message(event), 72)}"))
    return out


def render_json(point: PointInTime, view: str, *, diff: bool) -> dict[str, Json]:
    items: list[Json]
    if view == "log":
        items = [event.to_json() for event in point.events]
    elif view == "surface":
        items = [point.events[node].to_json() for node in point.nodes]
    elif view == "messages":
        items = [{"seq": node, "message": thaw(message)} for node, message in point.messages()]
    else:
        items = [event.to_json() for event in point.transcript()]
    out: dict[str, Json] = {"view": view, "at": point.at, "nodes": list(point.nodes),
                            "replaceGeneration": len(point.replacements), "items": items}
    if diff:
        out["replacements"] = [
            {**r.to_json(), "sources": list(point.events[r.seq].source_event_seqs or ()),
             "shadowed": [point.events[seq].to_json() for seq in r.shadowed_seqs],
             "replacement": point.events[r.seq].to_json()}
            for r in point.replacements
        ]
    return out
