"""The request header fold: which provider request configuration is in force (spec/09-relational.md).

`request/header` events are whole snapshots (the retired `request/header-delta` patched a base no
reader can trust), so the header in force is simply the last snapshot, in canonical form: empty
optional fields are absent, so that "no tools" and "tools: []" are one header, not two. The
model recomputes the fold from the log on every read; `live` feeds a `RequestHeaderFold` one
committed event at a time. Both must give the same answer.
"""

from __future__ import annotations

from collections.abc import Sequence

from sessionspec.catalog import REQUEST_HEADER
from sessionspec.envelope import Event
from sessionspec.errors import Kind
from sessionspec.jsonvalue import FrozenDict, Json, json_equal, snapshot
from sessionspec.rules import define
from sessionspec.shapes import check_request_header

REQUEST_CONTEXT = "request/context"

K = Kind
CANONICAL = define("SESSION-REQUEST-HEADER-FOLD.1", K.INTERNAL,
                   "the canonical header is config plus only the non-empty optional fields")
EQUALITY = define("SESSION-REQUEST-HEADER-FOLD.2", K.INTERNAL,
                  "two headers are equal when their canonical forms are equal JSON values")
LAST_SNAPSHOT = define("SESSION-REQUEST-HEADER-FOLD.3", K.INTERNAL,
                       "the header in force is the canonical form of the last request/header, else the given base")
CONTEXT = define("SESSION-REQUEST-HEADER-FOLD.4", K.INTERNAL,
                 "the request context in force is the data of the last request/context, else none")


def canonical_header(header: Json) -> FrozenDict:
    """SESSION-REQUEST-HEADER-FOLD.1: {config} plus adapterDefaults, system and tools only when they say something."""
    out: dict[str, Json] = {"config": header.get("config")}
    defaults = header.get("adapterDefaults")
    if isinstance(defaults, dict):
        # A marker is meaningful only as `true`; an empty or all-false record says nothing.
        marks = {key: True for key in ("reasoningEffort", "maxTokens") if defaults.get(key) is True}
        if marks:
            out["adapterDefaults"] = marks
    system = header.get("system")
    if type(system) is str and system != "":
        out["system"] = system
    tools = header.get("tools")
    if isinstance(tools, list) and tools:
        out["tools"] = tools
    return snapshot(out)  # type: ignore[no-any-return]


def header_equals(left: Json, right: Json) -> bool:
    """SESSION-REQUEST-HEADER-FOLD.2: equality of canonical forms, as JSON (object key order never matters)."""
    return json_equal(canonical_header(left), canonical_header(right))


class RequestHeaderFold:
    """The incremental fold: feed committed events in log order; `header` and `context` are always current."""

    __slots__ = ("context", "header")

    def __init__(self, from_: FrozenDict | None = None) -> None:
        self.header: FrozenDict | None = from_
        self.context: FrozenDict | None = None

    def feed(self, event: Event) -> None:
        if event.type == REQUEST_HEADER:
            # The legacy rejections (SESSION-REQUEST-HEADER.1-.4) hold for every folded snapshot.
            check_request_header(event)
            # .3 A snapshot replaces the header in force; it is never merged into it.
            self.header = canonical_header(event.data["header"])
        elif event.type == REQUEST_CONTEXT:
            # .4 The context is also last-wins, and read as logged.
            self.context = event.data if isinstance(event.data, FrozenDict) else snapshot(event.data)

    def feed_all(self, events: Sequence[Event]) -> RequestHeaderFold:
        for event in events:
            self.feed(event)
        return self


def fold_request_header(events: Sequence[Event], from_: FrozenDict | None = None) -> FrozenDict | None:
    """SESSION-REQUEST-HEADER-FOLD.3: the header in force after `events`, recomputed from the first event."""
    return RequestHeaderFold(from_).feed_all(events).header


def fold_request_context(events: Sequence[Event]) -> FrozenDict | None:
    """SESSION-REQUEST-HEADER-FOLD.4: the request context in force after `events`."""
    return RequestHeaderFold().feed_all(events).context


def request_header(session: object) -> FrozenDict | None:
    """`Session.request_header()` for any implementation: the fold of its complete log."""
    return fold_request_header(session.events)  # type: ignore[attr-defined]


def request_context(session: object) -> FrozenDict | None:
    """`Session.request_context()` for any implementation: the fold of its complete log."""
    return fold_request_context(session.events)  # type: ignore[attr-defined]
