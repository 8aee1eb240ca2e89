"""The conformance table: made from conform's reports by `sessionspec results`, held current, never typed."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from sessionspec.cli import main
from sessionspec.conformance import results
from support import valid_report

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "adapters" / "results.json"
README = ROOT / "README.md"
UPSTREAM = "@deepseek-ai/dsh-session"
PERSISTENCE = "@deepseek-ai/dsh-session-persistence-jsonl"
SERVE = [sys.executable, "-m", "sessionspec.cli", "serve", "--impl"]


def test_the_readme_table_is_the_results_file_rendered() -> None:
    readme = README.read_text(encoding="utf-8")
    assert results.with_table(readme, results.read_rows(RESULTS)) == readme


def test_the_table_has_our_two_implementations_and_the_upstreams_two() -> None:
    rows = {row.implementation: row for row in results.read_rows(RESULTS)}
    assert set(rows) == {"sessionspec-live", "sessionspec-model", UPSTREAM, PERSISTENCE}
    persistence = rows[PERSISTENCE]
    assert persistence.declared == "storage jsonl, jsonl.zstd" and persistence.not_applicable > 0
    assert persistence.listed == sum(persistence.families), "every family of the persistence run is in its list"
    assert rows[UPSTREAM].declared == "storage none" and rows["sessionspec-live"].not_applicable == 0
    for ours in ("sessionspec-live", "sessionspec-model"):
        assert rows[ours].families == (0, 0) and rows[ours].required[0] == rows[ours].required[1] > 0
    upstream = rows[UPSTREAM]
    assert upstream.version == "0.1.1-rc.2" and upstream.families[0] > 0
    assert upstream.listed == sum(upstream.families), "every family the upstream's run finds is in its failure list"
    assert upstream.command == ("node", "adapters/dsh-session/testee.mjs"), "a command anyone can run from the root"


@pytest.mark.parametrize("impl", ["live", "model"])
def test_a_run_of_ours_counts_what_its_row_says(tmp_path: Path, impl: str) -> None:
    """The rows of our implementations stay current at every test run: the counts do not depend on the examples."""
    report = tmp_path / "report.json"
    assert main(["conform", "--examples", "2", "--json", str(report), "--", *SERVE, impl]) == 0
    valid_report(report)
    assert main(["results", "--check", "--results", str(RESULTS), "--readme", str(README), str(report)]) == 0


def test_check_fails_on_a_stale_row_and_on_an_edited_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = results.read_rows(RESULTS)
    readme = tmp_path / "README.md"
    readme.write_text(results.with_table(README.read_text(encoding="utf-8"), rows), encoding="utf-8")
    live = next(row for row in rows if row.implementation == "sessionspec-live")
    report = tmp_path / "live.json"
    report.write_text(json.dumps(_report_of(live, required=(live.required[0] - 1, live.required[1]))), encoding="utf-8")
    assert main(["results", "--check", "--results", str(RESULTS), "--readme", str(readme), str(report)]) == 1
    assert "STALE sessionspec-live" in capsys.readouterr().out
    readme.write_text(readme.read_text(encoding="utf-8").replace("| `sessionspec-live", "| `sessionspec-lve"),
                      encoding="utf-8")
    assert main(["results", "--check", "--results", str(RESULTS), "--readme", str(readme)]) == 1
    assert "the table is not" in capsys.readouterr().out


def test_results_writes_the_row_of_a_report_and_the_table(tmp_path: Path) -> None:
    rows = results.read_rows(RESULTS)
    file, readme = tmp_path / "results.json", tmp_path / "README.md"
    file.write_text(results.rows_text(rows), encoding="utf-8")
    readme.write_text(f"# x\n\n{results.BEGIN}\nold\n{results.END}\n\nafter\n", encoding="utf-8")
    live = next(row for row in rows if row.implementation == "sessionspec-live")
    report = tmp_path / "live.json"
    report.write_text(json.dumps(_report_of(live, seconds=99.0)), encoding="utf-8")
    assert main(["results", "--results", str(file), "--readme", str(readme), str(report)]) == 0
    written = {row.implementation: row for row in results.read_rows(file)}
    assert written["sessionspec-live"].seconds == 99.0 and len(written) == len(rows)
    text = readme.read_text(encoding="utf-8")
    assert "old" not in text and "| 99 s |" in text and text.endswith("\n\nafter\n")
    assert main(["results", "--check", "--results", str(file), "--readme", str(readme), str(report)]) == 0


@pytest.mark.parametrize("change", ["stopped", "not searched", "not a report"])
def test_a_partial_run_or_another_file_makes_no_row(tmp_path: Path, change: str,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    live = next(row for row in results.read_rows(RESULTS) if row.implementation == "sessionspec-live")
    report = _report_of(live)
    if change == "stopped":
        report["stopped"] = "the run's deadline (1 s) passed"
    elif change == "not searched":
        report["machine"]["searched"] = False
    else:
        report = {"format": "something-else/1"}
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report), encoding="utf-8")
    assert main(["results", "--check", "--results", str(RESULTS), "--readme", str(README), str(path)]) == 2
    assert "sessionspec results:" in capsys.readouterr().err


def _report_of(row: results.Row, *, required: tuple[int, int] | None = None, seconds: float | None = None) -> dict:
    """The parts of a conform --json report a row is made from."""
    passing, reached = required or row.required
    return {
        "format": results.REPORT_FORMAT, "testee": {"implementation": row.implementation, "version": row.version},
        "command": list(row.command), "stopped": None, "crash": None, "machine": {"searched": True},
        "seconds": row.seconds if seconds is None else seconds,
        "levels": {"required": {"families": row.families[0], "rules": {"passing": passing, "reached": reached}},
                   "recommended": {"families": row.families[1],
                                   "rules": {"passing": row.recommended[0], "reached": row.recommended[1]}}},
        "families": [{"listed": True}] * row.listed,
    }


def test_the_upstreams_failure_list_is_split_by_level_and_says_why_of_each_required_entry() -> None:
    """Every entry has a comment; a required entry's says what the upstream does and which seed sentence or
    self-refusal it breaks (written by hand, so not the comment `--fix` writes); each rule is headed by its ground."""
    from sessionspec.conformance import failures

    text = (ROOT / "adapters" / "dsh-session" / "known-failures.txt").read_text(encoding="utf-8")
    required, recommended = text.split("\n# === recommended: rules this spec added\n")
    assert "\n# === required: deviations from what the seeds state\n" in required and failures.parse(required) and failures.parse(recommended)
    for section in (required, recommended):
        entries = [line for line in section.splitlines() if line and not line.startswith("#")]
        assert all("  # " in line for line in entries), [line for line in entries if "  # " not in line]
        assert section.count("because ") >= section.count("\n# SESSION-")
    for line in (line for line in required.splitlines() if line and not line.startswith("#")):
        comment = line.split("  # ", 1)[1]
        assert not comment.startswith(failures._WRITTEN) and len(comment) > 40, line


# --- outside the checkout, one row, any file (issue 35.3) -------------------------------------------------------------


def _live_report(tmp_path: Path) -> Path:
    live = next(row for row in results.read_rows(RESULTS) if row.implementation == "sessionspec-live")
    report = tmp_path / "live.json"
    report.write_text(json.dumps(_report_of(live, seconds=7.0)), encoding="utf-8")
    return report


def test_results_outside_a_checkout_prints_the_table_and_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    report = _live_report(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert main(["results", str(report)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("| implementation |") and len(out) == 3 and out[2].startswith("| `sessionspec-live")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["live.json"]


def test_results_print_in_a_checkout_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    report = _live_report(tmp_path)
    (tmp_path / "README.md").write_text("# x\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert main(["results", "--print", str(report)]) == 0
    assert "| 7 s |" in capsys.readouterr().out
    assert (tmp_path / "README.md").read_text(encoding="utf-8") == "# x\n"


def test_results_row_prints_one_implementations_row(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = _live_report(tmp_path)
    assert main(["results", "--results", str(RESULTS), "--row", "sessionspec-model", str(report)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 1 and out[0].startswith("| `sessionspec-model")
    assert main(["results", "--row", "sessionspec-live", str(report)]) == 0
    assert capsys.readouterr().out.splitlines() == [next(line for line in results.table(
        [results.read_report(report)]).splitlines() if "sessionspec-live" in line)]
    assert main(["results", "--row", "nobody", str(report)]) == 2


def test_results_file_writes_the_table_to_any_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    report = _live_report(tmp_path)
    monkeypatch.chdir(tmp_path)
    new = tmp_path / "docs" / "table.md"
    assert main(["results", "--file", str(new), str(report)]) == 0
    text = new.read_text(encoding="utf-8")
    assert text.startswith(results.BEGIN) and "| 7 s |" in text and text.endswith(results.END + "\n")
    assert not (tmp_path / "adapters").exists()  # no results file unless one is named or there
    page = tmp_path / "page.md"
    page.write_text(f"before\n{results.BEGIN}\nold\n{results.END}\nafter\n", encoding="utf-8")
    assert main(["results", "--file", str(page), str(report)]) == 0
    text = page.read_text(encoding="utf-8")
    assert text.startswith("before\n") and text.endswith("after\n") and "old" not in text and "| 7 s |" in text
    plain = tmp_path / "notes.md"
    plain.write_text("notes\n", encoding="utf-8")
    assert main(["results", "--file", str(plain), str(report)]) == 0
    assert plain.read_text(encoding="utf-8").startswith("notes\n\n" + results.BEGIN)
    rows = tmp_path / "results.json"
    rows.write_text(results.rows_text([]), encoding="utf-8")
    assert main(["results", "--file", str(rows), str(report)]) == 2  # the old meaning of --file: refused, not overwritten
    assert results.read_rows(rows) == []
