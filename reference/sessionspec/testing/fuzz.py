"""The fuzz targets: the stateful machines and the properties a fuzzer runs, as an installed test module.

    pip install -e '.[fuzz]' pytest      # from a checkout, or the wheel built there: "dist/sessionspec-*.whl[fuzz]"
    python -m pytest --pyargs sessionspec.testing.fuzz --hypothesis-profile nightly -v
    HYPOTHESIS_PROFILE=nightly hypothesis fuzz -n $(nproc) -- --pyargs sessionspec.testing.fuzz

Each is a Hypothesis test: `TestLiveAgainstModel` holds the incremental store to the reference
model step by step (spec/04-append.md, spec/03-surface.md), `TestModelAgainstItself` checks the
machine against the model alone, `TestCompanionLiveAgainstModel` adds the relational companion
(spec/09-relational.md); the two properties check the strategies the machines stand on. The
checkout's `tests/test_machine.py` runs these same objects, so a run from a checkout and a run
from a wheel search the same tests and share one example database.

In the `nightly` profile one example of `TestLiveAgainstModel` (up to 100 steps) takes about 2.3 s of
one core, its 10,000 about 6.5 hours, the other four together about 5 minutes (README, "Nightly fuzzing").

The settings come from the profile a run names (`sessionspec.testing.profiles`; the pytest plugin
`sessionspec.testing.plugin` registers the profiles for a run of this module and loads `dev` when
none is named). This module is not collected by a plain `pytest` run: it is a library module
whose name does not start with `test_`, collected only when named.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from sessionspec.invariants import Companion
from sessionspec.repair import closers
from sessionspec.testing import implementations, invalid, loops
from sessionspec.testing import strategies as ss
from sessionspec.testing.companion_machine import CompanionMachine
from sessionspec.testing.machine import LiveMachine, ModelMachine

TestLiveAgainstModel = LiveMachine.TestCase
TestModelAgainstItself = ModelMachine.TestCase
TestModelAgainstItself.settings = settings(TestModelAgainstItself.settings, max_examples=10)
TestCompanionLiveAgainstModel = CompanionMachine.TestCase
TestCompanionLiveAgainstModel.settings = settings(TestCompanionLiveAgainstModel.settings, max_examples=15,
                                                  stateful_step_count=6)


@given(st.data())
def test_every_invalid_operation_is_refused_by_the_model_with_its_rule(data: st.DataObject) -> None:
    """The strategy's own check: each invalid request is refused with the rule it names."""
    session = implementations.factory("model")("s", clock=lambda: 1)
    for request in data.draw(st.lists(ss.append_requests(ss.View.of(session)), max_size=4)):
        session.append_request(request)
    bad = data.draw(invalid.invalid_requests(ss.View.of(session)))
    try:
        session.append_request(bad.request)
    except Exception as error:
        assert getattr(error, "rule", None) == bad.rule, (bad.why, error)
    else:
        raise AssertionError(f"accepted: {bad.why}")


@given(loops.agent_loops(max_turns=2, max_steps=2, min_turns=1), st.data())
def test_a_loop_cut_anywhere_is_read_back_and_continues_well_formed(loop: loops.Loop, data: st.DataObject) -> None:
    """What `agent_works` relies on: `state_of` reads back the open turn, step and calls of a cut loop,
    and a loop started from it finishes them in a way the companion accepts, ending balanced."""
    cut = data.draw(st.integers(0, len(loop.requests)), label="cut")
    session = implementations.factory("model")("loop", clock=loops.ticking_clock())
    Companion().attach(session)
    for request in loop.requests[:cut]:
        loops.append(session, request)
    start = loops.state_of([e.to_json() for e in session.events], list(session.surface.nodes))
    built = loop.states[cut]
    assert (start.open_turn, start.open_step, start.committed) == (built.open_turn, built.open_step, built.committed)
    assert (start.pending, start.unrecorded, start.recorded_at) == (built.pending, built.unrecorded, built.recorded_at)
    assert start.nodes == built.nodes and dict(start.results) == dict(built.results)
    rest = data.draw(loops.agent_loops(max_turns=1, max_steps=2, start=start), label="rest")
    for request in rest.requests:
        loops.append(session, request)
    assert rest.states[-1].open_turn is None and closers(session.events) == []
