"""Capabilities (spec/10, "Capabilities"): what a testee does not declare is not applicable, what it declares is owed,
and a starter testee's report names the one thing to build next (issues 32, 35)."""

from __future__ import annotations

import contextlib
import io
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from sessionspec.cli import main
from sessionspec.storage.formats import FORMATS
from sessionspec.wire.capabilities import BACKENDS, CORE_OPS, Capabilities
from sessionspec.wire.compare import differences
from sessionspec.wire.divergence import divergence
from starter import starter
from support import valid_report

PY = sys.executable

Run = tuple[int, dict[str, Any], str]


def conform(tmp_path: Path, testee: list[str], *options: str) -> Run:
    """A short run (the vectors and a few machine examples): its exit code, its --json report, what it printed; its
    JUnit report's not-applicable cases are checked to be skipped with why."""
    report, junit = tmp_path / "report.json", tmp_path / "report.xml"
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = main(["conform", "--examples", "5", "--json", str(report), "--junit", str(junit), "--traces",
                     str(tmp_path / "traces"), *options, "--", *testee])
    data = valid_report(report)
    skipped = [e.get("message", "") for e in ET.parse(junit).iter("skipped")]
    assert sum(message.startswith("not applicable: ") for message in skipped) == data["summary"]["notApplicable"]
    return code, data, out.getvalue()


def _run(factory: pytest.TempPathFactory, ops: str, pad: str = "-") -> Run:
    tmp_path = factory.mktemp("starter")
    return conform(tmp_path, starter(tmp_path, ops, pad))


@pytest.fixture(scope="module", params=["hello,create,append", "-"], ids=["declared", "learned"])
def without_snapshot(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Run:
    return _run(tmp_path_factory, request.param)


@pytest.fixture(scope="module")
def declaring_fold(tmp_path_factory: pytest.TempPathFactory) -> Run:
    """A starter that declares snapshot and fold and implements neither."""
    return _run(tmp_path_factory, "hello,create,append,snapshot,fold")


def test_the_protocols_backends_are_the_storage_packages_formats() -> None:
    assert BACKENDS == FORMATS


def test_a_starter_testee_is_told_to_build_snapshot_first_and_nothing_undeclared_fails(without_snapshot: Run) -> None:
    code, report, out = without_snapshot
    assert code == 1
    assert "next to implement: snapshot, a core op" in out, out
    statuses = {case["status"] for case in report["cases"] if case["suite"] == "vectors"}
    assert "not applicable" in statuses and "passed" not in statuses
    assert report["summary"]["notApplicable"] > 0
    judged = [case for case in report["cases"] if case["suite"] == "vectors" and case["status"] == "skipped"]
    assert judged and all("not judged" in case["message"] for case in judged)
    families = {family["family"] for family in report["families"]}
    # Following a protocol rule (answering unsupported for what it does not implement) is never a family.
    assert not any(name.startswith(("snapshot:", "fold:", "repair:", "x-")) for name in families), families
    assert not any(name.startswith("None:") for name in families)


def test_families_one_unsupported_feature_explains_are_one_decision(declaring_fold: Run) -> None:
    _code, report, out = declaring_fold
    headers = [f for f in report["families"] if f["family"].startswith("create:") and f["family"].endswith(" unsupported")]
    assert len(headers) > 3, "a testee without headers refuses every create with one"
    decisions = next(line for line in out.splitlines() if " in all for " in line)
    total = int(decisions.split()[0].replace(",", ""))
    assert total < len(report["families"]), f"{total} decisions for {len(report['families'])} families"


def test_a_declared_op_answered_unsupported_is_a_divergence_named_after_the_declaration(declaring_fold: Run) -> None:
    _code, report, _ = declaring_fold
    families = {family["family"] for family in report["families"]}
    assert {"fold:SESSION-CONFORMANCE-PROTOCOL.9 unsupported", "snapshot:SESSION-CONFORMANCE-PROTOCOL.9 unsupported"} \
        <= families
    assert not any(name.startswith("repair:") for name in families), "an op not declared is never sent"
    assert report["capabilities"]["ops"] == ["append", "create", "fold", "hello", "snapshot"]


def test_an_answer_carrying_a_key_the_reference_does_not_is_a_divergence(tmp_path: Path) -> None:
    code, report, _ = conform(tmp_path, starter(tmp_path, "hello,create,append,snapshot", "pad"))
    assert code == 1
    assert "create:SESSION-CONFORMANCE-PROTOCOL.10 differs:pad" in {family["family"] for family in report["families"]}
    found = divergence("machine", "m", "create", {"ok": True, "seq": 0}, {"ok": True, "seq": 0, "pad": 1}, [{}],
                       differences("create", {"ok": True, "seq": 0}, {"ok": True, "seq": 0, "pad": 1}))
    assert (found.family, found.level) == ("create:SESSION-CONFORMANCE-PROTOCOL.10 differs:pad", "required")


def test_an_error_answer_is_compared_by_its_kind_alone() -> None:
    want = {"ok": False, "error": {"kind": "envelope", "message": "a", "rule": "SESSION-EVENT-ENVELOPE.1"}}
    got = {"ok": False, "error": {"kind": "envelope", "message": "b", "rule": None, "seq": 3, "index": 0}}
    assert differences("append", want, got) == []
    assert differences("append", want, {**got, "seq": 3}) == ["answer has 'seq', the reference's does not"]


def test_what_a_request_needs_follows_the_declaration() -> None:
    starter_declares = Capabilities.declared({"ok": True, "ops": ["hello", "create", "append"]})
    assert starter_declares.missing_core == ("snapshot",)
    assert starter_declares.needs({"op": "fold", "events": []}) == "fold"
    assert starter_declares.needs({"op": "compact"}) is None, "an op nobody offers is sent: it must be refused"
    assert starter_declares.needs({"op": "append", "type": "t", "data": None, "x-validator": "raise"}) == "x-hooks"
    assert starter_declares.needs({"op": "append", "type": "t", "data": None, "x-validator": "sometimes"}) is None
    assert starter_declares.needs({"op": "x-append", "request": {}}) == "x-inprocess"
    assert starter_declares.needs({"op": "load", "path": "p"}) == "storage"
    assert starter_declares.needs("not json") is None
    legacy = Capabilities.declared({"ok": True})
    assert not legacy.listed and legacy.missing_core == () and legacy.needs({"op": "fold", "events": []}) is None
    sqlite_only = Capabilities.declared({"ok": True, "storage": ["sqlite"]})
    assert sqlite_only.needs({"op": "save", "path": "p", "backend": "jsonl"}) == "storage jsonl"
    assert sqlite_only.needs({"op": "save", "path": "p", "backend": "sqlite"}) is None
    assert set(CORE_OPS) <= Capabilities.everything().ops
