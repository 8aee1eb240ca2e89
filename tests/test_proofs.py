"""The proof harnesses, the bounded explorer and `sessionspec prove`/`explore` (proofs/README.md).

CrossHair itself runs in `sessionspec prove --quick` (CI) and the full run (nightly); here the
harness functions are held to their own contracts on concrete inputs, and one tiny CrossHair run
checks that a false obligation is reported as a counterexample.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path
from typing import Any

import icontract
import pytest
from sessionspec import cli, model
from sessionspec.jsonvalue import FrozenList
from sessionspec.live import Session as LiveSession
from sessionspec.live.surface import DerivedMessages
from sessionspec.surface import Surface
from sessionspec.testing import crosshair as proving
from sessionspec.testing import implementations as impls
from sessionspec.testing.explore import (
    ALPHABETS,
    Explorer,
    NestedAppend,
    Report,
    Step,
    append,
    clone,
    create,
    default_alphabet,
    explore,
    letter_key,
    log_letters,
    observe,
    steps,
    surface_letters,
    to_itf,
    write_trace,
)
from sessionspec.testing.planted import IN_ONE_REQUEST
from sessionspec.testing.planted_storage import STORAGE_PLANTED
from sessionspec.wire.compare import differences
from sessionspec.wire.executor import Executor
from sessionspec.wire.trace import read_trace

PROOFS = Path(__file__).resolve().parents[1] / "proofs"
sys.path.insert(0, str(PROOFS))

import obligations_agreement  # noqa: E402
import obligations_json  # noqa: E402
import obligations_surface  # noqa: E402

# --- the harnesses hold on concrete inputs ------------------------------------------------------


@pytest.mark.parametrize(("nodes", "first", "last"), [([0], 0, 0), ([1, 3, 4, 7], 1, 2), ([5, 2, 9], 0, 2)])
def test_replace_keeps_unshadowed_in_order(nodes: list[int], first: int, last: int) -> None:
    obligations_surface.replace_keeps_unshadowed_in_order(nodes, first, last)


@pytest.mark.parametrize(("ops", "extra"), [([], 0), ([0, 0, 1], 2), ([0, 0, 0, 5], 8), ([0, 2, 0], 11)])
def test_fold_prefix_then_one(ops: list[int], extra: int) -> None:
    obligations_surface.fold_prefix_then_one(ops, extra)


@pytest.mark.parametrize(("nodes", "first", "last", "sources"),
                         [([0, 2, 3], 0, 1, [0, 2]), ([0, 2, 3], 0, 1, [0]), ([0, 2, 3], 1, 2, [1, 2, 3])])
def test_provenance_coverage_is_shadowed(nodes: list[int], first: int, last: int, sources: list[int]) -> None:
    obligations_surface.provenance_coverage_is_shadowed(nodes, first, last, sources)


@pytest.mark.parametrize(("outer_a", "outer_b", "block_a", "block_b", "inner_a", "inner_b"), [
    ({}, {}, {}, {}, 1, 2),
    ({"meta": 1}, {"meta": 2}, {}, {}, 1, 1),
    ({}, {}, {"isError": 0}, {}, 1, 2),
    ({"x": 3}, {"x": 3}, {"y": 4}, {"y": 4}, 7, 9),
])
def test_tool_result_rewrite_ignores_only_inner_content(outer_a: dict[str, int], outer_b: dict[str, int],
                                                         block_a: dict[str, int], block_b: dict[str, int],
                                                         inner_a: int, inner_b: int) -> None:
    obligations_surface.tool_result_rewrite_ignores_only_inner_content(outer_a, outer_b, block_a, block_b, inner_a,
                                                                       inner_b)


def test_snapshot_thaw_and_float_round_trips() -> None:
    obligations_json.snapshot_thaw_is_round_trip([1, 2, 7], [3, -4, 2**53 - 1])
    obligations_json.accepted_floats_round_trip([1, -20, 2**39])
    with pytest.raises(icontract.ViolationError):  # outside the precondition: never a "proof" of a rejected value
        obligations_json.snapshot_thaw_is_round_trip([1], [2**53])


@pytest.mark.parametrize("ops", [[], [0, 4, 5], [2, 5, 6], [0, 0, 7]])
def test_reference_and_incremental_agree(ops: list[int]) -> None:
    obligations_agreement.reference_and_incremental_agree(ops)


# --- the explorer -------------------------------------------------------------------------------

PLANTED = sorted(name for name in impls.names() if name.startswith("planted:")
                 and name.removeprefix("planted:") not in IN_ONE_REQUEST
                 and name.removeprefix("planted:") not in STORAGE_PLANTED) or ["planted:stale-derived-cache"]
"""The planted bugs the explorer must find; those in one request's values (IN_ONE_REQUEST) are the vectors' and the
machine's, since the explorer's alphabet holds one valid request of each kind; the storage bugs (a reader or writer
wrong, STORAGE_PLANTED) are the storage phase's (tests/test_planted_storage.py): the explorer never touches a file."""


def test_live_has_no_violation_within_depth_3() -> None:
    report = explore(3, "live")
    assert report.violations == []
    assert report.depth == 3 and report.distinct_states > 300 and report.transitions > report.distinct_states


def test_explorer_agrees_with_itself_on_the_model() -> None:
    assert explore(2, "model").violations == []


@pytest.mark.parametrize("name", PLANTED)
def test_every_planted_bug_is_found_within_depth_5(name: str) -> None:
    report = explore(5, name)
    assert report.violations, f"{name} survived exploration to depth 5"
    assert report.violations[0].depth <= 5


def _replay(factory: Any, requests: list[dict[str, Any]]) -> tuple[Any, list[bool]]:
    session: Any = None
    accepted = []
    for request in requests:
        if request["op"] == "create":
            session = create(factory, request["seed"], [NestedAppend()])
            accepted.append(True)
        elif request["op"] == "append":
            accepted.append(append(session, request).accepted)
    return session, accepted


def test_a_violation_is_a_shortest_replayable_trace() -> None:
    violation = explore(5, "planted:off-by-one-splice").violations[0]
    assert violation.depth == 2
    # The rejected steps the sessions went through on the way are in the trace (they must change nothing).
    assert violation.labels[0] == "append user/message" and violation.labels[-1] == "replace 0..0"
    assert violation.requests[0] == {"op": "create", "id": "explore", "seed": None, "header": None}
    assert violation.requests[-1] == {"op": "snapshot"}
    assert any(request.get("x-validator") == "raise" for request in violation.requests), "the vetoed steps are hooks"
    reference, accepted = _replay(model.Session.create, violation.requests)
    actual, _ = _replay(impls.factory("planted:off-by-one-splice"), violation.requests)
    assert accepted[1] and accepted[-1]
    assert list(reference.surface.nodes) != list(actual.surface.nodes)


def _protocol_differences(name: str, requests: list[dict[str, Any]]) -> list[str]:
    """What a testee over `name` answers differently from the reference, request by request, through the protocol."""
    reference, testee = Executor(impls.factory("model"), "model"), Executor(impls.factory(name), name)
    found = []
    for request in requests:
        found += differences(request["op"], reference.run(request), testee.run(request))
    return found


@pytest.mark.parametrize("name", [name for name in PLANTED if name != "planted:mutable-messages"])
def test_every_planted_bugs_requests_replay_as_a_divergence_through_the_protocol(name: str) -> None:
    """The requests are the protocol's, hooks included: a testee replaying them shows the bug (spec/10's x-hooks).

    `mutable-messages` is out of any protocol's reach (spec/10-conformance.md, "Reach").
    """
    violation = explore(5, name).violations[0]
    assert _protocol_differences(name, violation.requests), f"{violation.invariant}: {violation.labels}"
    assert not _protocol_differences("live", violation.requests)


def _no_nulls(value: Any) -> bool:
    if isinstance(value, dict):
        return all(_no_nulls(v) for v in value.values())
    if isinstance(value, list):
        return all(_no_nulls(v) for v in value)
    return value is not None and not isinstance(value, float)


def test_itf_export_has_the_itf_shape() -> None:
    violation = explore(5, "planted:provenance-unchecked").violations[0]
    document = json.loads(json.dumps(to_itf(violation, "planted:provenance-unchecked")))
    assert set(document) == {"#meta", "vars", "states"}
    assert document["#meta"]["format"] == "ITF"
    assert len(document["states"]) == len(violation.requests)
    for index, state in enumerate(document["states"]):
        assert state["#meta"] == {"index": index}
        assert set(state) == {"#meta", *document["vars"]}
    assert _no_nulls(document["states"]), "ITF has no null: null and floats are written as #unserializable"
    assert document["states"][-2]["modelOutcome"].startswith("rejected (SESSION-SURFACE-PROVENANCE.6)")
    assert document["states"][-2]["implOutcome"] == "accepted"


def test_a_violations_trace_is_the_one_format_and_replays_as_a_divergence(tmp_path: Path) -> None:
    """Written by `conformance.trace.write_trace`, run by `sessionspec replay` in process and against a testee."""
    name = "planted:provenance-unchecked"
    violation = explore(3, name).violations[0]
    path = write_trace(violation, name, tmp_path)
    trace = read_trace(path)
    assert path.parent == tmp_path and trace.source == "explore" and trace.implementation == name
    assert trace.requests == violation.requests and trace.notes["invariant"] == violation.invariant
    code, text = _run_cli("replay", str(path))
    assert code == 1 and "DIFFERENCE" in text.upper(), text
    code, text = _run_cli("replay", str(path), "--impl", "live")
    assert code == 0 and "DIFFERENCE" not in text.upper(), text
    serve = [sys.executable, "-m", "sessionspec.cli", "serve", "--impl", name]
    code, text = _run_cli("replay", str(path), "--", *serve)
    assert code == 1 and "divergence" in text.lower(), text


def test_states_are_deduplicated() -> None:
    explorer = Explorer("model")
    report = explorer.run(2)
    assert report.distinct_states == len(explorer.seen) == len(explorer.states)
    assert report.transitions > report.distinct_states - 1  # rejected and repeated transitions lead nowhere new


def _counts(report: Report) -> list[tuple[Any, ...]]:
    return [(row["depth"], row["new_states"], row["transitions"]) for row in report.levels]


def _remembered_answers_are_the_models(depth: int, verified: int) -> None:
    explorer = Explorer("live", verify_oracle=True)
    report = explorer.run(depth)  # an AssertionError if a remembered answer differs
    assert report.violations == [] and explorer.oracle.verified > verified
    remembering = Explorer("live")
    assert _counts(remembering.run(depth)) == _counts(report) and remembering.oracle.hits > remembering.oracle.runs


def test_remembered_model_answers_are_the_models() -> None:
    """Every remembered answer of the oracle, checked against the model run afresh, to depth 3 (proofs/README.md)."""
    _remembered_answers_are_the_models(3, 100)


@pytest.mark.nightly
def test_remembered_model_answers_are_the_models_to_depth_5() -> None:
    _remembered_answers_are_the_models(5, 10_000)


class _ForgetsAMessageFromSeqFive(LiveSession):
    """Derived messages that lose their first entry once the log holds five events: a bug below the split depth (3)."""

    def derive_messages(self) -> FrozenList:
        messages = super().derive_messages()
        return FrozenList(messages[1:]) if self.seq > 4 else messages


def _deep_bug(jobs: int) -> Report:
    explorer = Explorer("live")
    explorer.factory = _ForgetsAMessageFromSeqFive.create
    return explorer.run(5, jobs=jobs)


def test_subtrees_on_two_processes_find_what_one_process_finds() -> None:
    """The counts and the first violation do not depend on the number of processes (the split does not)."""
    one, two = explore(4, "live", jobs=1), explore(4, "live", jobs=2)
    assert _counts(one) == _counts(two) and len(one.levels) == 4 and two.jobs == 2
    first, second = _deep_bug(1).violations, _deep_bug(2).violations
    assert first and first[0].depth > 3, "the bug must lie below the split for this test to mean anything"
    assert [(v.invariant, v.depth, v.labels, v.requests) for v in first] == [
        (v.invariant, v.depth, v.labels, v.requests) for v in second]


@pytest.mark.parametrize("name", PLANTED)
def test_the_compact_alphabet_finds_every_planted_bug_within_depth_5(name: str) -> None:
    report = explore(5, name, alphabet="compact")
    assert report.alphabet == "compact" and report.violations, f"{name} survived the compact alphabet to depth 5"
    assert report.violations[0].depth <= 5


def test_the_compact_alphabet_is_a_subset_of_the_full_one() -> None:
    """In every state compact reaches within depth 3, each compact letter is a full letter with the same requests."""
    frontier: list[list[dict[str, Any]]] = [[]]
    for _ in range(3):
        next_frontier = []
        for path in frontier:
            session = create(model.Session.create, None)
            for request in path:
                assert append(session, request).accepted
            full = {step.label: step.requests for step in steps(session, "full")}
            compact = list(steps(session, "compact"))
            assert compact and all(full.get(step.label) == step.requests for step in compact)
            next_frontier.extend([*path, *step.requests] for step in compact
                                 if step.label.startswith("append") and "vetoed" not in step.label)
        frontier = next_frontier
    assert frontier and set(ALPHABETS) == {"full", "compact"}


@pytest.mark.parametrize("alphabet", ALPHABETS)
def test_letters_are_a_function_of_their_key(alphabet: str) -> None:
    """The explorer keeps the letters but reseed and repair by `letter_key`: states with one key offer the same ones."""
    seen: dict[tuple[object, ...], list[Step]] = {}
    frontier: list[list[dict[str, Any]]] = [[]]
    for _ in range(4):
        next_frontier = []
        for path in frontier:
            session = create(model.Session.create, None)
            if not all(append(session, request).accepted for request in path):
                continue  # a rejected replace (start after end): not a state
            events, nodes = session.events, session.surface.nodes
            offered = list(surface_letters(events, nodes, alphabet))
            assert seen.setdefault(letter_key(events, nodes, alphabet), offered) == offered
            assert [*offered, *log_letters(events)] == list(steps(session, alphabet))
            next_frontier.extend([*path, *step.requests] for step in offered if "vetoed" not in step.label
                                 and "incomplete" not in step.label and "forged" not in step.label)
        frontier = next_frontier
    assert len(seen) > 15


def test_depth_7_defaults_to_the_full_alphabet() -> None:
    assert default_alphabet(5) == default_alphabet(7) == "full"
    assert default_alphabet(8) == "compact"
    assert explore(1, "live").alphabet == "full"
    with pytest.raises(KeyError):
        Explorer("live", "tiny")


def test_hooks_are_armed_for_their_one_append() -> None:
    """`x-validator: raise` vetoes that append only; `x-observer: reentrant` makes that append's observer reenter."""
    probe = NestedAppend()
    session = create(impls.factory("live"), None, [probe])
    turn = {"op": "append", "type": "turn/start", "data": {"turn": 1}}
    assert append(session, {**turn, "x-validator": "raise"}).rule == "SESSION-APPEND-COMMIT.2"
    assert append(session, turn).accepted and probe.outcomes == []
    assert append(session, {**turn, "x-observer": "reentrant"}).accepted
    assert [outcome.rule for outcome in probe.outcomes] == ["SESSION-APPEND-COMMIT.4"]
    assert session.seq == 2


def test_the_nested_append_probe_catches_a_missing_reentrancy_guard() -> None:
    violation = explore(3, "planted:no-reentrancy-guard").violations[0]
    assert violation.invariant == "nested-append-rejected" and violation.depth == 1
    assert violation.requests[1]["x-observer"] == "reentrant"


def test_a_clone_is_an_independent_copy() -> None:
    seed = [{"type": "user/message", "seq": 0, "time": 0, "data": {"id": "u", "role": "user",
             "source": {"kind": "user"}, "content": [{"type": "text", "text": "hi"}]}, "surfaceOp": "append"}]
    original = create(impls.factory("live"), seed, [NestedAppend()])
    copied = clone(original)
    assert observe(copied) == observe(original)
    assert append(copied, {"op": "append", "type": "turn/start", "data": {"turn": 1}}).accepted
    assert copied.seq == original.seq + 1 and len(original.events) == 2


class _SeedDropsLastNode(LiveSession):
    """A seeded session whose surface forgets its last node: what `fresh-rebuild-agrees` is for."""

    @property
    def surface(self) -> Surface:
        surface = super().surface
        if self.first_live_seq == 0 or not surface.nodes:
            return surface
        return Surface(FrozenList(surface.nodes[:-1]), surface.replace_generation)


def test_reseeding_checks_the_rebuilt_surface() -> None:
    explorer = Explorer("live")
    explorer.factory = _SeedDropsLastNode.create
    violation = explorer.run(3).violations[0]
    assert violation.invariant == "fresh-rebuild-agrees" and violation.labels[-1] == "reseed"
    assert violation.depth == 2


class _ProjectsOnlyTheNewestNode(DerivedMessages):
    """A derived cache that, on a read, projects only the newest of the nodes appended since the last read."""

    def messages(self) -> FrozenList:
        if self._generation == self._surface.generation and self._count < len(self._surface.nodes) - 1:
            self._count = len(self._surface.nodes) - 1  # the bug: the unread nodes before the newest are skipped
        return super().messages()


class _SkipsUnreadNodes(LiveSession):
    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self._derived = _ProjectsOnlyTheNewestNode(self._log, self._surface)


def test_a_copy_starts_as_the_step_left_it_so_appends_between_reads_are_explored() -> None:
    """States are copied before their views are read: a cache that is right only if every append is read is caught."""
    explorer = Explorer("live")
    explorer.factory = _SkipsUnreadNodes.create
    violation = explorer.run(3).violations[0]
    assert violation.invariant == "impl-matches-model" and violation.depth == 2
    assert violation.labels == ["append user/message", "append user/message"]
    assert [request["op"] for request in violation.requests] == ["create", "append", "append", "snapshot"]


def _run_cli(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = cli.main(list(argv))
    return code, out.getvalue()


def test_explore_command_json_itf_and_trace(tmp_path: Path) -> None:
    code, text = _run_cli("explore", "--depth", "2", "--impl", "live", "--json", "--jobs", "1")
    report = json.loads(text)
    assert code == 0 and {"depth", "distinct_states", "transitions", "violations", "seconds", "wall_seconds",
                          "jobs"} <= set(report)
    itf = tmp_path / "trace.itf.json"
    code, text = _run_cli("explore", "--depth", "3", "--impl", "planted:off-by-one-splice", "--itf", str(itf),
                          "--traces", str(tmp_path))
    assert code == 1 and "VIOLATION impl-matches-model" in text and '{"op": "create"' in text
    assert json.loads(itf.read_text())["#meta"]["format"] == "ITF"
    written = text.split("replay: sessionspec replay ")[-1].strip()
    assert Path(written).parent == tmp_path and read_trace(written).requests[-1] == {"op": "snapshot"}


@pytest.mark.parametrize("depth", ["-1", "x"])
def test_explore_refuses_a_depth_that_is_not_a_count(depth: str) -> None:
    with contextlib.redirect_stderr(io.StringIO()) as err, pytest.raises(SystemExit) as exit:
        cli.main(["explore", "--depth", depth])
    assert exit.value.code == 2 and "--depth" in err.getvalue()


def test_explore_help_says_what_it_explores() -> None:
    with contextlib.redirect_stdout(io.StringIO()) as out, pytest.raises(SystemExit) as exit:
        cli.main(["explore", "--help"])
    assert exit.value.code == 0
    text = " ".join(out.getvalue().split())  # the prose is wrapped to the terminal's width
    for words in ("breadth first", "distinct state", "sessionspec replay", "--depth", "proofs/README.md"):
        assert words in text, words


# --- prove --------------------------------------------------------------------------------------


def test_discover_lists_every_obligation() -> None:
    names = {o.name for o in proving.discover(PROOFS)}
    assert {"reference_and_incremental_agree", "replace_keeps_unshadowed_in_order", "fold_prefix_then_one",
            "provenance_coverage_is_shadowed", "tool_result_rewrite_ignores_only_inner_content",
            "snapshot_thaw_is_round_trip"} <= names


def test_classify_crosshair_output() -> None:
    assert proving.classify(1, "m.py:4: error: false when calling f([7]) (which returns (7, 8))") == (
        proving.COUNTEREXAMPLE, "false when calling f([7]) (which returns (7, 8))")
    assert proving.classify(0, "m.py:4: info: Confirmed over all paths.")[0] == proving.CONFIRMED
    assert proving.classify(0, "m.py:4: info: Not confirmed.")[0] == proving.NO_COUNTEREXAMPLE
    assert proving.classify(2, "Traceback ...\nImportError: no module")[0] == proving.ERROR


def test_a_false_obligation_is_a_counterexample(tmp_path: Path) -> None:
    (tmp_path / "obligations_false.py").write_text(
        "import icontract\n\n\n"
        "@icontract.ensure(lambda result: result[0] == result[1])\n"
        "def wrong(x: int) -> tuple[int, int]:\n"
        '    """x + 1 is not x when x is 3."""\n'
        "    return x, x if x != 3 else 4\n"
    )
    [obligation] = proving.discover(tmp_path)
    result = proving.check(obligation, proving.Bounds(5, 1), tmp_path)
    assert result.status == proving.COUNTEREXAMPLE and "wrong(3)" in result.detail
    assert "counterexample: false when calling wrong(3)" in proving.table([result])
    assert proving.failed([result])


def test_each_obligation_has_a_cpu_budget_by_its_conditions() -> None:
    by_name = {o.name: o for o in proving.discover(PROOFS)}
    assert by_name["snapshot_thaw_is_round_trip"].conditions == 2 and by_name["fold_prefix_then_one"].conditions == 1
    assert proving.QUICK.budget(2) == 2 * (4 + 1) * proving.OVERRUN + proving.STARTUP
    quick = proving.budget(list(by_name.values()), proving.QUICK)
    assert quick == sum(o.conditions for o in by_name.values()) * 5 * proving.OVERRUN + len(by_name) * proving.STARTUP


def test_only_a_search_that_ran_to_its_bound_passes() -> None:
    obligation = proving.Obligation("obligations_x", "f", "")
    for status in (proving.NO_COUNTEREXAMPLE, proving.CONFIRMED):
        assert not proving.failed([proving.Result(obligation, status, "", 1.0)])
    for status in (proving.TIMEOUT, proving.NOT_AVAILABLE, proving.ERROR, proving.COUNTEREXAMPLE):
        assert proving.failed([proving.Result(obligation, proving.NO_COUNTEREXAMPLE, "", 1.0),
                               proving.Result(obligation, status, "", 1.0)]), status
    assert proving.cpu_used("m.py:4: info: Not confirmed.\nsessionspec-cpu-seconds 4.25\n") == (
        "m.py:4: info: Not confirmed.", 4.25)


def test_an_obligation_over_its_cpu_budget_is_a_timeout_and_fails_prove(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The budget is CPU time, held by the kernel (RLIMIT_CPU): a process that burns past it is ended, and the
    obligation is a timeout, which fails the run (exit 1), as a counterexample does."""
    (tmp_path / "obligations_burn.py").write_text(
        "import os\nimport icontract\n\n"
        "while os.environ.get('SESSIONSPEC_CONTRACTS') == '0':  # in prove's subprocess only, never in discover\n"
        "    pass\n\n\n"
        "@icontract.ensure(lambda result: result == 1)\n"
        "def burns(x: int) -> int:\n"
        '    """Never searched: its module does not finish importing."""\n'
        "    return 1\n")
    monkeypatch.setattr(proving, "STARTUP", 0.0)
    monkeypatch.setattr(proving, "OVERRUN", 1.0)
    monkeypatch.setattr(proving, "WALL_FACTOR", 120)  # the CPU cap, not the wall-clock guard, on a loaded host too
    monkeypatch.setattr(proving, "QUICK", proving.Bounds(0.5, 0.5))  # a budget of 1 CPU s, held at 2
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(["prove", "--quick", "--dir", str(tmp_path)])
    assert code == 1, out.getvalue() + err.getvalue()
    assert "timeout: over its budget of 1 CPU s" in out.getvalue()
    assert "1 obligation failed: burns (timeout)" in out.getvalue()
