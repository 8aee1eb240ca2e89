"""What a search keeps and leaves behind: the table of states, the violations and the report."""

from __future__ import annotations

from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from hashlib import blake2b
from typing import Any

from sessionspec.jsonvalue import Json
from sessionspec.testing.explore.alphabet import Request
from sessionspec.testing.explore.oracle import Reference
from sessionspec.testing.explore.sessions import Frozen

Progress = Callable[[dict[str, Json]], None]
"""Called with each level's row of the report (and, for the subtrees, with how many are done)."""


@dataclass(frozen=True, slots=True)
class Frontier:
    """A state to expand: its index in the state table, its depth, the model's side and the implementation's.

    `impl` is the implementation session as the step that reached the state left it, pickled;
    None when the implementation cannot be pickled (it is then rebuilt by replaying the path).
    """

    index: int
    depth: int
    reference: Reference
    impl: Frozen | None
    log_digest: blake2b | None = None
    """`observation.log_digest` of the model's log: its successors' digests extend it."""
    events: Sequence[Any] = ()
    """The implementation's events list, as read when the state was reached (`observation.Known`)."""


class StateTable:
    """Every distinct state, as its parent's index and the labels of the steps that led from the parent to it.

    A state's labels are the steps the implementation went through since its parent's copy: the
    rejected ones (which must change nothing, so an implementation that they did change is caught
    only with them in the trace) and the accepted one last.
    """

    __slots__ = ("_ids", "_labels", "_parents", "_steps")

    def __init__(self) -> None:
        self._parents = array("q")
        self._steps = array("q")
        self._labels: list[tuple[str, ...]] = []
        self._ids: dict[tuple[str, ...], int] = {}

    def add(self, parent: int, labels: tuple[str, ...]) -> int:
        step = self._ids.get(labels)
        if step is None:
            step = self._ids[labels] = len(self._labels)
            self._labels.append(labels)
        self._parents.append(parent)
        self._steps.append(step)
        return len(self._parents) - 1

    def __len__(self) -> int:
        return len(self._parents)

    def truncate(self, length: int) -> None:
        """Forget the states added after the first `length` (a finished subtree whose traces are written)."""
        del self._parents[length:]
        del self._steps[length:]

    def groups(self, index: int) -> list[tuple[str, ...]]:
        """The labels of the steps from the empty session to state `index`, grouped by state (rejected ones, then the accepted one)."""
        groups: list[tuple[str, ...]] = []
        while index >= 0:
            groups.append(self._labels[self._steps[index]])
            index = self._parents[index]
        groups.reverse()
        return groups

    def labels(self, index: int) -> list[str]:
        """The labels of the steps from the empty session to state `index`."""
        return [label for group in self.groups(index) for label in group]


@dataclass(slots=True)
class Violation:
    """An invariant broken in a state, with the protocol requests that reproduce it from nothing.

    `requests` starts with a `create` and ends with a `snapshot`; the steps' hooks are in the
    x-hooks extension's form (spec/10-conformance.md), so a testee offering it replays them as
    they are. `labels` names the steps, rejected ones included; `depth` counts the accepted ones.
    """

    invariant: str
    message: str
    depth: int
    labels: list[str]
    requests: list[Request]

    def to_json(self) -> dict[str, Json]:
        return {"invariant": self.invariant, "message": self.message, "depth": self.depth, "steps": self.labels,
                "requests": self.requests}


@dataclass(slots=True)
class Report:
    impl: str
    alphabet: str = "full"
    depth: int = 0
    distinct_states: int = 0
    transitions: int = 0
    seconds: float = 0.0
    """CPU seconds (time.process_time) of the search, summed over its processes."""
    wall_seconds: float = 0.0
    jobs: int = 1
    model_runs: int = 0
    """Requests the reference model itself ran (its first answer for a key, see `oracle.py`)."""
    model_answers_reused: int = 0
    """Requests answered by a remembered model answer."""
    levels: list[dict[str, Json]] = field(default_factory=list)
    violations: list[Violation] = field(default_factory=list)

    @property
    def states_per_second(self) -> float:
        """Distinct states per second of wall time: what a run of this many processes delivers."""
        return self.distinct_states / self.wall_seconds if self.wall_seconds > 0 else 0.0

    @property
    def states_per_cpu_second(self) -> float:
        return self.distinct_states / self.seconds if self.seconds > 0 else 0.0

    def to_json(self) -> dict[str, Json]:
        return {"impl": self.impl, "alphabet": self.alphabet, "depth": self.depth, "distinct_states": self.distinct_states,
                "transitions": self.transitions, "jobs": self.jobs, "model_runs": self.model_runs,
                "model_answers_reused": self.model_answers_reused,
                "states_per_second": round(self.states_per_second, 1),
                "states_per_cpu_second": round(self.states_per_cpu_second, 1),
                "seconds": round(self.seconds, 3), "wall_seconds": round(self.wall_seconds, 3), "levels": self.levels,
                "violations": [v.to_json() for v in self.violations]}
