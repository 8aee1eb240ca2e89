"""How one answer is compared with the reference's (spec/10-conformance.md, "Comparison"): one function, two modes.

Over the protocol (`rules=False, time=False`, the runner and replay against a testee): accept or
reject always; the kind of a rejection always, `internal` included (a crash on invalid input is
a divergence, never a wildcard); the rule never (another implementation need not name our
rules); everything else an answer carries exactly, as JSON (a key the reference's answer does not have
included), except what the testee's own clock decides: `time` in event envelopes and the header's `createdAt` (and a
torn tail's `reason`, words for people as a message is). In process (`rules=True, time=True`, the machines, which share
one clock and one rule registry), rules and times are compared too.

A snapshot field an external testee does not carry (`seq`, `header`, `transcript`,
`requestHeader`, `requestContext`) is not a divergence but a check that could not be made;
`unchecked` names them so the report can say so.
"""

from __future__ import annotations

import json
from typing import Any, Final

import orjson

from sessionspec.jsonvalue import json_equal
from sessionspec.preview import as_text, preview, shown
from sessionspec.wire.protocol import Answer

OPTIONAL_FIELDS: Final = frozenset({"seq", "header", "transcript", "requestHeader", "requestContext"})
"""Snapshot fields added after SCP v0 was fixed: compared when the testee carries them."""
_ONE_EVENT: Final = frozenset({"event", "x-candidate"})
_EVENTS: Final = frozenset({"events", "closers"})
_STORED: Final = frozenset({"events", "header"})
"""What a `load` answers from the file itself: its times are stored data, compared (its closers' are the reader's)."""


def same_json(left: Any, right: Any) -> bool:
    """`json_equal(left, right)`, decided at C speed wherever it can be.

    `json_equal` implies `==` (it is `==` with `true` kept apart from `1`), so `!=` decides every
    difference. When `==` holds, the two values written with sorted keys are compared: the same
    text is the same JSON value, `true` and `1` are written differently, and a value orjson does
    not write (a lone surrogate, an integer beyond 64 bits, deep nesting) or text that differs only
    as `1` and `1.0` do is left to `json_equal` itself. Python's `==` recurses, so a value too
    deep for it goes to `json_equal` too.
    """
    try:
        if left != right:
            return False
        if orjson.dumps(left, option=orjson.OPT_SORT_KEYS) == orjson.dumps(right, option=orjson.OPT_SORT_KEYS):
            return True
    except (RecursionError, TypeError, orjson.JSONEncodeError):
        pass
    return json_equal(left, right)


def op_of(request: Any) -> str | None:
    """The op of a request object, or of a raw line that parses to one; None when there is no string op (a request
    the machine built deliberately broken can carry any JSON value as its op)."""
    if isinstance(request, str):
        try:
            request = json.loads(request)
        except (ValueError, RecursionError):
            return None
    op = request.get("op") if isinstance(request, dict) else None
    return op if isinstance(op, str) else None


def unsupported(answer: Answer) -> bool:
    """Whether an answer refuses its request as `unsupported` (SESSION-CONFORMANCE-PROTOCOL.2: not implemented)."""
    error = answer.get("error")
    return not answer.get("ok") and isinstance(error, dict) and error.get("kind") == "unsupported"


def describe(answer: Answer) -> str:
    if answer.get("ok"):
        return "accepted"
    error = answer.get("error")
    error = error if isinstance(error, dict) else {}
    rule = f" by {_short(error['rule'], 80)}" if error.get("rule") else ""
    return f"rejected{rule} [{_short(error.get('kind'), 80)}]: {_short(error.get('message', ''), 300)}"


def _without_time(key: str, value: Any) -> Any:
    """`value` without what the testee's own clock decides: `time` in the event envelopes a key of an answer holds,
    and the header's `createdAt` (no deep walk: values may be deep)."""
    if key == "header" and isinstance(value, dict):
        return {k: v for k, v in value.items() if k != "createdAt"}
    if key == "torn" and isinstance(value, dict):  # a load's torn tail: where it starts; its reason is for people
        return {k: v for k, v in value.items() if k != "reason"}
    if key in _ONE_EVENT and isinstance(value, dict):
        return {k: v for k, v in value.items() if k != "time"}
    if key in _EVENTS and isinstance(value, list):
        return [{k: v for k, v in e.items() if k != "time"} if isinstance(e, dict) else e for e in value]
    return value


def _error(answer: Answer) -> dict[str, Any]:
    error = answer.get("error")
    return error if isinstance(error, dict) else {}


def differences(op: Any, expected: Answer, actual: Answer, *, rules: bool = False, time: bool = False) -> list[str]:
    """What makes `actual` diverge from `expected` for a request with op `op` (empty: they agree)."""
    if expected.get("ok") != actual.get("ok"):
        return [f"expected {describe(expected)}; got {describe(actual)}"]
    if op == "hello":
        return []
    out: list[str] = []
    if not expected.get("ok"):
        want, got = _error(expected), _error(actual)
        if got.get("kind") != want.get("kind"):
            out.append(f"rejected with kind {as_text(got.get('kind'))}, expected {as_text(want.get('kind'))} "
                       f"({as_text(want.get('rule'))})")
        elif rules and got.get("rule") != want.get("rule"):
            out.append(f"rejected by {as_text(got.get('rule'))}, expected {as_text(want.get('rule'))} "
                       f"[{as_text(want.get('kind'))}]")
    for key in expected:
        if key in ("ok", "error"):
            continue
        if key not in actual:
            if not (key in OPTIONAL_FIELDS and not rules):
                out.append(f"answer lacks {shown(key)}")
            continue
        left, right = expected[key], actual[key]
        if key == "x-reentrant" and isinstance(left, dict) and isinstance(right, dict):
            out.extend(f"x-reentrant: {why}" for why in differences("append", left, right, rules=rules, time=time))
            continue
        if not time and not (op == "load" and key in _STORED):  # a load's events and header are the file's
            left, right = _without_time(key, left), _without_time(key, right)
        if not same_json(left, right):
            out.append(f"{as_text(key)}: expected {_short(left)}, got {_short(right)}")
    # SESSION-CONFORMANCE-PROTOCOL.10: everything an answer carries is compared, so a key only the testee's answer has is a
    # difference too (a testee that added one to every answer once passed every vector). Inside `error` only the
    # kind is compared: the message is for people, the rule and the place are the testee's word.
    out.extend(f"answer has {shown(key)}, the reference's does not" for key in actual if key not in expected)
    return out


def unchecked(expected: Answer, actual: Answer) -> list[str]:
    """The optional snapshot fields the reference gave and the testee did not: checks that could not be made."""
    if not (expected.get("ok") and actual.get("ok")):
        return []
    return sorted(key for key in OPTIONAL_FIELDS if key in expected and key not in actual)


def _short(value: Any, limit: int = 400) -> str:
    """A bounded preview of a value an answer holds (a string as it is, anything else as `preview` shows it)."""
    if isinstance(value, str):
        return value if len(value) <= limit else value[:limit] + "..."
    return preview(value, limit, depth=6, items=12)
