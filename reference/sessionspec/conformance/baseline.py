"""Two reports compared: what is new, what was fixed, what still fails (spec/10, "Baselines").

wpt.fyi's regression check, for an implementation that is not yet conformant: its CI cannot wait
for zero divergences, but it can refuse any it did not have before. A report's failures are named
by ids that stay the same from run to run: each **family** by its failure-list line
(`append:SESSION-LOSSLESS-TEXT.4 accepted`) and each failing **vector** by its id. So two reports
compare as sets: new (in the new report only), fixed (in the old only), still failing (in both).
A family the machine alone showed cannot be called fixed by a run that did not search: it is
then counted as still failing (unknown is not fixed).

This module reads reports as JSON and nothing else, so `sessionspec diff` loads none of the
oracle's engine.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

REPORT_FORMAT: Final = "sessionspec-conform-report/1"
FAILING_CASES: Final = ("unexpected failure", "expected failure")
"""The case statuses that mean a vector failed (listed as known or not): both are failures to compare."""


class BaselineError(ValueError):
    """A report that cannot be read or is not a conform report (exit 2)."""


def read(path: Path) -> dict[str, Any]:
    """A conform --json report, or BaselineError saying why it is not one."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as error:
        raise BaselineError(f"{path}: cannot read it: {error}") from None
    except ValueError as error:
        raise BaselineError(f"{path}: not JSON: {error}") from None
    if not isinstance(data, dict) or data.get("format") != REPORT_FORMAT:
        raise BaselineError(f"{path}: not a conform report ({REPORT_FORMAT})")
    if not isinstance(data.get("families"), list) or not isinstance(data.get("cases"), list):
        raise BaselineError(f"{path}: a conform report without its families and cases")
    return data


def families(report: dict[str, Any]) -> set[str]:
    return {str(f.get("family")) for f in report["families"] if isinstance(f, dict)}


def machine_only(report: dict[str, Any]) -> set[str]:
    return {str(f.get("family")) for f in report["families"] if isinstance(f, dict) and not f.get("vectors")}


def vectors(report: dict[str, Any]) -> set[str]:
    return {str(c.get("name")) for c in report["cases"]
            if isinstance(c, dict) and c.get("suite") == "vectors" and c.get("status") in FAILING_CASES}


def ran(report: dict[str, Any]) -> set[str]:
    """The vectors a report ran (passed or failed, not skipped): only those can be called fixed."""
    return {str(c.get("name")) for c in report["cases"]
            if isinstance(c, dict) and c.get("suite") == "vectors" and c.get("status") != "skipped"}


@dataclass
class Comparison:
    new: dict[str, list[str]] = field(default_factory=lambda: {"families": [], "vectors": []})
    fixed: dict[str, list[str]] = field(default_factory=lambda: {"families": [], "vectors": []})
    still: dict[str, list[str]] = field(default_factory=lambda: {"families": [], "vectors": []})

    def to_json(self) -> dict[str, Any]:
        return {"new": self.new, "fixed": self.fixed, "still": self.still}

    def count(self, which: str) -> int:
        return sum(len(ids) for ids in getattr(self, which).values())


def compare(old: dict[str, Any], new: dict[str, Any]) -> Comparison:
    """New, fixed and still-failing families and vectors from `old` to `new`."""
    out = Comparison()
    before, after = families(old), families(new)
    searched = bool(new.get("machine", {}).get("searched"))
    unknown = set() if searched else machine_only(old) - after
    out.new["families"] = sorted(after - before)
    out.fixed["families"] = sorted(before - after - unknown)
    out.still["families"] = sorted((before & after) | unknown)
    failing_before, failing_after, checked = vectors(old), vectors(new), ran(new)
    out.new["vectors"] = sorted(failing_after - failing_before)
    out.fixed["vectors"] = sorted((failing_before - failing_after) & checked)
    out.still["vectors"] = sorted((failing_before & failing_after) | (failing_before - checked))
    return out


def lines(comparison: Comparison, *, tty: bool) -> list[str]:
    """For a person (grouped, with counts), or piped: `STATE\\tKIND\\tID` a line (new, fixed, still; family, vector)."""
    out: list[str] = []
    for state, heading in (("new", "NEW (fails now, did not before)"), ("fixed", "FIXED (failed before, passes now)"),
                           ("still", "still failing")):
        groups = getattr(comparison, state)
        for kind in ("families", "vectors"):
            ids = groups[kind]
            if not tty:
                out.extend(f"{state}\t{kind[:-1] if kind == 'vectors' else 'family'}\t{name}" for name in ids)
            elif ids:
                out.append(f"{heading}: {len(ids):,} {kind if len(ids) != 1 else kind[:-1] if kind == 'vectors' else 'family'}")
                out.extend(f"  {name}" for name in ids)
    return out


def summary(comparison: Comparison) -> str:
    return (f"diff: {comparison.count('new'):,} new, {comparison.count('fixed'):,} fixed, "
            f"{comparison.count('still'):,} still failing (families and vectors)")
