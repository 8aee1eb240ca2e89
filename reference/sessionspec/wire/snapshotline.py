"""A snapshot's answer line, each event's text written once where the lossless writer writes it: the oracle's point 6.

The conformance machine asks for a snapshot after every step, and the answer holds the whole log.
orjson writes it in microseconds; but once the log holds a value orjson refuses (a lone surrogate,
nesting past its bound, which the machine sends on purpose), `protocol.dumps` writes the whole
answer with the lossless writer, in Python, and every later snapshot of that session wrote every
event of the log again, at milliseconds a line. The lossless writer's text of an object is its
keys' and values' texts joined (JSON's separators fixed, lone surrogates escaped character by
character), so such a line is joined from each event's text, kept by the identity of the event's
plain copy (which the oracle keeps by the event's identity: accepted events never change), and the
other values' texts, written now. The bytes are `protocol.dumps(answer)`'s (tests/test_10_oracle.py
compares the two line for line).
"""

from __future__ import annotations

from typing import Any, Final

import orjson

from sessionspec.jsontext import dumps as lossless_dumps
from sessionspec.wire.protocol import Answer

_NOT_WRITTEN: Final = (TypeError, orjson.JSONEncodeError)


def text_of(value: Any) -> bytes:
    """The lossless writer's text of `value`, as `protocol.dumps` writes an answer orjson refuses."""
    return lossless_dumps(value).encode("utf-8")


class SnapshotLines:
    """Snapshot answers' lines, each event's lossless text kept by its plain copy's identity until `clear`."""

    def __init__(self) -> None:
        self._texts: dict[int, tuple[Any, bytes]] = {}

    def clear(self) -> None:
        self._texts.clear()

    def line(self, answer: Answer) -> bytes:
        """`protocol.dumps(answer)` for a snapshot's answer (its `events` a list of plain events)."""
        try:
            return orjson.dumps(answer)
        except _NOT_WRITTEN:
            pass
        parts = []
        for key, value in answer.items():
            if key == "events":
                text = b"[" + b",".join([self._event_text(event) for event in value]) + b"]"
            else:
                text = text_of(value)
            parts.append(text_of(key) + b":" + text)
        return b"{" + b",".join(parts) + b"}"

    def known(self, value: Any) -> bytes | None:
        """The lossless text of `value` when it is an event's plain copy whose text is kept (None otherwise): a request
        that carries the log (a reseed, `fold`, `repair`) is joined from them (`exchange.encodable`)."""
        hit = self._texts.get(id(value))
        return hit[1] if hit is not None and hit[0] is value else None

    def _event_text(self, event: Any) -> bytes:
        hit = self._texts.get(id(event))
        if hit is None or hit[0] is not event:
            hit = self._texts[id(event)] = (event, text_of(event))
        return hit[1]
