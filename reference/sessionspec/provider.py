"""Provider validity: what a strict provider API would reject in the derived messages (spec/09-relational.md).

The session model lets a compaction replace any range of the surface, and lets a loop crash
between a call and its result; the messages it derives can then hold a tool call with no answer,
or an answer to a call the model no longer sees. Providers with strict tool-use schemas refuse
such a request. These findings say where, by rule and position. They are reported (by
`sessionspec check --strict`), never enforced: the log is still a faithful record.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sessionspec.catalog import ASSISTANT_MESSAGE, TOOL_RESULT
from sessionspec.envelope import Event
from sessionspec.errors import Kind
from sessionspec.jsonvalue import Json
from sessionspec.preview import as_text
from sessionspec.rules import define
from sessionspec.surface import fold

K = Kind
CALL_ANSWERED = define("SESSION-PROVIDER-VALIDITY.1", K.INTERNAL,
                       "every tool call has its result among the tool results right after its assistant message")
RESULT_HAS_CALL = define("SESSION-PROVIDER-VALIDITY.2", K.INTERNAL,
                         "every tool result answers a call of the assistant message its run follows")
RANGE_KEEPS_PAIRS = define("SESSION-PROVIDER-VALIDITY.3", K.INTERNAL,
                           "a replacement's range never splits a tool call from its result")


@dataclass(frozen=True, slots=True)
class Finding:
    """One thing a strict provider would refuse: the rule, where (a message index, or a seq), and why."""

    rule: str
    position: int
    sentence: str
    at: str = "message"
    """"message": `position` indexes the derived messages; "seq": it is the seq of a replacement."""

    def to_json(self) -> dict[str, Json]:
        return {"rule": self.rule, "at": self.at, "position": self.position, "sentence": self.sentence}


def _get(value: Json, key: str) -> Json:
    return value.get(key) if isinstance(value, dict) else None


def call_ids(message: Json) -> list[str]:
    """The ids of a message's tool-call blocks, in order."""
    content = _get(message, "content")
    if not isinstance(content, list):
        return []
    return [b["id"] for b in content if _get(b, "type") == "tool-call" and type(_get(b, "id")) is str]


def result_call_id(message: Json) -> Json:
    """The call a tool-result message answers, or None for any other message."""
    source = _get(message, "source")
    return _get(source, "callId") if _get(source, "kind") == "tool" else None


def provider_findings(messages: Sequence[Json], events: Sequence[Event] | None = None) -> list[Finding]:
    """SESSION-PROVIDER-VALIDITY: the findings on `messages`, and (given the log) on its replacements."""
    findings: list[Finding] = []
    position = 0
    while position < len(messages):
        message = messages[position]
        run_end = position + 1
        while run_end < len(messages) and result_call_id(messages[run_end]) is not None:
            run_end += 1
        answered = {result_call_id(m) for m in messages[position + 1 : run_end]}
        if result_call_id(message) is not None:
            # A run of results with no assistant message before it: each one is an orphan.
            run_end = position
            while run_end < len(messages) and result_call_id(messages[run_end]) is not None:
                findings.append(Finding(RESULT_HAS_CALL, run_end,
                                        f"tool result for {as_text(result_call_id(messages[run_end]))} follows no tool call"))
                run_end += 1
            position = run_end
            continue
        calls = call_ids(message)
        # .1 Each call is answered before anything else speaks.
        for call_id in calls:
            if call_id not in answered:
                findings.append(Finding(CALL_ANSWERED, position,
                                        f"tool call {as_text(call_id)} has no result right after its assistant message"))
        # .2 Each result in the run answers one of these calls.
        for index in range(position + 1, run_end):
            call_id = result_call_id(messages[index])
            if call_id not in calls:
                findings.append(Finding(RESULT_HAS_CALL, index,
                                        f"tool result for {as_text(call_id)} answers no call of the message before it"))
        position = run_end
    if events is not None:
        findings.extend(split_pairs(events))
    return findings


def split_pairs(events: Sequence[Event]) -> list[Finding]:
    """SESSION-PROVIDER-VALIDITY.3: replacements that shadow one side of a call/result pair on the surface and not the other.

    The pair is judged on the surface just before the replacement; a replacement that itself
    carries the shadowed side (a pruned result for the same call) keeps the pair whole.
    """
    replacements = {r.seq: r for r in fold(events).replacements}
    nodes: list[int] = []
    findings = []
    for event in events:
        if event.surface_op is None:
            continue
        replacement = replacements.get(event.seq)
        if replacement is None:
            nodes.append(event.seq)
            continue
        shadowed = set(replacement.shadowed_seqs)
        call_side, result_side = _pairs_on(events, nodes)
        carried = set(call_ids(_get(event.data, "message"))) | {result_call_id(_get(event.data, "message"))}
        for call_id, call_seq in call_side.items():
            result_seqs = result_side.get(call_id)
            if not result_seqs:
                continue
            call_hidden = call_seq in shadowed
            result_hidden = any(seq in shadowed for seq in result_seqs)
            # .3 Hiding the call but not its result (or the reverse) leaves the provider half a pair.
            if call_hidden != result_hidden and call_id not in carried:
                findings.append(Finding(RANGE_KEEPS_PAIRS, event.seq,
                                        f"replacement at seq {event.seq} splits tool call {as_text(call_id)} from its result",
                                        at="seq"))
        first = nodes.index(replacement.shadowed_seqs[0])
        nodes[first : first + len(shadowed)] = [event.seq]
    return findings


def _pairs_on(events: Sequence[Event], nodes: Sequence[int]) -> tuple[dict[str, int], dict[str, list[int]]]:
    """The call nodes and result nodes on a surface, by call id."""
    calls: dict[str, int] = {}
    results: dict[str, list[int]] = {}
    for node in nodes:
        event = events[node]
        message = event.data if event.type not in (ASSISTANT_MESSAGE, TOOL_RESULT) else _get(event.data, "message")
        for call_id in call_ids(message) if event.type == ASSISTANT_MESSAGE else []:
            calls.setdefault(call_id, node)
        answers = result_call_id(message) if event.type == TOOL_RESULT else None
        if type(answers) is str:
            results.setdefault(answers, []).append(node)
    return calls, results
