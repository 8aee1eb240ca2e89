"""The runner's storage phase (spec/10, "Storage capability"): our testees pass it, a testee without the capability
gets it as not applicable, and a testee that declares one backend is judged on that one."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from sessionspec.cli import main
from sessionspec.conformance import outcome as outcomes
from sessionspec.conformance import runner
from sessionspec.conformance.failures import Verdict
from sessionspec.conformance.storagephase import NOT_APPLICABLE, declared
from sessionspec.conformance.storagevectors import saved, vectorfiles

SERVE = [sys.executable, "-m", "sessionspec.cli", "serve", "--impl"]
STORAGE_CASES = ("save:", "crash:", "repair:")


def bare_testee(tmp_path: Path, backends: tuple[str, ...]) -> list[str]:
    """A testee of `live` declaring only `backends` (none: no storage capability)."""
    script = tmp_path / "testee.py"
    script.write_text("import sys\nfrom sessionspec import live\nfrom sessionspec.wire.executor import Executor\n"
                      "from sessionspec.wire.serve import serve\n"
                      f"serve(Executor(live.Session.create, 'bare', storage={backends!r}), sys.stdin.buffer, "
                      "sys.stdout.buffer)\n")
    return [sys.executable, str(script)]


def storage_outcomes(result: runner.Result) -> list[runner.VectorOutcome]:
    ids = {v["id"] for v in vectorfiles.load()}
    return [v for v in result.vectors if v.id in ids or v.id.startswith(STORAGE_CASES)]


def test_hello_declares_what_the_phase_runs() -> None:
    assert declared({"storage": ["sqlite", "jsonl", "xml"]}) == ("jsonl", "sqlite")
    assert declared({}) == () and declared({"storage": "jsonl"}) == ()


@pytest.mark.parametrize("impl", ["live", "model"])
def test_our_testees_pass_the_storage_phase(impl: str, tmp_path: Path) -> None:
    """SESSION-CONFORMANCE-STORAGE.1-.3 over the wire: every load vector, every save, every crash trial passes."""
    result = runner.run(runner.Options([*SERVE, impl], examples=0, traces_dir=tmp_path))
    cases = storage_outcomes(result)
    assert {c.status for c in cases} <= {"passed", "skipped"}, [(c.id, c.divergence and c.divergence.why)
                                                                  for c in cases if c.status == "failed"]
    assert sum(c.id.startswith("save:") for c in cases) == len(saved.names()) * 3
    # The bound sessions (a 64 MiB record) are the ci profile's: skipped with why by default, never silently left out.
    assert {c.status for c in cases if c.id.startswith("save:") and c.id.split(":")[1] in saved.BOUNDS} == {"skipped"}
    assert sum(c.id.startswith("crash:") for c in cases) == 3
    assert sum(c.id.startswith("repair:") for c in cases) >= 8  # SESSION-CONFORMANCE-STORAGE.4 over the wire
    assert all(c.reason.endswith("run with --profile ci or nightly") for c in cases if c.status == "skipped")
    assert result.storage_seconds > 0 and not result.divergences


def test_a_testee_without_storage_gets_the_phase_as_not_applicable(tmp_path: Path) -> None:
    result = runner.run(runner.Options(bare_testee(tmp_path, ()), examples=0, traces_dir=tmp_path / "t"))
    cases = storage_outcomes(result)
    assert cases and {c.status for c in cases} == {NOT_APPLICABLE}
    assert all(c.reason.startswith("needs storage, which the testee does not declare") for c in cases)
    judged = outcomes.outcome(result, Verdict([], [], []))
    assert judged.count(outcomes.FAILED) == 0 and judged.count(outcomes.NOT_APPLICABLE) == len(cases)


def test_a_testee_of_one_backend_is_judged_on_that_one(tmp_path: Path) -> None:
    result = runner.run(runner.Options(bare_testee(tmp_path, ("jsonl",)), examples=0, traces_dir=tmp_path / "t"))
    vectors = {v["id"]: v for v in vectorfiles.load()}
    for case in storage_outcomes(result):
        name = case.id.removeprefix("repair:")
        backend = vectors[name]["backend"] if name in vectors else case.id.rsplit(":", 1)[-1]
        if backend in ("jsonl", "none"):
            assert case.status in ("passed", "skipped"), case.id
        else:
            assert case.status == NOT_APPLICABLE and "does not declare" in case.reason, case.id
    assert not result.divergences


def test_the_report_counts_storage_cases(tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    assert main(["conform", "--examples", "0", "--json", str(report), "--", *bare_testee(tmp_path, ())]) == 0
    cases = json.loads(report.read_text())["cases"]
    assert any(c["status"] == NOT_APPLICABLE and c["name"] == "SESSION-STORAGE-LOAD.1-jsonl" for c in cases)
