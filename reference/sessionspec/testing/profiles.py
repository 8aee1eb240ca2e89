"""Hypothesis settings profiles, shared by the tests, the pytest plugin and the conformance runner.

Chosen with `--hypothesis-profile NAME` or `HYPOTHESIS_PROFILE=NAME`; `dev` when neither is given.
Registered by `tests/conftest.py` in a checkout and by the pytest plugin (`sessionspec.testing.plugin`)
for a run of the installed fuzz targets (`pytest --pyargs sessionspec.testing.fuzz`).

- `dev`: quick, for the edit-test loop.
- `ci`: derandomized (the same examples on every run, so CI never flakes on a new one), no
  deadline, `print_blob` so a failure can be reproduced with `@reproduce_failure`, and small
  enough that the machine and the planted-bug self-test together stay under 3 minutes on 2 cores.
- `nightly`: at least 10,000 examples of up to 100 steps, every distinct bug reported.
- `crosshair`: the hypothesis-crosshair backend, which solves for inputs symbolically (registered
  where that backend is installed: the `proofs` extra).

Who writes and who reads the example database is stated once, in README.md ("Nightly fuzzing and
the example database"); these are the settings that carry it out: `nightly` has the shared
database (`shared_database`: `$SESSIONSPEC_HYPOTHESIS_DB`, a directory or a `redis://` URL),
`dev` the person's own and the shared one read-only (`reading_database`), `ci` and `crosshair` none.
"""

from __future__ import annotations

import contextlib
import importlib
import os
from typing import Any

from hypothesis import HealthCheck, Phase, Verbosity, settings
from hypothesis.database import DirectoryBasedExampleDatabase, ExampleDatabase, MultiplexedDatabase, ReadOnlyDatabase
from hypothesis.errors import InvalidArgument

DEFAULT = "dev"
NAMES = ("dev", "ci", "nightly", "crosshair")
DATABASE_ENV = "SESSIONSPEC_HYPOTHESIS_DB"
"""Where the shared example database is: a directory, or a redis:// (rediss://, unix://) URL."""
LOCAL_DATABASE = ".hypothesis/examples"
"""A person's own database, and the shared one's default: Hypothesis's usual place, in the working directory."""
REDIS_SCHEMES = ("redis://", "rediss://", "unix://")

_SLOW = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]


class DatabaseUnavailable(RuntimeError):
    """$SESSIONSPEC_HYPOTHESIS_DB names a database this environment cannot open."""


_REDIS_DATABASES: dict[str, ExampleDatabase] = {}
"""One `RedisExampleDatabase` per URL for the life of the process (and of the processes forked from it)."""


def shared_database(where: str | None = None) -> ExampleDatabase:
    """The shared example database `where` (default: $SESSIONSPEC_HYPOTHESIS_DB, else `.hypothesis/examples`).

    A redis URL is opened with Hypothesis's own `RedisExampleDatabase` (connecting on first use);
    its client, `redis`, comes with the `fuzz` extra and is imported only for such a URL.

    The same URL gives the same object every time. Two `RedisExampleDatabase`s of one URL are unequal
    (their `==` compares the redis clients, which compare by identity), and HypoFuzz fuzzes only the tests
    whose database equals the current profile's: its workers, forked from the hub after it has imported
    the targets, register the profiles again, and with a new client each would skip every target the hub
    assigned them, dying with `KeyError` in `FuzzWorker._add_target` (issue 35; a directory database
    compares by path and never had the problem).
    """
    where = where or os.environ.get(DATABASE_ENV) or LOCAL_DATABASE
    if not where.startswith(REDIS_SCHEMES):
        return DirectoryBasedExampleDatabase(where)
    if where in _REDIS_DATABASES:
        return _REDIS_DATABASES[where]
    try:
        client = importlib.import_module("redis").Redis.from_url(where)
        database: ExampleDatabase = importlib.import_module("hypothesis.extra.redis").RedisExampleDatabase(client)
    except ImportError as missing:
        raise DatabaseUnavailable(f"{DATABASE_ENV}={where} is a redis URL, and the redis client is not installed "
                                  f"({missing}): install sessionspec with its fuzz extra (a checkout: pip install -e '.[fuzz]')") from None
    _REDIS_DATABASES[where] = database
    return database


def reading_database() -> ExampleDatabase | None:
    """`dev`'s database: the person's own, and the shared one read-only when $SESSIONSPEC_HYPOTHESIS_DB names one."""
    if not os.environ.get(DATABASE_ENV):
        return None  # Hypothesis's default: the person's own, in .hypothesis/
    return MultiplexedDatabase(DirectoryBasedExampleDatabase(LOCAL_DATABASE), ReadOnlyDatabase(shared_database()))


def register() -> None:
    """Register the four profiles (idempotent; `crosshair` only where its backend is installed)."""
    dev = reading_database()
    databases: dict[str, Any] = {} if dev is None else {"database": dev}
    settings.register_profile("dev", max_examples=25, stateful_step_count=30, deadline=None, suppress_health_check=_SLOW,
                              **databases)
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
        # Hypothesis loads its own derandomized `ci` profile as the default where $CI is set, and a profile
        # inherits the default: a nightly run (or `hypothesis fuzz`, which refuses derandomized tests) says so.
        derandomize=False,
        max_examples=10_000,
        stateful_step_count=100,
        deadline=None,
        database=shared_database(),
        report_multiple_bugs=True,
        print_blob=True,
        suppress_health_check=_SLOW,
    )
    # The backend is the `proofs` extra's (hypothesis-crosshair); without it there is no such profile.
    with contextlib.suppress(InvalidArgument):
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
