"""Vectors: language-neutral conformance cases generated from the reference model, never written by hand.

Each vector is a JSON file under `spec/vectors/`: an id, the rules it covers, the steps (each a
request, or a raw `line` for inputs that are not JSON objects, with the expected answer) and
the final snapshot. Generation runs every case through the protocol over `model` with the fixed
fake clock, so regeneration is byte-identical; `check` fails when the committed files differ or
when a rule that can reject has no rejecting and accepting vector and no documented exclusion.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Final

from sessionspec.conformance.cases import Case, pair_cases, scenarios
from sessionspec.conformance.misses import misses
from sessionspec.conformance.registry import all_rules
from sessionspec.errors import Kind
from sessionspec.model import Session
from sessionspec.resources import shipped
from sessionspec.wire.breaching import breaches_of
from sessionspec.wire.executor import Executor
from sessionspec.wire.protocol import dumps
from sessionspec.wire.serve import answer_line

FORMAT: Final = "sessionspec-vector/1"
DEFAULT_DIR: Final = shipped("vectors")

EXCLUDED_FAMILIES: Final = {
    "SESSION-RELATIONAL-INVARIANT": "raised by an optional precommit validator, which a testee does not run",
    "SESSION-FORK": "fork is not an SCP v0 op",
    "SESSION-CHUNK-ROWS": "raised only when loading stored chunk rows",
    "SESSION-STORAGE-HEADER": "raised only when loading a stored header",
    "SESSION-STORAGE-SEQ": "raised only when loading a stored log",
    "SESSION-STORAGE-RECORD": "raised only when loading a stored record",
    "SESSION-STORAGE-LAYOUT": "raised only when opening a storage directory",
    "SESSION-FORMAT-VERSION": "raised only when loading stored files",
    "SESSION-UNKNOWN-EVENT-GATE": "the catalog gate runs only when loading stored files",
    "SESSION-SQLITE-SCHEMA": "raised only when opening a SQLite store",
    "SESSION-SQLITE-ROW": "raised only when loading SQLite rows",
    "SESSION-ZSTD-FRAMES": "raised only when loading zstd-compressed logs",
}
"""Rule families out of the protocol's reach: only a persistence load, a validator or another API raises them."""

EXCLUDED_RULES: Final = {
    "SESSION-LOSSLESS-JSON.1": "JSON text only ever parses to the exact JSON types",
    "SESSION-LOSSLESS-JSON.2": "a request line is JSON text: the lossless text reader refuses such a number first "
                               "(SESSION-LOSSLESS-TEXT.4)",
    "SESSION-LOSSLESS-JSON.3": "a request line is JSON text: NaN and 1e400 are refused by SESSION-LOSSLESS-TEXT.3 first",
    "SESSION-LOSSLESS-JSON.4": "a request line is JSON text: -0 in any spelling is refused by SESSION-LOSSLESS-TEXT.5 first",
    "SESSION-LOSSLESS-JSON.5": "JSON text only has string keys",
    "SESSION-LOSSLESS-JSON.6": "JSON text cannot hold a cycle",
    "SESSION-LOSSLESS-JSON.7": "depth is not limited; there is nothing to reject",
    "SESSION-APPEND-COMMIT.1": "the clock is the testee's own",
    "SESSION-CONFORMANCE-PROTOCOL.7": "a vector of a 64 MiB line would be a 64 MiB file; tests/test_10_protocol.py sends one",
    "SESSION-CONFORMANCE-PROTOCOL.9": "held by the runner against a testee's own hello (the reference declares and implements "
                                      "everything); tests/test_10_capabilities.py breaks it",
    "SESSION-APPEND-COMMIT.2": "vetoes come from in-process validators",
    "SESSION-APPEND-COMMIT.4": "reentrancy needs an in-process validator or observer",
    "SESSION-CONFORMANCE-PROTOCOL.11": "a storage op names a file, which a language-neutral SCP vector cannot carry; "
                                      "tests/test_10_storage_protocol.py and the storage phase send them",
    "SESSION-CONFORMANCE-PROTOCOL.12": "answered only by a testee that declares some storage and not another; "
                                       "tests/test_10_storage_protocol.py",
    "SESSION-CONFORMANCE-PROTOCOL.13": "a storage op names a file: the storage vectors (spec/vectors/storage) carry "
                                       "the file that is no log",
    "SESSION-CONFORMANCE-PROTOCOL.14": "a save writes a file; the storage phase's save check sends it",
    "SESSION-LEGACY-UPGRADE.1": "raised only when loading legacy stored files (.6, its writer's side, is reachable)",
    "SESSION-LEGACY-UPGRADE.2": "raised only when loading legacy stored files (.6, its writer's side, is reachable)",
    "SESSION-LEGACY-UPGRADE.3": "raised only when loading legacy stored files (.6, its writer's side, is reachable)",
    "SESSION-LEGACY-UPGRADE.4": "raised only when loading legacy stored files (.6, its writer's side, is reachable)",
    "SESSION-LEGACY-UPGRADE.5": "raised only when loading legacy stored files (.6, its writer's side, is reachable)",
}
"""Single rules out of the protocol's reach, and why (SESSION-LOSSLESS-JSON.1-.5 have rejecting vectors through x-append)."""


def cases() -> list[Case]:
    """Every case, in a fixed order (the pairs, the near misses, the scenarios); ids are unique."""
    return [*pair_cases(), *misses(), *scenarios()]


def family(rule_id: str) -> str:
    return rule_id.rpartition(".")[0]


def exclusion(rule_id: str) -> str | None:
    """Why `rule_id` has no vector, or None when it must have them."""
    return EXCLUDED_RULES.get(rule_id) or EXCLUDED_FAMILIES.get(family(rule_id))


def _request_of(step: Any) -> tuple[dict[str, Any], bytes]:
    if isinstance(step, str):
        return {"line": step}, step.encode("utf-8", "surrogatepass")
    return {"request": step}, dumps(step)


def build(case: Case, oracle: Executor) -> dict[str, Any]:
    """One vector: every step with the reference answer (and, for a rejection, every rule the request breaks), the
    final snapshot (null when there is no session), and the vector's level."""
    steps = []
    for position, step in enumerate(case.steps):
        shown, line = _request_of(step)
        before = oracle.session
        expected = json.loads(answer_line(oracle, line))
        last = position == len(case.steps) - 1
        if not last or not case.rejects:
            if not expected["ok"] and not (case.setup_may_fail and not last):
                raise AssertionError(f"vector {case.id}: step {position} was rejected: {expected['error']['message']}")
        elif expected["ok"] or expected["error"]["rule"] != case.rules[0]:
            raise AssertionError(f"vector {case.id}: expected a rejection by {case.rules[0]}, got {expected}")
        found = breaches_of(line, expected, before if before is oracle.session else None)
        steps.append({**shown, "expected": expected, **({"breaches": [b.to_json() for b in found]} if found else {})})
    final = json.loads(answer_line(oracle, b'{"op":"snapshot"}'))
    level = steps[-1]["breaches"][0]["level"] if case.rejects else "required"
    return {"format": FORMAT, "id": case.id, "summary": case.summary, "rules": list(case.rules), "level": level,
            "expect": "reject" if case.rejects else "accept", "steps": steps, "final": final}


def generate_all() -> list[dict[str, Any]]:
    oracle = Executor(Session.create, "model")
    vectors = [build(case, oracle) for case in cases()]
    ids = [v["id"] for v in vectors]
    assert len(set(ids)) == len(ids), "vector ids are unique"
    return vectors


def render(vector: dict[str, Any]) -> str:
    """The file text: ASCII JSON, two-space indent, keys in generation order, one trailing newline."""
    return json.dumps(vector, indent=2, ensure_ascii=True) + "\n"


def file_name(vector_id: str) -> str:
    return vector_id.replace("/", "_") + ".json"


def write(directory: Path = DEFAULT_DIR) -> list[Path]:
    """`vectors generate`: (re)write every vector file and remove files no case produces."""
    directory.mkdir(parents=True, exist_ok=True)
    vectors = generate_all()
    wanted = {file_name(v["id"]): render(v) for v in vectors}
    for stale in directory.glob("*.json"):
        if stale.name not in wanted:
            stale.unlink()
    paths = []
    for name, text in wanted.items():
        path = directory / name
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
        paths.append(path)
    return paths


def load(directory: Path = DEFAULT_DIR) -> list[dict[str, Any]]:
    """The committed vectors in id order; generated in memory when the directory is absent (an installed package)."""
    if not directory.is_dir():
        return generate_all()
    vectors = [json.loads(path.read_text(encoding="utf-8")) for path in sorted(directory.glob("*.json"))]
    order = {case.id: position for position, case in enumerate(cases())}
    return sorted(vectors, key=lambda v: (order.get(v.get("id"), len(order)), str(v.get("id"))))


def coverage_problems(vectors: Iterable[dict[str, Any]]) -> list[str]:
    """Rules that can reject and have no rejecting or no accepting vector (and no documented exclusion)."""
    rejected: set[str] = set()
    accepted: set[str] = set()
    for vector in vectors:
        (rejected if vector["expect"] == "reject" else accepted).update(vector["rules"])
    problems = []
    for rule in all_rules().values():
        if rule.kind is Kind.INTERNAL or exclusion(rule.id):
            continue
        if rule.id not in rejected:
            problems.append(f"{rule.id} [{rule.kind.value}] has no rejecting vector")
        if rule.id not in accepted:
            problems.append(f"{rule.id} [{rule.kind.value}] has no accepting vector")
    return problems


def check(directory: Path = DEFAULT_DIR) -> list[str]:
    """`vectors check`: what is stale or uncovered; empty when the committed vectors are current."""
    vectors = generate_all()
    wanted = {file_name(v["id"]): render(v) for v in vectors}
    problems = []
    present = {path.name: path for path in directory.glob("*.json")} if directory.is_dir() else {}
    for name, text in wanted.items():
        path = present.get(name)
        if path is None:
            problems.append(f"{name}: missing (run `sessionspec vectors generate`)")
        elif path.read_text(encoding="utf-8") != text:
            problems.append(f"{name}: stale (run `sessionspec vectors generate`)")
    problems.extend(f"{name}: no case generates it" for name in sorted(set(present) - set(wanted)))
    problems.extend(coverage_problems(vectors))
    return problems
