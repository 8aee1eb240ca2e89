"""The runner's storage phase (spec/10, "Storage capability"): the testee's reader, writer and durability judged.

After the SCP vectors, when the testee's `hello` declares `storage`: every storage vector of a
declared backend is copied to a fresh directory and sent as `load`, its answer compared as any
answer is (`loads`); sessions are built on the testee and `save`d in each declared backend, and
each file is read back by the reference (`saves`); then the crash trial kills a testee with
SIGKILL while it appends to an attached log (`crash`). A vector of a backend the testee does not
declare, or every one when it declares none, is `not applicable`, never a failure: a testee
without persistence is not a failing one.

Each outcome is a `VectorOutcome`, the record a vector's outcome is (the runner marks it `storage`), so the
reports count and show storage cases as they count vectors, and each divergence is filed under
its family (`load:RULE VERDICT`, `save:SESSION-CONFORMANCE-STORAGE.2 differs:...`,
`attach:SESSION-CONFORMANCE-STORAGE.3 differs:events`) like any other.

Every case has a stable id (`cases`): a storage vector's own, `repair:ID`, `save:SESSION:BACKEND`
and `crash:BACKEND`, each selectable by `--run`/`--skip` (`Settings.wants`) as the SCP vectors are,
also by its rules (a load by SESSION-CONFORMANCE-STORAGE.1 too). Under `--shard I/N` the storage
vectors are split by index, the save check and the crash trial counted as two more (one shard runs
each), so the shards' storage cases together are the whole run's, each in one shard.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sessionspec.conformance.storagephase import saves
from sessionspec.conformance.storagephase.crash import crash_trials
from sessionspec.conformance.storagephase.loads import load_vector, repair_vector, repairable
from sessionspec.conformance.storagevectors import layouts, saved, vectorfiles
from sessionspec.conformance.vectoroutcome import VectorOutcome
from sessionspec.wire.capabilities import NOT_APPLICABLE
from sessionspec.wire.exchange import Exchange
from sessionspec.wire.protocol import Answer
from sessionspec.wire.storageops import (
    ACKNOWLEDGED_DURABLE,
    BACKENDS,
    LOADS_AS_REFERENCE,
    REPAIRS_AS_REFERENCE,
    SAVES_WHAT_LOADS,
)

__all__ = ["NOT_APPLICABLE", "Case", "Settings", "cases", "declared", "run_phase"]


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
    wants: Callable[[Sequence[str]], bool] = lambda names: True
    """`--run`/`--skip` (`selection.Selection.wants`): whether a case known by `names` (`Case.names`) runs."""
    shard: tuple[int, int] | None = None
    """`--shard I/N`: the storage vectors by index, then the save check and the crash trial as two more."""


@dataclass(frozen=True)
class Case:
    """One storage case as `--list` shows it and `--run`/`--skip` select it: its id first, then the rest of its names
    (the rules it is about; a repair's also its vector's id and rules, so selecting a vector selects its repair)."""

    names: tuple[str, ...]
    level: str
    about: str
    rules: tuple[str, ...]
    """What its outcome counts for (`VectorOutcome.rules`): a load its vector's rules, the others their own rule."""


def _load(vector: dict[str, Any]) -> Case:
    rules = tuple(vector.get("rules", ()))
    return Case((str(vector["id"]), LOADS_AS_REFERENCE, *rules), str(vector.get("level") or "required"),
                str(vector.get("summary", "")), rules)


def _repair(vector: dict[str, Any]) -> Case:
    return Case((f"repair:{vector['id']}", REPAIRS_AS_REFERENCE, str(vector["id"]), *vector.get("rules", ())),
                "required", f"the testee's repair-file of {vector['id']} repairs as the reference's does",
                (REPAIRS_AS_REFERENCE,))


def _save(name: str, backend: str) -> Case:
    return Case((f"save:{name}:{backend}", SAVES_WHAT_LOADS), "required",
                f"the session {name}, saved in {backend}, loads back to its events as the reference writes them",
                (SAVES_WHAT_LOADS,))


def _crash(backend: str) -> Case:
    return Case((f"crash:{backend}", ACKNOWLEDGED_DURABLE), "recommended",
                f"a testee killed while appending to an attached {backend} log loses nothing it acknowledged",
                (ACKNOWLEDGED_DURABLE,))


def cases(vectors: Sequence[dict[str, Any]], backends: Sequence[str] = BACKENDS) -> Iterator[Case]:
    """Every storage case a run can have, in the order the phase runs them: each vector's load (and its repair when a
    repair changes its log), each session's save in each backend, each backend's crash trial."""
    for vector in vectors:
        yield _load(vector)
        if repairable(vector):
            yield _repair(vector)
    yield from (_save(name, backend) for name in saved.names() for backend in backends)
    yield from (_crash(backend) for backend in backends)


def _in_shard(shard: tuple[int, int] | None, index: int) -> bool:
    return shard is None or index % shard[1] == shard[0] - 1


def declared(testee: Answer) -> tuple[str, ...]:
    """The backends a testee's hello declares (`"storage": [...]`), in the protocol's order; none without the key."""
    storage = testee.get("storage")
    return tuple(backend for backend in BACKENDS if isinstance(storage, list) and backend in storage)


def run_phase(exchange: Exchange, testee: Answer, settings: Settings,
              progress: Callable[[str, int, int], None] | None = None) -> list[VectorOutcome]:
    """Every storage case selected and in the shard: each vector loaded (or not applicable), then the save check and
    the crash trial."""
    backends = declared(testee)
    out: list[VectorOutcome] = []
    every = vectorfiles.load(settings.vectors_dir)
    vectors = [v for number, v in enumerate(every) if _in_shard(settings.shard, number)]
    for number, vector in enumerate(vectors):
        load = settings.wants(_load(vector).names)
        repair = repairable(vector) and settings.wants(_repair(vector).names)
        if not (load or repair):
            continue
        if exchange.past_deadline:
            out.append(_not_run(vector, "the run's deadline passed"))
        elif vector.get("backend") not in backends and not (backends and vector.get("backend") == "none"):
            out.append(_not_applicable(vector, backends))
        elif vector.get("generator") is not None and not settings.large:
            out.append(_not_run(vector, "a generated log at a bound, seconds to load: run with --profile ci or nightly"))
        else:
            out.extend([load_vector(exchange, vector, settings.workdir / "loads")] if load else [])
            repaired = repair_vector(exchange, vector, settings.workdir / "repairs") if repair else None
            out.extend([repaired] if repaired is not None else [])
        if progress is not None:
            progress("storage vectors", number + 1, len(vectors))
    if not backends:
        return out
    if _in_shard(settings.shard, len(every)):
        def chosen(name: str, backend: str) -> bool:
            return settings.wants(_save(name, backend).names)

        out.extend(saves.check_saves(exchange, backends, settings.workdir / "saves", chosen,
                                     layouts.read(settings.vectors_dir)))
        if settings.large:
            out.extend(saves.check_bound_saves(exchange, backends, settings.workdir / "saves", chosen))
        else:
            out.extend(_bound_not_run(backends, chosen))
    crashed = tuple(backend for backend in backends if settings.wants(_crash(backend).names))
    if settings.crash and crashed and _in_shard(settings.shard, len(every) + 1) and not exchange.past_deadline:
        out.extend(crash_trials(settings.command, crashed, settings.workdir / "crash", timeout=settings.timeout,
                                seed=settings.seed))
    return out


def _bound_not_run(backends: tuple[str, ...], chosen: Callable[[str, str], bool]) -> list[VectorOutcome]:
    """The bound sessions' save cases, each skipped with why (as a generated log at a bound is)."""
    return [VectorOutcome(f"save:{name}:{backend}", "skipped", reason="a session at a bound, a 64 MiB record to save: run "
                          "with --profile ci or nightly", rules=(SAVES_WHAT_LOADS,), level="required")
            for name in saved.BOUNDS for backend in backends if chosen(name, backend)]


def _not_applicable(vector: dict[str, Any], backends: tuple[str, ...]) -> VectorOutcome:
    # Worded as the runner's vectors are ("needs NEED, ..."), so the report counts them under one need.
    why = (f"needs storage {vector.get('backend')}, which the testee does not declare (it declares {', '.join(backends)})"
           if backends else "needs storage, which the testee does not declare (hello has no storage)")
    return VectorOutcome(str(vector.get("id")), NOT_APPLICABLE, reason=why, rules=tuple(vector.get("rules", ())),
                   level=vector.get("level"))


def _not_run(vector: dict[str, Any], why: str) -> VectorOutcome:
    return VectorOutcome(str(vector.get("id")), "skipped", reason=why if why.startswith("a generated") else f"not run: {why}", rules=tuple(vector.get("rules", ())),
                   level=vector.get("level"))
