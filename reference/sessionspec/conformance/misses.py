"""Near misses: more ways to break a rule that has its pair, each alone, so a store's fast check must miss none.

Split from `cases` (which lists them with the pairs and scenarios): every condition of every message
shape, the envelope's and the surface marker's, and values only `x-append` can carry.
"""

from __future__ import annotations

import json
from typing import Any

from sessionspec.conformance.cases import NOTE, TURN, Case, Request, Step, append, create
from sessionspec.testing.builders import REMOVED, assistant_message, replace_op, tool_result, user_message, with_change

Miss = tuple[str, str, tuple[Step, ...], Step]
"""(rule, what is broken, setup, the request that breaks it): one more way to break a rule that has its pair."""


def _message_misses() -> list[Miss]:
    """SESSION-MESSAGE-SHAPE, every condition of every shape broken alone (a store's fast check must miss none)."""
    fresh: tuple[Step, ...] = (create(),)
    u, a, r = user_message("u1", "hello"), assistant_message(), tool_result("c1", "output")
    m, block = ("message",), ("message", "content", 0)
    user = [("9", "data-not-an-object", "hello"), ("1", "id-missing", with_change(u, ("id",), REMOVED)),
            ("1", "id-not-a-string", with_change(u, ("id",), 7)), ("2", "role-missing", with_change(u, ("role",), REMOVED)),
            ("2", "role-after-user", with_change(u, ("role",), "zebra")), ("2", "role-not-a-string", with_change(u, ("role",), 1)),
            ("3", "source-missing", with_change(u, ("source",), REMOVED)), ("3", "source-a-string", with_change(u, ("source",), "user")),
            ("3", "source-kind-missing", with_change(u, ("source",), {})),
            ("3", "source-kind-not-a-string", with_change(u, ("source",), {"kind": 1})),
            ("4", "content-missing", with_change(u, ("content",), REMOVED)), ("4", "content-an-object", with_change(u, ("content",), {}))]
    assistant = [("9", "data-not-an-object", [a]), ("9", "message-missing", with_change(a, m, REMOVED)),
                 ("1", "message-id-missing", with_change(a, (*m, "id"), REMOVED)),
                 ("2", "role-user", with_change(a, (*m, "role"), "user")),
                 ("2", "role-before-assistant", with_change(a, (*m, "role"), "admin")),
                 ("5", "source-kind-user", with_change(a, (*m, "source", "kind"), "user")),
                 ("5", "provider-missing", with_change(a, (*m, "source", "provider"), REMOVED)),
                 ("5", "provider-not-a-string", with_change(a, (*m, "source", "provider"), 7)),
                 ("5", "model-missing", with_change(a, (*m, "source", "model"), REMOVED)),
                 ("5", "model-empty", with_change(a, (*m, "source", "model"), "")),
                 ("5", "model-not-a-string", with_change(a, (*m, "source", "model"), ["m"]))]
    tool = [("2", "role-assistant", with_change(r, (*m, "role"), "assistant")),
            ("6", "call-id-missing", with_change(r, (*m, "source", "callId"), REMOVED)),
            ("6", "call-id-empty", with_change(r, (*m, "source", "callId"), "")),
            ("6", "call-id-not-a-string", with_change(r, (*m, "source", "callId"), 1)),
            ("6", "call-ids-both-empty", tool_result("", "output")),
            ("7", "no-block", with_change(r, (*m, "content"), [])),
            ("7", "two-blocks", with_change(r, (*m, "content"), [*r["message"]["content"], *r["message"]["content"]])),
            ("7", "block-not-an-object", with_change(r, block, "output")),
            ("7", "block-of-another-type", with_change(r, (*block, "type"), "text")),
            ("7", "block-content-missing", with_change(r, (*block, "content"), REMOVED)),
            ("8", "tool-call-id-missing", with_change(r, (*block, "toolCallId"), REMOVED)),
            # Equal ids that are not strings: the comparison of the two holds, the type check must refuse them.
            ("6", "call-ids-both-the-number-5", with_change(with_change(r, (*m, "source", "callId"), 5), (*block, "toolCallId"), 5)),
            ("6", "call-ids-one-and-true", with_change(with_change(r, (*m, "source", "callId"), 1), (*block, "toolCallId"), True))]
    # Several fields of another shape at once: each message is whole, but nested (or not) as another type's is.
    swapped = [("user/message", "1", "user-nested-as-the-others-are", {"turn": 1, "step": 1, "message": u}),
               ("user/message", "1", "user-shaped-as-an-assistant-message", a),
               ("assistant/message", "9", "assistant-flat", a["message"]),
               ("assistant/message", "2", "assistant-holding-a-tool-result", r),
               ("tool/result", "9", "tool-flat", r["message"]),
               ("tool/result", "2", "tool-holding-an-assistant-message", a)]
    return [*((f"SESSION-MESSAGE-SHAPE.{n}", f"user-{why}", fresh, append("user/message", data, "append"))
              for n, why, data in user),
            *((f"SESSION-MESSAGE-SHAPE.{n}", f"assistant-{why}", fresh, append("assistant/message", data, "append"))
              for n, why, data in assistant),
            *((f"SESSION-MESSAGE-SHAPE.{n}", f"tool-{why}", fresh, append("tool/result", data, "append"))
              for n, why, data in tool),
            *((f"SESSION-MESSAGE-SHAPE.{n}", why, fresh, append(kind, data, "append")) for kind, n, why, data in swapped)]


def _envelope_misses() -> list[Miss]:
    """The append request, its flags and its provenance: each broken in a way the pairs above do not."""
    fresh: tuple[Step, ...] = (create(),)
    u, u2, r = user_message("u1", "hello"), user_message("u2", "hello"), tool_result("c1", "output")
    return [
        ("SESSION-EVENT-ENVELOPE.6", "one", fresh, append(NOTE, {}, ignorable=1)),
        ("SESSION-EVENT-ENVELOPE.6", "a-string", fresh, append(NOTE, {}, ignorable="true")),
        ("SESSION-EVENT-ENVELOPE.6", "null", fresh, append(NOTE, {}, ignorable=None)),
        ("SESSION-EVENT-ENVELOPE.7", "assistant", fresh, append("assistant/message", assistant_message(), "append",
                                                                 ignorable=True)),
        ("SESSION-EVENT-ENVELOPE.7", "tool-result", fresh, append("tool/result", r, "append", ignorable=True)),
        ("SESSION-EVENT-ENVELOPE.1", "an-unknown-key", fresh, append("user/message", u, "append", extra=1)),
        ("SESSION-EVENT-ENVELOPE.2", "type-missing", fresh, {"op": "append", "data": {}}),
        ("SESSION-EVENT-ENVELOPE.2", "type-not-a-string", fresh, append(7, {})),  # type: ignore[arg-type]
        ("SESSION-SURFACE-PROJECTION.1", "null-surface-op", fresh, {"op": "append", "type": NOTE, "data": {}, "surfaceOp": None}),
        ("SESSION-SURFACE-PROJECTION.2", "null-sources", fresh,
         {"op": "append", "type": NOTE, "data": {}, "sourceEventSeqs": None}),
        ("SESSION-SURFACE-PROJECTION.4", "null-surface-op", fresh,
         {"op": "append", "type": "user/message", "data": u, "surfaceOp": None}),
        ("SESSION-SURFACE-PROJECTION.4", "surface-op-an-object", fresh, append("user/message", u, {"op": "append"})),
        ("SESSION-SURFACE-PROJECTION.4", "replace-with-an-extra-key", TURN,
         append("user/message", u2, {"op": "replace", "start": 1, "end": 1, "note": 0}, [1])),
        ("SESSION-SURFACE-PROJECTION.4", "replace-keys-with-op-append", TURN,
         append("user/message", u2, {"op": "append", "start": 1, "end": 1}, [1])),
        ("SESSION-SURFACE-PROJECTION.4", "replace-keys-with-op-splice", TURN,
         append("user/message", u2, {"op": "splice", "start": 1, "end": 1}, [1])),
        ("SESSION-SURFACE-PROJECTION.4", "replace-from-a-negative-start", TURN,
         append("user/message", u2, {"op": "replace", "start": -1, "end": 1}, [1])),
        ("SESSION-SURFACE-PROJECTION.4", "replace-to-a-negative-end", TURN,
         append("user/message", u2, {"op": "replace", "start": 1, "end": -1}, [1])),
        # Endpoints equal to a node's seq but not ints: a fast form that checks only the range takes them.
        ("SESSION-SURFACE-PROJECTION.4", "replace-from-a-float-start", TURN,
         append("user/message", u2, {"op": "replace", "start": 1.0, "end": 3}, [1, 3])),
        ("SESSION-SURFACE-PROJECTION.4", "replace-from-a-true-start", TURN,
         append("user/message", u2, {"op": "replace", "start": True, "end": 3}, [1, 3])),
        ("SESSION-SURFACE-PROJECTION.4", "replace-to-a-float-end", TURN,
         append("user/message", u2, {"op": "replace", "start": 1, "end": 3.0}, [1, 3])),
        ("SESSION-SURFACE-PROJECTION.4", "replace-to-a-false-end", (create(), append("user/message", u, "append")),
         append("user/message", u2, {"op": "replace", "start": 0, "end": False}, [0])),
        ("SESSION-SURFACE-PROJECTION.4", "replace-without-an-end", TURN,
         append("user/message", u2, {"op": "replace", "start": 1}, [1])),
        ("SESSION-SURFACE-PROVENANCE.1", "null", TURN,
         {"op": "append", "type": "user/message", "data": u2, "surfaceOp": "append", "sourceEventSeqs": None}),
        ("SESSION-SURFACE-PROVENANCE.1", "an-object", TURN, append("user/message", u2, "append", {"0": 1})),
        ("SESSION-SURFACE-PROVENANCE.2", "tool-result", TURN, append("tool/result", r, "append", [])),
        ("SESSION-SURFACE-PROVENANCE.3", "negative", TURN, append("user/message", u2, "append", [-1])),
        ("SESSION-SURFACE-PROVENANCE.3", "a-float", TURN, append("user/message", u2, "append", [1.5])),
        ("SESSION-SURFACE-PROVENANCE.3", "a-string", TURN, append("user/message", u2, "append", ["1"])),
        ("SESSION-SURFACE-PROVENANCE.3", "negative-after-valid", TURN, append("user/message", u2, "append", [0, -1])),
        ("SESSION-SURFACE-PROVENANCE.3", "negative-run", TURN, append("user/message", u2, "append", [-1, 0])),
        ("SESSION-SURFACE-PROVENANCE.3", "a-float-first-of-two", TURN, append("user/message", u2, "append", [2.5, 3])),
        ("SESSION-SURFACE-PROVENANCE.4", "apart", TURN, append("user/message", u2, "append", [1, 3, 1])),
        ("SESSION-SURFACE-PROVENANCE.5", "far-future", TURN, append("user/message", u2, "append", [0, 100])),
        ("SESSION-SURFACE-PROVENANCE.5", "all-future", TURN, append("user/message", u2, "append", [100])),
        ("SESSION-SURFACE-PROVENANCE.5", "ascending-to-the-new-seq", TURN, append("user/message", u2, "append", [0, 7])),
        ("SESSION-SURFACE-PROVENANCE.5", "a-run-to-the-new-seq", TURN, append("user/message", u2, "append", [5, 6, 7])),
        ("SESSION-SURFACE-PROVENANCE.5", "far-future-first", TURN, append("user/message", u2, "append", [100, 0])),
        ("SESSION-SURFACE-PROVENANCE.5", "far-future-last-of-three", TURN, append("user/message", u2, "append", [0, 1, 100])),
        ("SESSION-SURFACE-PROVENANCE.5", "the-new-seq", fresh, append("assistant/message", assistant_message(), "append", [0])),
        # Out of order and ending at the new seq: neither ascending nor far in the future.
        ("SESSION-SURFACE-PROVENANCE.5", "unordered-to-the-new-seq", (create(), append("turn/start", {"turn": 1})),
         append("user/message", u2, "append", [1, 0])),
        ("SESSION-SURFACE-PROVENANCE.5", "descending-from-the-new-seq", TURN, append("user/message", u2, "append", [7, 3, 1])),
        ("SESSION-SURFACE-PROVENANCE.3", "a-float-last-of-a-run", TURN, append("user/message", u2, "append", [2, 3.0])),
        ("SESSION-SURFACE-PROVENANCE.3", "a-bool-after-a-seq", TURN, append("user/message", u2, "append", [3, True])),
    ]


def _surface_misses() -> list[Miss]:
    """Replaces a fast form could let through: each valid but for the one rule it names.

    A rewrite of the one result that starts its range, with the result's kept form, refused only
    because the range holds a second node (SESSION-SURFACE-TOOL-RESULT.1). A rewrite whose target
    is a user/message whose data also holds a tool result (extra keys are allowed), so the two have
    the same kept form (.3 holds) and only .2, what the target is, refuses it.
    """
    both = {**tool_result("c1", "output"), **user_message("u9", "hi")}
    holds_a_result = (create(), append("turn/start", {"turn": 1}), append("user/message", both, "append"))
    after_the_result = (*TURN, append("user/message", user_message("u2", "hello"), "append"))  # surface [1, 3, 5, 7]
    return [
        ("SESSION-SURFACE-TOOL-RESULT.1", "a-result-and-the-next-node", after_the_result,
         append("tool/result", tool_result("c1", ""), replace_op(5, 7), [5, 7])),
        ("SESSION-SURFACE-TOOL-RESULT.2", "a-user-message-holding-a-result", holds_a_result,
         append("tool/result", both, replace_op(1, 1), [1])),
        ("SESSION-SURFACE-TOOL-RESULT.3", "lone-surrogates-on-both-sides", LONE_RESULT,
         append("tool/result", tool_result("c1", "", message_id="r\udfff"), replace_op(0, 0), [0])),
        ("SESSION-SURFACE-TOOL-RESULT.3", "a-lone-surrogate-dropped", LONE_RESULT,
         append("tool/result", tool_result("c1", "", message_id="r"), replace_op(0, 0), [0])),
    ]


LONE_RESULT: tuple[Step, ...] = (create(), append("tool/result", tool_result("c1", "output", message_id="r\ud800"), "append"))
"""A tool result whose message id is a lone surrogate: what a rewrite keeps has no canonical bytes (orjson refuses it)."""


def nested(depth: int, shape: str = "object") -> str:
    """The JSON text of a value nested `depth` levels of objects or arrays around `1` (no recursion)."""
    return ('{"a":' * depth + "1" + "}" * depth) if shape == "object" else "[" * depth + "1" + "]" * depth


def _deep_misses() -> list[Miss]:
    """Values nested past the fast walk's recursion (about 1,000 levels) and the line reader's orjson limit (1,024),
    as raw lines, refused after the lossless copy: by their own rule, never `internal` (the store's walk must hand
    them to the iterative copy; a refusal's message must not recurse into them)."""
    fresh: tuple[Step, ...] = (create(),)
    head = '{"op":"append","type":"user/message","data":'
    return [
        ("SESSION-SURFACE-PROJECTION.3", "data-nested-past-the-recursion-limit", fresh, head + nested(2_000) + "}"),
        ("SESSION-SURFACE-PROJECTION.3", "data-nested-past-the-line-readers-limit", fresh,
         head + nested(1_025, "array") + "}"),
        ("SESSION-EVENT-ENVELOPE.6", "ignorable-nested-past-the-recursion-limit", fresh,
         '{"op":"append","type":"plugin/note","data":{},"ignorable":' + nested(1_500, "array") + "}"),
    ]


def _accepting() -> list[Miss]:
    """The other side of the special cases above: what a store's fast form must still accept, and log as sent.

    Every kind of top-level scalar (the lossless copy returns them without a walk), values nested past the walk's
    hand-over depth (64), provenance out of order below the new seq, a user message with a tool's source, and a
    rewrite that keeps a lone surrogate where the result had it.
    """
    fresh: tuple[Step, ...] = (create(),)
    scalars = (0.5, -2.25, 1.0, 1e308, 5e-324, 0.0, 0, -1, 9007199254740991, -9007199254740991, "", "\ud800", True,
               False, None)
    deep = [json.loads(nested(depth, shape)) for depth, shape in ((65, "object"), (66, "array"), (67, "object"))]
    u2 = user_message("u2", "hello")
    return [
        ("SESSION-LOSSLESS-JSON.3", "top-level-scalars", (create(), *(append(NOTE, v) for v in scalars[:-1])),
         append(NOTE, scalars[-1])),
        ("SESSION-LOSSLESS-JSON.7", "nested-past-the-fast-walk", (create(), *(append(NOTE, v) for v in deep[:-1])),
         append(NOTE, deep[-1])),
        ("SESSION-SURFACE-PROVENANCE.5", "unordered-below-the-new-seq", TURN, append("user/message", u2, "append", [6, 0, 3])),
        ("SESSION-SURFACE-PROVENANCE.5", "descending-run-below-the-new-seq", TURN,
         append("user/message", u2, "append", [6, 5, 4])),
        ("SESSION-MESSAGE-SHAPE.3", "user-message-with-a-tool-source", fresh,
         append("user/message", tool_result("c1", "output")["message"], "append")),
        ("SESSION-SURFACE-TOOL-RESULT.3", "lone-surrogates-kept-on-both-sides", LONE_RESULT,
         append("tool/result", tool_result("c1", "[pruned]", message_id="r\ud800"), replace_op(0, 0), [0])),
    ]


def x_append(event_type: str, data: Any) -> Request:
    """`append` through the `x-append` op (x-inprocess): `data` may hold tagged values (`{"$int": "..."}`)."""
    return {"op": "x-append", "request": {"type": event_type, "data": data}}


def _value_misses() -> list[Miss]:
    """SESSION-LOSSLESS-JSON: values JSON text cannot carry, sent as tagged values through `x-append`.

    A request line never holds them (the lossless text reader refuses an unsafe integer or -0
    first), but an implementation that takes objects must refuse them itself. Each sits where a
    store's fast copy decides it alone: the data itself, or the one child of an object. A testee
    without x-inprocess answers `unsupported`, and the step is skipped.
    """
    fresh: tuple[Step, ...] = (create(),)
    return [
        ("SESSION-LOSSLESS-JSON.1", "a-tuple", fresh, x_append(NOTE, {"$tuple": [1]})),
        ("SESSION-LOSSLESS-JSON.2", "unsafe-int", fresh, x_append(NOTE, {"$int": str(2**53)})),
        ("SESSION-LOSSLESS-JSON.2", "unsafe-negative-int", fresh, x_append(NOTE, {"$int": str(-(2**53))})),
        ("SESSION-LOSSLESS-JSON.2", "unsafe-int-in-an-object", fresh, x_append(NOTE, {"n": {"$int": str(2**53)}})),
        ("SESSION-LOSSLESS-JSON.3", "nan", fresh, x_append(NOTE, {"x": [{"$float": "nan"}]})),
        ("SESSION-LOSSLESS-JSON.4", "negative-zero", fresh, x_append(NOTE, {"$float": "-0.0"})),
        ("SESSION-LOSSLESS-JSON.5", "an-int-key", fresh, x_append(NOTE, {"$pairs": [[1, "v"]]})),
        ("SESSION-LOSSLESS-JSON.1", "a-tuple-in-an-object", fresh, x_append(NOTE, {"x": {"$tuple": [1]}})),
        ("SESSION-LOSSLESS-JSON.1", "bytes-in-a-list", fresh, x_append(NOTE, [1, {"$bytes": "00"}])),
        ("SESSION-LOSSLESS-JSON.4", "negative-zero-in-a-list", fresh, x_append(NOTE, [0.5, {"$float": "-0.0"}])),
    ]


def misses() -> list[Case]:
    labelled = [*((miss, "near miss") for miss in (*_message_misses(), *_envelope_misses(), *_surface_misses())),
                *((miss, "through x-append") for miss in _value_misses()),
                *((miss, "nested deep") for miss in _deep_misses())]
    return [*(Case(f"{rule}-reject-{why}", (rule,), (*setup, bad), True, f"{label}: {why.replace('-', ' ')}")
              for (rule, why, setup, bad), label in labelled),
            *(Case(f"{rule}-accept-{why}", (rule,), (*setup, good), False, f"the other side: {why.replace('-', ' ')}")
              for rule, why, setup, good in _accepting())]
