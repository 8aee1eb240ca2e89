"""What a testee's maintainer decides once: families grouped into decisions, and the one thing to do next.

A testee that does not take headers yet answers every `create` with a header `unsupported`, and
the reference refuses each broken header with a rule of its own: one decision, thirteen families
(`create:SESSION-FORMAT-HEADER.1 unsupported` ... `.12`, `create:accepts unsupported`). A report
that ranks them one by one buries what to do next. So the families a testee answered
`unsupported` for one feature (an op, a create with a header or a seed) are one **decision**, with
the count of rules behind it; a core op the testee lacks is the **blocker**, named before anything
else, because nothing that needs it can be judged (spec/10, "Capabilities").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sessionspec.conformance.outcome import Family
from sessionspec.wire.capabilities import Capabilities


@dataclass
class Decision:
    """Families that one decision of the testee's maintainer explains (one feature answered `unsupported`), or one
    family of its own."""

    name: str
    families: list[Family] = field(default_factory=list)

    @property
    def level(self) -> str:
        return "required" if any(f.level == "required" for f in self.families) else "recommended"

    @property
    def vectors(self) -> int:
        return sum(len(f.vectors) for f in self.families)

    @property
    def machine(self) -> bool:
        return any(f.machine for f in self.families)

    @property
    def rules(self) -> list[str]:
        return sorted({f.shortest.named or f.shortest.rule or "" for f in self.families} - {""})


def feature(request: Any) -> str:
    """The feature a request uses, as a maintainer names what they have not built: an op, or a create with a header
    or a seed (a create's `unsupported` is about what it carries, not about create)."""
    if not isinstance(request, dict) or not isinstance(request.get("op"), str):
        return "a line that is not a request"
    op: str = request["op"]
    if op != "create":
        return op
    carried = [name for name in ("seed", "header") if request.get(name) is not None]
    return "create with a " + " and a ".join(carried) if carried else "create"


def decisions(families: Sequence[Family]) -> list[Decision]:
    """The families not listed as known, as decisions: those answered `unsupported` grouped by the feature their
    shortest divergence's request uses, each other family on its own; required first, the largest first."""
    grouped: dict[str, Decision] = {}
    for family in families:
        if family.listed:
            continue
        found = family.shortest
        if found.answered == "unsupported":
            request = found.trace[-1] if found.trace else None
            name = f"{feature(request)}: answered unsupported"
        else:
            name = family.name
        grouped.setdefault(name, Decision(name)).families.append(family)
    return sorted(grouped.values(), key=lambda d: (d.level != "required", -d.vectors, -len(d.families), d.name))


def blockers(capabilities: Capabilities | None) -> tuple[str, ...]:
    """The core ops the testee lacks (declared or shown by answering `unsupported`), in the order to build them."""
    return () if capabilities is None else capabilities.missing_core
