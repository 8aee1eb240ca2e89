"""The storage vectors (spec/10, "Storage capability"): generated, current, covering spec/07, small, schema-valid."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from referencing import Registry, Resource
from sessionspec.conformance.storagevectors import vectorfiles
from sessionspec.conformance.storagevectors.cases import storage_cases
from sessionspec.rules import RULES

ROOT = Path(__file__).resolve().parents[1]
SCHEMAS = ROOT / "spec" / "schema"
DIRECTORY = ROOT / "spec" / "vectors" / "storage"


def validator(name: str) -> jsonschema.Draft202012Validator:
    resources = [(path.name, Resource.from_contents(json.loads(path.read_text()))) for path in SCHEMAS.glob("*.json")]
    registry: Registry = Registry().with_resources(resources)
    return jsonschema.Draft202012Validator(json.loads((SCHEMAS / name).read_text()), registry=registry)


def test_every_storage_vector_matches_its_schema_and_has_its_file() -> None:
    vectors = vectorfiles.load(DIRECTORY)
    assert len(vectors) == len(storage_cases()) > 60
    check = validator("storage-vector.schema.json")
    for vector in vectors:
        check.validate({k: v for k, v in vector.items() if k != "directory"})
        assert ("file" in vector) != ("generator" in vector)
        if "file" in vector:
            assert (DIRECTORY / vector["file"]).is_file()


def test_the_whole_set_stays_small() -> None:
    """Large cases are generators: the committed set is well under a few MB."""
    size = sum(path.stat().st_size for path in DIRECTORY.iterdir())
    assert size < 2 << 20, f"{size:,} bytes"


def test_the_bounds_are_met_at_and_one_past() -> None:
    """The bounds of spec/07, stated here: 64 MiB a record, 65,536 members a row and records a frame, 1,024 a SQLite
    row."""
    vectors = {v["id"]: v for v in vectorfiles.load(DIRECTORY)}
    assert vectors["SESSION-STORAGE-RECORD.1-jsonl-past"]["generator"]["args"] == {"size": 64 * 1024 * 1024 + 1}
    assert vectors["SESSION-CHUNK-ROWS.8-jsonl-at"]["generator"]["args"] == {"members": 65_536}
    assert vectors["SESSION-CHUNK-ROWS.8-jsonl-past"]["generator"]["args"] == {"members": 65_537}
    assert vectors["SESSION-ZSTD-FRAMES.5-at"]["generator"]["args"] == {"records": 65_536}
    assert vectors["SESSION-ZSTD-FRAMES.5-past"]["generator"]["args"] == {"records": 65_537}
    assert vectors["SESSION-CHUNK-ROWS.8-jsonl-at"]["expected"]["ok"] is True
    assert vectors["SESSION-CHUNK-ROWS.8-jsonl-past"]["expected"]["error"]["rule"] == "SESSION-CHUNK-ROWS.8"
    assert vectors["SESSION-CHUNK-ROWS.5-sqlite-at"]["expected"]["ok"] is True
    assert len(vectors["SESSION-CHUNK-ROWS.5-sqlite-at"]["expected"]["events"]) == 3 + 1_024 + 2
    assert vectors["SESSION-CHUNK-ROWS.5-sqlite-past"]["expected"]["error"]["rule"] == "SESSION-CHUNK-ROWS.5"


def test_a_refusing_vector_names_the_rule_the_reference_refuses_with() -> None:
    for vector in vectorfiles.load(DIRECTORY):
        expected = vector["expected"]
        if not expected["ok"]:
            assert expected["error"]["rule"] in vector["rules"], vector["id"]
            assert str(DIRECTORY) not in expected["error"]["message"] and "/tmp" not in expected["error"]["message"]


def test_every_storage_rule_a_file_can_break_has_a_vector() -> None:
    vectors = vectorfiles.load(DIRECTORY)
    assert vectorfiles.coverage_problems(vectors) == []
    without = [v for v in vectors if "SESSION-SQLITE-ROW.3" not in v["rules"]]
    assert vectorfiles.coverage_problems(without) == ["SESSION-SQLITE-ROW.3 (spec/07) has no storage vector"]
    assert set(vectorfiles.EXCLUDED) <= set(RULES)
    assert all(rule.startswith(vectorfiles.CHAPTER_07) for rule in vectorfiles.EXCLUDED)


@pytest.mark.parametrize("case_id", ["SESSION-STORAGE-LOAD.1-sqlite", "SESSION-STORAGE-LOAD.2-zstd",
                                     "SESSION-TORN-TAIL.3-jsonl", "SESSION-SQLITE-ROW.4", "SESSION-ZSTD-FRAMES.4"])
def test_a_vector_regenerates_to_the_committed_bytes(case_id: str, tmp_path: Path) -> None:
    """Byte-identical regeneration (times fixed, SQLite identities fixed), the vector and its file."""
    case = next(c for c in storage_cases() if c.id == case_id)
    for attempt in ("a", "b"):
        directory = tmp_path / attempt
        directory.mkdir()
        vector, path = vectorfiles.build(case, directory)
        assert vectorfiles.render(vector) == (DIRECTORY / f"{case.id}.json").read_text()
        assert path.read_bytes() == (DIRECTORY / case.file_name).read_bytes()


def test_a_vector_file_name_cannot_leave_its_directory(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        vectorfiles.materialize({"id": "x", "backend": "jsonl", "file": "../../etc/passwd", "directory": "."}, tmp_path)


def test_a_stale_or_extra_storage_file_is_found(tmp_path: Path) -> None:
    directory = tmp_path / "storage"
    directory.mkdir()
    (directory / "stray.jsonl").write_bytes(b"")
    problems = vectorfiles.check(directory)
    assert "storage/stray.jsonl: no case generates it" in problems
    assert any(p.endswith("missing (run `sessionspec vectors generate`)") for p in problems)
