"""One case's outcome, as every report counts it: a vector of the SCP phase or a case of the storage phase.

Its own module so that the runner and the storage phase, which the runner calls, make the same record
(the storage phase cannot import the runner).
"""

from __future__ import annotations

from dataclasses import dataclass

from sessionspec.wire.divergence import Divergence


@dataclass
class VectorOutcome:
    """One vector's outcome: passed, failed (with its divergence) or skipped (with why), and how long it took."""

    id: str
    status: str
    seconds: float = 0.0
    divergence: Divergence | None = None
    reason: str = ""
    rules: tuple[str, ...] = ()
    """The rules the vector covers (its first is the one it is about): what its outcome counts for."""
    level: str | None = None
    """The vector's level (spec/10, "Vectors"): where its rules are required, or only recommended (an append)."""
    not_run: bool = False
    """Skipped because the run stopped before it (the deadline, a signal, a testee declared unusable)."""
    storage: bool = False
    """A case of the storage phase (a storage vector, a repair, a save, a crash trial), counted as a vector is."""
