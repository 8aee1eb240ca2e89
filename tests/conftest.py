"""Hypothesis profiles, and the implementations the chapter tests run against.

Profiles: `dev` by default; `--hypothesis-profile` or HYPOTHESIS_PROFILE choose another. They live
in `sessionspec.testing.profiles` so the conformance runner loads the same ones; Hypothesis's
pytest plugin applies `--hypothesis-profile` after this module has registered them.

Implementations: a test that takes `create` (an implementation's `Session.create`) or
`implementation` (its name) runs once per implementation, with ids `[model]` and `[live]`, so a
rule broken in either fails its chapter's test. `--impl NAME` (repeatable) runs them against other
implementations instead, such as a planted bug: `pytest tests/test_03_surface.py --impl
planted:off-by-one-splice` must fail.
"""

from __future__ import annotations

import inspect
import os
import tempfile

import pytest
import wire
from sessionspec.testing import implementations as impls
from sessionspec.testing import profiles

profiles.load()

IMPLEMENTATIONS = ("model", "live", "wire:live")
"""What every chapter test runs against: the reference, the incremental store, and the store over the protocol
(tests/wire.py: every call a request line and an answer line through the one executor)."""


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--impl", action="append", default=None, metavar="NAME",
                     help=f"implementation for the chapter tests (repeatable; default: {', '.join(IMPLEMENTATIONS)}; "
                          f"known: {', '.join(impls.names())})")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "implementation" in metafunc.fixturenames:
        names = metafunc.config.getoption("impl") or IMPLEMENTATIONS
        unknown = [name for name in names if not impls.known(name.removeprefix(wire.PREFIX))]
        if unknown:
            raise pytest.UsageError(f"--impl: unknown {', '.join(unknown)}; known: {', '.join(impls.names())}")
        if "implementation" in inspect.signature(metafunc.function).parameters:
            # The test builds sessions by name too (testing.loops.build), which only in-process names can do.
            names = [name for name in names if not name.startswith(wire.PREFIX)]
        metafunc.parametrize("implementation", names, scope="module")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Chapter 10's files first, each file's tests in their order, the other files after them in theirs.

    `--dist loadfile` makes each file one unit of work, handed to a worker as it frees up. Chapter 10's files run
    whole conform runs (the runner and a testee process, several runs a file): the longest units, so run first, the
    shorter ones even out the workers' ends (longest first). xdist's own order, most tests first, put them last, and
    one worker ran them alone while the other had nothing left: pyproject's `--no-loadscope-reorder` turns it off.
    Every worker sorts the same collection the same way, as xdist requires.
    """
    items.sort(key=lambda item: not item.path.name.startswith("test_10_"))


@pytest.fixture(scope="module")
def create(implementation: str) -> impls.SessionFactory:
    """The implementation's `create(session_id, seed=None, header=None, *, clock, validators, observers)`."""
    if implementation.startswith(wire.PREFIX):
        return wire.factory(implementation.removeprefix(wire.PREFIX))
    return impls.factory(implementation)


@pytest.fixture(autouse=True, scope="session")
def traces_in_a_temporary_directory(request: pytest.FixtureRequest) -> None:
    """Traces a test's failing machine or divergence writes go to pytest's temporary directory, not the user's.

    A directory named in SESSIONSPEC_TRACE_DIR is kept (the nightly lane names its own). HypoFuzz runs the tests
    without pytest's tmpdir plugin, where asking for `tmp_path_factory` fails every test's setup (the fuzzer then
    reports "a failing input for every test" and fuzzes nothing), so there a fresh temporary directory serves.
    """
    if "SESSIONSPEC_TRACE_DIR" in os.environ:
        return
    try:
        directory = str(request.getfixturevalue("tmp_path_factory").mktemp("traces"))
    except (AttributeError, pytest.FixtureLookupError):
        directory = tempfile.mkdtemp(prefix="sessionspec-traces-")
    os.environ["SESSIONSPEC_TRACE_DIR"] = directory
