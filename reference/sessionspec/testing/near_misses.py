"""Near misses: a valid request with one thing broken, anywhere in it.

The invalid strategies of `sessionspec.testing.strategies` break each rule one chosen way. A
store's fast check can be wrong about any field at any depth (an operand dropped from a
conjunction, a comparison turned the wrong way, a type left out of an isinstance), and one chosen
break per rule does not find that: the mutation lane (mutation/REPORT.md) found such checks
surviving the whole oracle. So here a valid request is drawn and exactly one thing in it is
changed, wherever it is: a key removed, a value replaced by one of another type or by a boundary
value (empty, negative, the next seq), a key added. Whether the result is still valid is not
decided here; the reference says, and the machines require the implementation to say the same.

- `near_misses(view)`: what JSON text can carry, for the in-process machine;
- `several_at_once(view)`: two or three things broken together, for the in-process machine;
- `non_json_anywhere(view)`: a value JSON text cannot carry (an unsafe integer, `-0.0`, NaN, a
  tuple, a non-string key, a subclass of a JSON type) planted at any depth, for the in-process machine
  (`tagged` writes such a request for the `x-append` extension op, which carries them across the wire).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

from hypothesis import strategies as st

from sessionspec.jsonvalue import MAX_SAFE_INTEGER, thaw
from sessionspec.testing import strategies as ss

Path = tuple[str | int, ...]

WRONG_VALUES: tuple[Any, ...] = (None, True, False, 0, 1, -1, 1.5, "", "x", "zzz", [], {}, ["x"], {"x": 1})
"""What a field is replaced by: each JSON type, empty and non-empty, and the boundary numbers."""
SPEC_FIELDS = frozenset({
    "type", "data", "surfaceOp", "sourceEventSeqs", "ignorable", "op", "start", "end",
    "id", "role", "source", "kind", "provider", "model", "callId", "content", "message", "toolCallId",
    "header", "config", "reason", "reasoningEffort", "adapterDefaults", "maxTokens",
})
"""The fields the spec's rules name (spec/02, spec/03): a break is drawn among them two times in three."""
ADDED_KEYS = ("ignorable", "surfaceOp", "sourceEventSeqs", "extra", "")
EXTRA = 3
"""Breaks at paths drawn from all of a request's paths, after the sweep of the named fields."""


def paths(value: Any) -> list[Path]:
    """The path of every value inside `value` (not `value` itself), breadth first; iterative, any depth."""
    found: list[Path] = []
    queue: list[tuple[Path, Any]] = [((), value)]
    while queue:
        path, node = queue.pop(0)
        children = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for key, child in children:
            found.append((*path, key))
            queue.append(((*path, key), child))
    return found


def _at(value: Any, path: Path) -> Any:
    for key in path:
        value = value[key]
    return value


def _valid(view: ss.View) -> st.SearchStrategy[ss.Request]:
    options = [ss.append_requests(view)]
    if view.nodes:
        options.append(ss.replacements(view))
    return st.one_of(options)


def _boundary(value: Any, view: ss.View) -> list[Any]:
    """Values next to `value`: a string that sorts just after or before it, the integers around it, the other
    bool and the numbers equal to it (`1 == True`: a check written `== True` or `>= True` lets them through)."""
    if isinstance(value, bool):
        return [not value, int(value), float(value), int(value) + 1]
    if isinstance(value, str):
        return [value + "~", value[:-1], value.upper(), "zzz", "a"]
    if isinstance(value, int):
        return [value - 1, value + 1, -1, view.seq, view.seq - 1, view.seq + 1]
    if isinstance(value, list):
        return [[], [*value, *value], value[:1], [value]]
    if isinstance(value, dict):
        return [{}, [value], {**value, "extra": 1}]
    return [{}, [], ""]


def _break(draw: st.DrawFn, request: dict[str, Any], path: Path, view: ss.View) -> dict[str, Any]:
    """`request` with the value at `path` removed, replaced (by one of another type, or one next to it), or added to."""
    parent, key = _at(request, path[:-1]), path[-1]
    how = draw(st.sampled_from(["boundary", "boundary", "wrong type", "remove", "add"]), label="how")
    value = draw(st.sampled_from(_boundary(parent[key], view) if how == "boundary" else WRONG_VALUES), label="value")
    if how == "remove":
        del parent[key]
    elif how == "add" and isinstance(parent, dict):
        parent[draw(st.sampled_from(ADDED_KEYS if not path[:-1] else ("extra", "", "id")), label="key")] = value
    elif how == "add":
        parent.insert(int(key), value)
    else:
        parent[key] = value
    return request


@st.composite
def near_misses(draw: st.DrawFn, view: ss.View) -> list[ss.Request]:
    """Copies of one valid append or replacement, each with one thing broken: every field the spec names once
    (`SPEC_FIELDS`, the provenance list and its items), in a drawn order, then a few drawn from all its paths.
    Several requests per step: a failing step does not shrink to one request, so not for the conformance machine,
    whose report wants the shortest trace."""
    valid: dict[str, Any] = thaw(draw(_valid(view), label="valid"))
    every = paths(valid)
    named = [p for p in every if p[-1] in SPEC_FIELDS or p[0] == "sourceEventSeqs"]
    sweep = draw(st.permutations(named), label="sweep") if named else []
    extra = draw(st.lists(st.sampled_from(every), max_size=EXTRA), label="elsewhere") if every else []
    return [_break(draw, thaw(valid), path, view) for path in [*sweep, *extra]]


@st.composite
def several_at_once(draw: st.DrawFn, view: ss.View) -> list[ss.Request]:
    """Copies of one valid append or replacement, each with two or three fields broken together (drawn among the fields
    the spec names, else any): a fast check that is a conjunction of field tests may accept what no single break makes,
    a message whose nesting, role and source are all another type's (issue 25). A path a previous break removed is
    skipped."""
    valid: dict[str, Any] = thaw(draw(_valid(view), label="valid"))
    every = paths(valid)
    named = [p for p in every if p[-1] in SPEC_FIELDS or p[0] == "sourceEventSeqs"] or every
    out = []
    for _ in range(draw(st.integers(1, 4), label="copies")):
        request: dict[str, Any] = thaw(valid)
        for path in draw(st.lists(st.sampled_from(named), min_size=2, max_size=3, unique=True), label="paths"):
            try:
                _at(request, path)
            except (KeyError, IndexError, TypeError):
                continue
            request = _break(draw, request, path, view)
        out.append(request)
    return out


class _Str(str):
    pass


class _Int(int):
    pass


class _Float(float):
    pass


class _Dict(dict):  # type: ignore[type-arg]
    pass


class _List(list):  # type: ignore[type-arg]
    pass


NON_JSON: tuple[Callable[[], Any], ...] = (
    lambda: MAX_SAFE_INTEGER + 1, lambda: -MAX_SAFE_INTEGER - 1, lambda: 2**64, lambda: -(2**64),
    lambda: math.nan, lambda: math.inf, lambda: -math.inf, lambda: -0.0,
    lambda: (1, 2), lambda: frozenset(), lambda: b"bytes", lambda: {1: "int key"}, lambda: {None: "null key"},
    lambda: _Str("s"), lambda: _Int(1), lambda: _Float(1.5), lambda: _Dict(a=1), lambda: _List([1]),
)
"""Python values a JSON round trip would change or cannot hold (decision 4), each made fresh. Not a cycle:
a failing example's trace must be writable (`conformance.trace`), and JSON cannot write a cycle."""


def _plant(draw: st.DrawFn, request: dict[str, Any], make: Callable[[], Any]) -> dict[str, Any]:
    path = draw(st.sampled_from([p for p in paths(request) if p[0] != "type"]), label="path")
    parent, key = _at(request, path[:-1]), path[-1]
    if isinstance(parent, list) and draw(st.booleans(), label="insert"):
        parent.insert(int(key), make())
    else:
        parent[key] = make()
    return request


@st.composite
def non_json_anywhere(draw: st.DrawFn, view: ss.View) -> list[ss.Request]:
    """Copies of one valid request, each with a value JSON cannot hold in place of (or beside) a value at any depth:
    a drawn set of the kinds of NON_JSON value (a list, so that a failing step shrinks to the one that fails)."""
    valid: dict[str, Any] = draw(_valid(view), label="valid")
    kinds = draw(st.lists(st.sampled_from(range(len(NON_JSON))), min_size=1, unique=True, max_size=len(NON_JSON)),
                 label="kinds")
    return [_plant(draw, thaw(valid), NON_JSON[kind]) for kind in kinds]


def tagged(value: Any) -> Any:
    """`value` as plain JSON text can carry it, each value JSON cannot hold tagged as traces tag it (`{"$int": "..."}`,
    `{"$float": "-0.0"}`, `{"$tuple": [...]}`, `{"$pairs": [[key, value]]}`): the request of an `x-append`, which
    `conformance.trace.untag` turns back into `value` (a subclass of a JSON type arrives as the type itself)."""
    if value is None or isinstance(value, (bool, str)):
        return value if type(value) in (bool, str) or value is None else str(value)
    if isinstance(value, int):
        return int(value) if abs(value) <= MAX_SAFE_INTEGER else {"$int": str(value)}
    if isinstance(value, float):
        negative_zero = value == 0 and math.copysign(1.0, value) < 0
        return float(value) if math.isfinite(value) and not negative_zero else {"$float": repr(value)}
    if isinstance(value, (tuple, frozenset)):
        return {"$tuple" if isinstance(value, tuple) else "$frozenset": [tagged(item) for item in value]}
    if isinstance(value, bytes):
        return {"$bytes": value.hex()}
    if isinstance(value, list):
        return [tagged(item) for item in value]
    if isinstance(value, dict) and all(type(key) is str and not key.startswith("$") for key in value):
        return {key: tagged(item) for key, item in value.items()}
    if isinstance(value, dict):
        return {"$pairs": [[tagged(key), tagged(item)] for key, item in value.items()]}
    raise TypeError(f"cannot tag a {type(value).__name__}")


DEEP_TYPE = "x-vendor/deep"
SHALLOW_DEPTHS = (63, 64, 65, 66, 129)
"""Around the store's hand-over depth (64): what the in-process machine sends (its invariants compare with `==`,
which recurses)."""
DEPTHS = (*SHALLOW_DEPTHS, 1_100, 5_000)
"""And beyond any recursion limit (spec/01: depth is not limited), sent as raw lines by the conformance machine."""


def deep_values(*, shallow: bool = False) -> st.SearchStrategy[tuple[int, str, str]]:
    """(depth, shape, leaf): a log-only append whose data nests `depth` levels of objects, arrays or both alternately."""
    return st.tuples(st.sampled_from(SHALLOW_DEPTHS if shallow else DEPTHS),
                     st.sampled_from(["object", "array", "alternating"]),
                     st.sampled_from(["1", '"leaf"', "null", "{}", "[]", "-1.5"]))


def deep_value(depth: int, shape: str, leaf: str) -> Any:
    """The same value as a Python object, built without recursion."""
    value: Any = json.loads(leaf)
    for level in reversed(range(depth)):
        value = {"a": value} if shape == "object" or (shape == "alternating" and level % 2 == 0) else [value]
    return value
