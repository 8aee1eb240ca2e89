"""Example values in the shapes of spec/02: the messages, blocks and markers tests and examples write.

One statement of each shape, so that a test, an agent loop, a conformance vector and the demo all
build the same user message the same way, and a change to a shape (a new required field) is made
here once. Each builder returns a new plain JSON value (`dict`/`list`, never frozen and never
shared with an earlier call), with its keys in the order the upstream writes them: the
conformance vectors are generated from these values and compared byte for byte.

What a builder returns is valid; a test that needs an invalid value starts from a valid one and
changes one thing (`with_change`), so the one thing is all that can make it fail.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from sessionspec.envelope import Replace
from sessionspec.jsonvalue import Json, thaw

Data = dict[str, Any]
"""A JSON object, as a builder returns it: plain, the caller's own to change."""

CONFIG: Final = {"provider": "deepseek", "model": "deepseek-chat"}
"""A request header's `config`: the provider and model every example talks to. Copy before changing."""
MODEL_SOURCE: Final = {"kind": "model", **CONFIG}
"""An assistant message's `source` (SESSION-MESSAGE-SHAPE.5). Copy before changing."""
REMOVED: Final[Any] = object()
"""For `with_change`: remove the key (or item) at the path instead of setting it."""


def text_block(text: str) -> Data:
    """A `text` content block; content blocks other than the tool-result block are not checked (spec/02)."""
    return {"type": "text", "text": text}


def user_message(message_id: str = "u1", text: str = "hi", *, kind: str = "user", plugin: str | None = None) -> Data:
    """The data of a `user/message` event, which is its message itself: `{id, role, source, content}`.

    SESSION-MESSAGE-SHAPE.1-.4: a non-empty `id`, `role` "user", a `source` with a non-empty `kind`
    (a plugin-written message names its plugin too), and `content` an array (one text block here).
    """
    source: Data = {"kind": kind} if plugin is None else {"kind": kind, "plugin": plugin}
    return {"id": message_id, "role": "user", "source": source, "content": [text_block(text)]}


def compaction_summary(message_id: str, text: str) -> Data:
    """The user message a compaction writes in place of the range it summarises (a replace's data)."""
    return user_message(message_id, text, kind="plugin", plugin="compaction")


def tool_call_block(call_id: str = "c1", name: str = "read_file", arguments: str = "{}") -> Data:
    """A `tool-call` block of an assistant message: the call a `tool/call` records and a `tool/result` answers."""
    return {"type": "tool-call", "id": call_id, "name": name, "arguments": arguments}


def assistant_message(message_id: str = "a1", content: Sequence[Json] | None = None, *, turn: Json = 1,
                      step: Json = 1) -> Data:
    """The data of an `assistant/message` event: `{turn, step, message}`.

    SESSION-MESSAGE-SHAPE.5: the message's source is the model (`kind` "model", with `provider` and
    `model`). `content` defaults to one text block; `[]` is a usage-only message, a node that
    projects to no message (SESSION-SURFACE-PROJECTION.5).
    """
    blocks = [text_block("ok")] if content is None else thaw(list(content))
    return {"turn": turn, "step": step,
            "message": {"id": message_id, "role": "assistant", "source": dict(MODEL_SOURCE), "content": blocks}}


def tool_call(call_id: str = "c1", *, turn: Json = 1, step: Json = 1, name: str = "read_file",
              arguments: str = "{}") -> Data:
    """The data of a `tool/call` event (log-only): the harness records that it ran a call of the open step."""
    return {"turn": turn, "step": step, "callId": call_id, "name": name, "arguments": arguments}


def tool_result(call_id: str = "c1", text: str = "out", *, message_id: str = "r1", turn: Json = 1, step: Json = 1,
                **block_fields: Json) -> Data:
    """The data of a `tool/result` event: `{turn, step, message}`, the message answering `call_id`.

    SESSION-MESSAGE-SHAPE.6: the source is the tool, naming the call (`callId`).
    SESSION-MESSAGE-SHAPE.7: exactly one tool-result block, whose inner `content` is an array.
    SESSION-MESSAGE-SHAPE.8: the block's `toolCallId` is the source's `callId`.
    `block_fields` (such as `isError`) follow the block's `content`.
    """
    block = {"type": "tool-result", "toolCallId": call_id, "content": [text_block(text)], **block_fields}
    return {"turn": turn, "step": step, "message": {"id": message_id, "role": "user",
                                                    "source": {"kind": "tool", "callId": call_id}, "content": [block]}}


def pruned(data: Json, text: str = "[pruned]") -> Data:
    """`data` of a `tool/result` with only its block's inner content replaced: the one change a rewrite may make.

    SESSION-SURFACE-TOOL-RESULT.3: everything else (turn, step, error, meta, the message id, role and
    source, the block's other keys) stays identical, so this is a valid replace of that result.
    """
    out: Data = thaw(data)
    out["message"]["content"][0]["content"] = [text_block(text)]
    return out


def request_header(config: Json = None, *, reason: str = "initial", **header_fields: Json) -> Data:
    """The data of a `request/header` event: `{header: {config, ...header_fields}, reason}`.

    SESSION-REQUEST-HEADER.1: `config` (default `CONFIG`) names a non-empty `provider` and `model`;
    `header_fields` are `adapterDefaults`, `system` or `tools`. SESSION-REQUEST-HEADER.4: `reason`
    is never the legacy "fallback".
    """
    chosen = dict(CONFIG) if config is None else thaw(config)
    return {"header": {"config": chosen, **header_fields}, "reason": reason}


def replace_op(start: int, end: int) -> Data:
    """The replace `surfaceOp`, `{op: "replace", start, end}`: shadow the surface range from node `start` to `end`.

    SESSION-SURFACE-PROJECTION.4 gives the shape; SESSION-SURFACE-REPLACE.1-.2 what the endpoints must name.
    """
    return Replace(start, end).to_json()


def envelope(event_type: Json, seq: Json, data: Json, *, time: Json = 0, **fields: Json) -> Data:
    """An event as JSON, `{type, seq, time, data, ...fields}` (spec/02, the envelope): a seed entry, a stored line.

    `fields` (`sourceEventSeqs`, `surfaceOp`, `ignorable`, or a key the envelope refuses) follow in
    the order given; the canonical order is `sourceEventSeqs, surfaceOp, ignorable`.
    """
    return {"type": event_type, "seq": seq, "time": time, "data": data, **fields}


def with_change(data: Json, path: Sequence[str | int], value: Json) -> Any:
    """A plain copy of `data` (frozen or not) with the value at `path` set to `value`, or removed if it is `REMOVED`.

    The near miss of a valid example: exactly one thing differs, so a rejection can only be that
    thing's rule. A key that is set keeps its place; a new key goes last.
    """
    out = thaw(data)
    target: Any = out
    for key in path[:-1]:
        target = target[key]
    if value is REMOVED:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return out
