"""The storage capability of SCP (spec/10, "Storage capability"): load, save, attach and repair-file over the wire."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from referencing import Registry, Resource
from sessionspec import model, storage
from sessionspec.storage.formats import FORMATS
from sessionspec.testing import implementations
from sessionspec.wire import serve as scp_testee
from sessionspec.wire.executor import Executor
from sessionspec.wire.storageops import BACKENDS, STORAGE_OPS

FIXTURES = Path(__file__).parent / "fixtures" / "storage"
SCHEMAS = Path(__file__).resolve().parents[1] / "spec" / "schema"
USER = {"id": "u1", "role": "user", "source": {"kind": "user"}, "content": [{"type": "text", "text": "hi"}]}
IMPLEMENTATIONS = ("model", "live")


def storage_testee(name: str = "live", backends: tuple[str, ...] = ("jsonl", "jsonl.zstd", "sqlite")) -> Executor:
    return Executor(implementations.factory(name), name, storage=backends)


def ask(executor: Executor, request: dict[str, Any]) -> dict[str, Any]:
    answer: dict[str, Any] = json.loads(scp_testee.answer_line(executor, json.dumps(request).encode()))
    return answer


def a_session(executor: Executor) -> None:
    assert ask(executor, {"op": "create", "id": "s1", "seed": None, "header": None})["ok"]
    for request in ({"type": "turn/start", "data": {"turn": 1}},
                    {"type": "user/message", "data": USER, "surfaceOp": "append"},
                    *({"type": "assistant/chunk", "data": {"turn": 1, "step": 1, "chunk": {"type": "text-delta",
                                                                                            "index": 0, "text": t}}}
                      for t in ("a", "b", "c", "d"))):
        assert ask(executor, {"op": "append", **request})["ok"]


def reference_load(path: Path) -> dict[str, Any]:
    result = storage.load(path, create=model.Session.create)
    return {"format": result.format, "header": json.loads(json.dumps(result.header)),
            "events": [json.loads(json.dumps(e.to_json())) for e in result.events],
            "closers": [json.loads(json.dumps(e.to_json())) for e in result.closers],
            "torn": None if result.torn is None else {"line": result.torn.line, "seq": result.torn.seq}}


def test_the_wire_names_the_backends_the_storage_layer_has() -> None:
    assert BACKENDS == FORMATS == ("jsonl", "jsonl.zstd", "sqlite")


def test_hello_declares_storage_only_when_built_with_it() -> None:
    hello = ask(storage_testee(), {"op": "hello"})
    assert hello["storage"] == ["jsonl", "jsonl.zstd", "sqlite"] and set(STORAGE_OPS) <= set(hello["ops"])
    bare = ask(Executor(implementations.factory("live"), "live"), {"op": "hello"})
    assert "storage" not in bare and "load" not in bare["ops"]


def test_serve_declares_every_backend_for_every_implementation() -> None:
    for name in ("model", "live"):
        out = subprocess.run([sys.executable, "-m", "sessionspec.cli", "serve", "--impl", name],
                             input=b'{"op":"hello"}\n', capture_output=True, check=True).stdout
        assert json.loads(out)["storage"] == list(FORMATS)


def test_a_storage_op_of_a_testee_without_storage_is_unsupported(tmp_path: Path) -> None:
    """SESSION-CONFORMANCE-PROTOCOL.12: no backend declared, every storage op unsupported."""
    bare = Executor(implementations.factory("live"), "live")
    a_session(bare)
    for request in ({"op": "load", "path": str(FIXTURES / "torn.jsonl"), "session": None},
                    {"op": "save", "path": str(tmp_path / "s.jsonl"), "backend": "jsonl"},
                    {"op": "repair-file", "path": str(FIXTURES / "torn.jsonl"), "session": None}):
        answer = ask(bare, request)
        assert answer["error"]["kind"] == "unsupported"
        assert answer["error"]["rule"] == "SESSION-CONFORMANCE-PROTOCOL.12"
    assert not (tmp_path / "s.jsonl").exists()


def test_a_backend_not_declared_is_unsupported(tmp_path: Path) -> None:
    """SESSION-CONFORMANCE-PROTOCOL.12: declaring jsonl alone, a SQLite save and a SQLite load are refused."""
    only = storage_testee("live", ("jsonl",))
    a_session(only)
    assert ask(only, {"op": "save", "path": str(tmp_path / "s.sqlite"), "backend": "sqlite"})["error"]["kind"] \
        == "unsupported"
    assert ask(only, {"op": "save", "path": str(tmp_path / "s.x"), "backend": "xml"})["error"]["kind"] == "unsupported"
    assert ask(only, {"op": "load", "path": str(FIXTURES / "v16.sqlite"), "session": None})["error"]["kind"] \
        == "unsupported"
    assert not (tmp_path / "s.sqlite").exists()


@pytest.mark.parametrize("request_", [
    {"op": "load", "path": "s.jsonl"}, {"op": "load", "session": None}, {"op": "load", "path": 5, "session": None},
    {"op": "load", "path": "", "session": None}, {"op": "load", "path": "s.jsonl", "session": 1},
    {"op": "load", "path": "s.jsonl", "session": None, "extra": 1}, {"op": "save", "path": "s.jsonl"},
    {"op": "attach", "backend": "jsonl"}, {"op": "repair-file", "path": "s.jsonl"},
])
def test_a_storage_request_of_another_shape_is_refused(request_: dict[str, Any]) -> None:
    """SESSION-CONFORMANCE-PROTOCOL.11: exactly path and session, or path and backend."""
    executor = storage_testee()
    a_session(executor)
    answer = ask(executor, request_)
    assert answer["error"] == {**answer["error"], "kind": "envelope", "rule": "SESSION-CONFORMANCE-PROTOCOL.11"}


def test_a_path_without_a_log_is_a_header_refusal(tmp_path: Path) -> None:
    """SESSION-CONFORMANCE-PROTOCOL.13: no such file, or bytes of no backend."""
    (tmp_path / "noise").write_bytes(b"\x00\x01 not a log")
    for path in (tmp_path / "missing.jsonl", tmp_path / "noise"):
        for op in ("load", "repair-file"):
            answer = ask(storage_testee(), {"op": op, "path": str(path), "session": None})
            assert answer["error"]["kind"] == "header" and answer["error"]["rule"] == "SESSION-CONFORMANCE-PROTOCOL.13"


def test_a_save_never_overwrites(tmp_path: Path) -> None:
    """SESSION-CONFORMANCE-PROTOCOL.14: the second save to one path is refused, the first file unchanged."""
    executor = storage_testee()
    a_session(executor)
    path = tmp_path / "s.jsonl"
    assert ask(executor, {"op": "save", "path": str(path), "backend": "jsonl"}) == {"ok": True}
    before = path.read_bytes()
    for op in ("save", "attach"):
        answer = ask(executor, {"op": op, "path": str(path), "backend": "jsonl"})
        assert answer["error"]["kind"] == "header" and answer["error"]["rule"] == "SESSION-CONFORMANCE-PROTOCOL.14"
    assert path.read_bytes() == before


@pytest.mark.parametrize("name", IMPLEMENTATIONS)
@pytest.mark.parametrize("fixture", ["torn.jsonl", "packed.jsonl", "frames.jsonl.zstd", "legacy.jsonl", "seq-gap.jsonl",
                                     "newer.jsonl", "v16.sqlite"])
def test_load_answers_what_the_reference_gate_answers(name: str, fixture: str, tmp_path: Path) -> None:
    """SESSION-CONFORMANCE-STORAGE.1: the same events, torn tail and closers, or a refusal of the same kind."""
    path = Path(shutil.copy(FIXTURES / fixture, tmp_path / fixture))
    answer = ask(storage_testee(name), {"op": "load", "path": str(path), "session": None})
    try:
        expected = reference_load(path)
    except storage.Unreadable:
        assert answer["ok"] is False and answer["error"]["kind"] == "version"
        return
    except Exception as error:  # a refusal: its kind
        assert answer["ok"] is False and answer["error"]["kind"] == error.kind.value  # type: ignore[attr-defined]
        return
    torn = answer["torn"]
    assert {**answer, "torn": None if torn is None else {"line": torn["line"], "seq": torn["seq"]}} \
        == {"ok": True, **expected}


@pytest.mark.parametrize("name", IMPLEMENTATIONS)
@pytest.mark.parametrize("backend", FORMATS)
def test_save_writes_what_the_reference_loads(name: str, backend: str, tmp_path: Path) -> None:
    """SESSION-CONFORMANCE-STORAGE.2: the session's header and events, read back by the reference's gate."""
    executor = storage_testee(name)
    a_session(executor)
    path = tmp_path / f"s.{backend}"
    assert ask(executor, {"op": "save", "path": str(path), "backend": backend}) == {"ok": True}
    snapshot = ask(executor, {"op": "snapshot"})
    loaded = reference_load(path)
    assert loaded["format"] == backend and loaded["events"] == snapshot["events"]
    assert loaded["header"]["id"] == "s1" and loaded["header"]["createdAt"] == snapshot["header"]["createdAt"]


@pytest.mark.parametrize("backend", FORMATS)
def test_an_attached_session_makes_each_append_durable_before_answering(backend: str, tmp_path: Path) -> None:
    """SESSION-CONFORMANCE-STORAGE.3 in process: after each acknowledged append the file already holds it."""
    executor = storage_testee()
    assert ask(executor, {"op": "create", "id": "s1", "seed": None, "header": None})["ok"]
    path = tmp_path / f"s.{backend}"
    assert ask(executor, {"op": "attach", "path": str(path), "backend": backend}) == {"ok": True}
    for turn in (1, 2):
        for request in ({"type": "turn/start", "data": {"turn": turn}},
                        {"type": "turn/end", "data": {"turn": turn, "reason": {"kind": "completed"}}}):
            event = ask(executor, {"op": "append", **request})["event"]
            assert reference_load(path)["events"][-1] == event
    assert ask(executor, {"op": "create", "id": "s2", "seed": None, "header": None})["ok"]
    assert ask(executor, {"op": "append", "type": "turn/start", "data": {"turn": 1}})["ok"]
    assert len(reference_load(path)["events"]) == 4  # a create detaches


@pytest.mark.parametrize("name", IMPLEMENTATIONS)
def test_repair_file_commits_the_reference_cut_and_closers(name: str, tmp_path: Path) -> None:
    """SESSION-CONFORMANCE-STORAGE.4: the torn tail and closers a load shows, committed; then neither is left."""
    path = Path(shutil.copy(FIXTURES / "torn.jsonl", tmp_path / "torn.jsonl"))
    before = reference_load(path)
    answer = ask(storage_testee(name), {"op": "repair-file", "path": str(path), "session": None})
    assert answer["ok"] and answer["closers"] == before["closers"] and answer["torn"]["line"] == before["torn"]["line"]
    after = reference_load(path)
    assert after["torn"] is None and after["closers"] == [] and after["events"] == before["events"] + before["closers"]


def test_storage_requests_and_answers_match_the_schemas(tmp_path: Path) -> None:
    resources = [(path.name, Resource.from_contents(json.loads(path.read_text()))) for path in SCHEMAS.glob("*.json")]
    registry: Registry = Registry().with_resources(resources)
    requests = jsonschema.Draft202012Validator(json.loads((SCHEMAS / "request.schema.json").read_text()),
                                               registry=registry)
    answers = jsonschema.Draft202012Validator(json.loads((SCHEMAS / "answer.schema.json").read_text()),
                                              registry=registry)
    executor = storage_testee()
    a_session(executor)
    path = Path(shutil.copy(FIXTURES / "torn.jsonl", tmp_path / "torn.jsonl"))
    sent = [{"op": "hello"}, {"op": "save", "path": str(tmp_path / "s.sqlite"), "backend": "sqlite"},
            {"op": "attach", "path": str(tmp_path / "a.jsonl"), "backend": "jsonl"},
            {"op": "load", "path": str(path), "session": None}, {"op": "repair-file", "path": str(path), "session": None},
            {"op": "load", "path": str(tmp_path / "s.sqlite"), "session": "s1"},
            {"op": "load", "path": str(tmp_path / "missing.jsonl"), "session": None}]
    for request in sent:
        requests.validate(request)
        answers.validate(ask(executor, request))
    requests.validate({"op": "load", "path": "x", "session": None})
    with pytest.raises(jsonschema.ValidationError):
        requests.validate({"op": "save", "path": "x", "backend": "xml"})
