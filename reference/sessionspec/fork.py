"""Fork: a child session seeded with a prefix of its parent's log (spec/08-repair.md).

A fork lets a user branch from an earlier point ("retry from here") without touching the parent:
the child inherits the facts up to the boundary as seed history, and its header records where it
came from. A boundary inside an open turn would hand the child a turn it can neither finish nor
repair honestly, so it is refused.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from sessionspec.errors import Kind, SpecViolation
from sessionspec.header import SESSION_FORMAT_VERSION
from sessionspec.jsonvalue import Json, is_nonneg_safe_int
from sessionspec.model import Session
from sessionspec.preview import shown
from sessionspec.rules import define
from sessionspec.transaction import Clock, wall_clock

INVALID_BOUNDARY: Final = "INVALID_BOUNDARY"
OPEN_TURN: Final = "OPEN_TURN"

K = Kind
BOUNDARY_TYPE = define("SESSION-FORK.1", K.RANGE, "the fork boundary is a non-negative safe integer (INVALID_BOUNDARY)")
BOUNDARY_EXISTS = define("SESSION-FORK.2", K.RANGE,
                         "the boundary names an event of the source, at its own seq (INVALID_BOUNDARY)")
NOT_IN_OPEN_TURN = define("SESSION-FORK.3", K.RANGE, "the boundary does not end inside an open turn (OPEN_TURN)")
CHILD_SEED = define("SESSION-FORK.4", K.INTERNAL,
                    "the child's seed is the source prefix through the boundary; its views are that prefix's replay")
CHILD_HEADER = define("SESSION-FORK.5", K.INTERNAL,
                      "the child's header records parentSession and seedLength and inherits cwd, nothing else")


class ForkError(SpecViolation):
    """A refused fork: the rule, and the upstream's `SessionForkError` code (INVALID_BOUNDARY, OPEN_TURN)."""

    def __init__(self, rule: str, code: str, message: str, *, seq: int | None = None) -> None:
        super().__init__(rule, Kind.RANGE, message, seq=seq)
        self.code = code

    def to_json(self) -> dict[str, object]:
        return {**super().to_json(), "code": self.code}


def boundary_of(source: Any, boundary: Json = None) -> int:
    """The inclusive boundary seq a fork of `source` at `boundary` uses; -1 for an empty source's default."""
    events = source.events
    sid = source.id
    if boundary is None:
        return len(events) - 1
    # .1 A boundary is a seq.
    if not is_nonneg_safe_int(boundary):
        raise ForkError(BOUNDARY_TYPE, INVALID_BOUNDARY,
                        f"fork boundary for session {shown(sid)} must be a non-negative safe integer, got {shown(boundary)}")
    # .2 ... of an event the source has.
    if boundary >= len(events):
        last = len(events) - 1 if events else "none"
        raise ForkError(BOUNDARY_EXISTS, INVALID_BOUNDARY,
                        f"fork boundary {boundary} does not exist in session {shown(sid)} (last seq: {last})", seq=boundary)
    if events[boundary].seq != boundary:
        raise ForkError(BOUNDARY_EXISTS, INVALID_BOUNDARY,
                        f"fork boundary {boundary} does not match a contiguous event seq in session {shown(sid)}",
                        seq=boundary)
    return int(boundary)


def open_turn_at(events: Any, boundary: int) -> tuple[bool, Json]:
    """Whether a turn is open after events[0..boundary], and its number: only turn/start and turn/end count."""
    for event in reversed(events[: boundary + 1]):
        if event.type == "turn/end":
            return False, None
        if event.type == "turn/start":
            data = event.data
            return True, data.get("turn") if isinstance(data, dict) else None
    return False, None


def fork(
    source: Any,
    boundary: Json = None,
    *,
    child_id: str | None = None,
    factory: Callable[..., Any] | None = None,
    clock: Clock | None = None,
) -> Any:
    """SESSION-FORK: a new session whose seed is `source`'s events through seq `boundary` (default: the last).

    `factory` is an implementation's `create` (default: the model's); the child's header is
    {version, id, createdAt (now), cwd (if the source has one), parentSession, seedLength}.
    """
    b = boundary_of(source, boundary)
    sid = source.id
    # .3 Forking inside an open turn would give the child a turn nobody runs.
    is_open, turn = open_turn_at(source.events, b)
    if is_open:
        raise ForkError(NOT_IN_OPEN_TURN, OPEN_TURN, f"fork boundary {b} in session {shown(sid)} ends inside open turn {shown(turn)}",
                        seq=b)
    # SESSION-FORK.4: the prefix, inclusive of the boundary, is the child's seed.
    seed = list(source.events[: b + 1])
    clock = clock or wall_clock
    child = child_id if child_id is not None else f"{sid}-fork-{b}"
    # SESSION-FORK.5: lineage lives in the header; origin, delegationDepth and agentPreset are the parent's, not the child's.
    header: dict[str, Json] = {"version": SESSION_FORMAT_VERSION, "id": child, "createdAt": clock()}
    if "cwd" in source.header:
        header["cwd"] = source.header["cwd"]
    header["parentSession"] = sid
    header["seedLength"] = len(seed)
    create = factory or Session.create
    return create(child, seed=seed, header=header, clock=clock)
