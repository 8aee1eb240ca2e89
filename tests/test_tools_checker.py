"""The streaming checker in process: its lean fast path decides exactly what the reference checks decide."""

from __future__ import annotations

import copy
import io
import json
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from sessionspec import storage
from sessionspec.commands.demo import example_session
from sessionspec.tools.checker import Checker, check_path, numbered
from sessionspec.tools.progress import Progress
from sessionspec.tools.sources import fast_parse

HEADER = {"version": 0, "id": "demo", "createdAt": 1}


def demo_events() -> list[dict[str, Any]]:
    return [event.to_json() for event in example_session("model").events]


def findings(events: list[Any], *, fast: bool = True, strict: bool = False) -> list[tuple[Any, ...]]:
    checker = Checker("x", fast=fast, strict=strict)
    checker.header(1, HEADER)
    checker.feed_all(numbered(events))
    return [(f.line, f.seq, f.rule) for f in checker.finish()]


def rules(events: list[Any]) -> list[str]:
    return [rule for _, _, rule in findings(events)]


def test_the_demo_is_clean_on_both_paths() -> None:
    assert findings(demo_events()) == findings(demo_events(), fast=False) == []
    assert findings(demo_events(), strict=True) == []


def test_envelope_and_surface_rules_are_found() -> None:
    events = demo_events()
    events[0]["extra"] = 1
    assert rules(events)[0] == "SESSION-EVENT-ENVELOPE.1"
    events = demo_events()
    events[1]["ignorable"] = True
    assert rules(events)[0] == "SESSION-EVENT-ENVELOPE.7"
    events = demo_events()
    events[3]["surfaceOp"] = "append"
    assert rules(events) == ["SESSION-SURFACE-PROJECTION.1"]
    events = demo_events()
    events[4]["sourceEventSeqs"] = [3, 3]
    assert rules(events)[0] == "SESSION-SURFACE-PROVENANCE.4"
    events = demo_events()
    events[11]["sourceEventSeqs"] = [1, 4]
    assert rules(events) == ["SESSION-SURFACE-PROVENANCE.6"]
    events = demo_events()
    events[11]["surfaceOp"] = {"op": "replace", "start": 7, "end": 1}
    assert rules(events) == ["SESSION-SURFACE-REPLACE.2"]


def test_seq_catalog_and_content_rules_are_found() -> None:
    events = demo_events()
    events[5]["seq"] = 6
    assert rules(events)[0] == "SESSION-STORAGE-SEQ.1"
    events = demo_events()
    events[10]["type"] = "future/thing"
    assert rules(events) == ["SESSION-UNKNOWN-EVENT-GATE.1"]
    events[10]["ignorable"] = True
    assert rules(events) == []
    events = demo_events()
    events[4]["data"]["message"]["source"] = {"kind": "model"}
    assert rules(events)[0] == "SESSION-MESSAGE-SHAPE.5"
    header = {"type": "request/header", "seq": 13, "time": 5, "data": {"reason": "initial", "header": {"config": {}}}}
    assert rules([*demo_events(), header]) == ["SESSION-REQUEST-HEADER.1"]


def test_lossless_text_rules_are_found_in_stored_lines(tmp_path: Path) -> None:
    head = '{"type":"session","version":0,"id":"demo","createdAt":1,"delegationDepth":0}\n'
    lines = [json.dumps(e, separators=(",", ":")) for e in demo_events()]
    duplicate = [*lines]
    duplicate[0] = '{"type":"turn/start","seq":0,"time":1,"time":2,"data":{"turn":1}}'
    path = tmp_path / "duplicate.jsonl"
    path.write_text(head + "\n".join(duplicate) + "\n")
    [finding] = check_path(str(path)).findings
    # A defect with a committed turn/end after it is corruption, not a torn tail.
    assert (finding.line, finding.rule) == (2, "SESSION-LOSSLESS-TEXT.6") and "corruption" in finding.message
    unsafe = [*lines]
    unsafe[12] = unsafe[12].replace('"compactionId"', '"n":9007199254740993,"compactionId"')
    path = tmp_path / "unsafe.jsonl"
    path.write_text(head + "\n".join(unsafe) + "\n")
    [finding] = check_path(str(path)).findings
    assert (finding.line, finding.seq, finding.rule) == (14, 12, "SESSION-TORN-TAIL.3")
    assert "SESSION-LOSSLESS-TEXT.4" in finding.message


def test_fast_parse_refuses_what_only_the_lossless_parser_may_read() -> None:
    assert fast_parse(b'{"a":1}') == {"a": 1}
    for text in (b'{"a":1,"a":2}', b'{"a": 1}', b"-0", b"[-0.0]", b"1E5", b"9007199254740993", b'"\\ud800"', b"{"):
        assert fast_parse(text) is not None and fast_parse(text) is fast_parse(b"{")


def mutations() -> st.SearchStrategy[tuple[int, str, Any]]:
    values = st.one_of(st.none(), st.booleans(), st.integers(-3, 20), st.sampled_from(["append", "", "x", "tool/result"]),
                       st.just({"op": "replace", "start": 6, "end": 6}), st.just([6]), st.just([]), st.just({}))
    keys = st.sampled_from(["type", "seq", "time", "data", "surfaceOp", "sourceEventSeqs", "ignorable", "extra",
                            "data.message", "data.message.id", "data.message.role", "data.message.source",
                            "data.message.content", "data.message.source.callId", "data.message.content.0.toolCallId",
                            "data.message.content.0.content", "data.turn", "surfaceOp.start", "surfaceOp.end",
                            "sourceEventSeqs.0", "data.message.content.0.content.0.text"])
    return st.tuples(st.integers(0, 12), keys, values)


def mutate(events: list[dict[str, Any]], index: int, key: str, value: Any) -> None:
    target: Any = events[index]
    *path, last = key.split(".")
    for part in path:
        if isinstance(target, list):
            target = target[int(part)] if part.isdigit() and int(part) < len(target) else None
        else:
            target = target.get(part) if isinstance(target, dict) else None
        if target is None:
            return
    if isinstance(target, list):
        if last.isdigit() and int(last) < len(target):
            target[int(last)] = value
    elif isinstance(target, dict):
        target[last] = value


@settings(max_examples=300, deadline=None)
@given(st.lists(mutations(), min_size=1, max_size=3), st.booleans())
def test_the_fast_path_finds_exactly_what_the_reference_finds(changes: list[tuple[int, str, Any]], strict: bool) -> None:
    events = demo_events()
    for index, key, value in changes:
        mutate(events, index, key, copy.deepcopy(value))
    assert findings(events, strict=strict) == findings(events, fast=False, strict=strict)


def test_memory_is_bounded_by_the_surface(tmp_path: Path) -> None:
    """Only current nodes are kept: after the compaction, the shadowed nodes' data is gone."""
    checker = Checker("x")
    checker.header(1, HEADER)
    checker.feed_all(numbered(demo_events()))
    assert checker.nodes == [11] and set(checker.info) == {11}


def test_sqlite_and_zstd_reports_count_events(tmp_path: Path) -> None:
    for name in ("a.sqlite", "a.jsonl.zstd"):
        storage.save(tmp_path / name, HEADER, demo_events())
        report = check_path(str(tmp_path / name), strict=True)
        assert (report.events, report.findings, report.nodes) == (13, [], 1)


def test_progress_draws_only_when_enabled() -> None:
    quiet, loud = io.StringIO(), io.StringIO()
    with Progress("check", stream=quiet) as bar:  # a StringIO is not a terminal
        bar(5, 10)
    assert quiet.getvalue() == ""
    with Progress("check", stream=loud, enabled=True) as bar:
        bar(5, 10)
    assert "[###############---------------]  50%" in loud.getvalue() and loud.getvalue().endswith("\x1b[2K")
