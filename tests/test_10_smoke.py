"""`conform --smoke` (spec/10, SESSION-CONFORMANCE-PROTOCOL.1/.2/.9/.15/.16): adapters with one plumbing fault each.

Each adapter below is the live store behind the one executor with one fault of the adapter's layer
planted on its way out: the smoke run must name the protocol rule it breaks, say it is the adapter's,
and exit 1; the store alone passes. The answer schema's small validator is held to jsonschema's
verdicts on every answer the vectors record.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from referencing import Registry, Resource
from sessionspec.cli import main
from sessionspec.conformance import vectors as vector_files
from sessionspec.conformance.schemacheck import SchemaError, problems
from sessionspec.conformance.storagevectors import vectorfiles as storage_vectors
from sessionspec.resources import shipped

PY = sys.executable
SERVE = [PY, "-m", "sessionspec.cli", "serve", "--impl"]

ADAPTER = """
import json, sys
from sessionspec.testing import implementations
from sessionspec.wire.executor import Executor
from sessionspec.wire.serve import answer_line
fault = sys.argv[1]
executor = Executor(implementations.factory("live"), "live")
for line in sys.stdin.buffer:
    line = line.rstrip(b"\\n")
    answer = json.loads(answer_line(executor, line))
    request = json.loads(line) if line.startswith(b"{") else None
    op = request.get("op") if isinstance(request, dict) else None
    if fault == "starter" and op == "hello":
        answer["ops"] = ["hello", "create", "append"]
    if fault == "starter" and op in ("snapshot", "fold", "repair"):
        answer = {"ok": False, "error": {"kind": "unsupported", "message": "not yet", "rule": None}}
    if fault == "undeclared-answered" and op == "hello":
        answer["ops"] = ["hello", "create", "append", "snapshot"]
    if fault == "pretty":
        print(json.dumps(answer, indent=1), flush=True)
        continue
    if fault == "no-profile" and op == "hello":
        del answer["profile"]
    if fault == "storage-string" and op == "hello":
        answer["storage"] = "jsonl"
    if fault == "declares-fold" and op == "hello":
        answer["ops"] = ["hello", "create", "append", "snapshot", "fold"]
    if fault == "declares-fold" and op == "fold":
        answer = {"ok": False, "error": {"kind": "unsupported", "message": "not wired yet"}}
    if fault == "accepts-anything" and op is not None and op.startswith("x-sessionspec-smoke"):
        answer = {"ok": True}
    if fault == "no-event" and op == "append":
        answer.pop("event", None)
    if fault == "bad-kind" and not answer["ok"]:
        answer["error"]["kind"] = "oops"
    if fault == "twice" and op == "snapshot":
        print(json.dumps(answer), flush=True)
    print(json.dumps(answer), flush=True)
"""
FAULTS = {
    "pretty": "SESSION-CONFORMANCE-PROTOCOL.16",
    "no-profile": "SESSION-CONFORMANCE-PROTOCOL.15",
    "storage-string": "SESSION-CONFORMANCE-PROTOCOL.15",
    "declares-fold": "SESSION-CONFORMANCE-PROTOCOL.9",
    "accepts-anything": "SESSION-CONFORMANCE-PROTOCOL.2",
    "no-event": "SESSION-CONFORMANCE-PROTOCOL.16",
    "bad-kind": "SESSION-CONFORMANCE-PROTOCOL.16",
    "twice": "SESSION-CONFORMANCE-PROTOCOL.16",
    "undeclared-answered": "SESSION-CONFORMANCE-PROTOCOL.2",
}
"""Each planted fault and the protocol rule its smoke run must name."""


@pytest.mark.parametrize("impl", ["live", "model"])
def test_our_testees_speak_the_protocol(impl: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["conform", "--smoke", "--", *SERVE, impl]) == 0
    out = capsys.readouterr().out
    assert f"smoke sessionspec-{impl}: speaks SCP v0" in out


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_each_adapter_fault_is_named_by_its_rule_and_is_the_adapters(
        tmp_path: Path, fault: str, capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "adapter.py"
    script.write_text(ADAPTER)
    assert main(["conform", "--smoke", "--timeout", "3", "--", PY, str(script), fault]) == 1
    findings = [line for line in capsys.readouterr().out.splitlines() if line.startswith("SESSION-")]
    assert findings, "a planted fault must be found"
    assert any(line.startswith(FAULTS[fault] + ":") for line in findings), findings
    assert all("the adapter's fault" in line for line in findings)


def test_a_starter_adapter_of_hello_create_and_append_passes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 32's starter testee: it declares hello, create and append, and refuses the rest as unsupported."""
    script = tmp_path / "adapter.py"
    script.write_text(ADAPTER)
    assert main(["conform", "--smoke", "--", PY, str(script), "starter"]) == 0, capsys.readouterr().out
    assert "speaks SCP v0" in capsys.readouterr().out


def test_a_testee_that_cannot_answer_hello_is_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["conform", "--smoke", "--timeout", "2", "--", PY, "-c", "import sys; sys.exit(0)"]) == 2
    assert "could not be run" in capsys.readouterr().err


def _jsonschema_validator() -> jsonschema.Draft202012Validator:
    directory = shipped("schema")
    resources = [(f"https://sessionspec.dev/schema/{path.name}", Resource.from_contents(json.loads(path.read_text())))
                 for path in directory.glob("*.schema.json")]
    registry: Registry[Any] = Registry().with_resources(resources)
    schema = json.loads((directory / "answer.schema.json").read_text())
    return jsonschema.Draft202012Validator(schema, registry=registry)


def test_the_small_validator_agrees_with_jsonschema_on_every_recorded_answer_and_on_broken_ones() -> None:
    validator = _jsonschema_validator()
    answers: list[Any] = []
    for vector in vector_files.load():
        answers.extend(step["expected"] for step in vector["steps"])
        answers.append(vector["final"])
    answers.extend(v["expected"] for v in storage_vectors.load() if "generator" not in v)  # load answers
    hello = {"ok": True, "implementation": "i", "version": "1", "profile": "scp-0"}
    answers.append({**hello, "storage": ["jsonl", "sqlite"]})
    broken: list[Any] = [{"ok": "yes"}, {"ok": False}, {"ok": False, "error": {"kind": "oops", "message": ""}},
                         {"ok": True, "event": {"type": "", "seq": 0, "time": 1, "data": None}},
                         {"ok": True, "nodes": [-1]}, {"ok": True, "event": {"type": "t", "seq": 0, "time": 1, "data": 1,
                                                                            "extra": 1}},
                         {"ok": True, "surface": {"nodes": []}}, [], {"ok": True, "firstLiveSeq": True},
                         {**hello, "storage": ["jsonl", "jsonl"]}, {**hello, "storage": ["xml"]}]
    for answer in [*answers, *broken]:
        assert (not problems(answer, "answer.schema.json")) == validator.is_valid(answer), answer
    assert all(problems(answer, "answer.schema.json") for answer in broken)


def test_a_schema_keyword_the_validator_does_not_read_is_refused_by_name(tmp_path: Path) -> None:
    (tmp_path / "x.schema.json").write_text(json.dumps({"type": "object", "patternProperties": {}}))
    with pytest.raises(SchemaError, match="patternProperties"):
        problems({}, "x.schema.json", directory=tmp_path)
