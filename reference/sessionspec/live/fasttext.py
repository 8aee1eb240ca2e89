"""The one lossless line reader: JSON text at C speed where it is canonical, else the reference reader.

`jsontext.parse` is the reader chapter 01 defines (SESSION-LOSSLESS-TEXT): it refuses text that
two readers could read as two values, and names the rule. Every line that crosses a boundary is
read through `read_line` here: a conformance request line (`wire`), a JSONL or zstd record, a
SQLite value (`storage`), and a line `sessionspec check` reads alone. Most of those lines were
written by a canonical writer (orjson, JSON.stringify), so they are read by orjson and accepted
only when orjson writes the value it read back as the very same bytes: then no duplicate key,
no `-0`, no `1E5`, no integer beyond 2**53-1 and no invalid UTF-8 can hide in the line, and the
value is exactly what `parse` would return. Anything else goes to `parse`, which decides and
names the rule it breaks.

`parse_block` is the same judgement for a block of lines at once (a JSONL log read in blocks
by `storage.jsonlread`): one orjson parse and one dump for the whole block.

Both are declared fast forms (`live.fastpath.implies`), held to `parse` by tests/test_fastpaths.py.
"""

from __future__ import annotations

from operator import itemgetter
from typing import Any, Final

import orjson

from sessionspec.jsontext import parse
from sessionspec.jsonvalue import Json
from sessionspec.live.fastpath import implies, rule_ids

SLOW: Final = object()
"""What `fast_parse` returns for a line only the lossless reader may decide."""
FAST_BYTES: Final = 1 << 20
"""Longer text goes to the reference reader: orjson's error for text it refuses costs about twelve times the
text in memory (measured: 120 MiB for 10 MiB of spaces), and a record may be 64 MiB (SESSION-STORAGE-RECORD.1),
so a hostile record would cost the fast path more memory than the bound allows; the reference reader's costs
about the text itself. Lines this long are rare enough that their speed does not matter."""
_LOADS = orjson.loads
_DUMPS = orjson.dumps
_STRICT: Final = orjson.OPT_STRICT_INTEGER
_DECODE_ERROR = orjson.JSONDecodeError
_ENCODE_ERROR = orjson.JSONEncodeError


@implies(reference=parse, rules=rule_ids("SESSION-LOSSLESS-TEXT", 1, 6))
def fast_parse(raw: bytes) -> Any:
    """The value of one line (without its newline), or SLOW when only the lossless reader may decide."""
    if len(raw) > FAST_BYTES:
        return SLOW
    try:
        value = _LOADS(raw)
        again = _DUMPS(value, option=_STRICT)
    except (_DECODE_ERROR, _ENCODE_ERROR):
        return SLOW
    # -0.0 is the one value whose canonical dump reads back as itself; the reference refuses it (.5).
    if again != raw or b"-0.0" in raw:
        return SLOW
    return value


def read_line(raw: bytes | str) -> Json:
    """One line's value, read losslessly: at C speed when the line is canonical, else by `jsontext.parse`.

    Text already decoded (a SQLite TEXT value) is read as its UTF-8 bytes, which `parse` reads as the same text.
    """
    if isinstance(raw, str):
        try:
            raw = raw.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate: only the reference reader may decide
            return parse(raw)
    value = fast_parse(raw)
    return parse(raw) if value is SLOW else value


# --- a block of lines at once -------------------------------------------------------------------

_KEY: Final = "~" * 24
_OPEN: Final = b'[{"' + _KEY.encode() + b'":'
_MARK: Final = b'},{"' + _KEY.encode() + b'":'
_CLOSE: Final = b"}]"
_UNWRAP: Final = itemgetter(_KEY)
_DOTS_LOOKED_AT: Final = 64


def _negative_zero(part: bytes) -> bool:
    """Whether `-0.0` occurs in `part`: by its dot, found with memchr, while dots are few, then by search.

    A substring search for a short needle of common characters is slow (about 0.6 ns a byte);
    finding the dots is memchr speed, and most blocks hold few dots.
    """
    find = part.find
    at = find(b".")
    for _ in range(_DOTS_LOOKED_AT):
        if at < 0:
            return False
        if at >= 2 and part.startswith(b"-0.0", at - 2):
            return True
        at = find(b".", at + 1)
    return at >= 0 and part.find(b"-0.0", max(at - 2, 0)) >= 0


@implies(reference=parse, rules=rule_ids("SESSION-LOSSLESS-TEXT", 1, 6))
def parse_block(part: bytes) -> list[Any] | None:
    """The values of a block of complete lines (without the last newline) if every line is canonical JSON, else None.

    One orjson parse and one dump for the whole block (a split and a parse per line cost a
    third more). Each line is wrapped as `{"KEY":line}` and the wraps joined by commas, one
    array text T, by a single `replace` of the newlines with the separator M = `},{"KEY":`.
    The block is accepted only if the canonical dump of the parsed array is T itself, M occurs
    in no line, the array has one element per line, and each element is a dict of the one key
    KEY. Then each line is the canonical dump of its element's value: between elements the dump
    has M (n - 1 times); T holds M exactly n - 1 times (M has no border, so no occurrence
    straddles a line and a separator), so the elements' boundaries are the lines' boundaries,
    and an element of one key dumps as `{"KEY":` + its value + `}`. `-0.0` is the one value
    whose canonical dump reads back as itself; it is refused by search. A block over FAST_BYTES (one long
    line) is left to the lines' own reading.
    """
    if len(part) > FAST_BYTES:
        return None
    text = b"".join((_OPEN, part.replace(b"\n", _MARK), _CLOSE))
    lines = (len(text) - len(part) - len(_OPEN) - len(_CLOSE)) // (len(_MARK) - 1) + 1
    try:
        wrapped = _LOADS(text)
        again = _DUMPS(wrapped, option=_STRICT)
    except (_DECODE_ERROR, _ENCODE_ERROR):
        return None
    if again != text or len(wrapped) != lines or _MARK in part or _negative_zero(part):
        return None
    try:
        values = list(map(_UNWRAP, wrapped))  # every element a dict holding KEY
    except (KeyError, TypeError):
        return None
    # ... and nothing else: each has at least one key, so a total of one a line means exactly one each.
    return values if sum(map(len, wrapped)) == lines else None
