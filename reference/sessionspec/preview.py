"""A bounded preview of any value, for messages and reports: never recursion, never more than asked.

A value shown in an error message or a report came from a log, a request or a testee's answer, so
it may be nested a million levels deep or hold a 64 MiB string. `repr` and `json.dumps` recurse
over it (a RecursionError inside the error path) and copy all of it (memory a report must not
spend). Every message, text report, `--json` why-line and JUnit body that shows such a value
renders it here: JSON-like text (strings quoted, as JSON escapes them), at most `depth` levels
and `items` entries per container, cut at `limit` characters, walked with an explicit stack.

`shown` is what an error message uses to name a value: the value's own `repr` when that is short
(so a refusal of `"yes"` still says `got 'yes'`), this preview when it is not.
"""

from __future__ import annotations

import json
from itertools import islice
from typing import Final

LIMIT: Final = 120
DEPTH: Final = 4
ITEMS: Final = 8
KEY_ROOM: Final = 40
"""An object key in a preview is cut to this many characters (a key, too, can be a 64 MiB string)."""
INT_BITS: Final = 400
"""An integer wider than this (about 120 digits) is named by its size: Python refuses to write one of more than 4,300
digits at all (`sys.get_int_max_str_digits`), and a message has no use for even a few hundred."""


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
    if isinstance(value, int):
        return repr(value) if value.bit_length() <= INT_BITS else _big_int(value)
    if isinstance(value, float):
        return repr(value)
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
        elif isinstance(item, dict):
            piece = _open(stack, list(islice(item.items(), items + 1)), level, depth, items, "{", "}", keyed=True)
        elif isinstance(item, (list, tuple)):
            piece = _open(stack, list(item[: items + 1]), level, depth, items, "[", "]", keyed=False)
        else:
            piece = _scalar(item, max(limit - size, 8))
        out.append(piece)
        size += len(piece)
    text = "".join(out)
    return text if size <= limit and not stack else text[:limit] + "..."


def _big_int(value: int) -> str:
    """An integer named by its size: the only spelling that neither raises nor spends time on its digits."""
    return f"{'a negative' if value < 0 else 'an'} integer of {value.bit_length()} bits"


def _open(stack: list[tuple[object, int]], entries: list[object], level: int, depth: int, items: int, start: str,
          end: str, *, keyed: bool) -> str:
    """Push a container's entries (up to `items`) and its closing bracket; return its opening text."""
    if not entries:
        return start + end
    if level >= depth:
        return f"{start}...{end}"
    shown = entries[:items]
    pending: list[tuple[object, int]] = [(_Text(end), level)]
    if len(entries) > items:
        pending.append((_Text(", ..."), level))
    for position in range(len(shown) - 1, -1, -1):
        entry = shown[position]
        if keyed:
            assert isinstance(entry, tuple)
            key, child = entry
            pending.append((child, level + 1))
            name = key if isinstance(key, str) else _scalar(key, KEY_ROOM)
            pending.append((_Text(_scalar(name, KEY_ROOM) + ": "), level))
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


def shown(value: object, limit: int = LIMIT) -> str:
    """`value` as an error message names it: `repr(value)` when that is at most about `limit` characters, else a bounded
    preview: a string cut, with its length; an integer named by its size; a container through `preview`.

    Every message that quotes a value from a log, a request or a testee's answer goes through here. Such a value may
    be 100,000 levels deep (`repr` raises RecursionError, so a refusal turns into a traceback, or into `internal` on
    the wire instead of the rule's kind), a 10 MiB string (a 10 MB message, copied again by every report that carries
    it) or an integer of more than 4,300 digits (`repr` raises ValueError). Whether `repr` is short is decided by
    `_repr_size`, which walks at most about `limit` values without recursion; only a value it passes is given to
    `repr`, so ordinary messages keep their spelling. Never raises.
    """
    # The common cases first, and fast: a `check` formats its message whether or not the check fails.
    if value is None or type(value) is bool or (type(value) is str and len(value) <= limit):
        return repr(value)
    if type(value) is int and value.bit_length() <= INT_BITS:
        return repr(value)
    try:
        if _repr_size(value, limit) is not None:
            return repr(value)
    except Exception:  # an object of the caller's own inside, whose __repr__ fails: preview names its type
        pass
    try:
        return _large(value, limit)
    except Exception:  # an object of the caller's own whose __len__ or __getitem__ fails
        return f"<{type(value).__name__} object>"


def _repr_size(value: object, limit: int) -> int | None:
    """About how long `repr(value)` is (a string counted by its characters, before escapes), or None once that passes
    `limit`: an explicit stack, each value visited costs at least one character, so at most about `limit` values are
    visited (a cycle, too, ends as too long)."""
    size = 0
    stack = [value]
    while stack:
        item = stack.pop()
        if item is None or isinstance(item, (bool, float)):
            size += len(repr(item))
        elif isinstance(item, int):
            size += len(repr(item)) if item.bit_length() <= INT_BITS else limit + 1
        elif isinstance(item, (str, bytes, bytearray)):
            size += len(item) if len(item) <= limit else limit + 1  # escapes may make it longer, at most tenfold
        elif isinstance(item, dict):
            size += 2 + 4 * len(item) if len(item) <= limit else limit + 1  # {} and ": ", ", " an entry
            if size <= limit:
                stack.extend(item.keys())
                stack.extend(item.values())
        elif isinstance(item, (list, tuple, set, frozenset)):
            size += 2 + 2 * len(item) if len(item) <= limit else limit + 1  # [] and ", " an entry
            if size <= limit:
                stack.extend(item)
        else:
            size += len(_opaque(item, limit))
        if size > limit:
            return None
    return size


def _large(value: object, limit: int) -> str:
    """A value `repr` would write at more than `limit` characters, shown in about `limit`."""
    if isinstance(value, (str, bytes, bytearray)):
        head = value[:limit]
        text = repr(head)
        while len(text) > limit + 3 and len(head) > 1:  # escapes make a character up to ten: cut until it fits
            head = head[: len(head) // 2]
            text = repr(head)
        unit = "characters" if isinstance(value, str) else "bytes"
        return f"{text[:-1]}...{text[-1]} ({len(value)} {unit})"
    if isinstance(value, int) and not isinstance(value, bool):
        return repr(value) if value.bit_length() <= INT_BITS else _big_int(value)
    if isinstance(value, (list, tuple, set, frozenset, dict)):
        kind = "an object" if isinstance(value, dict) else "an array" if isinstance(value, (list, tuple)) else "a set"
        entries = list(islice(value, ITEMS + 1)) if isinstance(value, (set, frozenset)) else value
        count = f"{len(value)} {'entry' if len(value) == 1 else 'entries'}"
        return f"{preview(entries, limit)} ({kind} of {count}, too large to show in full)"
    return _opaque(value, limit)


def _opaque(value: object, limit: int) -> str:
    """A value of no JSON-like type (the caller's own object): its `repr` cut to `limit`, or its type if that fails."""
    try:
        text = repr(value)
    except Exception:
        return f"<{type(value).__name__} object>"
    return text if len(text) <= limit else text[:limit] + "..."


def clipped(text: str, limit: int = 2000) -> str:
    """Text that may hold a value we did not make (an exception's message, a line read), cut to `limit` characters with
    its length noted: bounded like `shown`, but not quoted, for text that is already words."""
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def as_text(value: object, limit: int = LIMIT) -> str:
    """`str(value)`, bounded: a string as it is (cut by `clipped`), anything else as `shown` writes it. For a word a
    message names without quotes (a turn number, a kind, a call id) that came from a log, a request or an answer."""
    return clipped(value, limit) if isinstance(value, str) else shown(value, limit)
