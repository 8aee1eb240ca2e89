"""A bounded preview of any value, for messages and reports: never recursion, never more than asked.

A value shown in an error message or a report came from a log, a request or a testee's answer, so
it may be nested a million levels deep or hold a 64 MiB string. `repr` and `json.dumps` recurse
over it (a RecursionError inside the error path) and copy all of it (memory a report must not
spend). Every message, text report, `--json` why-line and JUnit body that shows such a value
renders it here: JSON-like text (strings quoted, as JSON escapes them), at most `depth` levels
and `items` entries per container, cut at `limit` characters, walked with an explicit stack.
"""

from __future__ import annotations

import json
from typing import Final

LIMIT: Final = 120
DEPTH: Final = 4
ITEMS: Final = 8


def _quoted(text: str) -> str:
    """A JSON string literal, non-ASCII kept readable and lone surrogates escaped (so the text is always valid UTF-8)."""
    return json.dumps(text, ensure_ascii=False).encode("utf-8", "backslashreplace").decode("utf-8")


class _Text(str):
    """A piece of punctuation on the stack, written as it is."""

    __slots__ = ()


def _scalar(value: object, room: int) -> str:
    if value is None or isinstance(value, bool):
        return "null" if value is None else "true" if value else "false"
    if isinstance(value, str):
        shown = value if len(value) <= room else value[:room]
        text = _quoted(shown)
        return text if len(value) <= room else text[:-1] + '..."'
    if isinstance(value, (int, float)):
        text = repr(value)
        return text if len(text) <= max(room, 24) else text[:24] + "..."
    return f"<{type(value).__name__}>"


def preview(value: object, limit: int = LIMIT, *, depth: int = DEPTH, items: int = ITEMS) -> str:
    """`value` as bounded JSON-like text: at most `limit` characters (then "..."), `depth` levels, `items` entries."""
    out: list[str] = []
    size = 0
    stack: list[tuple[object, int]] = [(value, 0)]
    while stack and size <= limit:
        item, level = stack.pop()
        if isinstance(item, _Text):
            piece = str(item)
        elif isinstance(item, dict) and not isinstance(item, _Text):
            piece = _open(stack, list(item.items()), level, depth, items, "{", "}", keyed=True)
        elif isinstance(item, (list, tuple)):
            piece = _open(stack, list(item[: items + 1]) if len(item) > items else list(item), level, depth, items,
                          "[", "]", keyed=False, more=len(item) > items)
        else:
            piece = _scalar(item, max(limit - size, 8))
        out.append(piece)
        size += len(piece)
    text = "".join(out)
    return text if size <= limit and not stack else text[:limit] + "..."


def _open(stack: list[tuple[object, int]], entries: list[object], level: int, depth: int, items: int, start: str,
          end: str, *, keyed: bool, more: bool = False) -> str:
    """Push a container's entries (up to `items`) and its closing bracket; return its opening text."""
    if not entries:
        return start + end
    if level >= depth:
        return f"{start}...{end}"
    shown = entries[:items]
    pending: list[tuple[object, int]] = [(_Text(end), level)]
    if more or len(entries) > items:
        pending.append((_Text(", ..."), level))
    for position in range(len(shown) - 1, -1, -1):
        entry = shown[position]
        if keyed:
            assert isinstance(entry, tuple)
            key, child = entry
            pending.append((child, level + 1))
            pending.append((_Text(_quoted(str(key)) + ": "), level))
        else:
            pending.append((entry, level + 1))
        if position:
            pending.append((_Text(", "), level))
    stack.extend(pending)
    return start


SHOWN_DEPTH: Final = 64
SHOWN_NODES: Final = 20_000


def bounded(value: object, *, depth: int = SHOWN_DEPTH, nodes: int = SHOWN_NODES, limit: int = 2000) -> object:
    """`value` itself when a report can hold it (at most `depth` levels and `nodes` values, checked without
    recursion), else its `preview` as a string: a report's JSON keeps ordinary values as they are and never
    recurses into, or copies, what a testee sent to exhaust it."""
    stack: list[tuple[object, int]] = [(value, 1)]
    seen = 0
    while stack:
        item, level = stack.pop()
        seen += 1
        if seen > nodes or level > depth or (isinstance(item, str) and len(item) > 100 * limit):
            return "(too large to show) " + preview(value, limit)
        if isinstance(item, dict):
            stack.extend((child, level + 1) for child in item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend((child, level + 1) for child in item)
    return value
