"""spec/07-persistence.md, lossless JSON text: what the readers refuse, and what the writer writes."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from nearmisses import typed
from sessionspec import jsontext
from sessionspec.errors import SpecViolation
from sessionspec.jsontext import dumps, parse


@pytest.mark.parametrize(("text", "rule"), [
    (b'{"a":"\xff"}', "SESSION-LOSSLESS-TEXT.1"),
    (b'"\xed\xa0\x80"', "SESSION-LOSSLESS-TEXT.1"),  # a surrogate encoded as UTF-8 bytes (CESU)
    ('{"a":1,}', "SESSION-LOSSLESS-TEXT.2"),
    ("[1 2]", "SESSION-LOSSLESS-TEXT.2"),
    ("", "SESSION-LOSSLESS-TEXT.2"),
    ("NaN", "SESSION-LOSSLESS-TEXT.3"),
    ('{"a":-Infinity}', "SESSION-LOSSLESS-TEXT.3"),
    ("1e400", "SESSION-LOSSLESS-TEXT.3"),
    ("9007199254740992", "SESSION-LOSSLESS-TEXT.4"),
    ("-9007199254740992", "SESSION-LOSSLESS-TEXT.4"),
    ("1" * 5000, "SESSION-LOSSLESS-TEXT.4"),
    ("-0", "SESSION-LOSSLESS-TEXT.5"),
    ("[-0.0]", "SESSION-LOSSLESS-TEXT.5"),
    ("-0e7", "SESSION-LOSSLESS-TEXT.5"),
    ('{"a":1,"a":1}', "SESSION-LOSSLESS-TEXT.6"),
])
def test_lossy_text_is_refused_never_repaired(text: str | bytes, rule: str) -> None:
    with pytest.raises(SpecViolation) as caught:
        parse(text)
    assert caught.value.rule == rule


def test_safe_extremes_and_lone_surrogates_are_accepted() -> None:
    assert parse("[9007199254740991,-9007199254740991,0,0.0,1e300]") == [2**53 - 1, -(2**53 - 1), 0, 0.0, 1e300]
    assert parse('"\\ud800x"') == "\ud800x"


def test_lone_surrogates_are_written_escaped_and_the_bytes_are_utf8() -> None:
    text = dumps({"k\udc00": "\ud800é😀"})
    assert text == '{"k\\udc00":"\\ud800é😀"}'
    text.encode("utf-8")
    assert parse(text.encode("utf-8")) == {"k\udc00": "\ud800é😀"}


@pytest.mark.parametrize("opener", ["[", '{"a":'])
def test_nesting_of_100000_levels_round_trips_without_recursion(opener: str) -> None:
    closer = "]" if opener == "[" else "}"
    text = opener * 100_000 + "1" + closer * 100_000 if opener != "[" else "[" * 100_000 + "]" * 100_000
    value = parse(text)
    assert dumps(value) == text


@pytest.mark.parametrize(("text", "rule"), [
    ("[" * 100_000, "SESSION-LOSSLESS-TEXT.2"),
    ("[" * 5000 + "NaN" + "]" * 5000, "SESSION-LOSSLESS-TEXT.3"),
    ("[" * 5000 + "-0" + "]" * 5000, "SESSION-LOSSLESS-TEXT.5"),
    ("[" * 5000 + '{"a":1,"a":2}' + "]" * 5000, "SESSION-LOSSLESS-TEXT.6"),
    ("[" * 5000 + "1,]" + "]" * 4999, "SESSION-LOSSLESS-TEXT.2"),
])
def test_the_deep_path_applies_the_same_rules(text: str, rule: str) -> None:
    with pytest.raises(SpecViolation) as caught:
        parse(text)
    assert caught.value.rule == rule


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53 - 1), 2**53 - 1)
    | st.floats(allow_nan=False, allow_infinity=False).filter(lambda f: f != 0 or str(f) == "0.0") | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None)
@given(json_values)
def test_write_then_read_is_the_identity(value: object) -> None:
    text = dumps(value)
    assert parse(text.encode("utf-8")) == value
    assert json.loads(text) == value


EDITS = list('[]{},:"~a0 -.eE\\}]')
"""Characters a one-character edit of JSON text puts in: the grammar's own, and near misses of its closers."""


def _read(read: Any, text: str) -> Any:
    try:
        return typed(read(text))
    except SpecViolation as violation:
        return ("rejected", violation.rule)


@given(json_values, st.integers(0, 10**6), st.sampled_from(EDITS), st.sampled_from(["replace", "insert", "delete"]))
@settings(max_examples=400)
def test_the_deep_path_reads_every_text_as_the_shallow_path_does(value: Any, where: int, char: str, how: str) -> None:
    """SESSION-LOSSLESS-TEXT.2-.6 on the deep path: the explicit-stack parser `parse` falls back to past Python's
    recursion limit accepts and refuses exactly what the `json`-based path does (the same value, or the same rule),
    on JSON text and on every one-character edit of it, where a looser closer or comma check would show."""
    text = dumps(value)
    at = where % (len(text) + 1)
    text = {"replace": text[:at] + char + text[at + 1:], "insert": text[:at] + char + text[at:],
            "delete": text[:at] + text[at + 1:]}[how]
    assert _read(jsontext._parse_stack, text) == _read(parse, text)


@pytest.mark.parametrize("text", ["[1}", "[1~", "[1a", '{"a":1]', '{"a":1~', "[[1]}", '[{"a":[]]]', "[1 ,]", "[1]]", '{"a":1}}'])
def test_the_deep_path_refuses_a_wrong_closer_as_the_shallow_path_does(text: str) -> None:
    """SESSION-LOSSLESS-TEXT.2: after a value only ',' or the container's own closer may follow, on both paths (a
    closer test that compares by order, not equality, would take '}' or '~' for ']')."""
    assert _read(jsontext._parse_stack, text) == _read(parse, text) == ("rejected", "SESSION-LOSSLESS-TEXT.2")
