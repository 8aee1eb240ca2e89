"""A request as the line the runner writes: orjson where it carries the value unchanged, else the lossless writer.

The exchange writes every request the machine makes; most are plain JSON that orjson writes (and reads back
equal). A value orjson would change (a tuple, NaN, an integer key) cannot be carried and is refused; a value it
will not write (a lone surrogate, nesting past its bound) is written by `protocol.dumps`, or, for a reseed,
`fold` or `repair` carrying the oracle's events, joined from the texts those events were written as once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import orjson

from sessionspec.wire.protocol import dumps
from sessionspec.wire.snapshotline import text_of

_ORJSON_ERRORS: Final = (TypeError, RecursionError, orjson.JSONEncodeError, orjson.JSONDecodeError)


def plain_json(value: Any) -> bool:
    """Whether `value` is built only of exact JSON types: None, bool, int (any size), finite float, str, list, and dict
    with str keys. Such a value is carried by JSON text exactly, even where the lossless reader will refuse it (an
    unsafe integer, -0.0: the testee must refuse those lines, so they are sent)."""
    stack, seen = [value], set()
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is list or kind is dict:
            if id(item) in seen:
                continue
            seen.add(id(item))
            if kind is dict:
                if any(type(key) is not str for key in item):
                    return False
                stack.extend(item.values())
            else:
                stack.extend(item)
        elif kind is float:
            if item != item or item in (float("inf"), float("-inf")):
                return False
        elif item is not None and kind not in (bool, int, str):
            return False
    return True


def encodable(request: Any, known: Callable[[Any], bytes | None] | None = None) -> bytes | None:
    """The request as a line, or None when JSON text cannot carry it unchanged (tuples, NaN, integer keys).

    `known`: the lossless writer's text of a value already known to be plain JSON (the oracle's events, `ReferenceExecutor
    .known_text`), or None: a request orjson will not write that carries a list of such values (a reseed, `fold` or
    `repair` of a log holding a lone surrogate) is joined from their texts, as `dumps` would write it whole."""
    if isinstance(request, bytes):  # a raw line that is not UTF-8, as a trace holds it
        return request
    if isinstance(request, str):
        return request.encode("utf-8", "surrogatepass")
    written = False
    try:
        line = orjson.dumps(request)
        written = True
        if orjson.loads(line) == request:  # a tuple, NaN or subclass would come back otherwise
            return line
    except _ORJSON_ERRORS:
        pass
    if not written and known is not None and type(request) is dict:
        joined = _joined(request, known)
        if joined is not None:
            return joined
    if not plain_json(request):
        return None
    try:
        return dumps(request)  # integers beyond 64 bits, lone surrogates, deep nesting: the lossless writer
    except (TypeError, ValueError, RecursionError):
        return None


def _joined(request: dict[Any, Any], known: Callable[[Any], bytes | None]) -> bytes | None:
    """The lossless writer's line of `request` (`dumps` of a value orjson refuses), each of its lists whose items
    `known` writes joined from their texts; None when no list is (looked at before anything is written), or a value
    is not plain JSON. The writer's text of an object or array is its parts' texts joined (separators fixed, lone
    surrogates escaped one by one)."""
    lists = {key: texts for key, value in request.items()
             if type(value) is list and value and (texts := _texts(value, known)) is not None}
    if not lists:
        return None
    parts = []
    for key, value in request.items():
        if type(key) is not str:
            return None
        if key in lists:
            text = b"[" + b",".join(lists[key]) + b"]"
        elif plain_json(value):
            try:
                text = text_of(value)
            except (TypeError, ValueError, RecursionError):
                return None
        else:
            return None
        parts.append(text_of(key) + b":" + text)
    return b"{" + b",".join(parts) + b"}"


def _texts(items: list[Any], known: Callable[[Any], bytes | None]) -> list[bytes] | None:
    """The kept texts of `items`, or None as soon as one is not kept."""
    texts = []
    for item in items:
        text = known(item)
        if text is None:
            return None
        texts.append(text)
    return texts
