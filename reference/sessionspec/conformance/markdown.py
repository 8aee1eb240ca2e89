"""A report's summary as markdown, for the page a CI shows (`conform --markdown`, `$GITHUB_STEP_SUMMARY`).

GitHub shows a job's summary as markdown, and most CI pages render it: so the summary says, in a
few lines a reviewer reads on the pull request, which implementation was run by which runner, the
numbers, what is new against the baseline and what was fixed, each family with its level, and
whether the run completed. It is made from the `--json` report alone, so `merge` writes the same
one for a whole made of parts. Text from a testee is escaped: it goes into a table, not a page.
"""

from __future__ import annotations

from typing import Any, Final

from sessionspec.conformance.baseline import Comparison

SHOWN: Final = 50
"""Families listed at most: a summary is for reading, the JSON report has them all."""


def cell(text: object) -> str:
    """Text safe in a markdown table cell: pipes, backticks and newlines escaped, bounded."""
    value = str(text).replace("\\", "\\\\").replace("|", "\\|").replace("`", "\\`").replace("\n", " ")
    return value if len(value) <= 200 else value[:200] + "..."


def summary(report: dict[str, Any], comparison: Comparison | None = None) -> str:
    testee = report.get("testee") or {}
    head = report.get("header") or {}
    runner = head.get("runner") or {}
    numbers = report.get("summary") or {}
    lines = [f"## sessionspec conform: {cell(testee.get('implementation', '?'))} {cell(testee.get('version', ''))}",
             "", f"runner sessionspec {cell(runner.get('version', '?'))}, spec "
                 f"`{str((head.get('spec') or {}).get('digest', '?'))[7:19]}`, vectors "
                 f"`{str((head.get('vectors') or {}).get('digest', '?'))[7:19]}`"
             + (f", seed {head['seed']}" if head.get("seed") is not None else ""), "",
             "| " + " | ".join(numbers) + " |", "|" + "---|" * len(numbers),
             "| " + " | ".join(f"{value:,}" if isinstance(value, int) else cell(value) for value in numbers.values()) + " |",
             ""]
    if comparison is not None:
        lines.extend(_baseline(comparison))
    families = [f for f in report.get("families", []) if isinstance(f, dict)]
    if families:
        lines += ["| family | level | known | vectors | machine |", "|---|---|---|---|---|"]
        lines.extend(f"| `{cell(f.get('family'))}` | {cell(f.get('level'))} | {'yes' if f.get('listed') else '**no**'} "
                     f"| {len(f.get('vectors') or [])} | {f.get('machine', 0)} |" for f in families[:SHOWN])
        if len(families) > SHOWN:
            lines.append(f"\n... and {len(families) - SHOWN:,} more families (see the JSON report)")
        lines.append("")
    footer = report.get("footer") or {}
    if footer.get("complete") is False:
        lines.append(f"**The run did not complete** ({cell(footer.get('reason'))}): {cell(footer.get('stopped'))}")
    else:
        lines.append("The run completed.")
    return "\n".join(lines) + "\n"


def _baseline(comparison: Comparison) -> list[str]:
    out = [f"Against the baseline: **{comparison.count('new'):,} new**, {comparison.count('fixed'):,} fixed, "
           f"{comparison.count('still'):,} still failing.", ""]
    for state, title in (("new", "New"), ("fixed", "Fixed")):
        ids = [f"`{cell(name)}`" for kind in ("families", "vectors") for name in getattr(comparison, state)[kind]]
        if ids:
            out.append(f"{title}: " + ", ".join(ids[:SHOWN]) + (" ..." if len(ids) > SHOWN else ""))
            out.append("")
    return out
