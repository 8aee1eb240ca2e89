"""The views of a stored log as they were at one point in its history, as text and JSON (`sessionspec show`, the demo).

"What did the model see at seq N?" is the question a person debugging an agent asks. The
answer is the surface folded from the log's first N+1 events, projected to messages; the
append-origin transcript and the complete log cut at the same point are the other two views.
`--diff` adds, for each replacement up to that point, what it shadowed and its sources, so a
compaction or a pruning can be read next to what it took the place of.

Every value printed comes from an untrusted log: text lines never carry a control character
or a lone surrogate (a message could otherwise rewrite the terminal, or fail to encode), and
no value is turned into text by recursion (a log may nest 100,000 levels deep). The line
formatters take plain stored records, so the streaming viewer (`cli/view.py`) and the
reference fold below (`point_in_time`, used by the demo and the tests) print the same lines.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sessionspec.catalog import USER_MESSAGE
from sessionspec.cli.words import plural
from sessionspec.envelope import Event
from sessionspec.jsontext import dumps
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
    """Fold the log up to and including seq `at` (the whole log when None), with the reference `plan`."""
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


# --- text that is safe to print ------------------------------------------------------------------

_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def printable(text: str) -> str:
    """`text` with every control character, bidi override and lone surrogate written as an escape."""
    if not _UNPRINTABLE.search(text):
        return text
    return _UNPRINTABLE.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100 else f"\\u{ord(m.group()):04x}",
                            text)


def short(value: object, width: int = 88) -> str:
    """A string as itself, anything else as compact JSON; at most `width` characters (never by recursion)."""
    text = value if isinstance(value, str) else dumps(value)
    return text if len(text) <= width else text[: width - 1] + "…"


def summary(message: Json, width: int = 88) -> str:
    """One line for a message: its text, tool calls as name(arguments), tool results by their text."""
    parts: list[str] = []
    content = message.get("content") if isinstance(message, dict) else None
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text" or kind == "reasoning":
            parts.append(short(block.get("text", ""), 4 * width))
        elif kind == "tool-call":
            parts.append(f"{short(block.get('name'), width)}({short(block.get('arguments', ''), 4 * width)})")
        elif kind == "tool-result":
            inner = block.get("content")
            parts.append("result: " + summary({"content": inner if isinstance(inner, list) else []}, width))
        else:
            parts.append(f"[{short(kind, width)}]")
    text = " ".join(" ".join(parts).split())
    return text if len(text) <= width else text[: width - 1] + "…"


# --- one line per stored record --------------------------------------------------------------------


def record_message(record: dict[str, Any]) -> Json:
    """The message a stored surface event carries (the user message is its data), or None."""
    data = record.get("data")
    if record.get("type") == USER_MESSAGE:
        return data
    return data.get("message") if isinstance(data, dict) else None


def op_text(op: object) -> str:
    if op is None:
        return ""
    if isinstance(op, dict):
        return f"replace {op.get('start')}..{op.get('end')}"
    return "append"


def log_line(record: dict[str, Any], style: Style) -> str:
    sources = record.get("sourceEventSeqs")
    named = "" if sources is None else f" sources={list(sources)}"
    return printable(f"{record['seq']:>6} {record['type']:<22} ") + style.dim(printable(op_text(record.get("surfaceOp")) + named))


def event_line(record: dict[str, Any], width: int = 88) -> str:
    return printable(f"{record['seq']:>6} {record['type']:<18} {summary(record_message(record), width)}")


def message_line(seq: int, message: Json, style: Style) -> str:
    role = message.get("role") if isinstance(message, dict) else None
    return style.dim(f"{seq:>6}") + printable(f" {short(role, 20):<9} {summary(message)}")


def heading(view: str, at: int, events: int, nodes: int, generation: int, style: Style) -> str:
    return style.bold(f"== {view} at seq {at}") + style.dim(f"  ({plural(events, 'event')}, {plural(nodes, 'node')}, generation {generation})")


def replacement_lines(seq: int, start: int, end: int, record: dict[str, Any], shadowed: Sequence[dict[str, Any]],
                      style: Style) -> list[str]:
    """What one replacement shadowed (each node, old) and what took their place (new)."""
    named = list(record.get("sourceEventSeqs") or ())
    out = [printable(f"seq {seq} {record['type']} replaced {start}..{end}: "
                     f"shadowed {[r['seq'] for r in shadowed]}, sources {named}")]
    out += [style.old(f"  - {event_line(old, 72).lstrip()}") for old in shadowed]
    out.append(style.new(f"  + {event_line(record, 72).lstrip()}"))
    return out


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


# --- a whole point in time (the demo, and `show --format json` through cli/view.py) --------------


def render_text(point: PointInTime, view: str, *, diff: bool, style: Style) -> list[str]:
    out = [heading(view, point.at, len(point.events), len(point.nodes), len(point.replacements), style)]
    if view == "log":
        out += [log_line(event.to_json(), style) for event in point.events]
    elif view == "surface":
        out += [event_line(point.events[node].to_json()) for node in point.nodes]
    elif view == "messages":
        out += [message_line(node, message, style) for node, message in point.messages()]
    else:
        out += [event_line(event.to_json()) for event in point.transcript()]
    if diff:
        out.append(style.bold(f"== replacements up to seq {point.at}"))
        if not point.replacements:
            out.append(style.dim("  (none)"))
        for r in point.replacements:
            out += replacement_lines(r.seq, r.start, r.end, point.events[r.seq].to_json(),
                                     [point.events[seq].to_json() for seq in r.shadowed_seqs], style)
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
