"""Baselines (spec/10, "Baselines"): `sessionspec diff`, `conform --baseline`, `--markdown` and the job summary."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from sessionspec.cli import main
from support import valid_report

PY = sys.executable
SERVE = [PY, "-m", "sessionspec.cli", "serve", "--impl"]
DOUBLE_MARKER = "planted:double-marker"
"""One family, `create:accepts differs:seq`, shown by two vectors."""
FAMILY = "create:accepts differs:seq"
VECTORS = ["SESSION-APPEND-COMMIT.5-accept", "SESSION-CORE-EVENTS.1-accept"]
PROVENANCE = "planted:provenance-unchecked"
"""Another family altogether."""


NO_STORAGE = ("--skip", "SESSION-CONFORMANCE-STORAGE.*")
"""The storage phase left out: most of the time of a run without the machine, and nothing a baseline treats apart
(its cases are vectors by id; test_10_selection.py and test_10_shards.py run it)."""


def conform(directory: Path, name: str, impl: str, *extra: str) -> tuple[int, Path]:
    report = directory / f"{name}.json"
    code = main(["conform", "--examples", "0", *NO_STORAGE, "--json", str(report), "--traces", str(directory / "traces"),
                 *extra, "--", *SERVE, impl])
    return code, report


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    directory = tmp_path_factory.mktemp("baseline")
    out = {}
    for name, impl, code in (("planted", DOUBLE_MARKER, 1), ("live", "live", 0)):
        done, out[name] = conform(directory, name, impl)
        assert done == code
    return out


def test_diff_names_the_new_and_the_fixed_and_exits_1_only_on_new(
        reports: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diff", str(reports["planted"]), str(reports["live"])]) == 0
    fixed = capsys.readouterr().out.splitlines()
    assert fixed == [f"fixed\tfamily\t{FAMILY}", *(f"fixed\tvector\t{v}" for v in VECTORS)]
    assert main(["diff", str(reports["live"]), str(reports["planted"])]) == 1
    new = capsys.readouterr()
    assert new.out.splitlines() == [f"new\tfamily\t{FAMILY}", *(f"new\tvector\t{v}" for v in VECTORS)]
    assert "3 new, 0 fixed, 0 still failing" in new.err
    assert main(["diff", str(reports["planted"]), str(reports["planted"])]) == 0
    assert capsys.readouterr().out.splitlines()[0] == f"still\tfamily\t{FAMILY}"


def test_diff_of_what_is_not_a_report_is_exit_2(tmp_path: Path, reports: dict[str, Path],
                                                capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "not.json").write_text('{"format": "something else"}')
    (tmp_path / "broken.json").write_text("{")
    for bad in ("not.json", "broken.json", "missing.json"):
        assert main(["diff", str(tmp_path / bad), str(reports["live"])]) == 2
        assert bad in capsys.readouterr().err


def test_a_baseline_run_fails_only_on_what_is_new(tmp_path: Path, reports: dict[str, Path],
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    code, report = conform(tmp_path, "same", DOUBLE_MARKER, "--baseline", str(reports["planted"]))
    assert code == 0, "what the baseline has fails nothing"
    data = valid_report(report)
    assert data["summary"]["unexpected"] == 0 and data["summary"]["expected"] == 2
    assert data["baseline"]["still"] == {"families": [FAMILY], "vectors": VECTORS}
    capsys.readouterr()
    code, report = conform(tmp_path, "other", PROVENANCE, "--baseline", str(reports["planted"]))
    assert code == 1
    data = valid_report(report)
    assert data["baseline"]["new"]["families"] and FAMILY not in data["baseline"]["new"]["families"]
    assert data["baseline"]["fixed"] == {"families": [FAMILY], "vectors": VECTORS}
    assert "fixed" in capsys.readouterr().out


def test_markdown_is_written_and_appended_to_the_job_summary(tmp_path: Path, reports: dict[str, Path],
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    step = tmp_path / "step-summary.md"
    step.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    code, _ = conform(tmp_path, "md", DOUBLE_MARKER, "--markdown", str(tmp_path / "summary.md"),
                      "--baseline", str(reports["live"]))
    assert code == 1
    text = (tmp_path / "summary.md").read_text()
    assert text.startswith("## sessionspec conform: sessionspec-planted:double-marker")
    assert f"`{FAMILY}`" in text and "**3 new**" in text and "| passed | skipped |" in text
    assert step.read_text() == "earlier step\n" + text


def test_diff_writes_its_comparison_as_json(tmp_path: Path, reports: dict[str, Path]) -> None:
    out = tmp_path / "diff.json"
    assert main(["diff", "--json", str(out), str(reports["live"]), str(reports["planted"])]) == 1
    assert json.loads(out.read_text())["new"] == {"families": [FAMILY], "vectors": VECTORS}
