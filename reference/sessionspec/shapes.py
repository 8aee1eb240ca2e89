"""What a payload must hold: spec/02's SESSION-MESSAGE-SHAPE and SESSION-REQUEST-HEADER.

A message is what a provider request is built from, so its shape is checked when the event is
appended or seeded (DESIGN decision 1), never later when the request is made: a log that loads is
a log whose every surface event can be sent. Each message names the field it found wrong
(`message.id is missing`), so a person reading a refusal knows what to change.
"""

from __future__ import annotations

from sessionspec.catalog import ASSISTANT_MESSAGE, REQUEST_HEADER, SURFACE_TYPES, TOOL_RESULT, USER_MESSAGE
from sessionspec.envelope import Event
from sessionspec.jsonvalue import Json, is_nonempty_str
from sessionspec.legacy import check_current
from sessionspec.rules import check


def message_of(event_type: str, data: Json) -> Json:
    """The message an event of a surface type carries: the data itself for user/message."""
    if event_type == USER_MESSAGE:
        return data
    return data.get("message") if isinstance(data, dict) else None


def json_type(value: Json) -> str:
    """A value's JSON type in words, for a refusal: the value itself may be large or secret."""
    if value is None or isinstance(value, bool):
        return "null" if value is None else "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "an empty string" if value == "" else "a string"
    return "an array" if isinstance(value, list) else "an object"


def field(holder: Json, path: str, want: str) -> str:
    """What is wrong with the field at `path` (its last part a key of `holder`): the words of a refusal.

    `holder` not an object, the key absent, or the value not what `want` says: each in the field's
    own name (`message.id is missing`), so the fix is plain without the spec open.
    """
    parent, _, key = path.rpartition(".")
    if not isinstance(holder, dict):
        return f"{parent or 'the value'} is {json_type(holder)}, not an object"
    if key not in holder:
        return f"{path} is missing"
    value = holder[key]
    shown = repr(value) if isinstance(value, str) and 0 < len(value) <= 40 else json_type(value)
    return f"{path} must be {want}, not {shown}"


def check_message_shape(event: Event, *, index: int | None = None) -> None:
    """SESSION-MESSAGE-SHAPE: the three surface types carry messages a provider request can hold."""
    seq, kind = event.seq, event.type
    message: Json = message_of(kind, event.data)
    at = "data" if kind == USER_MESSAGE else "data.message"
    # .9 The message is an object: derivation returns it (user/message: the data; the others: data.message), so
    # without one every later derivation fails or silently drops the node.
    where = field(event.data, at, "an object") if kind != USER_MESSAGE else f"data is {json_type(message)}, not an object"
    check(isinstance(message, dict), "SESSION-MESSAGE-SHAPE.9", f"{kind}: {where}", seq=seq, index=index)
    # .1 An identified message: derivation shares it by identity, and repair and replace name it.
    check(is_nonempty_str(message.get("id")), "SESSION-MESSAGE-SHAPE.1",
          f"{kind}: {field(message, at + '.id', 'a non-empty string')}", seq=seq, index=index)
    role = "assistant" if kind == ASSISTANT_MESSAGE else "user"
    # .2 The role follows the type: tool results travel as user-role messages.
    check(message.get("role") == role and type(message.get("role")) is str, "SESSION-MESSAGE-SHAPE.2",
          f'{kind}: {field(message, at + ".role", f"{role!r}")}', seq=seq, index=index)
    source: Json = message.get("source")
    # .3 The source says who produced the message.
    check(isinstance(source, dict) and is_nonempty_str(source.get("kind")), "SESSION-MESSAGE-SHAPE.3",
          f"{kind}: {field(source, at + '.source.kind', 'a non-empty string') if isinstance(source, dict) else field(message, at + '.source', 'an object')}",
          seq=seq, index=index)
    content = message.get("content")
    # .4 Content is a list of blocks.
    check(isinstance(content, list), "SESSION-MESSAGE-SHAPE.4", f"{kind}: {field(message, at + '.content', 'an array')}",
          seq=seq, index=index)
    if kind == ASSISTANT_MESSAGE:
        # .5 An assistant message names the provider and model that produced it.
        wrong = next((name for name in ("provider", "model") if not is_nonempty_str(source.get(name))), None)
        check(source.get("kind") == "model" and wrong is None, "SESSION-MESSAGE-SHAPE.5",
              f"{kind}: {at}.source.kind must be 'model'" if source.get("kind") != "model"
              else f"{kind}: {field(source, f'{at}.source.{wrong}', 'a non-empty string')}", seq=seq, index=index)
    elif kind == TOOL_RESULT:
        # .6 A tool result names the call it answers.
        check(source.get("kind") == "tool" and is_nonempty_str(source.get("callId")), "SESSION-MESSAGE-SHAPE.6",
              f"{kind}: {at}.source.kind must be 'tool'" if source.get("kind") != "tool"
              else f"{kind}: {field(source, at + '.source.callId', 'a non-empty string')}", seq=seq, index=index)
        # .7 Exactly one tool-result block, so a rewrite has one content to change.
        block: Json = content[0] if len(content) == 1 else None
        check(isinstance(block, dict) and block.get("type") == "tool-result" and isinstance(block.get("content"), list),
              "SESSION-MESSAGE-SHAPE.7", f"{kind}: {at}.content must be one block of type 'tool-result' whose content "
              f"is an array (it holds {len(content)} block{'' if len(content) == 1 else 's'})", seq=seq, index=index)
        # .8 The block answers the same call the source names.
        check(block.get("toolCallId") == source.get("callId"), "SESSION-MESSAGE-SHAPE.8",
              f"{kind}: {at}.content[0].toolCallId must equal {at}.source.callId", seq=seq, index=index)


def check_request_header(event: Event, *, index: int | None = None) -> None:
    """SESSION-REQUEST-HEADER: a request/header snapshot a provider adapter can be built from."""
    seq, data = event.seq, event.data
    header: Json = data.get("header") if isinstance(data, dict) else None
    config: Json = header.get("config") if isinstance(header, dict) else None
    # .1 The header names its provider and model.
    wrong = ("" if not isinstance(config, dict) else
             next((name for name in ("provider", "model") if not is_nonempty_str(config.get(name))), None))
    where = (field(data, "data.header", "an object") if not isinstance(header, dict)
             else field(header, "data.header.config", "an object") if not isinstance(config, dict)
             else field(config, f"data.header.config.{wrong}", "a non-empty string"))
    check(wrong is None, "SESSION-REQUEST-HEADER.1", f"{REQUEST_HEADER}: {where}", seq=seq, index=index)
    # .2 A reasoning effort, when set, is a named level.
    check("reasoningEffort" not in config or is_nonempty_str(config["reasoningEffort"]), "SESSION-REQUEST-HEADER.2",
          f"{REQUEST_HEADER}: {field(config, 'data.header.config.reasoningEffort', 'a non-empty string')}",
          seq=seq, index=index)
    if "adapterDefaults" in header:
        defaults = header["adapterDefaults"]
        # .3 adapterDefaults marks config fields the adapter filled in; it can mark only what is there.
        valid = (
            isinstance(defaults, dict)
            and set(defaults) <= {"reasoningEffort", "maxTokens"}
            and all(value is True and key in config for key, value in defaults.items())
        )
        check(valid, "SESSION-REQUEST-HEADER.3", f"{REQUEST_HEADER}: data.header.adapterDefaults may only mark "
              "reasoningEffort and maxTokens with true, each present in data.header.config", seq=seq, index=index)
    # .4 "fallback" was the retired reason of a header derived from another; no reader knows its base.
    check(data.get("reason") != "fallback", "SESSION-REQUEST-HEADER.4",
          f'{REQUEST_HEADER}: data.reason "fallback" is retired (no reader knows the header it fell back from)',
          seq=seq, index=index)


def check_content(event: Event, *, index: int | None = None) -> None:
    """The payload checks the core applies (decision 1: on append and on seed alike)."""
    if event.type in SURFACE_TYPES:
        check_message_shape(event, index=index)
    elif event.type == REQUEST_HEADER:
        check_request_header(event, index=index)
    check_current(event, index=index)



__all__ = ["check_content", "check_message_shape", "check_request_header", "field", "json_type", "message_of"]
