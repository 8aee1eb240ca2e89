"""The level of a divergence: a deviation from what the seeds state, or from a rule this spec added (spec/10).

The runner knows, for a request the reference rejects, every rule the request breaks
(`sessionspec.breaches`, each as a `Breach` with its kind and its level for that request's op).
Three judgements follow, each the protobuf conformance runner's REQUIRED/RECOMMENDED split:

- A testee that accepts a request the reference rejects deviates at the required level when some
  rule it breaks is required for that op, else only at the recommended level (it skips a rule this
  spec added: an append validating message shapes, an unknown header key refused, ...).
- A testee that rejects with another kind deviates only from the check order (a recommended rule,
  SESSION-APPEND-COMMIT.7 or SESSION-SEED-ACCEPTANCE.5) when its kind is the kind of any rule the
  request breaks; the family is then named after that order rule.
- A testee that rejects what the reference accepts, or answers with other content, deviates at the
  required level, unless the difference is one a recommended rule explains (an `ignorable` an
  append dropped: decision 3).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from sessionspec.errors import SpecViolation
from sessionspec.levels import APPEND_OPS, Level, level_of
from sessionspec.rules import RULES
from sessionspec.wire.compare import same_json

APPEND_ORDER: Final = "SESSION-APPEND-COMMIT.7"
SEED_ORDER: Final = "SESSION-SEED-ACCEPTANCE.5"
PROTOCOL_ORDER: Final = "SESSION-CONFORMANCE-PROTOCOL.8"
IGNORABLE: Final = "SESSION-EVENT-ENVELOPE.6"


@dataclass(frozen=True, slots=True)
class Breach:
    """One rule a request breaks, with its kind and its level for the request's op."""

    rule: str
    kind: str
    level: str

    def to_json(self) -> dict[str, str]:
        return {"rule": self.rule, "kind": self.kind, "level": self.level}


def breaches_for(op: Any, violations: Iterable[SpecViolation]) -> tuple[Breach, ...]:
    """The breaches of `violations` for a request of `op` (a rule the registry lacks is taken as required)."""
    out = []
    for violation in violations:
        rule = RULES.get(violation.rule)
        level = level_of(rule.id, rule.ground, op).value if rule is not None else Level.REQUIRED.value
        out.append(Breach(violation.rule, violation.kind.value, level))
    return tuple(out)


def breaches_from_json(raw: Any) -> tuple[Breach, ...]:
    """Breaches as a vector records them (`[{rule, kind, level}]`); anything else is none."""
    if not isinstance(raw, list):
        return ()
    return tuple(Breach(str(b.get("rule")), str(b.get("kind")), str(b.get("level"))) for b in raw if isinstance(b, dict))


@dataclass(frozen=True, slots=True)
class Verdict:
    """How a divergence is judged: its level, and the rule its family is named after when not the reference's."""

    level: str
    rule: str | None = None


def _error(answer: Any) -> dict[str, Any] | None:
    if not isinstance(answer, dict) or answer.get("ok") is not False:
        return None
    error = answer.get("error")
    return error if isinstance(error, dict) else {}


def judge(op: Any, request: Any, expected: Any, actual: Any, breaches: Sequence[Breach], why: Sequence[str]) -> Verdict:
    """The level of a divergence between `expected` (the reference's) and `actual` (the testee's)."""
    want, got = _error(expected), _error(actual)
    required = any(b.level == Level.REQUIRED for b in breaches)
    if want is not None and got is None:  # the testee accepted what the reference rejects
        return Verdict(Level.REQUIRED, _required_rule(breaches)) if required or not breaches \
            else Verdict(Level.RECOMMENDED)
    if want is not None and got is not None:  # both rejected, with different kinds
        kind = got.get("kind")
        if any(b.kind == kind for b in breaches):
            return Verdict(Level.RECOMMENDED, _order_rule(op))
        return Verdict(Level.REQUIRED, _required_rule(breaches)) if required or not breaches \
            else Verdict(Level.RECOMMENDED)
    if want is None and got is None and _only_ignorable_dropped(op, request, expected, actual, why):
        return Verdict(Level.RECOMMENDED, IGNORABLE)
    return Verdict(Level.REQUIRED)


def _required_rule(breaches: Sequence[Breach]) -> str | None:
    """The rule a required divergence is named after when the reference's own (the first it checks) is only
    recommended for this op: the first required rule the request breaks. A fold whose first fault is an envelope
    rule (recommended for a log given whole) and which also breaks a surface rule (required: the upstream's fold
    checks it) is a deviation from the surface rule, and its family says so."""
    if not breaches or breaches[0].level == Level.REQUIRED:
        return None
    return next((b.rule for b in breaches if b.level == Level.REQUIRED), None)


def _order_rule(op: Any) -> str:
    """The check-order rule of a request of `op`: spec/04's for an append, spec/05's for a create, spec/10's else."""
    if isinstance(op, str) and op in APPEND_OPS:
        return APPEND_ORDER
    return SEED_ORDER if op == "create" else PROTOCOL_ORDER


def _only_ignorable_dropped(op: Any, request: Any, expected: Any, actual: Any, why: Sequence[str]) -> bool:
    """An append asked for `ignorable: true` and the testee logged the event without it, and nothing else differs:
    decision 3 (the upstream's append cannot write ignorable, seed 004 §13)."""
    if not isinstance(op, str) or op not in APPEND_OPS or not isinstance(request, dict) \
            or not all(isinstance(line, str) and line.startswith("event:") for line in why):
        return False
    body = request.get("request") if op == "x-append" else request
    if not isinstance(body, dict) or body.get("ignorable") is not True:
        return False
    event, logged = expected.get("event"), actual.get("event")
    if not isinstance(event, dict) or not isinstance(logged, dict) or "ignorable" in logged:
        return False
    return same_json({k: v for k, v in event.items() if k not in ("ignorable", "time")},
                     {k: v for k, v in logged.items() if k != "time"})
