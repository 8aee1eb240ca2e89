"""Obligations of the surface chapter: replace, fold, provenance, tool-result rewrites.

Each function returns both sides of one property; its `ensure` says they are equal. CrossHair
searches for inputs (within the preconditions) where they are not.
"""

from __future__ import annotations

import icontract
from harness import RESERVED_BLOCK, RESERVED_OUTER, decode_log, replace_event, tool_result_data
from sessionspec.envelope import APPEND, Event, Replace
from sessionspec.errors import SpecViolation
from sessionspec.jsonvalue import is_safe_int
from sessionspec.surface import ReplacePlan, apply, check_tool_result_rewrite, fold, plan, plan_replace


def _distinct_seqs(nodes: list[int]) -> bool:
    return len(nodes) <= 5 and len(set(nodes)) == len(nodes) and all(0 <= n < 1000 for n in nodes)


@icontract.require(lambda nodes: _distinct_seqs(nodes))
@icontract.require(lambda nodes, first, last: 0 <= first <= last < len(nodes))
@icontract.ensure(lambda result: result[0] == result[1], "a replace keeps every unshadowed node, in order")
def replace_keeps_unshadowed_in_order(nodes: list[int], first: int, last: int) -> tuple[object, object]:
    """A replace removes exactly positions first..last, keeps every other node in its order, and
    puts the replacement where the range began.

    Guards against: an off-by-one at either end of the range, a replace that reorders the nodes
    it keeps, or one that appends the replacement at the tail instead of in place.
    """
    seq = max(nodes) + 1
    event = replace_event(seq, nodes, first, last)
    assert isinstance(event.surface_op, Replace)
    after = apply(nodes, plan_replace(nodes, [], event, event.surface_op))
    kept = [node for node in after if node != seq]
    return (kept, after.index(seq)), ([*nodes[:first], *nodes[last + 1 :]], first)


@icontract.require(lambda ops: len(ops) <= 4)
@icontract.ensure(lambda result: result[0] == result[1], "fold is incremental")
def fold_prefix_then_one(ops: list[int], extra: int) -> tuple[object, object]:
    """Folding a log equals folding its prefix and applying the last event's planned transition.

    Guards against: an incremental surface (the live session) whose state after N events differs
    from a full fold, e.g. a replace generation counted twice or a plan made against stale nodes.
    """
    events = decode_log([*ops, extra])
    prefix, last = events[:-1], events[-1]
    whole, head = fold(events), fold(prefix)
    step = plan(head.nodes, prefix, last)
    generation = len(head.replacements) + (1 if isinstance(step, ReplacePlan) else 0)
    return (list(whole.nodes), len(whole.replacements)), (apply(head.nodes, step), generation)


@icontract.require(lambda nodes: _distinct_seqs(nodes) and len(nodes) <= 4)
@icontract.require(lambda nodes, first, last: 0 <= first <= last < len(nodes))
@icontract.require(lambda nodes, sources: len(sources) <= 4 and len(set(sources)) == len(sources)
                   and all(0 <= s <= max(nodes) for s in sources))
@icontract.ensure(lambda result: result[0] == result[1], "provenance coverage is exactly the shadowed set")
def provenance_coverage_is_shadowed(nodes: list[int], first: int, last: int, sources: list[int]) -> tuple[object, object]:
    """A replace is accepted exactly when its sources cover every shadowed node (extra sources are
    allowed), and what it removes from the surface is exactly the shadowed set.

    Guards against: a provenance check that accepts a summary which forgets a node it hides
    (replay could not tell what was summarised), or one that demands sources beyond the range.
    """
    seq = max(nodes) + 1
    event = replace_event(seq, nodes, first, last, sources)
    assert isinstance(event.surface_op, Replace)
    shadowed = set(nodes[first : last + 1])
    try:
        after = apply(nodes, plan_replace(nodes, [], event, event.surface_op))
    except SpecViolation as violation:
        return (False, violation.rule), (shadowed <= set(sources), "SESSION-SURFACE-PROVENANCE.6")
    return (True, set(nodes) - set(after)), (shadowed <= set(sources), shadowed)


@icontract.require(lambda outer_a, outer_b: len(outer_a) <= 2 and len(outer_b) <= 2
                   and not (set(outer_a) | set(outer_b)) & RESERVED_OUTER)
@icontract.require(lambda block_a, block_b: len(block_a) <= 2 and len(block_b) <= 2
                   and not (set(block_a) | set(block_b)) & RESERVED_BLOCK)
@icontract.require(lambda outer_a, outer_b, block_a, block_b: all(
    is_safe_int(v) for d in (outer_a, outer_b, block_a, block_b) for v in d.values()))
@icontract.ensure(lambda result: result[0] == result[1], "a tool-result rewrite may change only the inner content")
def tool_result_rewrite_ignores_only_inner_content(outer_a: dict[str, int], outer_b: dict[str, int],
                                                   block_a: dict[str, int], block_b: dict[str, int],
                                                   inner_a: int, inner_b: int) -> tuple[object, object]:
    """A tool/result replacement is accepted exactly when everything but the block's inner content
    (other data fields, block fields) is unchanged, whatever the inner content becomes.

    Guards against: a pruning rewrite that forges another call's result (different meta or error
    fields), or a check so strict that it rejects a rewrite which only shortens the output.
    """
    target = Event("tool/result", 0, 0, tool_result_data(outer_a, block_a, inner_a), APPEND)
    rewrite = Event("tool/result", 1, 0, tool_result_data(outer_b, block_b, inner_b), Replace(0, 0))
    try:
        check_tool_result_rewrite([target], rewrite, (0,))
        accepted = True
    except SpecViolation:
        accepted = False
    return accepted, (outer_a == outer_b and block_a == block_b)
