"""What a search leaves behind: the table of states, the violations and the report."""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field

from sessionspec.envelope import Event
from sessionspec.jsonvalue import Json
from sessionspec.testing.explore.alphabet import Request


@dataclass(frozen=True, slots=True)
class Frontier:
    """A state to expand at the next depth, as the recipe that rebuilds both sides.

    The implementation is rebuilt by `seed` (the last reseed on the path, or None) and `appends`;
    the model from `events`, its log. Events and requests are interned, so a frontier state costs
    two tuples of references.
    """

    index: int
    seed: Json
    appends: tuple[Request, ...]
    events: tuple[Event, ...]
    first_live_seq: int


class StateTable:
    """Every distinct state, as its parent's index and the label of the step that reached it."""

    __slots__ = ("_ids", "_labels", "_parents", "_steps")

    def __init__(self) -> None:
        self._parents = array("q")
        self._steps = array("q")
        self._labels: list[str | None] = []
        self._ids: dict[str | None, int] = {}

    def add(self, parent: int, label: str | None) -> int:
        step = self._ids.get(label)
        if step is None:
            step = self._ids[label] = len(self._labels)
            self._labels.append(label)
        self._parents.append(parent)
        self._steps.append(step)
        return len(self._parents) - 1

    def __len__(self) -> int:
        return len(self._parents)

    def labels(self, index: int) -> list[str]:
        """The labels of the steps from the empty session to state `index`."""
        labels: list[str] = []
        while index >= 0:
            label = self._labels[self._steps[index]]
            if label is not None:
                labels.append(label)
            index = self._parents[index]
        labels.reverse()
        return labels


@dataclass(slots=True)
class Violation:
    invariant: str
    message: str
    depth: int
    labels: list[str]
    trace: list[Request]

    def to_json(self) -> dict[str, Json]:
        return {"invariant": self.invariant, "message": self.message, "depth": self.depth, "steps": self.labels,
                "trace": self.trace}


@dataclass(slots=True)
class Report:
    impl: str
    alphabet: str = "full"
    depth: int = 0
    distinct_states: int = 0
    transitions: int = 0
    seconds: float = 0.0
    """CPU seconds (time.process_time) of the search."""
    levels: list[dict[str, Json]] = field(default_factory=list)
    violations: list[Violation] = field(default_factory=list)

    @property
    def states_per_second(self) -> float:
        return self.distinct_states / self.seconds if self.seconds > 0 else 0.0

    def to_json(self) -> dict[str, Json]:
        return {"impl": self.impl, "alphabet": self.alphabet, "depth": self.depth, "distinct_states": self.distinct_states,
                "transitions": self.transitions, "states_per_second": round(self.states_per_second, 1),
                "seconds": round(self.seconds, 3), "levels": self.levels,
                "violations": [v.to_json() for v in self.violations]}
