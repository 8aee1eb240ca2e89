"""Flaky findings: each family's trace replayed against fresh testees before it is reported (`conform --verify N`).

wptrunner's `--verify` and Connect's known-flaky list, for an oracle run in CI every day: a testee
that answers differently from one run to the next (a race, a clock, an uninitialised field, a hash
order) makes a family that comes and goes, and a CI that fails on it one day and passes the next
teaches its readers to ignore it. So with `--verify N`, each family's shortest trace (the
machine's minimized one, else its shortest vector's) is replayed N times, each against a testee
process of its own (as a family is followed: `minimize.aftermath`), to the same family. A family
that does not show every time is **flaky**: reported with how often it showed and its trace kept,
never counted as passing nor as a deviation, and no failure-list entry is needed for it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sessionspec.conformance.minimize import reproduces
from sessionspec.wire.client import Connection, RunOver, TesteeFailure
from sessionspec.wire.divergence import Divergence
from sessionspec.wire.exchange import Exchange

Progress = Callable[[str, int, int], None]


@dataclass
class Flaky:
    """A family that showed in `reproduced` of `replays` replays of its trace (and in the run itself)."""

    family: str
    reproduced: int
    replays: int
    divergence: Divergence

    def to_json(self) -> dict[str, Any]:
        return {"family": self.family, "reproduced": self.reproduced, "replays": self.replays,
                "divergence": self.divergence.to_json()}


def representative(divergences: list[Divergence]) -> dict[str, Divergence]:
    """Each family's divergence to replay: the machine's minimized one, else the one with the shortest trace."""
    out: dict[str, Divergence] = {}
    for found in sorted(divergences, key=lambda d: (d.source != "machine", len(d.trace), d.id)):
        out.setdefault(found.family, found)
    return out


def replay_once(exchange: Exchange, found: Divergence) -> bool:
    """Whether `found`'s trace shows its family again against a testee started for this replay alone."""
    connection = Connection(exchange.connection.command, timeout=exchange.connection.timeout,
                            deadline=exchange.connection.deadline)
    try:
        connection.start()
        fresh = Exchange(connection, deadline=exchange.deadline)
        return reproduces(fresh, found.trace, lambda other: other.family == found.family) is not None
    except TesteeFailure:
        return False
    finally:
        connection.close()


def verify(exchange: Exchange, divergences: list[Divergence], replays: int,
           progress: Progress | None = None) -> tuple[list[Divergence], list[Flaky]]:
    """The divergences of families that showed on every replay, and the flaky ones. Stops replaying (keeping what is
    left as found) when the run's deadline passes."""
    families = representative(divergences)
    flaky: dict[str, Flaky] = {}
    for number, (family, found) in enumerate(families.items()):
        if progress is not None:
            progress("verifying each family", number, len(families))
        if exchange.past_deadline:
            break
        try:
            shown = sum(replay_once(exchange, found) for _ in range(replays))
        except RunOver:
            break
        if shown < replays:
            flaky[family] = Flaky(family, shown, replays, found)
    return [d for d in divergences if d.family not in flaky], list(flaky.values())
