"""Storage vectors against the testee's `load` (SESSION-CONFORMANCE-STORAGE.1): each file copied afresh, its answer
compared with the reference's as any answer is, by the one exchange (families, levels and fair kinds as for SCP)."""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from sessionspec.conformance.storagevectors import vectorfiles
from sessionspec.rules import RULES
from sessionspec.wire.divergence import Divergence
from sessionspec.wire.exchange import DivergenceFound, Exchange
from sessionspec.wire.verdict import Breach

LARGE_TIMEOUT: Final = 120.0
"""The answer timeout, in seconds, for a generated log at a bound (65,536 events, a 64 MiB line)."""


@dataclass
class Checked:
    """One storage case's outcome, with `runner.VectorOutcome`'s fields (the runner makes one of each)."""

    id: str
    status: str
    seconds: float = 0.0
    divergence: Divergence | None = None
    reason: str = ""
    rules: tuple[str, ...] = ()
    level: str | None = None


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


def load_vector(exchange: Exchange, vector: dict[str, Any], workdir: Path) -> Checked:
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
        return Checked(str(vector["id"]), "failed", time.perf_counter() - started, found.divergence, rules=rules,
                       level=level)
    finally:
        exchange.connection.timeout = timeout
    if vector.get("generator") is not None:
        path.unlink(missing_ok=True)  # a generated log can be large; the trace names its generator
    return Checked(str(vector["id"]), "passed", time.perf_counter() - started, rules=rules, level=level)
