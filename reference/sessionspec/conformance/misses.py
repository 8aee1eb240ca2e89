"""Near misses: more ways to break a rule that has its pair, each alone, so a store's fast check must miss none.

Split from `cases` (which lists them with the pairs and scenarios): every condition of every message
shape, the envelope's and the surface marker's, and values only `x-append` can carry.
"""

from __future__ import annotations

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
            ("8", "tool-call-id-missing", with_change(r, (*block, "toolCallId"), REMOVED))]
    return [*((f"SESSION-MESSAGE-SHAPE.{n}", f"user-{why}", fresh, append("user/message", data, "append"))
              for n, why, data in user),
            *((f"SESSION-MESSAGE-SHAPE.{n}", f"assistant-{why}", fresh, append("assistant/message", data, "append"))
              for n, why, data in assistant),
            *((f"SESSION-MESSAGE-SHAPE.{n}", f"tool-{why}", fresh, append("tool/result", data, "append"))
              for n, why, data in tool)]


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
    ]


def misses() -> list[Case]:
    labelled = [*((miss, "near miss") for miss in (*_message_misses(), *_envelope_misses(), *_surface_misses())),
                *((miss, "through x-append") for miss in _value_misses())]
    return [Case(f"{rule}-reject-{why}", (rule,), (*setup, bad), True, f"{label}: {why.replace('-', ' ')}")
            for (rule, why, setup, bad), label in labelled]
