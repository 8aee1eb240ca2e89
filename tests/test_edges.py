"""The fast forms' special cases (`sessionspec.testing.edges`): each met from both sides, and `live` answers as the model.

Issue 25: mutants of the store survived the whole oracle because no generator sent a top-level
float, a value deeper than the fast walk's depth, unordered provenance ending at the new seq, a
message with several fields of another shape, equal ids that are not strings, or lone surrogates
on both sides of a tool-result rewrite. Each class has a test here that fails when `live`
mishandles it (each checked by hand on the mutant named in mutation/REPORT.md), and the
generators are held to producing both sides of every special case they claim.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from sessionspec import live, model
from sessionspec.jsontext import parse
from sessionspec.live.fasttext import FAST_BYTES
from sessionspec.testing import edges
from sessionspec.testing.builders import replace_op, tool_result, user_message
from sessionspec.testing.choose import seeded
from sessionspec.testing.implementations import factory
from sessionspec.testing.strategies import View
from sessionspec.wire.compare import differences
from sessionspec.wire.executor import Executor
from sessionspec.wire.protocol import dumps
from sessionspec.wire.serve import answer_line

CREATE = {"op": "create", "id": "s", "seed": None, "header": None}
START = [CREATE, *[{"op": "append", "type": "plugin/note", "data": {"n": n}} for n in range(6)],
         {"op": "append", "type": "user/message", "data": user_message("u1"), "surfaceOp": "append"},
         {"op": "append", "type": "tool/result", "data": tool_result("c1", message_id="r\ud800"), "surfaceOp": "append"}]
"""A session with a log to point back at, a node and a tool result whose kept form holds a lone surrogate."""


def _line(request: Any) -> bytes:
    return request.encode("utf-8", "surrogatepass") if isinstance(request, str) else dumps(request)


def _both(lines: list[bytes]) -> list[tuple[Any, Any]]:
    """Each line answered by the model and by live, in one session each, with one clock."""
    sides = [Executor(factory(name), name) for name in ("model", "live")]
    answers = []
    for line in [dumps(CREATE), *lines]:
        expected, actual = (parse(answer_line(side, line)) for side in sides)
        answers.append((expected, actual))
    return answers[1:]


def _agree(lines: list[bytes]) -> list[Any]:
    """The model's answers, after requiring live's to be the same (rules and times too)."""
    out = []
    for line, (expected, actual) in zip(lines, _both(lines), strict=True):
        assert not differences("append", expected, actual, rules=True, time=True), (line[:300], expected, actual)
        out.append(expected)
    return out


def test_every_special_case_names_a_generator_and_every_generator_a_case() -> None:
    named = {name.strip() for _, _, generators in edges.SPECIAL_CASES for name in generators.split(",")}
    assert set(edges.EDGES) <= named, set(edges.EDGES) - named
    assert all(generators for _, _, generators in edges.SPECIAL_CASES)


@pytest.mark.parametrize("name", sorted(edges.EDGES))
def test_each_generator_meets_its_case_from_both_sides_and_live_answers_as_the_model(name: str) -> None:
    """Accepted and refused requests both, within 60 draws (long lines: both sides of the fast reader's bound, within
    8); live gives the model's answer to each."""
    sides = [Executor(factory(side), side) for side in ("model", "live")]
    verdicts: Counter[bool] = Counter()
    for seed in range(8 if name == "long_lines" else 60):
        if seed % 20 == 0:
            for side in sides:
                for request in START:
                    side.run(dict(request))
        snapshot = sides[0].run({"op": "snapshot"})
        view = View(tuple(snapshot["events"]), tuple(snapshot["surface"]["nodes"]))
        line = _line(edges.EDGES[name](seeded(seed), view))
        expected, actual = (parse(answer_line(side, line)) for side in sides)
        assert not differences("append", expected, actual, rules=True, time=True), (line[:300], expected, actual)
        assert expected["ok"] or expected["error"]["kind"] != "internal", (line[:300], expected)
        verdicts[len(line) > FAST_BYTES if name == "long_lines" else bool(expected["ok"])] += 1
    assert verdicts[True] and verdicts[False], f"{name}: {dict(verdicts)}"


def test_top_level_scalars_are_logged_as_themselves() -> None:
    """`owned` returns a top-level scalar without a walk: a float (or any scalar) must be logged as sent, not null."""
    requests = [{"op": "append", "type": "plugin/note", "data": value} for value in edges.SCALARS]
    answers = _agree([dumps(r) for r in requests])
    assert [a["event"]["data"] for a in answers] == list(edges.SCALARS)


@pytest.mark.parametrize("depth", [63, 64, 65, 66, 100, 1_023, 1_024, 1_025, 2_000])
def test_values_around_every_walkers_depth_limit_are_logged_or_refused_by_their_rule(depth: int) -> None:
    """The fast walk hands over at 64 levels, recursion ends near 1,000, orjson (the line reader) at 1,024: a value on
    either side of each is logged as sent (log-only data), or refused by its own rule (a surface event without a
    surfaceOp, and the places whose refusal message shows the value), never `internal`."""
    lines = [(template % edges.nested_text(depth, shape, "0.5")).encode() for _, template in edges.DEEP_PLACES
             for shape in ("object", "array", "alternating")]
    for answer in _agree(lines):
        assert answer["ok"] or answer["error"]["kind"] != "internal", answer["error"]


def test_deep_values_in_every_refused_field_are_refused_by_its_rule() -> None:
    """A refusal's message shows the refused value; one nested 1,500 deep made the message raise RecursionError
    (`internal`, or not, by how deep the stack was) in the reference itself: each place named here."""
    deep = edges.nested_text(1_500, "array", "1")
    templates = {
        "SESSION-EVENT-ENVELOPE.2": '{"op":"append","type":%s,"data":{}}',
        "SESSION-EVENT-ENVELOPE.6": '{"op":"append","type":"plugin/note","data":{},"ignorable":%s}',
        "SESSION-FORMAT-HEADER.3": '{"op":"create","id":%s,"seed":null,"header":null}',
        "SESSION-FORMAT-HEADER.2": '{"op":"create","id":"s","seed":null,"header":{"version":%s,"id":"s","createdAt":1}}',
        "SESSION-FORMAT-HEADER.5": '{"op":"create","id":"s","seed":null,"header":{"version":0,"id":"s","createdAt":1,"cwd":%s}}',
        "SESSION-EVENT-ENVELOPE.3": '{"op":"create","id":"s","seed":[{"type":"turn/start","seq":%s,"time":1,"data":{}}],'
                                    '"header":null}',
        "SESSION-EVENT-ENVELOPE.4": '{"op":"create","id":"s","seed":[{"type":"turn/start","seq":0,"time":%s,"data":{}}],'
                                    '"header":null}',
    }
    for rule, template in templates.items():
        (answer,) = _agree([(template % deep).encode()])
        assert not answer["ok"] and answer["error"]["rule"] == rule, (rule, answer)
    for _, template in edges.DEEP_PLACES[3:]:
        (answer,) = _agree([(template % deep).encode()])
        assert answer["error"]["rule"] in ("SESSION-SURFACE-PROVENANCE.3", "SESSION-SURFACE-PROJECTION.4"), answer


@pytest.mark.parametrize(("sources", "seq"), [([1, 0], 1), ([0, 1], 1), ([1], 1), ([3, 1, 2], 3), ([2, 0, 1], 3),
                                              ([2, 3], 3), ([2, 3, 4], 5), ([2, 3, 4], 4), ([4, 3, 2], 5),
                                              ([0, 2, 1, 0], 3), ([2, 3.0], 4), ([2.0, 3], 4), ([True, 0], 2),
                                              ([0, True], 2), ([2, -1], 3), ([-1, 2], 3), ([], 2)])
def test_provenance_in_any_order_at_the_new_seq(sources: list[Any], seq: int) -> None:
    """`sources_hold` special-cases one source, a run from above 1, an ascending list, and any other order: each
    ending at, below or past the new seq, with a bool, a float equal to an int, a duplicate or a negative seq."""
    notes = [{"op": "append", "type": "plugin/note", "data": {}}] * seq
    request = {"op": "append", "type": "user/message", "data": user_message("u9"), "surfaceOp": "append",
               "sourceEventSeqs": sources}
    *_, answer = _agree([dumps(r) for r in [*notes, request]])
    valid = (bool(sources) and all(type(s) is int and 0 <= s < seq for s in sources) and len(set(sources)) == len(sources))
    assert answer["ok"] == valid, (sources, seq, answer)


SHAPES: dict[str, Any] = {
    "a user message nested as the others are": {"turn": 1, "step": 1, "message": user_message("u1")},
    "a user message shaped as an assistant message": {"turn": 1, "step": 1, "message": {
        "id": "a1", "role": "assistant", "source": {"kind": "model", "provider": "p", "model": "m"}, "content": []}},
    "a user message nested and flat at once": {**user_message("u1"), "message": user_message("u2")},
    "an assistant message flat": {"id": "a1", "role": "assistant", "source": {"kind": "model", "provider": "p",
                                                                              "model": "m"}, "content": []},
    "a tool result flat": tool_result("c1")["message"],
    "an assistant message holding a tool result": tool_result("c1"),
}


@pytest.mark.parametrize("event_type", ["user/message", "assistant/message", "tool/result"])
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_messages_of_another_shape_in_several_fields_at_once(event_type: str, shape: str) -> None:
    """`message_shape_holds` reads the message at data (user) or data.message (the others): a message shaped for
    another type in several fields at once (nesting, role, source, content) is decided as the model decides it."""
    _agree([dumps({"op": "append", "type": event_type, "data": SHAPES[shape], "surfaceOp": "append"})])


@pytest.mark.parametrize(("call", "block"), [(5, 5), (0, 0), (True, True), (1, True), (1, 1.0), (None, None),
                                             ([], []), (["c1"], ["c1"]), ({"c": 1}, {"c": 1}), ("5", 5), ("", ""),
                                             ("c1", "c1")])
def test_tool_call_ids_that_match_but_are_not_strings(call: Any, block: Any) -> None:
    """SESSION-MESSAGE-SHAPE.6 wants a non-empty string callId; .8 the block's toolCallId equal to it. Equal ids that
    are not strings (5 and 5, 1 and True) pass the equality and must still be refused for their type."""
    data = tool_result("c1")
    data["message"]["source"]["callId"] = call
    data["message"]["content"][0]["toolCallId"] = block
    (answer,) = _agree([dumps({"op": "append", "type": "tool/result", "data": data, "surfaceOp": "append"})])
    assert answer["ok"] == (call == "c1"), answer


@pytest.mark.parametrize(("target_id", "rewrite_id", "valid"), [("r\ud800", "r\ud800", True), ("r\ud800", "r\udfff", False),
                                                                ("r\ud800", "r", False), ("r", "r\ud800", False),
                                                                ("\udc00", "\udc00", True)])
def test_lone_surrogates_on_both_sides_of_a_tool_result_rewrite(target_id: str, rewrite_id: str, valid: bool) -> None:
    """`rewrite_keeps` compares canonical bytes, which a lone surrogate cannot be written as: the reference decides."""
    target = tool_result("c1", "output", message_id=target_id)
    rewrite = tool_result("c1", "[pruned]", message_id=rewrite_id)
    requests = [{"op": "append", "type": "tool/result", "data": target, "surfaceOp": "append"},
                {"op": "append", "type": "tool/result", "data": rewrite, "surfaceOp": replace_op(0, 0),
                 "sourceEventSeqs": [0]}]
    _, answer = _agree([dumps(r) for r in requests])
    assert answer["ok"] == valid, answer


def test_the_model_and_live_share_the_api() -> None:
    assert {"append", "append_request", "complete_log", "derive_messages", "transcript"} <= set(dir(live.Session))
    assert {"append", "append_request", "complete_log", "derive_messages", "transcript"} <= set(dir(model.Session))
