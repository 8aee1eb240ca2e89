"""The oracle's self-test: the machine, in the ci profile, catches every planted bug in `live`.

Each variant of `sessionspec.testing.planted` is wrong in one way; a machine that passes one would
pass the real bug. The number of steps of each shrunk counterexample is printed (`-s` shows it).
Shrinking is capped at SHRINK_SECONDS per bug so the self-test fits the CI budget; the steps
reported are what the capped shrink reached. Nothing asserted reads them: a bug is caught once the
machine fails on it and leaves its trace. Most bugs shrink until the cap, so the cap is most of the
file's time (at 6 s, 125 s for the 20 bugs; at 1 s, 48 s, with longer counterexamples: the longest
57 steps instead of 53, ignorable-truthy's 54 instead of 5; `-s` shows them).
"""

import pytest
from hypothesis.internal.conjecture import engine
from hypothesis.stateful import run_state_machine_as_test
from sessionspec.testing import planted, profiles
from sessionspec.testing.machine import machine_for

SHRINK_SECONDS = 1


@pytest.mark.parametrize("bug", sorted(planted.PLANTED))
def test_the_machine_catches_the_planted_bug(bug: str, tmp_path: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SESSIONSPEC_TRACE_DIR", str(tmp_path))
    monkeypatch.setattr(engine, "MAX_SHRINKING_SECONDS", SHRINK_SECONDS)
    machine = machine_for(f"planted:{bug}")
    with pytest.raises(AssertionError):
        run_state_machine_as_test(machine, settings=profiles.planted())
    assert machine.last_trace is not None, "the failing run left no trace"
    print(f"\nplanted:{bug}: caught; shrunk counterexample has {machine.last_steps} steps ({machine.last_trace})")
