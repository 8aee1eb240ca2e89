"""The incremental surface and its derived-message cache, as `live` keeps them.

`surface.fold` recomputes the surface from the first event; a session store cannot afford that on
every append. The manager holds the one ordered node list and changes it by exactly the plan that
was validated for the committed event: planning reads, committing writes, and committing checks
that the plan belongs to the event being committed (a plan for another candidate, say one a
validator vetoed, must never shape the surface). The cache projects each node once and starts
over only when `replace_generation` changes, since only a replace moves or removes nodes.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TypeAlias

from sessionspec.envelope import Event, Replace
from sessionspec.jsonvalue import FrozenList, Json
from sessionspec.live.fastpath import replace_holds
from sessionspec.surface import ReplacePlan, Surface, plan_replace
from sessionspec.views import project

LivePlan: TypeAlias = int | ReplacePlan | None
"""None: log-only; an int: append that seq to the tail; a ReplacePlan: splice, as `surface.plan` says."""


class _OnSurface(Mapping[int, tuple[str, Json]]):
    """The events on the surface as `replace_holds` reads them: each node's seq to its event's (type, data)."""

    __slots__ = ("_log", "_nodes")

    def __init__(self, nodes: list[int], log: Sequence[Event]) -> None:
        self._nodes = nodes
        self._log = log

    def __contains__(self, seq: object) -> bool:
        return seq in self._nodes

    def __getitem__(self, seq: int) -> tuple[str, Json]:
        if seq not in self._nodes:
            raise KeyError(seq)
        event = self._log[seq]
        return event.type, event.data

    def __iter__(self) -> Iterator[int]:
        return iter(self._nodes)

    def __len__(self) -> int:
        return len(self._nodes)


class SurfaceManager:
    """The current nodes and replace generation of one log, advanced one committed event at a time."""

    __slots__ = ("_log", "_nodes", "_view", "generation")

    def __init__(self, log: Sequence[Event]) -> None:
        self._log = log
        self._nodes: list[int] = []
        self._view: Surface | None = None
        self.generation = 0

    @property
    def nodes(self) -> list[int]:
        """The live node list, for this package's readers only: never hand it out (decision 5)."""
        return self._nodes

    def plan(self, event: Event, *, index: int | None = None) -> LivePlan:
        """SESSION-SURFACE-*: the transition `event` would make. Pure: it raises or returns a plan.

        An append costs O(1); a replace O(surface): the fast form `replace_holds` places the
        replaces the reference certainly accepts, at the positions `plan_replace` would give, and
        every other replace goes through the foundation's `plan_replace`, so its range,
        provenance and tool-result rules raise exactly what the reference raises.
        """
        op = event.surface_op
        if op is None:
            return None
        if type(op) is str:
            return event.seq
        assert isinstance(op, Replace)
        nodes = self._nodes
        landed = replace_holds(nodes, _OnSurface(nodes, self._log), event.type, op.start, op.end,
                               event.source_event_seqs, event.data)
        if landed is not None:
            first, last = landed
            return ReplacePlan(event.seq, first, last, tuple(nodes[first : last + 1]))
        return plan_replace(nodes, self._log, event, op, index=index)

    def commit(self, event: Event, step: LivePlan) -> None:
        """SESSION-SURFACE-REPLACE.3/.4: apply the plan validated for `event`, which is being committed."""
        if step is None:
            return
        if type(step) is int:
            if step != event.seq:
                raise RuntimeError(f"plan for seq {step} applied to event {event.seq}")
            self._nodes.append(step)
        else:
            assert isinstance(step, ReplacePlan)
            if step.seq != event.seq or tuple(self._nodes[step.first : step.last + 1]) != step.shadowed:
                raise RuntimeError(f"replace plan for seq {step.seq} does not fit the surface at event {event.seq}")
            self._nodes[step.first : step.last + 1] = (step.seq,)
            self.generation += 1
        self._view = None

    def surface(self) -> Surface:
        """The surface as a value: a node snapshot that never changes, cached until the next change."""
        view = self._view
        if view is None:
            view = self._view = Surface(FrozenList(self._nodes), self.generation)
        return view


class DerivedMessages:
    """SESSION-DERIVED-CACHE.1: the messages of the surface, each node projected once per generation."""

    __slots__ = ("_count", "_generation", "_log", "_messages", "_surface", "_view", "rebuilds")

    def __init__(self, log: Sequence[Event], surface: SurfaceManager) -> None:
        self._log = log
        self._surface = surface
        self._messages: list[Json] = []
        self._count = 0
        self._generation = 0
        self._view: FrozenList | None = None
        self.rebuilds = 0
        """How many times the cache started over: once per replace generation it was read in."""

    def messages(self) -> FrozenList:
        nodes = self._surface.nodes
        if self._generation != self._surface.generation:
            # A replace moved or removed nodes: the cached prefix no longer lines up. Start over.
            self._generation = self._surface.generation
            self._messages = []
            self._count = 0
            self._view = None
            self.rebuilds += 1
        if self._count < len(nodes):
            log, add = self._log, self._messages.append
            for node in nodes[self._count :]:
                message = project(log[node])
                if message is not None:
                    add(message)
            self._count = len(nodes)
            self._view = None
        view = self._view
        if view is None:
            view = self._view = FrozenList(self._messages)
        return view
