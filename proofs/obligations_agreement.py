"""Obligation of the live chapter: the incremental session agrees with the reference model.

Needs `sessionspec.live`; `sessionspec prove` marks it "not available" when that cannot be imported.
"""

from __future__ import annotations

import icontract
import sessionspec.live
from sessionspec import model
from sessionspec.testing.explore import Step, View, append, create, observe, steps


def _pick(session: object, op: int) -> Step:
    """The op-th operation (mod the alphabet size) the explorer's alphabet offers in this state."""
    offered = [step for step in steps(session) if step.requests[0]["op"] == "append"]
    return offered[op % len(offered)]


@icontract.require(lambda ops: len(ops) <= 3)
@icontract.ensure(lambda result: result[0] == result[1], "live agrees with the model")
def reference_and_incremental_agree(ops: list[int]) -> tuple[tuple[list[object], View], tuple[list[object], View]]:
    """After any short sequence of operations from the explorer's alphabet, the live session and
    the model accepted and rejected the same operations with the same rules, and every view
    (log, surface, generation, messages, transcript, first live seq) is the same.

    Guards against: a cache in the live session (pending plan, derived messages, events snapshot)
    that is not invalidated by some transition, or a rejection that the live session half-applied.
    """
    reference = create(model.Session.create, None)
    actual = create(sessionspec.live.Session.create, None)
    expected: list[object] = []
    got: list[object] = []
    for op in ops:
        step = _pick(reference, op)
        for request in step.requests:
            expected.append(append(reference, request))
            got.append(append(actual, request))
    return (expected, observe(reference)), (got, observe(actual))
