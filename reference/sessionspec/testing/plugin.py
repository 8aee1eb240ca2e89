"""The pytest plugin (entry point `pytest11`): the settings profiles for a run of the installed fuzz targets.

    python -m pytest --pyargs sessionspec.testing.fuzz --hypothesis-profile nightly

Installed with the package, the plugin is loaded by every pytest run in the environment, so it
acts only on a run that names `sessionspec.testing.fuzz` (by module or by path): it registers the
profiles of `sessionspec.testing.profiles` before Hypothesis's own plugin loads the one named by
`--hypothesis-profile`, and when none is named loads $HYPOTHESIS_PROFILE, else `dev`. Any other
run is left as it was: a project that installs sessionspec to use its strategies keeps its own
Hypothesis profiles (Hypothesis's `ci` among them) and loads nothing of sessionspec's here.
A project that wants the profiles in its own suite calls `sessionspec.testing.profiles.load()`
from its conftest.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from pathlib import Path

import pytest

TARGETS = "sessionspec.testing.fuzz"
TARGETS_FILE = Path(__file__).resolve().with_name("fuzz.py")


def names_the_targets(args: Iterable[str]) -> bool:
    """Whether a command line's arguments name the fuzz targets: `sessionspec.testing.fuzz[::TEST]` or its file."""
    for arg in args:
        target = arg.split("::", 1)[0]
        if target == TARGETS or target.startswith(f"{TARGETS}."):
            return True
        if target.endswith(".py") and Path(target).resolve() == TARGETS_FILE:
            return True
    return False


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """Before Hypothesis's plugin loads `--hypothesis-profile`: the profiles, for a run of the fuzz targets."""
    if not names_the_targets(config.args):
        return
    profiles = importlib.import_module("sessionspec.testing.profiles")
    profiles.load()
