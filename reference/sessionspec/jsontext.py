"""Reading and writing JSON text losslessly (SESSION-LOSSLESS-TEXT).

A stored log is read by readers in several languages. Text that two readers could read as two
different values (NaN, 1e400, -0, 2**60, a key given twice, bytes that are not UTF-8) is
rejected on read, never repaired: a repaired value is a value nobody wrote. Writing produces
compact UTF-8 text with lone surrogates escaped (as JavaScript's JSON.stringify writes them), so
the bytes are valid UTF-8 and the strings survive exactly.

Both directions fall back to an iterative walk for values nested deeper than the C codec's
recursion limit (DESIGN decision 4: no depth limit, tested at 100,000 levels).
"""

from __future__ import annotations

import gc
import json
import json.decoder
import math
import re
from typing import Any, NoReturn

from sessionspec.errors import Kind, SpecViolation
from sessionspec.jsonvalue import MAX_SAFE_INTEGER, Json
from sessionspec.preview import shown
from sessionspec.rules import define

scanstring: Any = getattr(json.decoder, "scanstring")  # noqa: B009 - untyped in typeshed

UTF8 = define("SESSION-LOSSLESS-TEXT.1", Kind.JSON, "stored text is valid UTF-8")
SYNTAX = define("SESSION-LOSSLESS-TEXT.2", Kind.JSON, "stored text is one JSON value (RFC 8259)")
NON_FINITE = define("SESSION-LOSSLESS-TEXT.3", Kind.JSON, "NaN, Infinity and numbers that overflow to them are refused")
UNSAFE_INT = define("SESSION-LOSSLESS-TEXT.4", Kind.JSON, "integers outside +-(2**53-1) are refused")
NEGATIVE_ZERO = define("SESSION-LOSSLESS-TEXT.5", Kind.JSON, "-0 in any spelling is refused")
DUPLICATE_KEY = define("SESSION-LOSSLESS-TEXT.6", Kind.JSON, "an object names each key once")

MAX_INT_DIGITS = 16
"""2**53-1 has 16 digits and JSON allows no leading zeros, so a longer integer text is out of range by its length."""

_SURROGATE = re.compile("[\ud800-\udfff]")


def _refuse(rule: str, message: str) -> NoReturn:
    raise SpecViolation(rule, Kind.JSON, message)


def _constant(name: str) -> NoReturn:
    # .3 NaN and Infinity are not JSON; a reader that accepts them reads a value others cannot.
    _refuse(NON_FINITE, f"{name} is not a JSON number")


def _int(text: str) -> int:
    # .5 "-0" is read as 0 by some readers and as -0 by JavaScript.
    if text == "-0":
        _refuse(NEGATIVE_ZERO, "negative zero (-0)")
    digits = len(text) - text.startswith("-")
    # .4 by its length first: converting a long digit string costs time quadratic in its length.
    if digits > MAX_INT_DIGITS:
        _refuse(UNSAFE_INT, f"integer of {digits} digits is outside +-(2**53-1) (at most {MAX_INT_DIGITS} digits)")
    value = int(text)
    # .4 Beyond 2**53-1 a JavaScript reader rounds the integer to another one.
    if not -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
        _refuse(UNSAFE_INT, f"integer {text[:40]} is outside +-(2**53-1)")
    return value


def _float(text: str) -> float:
    value = float(text)
    # .3 1e400 overflows to Infinity.
    if not math.isfinite(value):
        _refuse(NON_FINITE, f"number {text[:40]} overflows to infinity")
    # .5 -0.0, -0e5 and -1e-400 all read as negative zero.
    if value == 0.0 and math.copysign(1.0, value) < 0:
        _refuse(NEGATIVE_ZERO, f"negative zero ({text[:40]})")
    return value


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        duplicate = next(key for key, _ in pairs if key in seen or seen.add(key))  # type: ignore[func-returns-value]
        # .6 Readers disagree on which of two values for one key wins.
        _refuse(DUPLICATE_KEY, f"object key {shown(duplicate)} appears more than once")
    return out


def decode_utf8(raw: bytes) -> str:
    """SESSION-LOSSLESS-TEXT.1: strict UTF-8 (surrogate code points encoded as bytes are invalid too)."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as error:
        _refuse(UTF8, f"invalid UTF-8 at byte {error.start}")


def parse(raw: bytes | str) -> Json:
    """One JSON value from text, losslessly, or SpecViolation naming the SESSION-LOSSLESS-TEXT rule."""
    text = decode_utf8(raw) if isinstance(raw, bytes) else raw
    try:
        return json.loads(text, object_pairs_hook=_object, parse_int=_int, parse_float=_float, parse_constant=_constant)
    except RecursionError:
        return _parse_iterative(text)
    except json.JSONDecodeError as error:
        _refuse(SYNTAX, f"not valid JSON: {error.msg} at character {error.pos}")


_WS = re.compile(r"[ \t\n\r]*")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?")
_LITERALS = {"true": True, "false": False, "null": None}


def _parse_iterative(text: str) -> Json:
    """The same grammar and checks as `parse`, with an explicit stack instead of recursion.

    The cycle collector is paused meanwhile: parsed JSON holds no cycles, and a deep value is
    hundreds of thousands of new containers, each of which could trigger a collection that walks
    every object the process holds (seconds, in a large process).
    """
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _parse_stack(text)
    finally:
        if collecting:
            gc.enable()


def _parse_stack(text: str) -> Json:
    pos = _WS.match(text, 0).end()  # type: ignore[union-attr]
    stack: list[tuple[Any, str | None]] = []  # (container being built, pending key for objects)
    root: Any = None
    while True:
        if pos >= len(text):
            _refuse(SYNTAX, f"not valid JSON: unexpected end at character {pos}")
        char = text[pos]
        value: Any
        opened = False
        if char == "{" or char == "[":
            value = {} if char == "{" else []
            opened = True
            pos += 1
        elif char == '"':
            try:
                value, pos = scanstring(text, pos + 1, True)
            except json.JSONDecodeError as error:
                _refuse(SYNTAX, f"not valid JSON: {error.msg} at character {error.pos}")
        else:
            match = _NUMBER.match(text, pos)
            if match:
                token = match.group()
                value = _float(token) if match.group(1) or match.group(2) else _int(token)
                pos = match.end()
            else:
                for word in ("true", "false", "null", "NaN", "Infinity", "-Infinity"):
                    if text.startswith(word, pos):
                        if word not in _LITERALS:
                            _constant(word)
                        value = _LITERALS[word]
                        pos += len(word)
                        break
                else:
                    _refuse(SYNTAX, f"not valid JSON: unexpected character {char!r} at character {pos}")
        # attach the value to its parent
        if stack:
            parent, key = stack[-1]
            if isinstance(parent, dict):
                assert key is not None
                if key in parent:
                    _refuse(DUPLICATE_KEY, f"object key {shown(key)} appears more than once")
                parent[key] = value
            else:
                parent.append(value)
        else:
            root = value
        if opened:
            stack.append((value, None))
            pos = _WS.match(text, pos).end()  # type: ignore[union-attr]
            closer = "}" if isinstance(value, dict) else "]"
            if pos < len(text) and text[pos] == closer:
                stack.pop()
                pos += 1
            else:
                if isinstance(value, dict):
                    pos = _read_key(text, pos, stack)
                continue
        # after a complete value: close containers until a ',' asks for the next value
        while stack:
            pos = _WS.match(text, pos).end()  # type: ignore[union-attr]
            container, _ = stack[-1]
            closer = "}" if isinstance(container, dict) else "]"
            if pos < len(text) and text[pos] == closer:
                stack.pop()
                pos += 1
                continue
            if pos < len(text) and text[pos] == ",":
                pos = _WS.match(text, pos + 1).end()  # type: ignore[union-attr]
                if isinstance(container, dict):
                    pos = _read_key(text, pos, stack)
                break
            _refuse(SYNTAX, f"not valid JSON: expected ',' or {closer!r} at character {pos}")
        if not stack:
            break
    pos = _WS.match(text, pos).end()  # type: ignore[union-attr]
    if pos != len(text):
        _refuse(SYNTAX, f"not valid JSON: extra data at character {pos}")
    return root


def _read_key(text: str, pos: int, stack: list[tuple[Any, str | None]]) -> int:
    """Read `"key" :` for the object on top of the stack; returns the position of its value."""
    if pos >= len(text) or text[pos] != '"':
        _refuse(SYNTAX, f"not valid JSON: expected a key at character {pos}")
    try:
        key, pos = scanstring(text, pos + 1, True)
    except json.JSONDecodeError as error:
        _refuse(SYNTAX, f"not valid JSON: {error.msg} at character {error.pos}")
    pos = _WS.match(text, pos).end()  # type: ignore[union-attr]
    if pos >= len(text) or text[pos] != ":":
        _refuse(SYNTAX, f"not valid JSON: expected ':' at character {pos}")
    stack[-1] = (stack[-1][0], key)
    return _WS.match(text, pos + 1).end()  # type: ignore[union-attr]


def _escape_surrogates(text: str) -> str:
    return _SURROGATE.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


def dumps(value: Json) -> str:
    """Compact JSON text: raw UTF-8 characters, lone surrogates escaped, no NaN."""
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except RecursionError:
        text = _dumps_iterative(value)
    # An ASCII text (known in O(1)) holds no surrogate: a 60 MiB value is not searched in vain.
    return text if text.isascii() or not _SURROGATE.search(text) else _escape_surrogates(text)


def _scalar(value: Json) -> str:
    return json.dumps(value, ensure_ascii=False, allow_nan=False)


def _dumps_iterative(value: Json) -> str:
    parts: list[str] = []
    stack: list[tuple[Any, Any, bool]] = [(value, None, True)]  # (container or scalar, iterator, first)
    while stack:
        node, items, first = stack.pop()
        if items is None:
            if isinstance(node, dict):
                parts.append("{")
                stack.append((node, iter(node.items()), True))
            elif isinstance(node, list):
                parts.append("[")
                stack.append((node, iter(node), True))
            else:
                parts.append(_scalar(node))
            continue
        item: Any = next(items, _END)
        if item is _END:
            parts.append("}" if isinstance(node, dict) else "]")
            continue
        if not first:
            parts.append(",")
        stack.append((node, items, False))
        if isinstance(node, dict):
            key, child = item
            parts.append(_scalar(key) + ":")
            stack.append((child, None, True))
        else:
            stack.append((item, None, True))
    return "".join(parts)


_END = object()
