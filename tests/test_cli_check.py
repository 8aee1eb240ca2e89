"""`sessionspec check`, run as a user runs it: on logs of every backend, clean, broken, torn and unreadable."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from sessionspec import storage
from sessionspec.cli.demo import example_session

FORMATS = ("jsonl", "jsonl.zstd", "sqlite")


def sessionspec(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "sessionspec.cli", *args], capture_output=True, text=True, timeout=60)


def demo_events() -> list[dict[str, Any]]:
    return [event.to_json() for event in example_session("model").events]


def write(path: Path, events: list[dict[str, Any]], header: dict[str, Any] | None = None) -> Path:
    storage.save(path, header or {"version": 0, "id": "demo", "createdAt": 1}, events)
    return path


def write_lines(path: Path, lines: list[Any], header: dict[str, Any] | None = None) -> Path:
    """A JSONL log written by hand: the header line, then each line (a value, or raw text)."""
    head = {"type": "session", "version": 0, "id": "demo", "createdAt": 1, "delegationDepth": 0, **(header or {})}
    body = [json.dumps(head, separators=(",", ":"))]
    body += [line if isinstance(line, str) else json.dumps(line, separators=(",", ":")) for line in lines]
    path.write_text("\n".join(body) + "\n")
    return path


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_clean_log_of_every_backend_checks_clean(tmp_path: Path, fmt: str) -> None:
    path = write(tmp_path / f"demo.{fmt}", demo_events())
    result = sessionspec("check", "--strict", str(path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"{path}: ok: 13 events ({fmt}), surface of 1 node after 2 replacements" in result.stdout
    assert result.stderr == ""  # no progress bar when stderr is not a terminal


def test_json_output_lists_every_file(tmp_path: Path) -> None:
    good = write(tmp_path / "good.jsonl", demo_events())
    events = demo_events()
    events[7]["surfaceOp"] = {"op": "replace", "start": 99, "end": 99}
    bad = write_lines(tmp_path / "bad.jsonl", events)
    result = sessionspec("check", "--format", "json", str(good), str(bad))
    assert result.returncode == 1
    report = json.loads(result.stdout)
    assert [f["file"] for f in report["files"]] == [str(good), str(bad)]
    assert report["files"][0]["findings"] == []
    finding = report["files"][1]["findings"][0]
    assert finding == {"file": str(bad), "line": 9, "seq": 7, "rule": "SESSION-SURFACE-REPLACE.1",
                       "message": finding["message"]}
    assert "start seq 99" in finding["message"]


def test_findings_name_file_line_seq_and_rule(tmp_path: Path) -> None:
    events = demo_events()
    events[7]["data"]["message"]["content"][0]["toolCallId"] = "other"  # the pruning forges another call
    path = write_lines(tmp_path / "forged.jsonl", events)
    result = sessionspec("check", str(path))
    assert result.returncode == 1
    assert f"{path}:9: seq 7 SESSION-MESSAGE-SHAPE.8:" in result.stdout
    # A rejected event never enters the surface, so the compaction that names it is found too.
    assert f"{path}:13: seq 11 SESSION-SURFACE-REPLACE.1:" in result.stdout
    assert f"{path}: 2 findings:" in result.stdout


def test_a_rewrite_that_changes_more_than_content_is_found(tmp_path: Path) -> None:
    events = demo_events()
    events[7]["data"]["message"]["id"] = "r2"
    path = write_lines(tmp_path / "rewrite.jsonl", events)
    result = sessionspec("check", str(path))
    assert result.returncode == 1
    assert "seq 7 SESSION-SURFACE-TOOL-RESULT.3" in result.stdout


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_torn_tail_is_a_finding_and_repair_cuts_it(tmp_path: Path, fmt: str) -> None:
    events = demo_events()
    path = write(tmp_path / f"torn.{fmt}", events[:9])
    if fmt == "jsonl":
        with open(path, "ab") as stream:
            stream.write(b'{"type":"turn/end","seq":9,"ti')
        assert sessionspec("check", str(path)).returncode == 1
        assert "SESSION-TORN-TAIL.1" in sessionspec("check", str(path)).stdout
    shown = sessionspec("repair", str(path))
    assert shown.returncode == 0, shown.stderr
    assert "would append 1 closer after seq 8" in shown.stdout
    assert ("would cut the torn tail from line 11" in shown.stdout) == (fmt == "jsonl")
    before = path.read_bytes()
    assert sessionspec("repair", str(path)).returncode == 0 and path.read_bytes() == before  # showing writes nothing
    written = sessionspec("repair", str(path), "--write")
    assert written.returncode == 0 and "appended 1 closer" in written.stdout
    assert sessionspec("check", "--strict", str(path)).returncode == 0
    again = sessionspec("repair", str(path), "--format", "json")
    assert json.loads(again.stdout)["needsRepair"] is False


def test_repair_lists_the_closers_of_an_interrupted_turn(tmp_path: Path) -> None:
    path = write(tmp_path / "crashed.jsonl", demo_events()[:6])  # the tool call was recorded, its result was not
    result = sessionspec("repair", "--format", "json", str(path))
    plan = json.loads(result.stdout)
    assert [c["type"] for c in plan["closers"]] == ["tool/result", "step/end", "turn/end"]
    assert plan["closers"][0]["data"]["error"]["code"] == "TOOL_OUTCOME_UNKNOWN"


@pytest.mark.parametrize("fmt", FORMATS)
def test_repair_plans_the_same_with_the_live_and_the_reference_implementation(tmp_path: Path, fmt: str) -> None:
    """`--impl live` (the default: seconds for 80,000 events) and `--impl model` (the reference: O(N^2)) agree."""
    path = write(tmp_path / f"crashed.{fmt}", demo_events()[:6])
    plans = {impl: sessionspec("repair", "--format", "json", "--impl", impl, str(path)) for impl in ("live", "model")}
    assert plans["live"].returncode == plans["model"].returncode == 0
    assert plans["live"].stdout == plans["model"].stdout == sessionspec("repair", "--format", "json", str(path)).stdout
    assert json.loads(plans["live"].stdout)["needsRepair"] is True
    assert sessionspec("repair", "--impl", "other", str(path)).returncode == 2


def test_unreadable_paths_exit_2(tmp_path: Path) -> None:
    (tmp_path / "noise.bin").write_bytes(b"\x00\x01 not a log")
    good = write(tmp_path / "good.jsonl", demo_events())
    result = sessionspec("check", str(good), str(tmp_path / "missing.jsonl"), str(tmp_path / "noise.bin"))
    assert result.returncode == 2
    assert "missing.jsonl: unreadable" in result.stderr and "noise.bin: unreadable" in result.stderr
    assert f"{good}: ok" in result.stdout


def test_a_bad_header_is_a_finding(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "cwd.jsonl", demo_events(), header={"cwd": "relative"})
    result = sessionspec("check", str(path))
    assert result.returncode == 1
    assert "SESSION-FORMAT-HEADER.5" in result.stdout


@pytest.mark.parametrize(("header", "rule"), [({"version": 1}, "SESSION-FORMAT-VERSION.1"),
                                              ({"version": -1}, "SESSION-FORMAT-VERSION.2")])
def test_a_log_of_another_format_version_cannot_be_read(tmp_path: Path, header: dict[str, Any], rule: str) -> None:
    """Issue 17: a newer (or older) format is not a log with findings (1) but one this build cannot read (2)."""
    path = write_lines(tmp_path / "v1.jsonl", demo_events(), header=header)
    result = sessionspec("check", "--format", "json", str(path))
    assert result.returncode == 2
    assert rule in json.loads(result.stdout)["files"][0]["unreadable"]


def test_strict_adds_relational_and_provider_findings(tmp_path: Path) -> None:
    events = demo_events()
    # A compaction that shadows the assistant's tool call but leaves its result on the surface.
    events[11]["surfaceOp"] = {"op": "replace", "start": 1, "end": 4}
    events[11]["sourceEventSeqs"] = [1, 4]
    del events[8]  # and the step never ends
    for seq, event in enumerate(events):
        event["seq"] = seq
    events[10]["surfaceOp"] = {"op": "replace", "start": 1, "end": 4}
    path = write_lines(tmp_path / "split.jsonl", events)
    plain = sessionspec("check", str(path))
    assert plain.returncode == 0, plain.stdout
    strict = sessionspec("check", "--strict", str(path))
    assert strict.returncode == 1
    assert "SESSION-RELATIONAL-INVARIANT.5" in strict.stdout
    assert "SESSION-PROVIDER-VALIDITY.3" in strict.stdout
    assert "SESSION-PROVIDER-VALIDITY.2" in strict.stdout


def test_a_non_string_type_is_a_finding_not_a_crash(tmp_path: Path) -> None:
    """SESSION-EVENT-ENVELOPE.2: a `type` that is an object or a list (unhashable) is reported, line by line."""
    path = tmp_path / "bad.jsonl"
    path.write_text('{"type":"session","version":0,"id":"bad","createdAt":1,"delegationDepth":0}\n'
                    '{"type":{"a":1}, "seq":0,"time":1,"data":{}}\n'
                    '{"type":["text-chunks"],"seq":1,"time":1,"data":{}}\n')
    done = sessionspec("check", str(path))
    assert done.returncode == 1, done.stderr
    assert f"{path}:2: seq 0 SESSION-EVENT-ENVELOPE.2" in done.stdout
    assert f"{path}:3: seq 1 SESSION-EVENT-ENVELOPE.2" in done.stdout


def test_more_jobs_report_what_one_job_reports(tmp_path: Path) -> None:
    """`--jobs 2` and `3` (surveyors survey blocks) print exactly what `--jobs 1` prints; 0 and non-numbers are refused."""
    events = demo_events()
    events[7]["data"]["message"]["content"][0]["toolCallId"] = "other"
    path = write_lines(tmp_path / "forged.jsonl", events * 40)  # many seq findings after the first copy
    one = sessionspec("check", "--jobs", "1", "--format", "json", str(path))
    assert one.returncode == 1 and json.loads(one.stdout)["files"][0]["findings"]
    for jobs in ("2", "3"):
        many = sessionspec("check", "--jobs", jobs, "--format", "json", str(path))
        assert (many.returncode, many.stdout) == (one.returncode, one.stdout)
    for bad in ("0", "x"):
        refused = sessionspec("check", "--jobs", bad, str(path))
        assert refused.returncode == 2 and "--jobs: not a number of processes" in refused.stderr
