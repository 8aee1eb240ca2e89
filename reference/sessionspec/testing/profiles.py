"""Hypothesis settings profiles, shared by tests/conftest.py and the conformance runner.

Chosen with `--hypothesis-profile NAME` or `HYPOTHESIS_PROFILE=NAME`; `dev` when neither is given.

- `dev`: quick, for the edit-test loop.
- `ci`: derandomized (the same examples on every run, so CI never flakes on a new one), no
  deadline, `print_blob` so a failure can be reproduced with `@reproduce_failure`, and small
  enough that the machine and the planted-bug self-test together stay under 3 minutes on 2 cores.
  No example database: CI reads nothing it did not generate.
- `nightly`: at least 10,000 examples of up to 100 steps, the example database on (the fuzz server
  writes it; people and CI read it), every distinct bug reported.
- `crosshair`: the hypothesis-crosshair backend, which solves for inputs symbolically.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, Phase, Verbosity, settings
from hypothesis.database import DirectoryBasedExampleDatabase

DEFAULT = "dev"
DATABASE_ENV = "SESSIONSPEC_HYPOTHESIS_DB"
"""Where the nightly example database lives (default `.hypothesis/examples`)."""

_SLOW = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]


def register() -> None:
    """Register the four profiles (idempotent)."""
    settings.register_profile("dev", max_examples=25, stateful_step_count=30, deadline=None, suppress_health_check=_SLOW)
    settings.register_profile(
        "ci",
        derandomize=True,
        deadline=None,
        print_blob=True,
        database=None,
        max_examples=60,
        stateful_step_count=40,
        suppress_health_check=_SLOW,
    )
    settings.register_profile(
        "nightly",
        max_examples=10_000,
        stateful_step_count=100,
        deadline=None,
        database=DirectoryBasedExampleDatabase(os.environ.get(DATABASE_ENV, ".hypothesis/examples")),
        report_multiple_bugs=True,
        print_blob=True,
        suppress_health_check=_SLOW,
    )
    settings.register_profile(
        "crosshair",
        backend="crosshair",
        deadline=None,
        max_examples=50,
        stateful_step_count=20,
        database=None,
        suppress_health_check=[*_SLOW, HealthCheck.differing_executors],
    )


def load(name: str | None = None) -> str:
    """Register the profiles and load `name` (default: $HYPOTHESIS_PROFILE, else `dev`); returns the name loaded."""
    register()
    chosen = name or os.environ.get("HYPOTHESIS_PROFILE") or DEFAULT
    settings.load_profile(chosen)
    return chosen


def planted(profile: settings | None = None) -> settings:
    """The settings the planted-bug self-test runs under: the ci profile, quietly, without the blob."""
    register()
    base = profile or settings.get_profile("ci")
    return settings(base, print_blob=False, verbosity=Verbosity.quiet, report_multiple_bugs=False,
                    phases=[Phase.generate, Phase.shrink])
