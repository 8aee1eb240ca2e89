"""`conform --list`, `--run` and `--skip` (spec/10, "Selection"): stable ids, globs, no silent empty selection."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from sessionspec.cli import main
from sessionspec.conformance import vectors as vector_files
from sessionspec.conformance.selection import Selection, catalog, listing
from sessionspec.conformance.storagevectors import saved
from sessionspec.conformance.storagevectors import vectorfiles as storage_vectors
from sessionspec.wire.divergence import Divergence
from support import valid_report

PY = sys.executable
SERVE = [PY, "-m", "sessionspec.cli", "serve", "--impl"]
DOUBLE_MARKER = "planted:double-marker"
"""Fails exactly two vectors (a created session's seq differs) and nothing else the vectors test."""
ITS_VECTORS = ("SESSION-CORE-EVENTS.1-accept", "SESSION-APPEND-COMMIT.5-accept")
BACKENDS = ("jsonl", "jsonl.zstd", "sqlite")
STORED = storage_vectors.load()
REPAIRED = {v["id"] for v in STORED if "file" in v and v["expected"]["ok"] and (v["expected"]["torn"] or v["expected"]["closers"])}
"""The storage vectors a repair changes: each has a `repair:ID` case (spec/10, "Storage capability")."""


def test_list_piped_is_one_tab_separated_line_per_id_with_its_level(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["conform", "--list"]) == 0
    rows = [line.split("\t") for line in capsys.readouterr().out.splitlines()]
    assert all(len(row) == 3 for row in rows)
    kinds = {kind for kind, _, _ in rows}
    assert kinds == {"vector", "storage", "rule", "machine"}
    storage = {row[1]: row[2] for row in rows if row[0] == "storage"}
    assert {v["id"] for v in STORED} < set(storage)
    assert {f"repair:{v}" for v in REPAIRED} < set(storage) and REPAIRED
    assert {f"save:{name}:{backend}" for name in saved.names() for backend in BACKENDS} < set(storage)
    assert storage["crash:sqlite"] == "recommended" and storage["save:deep-1000:jsonl"] == "required"
    vectors = {row[1] for row in rows if row[0] == "vector"}
    assert vectors == {json.loads(path.read_text())["id"] for path in vector_files.DEFAULT_DIR.glob("*.json")}
    levels = dict((row[1], row[2]) for row in rows)
    assert levels["SESSION-CONFORMANCE-PROTOCOL.8"] == "recommended"
    assert levels["SESSION-LOSSLESS-TEXT.2"] == "required"
    assert levels["SESSION-MESSAGE-SHAPE.1"] == "required, recommended on append"
    assert levels["machine:append"] == "required" and "optional" in levels["machine:fold"]


def test_list_narrowed_by_a_pattern(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["conform", "--list", "--run", "SESSION-SURFACE-REPLACE.2*"]) == 0
    ids = {line.split("\t")[1] for line in capsys.readouterr().out.splitlines()}
    assert {"SESSION-SURFACE-REPLACE.2", "SESSION-SURFACE-REPLACE.2-reject"} <= ids
    assert "SESSION-SURFACE-REPLACE.1" not in ids


@pytest.mark.parametrize("option", ["--run", "--skip"])
def test_a_pattern_that_matches_nothing_is_exit_2_naming_it(option: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["conform", option, "SESSION-NO-SUCH.*", "--examples", "0", "--", *SERVE, "live"]) == 2
    assert "'SESSION-NO-SUCH.*'" in capsys.readouterr().err
    assert main(["conform", "--list", option, "typo-*"]) == 2
    assert "'typo-*'" in capsys.readouterr().err


def test_skipping_the_vectors_a_testee_fails_passes_and_says_what_it_left_out(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = ["conform", "--examples", "0", "--traces", str(tmp_path / "traces"), "--skip", "SESSION-CONFORMANCE-STORAGE.*"]
    assert main([*base, "--", *SERVE, DOUBLE_MARKER]) == 1  # the storage phase, most of the time, is tested below
    capsys.readouterr()
    report = tmp_path / "report.json"
    skips = [word for vector in ITS_VECTORS for word in ("--skip", vector)]
    assert main([*base, *skips, "--json", str(report), "--", *SERVE, DOUBLE_MARKER]) == 0
    out = capsys.readouterr().out
    assert "left out 2 of 270 vectors" in out.replace(",", "")
    data = valid_report(report)
    assert data["vectors"]["total"] - data["vectors"]["storage"] == 268 and data["vectors"]["failed"] == 0
    assert data["header"]["options"]["selection"]["skip"] == ["SESSION-CONFORMANCE-STORAGE.*", *ITS_VECTORS]
    assert any("2 of 270 vectors" in why for why in data["header"]["options"]["selection"]["leftOut"])


def test_run_by_rule_runs_its_vectors_only_and_fix_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report, known = tmp_path / "report.json", tmp_path / "known.txt"
    known.write_text("")
    argv = ["conform", "--examples", "5", "--run", "SESSION-SURFACE-REPLACE.2", "--json", str(report), "--traces", str(tmp_path / "t")]
    assert main([*argv, "--", *SERVE, "live"]) == 0
    data = valid_report(report)
    ran = {c["name"] for c in data["cases"] if c["suite"] == "vectors"}
    assert "SESSION-SURFACE-REPLACE.2-reject" in ran and "SESSION-SURFACE-REPLACE.1-reject" not in ran
    assert data["machine"]["searched"], "a rule pattern selects the machine's families of that rule"
    assert main([*argv, "--failures", str(known), "--fix", "--", *SERVE, "live"]) == 2
    assert "--fix refused" in capsys.readouterr().err and known.read_text() == ""


def test_a_machine_family_is_kept_when_its_op_and_rule_are_selected() -> None:
    def found(op: str, rule: str) -> Divergence:
        return Divergence("machine", "m", op, rule, "envelope", {}, {}, [])

    chosen = Selection(run=("machine:append",), skip=("SESSION-EVENT-ENVELOPE.*",))
    kept = chosen.divergences([found("append", "SESSION-SURFACE-REPLACE.1"), found("create", "SESSION-SURFACE-REPLACE.1"),
                               found("append", "SESSION-EVENT-ENVELOPE.2")])
    assert [(d.op, d.rule) for d in kept] == [("append", "SESSION-SURFACE-REPLACE.1")]
    assert chosen.left_out and "machine families" in chosen.left_out[0]
    assert Selection(skip=("machine:*",)).machine() is False
    assert Selection(run=("SESSION-LOSSLESS-TEXT.1-reject",)).machine() is False
    assert Selection(run=("SESSION-LOSSLESS-TEXT.*",)).machine() is True


def test_list_on_a_terminal_is_grouped_by_kind() -> None:
    three = [json.loads(p.read_text()) for p in sorted(vector_files.DEFAULT_DIR.glob("*.json"))[:3]]
    lines = listing(catalog(three), tty=True)
    assert lines[0] == "vectors (3):" and any(line.startswith("the machine's op families") for line in lines)


def _storage_cases(tmp_path: Path, *patterns: str) -> tuple[set[str], dict[str, Any]]:
    """The storage phase's cases a run of `live` with `patterns` ran (a run with --examples 0), and its report."""
    report = tmp_path / "storage.json"
    assert main(["conform", "--examples", "0", *patterns, "--json", str(report), "--traces", str(tmp_path / "t"),
                 "--", *SERVE, "live"]) == 0
    data = valid_report(report)
    scp = {json.loads(path.read_text())["id"] for path in vector_files.DEFAULT_DIR.glob("*.json")}
    return {c["name"] for c in data["cases"] if c["suite"] == "vectors" and c["name"] not in scp}, data


def test_storage_cases_are_selected_by_id_and_by_rule(tmp_path: Path) -> None:
    torn = {v["id"] for v in STORED if v["id"].startswith("SESSION-TORN-TAIL.2-")}
    ran, data = _storage_cases(tmp_path, "--run", "SESSION-TORN-TAIL.2-*")
    assert torn and ran == torn | {f"repair:{v}" for v in torn & REPAIRED}, "a vector's repair comes with it"
    assert data["vectors"]["storage"] == data["vectors"]["total"] == len(ran)
    assert any("storage cases" in why for why in data["header"]["options"]["selection"]["leftOut"])
    assert _storage_cases(tmp_path, "--run", "crash:jsonl")[0] == {"crash:jsonl"}
    assert _storage_cases(tmp_path, "--run", "save:*:sqlite")[0] == {f"save:{name}:sqlite" for name in saved.names()}
    repairs, _ = _storage_cases(tmp_path, "--run", "SESSION-CONFORMANCE-STORAGE.4")
    assert repairs == {f"repair:{v}" for v in REPAIRED}


def test_skipping_the_storage_rules_leaves_out_the_whole_phase(tmp_path: Path) -> None:
    ran, data = _storage_cases(tmp_path, "--skip", "SESSION-CONFORMANCE-STORAGE.*")
    assert ran == set() and data["vectors"]["storage"] == 0
    assert data["vectors"]["total"] == len(list(vector_files.DEFAULT_DIR.glob("*.json")))
    assert data["footer"]["partial"] is True
