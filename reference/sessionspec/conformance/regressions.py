"""A run judged against a baseline report: only what is new fails it (`conform --baseline OLD.json`).

The failure list says, entry by entry and with why, what an implementation is known to get wrong;
a baseline says it wholesale: "whatever the main branch's last run found". A divergence whose
family (or, for a vector, whose id) the baseline already has becomes an expected failure, with
the baseline named as why, and its family counts as known; what the baseline had and this run did
not is listed as fixed. Stale failure-list entries still fail (the list is the person's; the
baseline is the machine's).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sessionspec.conformance import baseline
from sessionspec.conformance.outcome import EXPECTED, FAILED, Outcome


def apply(judged: Outcome, old: dict[str, Any], new: dict[str, Any], path: Path) -> baseline.Comparison:
    """Mark in `judged` what `old` already had as expected; the comparison of `old` with this run's report `new`."""
    families, vectors = baseline.families(old), baseline.vectors(old)
    for case in judged.cases:
        if case.status != FAILED or case.suite not in ("vectors", "machine"):
            continue
        named = case.divergence.family if case.divergence is not None else None
        if (case.suite == "vectors" and case.name in vectors) or named in families:
            case.status = EXPECTED
            case.message = f"in the baseline {path}: {case.message}"
    for family in judged.families:
        family.listed = family.listed or family.name in families
    return baseline.compare(old, new)
