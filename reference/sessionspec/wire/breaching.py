"""Every rule a request line breaks, as the oracle judges a rejection (spec/10, "Comparison": fair kinds).

`sessionspec.breaches` runs each check of an append, a create or a log given whole on its own; this
adds what only the protocol knows: the request's shape (SESSION-CONFORMANCE-PROTOCOL.4-.6), a line the
lossless reader refuses but a lenient reader would go on to judge, the session the request met, and
the spelling of integers (SESSION-LOSSLESS-JSON.8: a rule broken only because an integer is written as
`1.0` is broken at the recommended level, since a JavaScript reader sees the integer itself).
"""

from __future__ import annotations

import json
from typing import Any, Final

from sessionspec.breaches import append_breaches, create_breaches, events_breaches
from sessionspec.errors import Kind, SpecViolation
from sessionspec.levels import level_of
from sessionspec.rules import RULES
from sessionspec.wire.protocol import CREATE_SHAPE, EVENT_LIST, EXTENSION, Answer, loads
from sessionspec.wire.trace import untag
from sessionspec.wire.verdict import Breach, breaches_for

SPELLING: Final = "SESSION-LOSSLESS-JSON.8"


def breaches_of(line: bytes, answer: Answer, session: Any) -> tuple[Breach, ...]:
    """Every rule the request of `line` breaks, the reference's own rule first: for a rejected append (on `session` as
    it was), create, fold or repair, each check on its own; for any other rejection, the reference's rule alone.
    Empty for an accepted request."""
    if answer.get("ok") is not False:
        return ()
    error: Any = answer.get("error")
    first, kind = (error.get("rule"), error.get("kind")) if isinstance(error, dict) else (None, None)
    try:
        request = loads(line)
    except SpecViolation:
        request = _leniently(line)  # a line refused as text may hold a request that breaks session rules too
    raw_op = request.get("op") if isinstance(request, dict) else None
    op = raw_op if isinstance(raw_op, str) else None
    try:
        found = list(breaches_for(op, _violations(op, request, session) if isinstance(request, dict) else []))
        if found and isinstance(request, dict) and op != "x-append":
            found = _spelling(found, op, request, session)
    except Exception:  # the breaches refine a verdict; a request they cannot read is judged by the first rule alone
        found = []
    if isinstance(first, str) and all(breach.rule != first for breach in found):
        rule = RULES.get(first)
        level = level_of(rule.id, rule.ground, op).value if rule is not None else "required"
        found.insert(0, Breach(first, str(kind), level))
    found.sort(key=lambda breach: breach.rule != first)
    return tuple(found)


def _spelling(found: list[Breach], op: str | None, request: dict[str, Any], session: Any) -> list[Breach]:
    """SESSION-LOSSLESS-JSON.8: a rule the request breaks only because an integer is spelled as a float (1.0) is
    broken at the recommended level: a JavaScript reader sees the integer itself, and cannot tell."""
    plain = _integers(request)
    if plain is None:
        return found
    again = {breach.rule for breach in breaches_for(op, _violations(op, plain, session))}
    spelled = [breach for breach in found if breach.rule not in again]
    if not spelled:
        return found
    kept = [breach if breach.rule in again else Breach(breach.rule, breach.kind, "recommended") for breach in found]
    return [*kept, Breach(SPELLING, Kind.INTERNAL.value, "recommended")]


def _integers(value: Any) -> Any:
    """`value` with every float of integral value (within the safe range) an int; None when there is none."""
    changed = False

    def respell(item: Any) -> Any:
        nonlocal changed
        if type(item) is float and item.is_integer() and abs(item) <= 2**53 - 1:
            changed = True
            return int(item)
        return item

    stack: list[Any] = []
    root = respell(value) if not isinstance(value, (dict, list)) else (dict(value) if isinstance(value, dict) else list(value))
    if isinstance(root, (dict, list)):
        stack.append(root)
    while stack:
        node = stack.pop()
        pairs = list(node.items()) if isinstance(node, dict) else list(enumerate(node))
        for key, child in pairs:
            copy_ = dict(child) if isinstance(child, dict) else list(child) if isinstance(child, list) else respell(child)
            node[key] = copy_
            if isinstance(copy_, (dict, list)):
                stack.append(copy_)
    return root if changed else None


def _leniently(line: bytes) -> Any:
    """The value a lenient reader takes from a line the lossless reader refuses (-0 as a float, the last of two equal
    keys, any integer): what a testee that reads it so goes on to judge. None when even that is not JSON."""
    try:
        return json.loads(line.decode("utf-8", "surrogatepass"))
    except (ValueError, RecursionError):
        return None


def _violations(op: Any, request: dict[str, Any], session: Any) -> list[SpecViolation]:
    return [*_protocol_violations(op, request), *_session_violations(op, request, session)]


def _protocol_violations(op: Any, request: dict[str, Any]) -> list[SpecViolation]:
    """The request's shape (SESSION-CONFORMANCE-PROTOCOL.4-.6), each on its own: an unknown x- key is both an
    extension the testee does not offer and a key the op does not take."""
    out = []
    known = {"create": {"id", "seed", "header"}, "fold": {"events"}, "repair": {"events"}}.get(op)
    if any(key.startswith("x-") and key not in ("x-time", "x-messages") for key in request) and op != "append":
        out.append(SpecViolation(EXTENSION, Kind.UNSUPPORTED, "an extension key the request's op does not take"))
    if known is not None:
        extra = set(request) - known - {"op", "x-time"}
        shape_ok = not extra and known <= set(request) and (op == "create" or isinstance(request.get("events"), list))
        if not shape_ok:
            rule = CREATE_SHAPE if op == "create" else EVENT_LIST
            out.append(SpecViolation(rule, Kind.ENVELOPE, f"{op} does not carry exactly {sorted(known)}"))
    return out


def _session_violations(op: Any, request: dict[str, Any], session: Any) -> list[SpecViolation]:
    if op in ("append", "x-append") and session is not None:
        body: Any = {k: v for k, v in request.items() if not k.startswith("x-")}
        if op == "x-append":
            try:
                body = untag(request.get("request"))
            except ValueError:
                return []
        if isinstance(body, dict):
            body.pop("op", None)
        return append_breaches(session.events, session.surface.nodes, body)
    if op == "create":
        return create_breaches(request)
    if op in ("fold", "repair"):
        return events_breaches(request.get("events"))
    return []
