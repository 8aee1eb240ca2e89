"""The installed fuzzing path: the fuzz targets as a package module, and the pytest plugin that gives them the profiles.

Each run is a fresh `python -m pytest` from a directory outside the checkout, as a user of
`pip install 'sessionspec[fuzz]'` runs it (the plugin is the `pytest11` entry point of the installed
package; an editable install has it too).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from sessionspec.testing import fuzz
from sessionspec.testing.plugin import TARGETS, names_the_targets

ONE_TARGET = f"{TARGETS}::test_every_invalid_operation_is_refused_by_the_model_with_its_rule"


def pytest_run(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def test_the_targets_are_named_by_module_or_by_path() -> None:
    assert names_the_targets([TARGETS]) and names_the_targets([ONE_TARGET])
    assert names_the_targets([fuzz.__file__]) and names_the_targets([f"{fuzz.__file__}::TestLiveAgainstModel"])
    assert not names_the_targets(["tests", "sessionspec.testing.fuzzy", "test_fuzz.py"])


def test_the_installed_targets_run_from_anywhere_in_the_profile_named(tmp_path: Path) -> None:
    done = pytest_run("-v", "--pyargs", ONE_TARGET, "--hypothesis-profile", "ci", cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "hypothesis profile 'ci'" in done.stdout and "max_examples=60" in done.stdout
    assert "1 passed" in done.stdout


def test_hypothesis_profile_in_the_environment_and_every_target_collected(tmp_path: Path) -> None:
    env = {**os.environ, "HYPOTHESIS_PROFILE": "nightly"}
    done = pytest_run("-v", "--collect-only", "--pyargs", TARGETS, cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "hypothesis profile 'nightly'" in done.stdout and "max_examples=10000" in done.stdout
    for target in ("TestLiveAgainstModel", "TestModelAgainstItself", "TestCompanionLiveAgainstModel",
                   "test_every_invalid_operation_is_refused_by_the_model_with_its_rule",
                   "test_a_loop_cut_anywhere_is_read_back_and_continues_well_formed"):
        assert target in done.stdout, target


def test_any_other_run_keeps_its_own_profiles(tmp_path: Path) -> None:
    """Installing sessionspec changes nothing for another project's suite: Hypothesis's `ci` stays Hypothesis's."""
    (tmp_path / "test_other.py").write_text(
        "from hypothesis import settings\n\n\n"
        "def test_profiles_are_hypothesis_own() -> None:\n"
        "    assert settings.get_profile('ci').max_examples == 100\n"
        "    assert 'nightly' not in settings._profiles\n", encoding="utf-8")
    done = pytest_run("-q", "test_other.py", cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
