"""spec/09-relational.md, provider validity: findings a strict provider API would reject (never enforced)."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from sessionspec import repair
from sessionspec.provider import Finding, provider_findings
from sessionspec.rules import RULES
from sessionspec.testing.builders import (
    assistant_message,
    compaction_summary,
    pruned,
    replace_op,
    tool_call_block,
    tool_result,
    user_message,
)
from sessionspec.testing.implementations import SessionFactory
from sessionspec.testing.loops import Loop, agent_loops, build, ticking_clock


def assistant(message_id: str, *calls: str) -> Any:
    """The message of an assistant/message calling `calls`: what the provider sees."""
    return assistant_message(message_id, [tool_call_block(c) for c in calls])["message"]


def result(call_id: str) -> Any:
    """The message of the tool/result answering `call_id`."""
    return tool_result(call_id, "ok", message_id=f"r-{call_id}")["message"]


USER = user_message("u")


def rules(findings: list[Finding]) -> list[tuple[str, int]]:
    return [(f.rule, f.position) for f in findings]


def test_the_rules_are_registered_as_internal() -> None:
    for number in (1, 2, 3):
        assert RULES[f"SESSION-PROVIDER-VALIDITY.{number}"].kind.value == "internal"


def test_answered_calls_give_no_findings() -> None:
    assert provider_findings([USER, assistant("a", "c1", "c2"), result("c2"), result("c1"), USER]) == []


def test_a_call_with_no_result_right_after_its_message() -> None:
    # SESSION-PROVIDER-VALIDITY.1
    assert rules(provider_findings([USER, assistant("a", "c1")])) == [("SESSION-PROVIDER-VALIDITY.1", 1)]
    late = provider_findings([assistant("a", "c1"), USER, result("c1")])
    assert rules(late) == [("SESSION-PROVIDER-VALIDITY.1", 0), ("SESSION-PROVIDER-VALIDITY.2", 2)]
    assert "c1" in late[0].sentence
    assert late[0].to_json() == {"rule": "SESSION-PROVIDER-VALIDITY.1", "at": "message", "position": 0,
                                 "sentence": late[0].sentence}


def test_a_result_without_its_call() -> None:
    # SESSION-PROVIDER-VALIDITY.2
    assert rules(provider_findings([result("c1"), USER])) == [("SESSION-PROVIDER-VALIDITY.2", 0)]
    wrong = provider_findings([assistant("a", "c1"), result("c1"), result("c9")])
    assert rules(wrong) == [("SESSION-PROVIDER-VALIDITY.2", 2)]


def session_with_pair(create: SessionFactory) -> Any:
    """Nodes 0 (user), 1 (assistant calling c1), 2 (the result answering c1)."""
    session = create("s", clock=ticking_clock())
    session.append("user/message", USER, surface_op="append")
    call = session.append("assistant/message", assistant_message("a", [tool_call_block("c1")]), surface_op="append")
    answer = session.append("tool/result", tool_result("c1", "long output", message_id="r"), surface_op="append")
    return session, call.seq, answer.seq


def test_a_replacement_that_splits_a_call_from_its_result(create: SessionFactory) -> None:
    # SESSION-PROVIDER-VALIDITY.3: a summary over [user, assistant] leaves the result without its call.
    session, call, _ = session_with_pair(create)
    summary = session.append("user/message", compaction_summary("s", "summary"), surface_op=replace_op(0, call),
                             source_event_seqs=[0, call])
    findings = provider_findings(session.derive_messages(), session.events)
    assert ("SESSION-PROVIDER-VALIDITY.3", summary.seq) in rules(findings)
    assert ("SESSION-PROVIDER-VALIDITY.2", 1) in rules(findings)
    assert findings[-1].at == "seq"


def test_pruning_and_whole_pair_compaction_keep_pairs(create: SessionFactory) -> None:
    # SESSION-PROVIDER-VALIDITY.3: a rewritten result still answers the call; a summary over both hides both.
    session, _, answer = session_with_pair(create)
    session.append("tool/result", pruned(session.events[answer].data), surface_op=replace_op(answer, answer),
                   source_event_seqs=[answer])
    assert provider_findings(session.derive_messages(), session.events) == []
    nodes = list(session.surface.nodes)
    session.append("user/message", compaction_summary("s", "summary"), surface_op=replace_op(nodes[1], nodes[-1]),
                   source_event_seqs=nodes[1:])
    assert provider_findings(session.derive_messages(), session.events) == []


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(loop=agent_loops(compactions=False))
def test_repair_leaves_no_findings_without_compactions(implementation: str, create: SessionFactory, loop: Loop) -> None:
    # A crash leaves calls unanswered (.1); the repair closers answer every one.
    for cut in loop.cuts_inside_turns()[-2:]:
        events = build(loop.requests[:cut], implementation).events
        fixed = create("fixed", seed=repair.repaired(events))
        assert provider_findings(fixed.derive_messages(), fixed.events) == []
    whole = build(loop.requests, implementation)
    assert provider_findings(whole.derive_messages(), whole.events) == []
