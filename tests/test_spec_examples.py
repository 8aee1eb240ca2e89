"""Every `Example:` of spec/ runs, on `model` and on `live`, and gets what the text says it gets.

One test per rule's example and implementation (`SESSION-EVENT-ENVELOPE.8-model`). An example the text
marks `(not executable: WHY)` is skipped with its reason, so the count of them is visible in every run;
a rule line with neither an executable case nor a reason fails, so a rule added later without an
executable example is reported until it has one. The notation is `tests/specexamples.py`'s.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from specexamples import SIDES, SPEC, Example, examples, run

FOUND = examples()
MINIMUM = 150
"""Issue 37: at least 150 of the spec's examples run."""


@pytest.mark.parametrize("side", SIDES)
@pytest.mark.parametrize("example", FOUND, ids=[example.rule for example in FOUND])
def test_example(example: Example, side: str) -> None:
    if not example.runs:
        assert example.not_executable, (
            f"{example.where}: {example.rule}'s example states no case: write it as `CALL → OUTCOME` "
            f"(spec/README.md, 'How to read an example'), or say `(not executable: WHY)`")
        pytest.skip(f"not executable: {example.not_executable}")
    problems = run(example, side)
    assert not problems, "\n".join(problems)


def test_enough_examples_run() -> None:
    runnable = [example for example in FOUND if example.runs]
    assert len(runnable) >= MINIMUM, f"{len(runnable)} examples run, fewer than {MINIMUM}"


def test_every_rule_line_has_one_example() -> None:
    rules = [example.rule for example in FOUND]
    assert len(rules) == len(set(rules)), "a rule line is written twice"
    assert all(example.text for example in FOUND), [example.where for example in FOUND if not example.text]


def scratch_spec(tmp_path: Path, rule: str, old: str, new: str) -> Example:
    """A copy of spec/ whose example of `rule` has each `old` changed to `new`, and that example as read from it."""
    copy = tmp_path / "spec"
    shutil.copytree(SPEC, copy)
    for path in copy.glob("*.md"):
        text = path.read_text(encoding="utf-8")
        line = next((line for line in text.splitlines() if line.startswith(f"- **{rule}** ")), None)
        if line is not None:
            assert old in line, f"{rule}'s line has no {old!r}"
            path.write_text(text.replace(line, line.replace(old, new)), encoding="utf-8")
    return next(example for example in examples(copy) if example.rule == rule)


@pytest.mark.parametrize(("rule", "old", "new"), [
    ("SESSION-EVENT-ENVELOPE.8", "→ SESSION-EVENT-ENVELOPE.8", "→ SESSION-EVENT-ENVELOPE.2"),  # the stated rule
    ("SESSION-EVENT-ENVELOPE.2", "→ ok", "→ SESSION-EVENT-ENVELOPE.2"),  # the stated outcome
    ("SESSION-SEED-ACCEPTANCE.4", "→ (3,", "→ (4,"),  # a stated value
])
def test_a_changed_example_fails(tmp_path: Path, rule: str, old: str, new: str) -> None:
    original = next(example for example in FOUND if example.rule == rule)
    assert run(original, "model") == []
    changed = scratch_spec(tmp_path, rule, old, new)
    problems = run(changed, "model")
    assert problems and all(rule in problem for problem in problems), problems


def test_an_example_without_a_case_or_reason_fails(tmp_path: Path) -> None:
    changed = scratch_spec(tmp_path, "SESSION-EVENT-ENVELOPE.8", " → ", " is refused by ")
    assert not changed.runs and changed.not_executable is None
    with pytest.raises(AssertionError, match="states no case"):
        test_example(changed, "model")


def test_the_notation_counts_reasons() -> None:
    reasons = [example.not_executable for example in FOUND if not example.runs]
    assert all(reason and re.search(r"\w", reason) for reason in reasons)
