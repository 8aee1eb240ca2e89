"""A run's outcome as four numbers and a list of cases, and its divergences grouped into families.

The protobuf conformance runner's four numbers: **passed**, **skipped** (with why: an optional op
the testee does not implement, a vector the run did not reach), **expected failures** (listed in
the failure list, each with its entry) and **unexpected failures** (new divergences, stale failure
list entries, the oracle's own failure). Every report (the console, `--json`, `--junit`) counts
from the same cases, each with a name that stays the same from run to run: a vector's id, a
family's failure-list line, `machine search`.

A **family** is what a person fixes once (`Divergence.family`); a report shows each once, with
its level, how many vectors and machine findings it has, its shortest trace and its reproduction.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

from sessionspec.conformance.failures import Verdict
from sessionspec.conformance.runner import Result, broken
from sessionspec.wire.capabilities import NOT_APPLICABLE as NOT_APPLICABLE
from sessionspec.wire.divergence import Divergence

PASSED, SKIPPED, EXPECTED, FAILED = "passed", "skipped", "expected failure", "unexpected failure"
FLAKY: Final = "flaky"
"""A family that did not show on every replay (`--verify`): its own count, neither passing nor failing."""
STATUSES: Final = (PASSED, SKIPPED, NOT_APPLICABLE, EXPECTED, FAILED, FLAKY)


@dataclass
class Case:
    suite: str
    """"vectors", "machine" or "failure list"."""
    name: str
    status: str
    seconds: float = 0.0
    message: str = ""
    """Why it was skipped, the failure-list entry of an expected failure, or what failed."""
    level: str | None = None
    divergence: Divergence | None = None
    not_run: bool = False
    """A skipped case the run never reached (the deadline, a signal, a testee declared unusable)."""


@dataclass
class Family:
    """Every divergence of one family, and whether the failure list names it."""

    name: str
    divergences: list[Divergence] = field(default_factory=list)
    listed: bool = False

    @property
    def level(self) -> str:
        return "required" if any(d.level == "required" for d in self.divergences) else "recommended"

    @property
    def vectors(self) -> list[str]:
        return [d.id for d in self.divergences if d.source == "vector"]

    @property
    def machine(self) -> int:
        return sum(d.source == "machine" for d in self.divergences)

    @property
    def followed(self) -> Divergence | None:
        """The divergence whose aftermath the report shows: one that left the session broken, else the first asked."""
        asked = [d for d in self.divergences if d.aftermath]
        return next((d for d in asked if broken(d.aftermath)), asked[0] if asked else None)

    @property
    def shortest(self) -> Divergence:
        """The one to show: the machine's minimized finding if there is one, else the vector with the shortest trace."""
        return min(self.divergences, key=lambda d: (d.source != "machine", len(d.trace), d.id))


@dataclass(frozen=True)
class RuleTally:
    """The rules a run reached at one level, and those a divergence of that level showed broken.

    A rule is counted at the level its vectors test it at (spec/10, "Vectors"): a message shape
    rule is required where a seed is read and recommended where an append is made, so it may be
    counted at both. It is reached at a level when a vector of that level covering it ran (passed
    or failed, not skipped) or a divergence of that level names it (its root cause, else its own
    rule, else the first rule of the vector that diverged); it passes when reached and named by no
    divergence of the level. What the machine checks without a divergence is not counted: a rule is
    never said to pass on examples that were not about it.
    """

    level: str
    reached: frozenset[str]
    failing: frozenset[str]

    @property
    def passing(self) -> frozenset[str]:
        return self.reached - self.failing

    def to_json(self) -> dict[str, Any]:
        return {"reached": len(self.reached), "passing": len(self.passing), "failing": sorted(self.failing)}


def tally(result: Result) -> dict[str, RuleTally]:
    """The rules each level of a run reached and broke (`RuleTally`), from its vectors and its divergences."""
    reached: dict[str, set[str]] = {"required": set(), "recommended": set()}
    failing: dict[str, set[str]] = {"required": set(), "recommended": set()}
    for vector in result.vectors:
        if vector.status in ("passed", "failed") and vector.level in reached:
            reached[vector.level].update(vector.rules)
        found = vector.divergence if vector.status != FLAKY else None
        if found is not None and found.level in failing:
            failing[found.level].add(found.named or found.rule or (vector.rules or ("",))[0])
    for found in result.divergences:
        if found.source != "vector" and found.level in failing and (found.named or found.rule):
            failing[found.level].add(found.named or found.rule or "")
    return {level: RuleTally(level, frozenset(reached[level] | failing[level]), frozenset(failing[level]))
            for level in ("required", "recommended")}


@dataclass
class Outcome:
    cases: list[Case]
    families: list[Family]
    rules: dict[str, RuleTally] = field(default_factory=dict)

    def count(self, status: str) -> int:
        return sum(case.status == status for case in self.cases)

    @property
    def numbers(self) -> dict[str, int]:
        return {"passed": self.count(PASSED), "skipped": self.count(SKIPPED), "notApplicable": self.count(NOT_APPLICABLE),
                "expected": self.count(EXPECTED), "unexpected": self.count(FAILED), "flaky": self.count(FLAKY),
                "notRun": sum(case.not_run for case in self.cases)}


def outcome(result: Result, verdict: Verdict, *, enforce: str = "recommended") -> Outcome:
    """The cases and families of `result`, judged by the failure list's `verdict`. With `enforce="required"` a
    recommended divergence not listed is an expected failure of its level, not an unexpected one."""
    expected = {id(d) for d in verdict.expected}

    def status_of(found: Divergence) -> str:
        if id(found) in expected or (enforce == "required" and found.level != "required"):
            return EXPECTED
        return FAILED

    def message_of(found: Divergence) -> str:
        entry = verdict.entries.get(id(found))
        if entry is not None:
            return f"failure list line {entry.line}: {entry.text()}"
        if enforce == "required" and found.level != "required":
            return f"recommended level, not enforced (--level required): {_message(found)}"
        return _message(found)

    plain = {"passed": PASSED, "skipped": SKIPPED, NOT_APPLICABLE: NOT_APPLICABLE, FLAKY: FLAKY}
    cases = [Case("vectors", v.id, plain.get(v.status) or (status_of(v.divergence) if v.divergence is not None else FAILED),
                  v.seconds, v.reason or (message_of(v.divergence) if v.divergence is not None else ""),
                  v.divergence.level if v.divergence else None, v.divergence, v.not_run)
             for v in result.vectors]
    machine = [d for d in result.divergences if d.source in ("machine", "replay")]
    cases.extend(Case("machine", d.family, status_of(d), 0.0, message_of(d), d.level, d) for d in machine)
    cases.append(_search_case(result))
    cases.extend(Case("machine", f.family, FLAKY, message=f"showed in {f.reproduced} of {f.replays} replays of its trace "
                      f"against a fresh testee: flaky, not counted", level=f.divergence.level, divergence=f.divergence)
                 for f in result.flaky if f.divergence.source != "vector")
    cases.extend(Case("failure list", stale, FAILED, message="a listed divergence now diverges with another answer: update "
                      "the entry" if " CHANGED: " in stale else "a listed divergence no longer shows: remove the entry")
                 for stale in verdict.stale)
    if result.crash is not None:
        cases.append(Case("runner", "the oracle", FAILED, message=f"the oracle failed (not the testee): {result.crash}"))
    return Outcome(cases, group(result.divergences, expected), tally(result))


def _search_case(result: Result) -> Case:
    if result.searched:
        return Case("machine", "machine search", PASSED, result.machine_seconds,
                    f"{result.examples} examples")
    why = result.stopped or ("the machine was not run (--examples 0)" if result.partial else "the machine was not run")
    return Case("machine", "machine search", SKIPPED, result.machine_seconds, why)


def _message(found: Divergence | None) -> str:
    if found is None:
        return ""
    return f"{found.family}: " + "; ".join(found.why)[:600]


def group(divergences: list[Divergence], listed: set[int]) -> list[Family]:
    """The families, unlisted before listed, required before recommended, the largest first."""
    families: dict[str, Family] = {}
    for found in divergences:
        family = families.setdefault(found.family, Family(found.family))
        family.divergences.append(found)
        family.listed = family.listed or id(found) in listed
    return sorted(families.values(), key=lambda f: (f.listed, f.level != "required", -len(f.divergences), f.name))
