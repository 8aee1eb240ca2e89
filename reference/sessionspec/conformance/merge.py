"""The parts of a sharded run joined into the report of the whole (`sessionspec merge`; spec/10, "Shards").

A CI's matrix is the distributed engine: job I of N runs `conform --shard I/N --seed S` (the vectors
by index, the machine's rounds by number) and keeps its `--json` report; one last job merges them.
The parts must be of one run: the same runner, spec and vectors (by digest), the same seed and
testee command, shards 1 to N each once; anything else is refused (exit 2), since a report of a
whole made of parts that do not fit would say what no run found.

Every vector and every storage case ran in one part, so its case is that part's; a family found by
several parts is one family (its vectors joined, its machine findings added, its shortest divergence
kept); the rules a level reached are recounted from the cases each part ran and judged (their rules,
from the vector files the header's digests name) and the failing ones joined; the four numbers are
recounted from the cases.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

from sessionspec.conformance import vectors as vector_files
from sessionspec.conformance.storagephase import cases as storage_cases
from sessionspec.conformance.storagevectors import vectorfiles as storage_vectors

MACHINE_SEARCH: Final = "machine search"
RAN: Final = ("passed", "expected failure", "unexpected failure")
"""The statuses of a case that ran and was judged: its rules are reached (as `outcome.tally` counts them)."""
COUNTED: Final = {"passed": "passed", "skipped": "skipped", "notApplicable": "not applicable",
                  "expected": "expected failure", "unexpected": "unexpected failure", "flaky": "flaky"}
"""The summary's numbers, each the count of the cases of a status; `notRun` is the parts' sum (a case's own mark)."""


class MergeError(ValueError):
    """Parts that are not of one sharded run."""


def _key(report: dict[str, Any]) -> tuple[Any, ...]:
    head = report.get("header") or {}
    return (head.get("runner", {}).get("version"), head.get("spec", {}).get("digest"),
            head.get("vectors", {}).get("digest"), (head.get("vectors", {}).get("storage") or {}).get("digest"),
            head.get("seed"), tuple(head.get("testee", {}).get("command", ())))


def check(parts: list[dict[str, Any]], names: list[str]) -> None:
    """Refuse parts of different runs, and shards missing or given twice."""
    first = _key(parts[0])
    for report, name in zip(parts, names, strict=True):
        if _key(report) != first:
            raise MergeError(f"{name}: not a part of the same run as {names[0]} (runner, spec, vectors, seed or testee "
                             "differ)")
    shards = [tuple((p.get("header") or {}).get("options", {}).get("shard") or (1, 1)) for p in parts]
    total = {shard[1] for shard in shards}
    if len(total) != 1 or sorted(shard[0] for shard in shards) != list(range(1, next(iter(total)) + 1)):
        raise MergeError(f"the parts are shards {sorted(shards)}: give each of 1..N exactly once")


def _families(parts: list[dict[str, Any]], order: dict[str, int]) -> list[dict[str, Any]]:
    joined: dict[str, dict[str, Any]] = {}
    for report in parts:
        for family in report["families"]:
            into = joined.get(family["family"])
            if into is None:
                joined[family["family"]] = {**family, "vectors": list(family["vectors"])}
                continue
            into["vectors"] = sorted(set(into["vectors"]) | set(family["vectors"]), key=lambda v: (order.get(v, -1), v))
            into["machine"] = max(into["machine"], family["machine"])  # each part collects a family's first finding
            into["listed"] = into["listed"] or family["listed"]
            if family["level"] == "required":
                into["level"] = "required"
            if len(family["shortest"]["trace"]) < len(into["shortest"]["trace"]):
                into["shortest"] = family["shortest"]
            into["afterwards"] = into["afterwards"] or family["afterwards"]
    return sorted(joined.values(), key=lambda f: (f["listed"], f["level"] != "required", f["family"]))


def _cases(parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Vector cases as each part ran them; machine families once; one machine search (passed when every part's
    passed); every stale entry a part judged (a shard judges only entries of the vectors it ran)."""
    out: list[dict[str, Any]] = []
    seen: set[tuple[str, str]] = set()
    searches = [c for p in parts for c in p["cases"] if c["suite"] == "machine" and c["name"] == MACHINE_SEARCH]
    for case in (c for p in parts for c in p["cases"]):
        if case["suite"] == "machine" and case["name"] == MACHINE_SEARCH:
            continue
        key = (case["suite"], case["name"])
        if key in seen:
            continue
        seen.add(key)
        out.append(case)
    if searches:
        failed = [c for c in searches if c["status"] != "passed"]
        examples = sum(p["machine"]["examples"] for p in parts)
        out.append({**(failed[0] if failed else searches[0]), "seconds": round(sum(c["seconds"] for c in searches), 4),
                    "message": failed[0]["message"] if failed else f"{examples} examples"})
    return out


def covered(directory: Path) -> dict[str, dict[str, Any]]:
    """Each case a vector suite can have, by id, in the order a run runs them, with its level and the rules its outcome
    counts for: the SCP vectors, then the storage phase's cases (its vectors, repairs, saves, crash trials)."""
    out = {str(v["id"]): {"level": v.get("level"), "rules": v.get("rules", ())} for v in vector_files.load(directory)}
    out.update({case.names[0]: {"level": case.level, "rules": case.rules}
                for case in storage_cases(storage_vectors.load(directory / "storage"))})
    return out


def _levels(parts: list[dict[str, Any]], families: list[dict[str, Any]], cases: list[dict[str, Any]],
            by_id: dict[str, dict[str, Any]]) -> dict[str, Any]:
    ran = [by_id[c["name"]] for c in cases if c["suite"] == "vectors" and c["status"] in RAN and c["name"] in by_id]
    out: dict[str, Any] = {}
    for level in ("required", "recommended"):
        failing = sorted({rule for p in parts for rule in p["levels"][level]["rules"]["failing"]})
        reached = {rule for v in ran if v.get("level") == level for rule in v.get("rules", ())} | set(failing)
        out[level] = {"families": sum(f["level"] == level for f in families),
                      "notListed": sum(f["level"] == level and not f["listed"] for f in families),
                      "rules": {"reached": len(reached), "passing": len(reached - set(failing)), "failing": failing}}
    return out


def _added(counts: list[dict[str, int]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for count in counts:
        for name, number in count.items():
            out[name] = out.get(name, 0) + number
    return dict(sorted(out.items()))


def _divergences(parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every vector's divergence (each vector ran in one part), and the machine's once a family: the shortest."""
    machine: dict[str, dict[str, Any]] = {}
    out = []
    for found in (d for p in parts for d in p["divergences"]):
        if found["source"] != "machine":
            out.append(found)
        elif found["family"] not in machine or len(found["trace"]) < len(machine[found["family"]]["trace"]):
            machine[found["family"]] = found
    return out + list(machine.values())


def merge(parts: list[dict[str, Any]], names: list[str]) -> dict[str, Any]:
    """The report of the whole run the `parts` (shards of one run) are of."""
    check(parts, names)
    first = parts[0]
    options = {**first["header"]["options"], "shard": None}
    by_id = covered(Path(options.get("vectors_dir") or vector_files.DEFAULT_DIR))
    order = {name: number for number, name in enumerate(by_id)}
    families, cases = _families(parts, order), _cases(parts)
    stopped = next((p["stopped"] for p in parts if p["stopped"]), None)
    crash = next((p["crash"] for p in parts if p["crash"]), None)
    complete = all(p["footer"]["reason"] is None for p in parts)  # each shard is partial; together they are whole
    return {
        "format": first["format"], "header": {**first["header"], "options": options, "parts": names},
        "testee": first["testee"], "command": first["command"],
        "summary": {**{name: sum(c["status"] == status for c in cases) for name, status in COUNTED.items()},
                    "notRun": sum(p["summary"].get("notRun", 0) for p in parts)},
        "vectors": {key: sum(p["vectors"].get(key, 0) for p in parts) for key in first["vectors"]},
        "machine": {"examples": sum(p["machine"]["examples"] for p in parts),
                    "searched": all(p["machine"]["searched"] for p in parts),
                    "divergences": sum(f["machine"] for f in families)},
        "levels": _levels(parts, families, cases, by_id),
        "stopped": stopped, "crash": crash, "complete": all(p.get("complete", True) or p["footer"]["reason"] is None
                                                            for p in parts),
        "signal": next((p.get("signal") for p in parts if p.get("signal")), None),
        "notApplicable": _added([p.get("notApplicable") or {} for p in parts]),
        "capabilities": first.get("capabilities"),
        "unchecked": sorted({name for p in parts for name in p["unchecked"]}),
        "traces": first["traces"], "requests": sum(p["requests"] for p in parts),
        "seconds": max(p["seconds"] for p in parts),
        "families": families, "cases": cases,
        "divergences": _divergences(parts),
        "flaky": [f for p in parts for f in p.get("flaky", [])],
        "footer": {"complete": complete, "reason": next((p["footer"]["reason"] for p in parts if p["footer"]["reason"]),
                                                        None),
                   "stopped": stopped or crash, "partial": not complete},
    }
