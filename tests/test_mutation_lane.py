"""The mutation lane's own parts (mutation/): its operators, the oracle's stages and the report's arithmetic.

The lane itself is too heavy for the suite (minutes per mutant); these keep what it is built of
honest: an operator makes the mutant it says, a hung stage is killed with its whole process group
and counted as killed, a survivor is judged equivalent only by an entry that names its exact lines,
and the score is killed over non-equivalent. cosmic-ray is the `mutation` extra: the operator
tests are skipped without it.
"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

LANE = Path(__file__).resolve().parents[1] / "mutation"
sys.path.insert(0, str(LANE))

import oracle  # noqa: E402
import report  # noqa: E402


def test_each_own_operator_makes_the_mutants_its_examples_show() -> None:
    pytest.importorskip("cosmic_ray")
    import operators
    from cosmic_ray.mutating import mutate_code

    for name in operators.OWN:
        operator = operators.operator(f"sessionspec/{name}")
        for example in operator.examples():
            mutated = mutate_code(example.pre_mutation_code, operator, example.occurrence)
            assert mutated == example.post_mutation_code, (name, example)


def test_the_lane_uses_its_own_operators_and_no_identity_swaps() -> None:
    pytest.importorskip("cosmic_ray")
    import operators

    names = operators.operator_names()
    assert {f"sessionspec/{name}" for name in operators.OWN} <= set(names)
    assert not set(operators.IDENTITY_SWAPS) & set(names)
    assert "core/ReplaceBinaryOperator_Add_Mul" not in names and "core/ReplaceBinaryOperator_Add_Sub" in names


def test_annotations_are_left_out_only_under_postponed_evaluation() -> None:
    pytest.importorskip("cosmic_ray")
    import run

    source = "from __future__ import annotations\n\ndef f(x: int | None) -> a | b:\n    y: c | d = 1\n    return x | y\n"
    spans = run.annotation_spans(source)
    assert ((3, 9), (3, 19)) in spans and ((3, 24), (3, 29)) in spans and ((4, 7), (4, 12)) in spans
    assert all(start[0] != 5 for start, _ in spans)
    assert run.annotation_spans(source.replace("from __future__ import annotations\n", "")) == []


def test_every_target_stops_after_conform_in_the_conform_lane() -> None:
    assert oracle.stages("live", "conform") == ["vectors", "conform"]
    assert oracle.stages("live", "both") == ["vectors", "conform", "machine", "fastforms"]
    assert oracle.stages("storage", "conform") == ["conform", "bounds"]
    assert oracle.stages("storage", "both") == ["conform", "bounds", "storage", "check"]
    assert oracle.stages("text", "conform") == ["vectors", "conform"]
    assert oracle.parse_timeouts("vectors=120,machine=300") == {"vectors": 120.0, "machine": 300.0}


def test_every_test_file_a_stage_names_exists() -> None:
    """A renamed test file made the storage stage a pytest usage error (exit 4), so its baseline failed."""
    for target, named in oracle.STAGES.items():
        for name, command in named.items():
            files = [part for part in command if part.startswith("tests/")]
            missing = [part for part in files if not (oracle.TREE / part).is_file()]
            assert not missing, f"{target} stage {name} names test files that do not exist: {missing}"
    assert "LiveAgainstModel" in (oracle.TREE / "tests" / "test_machine.py").read_text(encoding="utf-8")


def test_the_storage_stage_runs_every_chapter_07_test() -> None:
    """A chapter-07 test file added later reaches the storage readers too: the stage must not miss it."""
    named = set(oracle.STAGES["storage"]["storage"])
    chapter = {f"tests/{path.name}" for path in (oracle.TREE / "tests").glob("test_07_*.py")}
    assert chapter - named == set(), f"the storage stage leaves out {sorted(chapter - named)}"


def test_a_stage_out_of_time_is_killed_with_its_children() -> None:
    """A mutant that hangs the testee (a child of the stage) must not hang the lane."""
    command = [sys.executable, "-c", "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', "
               "'import time; time.sleep(600)']); time.sleep(600)"]
    code, _, _ = oracle.run_stage(command, 2.0, oracle.environment(None))
    assert code is None
    finished = oracle.run_stage([sys.executable, "-c", "print('x')"], None, oracle.environment(None))
    assert finished[0] == 0 and finished[1] == "x"


@pytest.mark.parametrize(("output", "stage"), [
    ("--- stage vectors: exit 1 in 4.0 s\noracle: killed by vectors (exit 1, 4.0 s)", "vectors"),
    ("oracle: killed by machine (timeout after 300 s)", "machine timeout"),
    ("timeout", "timeout"),
    ("garbage", "unknown"),
])
def test_the_report_reads_which_stage_killed_a_mutant(output: str, stage: str) -> None:
    assert report.killed_by(output) == stage


DIFF = """--- a/reference/sessionspec/live/fastpath.py
+++ b/reference/sessionspec/live/fastpath.py
@@ -102,7 +102,7 @@
     \"\"\"Copy in C.\"\"\"
-    if depth > _DEPTH:
+    if depth >= _DEPTH:
         raise _Slow"""


def _record(outcome: str, killed_by: str | None = None, equivalent: str | None = None) -> dict[str, Any]:
    return {"outcome": outcome, "killed_by": killed_by, "equivalent": equivalent}


def test_a_survivor_is_equivalent_only_by_an_entry_naming_its_file_and_lines() -> None:
    before, after = report.changed_lines(DIFF)
    assert (before, after) == ("if depth > _DEPTH:", "if depth >= _DEPTH:")
    record = {"file": "reference/sessionspec/live/fastpath.py", "definition": "_list", "before": before, "after": after}
    entry = {"file": "live/fastpath.py", "before": "if depth > _DEPTH:", "after": "if depth >= _DEPTH:", "reason": "r"}
    assert report.judgement(record, [entry]) == "r"
    assert report.judgement(record, [{**entry, "definition": "_dict"}]) is None
    assert report.judgement(record, [{**entry, "after": "if depth < _DEPTH:"}]) is None
    assert report.judgement({**record, "file": "reference/sessionspec/storage/jsonl.py"}, [entry]) is None


def test_a_deletion_that_takes_blank_lines_along_matches_its_lines_alone() -> None:
    diff = "--- a/f.py\n+++ b/f.py\n@@ -1,5 +1,2 @@\n x = 1\n-\n-\n-@implies(reference=f)\n def g():"
    before, after = report.changed_lines(diff)
    assert (before, after) == ("\n\n@implies(reference=f)", "")
    record = {"file": "reference/sessionspec/live/fastpath.py", "definition": None, "before": before, "after": after}
    entry = {"file": "live/fastpath.py", "before": "@implies(reference=f)", "after": "", "reason": "r"}
    assert report.judgement(record, [entry]) == "r"


def test_the_score_is_killed_over_non_equivalent_and_conform_counts_its_own_kills() -> None:
    """Three figures, each honest: conform alone, conform + machine, every stage (fastforms adds only to the last)."""
    records = [_record("killed", "vectors"), _record("killed", "conform timeout"), _record("killed", "machine"),
               _record("killed", "fastforms"), _record("survived", equivalent="same result, slower"),
               _record("survived"), _record("incompetent"), {"outcome": "pending"}]
    summary = report.scores(records)
    assert (summary["non_equivalent"], summary["killed"], summary["killed_by_conform"]) == (5, 4, 2)
    assert summary["killed_by_conform_and_machine"] == 3
    assert (summary["score"], summary["score_machine"], summary["score_conform"]) == (0.8, 0.6, 0.4)
    assert summary["unjudged_survivors"] == 1
    assert (summary["pending"], summary["incompetent"], summary["equivalent"]) == (1, 1, 1)


def test_a_stage_after_conform_does_not_lower_conform_alone() -> None:
    """A declaration judged equivalent for the store and killed by fastforms is no miss of conform or the machine."""
    records = [{**_record("killed", "vectors"), "id": "0001"},
               {**_record("killed", "fastforms", "only tests/test_fastpaths.py reads it"), "id": "0002"},
               {**_record("killed", "fastforms"), "id": "0003"}]
    summary = report.scores(records)
    assert (summary["killed_by_conform"], summary["non_equivalent_conform"]) == (1, 2)
    assert (summary["killed_by_conform_and_machine"], summary["non_equivalent_machine"]) == (1, 2)
    assert (summary["killed"], summary["non_equivalent"], summary["equivalent"]) == (3, 3, 0)
    assert summary["judged_equivalent_but_killed"] == ["0002 (fastforms)"]


def test_a_survivor_beyond_conform_leaves_conforms_figure_and_counts_in_the_whole_oracles() -> None:
    """A mutant of the Python API alone: no request of the protocol tells it apart, so it is no miss of conform; the
    in-process stages can, so the whole oracle's figure counts it (a miss if they do not kill it either)."""
    records = [{**_record("killed", "conform"), "beyond": None}, {**_record("survived"), "beyond": "the API alone"},
               {**_record("killed", "storage"), "beyond": "the API alone"}, {**_record("survived"), "beyond": None}]
    summary = report.scores(records)
    assert (summary["killed_by_conform"], summary["non_equivalent_conform"]) == (1, 2)
    assert (summary["killed"], summary["non_equivalent"], summary["equivalent"]) == (2, 4, 0)
    assert (summary["beyond_conform"], summary["unjudged_survivors"]) == (1, 1)


@pytest.mark.parametrize(("path", "table"), [(report.JUDGEMENTS, "equivalent"), (report.BEYOND, "beyond")])
def test_every_judgement_names_its_lines_and_gives_a_reason(path: Path, table: str) -> None:
    with path.open("rb") as handle:
        entries = tomllib.load(handle)[table]
    assert entries, f"mutation/{path.name} judges no survivor"
    for entry in entries:
        assert set(entry) <= {"file", "definition", "before", "after", "reason"}, entry
        assert entry["file"].startswith("reference/sessionspec/") and entry["before"] and entry["reason"], entry


def test_a_spent_budget_starts_no_mutant_and_leaves_the_rest_pending(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("cosmic_ray")
    import run

    class Items:
        pending_work_items = (SimpleNamespace(job_id="0004"), SimpleNamespace(job_id="0003"))
        num_results = 3

    run.execute(Items(), "false", 10.0, deadline=0.0)  # type: ignore[arg-type]
    assert "2 mutants left pending" in capsys.readouterr().out


def test_every_operator_has_a_family_and_the_issue_25_families_are_there() -> None:
    pytest.importorskip("cosmic_ray")
    import operators

    families = {operators.family(name) for name in operators.operator_names()}
    assert {"boundary", "identity", "return-none", "removal", "membership", "comparison", "omission", "core"} == families
    assert operators.family("core/ReplaceComparisonOperator_Lt_LtE") == "boundary"
    assert operators.family("core/ReplaceComparisonOperator_Is_IsNot") == "identity"


def test_a_stratified_sample_takes_each_family_in_turn() -> None:
    pytest.importorskip("cosmic_ray")
    import run

    specs = [SimpleNamespace(operator_name=name) for name in (
        "core/NumberReplacer", "core/AddNot", "sessionspec/ReturnNone", "core/ReplaceComparisonOperator_Lt_LtE",
        "sessionspec/ReturnNone")]
    order = [spec.operator_name for spec in run.interleave(specs)]  # type: ignore[arg-type]
    assert order[:3] == ["core/ReplaceComparisonOperator_Lt_LtE", "core/NumberReplacer", "sessionspec/ReturnNone"]
    assert sorted(order) == sorted(spec.operator_name for spec in specs)


def test_every_unreached_branch_entry_names_lines_that_exist() -> None:
    """mutation/unreached.toml explains branches by their source lines: an entry whose line is gone explains nothing."""
    import reach

    for entry in reach.load_reasons():
        source = (reach.LIVE / entry["file"]).read_text(encoding="utf-8").splitlines()
        stripped = {line.strip() for line in source}
        assert entry["line"] in stripped, entry
        assert entry.get("to") in (None, "exit") or entry["to"] in stripped, entry
        assert entry["reason"], entry


def test_the_reach_report_lists_missing_branches_and_the_first_line_of_each_run_not_run() -> None:
    import reach

    path = reach.LIVE / "surface.py"
    lines = path.read_text(encoding="utf-8").splitlines()
    def at(text: str) -> int:
        return next(n for n, line in enumerate(lines, 1) if line.strip() == text)

    guard, each, size = at("if step != event.seq:"), at("return iter(self._nodes)"), at("return len(self._nodes)")
    report = {"files": {str(path): {"missing_branches": [[guard, guard + 1]], "missing_lines": [guard + 1, each, size],
                                     "executed_lines": [guard, each - 1, each + 1, size - 1]}}}
    found = reach.missing(report, reach.load_reasons())
    assert [(gap["from"], gap["to"]) for gap in found] == [(guard, guard + 1), (each, None), (size, None)]
    assert all(gap["reason"] for gap in found)
