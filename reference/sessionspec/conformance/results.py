"""The conformance table: how each implementation stands, one row each, made from `conform --json` reports.

bufbuild's protobuf-conformance publishes one table of every implementation's results, each row
produced by a run and never typed. This is that table for the session model: per implementation,
the required rules passing (of those its run reached), the recommended ones, the families of
divergence found by level, and how long the run took. Rows live in a results file
(`adapters/results.json`), each made from one report; the README shows the table between two
markers, and `sessionspec results --check` fails when either has gone stale: a report whose counts
differ from its row, or a README whose table differs from the file. Time is shown, never compared:
it is a measurement of one machine, not a result.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Final

from sessionspec.preview import shown

FORMAT: Final = "sessionspec-conformance-results/1"
BEGIN: Final = "<!-- conformance results: begin (sessionspec results writes this table; do not edit) -->"
END: Final = "<!-- conformance results: end -->"
REPORT_FORMAT: Final = "sessionspec-conform-report/1"


class ResultsError(Exception):
    """A report, results file or README that cannot be used as it is (exit 2)."""


@dataclass(frozen=True)
class Row:
    """One implementation's standing, as its report counts it."""

    implementation: str
    version: str
    required: tuple[int, int]
    """Required rules passing, and required rules the run reached."""
    recommended: tuple[int, int]
    families: tuple[int, int]
    """Families of divergence found: required, recommended."""
    listed: int
    """Of those families, how many the implementation's failure list names."""
    seconds: float
    command: tuple[str, ...]
    declared: str = ""
    """What the implementation's hello declares beyond the core ops: its storage backends and extensions."""
    not_applicable: int = 0
    """Cases not applicable to it: they need what it does not declare (spec/10, "Capabilities")."""

    @property
    def name(self) -> str:
        return f"{self.implementation} {self.version}".strip()

    def counts(self) -> tuple[Any, ...]:
        """What `--check` compares: everything but the time."""
        return (self.implementation, self.version, self.required, self.recommended, self.families, self.listed,
                self.declared, self.not_applicable)

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["required"], out["recommended"] = list(self.required), list(self.recommended)
        out["families"], out["command"] = list(self.families), list(self.command)
        return out

    @classmethod
    def from_json(cls, data: Any) -> Row:
        try:
            return cls(str(data["implementation"]), str(data["version"]), _pair(data["required"]),
                       _pair(data["recommended"]), _pair(data["families"]), int(data["listed"]),
                       float(data["seconds"]), tuple(str(word) for word in data["command"]),
                       str(data.get("declared", "")), int(data.get("not_applicable", 0)))
        except (KeyError, TypeError, ValueError, RecursionError) as error:  # float(10 MiB of text) quotes all of it
            raise ResultsError(f"a row of the results file is not a row: {shown(error)}") from None


def _pair(value: Any) -> tuple[int, int]:
    first, second = value
    return int(first), int(second)


def row_of(report: Any, where: str = "the report") -> Row:
    """The row a `conform --json` report makes; ResultsError if it is not one, or is of a partial run."""
    if not isinstance(report, dict) or report.get("format") != REPORT_FORMAT:
        raise ResultsError(f"{where}: not a conform report ({REPORT_FORMAT})")
    if report.get("stopped") or report.get("crash") or not report.get("machine", {}).get("searched"):
        raise ResultsError(f"{where}: a partial run (stopped, crashed or without the machine) makes no row")
    testee, levels = report["testee"], report["levels"]
    families = report.get("families", [])
    return Row(str(testee.get("implementation", "?")), str(testee.get("version", "")),
               (levels["required"]["rules"]["passing"], levels["required"]["rules"]["reached"]),
               (levels["recommended"]["rules"]["passing"], levels["recommended"]["rules"]["reached"]),
               (levels["required"]["families"], levels["recommended"]["families"]),
               sum(bool(f.get("listed")) for f in families), float(report.get("seconds", 0.0)),
               tuple(str(word) for word in report.get("command", [])), declared_text(report.get("capabilities")),
               int(report.get("summary", {}).get("notApplicable", 0)))


def declared_text(capabilities: Any) -> str:
    """`storage jsonl, jsonl.zstd; x-hooks`: the backends and extensions a hello declares, as the table shows them."""
    if not isinstance(capabilities, dict):
        return "?"
    storage = ", ".join(str(name) for name in capabilities.get("storage") or []) or "none"
    extensions = ", ".join(str(name) for name in capabilities.get("extensions") or [])
    return f"storage {storage}" + (f"; {extensions}" if extensions else "")


def read_report(path: Path) -> Row:
    try:
        return row_of(json.loads(path.read_text(encoding="utf-8")), str(path))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ResultsError(f"{path}: {error}") from None
    except (KeyError, TypeError) as error:
        raise ResultsError(f"{path}: not a conform report: missing {error}") from None


def read_rows(path: Path) -> list[Row]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ResultsError(f"{path}: {error}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("rows"), list):
        raise ResultsError(f"{path}: not a results file ({FORMAT})")
    return [Row.from_json(row) for row in data["rows"]]


def rows_text(rows: Iterable[Row]) -> str:
    """The results file's text: rows in a stable order (ours first, then by name)."""
    ordered = sorted(rows, key=lambda row: (not row.implementation.startswith("sessionspec-"), row.name))
    body = ",\n".join(f"    {json.dumps(row.to_json())}" for row in ordered)
    return f'{{\n  "format": "{FORMAT}",\n  "rows": [\n{body}\n  ]\n}}\n'


def merged(rows: Sequence[Row], new: Iterable[Row]) -> list[Row]:
    """`rows` with each of `new` in place of the row of the same implementation (or added)."""
    out = {row.implementation: row for row in rows}
    out.update((row.implementation, row) for row in new)
    return list(out.values())


def stale(rows: Sequence[Row], reports: Iterable[Row]) -> list[str]:
    """What each report says that its row does not (the time aside)."""
    by_name = {row.implementation: row for row in rows}
    problems = []
    for report in reports:
        row = by_name.get(report.implementation)
        if row is None:
            problems.append(f"{report.name}: no row in the results file")
        elif row.counts() != report.counts():
            problems.append(f"{report.name}: the run counts {_counted(report)}, the results file {_counted(row)}")
    return problems


def _counted(row: Row) -> str:
    return (f"{row.version}, required {row.required[0]}/{row.required[1]}, recommended {row.recommended[0]}/"
            f"{row.recommended[1]}, families {row.families[0]} required + {row.families[1]} recommended "
            f"({row.listed} listed), declared {row.declared or '?'}, {row.not_applicable} not applicable")


def table(rows: Sequence[Row]) -> str:
    """The Markdown table the README shows."""
    lines = ["| implementation | declared | required rules passing | recommended rules passing | families found "
             "(required + recommended) | not applicable | run time |", "|---|---|---|---|---|---|---|"]
    for row in sorted(rows, key=lambda row: (not row.implementation.startswith("sessionspec-"), row.name)):
        lines.append(f"| `{row.name}` | {row.declared or '?'} | {_share(row.required)} | {_share(row.recommended)} | "
                     f"{row.families[0]} + {row.families[1]} | {row.not_applicable} | {row.seconds:.0f} s |")
    return "\n".join(lines)


def _share(pair: tuple[int, int]) -> str:
    passing, reached = pair
    return f"{passing} of {reached}"


def with_table(readme: str, rows: Sequence[Row], where: str = "README.md") -> str:
    """`readme` with the table between its markers replaced by the table of `rows`."""
    start, end = readme.find(BEGIN), readme.find(END)
    if start < 0 or end < start:
        raise ResultsError(f"{where}: no conformance table markers ({BEGIN} ... {END})")
    return readme[: start + len(BEGIN)] + "\n" + table(rows) + "\n" + readme[end:]
