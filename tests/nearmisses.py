"""Near misses: inputs one or a few changes away from valid ones, at any depth, for the fast-path properties.

A fast form must never accept what its reference refuses; the inputs that could slip through are
the ones almost right: a field of the wrong kind, an unsafe int, -0.0, NaN, a bool where an int
belongs, a key missing or extra, an off-by-one at a boundary, each anywhere in a nested value.
`near_misses` draws such inputs for Hypothesis; `every_single_change` lists all of them one change
away from a given input, for a sweep that leaves nothing to chance.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable, Iterator
from typing import Any

from hypothesis import strategies as st
from sessionspec.envelope import Event
from sessionspec.errors import SpecViolation
from sessionspec.jsonvalue import FrozenDict, FrozenList, thaw


class Level(float, enum.Enum):
    HIGH = 1.5


class Key(str):
    pass


NEAR_MISSES: list[Any] = [
    None, True, False, 0, -1, 2, 2**53 - 1, 2**53, -(2**53), 1.5, 2.0, -0.0, math.nan, math.inf, "", "x", "user",
    "assistant", "model", "tool", "tool-result", "append", [], {}, [math.nan], [-0.0], [2**53], [True], [1.0],
    {"n": -0.0}, [{"n": 2**53}], [{"n": math.inf}], {"op": "replace", "start": 0, "end": 0},
]
"""Values that break a field: wrong kinds, unsafe ints, -0.0, NaN, bools for ints, and those nested in lists and objects."""
FOREIGN: list[Any] = [(1, 2), b"x", Level.HIGH, Key("k"), {Key("k"): 1}, {1: "a"}, FrozenList([math.nan])]
"""Values no lossless JSON reader returns: only the fast forms taking Python values (owned, request_parts) meet them."""
HOWS = ("set", "set", "set", "delete", "extra", "wrap", "reorder", "up", "down")


def positions(value: Any) -> list[tuple[Any, ...]]:
    """The path of every value inside `value`, itself included (the empty path)."""
    found: list[tuple[Any, ...]] = [()]
    stack = [((), value)]
    while stack:
        path, current = stack.pop()
        items = current.items() if isinstance(current, dict) else enumerate(current) if isinstance(current, list) else ()
        for key, child in items:
            found.append((*path, key))
            stack.append(((*path, key), child))
    return found


def changed(value: Any, path: tuple[Any, ...], how: str, leaf: Any) -> Any:
    """A plain copy of `value` with one change at `path`: set it to `leaf`, delete it, give its container an
    extra item, wrap it in a list, reverse an object's key order, or add or take one from an int (a boundary).
    Arguments (depth 1) are not deleted."""
    box = [thaw(value)]
    *parents, last = (0, *path)
    holder: Any = box
    for key in parents:
        holder = holder[key]
    if how == "delete" and len(path) > 1:
        del holder[last]
    elif how == "extra" and isinstance(holder[last], (dict, list)) and len(path) > 0:
        target = holder[last]
        target.update({"extra": leaf}) if isinstance(target, dict) else target.append(leaf)
    elif how == "wrap":
        holder[last] = [holder[last]]
    elif how == "reorder" and isinstance(holder[last], dict):
        holder[last] = dict(reversed(list(holder[last].items())))
    elif how in ("up", "down") and type(holder[last]) is int:
        holder[last] += 1 if how == "up" else -1
    else:
        holder[last] = leaf
    return box[0]


def near_misses(base: st.SearchStrategy[Any], leaves: list[Any] = NEAR_MISSES, most: int = 3) -> st.SearchStrategy[Any]:
    """Valid inputs from `base` (each a list of arguments), and as many again with 1 to `most` changes anywhere in them."""

    @st.composite
    def build(draw: st.DrawFn) -> Any:
        value = draw(base)
        for _ in range(draw(st.integers(1, most))):
            # Deepest first: Hypothesis draws early indices more often than late ones, and a change of a whole
            # argument (found first) would make most inputs plainly invalid.
            value = changed(value, draw(st.sampled_from(positions(value)[:0:-1])), draw(st.sampled_from(HOWS)),
                            draw(st.sampled_from(leaves)))
        return value

    return st.one_of(base, build())


def every_single_change(value: Any, leaves: list[Any] = NEAR_MISSES) -> Iterator[Any]:
    """Each input one change away from `value`: every path, every way, every leaf."""
    for path in positions(value)[1:]:
        for how in sorted(set(HOWS)):
            for leaf in leaves if how == "set" else leaves[:1]:
                yield changed(value, path, how, leaf)


def outcome(call: Callable[[], Any]) -> Any:
    """What a call did: its value with every type spelled out, or the violation's rule and message."""
    try:
        return typed(call())
    except SpecViolation as violation:
        return ("rejected", violation.rule, violation.message)


def typed(value: Any) -> Any:
    """A type-strict image of a value: equal only if types (frozen or not) are equal too."""
    if isinstance(value, Event):
        return ("Event", typed([value.type, value.seq, value.time, value.data, value.surface_op,
                                value.source_event_seqs, value.ignorable]))
    if isinstance(value, dict):
        return (type(value).__name__, [(k, typed(v)) for k, v in value.items()])
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, [typed(v) for v in value])
    return (type(value).__name__, repr(value))


def json_or_foreign(leaves: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Nested values built from `leaves`, in plain and frozen containers, some with keys no JSON object has."""
    return st.recursive(leaves, lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.one_of(st.text(max_size=3), st.sampled_from([Key("k"), 1])), inner,
                                                     max_size=4),
        st.lists(inner, max_size=3).map(FrozenList), st.dictionaries(st.text(max_size=3), inner, max_size=3).map(FrozenDict),
    ), max_leaves=12)
