"""The surface: an ordered list of event seqs built by append and positional replace.

The log never changes; what the model sees does. A transition is planned first, without touching
any state, and applied only once the event commits: a rejected or vetoed event leaves the surface
exactly as it was (SESSION-APPEND-COMMIT.2), and the plan that was validated is the plan that is
applied, so an event is never validated twice or applied unvalidated.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sessionspec.catalog import TOOL_RESULT
from sessionspec.envelope import APPEND, Event, Replace
from sessionspec.jsonvalue import FrozenList, Json, json_equal
from sessionspec.rules import check


@dataclass(frozen=True, slots=True)
class AppendPlan:
    """The event's seq goes to the tail of the surface."""

    seq: int


@dataclass(frozen=True, slots=True)
class ReplacePlan:
    """Nodes at positions first..last (inclusive) are shadowed by the event at `seq`."""

    seq: int
    first: int
    last: int
    shadowed: tuple[int, ...]


Plan = AppendPlan | ReplacePlan | None
"""None: a log-only event, which leaves the surface as it is."""


@dataclass(frozen=True, slots=True)
class Replacement:
    """One committed replace, as `fold` reports it."""

    seq: int
    start: int
    end: int
    shadowed_seqs: tuple[int, ...]

    def to_json(self) -> dict[str, Json]:
        return {"seq": self.seq, "start": self.start, "end": self.end, "shadowedSeqs": list(self.shadowed_seqs)}


@dataclass(frozen=True, slots=True)
class Surface:
    """The surface at one point: its nodes and how many replaces built it (SESSION-SURFACE-REPLACE.4)."""

    nodes: FrozenList
    replace_generation: int

    def to_json(self) -> dict[str, Json]:
        return {"nodes": list(self.nodes), "replaceGeneration": self.replace_generation}


@dataclass(frozen=True, slots=True)
class Fold:
    """`fold(events)`: the surface of a log and the replacements that shaped it, in log order."""

    nodes: FrozenList
    replacements: tuple[Replacement, ...]

    @property
    def surface(self) -> Surface:
        return Surface(self.nodes, len(self.replacements))

    def to_json(self) -> dict[str, Json]:
        return {"nodes": list(self.nodes), "replacements": [r.to_json() for r in self.replacements]}


def plan(nodes: Sequence[int], log: Sequence[Event], event: Event, *, index: int | None = None) -> Plan:
    """SESSION-SURFACE-*: the transition `event` makes on a surface `nodes` over `log`.

    `log` is every event before `event`; `event` has passed `build_event` (eligibility, marker
    shape and the provenance checks that need only the event). Pure: raises or returns a plan.
    """
    op = event.surface_op
    if op is None:
        return None
    if op == APPEND:
        return AppendPlan(event.seq)
    assert isinstance(op, Replace)
    return plan_replace(nodes, log, event, op, index=index)


def plan_replace(nodes: Sequence[int], log: Sequence[Event], event: Event, op: Replace, *, index: int | None = None) -> ReplacePlan:
    """SESSION-SURFACE-REPLACE: a replacement takes the place of a range of the current surface."""
    seq = event.seq
    # .1 Both endpoints name events currently on the surface (a shadowed or log-only seq is not there).
    check(op.start in nodes, "SESSION-SURFACE-REPLACE.1", f"surface replace: start seq {op.start} not found in surface",
          seq=seq, index=index)
    check(op.end in nodes, "SESSION-SURFACE-REPLACE.1", f"surface replace: end seq {op.end} not found in surface",
          seq=seq, index=index)
    first, last = nodes.index(op.start), nodes.index(op.end)
    # .2 The range is read by position on the surface, not by seq: start may not come after end.
    check(first <= last, "SESSION-SURFACE-REPLACE.2",
          f"surface replace: start seq {op.start} (index {first}) is after end seq {op.end} (index {last})",
          seq=seq, index=index)
    shadowed = tuple(nodes[first : last + 1])
    sources = event.source_event_seqs if event.source_event_seqs is not None else ()
    # SESSION-SURFACE-PROVENANCE.6: the replacement names every node it shadows, or replay cannot check it.
    missing = [node for node in shadowed if node not in sources]
    check(not missing, "SESSION-SURFACE-PROVENANCE.6",
          f"surface replace: sourceEventSeqs must include every shadowed surface node; missing {_seqs(missing)}",
          seq=seq, index=index)
    if event.type == TOOL_RESULT:
        check_tool_result_rewrite(log, event, shadowed, index=index)
    return ReplacePlan(seq, first, last, shadowed)


def _seqs(seqs: Sequence[int], shown: int = 20) -> str:
    """Seqs for a message, the first `shown` of them: a replacement may shadow a whole long surface."""
    more = f", ... ({len(seqs)} in all)" if len(seqs) > shown else ""
    return ", ".join(map(str, seqs[:shown])) + more


def kept_by_rewrite(data: Json) -> Json:
    """SESSION-SURFACE-TOOL-RESULT.3: what a rewrite of a tool/result must keep, its data with the inner content blanked.

    Stated once, here: the reference compares two results' forms with `json_equal`, and the
    checker's fast path compares their canonical bytes (equal bytes imply `json_equal`). The data
    has passed SESSION-MESSAGE-SHAPE.7, so the message holds exactly one block.
    """
    message = dict(data["message"])
    block = dict(message["content"][0])
    block["content"] = None
    message["content"] = [block]
    return {**data, "message": message}


def check_tool_result_rewrite(log: Sequence[Event], event: Event, shadowed: tuple[int, ...], *, index: int | None = None) -> None:
    """SESSION-SURFACE-TOOL-RESULT: a rewritten tool result may shorten output, never forge another call."""
    seq = event.seq
    # .1 A rewrite replaces one result with one result.
    check(len(shadowed) == 1, "SESSION-SURFACE-TOOL-RESULT.1",
          "tool/result surface replacement must rewrite exactly one current node", seq=seq, index=index)
    target = log[shadowed[0]]
    # .2 What it rewrites is a tool result.
    check(target.type == TOOL_RESULT, "SESSION-SURFACE-TOOL-RESULT.2",
          "tool/result surface replacement must target a current tool/result", seq=seq, index=index)
    # .3 Everything but the inner content is identical: call id, isError, error, meta, message id, turn, step.
    same = json_equal(kept_by_rewrite(target.data), kept_by_rewrite(event.data))
    check(same, "SESSION-SURFACE-TOOL-RESULT.3", "tool/result surface replacement may change only content",
          seq=seq, index=index)


def apply(nodes: Sequence[int], step: Plan) -> list[int]:
    """SESSION-SURFACE-REPLACE.3: the new node list after a committed, planned transition."""
    if step is None:
        return list(nodes)
    if isinstance(step, AppendPlan):
        return [*nodes, step.seq]
    return [*nodes[: step.first], step.seq, *nodes[step.last + 1 :]]


def fold(events: Sequence[Event]) -> Fold:
    """The surface of a log, recomputed from its first event. Raises on the first invalid transition."""
    nodes: list[int] = []
    replacements: list[Replacement] = []
    for position, event in enumerate(events):
        # SESSION-SURFACE-FOLD.1: seqs are positions; a gap or repeat would make every reference ambiguous.
        check(event.seq == position, "SESSION-SURFACE-FOLD.1",
              f"session event seq {event.seq} is not contiguous; expected {position}", seq=event.seq, index=position)
        step = plan(nodes, events[:position], event, index=position)
        if isinstance(step, ReplacePlan):
            assert isinstance(event.surface_op, Replace)
            replacements.append(Replacement(event.seq, event.surface_op.start, event.surface_op.end, step.shadowed))
        nodes = apply(nodes, step)
    return Fold(FrozenList(nodes), tuple(replacements))

