"""Hypothesis strategies for deliberately invalid appends, each with the rule the reference refuses it with.

Invalid operations come as `Invalid(request, rule, why)`: the rule the reference model rejects it
with. The in-process machine checks that the model really does (so a strategy that drifts into
valid input is caught) and that the implementation under test rejects it with the same rule and
kind. These are hand-picked: one or two per rule, plus double faults whose rule spec/04's check
order decides. `testing.breaking` breaks any field of any shape without knowing the rule.

Like `testing.strategies`, every strategy is built once (at import, or per number it depends
on); what depends on the log is a draw function over the view, or (for the two the runner sends
most) a generator over a chooser (`testing.choose`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from hypothesis import strategies as st

from sessionspec.catalog import ASSISTANT_MESSAGE, END_SEED, REQUEST_HEADER, TOOL_RESULT, USER_MESSAGE
from sessionspec.jsonvalue import MAX_SAFE_INTEGER, thaw
from sessionspec.testing import choose as generate
from sessionspec.testing.choose import Choose, one
from sessionspec.testing.strategies import (
    Draw,
    Request,
    View,
    assistant_message_data,
    covering_sources,
    index,
    pick,
    positional_range,
    replace_op,
    tool_result_data,
    user_message_data,
)


@dataclass(frozen=True)
class Invalid:
    """A request the model rejects, and the rule it rejects it with."""

    request: Request
    rule: str
    why: str


class NonJson:
    """Python values a JSON round trip would change, each with the rule that refuses it."""

    VALUES: tuple[tuple[Callable[[], Any], str], ...] = (
        (lambda: (1, 2), "SESSION-LOSSLESS-JSON.1"),
        (lambda: {"set": frozenset()}, "SESSION-LOSSLESS-JSON.1"),
        (lambda: b"bytes", "SESSION-LOSSLESS-JSON.1"),
        (lambda: MAX_SAFE_INTEGER + 1, "SESSION-LOSSLESS-JSON.2"),
        (lambda: -(2**64), "SESSION-LOSSLESS-JSON.2"),
        (lambda: math.nan, "SESSION-LOSSLESS-JSON.3"),
        (lambda: math.inf, "SESSION-LOSSLESS-JSON.3"),
        (lambda: -0.0, "SESSION-LOSSLESS-JSON.4"),
        (lambda: {1: "int key"}, "SESSION-LOSSLESS-JSON.5"),
    )
    PLACES: ClassVar[dict[str, Callable[[Any], Any]]] = {
        "top": lambda bad: bad,
        "in a list": lambda bad: {"turn": 1, "value": [bad]},
        "in an object": lambda bad: {"turn": 1, "value": {"inner": bad}},
        "in a list of objects": lambda bad: {"items": [{"n": 1}, {"n": [bad]}]},
        "in a message's content block": lambda bad: {"id": "u", "role": "user", "source": {"kind": "user"},
                                                     "content": [{"type": "text", "text": "t", "n": bad}]},
    }
    """Where the bad value sits in `data`: a lossless check must reach every depth."""


def _bad_json(value: int, where: str) -> Invalid:
    make, rule = NonJson.VALUES[value]
    data = NonJson.PLACES[where](make())
    event_type = USER_MESSAGE if "message" in where else "turn/start"
    request: Request = {"type": event_type, "data": data}
    if event_type == USER_MESSAGE:
        request["surfaceOp"] = "append"
    return Invalid(request, rule, f"non-JSON data ({where})")


def _with_inner_call(data: dict[str, Any], call_id: str) -> dict[str, Any]:
    out = thaw(data)
    out["message"]["content"][0]["toolCallId"] = call_id
    return out  # type: ignore[no-any-return]


def _with_blocks(data: dict[str, Any], count: int) -> dict[str, Any]:
    """A tool result whose message holds `count` copies of its one block (SESSION-MESSAGE-SHAPE.7 wants exactly one)."""
    message = data["message"]
    return {**data, "message": {**message, "content": message["content"][:1] * count}}


def _with_source(data: dict[str, Any], source: dict[str, Any]) -> dict[str, Any]:
    return {**data, "message": {**data["message"], "source": source}}


def _with_call_ids(data: dict[str, Any], same: Any) -> dict[str, Any]:
    """A tool result whose callId and toolCallId are the same value, not a string: equal, and still refused (.6)."""
    out: dict[str, Any] = thaw(data)
    out["message"]["source"]["callId"] = out["message"]["content"][0]["toolCallId"] = same
    return out


_RENESTED: tuple[tuple[str, Callable[[Any], Any], str], ...] = (
    (USER_MESSAGE, lambda user: {"turn": 1, "step": 1, "message": user}, "SESSION-MESSAGE-SHAPE.1"),
    (ASSISTANT_MESSAGE, lambda user: {**user, "role": "assistant",
                                      "source": {"kind": "model", "provider": "p", "model": "m"}}, "SESSION-MESSAGE-SHAPE.9"),
    (TOOL_RESULT, lambda user: {"turn": 1, "message": {**user, "role": "assistant"}}, "SESSION-MESSAGE-SHAPE.2"),
)
"""A user message's data re-nested as another surface type's (or not nested where it must be), several fields at
once, with the rule the reference refuses it with (issue 25: a fast check read the message at the wrong place): an
assistant message's data without its `message` has no message to check (SESSION-MESSAGE-SHAPE.9)."""

_USER, _ASSISTANT = user_message_data(), assistant_message_data()
_PROVIDER_ONLY = {"kind": "model", "provider": "deepseek"}
_FIXED: tuple[st.SearchStrategy[Invalid], ...] = (
    st.builds(_bad_json, st.integers(0, len(NonJson.VALUES) - 1), st.sampled_from(sorted(NonJson.PLACES))),
    st.builds(lambda d: Invalid({"type": USER_MESSAGE, "data": d, "surfaceOp": "append", "x": 1},
                                "SESSION-EVENT-ENVELOPE.1", "unknown request key"), _USER),
    st.just(Invalid({"type": "turn/start", "seq": 0, "data": {}}, "SESSION-EVENT-ENVELOPE.1", "seq in an append request")),
    st.just(Invalid({"type": "turn/start"}, "SESSION-EVENT-ENVELOPE.5", "no data")),
    st.just(Invalid({"type": "", "data": {}}, "SESSION-EVENT-ENVELOPE.8", "empty type")),
    st.just(Invalid({"type": 7, "data": {}}, "SESSION-EVENT-ENVELOPE.2", "type not a string")),
    st.builds(lambda flag: Invalid({"type": "x-vendor/note", "data": {}, "ignorable": flag}, "SESSION-EVENT-ENVELOPE.6",
                                   f"ignorable {flag!r}, not true"), st.sampled_from([False, 1, 1.0, "true", None, [True]])),
    st.builds(lambda d: Invalid({"type": USER_MESSAGE, "data": d, "surfaceOp": "append", "ignorable": True},
                                "SESSION-EVENT-ENVELOPE.7", "ignorable surface event"), _USER),
    st.just(Invalid({"type": END_SEED, "data": {}}, "SESSION-APPEND-COMMIT.5", "marker by append")),
    st.builds(lambda t: Invalid({"type": t, "data": {}}, "SESSION-CORE-EVENTS.2", "retired type"),
              st.sampled_from(["request/header-delta", "mode/set"])),
    st.just(Invalid({"type": "turn/start", "data": {}, "surfaceOp": "append"}, "SESSION-SURFACE-PROJECTION.1",
                    "surfaceOp on a log-only event")),
    st.just(Invalid({"type": "todo/write", "data": {"todos": []}, "sourceEventSeqs": [0]},
                    "SESSION-SURFACE-PROJECTION.2", "sources on a log-only event")),
    st.builds(lambda d: Invalid({"type": USER_MESSAGE, "data": d}, "SESSION-SURFACE-PROJECTION.3", "no surfaceOp"), _USER),
    st.builds(lambda d, op: Invalid({"type": USER_MESSAGE, "data": d, "surfaceOp": op}, "SESSION-SURFACE-PROJECTION.4",
                                    "malformed surfaceOp"),
              _USER, st.sampled_from([None, "prepend", {"op": "replace", "start": 0}, {"op": "replace", "start": -1, "end": 0},
                                      {"op": "replace", "start": True, "end": 0}, {"op": "replace", "start": 0, "end": 0, "x": 1}])),
    st.builds(lambda d, s: Invalid({"type": USER_MESSAGE, "data": d, "surfaceOp": "append", "sourceEventSeqs": s},
                                   "SESSION-SURFACE-PROVENANCE.1", "sources not an array"),
              _USER, st.sampled_from([{"0": 0}, 5, "0", None, True])),
    st.builds(lambda d: Invalid({"type": USER_MESSAGE, "data": d, "surfaceOp": "append", "sourceEventSeqs": []},
                                "SESSION-SURFACE-PROVENANCE.2", "empty sources on a user message"), _USER),
    st.builds(lambda d, s: Invalid({"type": USER_MESSAGE, "data": d, "surfaceOp": "append", "sourceEventSeqs": [s]},
                                   "SESSION-SURFACE-PROVENANCE.3", "a source that is not a seq"),
              _USER, st.sampled_from([-1, True, 1.5, "0", 0.0])),
    st.builds(lambda d: Invalid({"type": USER_MESSAGE, "data": d, "surfaceOp": "append", "sourceEventSeqs": [0, 0]},
                                "SESSION-SURFACE-PROVENANCE.4", "duplicate sources"), _USER),
    st.builds(lambda d, i: Invalid({"type": USER_MESSAGE, "data": {**d, "id": i}, "surfaceOp": "append"},
                                   "SESSION-MESSAGE-SHAPE.1", f"message id {i!r}"), _USER, st.sampled_from(["", 7, None, ["a"], True])),
    st.builds(lambda d, r: Invalid({"type": USER_MESSAGE, "data": {**d, "role": r}, "surfaceOp": "append"},
                                   "SESSION-MESSAGE-SHAPE.2", f"role {r!r} on a user message"),
              _USER, st.sampled_from(["assistant", "zebra", "a", "User", 1])),
    st.builds(lambda d: Invalid({"type": ASSISTANT_MESSAGE, "data": {**d, "message": {**d["message"], "role": "user"}},
                                 "surfaceOp": "append"}, "SESSION-MESSAGE-SHAPE.2", "role 'user' on an assistant message"),
              _ASSISTANT),
    st.builds(lambda d, s: Invalid({"type": ASSISTANT_MESSAGE, "data": _with_source(d, s), "surfaceOp": "append"},
                                   "SESSION-MESSAGE-SHAPE.5", "assistant without a model source"),
              _ASSISTANT, st.sampled_from([{"kind": "user"}, _PROVIDER_ONLY, {**_PROVIDER_ONLY, "model": ""},
                                           {"kind": "model", "model": "m"}])),
    st.builds(lambda d: Invalid({"type": TOOL_RESULT, "data": _with_inner_call(d, "other"), "surfaceOp": "append"},
                                "SESSION-MESSAGE-SHAPE.8", "mismatched tool call ids"), tool_result_data()),
    st.builds(lambda d, count: Invalid({"type": TOOL_RESULT, "data": _with_blocks(d, count), "surfaceOp": "append"},
                                       "SESSION-MESSAGE-SHAPE.7", f"a tool result of {count} blocks"),
              tool_result_data(), st.sampled_from([0, 2])),
    st.builds(lambda d, same: Invalid({"type": TOOL_RESULT, "data": _with_call_ids(d, same), "surfaceOp": "append"},
                                      "SESSION-MESSAGE-SHAPE.6", f"callId and toolCallId both {same!r}"),
              tool_result_data(), st.sampled_from([5, 0, True, 1.5, None, ["c1"], {"c": 1}])),
    st.builds(lambda d, how: Invalid({"type": how[0], "data": how[1](d), "surfaceOp": "append"}, how[2],
                                     f"a {how[0]} nested as another type's"), _USER, st.sampled_from(_RENESTED)),
    st.just(Invalid({"type": REQUEST_HEADER, "data": {"header": {"config": {"provider": "deepseek"}}, "reason": "initial"}},
                    "SESSION-REQUEST-HEADER.1", "request header without model")),
    st.just(Invalid({"type": REQUEST_HEADER, "data": {"header": {"config": {"provider": "p", "model": "m"}}, "reason": "fallback"}},
                    "SESSION-REQUEST-HEADER.4", "legacy fallback reason")),
)
"""The invalid requests that do not depend on the log."""

DOUBLE_FAULTS: tuple[Invalid, ...] = (
    Invalid({"type": ""}, "SESSION-EVENT-ENVELOPE.5", "no data and an empty type: data is checked first (step 0)"),
    Invalid({"type": 3, "data": {}, "ignorable": False}, "SESSION-EVENT-ENVELOPE.6",
            "ignorable false and a type that is not a string: step 0 before step 2"),
    Invalid({"type": END_SEED, "data": {"x": -0.0}, "surfaceOp": "append"}, "SESSION-APPEND-COMMIT.5",
            "the marker, with -0.0 and a surfaceOp: step 3 before steps 5 and 7"),
    Invalid({"type": "turn/start", "data": [-0.0], "surfaceOp": "append", "sourceEventSeqs": [0]},
            "SESSION-LOSSLESS-JSON.4", "-0.0 in data and a surfaceOp on a log-only event: step 5 before step 7"),
    Invalid({"type": "turn/start", "data": {}, "surfaceOp": "append", "sourceEventSeqs": [0]},
            "SESSION-SURFACE-PROJECTION.1", "surfaceOp and sources on a log-only event: .1 before .2"),
    Invalid({"type": USER_MESSAGE, "data": {"id": "u", "role": "user", "source": {"kind": "user"}, "content": []},
             "ignorable": True}, "SESSION-EVENT-ENVELOPE.7", "ignorable and no surfaceOp on a surface event: .7 first"),
    Invalid({"type": USER_MESSAGE, "data": {"id": "", "role": "user", "source": {"kind": "user"}, "content": []},
             "surfaceOp": "append", "sourceEventSeqs": [-1]}, "SESSION-SURFACE-PROVENANCE.3",
            "a bad source and an unidentified message: provenance (step 7) before shapes (step 8)"),
    Invalid({"type": USER_MESSAGE, "data": {"id": "u", "role": "user", "source": {"kind": "user"}, "content": []},
             "surfaceOp": "append", "sourceEventSeqs": [9, 9]}, "SESSION-SURFACE-PROVENANCE.4",
            "duplicate future sources: .4 before .5"),
    Invalid({"type": REQUEST_HEADER, "data": {"header": {"config": {"provider": "p"}}, "reason": "fallback"}},
            "SESSION-REQUEST-HEADER.1", "no model and the fallback reason: .1 before .4"),
    Invalid({"type": USER_MESSAGE, "data": {"id": "s", "role": "user", "source": {"kind": ""}, "content": []},
             "surfaceOp": {"op": "replace", "start": 99, "end": 99}}, "SESSION-MESSAGE-SHAPE.3",
            "a bad source kind and a replace of nothing: shapes (step 8) before the surface plan (step 9)"),
)
"""Two faults in one request: spec/04's check order decides which rule is reported (a testee must agree)."""
_DOUBLE = st.sampled_from(DOUBLE_FAULTS)


# --- invalid requests that depend on the log -----------------------------------------------------


def _future_provenance(draw: Draw, view: View) -> Invalid:
    """A source at or past the new seq: alone, or among earlier seqs in any order (not only last, not only far off)."""
    late = view.seq + draw(_SMALL)
    earlier = draw(st.lists(st.integers(0, view.seq - 1), unique=True, max_size=3)) if view.seq else []
    sources = [*earlier[: draw(index(len(earlier) + 1))], late, *earlier]
    sources = list(dict.fromkeys(sources))
    return Invalid({"type": USER_MESSAGE, "data": draw(_USER), "surfaceOp": "append", "sourceEventSeqs": sources},
                   "SESSION-SURFACE-PROVENANCE.5", "future provenance")


_SMALL = st.integers(0, 3)


def _missing_endpoint(draw: Draw, view: View) -> Invalid:
    off = [*view.log_only(), view.seq, view.seq + 5]
    bad = pick(draw, off)
    good = pick(draw, view.nodes) if view.nodes else pick(draw, off)
    op = replace_op(bad, good) if draw(st.booleans()) else replace_op(good, bad)
    return Invalid({"type": USER_MESSAGE, "data": draw(_USER), "surfaceOp": op}, "SESSION-SURFACE-REPLACE.1",
                   "endpoint not in the log or log-only")


def _shadowed_endpoint(draw: Draw, view: View) -> Invalid:
    s, n = pick(draw, view.shadowed()), pick(draw, view.nodes)
    return Invalid({"type": USER_MESSAGE, "data": draw(_USER), "surfaceOp": replace_op(s, n), "sourceEventSeqs": sorted({s, n})},
                   "SESSION-SURFACE-REPLACE.1", "shadowed endpoint")


def _start_after_end(draw: Draw, view: View) -> Invalid:
    first, last = positional_range(draw, view)
    if first == last:
        first, last = (0, 1) if last == 0 else (last, 0)
    start, end = view.nodes[max(first, last)], view.nodes[min(first, last)]
    return Invalid({"type": USER_MESSAGE, "data": draw(_USER), "surfaceOp": replace_op(start, end),
                    "sourceEventSeqs": list(view.nodes)}, "SESSION-SURFACE-REPLACE.2", "start after end")


def incomplete_provenance(choose: Choose, view: View) -> Invalid:
    """A replacement whose sources omit one shadowed node (or that has no sources at all; needs a non-empty surface)."""
    first, last = sorted((choose(len(view.nodes)), choose(len(view.nodes))))
    shadowed = list(view.nodes[first:last + 1])
    omitted = one(choose, shadowed)
    sources = [s for s in shadowed if s != omitted]
    if len(sources) > 1 and choose(2):
        sources.reverse()
    request: Request = {"type": ASSISTANT_MESSAGE, "data": generate.assistant_data(choose),
                        "surfaceOp": replace_op(view.nodes[first], view.nodes[last]), "sourceEventSeqs": sources}
    if choose(2):
        del request["sourceEventSeqs"]
    return Invalid(request, "SESSION-SURFACE-PROVENANCE.6", "sources omit a shadowed node")


REWRITE_CHANGES: dict[str, Callable[[dict[str, Any]], object]] = {
    "message id": lambda d: d["message"].__setitem__("id", d["message"]["id"] + "-forged"),
    "call id": lambda d: (d["message"]["source"].__setitem__("callId", "forged"),
                          d["message"]["content"][0].__setitem__("toolCallId", "forged")),
    "isError": lambda d: d["message"]["content"][0].__setitem__("isError", not d["message"]["content"][0].get("isError", False)),
    "error": lambda d: d.__setitem__("error", {"name": "Forged", "code": "X"}) if "error" not in d else d.pop("error"),
    "meta": lambda d: d.__setitem__("meta", {"forged": True}) if d.get("meta") != {"forged": True} else d.pop("meta"),
    # spec/02 does not shape a tool result's turn: a logged one may lack it or hold a list.
    "turn": lambda d: d.__setitem__("turn", d["turn"] + 1 if type(d.get("turn")) is int else 1),
}
_CHANGES = sorted(REWRITE_CHANGES)


def forged_rewrite(choose: Choose, view: View) -> Invalid:
    """A tool-result rewrite that changes more than the inner content: an id, isError, error or meta."""
    target = one(choose, view.tool_result_nodes())
    data = thaw(view.events[target]["data"])
    change = one(choose, _CHANGES)
    REWRITE_CHANGES[change](data)
    data["message"]["content"][0]["content"] = [{"type": "text", "text": generate.text(choose)}
                                                for _ in range(choose(3))]
    return Invalid({"type": TOOL_RESULT, "data": data, "surfaceOp": replace_op(target, target), "sourceEventSeqs": [target]},
                   "SESSION-SURFACE-TOOL-RESULT.3", f"rewrite changes the {change}")


def _rewrite_of_another_type(draw: Draw, view: View) -> Invalid:
    n = pick(draw, [n for n in view.nodes if view.events[n]["type"] != TOOL_RESULT])
    return Invalid({"type": TOOL_RESULT, "data": draw(_RESULT), "surfaceOp": replace_op(n, n), "sourceEventSeqs": [n]},
                   "SESSION-SURFACE-TOOL-RESULT.2", "rewrite of a node that is not a tool result")


def _rewrite_of_two(draw: Draw, view: View) -> Invalid:
    i = draw(index(len(view.nodes) - 1))
    pair = [view.nodes[i], view.nodes[i + 1]]
    return Invalid({"type": TOOL_RESULT, "data": draw(_RESULT), "surfaceOp": replace_op(*pair),
                    "sourceEventSeqs": covering_sources(draw, view, pair)},
                   "SESSION-SURFACE-TOOL-RESULT.1", "rewrite of two nodes")


_RESULT = tool_result_data()
_DEPENDENT: tuple[tuple[Callable[[View], bool], Callable[[Draw, View], Invalid]], ...] = (
    (lambda view: True, _future_provenance),
    (lambda view: True, _missing_endpoint),
    (lambda view: bool(view.nodes and view.shadowed()), _shadowed_endpoint),
    (lambda view: len(view.nodes) >= 2, _start_after_end),
    (lambda view: bool(view.nodes), lambda draw, view: incomplete_provenance(generate.drawn(draw), view)),
    (lambda view: bool(view.tool_result_nodes()), lambda draw, view: forged_rewrite(generate.drawn(draw), view)),
    (lambda view: any(view.events[n]["type"] != TOOL_RESULT for n in view.nodes), _rewrite_of_another_type),
    (lambda view: len(view.nodes) >= 2, _rewrite_of_two),
)


def invalid_request(draw: Draw, view: View) -> Invalid:
    """A deliberately invalid append for the session `view` shows, with the rule that refuses it."""
    dependent: list[Callable[[Draw, View], Invalid]] = [make for applies, make in _DEPENDENT if applies(view)]
    choice: int = draw(index(len(_FIXED) + len(dependent) + 1))
    if choice < len(_FIXED):
        invalid: Invalid = draw(_FIXED[choice])
        return invalid
    if choice == len(_FIXED):
        double: Invalid = draw(_DOUBLE)
        return double
    return dependent[choice - len(_FIXED) - 1](draw, view)


@st.composite
def invalid_requests(draw: st.DrawFn, view: View) -> Invalid:
    """A deliberately invalid append for the session `view` shows, with the rule that refuses it."""
    return invalid_request(draw, view)


@st.composite
def every_fixed_invalid_request(draw: st.DrawFn) -> list[Invalid]:
    """One of each log-independent invalid request, in a drawn order: a sweep, so a rule broken one way is met in
    every run (one draw among some thirty kinds per step met a given kind about once a run)."""
    return [draw(made) for made in draw(st.permutations(_FIXED), label="order")]


@st.composite
def forged_tool_result_rewrites(draw: st.DrawFn, view: View) -> Invalid:
    """SESSION-SURFACE-TOOL-RESULT.3 (needs a tool-result node on the surface)."""
    return forged_rewrite(generate.drawn(draw), view)


@st.composite
def incomplete_provenance_replacements(draw: st.DrawFn, view: View) -> Invalid:
    """SESSION-SURFACE-PROVENANCE.6 (needs a non-empty surface)."""
    return incomplete_provenance(generate.drawn(draw), view)


__all__ = ["DOUBLE_FAULTS", "REWRITE_CHANGES", "Invalid", "NonJson", "every_fixed_invalid_request", "forged_rewrite",
           "forged_tool_result_rewrites",
           "incomplete_provenance", "incomplete_provenance_replacements", "invalid_request", "invalid_requests"]
