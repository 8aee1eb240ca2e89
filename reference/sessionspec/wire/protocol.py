"""SCP v0: the request and answer shapes and their JSON text (spec/10-conformance.md).

The protocol is the one thing another implementation codes against, so it is small and closed:
a JSON object per line, an `op` naming one of six operations, and an answer that is either
`{"ok": true, ...}` or `{"ok": false, "error": {kind, message, rule}}`. What a request *does* is
`sessionspec.wire.executor`'s, the one place every side (the testee process, the machines,
replay, the vectors) runs it.

Request lines are JSON text, read by the same lossless reader as stored logs (SESSION-LOSSLESS-TEXT):
a line two JSON readers could read as two values (a key named twice, `-0`, `2**60`, `1e400`,
invalid UTF-8, a byte-order mark) is refused with the rule it breaks, kind `json`, never guessed at.
"""

from __future__ import annotations

import traceback
from typing import Any, Final

import orjson

from sessionspec.errors import Kind, SpecViolation
from sessionspec.jsontext import dumps as lossless_dumps
from sessionspec.live.fasttext import read_line
from sessionspec.preview import clipped
from sessionspec.rules import define

PROTOCOL_VERSION: Final = 0
START_TIME: Final = 1_700_000_000_000
"""The testee's clock starts here at every `create` and ticks by one per reading: answers are deterministic."""
OPS: Final = ("hello", "create", "append", "snapshot", "fold", "repair")
OPTIONAL_OPS: Final = frozenset({"fold", "repair", "x-rebuild", "x-mutate", "x-append"})
"""Ops a testee may answer `unsupported`; the runner then skips the step instead of counting a divergence."""
HOOKS: Final = "x-hooks"
"""Extension: an append may arm in-process hooks for itself (`x-validator`, `x-observer`, `x-clock`), any request may
fix the clock's reading (`x-time`), and the caller may change its request after the append (`x-mutate-input`)."""
INPROCESS: Final = "x-inprocess"
"""Extension: the ops `x-rebuild` (a fresh session seeded with the current events), `x-mutate` (try to mutate
what the session returned) and `x-append` (an append holding values JSON text cannot, tagged as traces tag them),
which only an implementation with Python objects to take and hand out can answer."""
HOOK_VALUES: Final = {
    "x-validator": ("raise", "violation", "reentrant"),
    "x-observer": ("raise", "reentrant"),
    "x-clock": ("reentrant",),
    "x-mutate-input": ("data",),
}
"""The hooks an append may arm, and what each may do (spec/10's x-hooks)."""
REENTRANT_REQUEST: Final = {"type": "turn/start", "data": {"turn": 99}}
"""What a reentrant hook tries to append: a valid request, refused only because it nests."""
MAX_LINE_BYTES: Final = 64 << 20
"""SESSION-CONFORMANCE-PROTOCOL.7: a request or answer line is at most this many bytes (the stored record bound)."""

K = Kind
REQUEST_OBJECT = define("SESSION-CONFORMANCE-PROTOCOL.1", K.JSON, "a request line is one JSON object with a string op")
UNSUPPORTED_OP = define("SESSION-CONFORMANCE-PROTOCOL.2", K.UNSUPPORTED, "an op the testee does not implement is answered unsupported")
NO_SESSION = define("SESSION-CONFORMANCE-PROTOCOL.3", K.UNSUPPORTED, "append and snapshot need a session made by create")
CREATE_SHAPE = define("SESSION-CONFORMANCE-PROTOCOL.4", K.ENVELOPE, "create carries exactly id, seed and header")
EVENT_LIST = define("SESSION-CONFORMANCE-PROTOCOL.5", K.ENVELOPE, "fold and repair carry exactly events, a list")
EXTENSION = define("SESSION-CONFORMANCE-PROTOCOL.6", K.UNSUPPORTED,
                   "an extension key or value the testee does not offer is refused as unsupported, never ignored")
LINE_BOUND = define("SESSION-CONFORMANCE-PROTOCOL.7", K.JSON, "a request line is at most 64 MiB")
DECLARED = define("SESSION-CONFORMANCE-PROTOCOL.9", K.UNSUPPORTED,
                  "what hello declares (an op, an extension, a storage backend) is implemented, never answered unsupported")
ANSWER_KEYS = define("SESSION-CONFORMANCE-PROTOCOL.10", K.INTERNAL,
                     "an answer carries exactly the keys spec/10 gives its op, and nothing else")
ORDER = define("SESSION-CONFORMANCE-PROTOCOL.8", K.INTERNAL,
               "a rejected request other than an append or a create reports the first failing check in spec/10's order")
HELLO_FIELDS = define("SESSION-CONFORMANCE-PROTOCOL.15", K.INTERNAL, "hello answers implementation, version and "
                      "profile scp-0; ops, extensions and storage are lists of strings")
ONE_ANSWER = define("SESSION-CONFORMANCE-PROTOCOL.16", K.INTERNAL,
                    "each request gets one answer line, in order, valid against answer.schema.json with its op's fields")

Answer = dict[str, Any]


def loads(line: bytes) -> Any:
    """One request line as a JSON value, read losslessly; raises the SESSION-LOSSLESS-TEXT rule it breaks.

    The runner's own lines are canonical (orjson wrote them), so they are read at C speed; any
    other spelling goes to the lossless reader, which names what it refuses.
    """
    # SESSION-CONFORMANCE-PROTOCOL.7: a line is bounded, so one request cannot take a testee's memory.
    if len(line) > MAX_LINE_BYTES:
        raise SpecViolation(LINE_BOUND, K.JSON, f"request line of {len(line):,} bytes is over {MAX_LINE_BYTES:,}")
    return read_line(line)


def dumps(answer: Answer) -> bytes:
    """One answer line (without its newline): compact UTF-8, lone surrogates escaped, any depth.

    orjson is tried first; an answer it refuses (a lone surrogate, nesting beyond its limit) is
    written by the iterative lossless writer, so no answer a valid request earns fails to encode.
    """
    try:
        return orjson.dumps(answer)
    except (TypeError, orjson.JSONEncodeError):
        return lossless_dumps(answer).encode("utf-8")


def error_answer(error: BaseException) -> Answer:
    """A failure answer: a SpecViolation's kind, rule and place, or `internal` for anything else."""
    if isinstance(error, SpecViolation):
        return {"ok": False, "error": error.to_json()}
    text = clipped("".join(traceback.format_exception_only(error)).strip())  # an exception may quote a whole request
    return {"ok": False, "error": {"kind": Kind.INTERNAL.value, "message": text, "rule": None}}


def line_error(error: SpecViolation) -> Answer:
    """SESSION-CONFORMANCE-PROTOCOL.1: a line that is not a JSON object is answered, never the end of the testee."""
    return {"ok": False, "error": {"kind": Kind.JSON.value, "message": error.message, "rule": error.rule}}
