"""Storage vectors against the testee's `load` (SESSION-CONFORMANCE-STORAGE.1): each file copied afresh, its answer
compared with the reference's as any answer is, by the one exchange (families, levels and fair kinds as for SCP); and
those a repair changes against its `repair-file` (SESSION-CONFORMANCE-STORAGE.4)."""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any, Final

from sessionspec.conformance.storagevectors import vectorfiles
from sessionspec.conformance.vectoroutcome import VectorOutcome
from sessionspec.rules import RULES
from sessionspec.wire.divergence import divergence
from sessionspec.wire.exchange import DivergenceFound, Exchange
from sessionspec.wire.storageops import REPAIRS_AS_REFERENCE
from sessionspec.wire.verdict import Breach

LARGE_TIMEOUT: Final = 120.0
"""The answer timeout, in seconds, for a generated log at a bound (65,536 events, a 64 MiB line)."""


def breaches(rules: tuple[str, ...]) -> tuple[Breach, ...]:
    """The rules a refused file breaks, each with its kind and level: what makes a testee's kind fair or not."""
    return tuple(Breach(rule, RULES[rule].kind.value, RULES[rule].level.value) for rule in rules if rule in RULES)


def expected_of(vector: dict[str, Any], path: Path) -> dict[str, Any]:
    """The vector's expected answer; for a generated log, the reference's answer recomputed from the file the runner
    expanded, which must match what the vector records of it (its events' count and digest)."""
    expected: dict[str, Any] = vector["expected"]
    if "generator" not in vector or not expected.get("ok"):
        return expected
    computed = vectorfiles.expected_answer(path, vector.get("session"))
    if vectorfiles.digested(computed) != expected:
        raise RuntimeError(f"storage vector {vector.get('id')}: its generator no longer makes the log it records "
                           "(run `sessionspec vectors generate`)")
    return computed


def load_vector(exchange: Exchange, vector: dict[str, Any], workdir: Path) -> VectorOutcome:
    """One storage vector: its log materialized in a directory of its own (kept: a divergence's reproduction loads it
    again), sent as `load`, compared with the expected answer."""
    started = time.perf_counter()
    rules, level = tuple(vector.get("rules", ())), vector.get("level")
    directory = workdir / str(vector["id"])
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    path = vectorfiles.materialize(vector, directory)
    expected = expected_of(vector, path)
    exchange.begin("vector", str(vector["id"]))
    request = {"op": "load", "path": str(path), "session": vector.get("session")}
    timeout = exchange.connection.timeout
    if vector.get("generator") is not None:  # 65,536 events to load and answer: seconds, not a hang
        exchange.connection.timeout = max(timeout, LARGE_TIMEOUT)
    try:
        exchange.send(request, expected=expected, breaches=breaches(rules) if not expected.get("ok") else ())
        exchange.flush()
    except DivergenceFound as found:
        return VectorOutcome(str(vector["id"]), "failed", time.perf_counter() - started, found.divergence, rules=rules,
                       level=level)
    finally:
        exchange.connection.timeout = timeout
    if vector.get("generator") is not None:
        path.unlink(missing_ok=True)  # a generated log can be large; the trace names its generator
    return VectorOutcome(str(vector["id"]), "passed", time.perf_counter() - started, rules=rules, level=level)


def repairable(vector: dict[str, Any]) -> bool:
    """Whether a repair changes the vector's log (a torn tail, closers): the vectors the repair case is run on."""
    expected = vector["expected"]
    return "generator" not in vector and bool(expected.get("ok")) and bool(expected.get("torn") or expected.get("closers"))


def repair_vector(exchange: Exchange, vector: dict[str, Any], workdir: Path) -> VectorOutcome | None:
    """SESSION-CONFORMANCE-STORAGE.4 for a committed vector whose log a repair changes (a torn tail, closers): the
    testee's `repair-file` answers what the reference's answers for its own copy, and the repaired log then loads,
    through the reference's gate, with neither left. None for a vector with nothing to repair."""
    if not repairable(vector):
        return None
    started = time.perf_counter()
    case = f"repair:{vector['id']}"
    directory = workdir / case.replace(":", "-")
    shutil.rmtree(directory, ignore_errors=True)
    (directory / "reference").mkdir(parents=True)
    path = vectorfiles.materialize(vector, directory)
    reference = vectorfiles.materialize(vector, directory / "reference")
    answer = vectorfiles.reference_executor().run({"op": "repair-file", "path": str(reference),
                                                   "session": vector.get("session")})
    exchange.begin("vector", case)
    try:
        exchange.send({"op": "repair-file", "path": str(path), "session": vector.get("session")}, expected=answer)
        exchange.flush()
    except DivergenceFound as found:
        return VectorOutcome(case, "failed", time.perf_counter() - started, found.divergence, rules=(REPAIRS_AS_REFERENCE,),
                       level="required")
    after = vectorfiles.expected_answer(path, vector.get("session"))
    why = [] if after.get("ok") and after["torn"] is None and not after["closers"] else \
        [f"file: expected a repaired log that loads with no torn tail and no closers, got {str(after)[:300]}"]
    broken = divergence("vector", case, "repair-file", answer, answer, [*exchange.trace], why) if why else None
    if broken is not None:
        broken.named = REPAIRS_AS_REFERENCE
    return VectorOutcome(case, "passed" if broken is None else "failed", time.perf_counter() - started, broken,
                   rules=(REPAIRS_AS_REFERENCE,), level="required")
