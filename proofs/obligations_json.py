"""Obligations of the lossless JSON chapter: what snapshot accepts survives a JSON round trip."""

from __future__ import annotations

import json

import icontract
from sessionspec.jsonvalue import Json, is_json, snapshot, thaw


def _plain(value: Json) -> bool:
    """Only plain dict and list containers, all the way down (thaw's promise)."""
    if type(value) is dict:
        return all(_plain(child) for child in value.values())
    if type(value) is list:
        return all(_plain(child) for child in value)
    return not isinstance(value, (dict, list))


def _nested(keys: list[int], numbers: list[int]) -> Json:
    """A plain object built from ints: one key per entry of `keys`, holding the first key % 4 numbers."""
    names = ("a", "b", "c")
    return {names[i]: [*numbers[: key % 4], {"n": numbers[:1]}] for i, key in enumerate(keys[:3])}


@icontract.require(lambda keys, numbers: len(keys) <= 3 and len(numbers) <= 3)
@icontract.require(lambda keys, numbers: is_json(_nested(keys, numbers)))
@icontract.ensure(lambda result: result[0] == result[1], "snapshot then thaw is a JSON round trip")
@icontract.ensure(lambda result: _plain(result[0]), "thaw returns plain JSON")
def snapshot_thaw_is_round_trip(keys: list[int], numbers: list[int]) -> tuple[Json, Json]:
    """For every value snapshot accepts, thawing the snapshot gives what a JSON text round trip gives.

    Guards against: a snapshot that silently changes a value (an int outside +-(2**53-1) that a
    JavaScript reader would round, a key coerced to a string), and a thaw that leaks frozen types.
    The containers are built here from ints, so they are real dicts and lists and only the
    numbers are symbolic (snapshot rightly rejects CrossHair's proxy containers as non-JSON types).
    """
    value = _nested(keys, numbers)
    return thaw(snapshot(value)), json.loads(json.dumps(value))


@icontract.require(lambda eighths: len(eighths) <= 3 and all(abs(n) < 2**40 for n in eighths))
@icontract.ensure(lambda result: result[0] == result[1] and result[2], "accepted floats survive a round trip")
def accepted_floats_round_trip(eighths: list[int]) -> tuple[Json, Json, bool]:
    """Every float snapshot accepts reads back as the same float, sign included.

    Guards against: a snapshot that stores a float differently from what a JSON reader reads
    back. The floats are n/8, exact in binary: CrossHair models floats as real numbers, so an
    inexact symbolic float "fails" a round trip that the concrete float passes.
    """
    plain = [n / 8 for n in eighths]
    back = json.loads(json.dumps(plain, allow_nan=False))
    same_signs = all(str(a) == str(b) for a, b in zip(thaw(snapshot(plain)), back, strict=True))
    return thaw(snapshot(plain)), back, same_signs
