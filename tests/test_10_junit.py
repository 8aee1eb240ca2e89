"""The JUnit report as a CI reads it (spec/10, "Reports"; conformance/junit.py).

A CI step runs `conform --failures LIST --junit FILE` and shows the file: a run whose every
divergence is listed must show no failure (the listed ones as skipped, with the entry as the
message), the same case names on every run (a dashboard's history follows them), and a file its
JUnit reader accepts (validated against tests/fixtures/junit.xsd).
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import xmlschema
from sessionspec.cli import main

SERVE = [sys.executable, "-m", "sessionspec.cli", "serve", "--impl"]
PLANTED = "planted:provenance-unchecked"
SCHEMA = Path(__file__).parent / "fixtures" / "junit.xsd"


def _run(directory: Path, name: str, *extra: str) -> tuple[int, ET.Element]:
    junit = directory / f"{name}.xml"
    code = main(["conform", "--examples", "20", "--junit", str(junit), *extra, "--", *SERVE, PLANTED])
    return code, ET.parse(junit).getroot()


@pytest.fixture(scope="module")
def listed_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[tuple[int, ET.Element]]]:
    """Two runs against one planted bug: one unlisted, then one with the failure list `--fix` wrote from it.

    The two are the two runs whose case names must be the same: a CI's first run and the runs after it lists what
    that run found (a third run, as the second, would only add a quarter of a minute).
    """
    directory = tmp_path_factory.mktemp("junit")
    listed = directory / "known.txt"
    first = _run(directory, "unlisted", "--failures", str(listed), "--fix")
    return directory, [first, _run(directory, "listed", "--failures", str(listed))]


def _cases(root: ET.Element) -> list[ET.Element]:
    return list(root.iter("testcase"))


def test_an_unlisted_divergence_is_a_failure_with_a_json_body(listed_runs: tuple[Path, list[tuple[int, ET.Element]]]) -> None:
    _, [(code, root), *_] = listed_runs
    assert code == 0, "--fix wrote the list, so the run is as listed"
    failed = [case for case in _cases(root) if case.find("failure") is not None]
    assert failed and int(root.get("failures", "0")) == len(failed)
    body = failed[0].find("failure")
    assert body is not None and (body.text or "").lstrip().startswith("{"), "a failure's body is JSON, not a Python repr"


def test_a_run_whose_divergences_are_all_listed_shows_no_failure_and_each_listed_one_skipped(
        listed_runs: tuple[Path, list[tuple[int, ET.Element]]]) -> None:
    directory, [_, (code, root)] = listed_runs
    assert code == 0
    assert root.get("failures") == "0" and root.get("errors") == "0"
    entries = {line.split("#")[0].strip() for line in (directory / "known.txt").read_text().splitlines()
               if line.strip() and not line.startswith("#")}
    expected = [case.find("skipped") for case in _cases(root)]
    messages = [skip.get("message", "") for skip in expected if skip is not None and "expected failure" in skip.get("message", "")]
    assert len(messages) >= len(entries) > 0
    assert int(root.get("skipped", "0")) >= len(messages)


def test_case_names_are_identical_across_two_runs(listed_runs: tuple[Path, list[tuple[int, ET.Element]]]) -> None:
    """The unlisted run and the listed one: listing a divergence turns its case from failed to skipped, not renamed."""
    _, [(_, one), (_, two)] = listed_runs
    names = [[(case.get("classname"), case.get("name")) for case in _cases(root)] for root in (one, two)]
    assert names[0] == names[1]
    assert len(set(names[0])) == len(names[0]), "no two cases share a name"
    assert all(case.get("time") is not None for case in _cases(one))


def test_the_report_validates_against_the_junit_schema(listed_runs: tuple[Path, list[tuple[int, ET.Element]]]) -> None:
    directory, _ = listed_runs
    schema = xmlschema.XMLSchema(str(SCHEMA))
    for name in ("unlisted", "listed"):
        schema.validate(str(directory / f"{name}.xml"))


def test_the_schema_refuses_what_a_ci_would_misread(tmp_path: Path) -> None:
    """The schema has teeth: a case without a time, or with two results, is refused."""
    schema = xmlschema.XMLSchema(str(SCHEMA))
    head = '<testsuites tests="1" failures="1" errors="0" skipped="0" time="0"><testsuite name="s" tests="1" failures="1" errors="0" skipped="0" time="0">'
    tail = "</testsuite></testsuites>"
    assert schema.is_valid(head + '<testcase name="a" classname="c" time="0.1"><failure message="m">{}</failure></testcase>' + tail)
    assert not schema.is_valid(head + '<testcase name="a" classname="c"><failure/></testcase>' + tail)
    assert not schema.is_valid(head + '<testcase name="a" classname="c" time="0"><failure/><skipped/></testcase>' + tail)
