"""The stateful half of the stored-log fast path: a survey's runs folded onto the surface, in log order.

A stored log is vouched for a block at a time by `storage.survey` (no state: each record alone)
and then here (the state: the run must continue the log at the seq it expects, and each
replace must land on the current surface, `live.fastpath.replace_holds`). Both `sessionspec
check` (`logcheck.checker.Checker`) and the load gate's fast form (`storage.storedlog`) keep the
surface this way: the current nodes, and each one's type and, for a tool/result, its data (a
later rewrite of it is compared with it), so what they keep is bounded by the surface, not by
the log.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sessionspec.catalog import TOOL_RESULT
from sessionspec.envelope import Event
from sessionspec.jsonvalue import Json, snapshot
from sessionspec.live.fastpath import replace_holds


class SurfaceFold:
    """The surface a stored log's records build: `nodes`, `info` (seq -> (type, data)), `next_seq`, `replace_generation`."""

    def __init__(self) -> None:
        self.next_seq = 0
        self.nodes: list[int] = []
        self.info: dict[int, tuple[str, Json]] = {}
        """seq -> (type, data) for current nodes; data is kept for tool/results (the checker's strict mode keeps all)."""
        self.replace_generation = 0

    def resolve(self, data: Any) -> Json:
        """A current node's data as JSON, where it is kept in another form (the checker's stored lines)."""
        return data

    def fold(self, ops: Sequence[Any], k: int, first: int, nxt: int) -> int:
        """Apply a run's surface events `ops[k:]` to the surface, the run continuing the log at seq `first`.

        The survey vouched for each record alone; here the run must start at the seq the log
        expects, and each replace must land (`_fast_replace`). Returns r: `ops[k:r]` are applied
        and the run is taken up to the line of the replace `ops[r]`, which is the exact path's;
        r = len(ops) takes the whole run (the next seq is then `nxt`); -1 takes nothing.
        """
        if first != self.next_seq:
            return -1
        nodes, info = self.nodes, self.info
        for refused in range(k, len(ops)):
            step = ops[refused]
            if len(step) == 3:
                # appends: each a new node at the end of the surface.
                seqs, kept, _ = step
                nodes.extend(seqs)
                info.update(zip(seqs, kept, strict=True))
                continue
            _, seq, kind, data, op, sources = step
            if not self._fast_replace(kind, seq, op, sources, data):
                self.next_seq = seq
                return refused
        self.next_seq = nxt
        return len(ops)

    def _fast_replace(self, kind: str, seq: int, op: dict[str, Any], sources: Any, data: Any) -> bool:
        """A replace the reference would accept (`fastpath.replace_holds`), applied to the surface."""
        landed = replace_holds(self.nodes, self.info, kind, op["start"], op["end"], sources, data, self.resolve)
        if landed is None:
            return False
        first, last = landed
        info, nodes = self.info, self.nodes
        for node in nodes[first : last + 1]:
            del info[node]
        nodes[first : last + 1] = [seq]
        info[seq] = (kind, data if kind == TOOL_RESULT else None)
        self.replace_generation += 1
        self.next_seq = seq + 1
        return True


class CurrentNodes(Sequence[Event]):
    """The log as `surface.plan` reads it, restricted to what a fold keeps: the current nodes.

    `plan` indexes the log only at a shadowed node (to check a tool/result rewrite), and every
    shadowed node is a current node, so this view answers every lookup a valid replace makes.
    """

    def __init__(self, fold: SurfaceFold) -> None:
        self._fold = fold

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            raise TypeError("the fold keeps only the current nodes")
        kind, data = self._fold.info[index]
        return Event(kind, index, 0, snapshot(self._fold.resolve(data)))

    def __len__(self) -> int:
        return self._fold.next_seq


__all__ = ["CurrentNodes", "SurfaceFold"]
