"""The vectors: current, deterministic, schema-valid, covering every rule the protocol can reach."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
from referencing import Registry, Resource
from sessionspec.cli import main
from sessionspec.conformance import vectors
from sessionspec.conformance.registry import all_rules
from sessionspec.conformance.storagevectors import vectorfiles
from sessionspec.errors import Kind

SCHEMAS = Path(__file__).resolve().parents[1] / "spec" / "schema"


def test_committed_vectors_are_current_and_cover_every_reachable_rule() -> None:
    assert vectors.check() == []
    assert main(["vectors", "check"]) == 0


def test_a_stale_or_extra_storage_file_is_found(tmp_path: Path) -> None:
    """Here, beside `vectors check`, so one process generates the storage vectors once for both (seconds: the logs at
    the bounds are loaded to state their answers)."""
    directory = tmp_path / "storage"
    directory.mkdir()
    (directory / "stray.jsonl").write_bytes(b"")
    problems = vectorfiles.check(directory)
    assert "storage/stray.jsonl: no case generates it" in problems
    assert any(p.endswith("missing (run `sessionspec vectors generate`)") for p in problems)


def test_generation_is_byte_identical(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    vectors.write(first)
    vectors.write(second)
    names = sorted(p.name for p in first.glob("*.json"))
    assert names == sorted(p.name for p in second.glob("*.json"))
    assert all((first / n).read_bytes() == (second / n).read_bytes() for n in names)


def test_check_fails_on_stale_extra_or_uncovered(tmp_path: Path) -> None:
    vectors.write(tmp_path)
    target = tmp_path / "SESSION-SURFACE-REPLACE.2-reject.json"
    target.write_text(target.read_text().replace("range", "seq"))
    (tmp_path / "hand-written.json").write_text("{}")
    problems = vectors.check(tmp_path)
    assert any("stale" in p for p in problems) and any("hand-written" in p for p in problems)
    assert main(["vectors", "check", "--dir", str(tmp_path)]) == 1
    uncovered = [v for v in vectors.generate_all() if v["rules"] != ["SESSION-SURFACE-REPLACE.1"]]
    assert "SESSION-SURFACE-REPLACE.1 [range] has no rejecting vector" in vectors.coverage_problems(uncovered)


def test_exclusions_are_documented_and_only_for_rules_that_exist() -> None:
    rules = all_rules()
    families = {vectors.family(rule_id) for rule_id in rules}
    assert set(vectors.EXCLUDED_RULES) <= set(rules)
    assert set(vectors.EXCLUDED_FAMILIES) <= families
    reachable = [r for r in rules.values() if r.kind is not Kind.INTERNAL and not vectors.exclusion(r.id)]
    assert any(r.id.startswith("SESSION-CONFORMANCE-PROTOCOL.") for r in reachable)
    spec = (Path(__file__).resolve().parents[1] / "spec" / "10-conformance.md").read_text()
    assert "EXCLUDED_FAMILIES" in spec and "EXCLUDED_RULES" in spec


def test_vectors_match_the_schema() -> None:
    resources = [(path.name, Resource.from_contents(json.loads(path.read_text()))) for path in SCHEMAS.glob("*.json")]
    registry: Registry = Registry().with_resources(resources)
    schema = json.loads((SCHEMAS / "vector.schema.json").read_text())
    validator = jsonschema.Draft202012Validator(schema, registry=registry)
    for vector in vectors.load():
        validator.validate(vector)
    request = jsonschema.Draft202012Validator(json.loads((SCHEMAS / "request.schema.json").read_text()), registry=registry)
    for vector in vectors.load():
        if vector["expect"] == "accept":
            for step in vector["steps"]:
                if "request" in step and step["expected"]["ok"]:
                    request.validate(step["request"])
