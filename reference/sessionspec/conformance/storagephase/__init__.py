"""The runner's storage phase (spec/10, "Storage capability"): the testee's reader, writer and durability judged.

After the SCP vectors, when the testee's `hello` declares `storage`: every storage vector of a
declared backend is copied to a fresh directory and sent as `load`, its answer compared as any
answer is (`loads`); sessions are built on the testee and `save`d in each declared backend, and
each file is read back by the reference (`saves`); then the crash trial kills a testee with
SIGKILL while it appends to an attached log (`crash`). A vector of a backend the testee does not
declare, or every one when it declares none, is `not applicable`, never a failure: a testee
without persistence is not a failing one.

Each outcome has the fields of `runner.VectorOutcome` (the runner makes one of each), so the
reports count and show storage cases as they count vectors, and each divergence is filed under
its family (`load:RULE VERDICT`, `save:SESSION-CONFORMANCE-STORAGE.2 differs:...`,
`attach:SESSION-CONFORMANCE-STORAGE.3 differs:events`) like any other.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sessionspec.conformance.storagephase.crash import crash_trials
from sessionspec.conformance.storagephase.loads import Checked, load_vector, repair_vector
from sessionspec.conformance.storagephase.saves import check_saves
from sessionspec.conformance.storagevectors import vectorfiles
from sessionspec.wire.capabilities import NOT_APPLICABLE
from sessionspec.wire.exchange import Exchange
from sessionspec.wire.protocol import Answer
from sessionspec.wire.storageops import BACKENDS

__all__ = ["NOT_APPLICABLE", "Checked", "Settings", "declared", "run_phase"]


@dataclass(frozen=True)
class Settings:
    """What the phase needs of the run: where the vectors are, where its files go, and how to start a fresh testee."""

    vectors_dir: Path
    workdir: Path
    command: list[str]
    timeout: float = 10.0
    seed: int = 0
    """The crash trial's seed: where each trial kills the testee (the same seed, the same kills)."""
    crash: bool = True
    large: bool = False
    """Whether the generated logs at the bounds run (65,536 records, a 64 MiB line: seconds each); by default they are
    skipped with why, and `--profile ci` or `nightly` runs them."""


def declared(testee: Answer) -> tuple[str, ...]:
    """The backends a testee's hello declares (`"storage": [...]`), in the protocol's order; none without the key."""
    storage = testee.get("storage")
    return tuple(backend for backend in BACKENDS if isinstance(storage, list) and backend in storage)


def run_phase(exchange: Exchange, testee: Answer, settings: Settings,
              progress: Callable[[str, int, int], None] | None = None) -> list[Checked]:
    """Every storage case: each vector loaded (or not applicable), then the save check and the crash trial."""
    backends = declared(testee)
    out: list[Checked] = []
    vectors = vectorfiles.load(settings.vectors_dir)
    for number, vector in enumerate(vectors):
        if exchange.past_deadline:
            out.append(_not_run(vector, "the run's deadline passed"))
            continue
        if vector.get("backend") not in backends and not (backends and vector.get("backend") == "none"):
            out.append(_not_applicable(vector, backends))
        elif vector.get("generator") is not None and not settings.large:
            out.append(_not_run(vector, "a generated log at a bound, seconds to load: run with --profile ci or nightly"))
        else:
            out.append(load_vector(exchange, vector, settings.workdir / "loads"))
            repaired = repair_vector(exchange, vector, settings.workdir / "repairs")
            out.extend([repaired] if repaired is not None else [])
        if progress is not None:
            progress("storage vectors", number + 1, len(vectors))
    if not backends:
        return out
    out.extend(check_saves(exchange, backends, settings.workdir / "saves"))
    if settings.crash and not exchange.past_deadline:
        out.extend(crash_trials(settings.command, backends, settings.workdir / "crash", timeout=settings.timeout,
                                seed=settings.seed))
    return out


def _not_applicable(vector: dict[str, Any], backends: tuple[str, ...]) -> Checked:
    # Worded as the runner's vectors are ("needs NEED, ..."), so the report counts them under one need.
    why = (f"needs storage {vector.get('backend')}, which the testee does not declare (it declares {', '.join(backends)})"
           if backends else "needs storage, which the testee does not declare (hello has no storage)")
    return Checked(str(vector.get("id")), NOT_APPLICABLE, reason=why, rules=tuple(vector.get("rules", ())),
                   level=vector.get("level"))


def _not_run(vector: dict[str, Any], why: str) -> Checked:
    return Checked(str(vector.get("id")), "skipped", reason=why if why.startswith("a generated") else f"not run: {why}", rules=tuple(vector.get("rules", ())),
                   level=vector.get("level"))
