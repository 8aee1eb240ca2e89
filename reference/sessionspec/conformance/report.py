"""What `sessionspec conform` tells a person, and what `--json` tells a program (spec/10, "Reports").

The person reads, first, the four numbers and what to implement next; then each family once:
its level and ground, what was sent, what the reference said and why, what the testee said, what
its session answers afterwards, which vectors show it, and the one line that reproduces it. With
`--verbose`, every divergence. Values are shown through `sessionspec.preview`: bounded, never
recursing, whatever a testee sent.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterator, Sequence
from typing import Any, Final

from sessionspec.conformance.decisions import blockers, decisions
from sessionspec.conformance.header import footer, header
from sessionspec.conformance.outcome import EXPECTED, FAILED, NOT_APPLICABLE, Family, Outcome
from sessionspec.conformance.runner import Result, broken
from sessionspec.preview import preview
from sessionspec.rules import RULES
from sessionspec.wire.compare import describe
from sessionspec.wire.divergence import Divergence
from sessionspec.wording import plural

FORMAT: Final = "sessionspec-conform-report/1"
SHOWN_VECTORS: Final = 6
SHOWN_DECISIONS: Final = 3


def summary_lines(result: Result, outcome: Outcome) -> list[str]:
    """The head of the report: the five numbers, the levels, and what to implement next."""
    numbers = outcome.numbers
    testee = str(result.testee.get("implementation", "?"))
    skipped = f"{numbers['skipped']:,} skipped" + (f" ({numbers['notRun']:,} not run)" if numbers["notRun"] else "")
    lines = [f"conform {testee}: {numbers['passed']:,} passed, {numbers['notApplicable']:,} not applicable, {skipped}, "
             f"{plural(numbers['expected'], 'expected failure')}, {plural(numbers['unexpected'], 'unexpected failure')} "
             f"({plural(len(result.vectors), 'vector')}, {plural(result.examples, 'machine example')}, "
             f"{plural(result.requests, 'request')} in {result.seconds:.1f} s)"]
    lines.extend(_capability_lines(result))
    if outcome.rules:
        lines.append("  rules passing: " + ", ".join(
            f"{level} {len(tally.passing):,} of {len(tally.reached):,} reached" for level, tally in outcome.rules.items()))
    for level in ("required", "recommended"):
        families = [f for f in outcome.families if f.level == level]
        if families:
            new = sum(not f.listed for f in families)
            lines.append(f"  {level}: {plural(len(families), 'family')} ({new:,} not listed as known)")
    lines.extend(_next_lines(result, outcome))
    if result.options is not None and result.options.selection.active:
        left = result.options.selection.left_out
        lines.append(f"  selected ({result.options.selection.describe()}): left out "
                     + ("; ".join(left) if left else "nothing"))
    for flaky in result.flaky:
        lines.append(f"  FLAKY [{flaky.divergence.level}] {flaky.family}: showed in {flaky.reproduced} of {flaky.replays} "
                     f"replays (not counted; trace: {flaky.divergence.replay})")
    if result.stopped:
        lines.append(f"  STOPPED: {result.stopped}")
    if result.crash:
        lines.append(f"  THE ORACLE FAILED (this is sessionspec's fault, not the testee's): {result.crash}")
    if result.unchecked:
        lines.append(f"  not compared: the testee's snapshot does not carry {', '.join(result.unchecked)}")
    if result.traces is not None and result.divergences:
        lines.append(f"  traces: {result.traces}")
    return lines


def _capability_lines(result: Result) -> list[str]:
    """What the testee declared, and what was not applicable for want of the rest (spec/10, "Capabilities")."""
    declared = result.capabilities
    if declared is None:
        return []
    lines = [f"  declared: ops {', '.join(sorted(declared.ops))}; extensions {', '.join(sorted(declared.extensions)) or 'none'}; "
             f"storage {', '.join(sorted(declared.storage)) or 'none'}" + ("" if declared.listed else " (no ops listed: SCP v0's six assumed)")]
    needs: dict[str, int] = {}
    for vector in result.vectors:
        if vector.status == NOT_APPLICABLE:
            need = vector.reason.removeprefix("needs ").split(",")[0]
            needs[need] = needs.get(need, 0) + 1
    if needs or result.not_applicable:
        parts = [f"{need} ({plural(count, 'vector')})" for need, count in sorted(needs.items())]
        parts += [f"{need} (the machine's {plural(count, 'request')})" for need, count in sorted(result.not_applicable.items())
                  if need not in needs]
        lines.append("  not applicable, needing what the testee does not declare: " + ", ".join(parts))
    return lines


def _next_lines(result: Result, outcome: Outcome) -> list[str]:
    """What to implement next: a core op the testee lacks first (nothing needing it can be judged), else the largest
    decision (families one `unsupported` feature explains count as one)."""
    ranked = decisions(outcome.families)
    families = plural(sum(not f.listed for f in outcome.families), "family")
    lines = []
    lacking = blockers(result.capabilities)
    if lacking:
        unjudged = sum(v.reason.startswith("not judged") for v in result.vectors)
        lines.append(f"  next to implement: {lacking[0]}, a core op every vector and the machine need "
                     f"({plural(unjudged, 'vector')} not judged without it; spec/10, \"Capabilities\")")
    for number, decision in enumerate(ranked[:SHOWN_DECISIONS]):
        grouped = f", {plural(len(decision.families), 'family')} of {plural(len(decision.rules), 'rule')}" \
            if len(decision.families) > 1 else ""
        lead = "next to implement" if number == 0 and not lines else "then"
        lines.append(f"  {lead}: {decision.name} [{decision.level}] ({plural(decision.vectors, 'vector')}"
                     f"{', and the machine' if decision.machine else ''}{grouped})")
    if ranked:
        lines.append(f"  {plural(len(ranked), 'decision')} in all for {families} (families one unsupported feature "
                     f"explains are one)")
    return lines


def family_block(family: Family, number: int, total: int, command: Sequence[str]) -> list[str]:
    """One family, for a person: the shortest of its divergences, its level and ground, and its reproduction."""
    found = family.shortest
    rule = RULES.get(found.named or found.rule or "")
    lines = [f"FAMILY {number} of {total} [{family.level}] {family.name}"
             + (" (listed as known)" if family.listed else "")]
    if rule is not None and (found.named is not None or not found.expected.get("ok")):
        lines.append(f"  rule:       {rule.id} [{rule.kind.value}] {rule.summary}")
        lines.append(f"  level:      {rule.ground.level.value}: {_cut(rule.ground.why, 300)}")
    elif found.expected.get("ok"):  # the reference accepts: no rule is broken; a rule the testee cites is its own word
        cited = f" (the testee cites {found.rule})" if found.rule else ""
        lines.append(f"  rule:       none: the reference accepts the request{cited}")
    lines.extend(_exchange_lines(found))
    lines.extend(_afterwards(family))
    if family.vectors:
        shown = ", ".join(family.vectors[:SHOWN_VECTORS]) + (", ..." if len(family.vectors) > SHOWN_VECTORS else "")
        lines.append(f"  vectors:    {len(family.vectors)}: {shown}")
    if found.replay:
        lines.append(f"  reproduce:  sessionspec replay {shlex.quote(found.replay)} -- {shlex.join(command)}")
    return lines


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: text.rfind(" ", 0, limit)] + " ..."


def _afterwards(family: Family) -> list[str]:
    """What the testee's session answers after the family's divergence: that it still works, or what fails."""
    followed = family.followed
    if followed is None:
        return []
    after = followed.aftermath
    answered = ", ".join(f"{probe} {answer}" for probe, answer in after.items())
    if not broken(after):
        return [f"  afterwards: the session still works ({answered})"]
    request = followed.trace[-1] if followed.trace else None
    failing = "; ".join(f"{probe} {answer}" for probe, answer in after.items() if answer != "ok")
    return [f"  afterwards: THE SESSION IS BROKEN after {preview(request, 200)}: {failing}"]


def _exchange_lines(found: Divergence) -> list[str]:
    last = found.trace[-1] if found.trace else "(nothing)"
    sent = last[:500] if isinstance(last, str) else preview(last, 500, depth=8, items=12)
    where = f"  (request {len(found.trace)} of the trace)" if len(found.trace) > 1 else ""
    lines = [f"  sent:       {sent}{where}", f"  reference:  {describe(found.expected)}",
             f"  testee:     {describe(found.actual)}"]
    # A verdict that differs is shown by the two lines above; what differs inside an answer is shown here.
    lines.extend(f"  differs:    {why}" for why in found.why[:6] if not why.startswith("expected "))
    return lines


def explain(found: Divergence, command: Sequence[str]) -> str:
    """One divergence for a person (`--verbose`, `replay`): its family and level, the exchange, its reproduction."""
    lines = [f"DIVERGENCE [{found.level}] [{found.family}] ({found.source} {found.id})", *_exchange_lines(found)]
    if found.aftermath:
        lines.append("  afterwards: " + "; ".join(f"{probe} {answer}" for probe, answer in found.aftermath.items()))
    if found.replay:
        lines.append(f"  reproduce:  sessionspec replay {shlex.quote(found.replay)} -- {shlex.join(command)}")
    return "\n".join(lines)


def text(result: Result, outcome: Outcome, command: Sequence[str], *, verbose: bool = False) -> Iterator[str]:
    """The whole report, line by line: families first (those not listed), then the summary at the end."""
    shown = [f for f in outcome.families if verbose or not f.listed]
    for number, family in enumerate(shown, 1):
        yield from family_block(family, number, len(shown), command)
        yield ""
    if verbose:
        for case in outcome.cases:
            if case.status in (FAILED, EXPECTED) and case.divergence is not None:
                yield explain(case.divergence, command)
                yield ""
    for case in outcome.cases:
        if case.suite == "failure list":
            yield f"STALE failure-list entry {case.name}: {case.message}"
    yield from summary_lines(result, outcome)


def to_json(result: Result, outcome: Outcome, command: Sequence[str]) -> dict[str, Any]:
    """The --json report (spec/10, "Reports")."""
    numbers = outcome.numbers
    return {
        "format": FORMAT, "header": header(result, command), "testee": result.testee, "command": list(command), "summary": numbers,
        "vectors": {"passed": result.passed, "failed": result.failed,
                    "skipped": sum(v.status == "skipped" for v in result.vectors),
                    "notApplicable": sum(v.status == NOT_APPLICABLE for v in result.vectors),
                    "notRun": sum(v.not_run for v in result.vectors), "total": len(result.vectors),
                    "storage": sum(v.storage for v in result.vectors)},
        "machine": {"examples": result.examples, "searched": result.searched,
                    "divergences": sum(d.source == "machine" for d in result.divergences)},
        "levels": {level: {"families": sum(f.level == level for f in outcome.families),
                           "notListed": sum(f.level == level and not f.listed for f in outcome.families),
                           "rules": outcome.rules[level].to_json()}
                   for level in ("required", "recommended")},
        "stopped": result.stopped, "crash": result.crash, "unchecked": result.unchecked, "complete": result.complete,
        "signal": result.signal, "notApplicable": dict(sorted(result.not_applicable.items())),
        "capabilities": None if result.capabilities is None else result.capabilities.to_json(),
        "traces": None if result.traces is None else str(result.traces),
        "requests": result.requests, "seconds": round(result.seconds, 3),
        "families": [{"family": f.name, "level": f.level, "listed": f.listed, "vectors": f.vectors,
                      "machine": f.machine, "shortest": f.shortest.to_json(),
                      "afterwards": None if f.followed is None else {"after": f.followed.id, **f.followed.aftermath}}
                     for f in outcome.families],
        "cases": [{"suite": c.suite, "name": c.name, "status": c.status, "seconds": round(c.seconds, 4),
                   "level": c.level, "message": c.message} for c in outcome.cases],
        "divergences": [d.to_json() for d in result.divergences],
        "flaky": [f.to_json() for f in result.flaky],
        "footer": footer(result),
    }
