"""Cuts of a divergence's trace that the runner's minimizer tries (`runner.minimize` keeps a cut only if replaying
it reproduces the family, so a cut only has to be likely to stay valid, never proven to).

Removing a request that logged an event moves every later seq down by one; a replacement or a
source list after it would then name another event. So a cut renumbers the seq references after
it (`without`), and a log that came in as a seed is offered as appends, which can be cut (`unseeded`).
"""

from __future__ import annotations

from typing import Any

from sessionspec.catalog import END_SEED
from sessionspec.wire.compare import op_of
from sessionspec.wire.oracle import ReferenceExecutor, reference_answer
from sessionspec.wire.requestline import encodable


def accepted_seqs(trace: list[Any]) -> list[int | None]:
    """Per request of `trace`, the seq the reference logs it at (an accepted append), else None."""
    oracle = ReferenceExecutor()
    out: list[int | None] = []
    for request in trace:
        line = encodable(request)
        answer = reference_answer(oracle, line) if line is not None else {"ok": False}
        event = answer.get("event") if op_of(request) == "append" and answer.get("ok") else None
        out.append(event["seq"] if isinstance(event, dict) and type(event.get("seq")) is int else None)
    return out


def _renumbered(request: Any, gone: list[int]) -> Any:
    """An append whose seq references (surfaceOp start/end, sourceEventSeqs) follow the removal of the events `gone`."""
    if not isinstance(request, dict) or request.get("op") != "append":
        return request

    def shift(seq: Any, *, end: bool = False) -> Any:
        if type(seq) is not int:
            return seq
        # A removed endpoint moves inwards: a start to the next event kept, an end to the one kept before it.
        return seq - sum(1 for g in gone if g < seq) - (1 if end and seq in gone else 0)

    out = dict(request)
    op = request.get("surfaceOp")
    if isinstance(op, dict):
        out["surfaceOp"] = {key: shift(value, end=key == "end") if key in ("start", "end") else value
                            for key, value in op.items()}
    sources = request.get("sourceEventSeqs")
    if isinstance(sources, list):
        kept = [shift(seq) for seq in sources if seq not in gone]
        out["sourceEventSeqs"] = kept
        if sources and not kept:  # it named only removed events: it names none (an empty list is not "none")
            del out["sourceEventSeqs"]
    return out


def without(trace: list[Any], start: int, stop: int, seqs: list[int | None]) -> list[Any]:
    """`trace` without requests start..stop-1; the appends after them in the same session renumbered as if the
    events they logged had never been (so a replacement or a source still names the same event)."""
    gone = [seq for seq in seqs[start:stop] if seq is not None]
    if not gone or any(op_of(r) == "create" for r in trace[start:stop]):
        return trace[:start] + trace[stop:]
    rest, renumber = [], True
    for request in trace[stop:]:
        renumber = renumber and op_of(request) != "create"
        rest.append(_renumbered(request, gone) if renumber else request)
    return trace[:start] + rest


def alone(trace: list[Any]) -> list[Any] | None:
    """The diverging request (the last) right after the create, made without a seed or header; None when `trace`
    does not start with a create or is that short already."""
    first = trace[0] if trace else None
    if len(trace) <= 2 or not isinstance(first, dict) or first.get("op") != "create":
        return None
    return [{**first, "seed": None, "header": None}, trace[-1]]


def unseeded(trace: list[Any]) -> list[Any] | None:
    """`trace` with its first request, a create from a seed, made a create without one followed by the seed's
    events as appends (the seed markers, which append refuses, left out and renumbered away); None when it
    does not start so. A seeded log cannot be cut by removing requests; these appends can."""
    first = trace[0] if trace else None
    if not isinstance(first, dict) or first.get("op") != "create" or not isinstance(first.get("seed"), list):
        return None
    seed = first["seed"]
    if not seed or not all(isinstance(event, dict) for event in seed):
        return None
    oracle = ReferenceExecutor()
    line = encodable(first)
    if line is None or not reference_answer(oracle, line).get("ok"):
        return None
    look = reference_answer(oracle, b'{"op":"snapshot"}')
    gone = [event["seq"] for event in look["events"] if event["type"] == END_SEED]
    appends = [_renumbered({"op": "append", **{key: value for key, value in event.items() if key not in ("seq", "time")}},
                           gone) for event in seed if event.get("type") != END_SEED]
    return [{**first, "seed": None, "header": None}, *appends, *(_renumbered(r, gone) for r in trace[1:])]


def cuts(trace: list[Any], start: int, stop: int, seqs: list[int | None]) -> list[list[Any]]:
    """The renumbered cut, and the plain cut where the two differ."""
    renumbered, plain = without(trace, start, stop, seqs), trace[:start] + trace[stop:]
    return [renumbered] if renumbered == plain else [renumbered, plain]
