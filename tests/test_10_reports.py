"""Self-describing reports (spec/10, "Reports"): a header that says what produced the report, a footer that says
whether the run completed and why not, the published schema, and the same header in JUnit's properties."""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import sessionspec
from sessionspec.cli import main
from sessionspec.conformance import vectors as vector_files
from support import report_validator, valid_report

PY = sys.executable
SERVE = [PY, "-m", "sessionspec.cli", "serve", "--impl"]
DIES = "import sys, json\nfor line in sys.stdin:\n    print(json.dumps({'ok': True, 'implementation': 'dies', " \
       "'version': '0', 'profile': 'scp-0'}), flush=True)\n    break\n"
"""Answers hello, then exits at the next request, every time it is restarted: declared unusable."""


@pytest.fixture(scope="module")
def live_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], ET.Element]:
    directory = tmp_path_factory.mktemp("reports")
    report, junit = directory / "report.json", directory / "junit.xml"
    assert main(["conform", "--examples", "3", "--timeout", "5", "--json", str(report), "--junit", str(junit),
                 "--traces", str(directory / "traces"), "--", *SERVE, "live"]) == 0
    return valid_report(report), ET.parse(junit).getroot()


def test_the_header_says_runner_spec_vectors_options_and_testee(live_run: tuple[dict[str, Any], ET.Element]) -> None:
    head = live_run[0]["header"]
    assert head["runner"] == {"name": "sessionspec", "version": sessionspec.version.__version__,
                              "python": head["runner"]["python"]}
    assert head["spec"]["digest"].startswith("sha256:") and len(head["spec"]["digest"]) == 71
    assert head["vectors"]["count"] == len(list(vector_files.DEFAULT_DIR.glob("*.json")))
    stored = vector_files.DEFAULT_DIR / "storage"
    assert head["vectors"]["storage"]["count"] == len(list(stored.glob("*.json"))) > 0
    assert head["vectors"]["storage"]["digest"].startswith("sha256:") and head["vectors"]["storage"]["digest"] != \
        head["vectors"]["digest"]
    assert live_run[0]["vectors"]["storage"] > 0, "the storage phase's cases are counted as vectors"
    assert head["options"]["examples"] == 3 and head["options"]["timeout"] == 5
    assert head["testee"]["command"] == [*SERVE, "live"]
    assert head["testee"]["hello"]["implementation"] == "sessionspec-live" and "ops" in head["testee"]["hello"]


def test_a_completed_run_says_so(live_run: tuple[dict[str, Any], ET.Element]) -> None:
    assert live_run[0]["footer"] == {"complete": True, "reason": None, "stopped": None, "partial": False}


def test_junit_carries_the_same_header_as_properties(live_run: tuple[dict[str, Any], ET.Element]) -> None:
    data, root = live_run
    for suite in root.iter("testsuite"):
        found = {p.get("name"): p.get("value") for p in suite.iter("property")}
        assert found["sessionspec.runner.version"] == data["header"]["runner"]["version"]
        assert found["sessionspec.spec.digest"] == data["header"]["spec"]["digest"]
        assert found["sessionspec.vectors.digest"] == data["header"]["vectors"]["digest"]
        assert found["sessionspec.options.examples"] == "3"
        assert json.loads(found["sessionspec.testee.hello"]) == data["header"]["testee"]["hello"]
        assert found["sessionspec.footer.complete"] == "True"


def test_a_run_stopped_by_an_unusable_testee_says_why(tmp_path: Path) -> None:
    script, report = tmp_path / "dies.py", tmp_path / "report.json"
    script.write_text(DIES)
    code = main(["conform", "--examples", "0", "--timeout", "2", "--json", str(report), "--traces", str(tmp_path / "t"),
                 "--", PY, str(script)])
    assert code in (1, 2)
    foot = valid_report(report)["footer"]
    assert foot["complete"] is False and foot["reason"] == "unusable" and "unusable" in foot["stopped"]


def test_the_schema_refuses_a_report_without_its_header_or_footer(live_run: tuple[dict[str, Any], ET.Element]) -> None:
    data = live_run[0]
    for key in ("header", "footer"):
        assert not report_validator().is_valid({k: v for k, v in data.items() if k != key})
    assert not report_validator().is_valid({**data, "summary": {**data["summary"], "passed": -1}})
    assert not report_validator().is_valid({**data, "footer": {**data["footer"], "reason": "tired"}})
