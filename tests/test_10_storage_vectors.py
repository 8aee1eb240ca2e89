"""The storage vectors (spec/10, "Storage capability"): generated, current, covering spec/07, small, schema-valid."""

from __future__ import annotations

import json
import zlib
from pathlib import Path

import jsonschema
import pytest
import zstandard
from referencing import Registry, Resource
from sessionspec import live, model
from sessionspec.conformance.storagevectors import vectorfiles
from sessionspec.conformance.storagevectors.cases import storage_cases
from sessionspec.rules import RULES
from sessionspec.storage import storedlog
from sessionspec.wire.executor import Executor
from sessionspec.wire.storageops import BACKENDS

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
    """Large cases are generators: the committed set is well under a few MB, and stored (git's objects, the wheel's
    zip) it is smaller still. One file is 1 MiB of spaces (a header line past a reader's 1 MiB piece), which a default
    run must reach and which compresses to a few KB."""
    paths = list(DIRECTORY.iterdir())
    size = sum(path.stat().st_size for path in paths)
    assert size < 3 << 20, f"{size:,} bytes"
    stored = sum(len(zlib.compress(path.read_bytes())) for path in paths)
    assert stored < 1 << 20, f"{stored:,} bytes compressed"


def test_the_vectors_past_a_readers_shortcuts_are_past_them() -> None:
    """Numbers stated here, not read from the code: a reader reads a line in pieces of 1 MiB, the store's fast form looks
    at a file's last 64 KiB for an open turn, and a small compressed log decodes to at most 256 MiB of plaintext
    (SESSION-STORAGE-RECORD.3). Each vector that passes one is past it, and small."""
    header = (DIRECTORY / "SESSION-STORAGE-RECORD.1-jsonl-long-header.jsonl").read_bytes().split(b"\n")[0]
    assert len(header) > 1 << 20
    log = (DIRECTORY / "SESSION-STORAGE-LOAD.2-jsonl-long-turn.jsonl").read_bytes()
    assert len(log) - log.rindex(b'"type":"turn/start"') > 64 << 10 and len(log) < 100_000
    vectors = {v["id"]: v for v in vectorfiles.load(DIRECTORY)}
    bomb = vectors["SESSION-STORAGE-RECORD.3-zstd-plaintext"]
    assert (DIRECTORY / bomb["file"]).stat().st_size < 16_000
    plain = 0
    with (DIRECTORY / bomb["file"]).open("rb") as stream, \
            zstandard.ZstdDecompressor().stream_reader(stream, read_across_frames=True) as frames:
        while piece := frames.read(16 << 20):
            plain += len(piece)
    assert plain > 256 << 20
    assert bomb["expected"]["error"]["rule"] == "SESSION-STORAGE-RECORD.3"


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


def test_the_live_testee_loads_as_the_store_does_and_the_vectors_as_the_gate(monkeypatch: pytest.MonkeyPatch,
                                                                              tmp_path: Path) -> None:
    """`serve --impl live` answers a JSONL load with the store's own load, its fast form first (what a program using
    the store runs, and which the vectors otherwise never reach); the vectors' answers stay the load gate's own."""
    calls: list[str] = []
    fast = storedlog.load_jsonl
    monkeypatch.setattr(storedlog, "load_jsonl", lambda name, *rest: calls.append(name) or fast(name, *rest))
    vector = {v["id"]: v for v in vectorfiles.load(DIRECTORY)}["SESSION-STORAGE-LOAD.1-jsonl"]
    path = vectorfiles.materialize(vector, tmp_path)
    request = {"op": "load", "path": str(path), "session": None}
    assert Executor(live.Session.create, "live", storage=BACKENDS).run(request)["ok"] is True
    assert calls == [str(path)]
    assert vectorfiles.reference_executor().run(request)["ok"] is True
    assert Executor(model.Session.create, "model", storage=BACKENDS).run(request)["ok"] is True
    assert calls == [str(path)]
