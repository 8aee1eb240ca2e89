"""How the runner compares a testee's answer with the reference's (spec/10-conformance.md, "Comparison").

Time is ignored (an event's `time` is the testee's own clock). Accept or reject is always
compared; the kind of a rejection is compared unless the testee says `internal` (it may not
classify its errors); the rule is never compared (other implementations need not name rules);
everything else an accepting answer carries is compared exactly, as JSON.
"""

from __future__ import annotations

import json
from typing import Any

from sessionspec.conformance.protocol import Answer
from sessionspec.jsonvalue import json_equal

OPTIONAL_OPS = frozenset({"fold", "repair"})
"""Ops a testee may answer `unsupported`; such a step is skipped, not a divergence."""


def timeless(value: Any) -> Any:
    """`value` with `time` removed from every event envelope in it."""
    if isinstance(value, dict):
        is_event = "type" in value and "seq" in value and "data" in value
        return {k: timeless(v) for k, v in value.items() if not (is_event and k == "time")}
    if isinstance(value, list):
        return [timeless(v) for v in value]
    return value


def op_of(request: Any) -> Any:
    """The op of a request object, or of a raw line that parses to one (None otherwise)."""
    if isinstance(request, str):
        try:
            request = json.loads(request)
        except ValueError:
            return None
    return request.get("op") if isinstance(request, dict) else None


def skipped(op: Any, actual: Answer) -> bool:
    """An optional op the testee does not implement."""
    error = actual.get("error")
    return op in OPTIONAL_OPS and not actual.get("ok") and isinstance(error, dict) and error.get("kind") == "unsupported"


def describe(answer: Answer) -> str:
    if answer.get("ok"):
        return "accepted"
    error = answer.get("error") or {}
    rule = f" by {error['rule']}" if error.get("rule") else ""
    return f"rejected{rule} [{error.get('kind')}]: {str(error.get('message', ''))[:300]}"


def differences(op: Any, expected: Answer, actual: Answer) -> list[str]:
    """What makes `actual` diverge from `expected` for a request with op `op` (empty: they agree)."""
    if expected.get("ok") != actual.get("ok"):
        return [f"expected {describe(expected)}; testee {describe(actual)}"]
    if not expected["ok"]:
        kind, expected_kind = actual["error"]["kind"], expected["error"]["kind"]
        if kind not in ("internal", expected_kind):
            return [f"rejected with kind {kind}, expected {expected_kind} ({expected['error'].get('rule')})"]
        return []
    if op == "hello":
        return []
    out = []
    for key in expected:
        if key == "ok":
            continue
        if key not in actual:
            out.append(f"answer lacks {key!r}")
        elif not json_equal(timeless(expected[key]), timeless(actual[key])):
            out.append(f"{key}: expected {_short(timeless(expected[key]))}, got {_short(timeless(actual[key]))}")
    return out


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=repr)
    return text if len(text) <= 400 else text[:400] + "..."
