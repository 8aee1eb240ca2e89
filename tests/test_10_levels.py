"""Conformance levels and fair verdicts (issue 22): a required deviation is told from a rule this spec added.

`planted:seeds-only` implements the seeds and nothing more (`sessionspec.testing.seedsonly`): a default
conform run finds none of its divergences at the required level, and names each recommended rule it
skips. The breaches of a request (every rule it breaks, each check on its own) include the reference's
own rule, and a rejection with the kind of any of them is a divergence from the check order alone.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sessionspec.breaches import append_breaches, create_breaches, events_breaches
from sessionspec.cli import main
from sessionspec.conformance import runner
from sessionspec.errors import SpecViolation
from sessionspec.model import Session
from sessionspec.rules import RULES
from sessionspec.testing import invalid
from sessionspec.testing.builders import (
    assistant_message,
    pruned,
    replace_op,
    tool_call,
    tool_call_block,
    tool_result,
    user_message,
)
from sessionspec.testing.seedsonly import SKIPPED
from sessionspec.wire.oracle import ReferenceExecutor
from sessionspec.wire.protocol import dumps
from sessionspec.wire.verdict import APPEND_ORDER, SEED_ORDER, Breach, judge
from support import valid_report

SERVE = ["sessionspec", "serve", "--impl"]


@pytest.fixture(scope="module")
def seeds_only_report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A default run against seeds-only, but for each family's aftermath (`runner._follow`), which decides no level.

    The aftermath probes up to four divergences of each of its 23 families, each against a testee process of its own:
    half the run (15 s), of which these tests read nothing.
    """
    directory = tmp_path_factory.mktemp("levels")
    report = directory / "report.json"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(runner, "_follow", lambda exchange, result, progress: None)
        code = main(["conform", "--examples", "30", "--json", str(report), "--traces", str(directory), "--", *SERVE,
                     "planted:seeds-only"])
    assert code == 1
    data: dict[str, Any] = valid_report(report)
    return data


def test_an_implementation_of_the_seeds_alone_has_no_required_divergence(seeds_only_report: dict[str, Any]) -> None:
    required = [(d["family"], d["id"]) for d in seeds_only_report["divergences"] if d["level"] == "required"]
    assert not required


def test_each_recommended_rule_it_skips_is_named_in_the_report(seeds_only_report: dict[str, Any]) -> None:
    named = {d["family"].split(" ")[0].split(":", 1)[1] for d in seeds_only_report["divergences"]}
    # Every skipped rule a vector reaches (the order rules only the machine meets, when a request breaks two).
    reachable = set(SKIPPED) - {APPEND_ORDER, SEED_ORDER}
    assert reachable <= named, sorted(reachable - named)
    assert all(RULES[rule].ground.level.value == "recommended" or RULES[rule].ground.on_append is not None
               for rule in named)


def judged(op: str, expected: dict[str, Any], actual: dict[str, Any], breaches: tuple[Breach, ...],
           why: list[str] | None = None, request: Any = None) -> tuple[str, str | None]:
    verdict = judge(op, request, expected, actual, breaches, why or ["x"])
    return verdict.level, verdict.rule


REJECT_HEADER = {"ok": False, "error": {"kind": "header", "rule": "SESSION-FORMAT-HEADER.4"}}
BREACHES = (Breach("SESSION-FORMAT-HEADER.4", "header", "required"), Breach("SESSION-SEED-ACCEPTANCE.2", "seq", "required"))


def test_a_rejection_with_the_kind_of_another_broken_rule_is_a_check_order_divergence_only() -> None:
    seq_reject = {"ok": False, "error": {"kind": "seq"}}
    assert judged("create", REJECT_HEADER, seq_reject, BREACHES) == ("recommended", SEED_ORDER)
    range_reject = {"ok": False, "error": {"kind": "range"}}
    assert judged("append", REJECT_HEADER, range_reject, (*BREACHES, Breach("X", "range", "required"))) == \
        ("recommended", APPEND_ORDER)
    assert judged("create", REJECT_HEADER, {"ok": False, "error": {"kind": "json"}}, BREACHES) == ("required", None)
    assert judged("create", REJECT_HEADER, {"ok": False, "error": {"kind": "internal"}}, BREACHES) == ("required", None)


def test_accepting_what_breaks_only_recommended_rules_is_recommended() -> None:
    recommended = (Breach("SESSION-MESSAGE-SHAPE.2", "message-shape", "recommended"),)
    assert judged("append", REJECT_HEADER, {"ok": True}, recommended) == ("recommended", None)
    assert judged("append", REJECT_HEADER, {"ok": True}, (*recommended, BREACHES[0])) == ("required", BREACHES[0].rule)
    assert judged("append", {"ok": True}, {"ok": False, "error": {"kind": "envelope"}}, ()) == ("required", None)


def test_accepting_what_breaks_a_required_rule_behind_a_recommended_first_is_named_after_the_required_rule() -> None:
    """A fold whose first fault is an envelope rule (recommended for a log given whole) and which also breaks a
    surface rule (required: the upstream's fold checks it) deviates from the surface rule: its family says so."""
    breaches = (Breach("SESSION-EVENT-ENVELOPE.2", "envelope", "recommended"),
                Breach("SESSION-SURFACE-TOOL-RESULT.2", "tool-result-rewrite", "required"))
    refused = {"ok": False, "error": {"kind": "envelope", "rule": "SESSION-EVENT-ENVELOPE.2"}}
    verdict = judge("fold", {"op": "fold"}, refused, {"ok": True}, breaches, [])
    assert (verdict.level, verdict.rule) == ("required", "SESSION-SURFACE-TOOL-RESULT.2")
    first_required = judge("fold", {"op": "fold"}, refused, {"ok": True}, breaches[::-1], [])
    assert (first_required.level, first_required.rule) == ("required", None)


def test_an_ignorable_the_append_dropped_is_recommended_and_nothing_else_is() -> None:
    request = {"op": "append", "type": "x/note", "data": {}, "ignorable": True}
    event = {"type": "x/note", "seq": 0, "time": 1, "data": {}}
    expected, dropped = {"ok": True, "event": {**event, "ignorable": True}}, {"ok": True, "event": event}
    assert judged("append", expected, dropped, (), ["event: expected ..."], request) == \
        ("recommended", "SESSION-EVENT-ENVELOPE.6")
    other = {"ok": True, "event": {**event, "data": {"x": 1}}}
    assert judged("append", expected, other, (), ["event: expected ..."], request) == ("required", None)


def test_breaches_are_every_rule_each_check_finds_on_its_own() -> None:
    session = Session.create("s", clock=lambda: 1)
    session.append("turn/start", {"turn": 1})
    nodes = session.surface.nodes
    rules = [v.rule for v in append_breaches(session.events, nodes, {"type": "user/message", "data": "hi",
                                                                    "surfaceOp": {"op": "replace", "start": 5, "end": 5},
                                                                    "sourceEventSeqs": [9]})]
    assert set(rules) == {"SESSION-SURFACE-PROVENANCE.5", "SESSION-MESSAGE-SHAPE.9", "SESSION-SURFACE-REPLACE.1"}
    rules = [v.rule for v in append_breaches(session.events, nodes, {"type": "user/message", "data": user_message("u"),
                                                                    "surfaceOp": "prepend", "ignorable": "x"})]
    assert set(rules) == {"SESSION-EVENT-ENVELOPE.6", "SESSION-SURFACE-PROJECTION.4"}
    seed = [{"type": "turn/start", "seq": 0, "time": 0, "data": {}}, {"type": "turn/end", "seq": 2, "time": 0, "data": {}}]
    header = {"version": 0, "id": "s", "createdAt": -1, "title": "x", "parentSession": ""}
    rules = [v.rule for v in create_breaches({"id": "s", "seed": seed, "header": header})]
    assert set(rules) == {"SESSION-FORMAT-HEADER.4", "SESSION-FORMAT-HEADER.11", "SESSION-FORMAT-HEADER.12",
                          "SESSION-SEED-ACCEPTANCE.2"}
    assert [v.rule for v in events_breaches([{"type": "turn/start", "seq": 1, "time": 0, "data": {}}])] == \
        ["SESSION-SURFACE-FOLD.1"]


def test_a_log_with_a_broken_entry_names_no_surface_rule_its_later_entries_do_not_break() -> None:
    """Once an entry cannot be read as an event, later seqs no longer say where entries are: planning them over the
    log without it named a tool-result rewrite's rule (a required one) for a fold that broke only an envelope rule."""
    session = Session.create("s", clock=lambda: 1)
    session.append("turn/start", {"turn": 1})
    session.append("assistant/message", assistant_message("a", [tool_call_block("c")]), surface_op="append")
    called = session.append("tool/call", tool_call("c"))
    result = session.append("tool/result", tool_result("c", "output"), surface_op="append", source_event_seqs=[called.seq])
    session.append("todo/write", {"todos": []})  # without the broken entry, the log's position of the result
    session.append("tool/result", pruned(result.data), surface_op=replace_op(result.seq, result.seq),
                   source_event_seqs=[result.seq])
    events = [event.to_json() for event in session.events]
    assert events_breaches(events) == []
    del events[0]["type"]
    assert [v.rule for v in events_breaches(events)] == ["SESSION-EVENT-ENVELOPE.2"]


@settings(max_examples=150, deadline=None)
@given(st.one_of(st.one_of(*invalid._FIXED).map(lambda bad: bad.request), st.dictionaries(
    st.sampled_from(["type", "data", "surfaceOp", "sourceEventSeqs", "ignorable", "extra"]),
    st.one_of(st.none(), st.booleans(), st.integers(-3, 9), st.sampled_from(["", "user/message", "append", "x/y"]),
              st.lists(st.integers(-1, 9), max_size=3), st.just({"op": "replace", "start": 1, "end": 2})))))
def test_the_references_own_rule_is_always_among_the_breaches(request_: Any) -> None:
    oracle = ReferenceExecutor()
    oracle.answer(dumps({"op": "create", "id": "s", "seed": None, "header": None}))
    for setup in ({"op": "append", "type": "turn/start", "data": {"turn": 1}},
                  {"op": "append", "type": "user/message", "data": user_message("u1"), "surfaceOp": "append"}):
        assert oracle.answer(dumps(setup))[0]["ok"]
    try:
        line = dumps({"op": "append", **request_})
    except (TypeError, ValueError):
        return
    answer, _ = oracle.answer(line)
    breaches = oracle.breaches()
    if answer["ok"]:
        assert breaches == ()
    else:
        assert breaches[0].rule == answer["error"]["rule"] and breaches[0].kind == answer["error"]["kind"]


def test_a_breach_is_a_real_violation_of_its_rule() -> None:
    """Each breach is raised by the reference itself on the request with the other breaches repaired away: here, one
    request per pair of rules, each repaired in turn."""
    session = Session.create("s", clock=lambda: 1)
    both = {"type": "user/message", "data": user_message("u"), "surfaceOp": "prepend", "ignorable": "x"}
    without_flag = {key: value for key, value in both.items() if key != "ignorable"}
    for repaired, rule in ((without_flag, "SESSION-SURFACE-PROJECTION.4"),
                           ({**both, "surfaceOp": "append"}, "SESSION-EVENT-ENVELOPE.6")):
        with pytest.raises(SpecViolation) as info:
            Session.create("t", seed=session.events, clock=lambda: 1).append_request(repaired)
        assert info.value.rule == rule


def test_vectors_record_the_breaches_and_level_of_each_rejection() -> None:
    from sessionspec.conformance import vectors

    for vector in vectors.load():
        last = vector["steps"][-1]
        if vector["expect"] == "reject":
            assert last["breaches"][0]["rule"] == vector["rules"][0] == last["expected"]["error"]["rule"]
            assert vector["level"] == last["breaches"][0]["level"]
        else:
            assert vector["level"] == "required"
    assert Path(vectors.DEFAULT_DIR).is_dir()


JSON = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=8)),
                    lambda inner: st.one_of(st.lists(inner, max_size=4),
                                            st.dictionaries(st.sampled_from(["ok", "op", "error", "kind", "rule",
                                                                             "event", "events", "header", "x-reentrant",
                                                                             "message", "type", "time", "closers"]),
                                                            inner, max_size=5)),
                    max_leaves=25)
ANSWER = st.one_of(JSON, st.fixed_dictionaries({"ok": st.booleans()}, optional={
    "error": st.one_of(JSON, st.fixed_dictionaries({"kind": st.one_of(st.text(max_size=10), JSON)},
                                                   optional={"rule": JSON, "message": JSON})),
    "event": JSON, "events": JSON, "header": JSON, "x-reentrant": JSON}))


@settings(max_examples=400, deadline=None)
@given(JSON, ANSWER, ANSWER, st.lists(st.builds(Breach, st.text(max_size=5), st.text(max_size=5),
                                                st.sampled_from(["required", "recommended"])), max_size=3))
def test_the_comparison_takes_any_answer_and_any_request_without_raising(request_: Any, expected: Any, actual: Any,
                                                                        breaches: list[Breach]) -> None:
    """Issue 22, item 5: nothing a testee sends, and no request the machine builds, can crash the runner's judgement."""
    from sessionspec.conformance import failures, report
    from sessionspec.wire.capabilities import Capabilities
    from sessionspec.wire.compare import describe, differences, op_of, unchecked, unsupported
    from sessionspec.wire.divergence import divergence

    if not isinstance(expected, dict) or not isinstance(actual, dict):
        expected, actual = {"ok": False, "error": expected}, {"ok": True, "value": actual}
    op = op_of(request_)
    unsupported(actual), unsupported(expected)
    Capabilities.declared(expected).needs(request_), Capabilities.declared(actual).needs(request_)  # any JSON value
    unchecked(expected, actual)
    describe(expected), describe(actual)
    for rules in (False, True):
        why = differences(op, expected, actual, rules=rules, time=rules)
    found = divergence("machine", "x", op, expected, actual, [request_], why or ["x: expected 1, got 2"],
                       breaches=tuple(breaches))
    assert found.level in ("required", "recommended")
    found.to_json(), found.family, report.explain(found, ["testee"])
    failures.judge(failures.parse("append:X accepted\nSESSION-A.1\nvector-id"), [found])
    try:
        line = dumps(request_)
    except (TypeError, ValueError):
        return
    from sessionspec.wire.breaching import breaches_of
    breaches_of(line, expected, None)


def test_a_rejection_resting_on_an_integer_spelled_as_a_float_is_recommended() -> None:
    """SESSION-LOSSLESS-JSON.8: `"version": 0.0` is refused (SESSION-FORMAT-HEADER.2), but a JavaScript reader sees 0."""
    from sessionspec.wire.breaching import breaches_of

    line = dumps({"op": "create", "id": "s", "seed": None, "header": {"version": 0.0, "id": "s", "createdAt": 1}})
    answer = {"ok": False, "error": {"kind": "version", "rule": "SESSION-FORMAT-HEADER.2"}}
    found = {b.rule: b.level for b in breaches_of(line, answer, None)}
    assert found == {"SESSION-FORMAT-HEADER.2": "recommended", "SESSION-LOSSLESS-JSON.8": "recommended"}
    integral = dumps({"op": "create", "id": "s", "seed": None, "header": {"version": 1, "id": "s", "createdAt": 1}})
    assert {b.level for b in breaches_of(integral, answer, None)} == {"required"}


def test_the_check_order_of_a_fold_or_repair_is_the_protocols() -> None:
    """SESSION-CONFORMANCE-PROTOCOL.8: an x- key before the shape; a testee that says the shape first deviates from it."""
    from sessionspec.wire.breaching import breaches_of
    from sessionspec.wire.verdict import PROTOCOL_ORDER

    line = dumps({"op": "repair", "x-extra": 1})
    oracle = ReferenceExecutor()
    answer, _ = oracle.answer(line)
    assert answer["error"]["rule"] == "SESSION-CONFORMANCE-PROTOCOL.6"
    breaches = breaches_of(line, answer, None)
    shape = {"ok": False, "error": {"kind": "envelope", "rule": "SESSION-CONFORMANCE-PROTOCOL.5"}}
    assert judged("repair", answer, shape, breaches) == ("recommended", PROTOCOL_ORDER)
