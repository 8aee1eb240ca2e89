"""The streaming checker in process: its lean fast path decides exactly what the reference checks decide."""

from __future__ import annotations

import copy
import json
import tempfile
from pathlib import Path
from typing import Any
from unittest import mock

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sessionspec import storage
from sessionspec.cli.demo import example_session
from sessionspec.errors import SpecViolation
from sessionspec.live import fasttext
from sessionspec.live.fasttext import fast_parse
from sessionspec.logcheck.checker import Checker, numbered
from sessionspec.logcheck.checkfile import check_path
from sessionspec.storage import jsonlread
from sessionspec.storage.chunkrows import pack
from sessionspec.storage.jsonlread import JsonlReader
from sessionspec.testing.builders import (
    assistant_message,
    compaction_summary,
    tool_call,
    tool_call_block,
    tool_result,
    user_message,
    with_change,
)

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
    # The same events stored as JSONL: the block parse and the block fast path against the reference reader.
    head = b'{"type":"session","version":0,"id":"demo","createdAt":1,"delegationDepth":0}\n'
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "log.jsonl"
        path.write_bytes(head + b"".join(orjson.dumps(event) + b"\n" for event in events))
        assert fast_report(path, strict) == reference_report(path, strict)


T0 = 1_700_000_000_000


def stored_log() -> list[dict[str, Any]]:
    """A clean log as the JSONL writer stores it: plain events, every kind of packed row, appends, both replaces."""
    events: list[dict[str, Any]] = []

    def add(kind: str, data: Any, **envelope: Any) -> int:
        events.append({"type": kind, "seq": len(events), "time": T0 + len(events), "data": data, **envelope})
        return len(events) - 1

    add("turn/start", {"turn": 1})
    user = add("user/message", user_message("u1"), surfaceOp="append")
    add("step/start", {"turn": 1, "step": 1})
    add("request/header", {"reason": "initial", "header": {"config": {"provider": "deepseek", "model": "deepseek-chat"}}})
    deltas = [*({"type": "text-delta", "index": 0, "text": t} for t in "abcd"),
              *({"type": "reasoning-delta", "index": 1, "text": t} for t in "xyz"),
              *({"type": "tool-call-delta", "index": 2, "id": "c1", "name": "read_file", "argumentsDelta": t} for t in "{}!"),
              *({"type": "tool-call-delta", "index": 3, "id": "c2", "argumentsDelta": t} for t in "[]?")]
    chunks = [add("assistant/chunk", {"turn": 1, "step": 1, "chunk": delta}) for delta in deltas]
    answer = add("assistant/message", assistant_message("a1", [tool_call_block("c1")]), sourceEventSeqs=chunks,
                 surfaceOp="append")
    call = add("tool/call", tool_call("c1"))
    first = add("tool/result", tool_result("c1", "a long output"), sourceEventSeqs=[call], surfaceOp="append")
    pruned = add("tool/result", tool_result("c1", "[pruned]"), sourceEventSeqs=[first],
                 surfaceOp={"op": "replace", "start": first, "end": first})
    add("step/end", {"turn": 1, "step": 1})
    add("turn/end", {"turn": 1, "reason": {"kind": "completed"}})
    add("compaction/start", {"compactionId": "k1", "turn": None})
    add("user/message", compaction_summary("s1", "sum"),
        sourceEventSeqs=[user, answer, pruned], surfaceOp={"op": "replace", "start": user, "end": pruned})
    add("compaction/end", {"compactionId": "k1", "turn": None})
    add("turn/start", {"turn": 2})
    add("user/message", with_change(user_message("u2"), ["content"], []), surfaceOp="append")
    add("turn/end", {"turn": 2, "reason": {"kind": "completed"}})
    return pack(events)


def reference_report(path: Path, strict: bool) -> tuple[Any, ...]:
    """The exact checker over the storage backend's own reader (lossless parser, no fast path anywhere)."""
    reader = JsonlReader(path)
    checker = Checker(str(path), strict=strict, fast=False)
    checker.header(1, dict(reader.header), reader.header["id"])
    try:
        for line, record in reader.records():
            checker.feed(line, record)
    except SpecViolation as violation:
        checker.report(violation.line, violation.seq, violation.rule, violation.message)
    torn = reader.torn
    if torn is not None:
        checker.report(torn.line, torn.seq, torn.rule, torn.reason)
    found = [(f.line, f.seq, f.rule) for f in checker.finish()]
    return found, checker.next_seq, len(checker.nodes), checker.replace_generation


def fast_report(path: Path, strict: bool, jobs: int = 1) -> tuple[Any, ...]:
    report = check_path(str(path), strict=strict, jobs=jobs)
    return [(f.line, f.seq, f.rule) for f in report.findings], report.events, report.nodes, report.replace_generation


RECORDS = stored_log()
SURFACE = [i for i, r in enumerate(RECORDS) if "surfaceOp" in r]
SOURCED = [i for i, r in enumerate(RECORDS) if "sourceEventSeqs" in r]
ROWS = [i for i, r in enumerate(RECORDS) if "seq0" in r]
ANY = st.integers(0, len(RECORDS) - 1)
VALUES = st.one_of(st.none(), st.booleans(), st.integers(-3, 40), st.sampled_from([2.0, -0.0, 2**53 + 2, 0.5]),
                   st.sampled_from(["append", "", "x", "tool/result", "text-chunks", "tool-call-chunks", "mode/set",
                                    "session/end-seed", "request/header", "turn/start", "c1", "tool-result", "model"]),
                   st.just({"op": "replace", "start": 19, "end": 19}), st.just({}), st.just([]),
                   st.lists(st.one_of(st.integers(-1, 30), st.booleans(), st.just(2.0), st.just("a")), max_size=4))
KINDS = st.sampled_from(["x", "mode/set", "session/end-seed", "request/header", "turn/start", "user/message",
                         "assistant/message", "tool/result", "text-chunks", "reasoning-chunks", "tool-call-chunks", ""])


def stored_mutations() -> st.SearchStrategy[tuple[int, str, str, Any]]:
    """(record, how, key, value): set a value, delete, rename or move a key, or respell the stored line.

    Each family aims at the records its conditions are about: envelopes anywhere, message
    shapes on surface events, provenance on sourced ones, payloads on packed rows.
    """
    envelope = st.tuples(ANY, st.sampled_from(["set", "set", "delete", "move", "rename", "float"]),
                         st.sampled_from(["type", "seq", "time", "data", "surfaceOp", "sourceEventSeqs", "ignorable",
                                          "extra", "seq0", "time0"]), VALUES)
    kinds = st.tuples(ANY, st.just("set"), st.just("type"), KINDS)
    message = st.tuples(st.sampled_from(SURFACE), st.sampled_from(["set", "set", "delete"]),
                        st.sampled_from(["data.message", "data.message.id", "data.message.role", "data.message.source",
                                         "data.message.content", "data.message.source.callId", "data.message.source.kind",
                                         "data.message.source.provider", "data.message.source.model",
                                         "data.message.content.0", "data.message.content.0.type",
                                         "data.message.content.0.toolCallId", "data.message.content.0.content",
                                         "data.id", "data.role", "data.source", "data.source.kind", "data.content",
                                         "surfaceOp", "surfaceOp.op", "surfaceOp.start", "surfaceOp.end", "data.turn"]),
                        VALUES)
    provenance = st.tuples(st.sampled_from(SOURCED), st.sampled_from(["set", "set", "delete"]),
                           st.sampled_from(["sourceEventSeqs", "sourceEventSeqs.0", "sourceEventSeqs.1"]), VALUES)
    rows = st.tuples(st.sampled_from(ROWS), st.sampled_from(["set", "set", "delete", "rename"]),
                     st.sampled_from(["data.texts", "data.texts.1", "data.dt", "data.dt.0", "data.args", "data.args.0",
                                      "data.id", "data.name", "data.turn", "data.step", "data.index", "data", "seq0",
                                      "time0"]), VALUES)
    text = st.tuples(ANY, st.sampled_from(["space", "twice"]), st.just(""), st.none())
    return st.one_of(envelope, kinds, message, provenance, rows, text)


def apply_stored(records: list[Any], lines: list[bytes], change: tuple[int, str, str, Any]) -> None:
    index, how, key, value = change
    record = records[index]
    *path, last = key.split(".")
    holder = record
    for part in path:
        holder = holder.get(part) if isinstance(holder, dict) else None
    if how == "set":
        mutate(records, index, key, copy.deepcopy(value))
    elif how in ("delete", "rename", "move") and isinstance(holder, dict) and last in holder:
        moved = holder.pop(last)
        if how != "delete":
            holder["other" if how == "rename" else last] = moved
    elif how == "float" and type(record.get("seq")) is int:
        record["seq"] = float(record["seq"])
    lines[index] = orjson.dumps(record)
    if how == "space":
        lines[index] = lines[index].replace(b":", b": ", 1)
    elif how == "twice":
        lines[index] = lines[index].replace(b"{", b'{"type":"x",', 1)


@settings(max_examples=300, deadline=None)
@given(st.lists(stored_mutations(), max_size=3), st.booleans(), st.sampled_from([32 << 10, 300, 64]),
       st.sampled_from(["", "torn", "blank"]))
def test_the_jsonl_path_finds_exactly_what_the_reference_finds(changes: list[tuple[int, str, str, Any]], strict: bool,
                                                               block: int, tail: str) -> None:
    """`check_path` on a stored JSONL log (block parse, fast path, lean rows, replaces) against the exact checker.

    The log holds every record shape the fast path takes; the changes break each of its
    conditions (key order and set, bool or float seqs, a gap, a bad time, an unknown or retired
    kind, message shapes, empty, duplicate or future sources, malformed rows, replaces that do
    not apply, non-canonical spellings), and small blocks move the block boundaries.
    """
    check_both(changes, strict, block, tail)


def check_both(changes: list[tuple[int, str, str, Any]], strict: bool = False, block: int = 32 << 10,
               tail: str = "") -> tuple[Any, ...]:
    records = stored_log()
    lines = [orjson.dumps(record) for record in records]
    for change in changes:
        apply_stored(records, lines, change)
    head = b'{"type":"session","version":0,"id":"demo","createdAt":1,"delegationDepth":0}\n'
    text = head + b"\n".join(lines) + b"\n"
    if tail == "torn":
        text = text[:-9]
    elif tail == "blank":
        text += b"\n"
    with tempfile.TemporaryDirectory() as tmp, mock.patch.object(jsonlread, "BLOCK", block):
        path = Path(tmp) / "log.jsonl"
        path.write_bytes(text)
        fast = fast_report(path, strict)
        assert fast == reference_report(path, strict)
        # ... and with a surveyor surveying blocks in a second process (see test_tools_surveyor.py).
        assert fast_report(path, strict, jobs=2) == fast
        return fast


EVERY_CONDITION = [
    # envelope of a log-only event (turn/start at 0, step/end at 12)
    (0, "rename", "data", None), (12, "delete", "time", None), (12, "set", "time", 2**53 + 2), (12, "set", "time", "1"),
    (12, "set", "seq", True), (12, "float", "seq", None), (12, "set", "seq", 13), (12, "set", "type", "x"),
    (12, "set", "type", "mode/set"), (12, "set", "type", "session/end-seed"), (12, "set", "type", ""),
    (12, "set", "ignorable", False), (12, "set", "ignorable", True), (12, "set", "surfaceOp", "append"),
    (12, "move", "type", None), (12, "set", "type", "text-chunks"), (12, "space", "", None), (12, "twice", "", None),
    # user message (1)
    (1, "set", "data.role", "assistant"), (1, "set", "data.id", ""), (1, "set", "data.id", 5),
    (1, "set", "data.source.kind", ""), (1, "set", "data.content", {}), (1, "set", "data.source", []),
    (1, "set", "surfaceOp", "x"), (1, "delete", "surfaceOp", None), (1, "set", "sourceEventSeqs", []),
    (1, "set", "type", "turn/start"), (1, "set", "ignorable", True),
    # assistant message (8)
    (8, "set", "sourceEventSeqs", [4, 4]), (8, "set", "sourceEventSeqs", [-1]), (8, "set", "sourceEventSeqs", [17]),
    (8, "set", "sourceEventSeqs", [6, 5]), (8, "set", "sourceEventSeqs", [5, 6, 5]), (8, "set", "sourceEventSeqs", [5, 17]),
    (8, "set", "sourceEventSeqs", [-1, 5]), (8, "set", "sourceEventSeqs", [5, 2.0]), (8, "set", "sourceEventSeqs", [18, 5]),
    (8, "set", "sourceEventSeqs", [5, -1]), (10, "set", "sourceEventSeqs", [19]), (10, "set", "sourceEventSeqs", [-1]),
    (10, "set", "sourceEventSeqs", [True]), (10, "set", "sourceEventSeqs", [2.0]), (10, "set", "sourceEventSeqs", ["a"]),
    (8, "set", "sourceEventSeqs", [4, 5.0, 6]), (8, "set", "sourceEventSeqs", [4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17]),
    (8, "set", "sourceEventSeqs", [0, True, 2]), (8, "set", "sourceEventSeqs", [1, 2]), (8, "set", "sourceEventSeqs", [2.0, 3]),
    (8, "set", "sourceEventSeqs", [4, 6, 7]),
    (8, "set", "sourceEventSeqs", [99]), (8, "set", "sourceEventSeqs", [True]), (8, "set", "sourceEventSeqs", [2.0]),
    (8, "set", "sourceEventSeqs", []), (8, "set", "sourceEventSeqs", {}), (8, "set", "data.message.source.kind", "user"),
    (8, "set", "data.message.source.model", ""), (8, "set", "data.message.source.provider", 1),
    (8, "set", "data.message.role", "user"), (8, "set", "data.message", []), (8, "delete", "data.message.id", None),
    # tool result (10) and its pruning (11)
    (10, "set", "sourceEventSeqs", []), (10, "set", "data.message.content.0.toolCallId", "x"),
    (10, "set", "data.message.source.kind", "model"), (10, "set", "data.message.source.callId", ""),
    (10, "set", "data.message.content", []), (10, "set", "data.message.content.0.type", "text"),
    (10, "set", "data.message.content.0.content", "s"), (10, "set", "data.message.content.0", "s"),
    (11, "set", "surfaceOp.start", 5), (11, "set", "surfaceOp.op", "x"), (11, "set", "surfaceOp.end", 1),
    (11, "set", "data.turn", 2), (11, "set", "sourceEventSeqs", [18]), (11, "set", "surfaceOp", "append"),
    (11, "set", "surfaceOp", {}), (11, "delete", "sourceEventSeqs", None),
    # compaction (15)
    (15, "set", "surfaceOp.end", 1), (15, "set", "sourceEventSeqs", [1]), (15, "set", "surfaceOp.start", 0),
    # text row (4), reasoning row (5), named tool row (6), tool row (7)
    (4, "set", "data.texts.1", 5), (4, "set", "data.dt", []), (4, "set", "data.dt.0", "1"), (4, "set", "data.dt.0", 2.0),
    (4, "set", "data.turn", "1"), (4, "set", "data.turn", 1.5), (4, "set", "data.extra", 1), (4, "set", "seq0", 5),
    (4, "set", "time0", "x"), (4, "set", "time0", 2**53 - 1), (4, "rename", "data.texts", None), (4, "set", "data.texts", []),
    (4, "set", "data", []), (4, "set", "extra", 1), (4, "float", "seq0", None), (4, "set", "seq0", True),
    (5, "set", "type", "tool-call-chunks"), (5, "set", "data.index", None), (6, "set", "data.name", 5),
    (6, "set", "data.id", 5), (6, "delete", "data.name", None), (6, "set", "data.args.0", 1), (7, "set", "data.name", "n"),
    (7, "set", "type", "text-chunks"), (7, "set", "data.step", True),
]


@pytest.mark.parametrize("change", EVERY_CONDITION, ids=[f"{i}-{how}-{key}-{value!r}" for i, how, key, value in EVERY_CONDITION])
def test_each_fast_condition_agrees_with_the_reference(change: tuple[int, str, str, Any]) -> None:
    """One change per condition of the block parse, the fast path and the lean row check; each agrees with the reference."""
    check_both([change])
    check_both([change], block=64)


def test_the_block_parse_refuses_lines_that_only_parse_together() -> None:
    """`fasttext.parse_block`: a line holding the separator cannot make up for a line that is not a value by itself."""
    mark = fasttext._MARK.decode()
    lines = ['[{"a":1', '2}]', '{"b":1}' + mark + '{"c":2}']
    part = "\n".join(lines).encode()
    text = fasttext._OPEN + part.replace(b"\n", fasttext._MARK) + fasttext._CLOSE
    assert orjson.dumps(orjson.loads(text)) == text  # the wrapped block alone would read as three values
    assert fasttext.parse_block(part) is None
    assert fasttext.parse_block(b'{"a":1}\n{"b":[-0.0]}') is None and fasttext.parse_block(b'{"a":1}\n{"b":2}') == [{"a": 1}, {"b": 2}]
    assert fasttext.parse_block(b'{"a":1}\n{"a":1,"a":2}') is None and fasttext.parse_block(b'{"a":1}\n') is None
    # A line that continues the wrap with a key of its own; and with it, two lines read as one value.
    assert fasttext.parse_block(b'{"a":1}\n1,"b":2') is None
    assert fasttext.parse_block(b'[{"a":1\n2}]\n1,"b":2') is None


def test_the_stored_log_is_clean_and_takes_the_block_path() -> None:
    """The base of the property is clean, and the block path takes all of it but the request header (exact path)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "log.jsonl"
        head = b'{"type":"session","version":0,"id":"demo","createdAt":1,"delegationDepth":0}\n'
        path.write_bytes(head + b"".join(orjson.dumps(r) + b"\n" for r in stored_log()))
        assert reference_report(path, False) == fast_report(path, False) == ([], 29, 2, 2)
        fed: list[Any] = []
        feed = Checker.feed

        def spy(self: Checker, line: int | None, record: Any) -> None:
            fed.append(record["type"])
            feed(self, line, record)

        with mock.patch.object(Checker, "feed", spy):
            check_path(str(path))
        assert fed == ["request/header"]


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


@pytest.mark.parametrize("where", ["inside", "last", "torn"])
def test_a_record_beyond_the_bound_is_refused_at_its_line_as_the_reader_refuses_it(where: str) -> None:
    """SESSION-STORAGE-RECORD.1: the check stops at the over-long line with the storage reader's rule and line."""
    lines = [orjson.dumps(record) for record in stored_log()]
    big = b'{"type":"x","seq":5,"time":1,"data":"' + b"y" * (1 << 17) + b'"}'
    body = [*lines[:5], big, *lines[5:]] if where == "inside" else [*lines, big]
    text = b'{"type":"session","version":0,"id":"demo","createdAt":1,"delegationDepth":0}\n' + b"\n".join(body)
    text += b"" if where == "torn" else b"\n"
    with tempfile.TemporaryDirectory() as tmp, mock.patch.object(jsonlread, "MAX_RECORD_BYTES", 1 << 16):
        path = Path(tmp) / "log.jsonl"
        path.write_bytes(text)
        fast = fast_report(path, False)
        assert fast == reference_report(path, False) == fast_report(path, False, jobs=2)
        assert fast[0][-1] == (body.index(big) + 2, None, "SESSION-STORAGE-RECORD.1")


def test_a_legacy_log_checks_as_it_loads_with_the_same_upgrades() -> None:
    """SESSION-LEGACY-UPGRADE.1-.5: check applies the load gate's upgrades (and counts them) instead of refusing them."""
    path = Path(__file__).parent / "fixtures" / "storage" / "legacy.jsonl"
    report = check_path(str(path))
    loaded = storage.load(path)
    assert report.findings == [] and report.events == len(loaded.events)
    assert report.upgrades == len(loaded.upgrades) > 0
