"""The lane's report: every mutant's result, the scores, and each survivor with its diff and judgement.

A survivor is either judged equivalent (it behaves as the original on every input the spec
defines; `equivalent.toml` says why, matched by file, the changed lines and optionally the
definition), or judged beyond conform (no request of the protocol can tell it from the original, but
an in-process stage can: the Python API alone, a refusal's wording, a fault of the machine the
protocol cannot plant; `beyond_conform.toml` says why, matched the same way), or it is a gap in
the oracle, listed as UNJUDGED until the oracle is strengthened to kill it. The score is killed /
non-equivalent: mutants that are not Python are left out before the run, equivalent ones after it;
conform's figure also leaves out those beyond conform, the whole oracle's counts them. `OUT/report.json` holds every mutant; `OUT/report.md` is for people.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
JUDGEMENTS = HERE / "equivalent.toml"
BEYOND = HERE / "beyond_conform.toml"
CONFORM_STAGES = ("vectors", "conform", "bounds")
"""The stages that are `sessionspec conform` (oracle.CONFORM_STAGES): bounds is the storage target's ci-profile run."""
MACHINE_STAGES = (*CONFORM_STAGES, "machine")
"""Kills by these count in "conform + machine"; a later stage (fastforms) only in the whole oracle's score."""
_KILLED = re.compile(r"^oracle: killed by (\w+) \((timeout)?")


def write_settings(out: Path, settings: dict[str, Any]) -> None:
    (out / "settings.json").write_text(json.dumps(settings, indent=1) + "\n", encoding="utf-8")


def read_settings(out: Path) -> dict[str, Any]:
    settings: dict[str, Any] = json.loads((out / "settings.json").read_text(encoding="utf-8"))
    return settings


def killed_by(output: str) -> str:
    """The stage the oracle's last line names ('conform', 'machine timeout', ...); 'timeout' if cosmic-ray's own fired."""
    if output == "timeout":
        return "timeout"
    for line in reversed(output.splitlines()):
        found = _KILLED.match(line)
        if found:
            return found.group(1) + (" timeout" if found.group(2) else "")
    return "unknown"


def changed_lines(diff: str) -> tuple[str, str]:
    """The removed and the added lines of a mutant's diff, each stripped, joined by newlines."""
    before, after = [], []
    for line in diff.splitlines():
        if line.startswith(("---", "+++")):
            continue
        if line.startswith("-"):
            before.append(line[1:].strip())
        elif line.startswith("+"):
            after.append(line[1:].strip())
    return "\n".join(before), "\n".join(after)


def load_judgements(path: Path = JUDGEMENTS, table: str = "equivalent") -> list[dict[str, str]]:
    if not path.exists():
        return []
    with path.open("rb") as handle:
        entries: list[dict[str, str]] = tomllib.load(handle).get(table, [])
    return entries


def judgement(record: dict[str, Any], judgements: list[dict[str, str]]) -> str | None:
    """The reason a mutant is equivalent, if `equivalent.toml` judges it so.

    Lines are compared stripped, and so are the blank lines around them: a deleted decorator takes
    the blank lines above it along.
    """
    for entry in judgements:
        if (record["file"].endswith(entry["file"]) and entry["before"].strip() == record["before"].strip()
                and entry["after"].strip() == record["after"].strip()
                and entry.get("definition", record["definition"]) == record["definition"]):
            return entry["reason"]
    return None


def record_of(item: Any, result: Any, tree: str, judgements: list[dict[str, str]],
              beyond: list[dict[str, str]] | None = None) -> dict[str, Any]:
    """One mutant's line of the report, from cosmic-ray's work item and result (None: not run yet)."""
    spec = item.mutations[0]
    record: dict[str, Any] = {
        "id": item.job_id, "file": str(Path(spec.module_path).relative_to(tree)), "line": spec.start_pos[0],
        "definition": spec.definition_name, "operator": spec.operator_name, "occurrence": spec.occurrence,
    }
    if result is None:
        record["outcome"] = "pending"
        return record
    record["diff"] = "\n".join(line.replace(f"{tree}/", "") for line in (result.diff or "").splitlines()
                               if not line.startswith("--- mutation"))
    record["before"], record["after"] = changed_lines(result.diff or "")
    if result.test_outcome == "killed":
        record["outcome"], record["killed_by"] = "killed", killed_by(result.output or "")
        record["output"] = (result.output or "").splitlines()[-12:]
    elif result.test_outcome == "survived":
        record["outcome"] = "survived"
    else:
        record["outcome"], record["output"] = "incompetent", (result.output or "").splitlines()[-12:]
    record["equivalent"] = judgement(record, judgements)
    record["beyond"] = None if record["equivalent"] else judgement(record, beyond or [])
    return record


def collect(database: Path, tree: str) -> list[dict[str, Any]]:
    """Every mutant of the session database, judged. (cosmic-ray is imported here only: the rest needs none.)"""
    from cosmic_ray.work_db import WorkDB, use_db

    judgements, beyond = load_judgements(), load_judgements(BEYOND, "beyond")
    with use_db(str(database), WorkDB.Mode.open) as db:
        results = dict(db.results)
        return [record_of(item, results.get(item.job_id), tree, judgements, beyond) for item in sorted(db.work_items, key=lambda item: item.job_id)]


def _stage(record: dict[str, Any]) -> str:
    return str(record["killed_by"]).split()[0]


def figure(done: list[dict[str, Any]], stages: tuple[str, ...] | None) -> tuple[int, int]:
    """(killed by `stages`, non-equivalent) for the oracle cut after `stages` (None: every stage).

    A mutant judged equivalent that only a later stage kills is equivalent for this figure: it is
    one the store answers the same (an `@implies` declaration, which the fastforms stage reads),
    and counting it as conform's miss would let a stage added after conform lower conform's figure.
    """
    killed = [r for r in done if r["outcome"] == "killed" and (stages is None or _stage(r) in stages)]
    equivalent = [r for r in done if (r["equivalent"] or (stages is not None and r.get("beyond")))
                  and not any(r is k for k in killed)]
    return len(killed), len(done) - len(equivalent)


def scores(records: list[dict[str, Any]]) -> dict[str, Any]:
    """killed / non-equivalent: by conform alone, by conform + machine, by the whole oracle; equivalent survivors excluded.

    The stages run in order and the first to fail kills, so each figure counts what its stages
    kill whatever the later ones would have done.
    """
    done = [r for r in records if r["outcome"] in ("killed", "survived")]
    killed = [r for r in done if r["outcome"] == "killed"]
    judged_but_killed = [f"{r['id']} ({r['killed_by']})" for r in killed if r["equivalent"]]
    by_conform, counted_conform = figure(done, CONFORM_STAGES)
    by_machine, counted_machine = figure(done, MACHINE_STAGES)
    _, counted = figure(done, None)
    return {
        "mutants": len(records), "run": len(done), "pending": sum(r["outcome"] == "pending" for r in records),
        "incompetent": sum(r["outcome"] == "incompetent" for r in records), "equivalent": len(done) - counted,
        "non_equivalent": counted, "killed": len(killed),
        "killed_by_conform": by_conform, "non_equivalent_conform": counted_conform,
        "killed_by_conform_and_machine": by_machine, "non_equivalent_machine": counted_machine,
        "unjudged_survivors": sum(r["outcome"] == "survived" and not r["equivalent"] and not r.get("beyond")
                                  for r in done),
        "beyond_conform": sum(r["outcome"] == "survived" and bool(r.get("beyond")) for r in done),
        "score": round(len(killed) / counted, 4) if counted else None,
        "score_conform": round(by_conform / counted_conform, 4) if counted_conform else None,
        "score_machine": round(by_machine / counted_machine, 4) if counted_machine else None,
        "killed_by_stage": dict(Counter(r["killed_by"] for r in killed)),
        "judged_equivalent_but_killed": judged_but_killed,
    }


def write(out: Path, database: Path) -> dict[str, Any]:
    settings = read_settings(out)
    records = collect(database, settings["tree"])
    summary = scores(records)
    (out / "report.json").write_text(json.dumps({"settings": settings, "scores": summary, "mutants": records}, indent=1)
                                     + "\n", encoding="utf-8")
    (out / "report.md").write_text(markdown(settings, summary, records), encoding="utf-8")
    print(headline(settings, summary))
    print(f"report: {out / 'report.md'}")
    return summary


def _percent(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


def headline(settings: dict[str, Any], summary: dict[str, Any]) -> str:
    target, lane = settings["target"], settings["lane"]
    parts = [f"mutation lane {target} ({lane}, seed {settings['seed']}): {summary['run']} run"
             + (f", {summary['pending']} pending" if summary["pending"] else ""),
             f"{summary['equivalent']} equivalent", f"{summary['killed']} killed of {summary['non_equivalent']} non-equivalent"]
    parts.append(f"conform alone {summary['killed_by_conform']}/{summary['non_equivalent_conform']} "
                 f"{_percent(summary['score_conform'])}")
    if lane == "both":
        if target != "storage":  # storage has no machine stage
            parts.append(f"conform + machine {summary['killed_by_conform_and_machine']}/"
                         f"{summary['non_equivalent_machine']} {_percent(summary['score_machine'])}")
        parts.append(f"every stage {summary['killed']}/{summary['non_equivalent']} {_percent(summary['score'])}")
    if summary["beyond_conform"]:
        parts.append(f"{summary['beyond_conform']} beyond conform")
    parts.append(f"{summary['unjudged_survivors']} unjudged survivors")
    return "; ".join(parts)


def markdown(settings: dict[str, Any], summary: dict[str, Any], records: list[dict[str, Any]]) -> str:
    lines = [f"# Mutation lane: {settings['target']}", "", headline(settings, summary), "",
             f"Started {settings['started']}; stage timeouts {settings['timeouts']}; left out before the run: "
             f"{settings['left_out']}.", "", f"Killed by stage: {summary['killed_by_stage']}", ""]
    if summary["judged_equivalent_but_killed"]:
        lines += [f"**Judged equivalent but killed** (a wrong judgement, a flaky oracle, or by fastforms a "
                  f"declaration only the fast forms' tests read): "
                  f"{summary['judged_equivalent_but_killed']}", ""]
    survived = [r for r in records if r["outcome"] == "survived"]
    for title, chosen in (("Unjudged survivors (gaps in the oracle)", [r for r in survived if not r["equivalent"]
                                                                      and not r.get("beyond")]),
                          ("Survivors beyond conform", [r for r in survived if r.get("beyond")]),
                          ("Equivalent survivors", [r for r in survived if r["equivalent"]])):
        lines += [f"## {title}: {len(chosen)}", ""]
        for r in chosen:
            lines += [f"### {r['id']} {r['file']}:{r['line']} ({r['definition']}, {r['operator']})", ""]
            if r["equivalent"]:
                lines += [f"Equivalent: {r['equivalent']}", ""]
            elif r.get("beyond"):
                lines += [f"Beyond conform: {r['beyond']}", ""]
            lines += ["```diff", r["diff"], "```", ""]
    lines += ["## Every mutant", "", "| id | where | operator | outcome |", "|---|---|---|---|"]
    for r in records:
        outcome = r["outcome"] + (f" by {r['killed_by']}" if r.get("killed_by") else "") + (" (equivalent)" if r.get("equivalent") else " (beyond conform)" if r.get("beyond") else "")
        lines.append(f"| {r['id']} | {r['file']}:{r['line']} | {r['operator'].split('/')[1]} | {outcome} |")
    return "\n".join(lines) + "\n"
