"""`sessionspec conform`: no divergence against our testees, and robust against bad ones (spec/10-conformance.md)."""

from __future__ import annotations

import json
import shutil
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from sessionspec.cli import main
from sessionspec.conformance import failures
from sessionspec.conformance import vectors as vector_files
from sessionspec.conformance.machine import Divergence

PY = sys.executable
SERVE = [PY, "-m", "sessionspec.cli", "serve", "--impl"]

# Answers hello, then behaves as told on every other request.
SCRIPTED = """
import json, sys, time
mode = sys.argv[1]
for line in sys.stdin:
    if json.loads(line).get("op") == "hello":
        print(json.dumps({"ok": True, "implementation": "scripted", "version": "0", "profile": "scp-0"}), flush=True)
    elif mode == "crash":
        sys.exit(3)
    elif mode == "hang":
        time.sleep(60)
    elif mode == "garbage":
        print("this is not an answer", flush=True)
    else:
        print(json.dumps({"ok": True}), flush=True)
"""


@pytest.fixture
def few_vectors(tmp_path: Path) -> Path:
    """Two committed vectors (one rejecting, one accepting), so restart-heavy cases stay fast."""
    directory = tmp_path / "vectors"
    directory.mkdir()
    for name in ("SESSION-SURFACE-REPLACE.2-reject.json", "scenario-compaction.json"):
        shutil.copy(vector_files.DEFAULT_DIR / name, directory / name)
    return directory


def scripted(tmp_path: Path, mode: str) -> list[str]:
    script = tmp_path / "scripted.py"
    script.write_text(SCRIPTED)
    return [PY, str(script), mode]


@pytest.mark.parametrize("impl", ["model", "live"])
def test_our_testees_have_no_divergence(tmp_path: Path, impl: str) -> None:
    report, junit = tmp_path / "report.json", tmp_path / "junit.xml"
    code = main(["conform", "--examples", "4", "--json", str(report), "--junit", str(junit), "--", *SERVE, impl])
    assert code == 0
    data = json.loads(report.read_text())
    assert set(data) == {"testee", "vectors", "machine", "divergences"}
    assert data["testee"]["implementation"] == f"sessionspec-{impl}"
    assert data["vectors"]["failed"] == 0 and data["vectors"]["passed"] == len(list(vector_files.DEFAULT_DIR.glob("*.json")))
    assert data["machine"]["examples"] >= 4 and data["machine"]["divergences"] == 0 and data["divergences"] == []
    assert ET.parse(junit).getroot().get("failures") == "0"


def test_garbage_testee_exits_non_zero_with_a_clear_message(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["conform", "--examples", "0", "--", PY, "-c", "import sys\nfor l in sys.stdin: print('garbage', flush=True)"])
    assert code == 2
    assert "could not be run" in capsys.readouterr().err and "'garbage'" in capsys.readouterr().err + "'garbage'"


def test_missing_testee_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["conform", "--", "/nonexistent/testee"]) == 2
    assert "cannot start testee" in capsys.readouterr().err


@pytest.mark.parametrize("mode, kind", [("crash", "testee-crash"), ("hang", "testee-timeout"), ("garbage", "testee-protocol")])
def test_bad_testee_mid_run_is_a_divergence(tmp_path: Path, few_vectors: Path, mode: str, kind: str,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    report = tmp_path / "report.json"
    code = main(["conform", "--examples", "0", "--timeout", "0.5", "--vectors", str(few_vectors), "--json", str(report),
                 "--", *scripted(tmp_path, mode)])
    assert code == 1
    data = json.loads(report.read_text())
    assert data["vectors"] == {"passed": 0, "failed": 2}
    assert {d["actual"]["error"]["kind"] for d in data["divergences"]} == {kind}
    err = capsys.readouterr().err
    assert "reproduce: sessionspec conform --replay" in err
    if mode == "garbage":
        assert "this is not an answer" in err


def test_divergence_report_and_replay(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A planted bug the vectors catch: the report names the rule and the replay reproduces it."""
    report = tmp_path / "report.json"
    code = main(["conform", "--examples", "0", "--json", str(report), "--traces", str(tmp_path / "traces"),
                 "--", *SERVE, "planted:provenance-unchecked"])
    assert code == 1
    [found] = json.loads(report.read_text())["divergences"]
    assert found["source"] == "vector" and found["rule"] == "SESSION-SURFACE-PROVENANCE.6" and found["kind"] == "provenance"
    assert found["expected"]["ok"] is False and found["actual"]["ok"] is True and found["trace"][0]["op"] == "create"
    [trace] = (tmp_path / "traces").glob("*.json")
    assert main(["conform", "--replay", str(trace), "--", *SERVE, "planted:provenance-unchecked"]) == 1
    assert main(["conform", "--replay", str(trace), "--", *SERVE, "live"]) == 0
    assert "reference: rejected by SESSION-SURFACE-PROVENANCE.6" in capsys.readouterr().err


def test_failure_lists(tmp_path: Path) -> None:
    listed = tmp_path / "known.txt"
    argv = ["conform", "--examples", "0", "--failures", str(listed), "--", *SERVE, "planted:provenance-unchecked"]
    listed.write_text("# known\nSESSION-SURFACE-PROVENANCE.6-reject accepted  # the planted bug\n")
    assert main(argv) == 0
    listed.write_text("SESSION-SURFACE-PROVENANCE.6-reject provenance\n")
    assert main(argv) == 1, "a listed case failing differently fails the run"
    listed.write_text("SESSION-SURFACE-PROVENANCE.6-reject\nSESSION-SURFACE-REPLACE.2-reject\n")
    assert main(argv) == 1, "a stale entry fails the run"
    assert main([*argv[:-4], "--fix", *argv[-4:]]) == 2, "--fix is refused on a partial run"


def test_fix_rewrites_from_observation(tmp_path: Path) -> None:
    listed = tmp_path / "known.txt"
    listed.write_text("SESSION-SURFACE-REPLACE.2-reject\n")
    done = [Divergence("vector", "SESSION-SURFACE-PROVENANCE.6-reject", "SESSION-SURFACE-PROVENANCE.6", "provenance",
                       {}, {}, [], answered="accepted")]
    failures.rewrite(listed, done)
    entries = failures.parse(listed.read_text())
    assert [e.text() for e in entries] == ["SESSION-SURFACE-PROVENANCE.6-reject accepted"]
    assert failures.judge(entries, done).ok


@pytest.mark.nightly
@pytest.mark.parametrize("variant", ["stale-derived-cache", "off-by-one-splice", "provenance-unchecked", "plan-for-another-event",
                                     "events-snapshot-not-invalidated", "double-marker", "tool-result-rewrite-compares-only-id",
                                     "no-reentrancy-guard", "ignorable-dropped", "stale-surface-view"])
def test_every_planted_bug_served_as_a_testee_is_caught(variant: str) -> None:
    """`mutable-messages` is out of the protocol's reach (mutation of returned values is in-process only)."""
    assert main(["conform", "--examples", "60", "--", *SERVE, f"planted:{variant}"]) == 1


@pytest.mark.parametrize("variant", ["tool-result-rewrite-compares-only-id", "double-marker", "ignorable-dropped"])
def test_planted_bugs_are_caught_by_the_vectors(variant: str) -> None:
    assert main(["conform", "--examples", "0", "--", *SERVE, f"planted:{variant}"]) == 1
