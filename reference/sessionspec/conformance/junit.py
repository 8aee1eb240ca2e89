"""JUnit XML for CI dashboards, written by junitparser from the run's cases (conformance/outcome.py).

One test case per vector, one per machine family, one for the machine's search, one per stale
failure-list entry; each name is stable from run to run (a vector's id, a family's failure-list
line, `machine search`), so a CI's history follows the same tests. An expected failure (listed in
the failure list) is a skipped case whose message is the entry, so a run whose every divergence is
listed shows no failure; a vector the testee could not take (needing what it does not declare: "not
applicable: ..."; a run that stopped: "not run: ...") is skipped with why. A failure's body is its divergence as JSON, bounded.
"""

from __future__ import annotations

import json
from pathlib import Path

from junitparser import Failure, JUnitXml, Skipped, TestCase, TestSuite

from sessionspec.conformance.outcome import EXPECTED, FAILED, NOT_APPLICABLE, SKIPPED, Case, Outcome

SUITES = ("vectors", "machine", "failure list", "runner")


def write(path: Path, outcome: Outcome, testee: str) -> None:
    report = JUnitXml(f"sessionspec conform [{testee}]")
    for name in SUITES:
        cases = [case for case in outcome.cases if case.suite == name]
        if not cases:
            continue
        suite = TestSuite(f"sessionspec-conformance.{name.replace(' ', '-')}")
        for case in cases:
            suite.add_testcase(_testcase(case))
        suite.update_statistics()  # type: ignore[no-untyped-call]
        report.add_testsuite(suite)
    report.update_statistics()  # type: ignore[no-untyped-call]
    report.write(str(path), pretty=True)


def _testcase(case: Case) -> TestCase:
    junit = TestCase(case.name, f"sessionspec.{case.suite.replace(' ', '-')}", round(case.seconds, 4))
    if case.status == FAILED:
        level = f"[{case.level}] " if case.level else ""
        failure = Failure(f"{level}{case.message}"[:1000], case.divergence.kind if case.divergence else "failure")
        failure.text = (json.dumps(case.divergence.to_json(), indent=1, ensure_ascii=True, sort_keys=True)
                        if case.divergence is not None else case.message)
        junit.result = [failure]
    elif case.status == EXPECTED:
        junit.result = [Skipped(f"expected failure [{case.level}]: {case.message}"[:1000])]
    elif case.status == SKIPPED:
        junit.result = [Skipped(case.message[:1000])]
    elif case.status == NOT_APPLICABLE:  # spec/10, "Capabilities": needs what the testee does not declare
        junit.result = [Skipped(f"not applicable: {case.message}"[:1000])]
    return junit
