"""spec/07-persistence.md: the JSONL, zstd and SQLite backends, the load gate, repair and layout."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sessionspec import model, storage
from sessionspec.catalog import END_SEED
from sessionspec.errors import SpecViolation
from sessionspec.jsonvalue import thaw
from sessionspec.storage import gate, jsonl, jsonlread, sqlite, zstdlog
from sessionspec.storage.chunkrows import decode
from sessionspec.storage.layout import encode_segment, project_key, session_path
from sessionspec.storage.zstdlog import compress
from sessionspec.testing.implementations import SessionFactory
from sessionspec.testing.loops import Loop, agent_loops, build
from support import rejects, seed_rejects

FIXTURES = Path(__file__).parent / "fixtures" / "storage"
SUFFIXES = ["log.jsonl", "log.jsonl.zstd", "log.sqlite"]
HEADER = {"version": 0, "id": "s1", "createdAt": 1_700_000_000_000}
PROPERTY = settings(max_examples=25, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


def fixture(name: str, tmp_path: Path) -> Path:
    target = tmp_path / name
    shutil.copy(FIXTURES / name, target)
    return target


def violation(call: Any) -> SpecViolation:
    with pytest.raises(SpecViolation) as caught:
        call()
    return caught.value


def expanded_lines(path: Path) -> list[Any]:
    lines = path.read_text().splitlines()[1:]
    return [event for line in lines for event in decode(json.loads(line))]


def turn(session: Any, n: int, chunks: int = 4) -> None:
    session.append("turn/start", {"turn": n})
    for k in range(chunks):
        session.append("assistant/chunk", {"turn": n, "step": 1, "chunk": {"type": "text-delta", "index": 0, "text": f"{k}"}})
    session.append("turn/end", {"turn": n, "reason": {"kind": "completed"}})


# --- round trips ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", SUFFIXES)
@PROPERTY
@given(loop=agent_loops(max_turns=2, max_steps=2))
def test_save_then_load_gives_the_same_events_surface_and_messages(tmp_path: Path, name: str, loop: Loop) -> None:
    session = build(loop.requests)
    path = tmp_path / f"{len(os.listdir(tmp_path))}-{name}"
    storage.save(path, session.header, session.events)
    result = storage.load(path)
    assert list(result.events) == list(session.events)
    resumed = result.resume()
    assert resumed.surface == session.surface
    assert resumed.derive_messages() == session.derive_messages()


@PROPERTY
@given(loop=agent_loops(max_turns=2, max_steps=2), packed=st.booleans())
def test_jsonl_to_sqlite_to_jsonl_gives_the_same_events_and_bytes(tmp_path: Path, loop: Loop, packed: bool) -> None:
    session = build(loop.requests)
    base = tmp_path / str(len(os.listdir(tmp_path)))
    base.mkdir()
    storage.save(base / "a.jsonl", session.header, session.events, packed=packed)
    first = storage.load(base / "a.jsonl")
    storage.save(base / "b.sqlite", first.header, first.events)
    second = storage.load(base / "b.sqlite")
    storage.save(base / "c.jsonl", second.header, second.events, packed=packed)
    assert list(storage.load(base / "c.jsonl").events) == list(session.events)
    assert (base / "a.jsonl").read_bytes() == (base / "c.jsonl").read_bytes()


def test_packed_unpacked_and_mixed_files_load_the_same(tmp_path: Path) -> None:
    """SESSION-CHUNK-ROWS.6: packing is on by default; reading always expands."""
    session = build([])
    turn(session, 1, chunks=5)
    storage.save(tmp_path / "p.jsonl", session.header, session.events)
    storage.save(tmp_path / "u.jsonl", session.header, session.events, packed=False)
    log = storage.save(tmp_path / "m.jsonl", session.header, session.events[:3], packed=False)
    log.append(session.events[3:])
    assert '"text-chunks"' in (tmp_path / "p.jsonl").read_text()
    assert '"text-chunks"' not in (tmp_path / "u.jsonl").read_text()
    loaded = [list(storage.load(tmp_path / n).events) for n in ("p.jsonl", "u.jsonl", "m.jsonl")]
    assert loaded[0] == loaded[1] == loaded[2] == list(session.events)


def test_the_packed_fixture_loads_to_its_expanded_events(tmp_path: Path) -> None:
    path = fixture("packed.jsonl", tmp_path)
    result = storage.load(path)
    assert [event.to_json() for event in result.events] == expanded_lines(path)
    assert len(result.events) == 19 and result.torn is None and not result.closers
    assert result.events[9].data["chunk"]["text"] == "😀 \udc00"  # an escaped pair is one character
    # written again, the upstream's bytes come back (rows, key order, escapes)
    storage.save(tmp_path / "again.jsonl", result.header, result.events)
    assert (tmp_path / "again.jsonl").read_text() == path.read_text().replace("\\ud83d\\ude00", "😀")


def test_the_header_line_has_the_upstream_key_order_and_delegation_depth() -> None:
    session = model.Session.create("s1", header={**HEADER, "agentPreset": "x", "cwd": "/w", "origin": "subagent"})
    from sessionspec.storage.records import header_record
    assert list(header_record(session.header)) == ["type", "version", "id", "createdAt", "cwd", "origin",
                                                   "delegationDepth", "agentPreset"]


def test_jsonl_writes_delegation_depth_0_and_sqlite_keeps_it_absent(tmp_path: Path) -> None:
    """SESSION-STORAGE-HEADER.3: the upstream's own round-trip difference, kept byte-compatible."""
    storage.save(tmp_path / "a.jsonl", HEADER, [])
    storage.save(tmp_path / "a.sqlite", HEADER, [])
    assert storage.load(tmp_path / "a.jsonl").header == {**HEADER, "delegationDepth": 0}
    assert storage.load(tmp_path / "a.sqlite").header == HEADER
    (tmp_path / "b.jsonl").write_text(json.dumps({"type": "session", **HEADER}) + "\n")
    assert violation(lambda: storage.load(tmp_path / "b.jsonl")).rule == "SESSION-STORAGE-HEADER.3"


# --- the header gate ------------------------------------------------------------------------------


@pytest.mark.parametrize(("content", "rule"), [
    (b"", "SESSION-STORAGE-HEADER.1"),
    (b'{"type":"session","version":0,"id":"s1","createdAt":1,"delegationDepth":0}', "SESSION-STORAGE-HEADER.1"),
    (b'{"type":"session","vers', "SESSION-STORAGE-HEADER.1"),
    (b'{"type":"session","vers\n', "SESSION-LOSSLESS-TEXT.2"),
    (b'{"type":"turn/start","seq":0,"time":0,"data":{}}\n', "SESSION-STORAGE-HEADER.2"),
    (b'{"type":"session","version":"0","id":"s1","createdAt":1,"delegationDepth":0}\n', "SESSION-STORAGE-HEADER.2"),
    (b'{"type":"session","version":0,"id":"s1","createdAt":1,"delegationDepth":0,"sandboxMode":"x"}\n',
     "SESSION-STORAGE-HEADER.4"),
    (b'{"type":"session","version":2,"id":"s1","createdAt":1,"delegationDepth":0}\n', "SESSION-FORMAT-VERSION.1"),
    (b'{"type":"session","version":-1,"id":"s1","createdAt":1,"delegationDepth":0}\n', "SESSION-FORMAT-VERSION.2"),
    (b'{"type":"session","version":0,"id":"s1","createdAt":-1,"delegationDepth":0}\n', "SESSION-FORMAT-HEADER.4"),
    (b'{"type":"session","version":0,"id":"s1","createdAt":1,"delegationDepth":0,"extra":1}\n', "SESSION-FORMAT-HEADER.11"),
    (b"\x00\x01\xff garbage \xfe\n\x00", "SESSION-LOSSLESS-TEXT.1"),
])
def test_the_header_gate_refuses_with_the_rule_and_line(tmp_path: Path, content: bytes, rule: str) -> None:
    path = tmp_path / "h.jsonl"
    path.write_bytes(content)
    error = violation(lambda: storage.load(path))
    assert error.rule == rule
    assert str(path) in error.message


def test_versions_name_the_direction() -> None:
    newer = violation(lambda: storage.load(FIXTURES / "newer.jsonl"))
    assert newer.kind == "version" and "written by a newer format, upgrade" in newer.message and newer.line == 1


def test_a_log_is_opened_only_as_the_session_it_names(tmp_path: Path) -> None:
    storage.save(tmp_path / "a.jsonl", HEADER, [])
    assert violation(lambda: storage.load(tmp_path / "a.jsonl", session_id="other")).rule == "SESSION-STORAGE-HEADER.5"


# --- envelope, seq, torn tail ----------------------------------------------------------------------


def test_a_seq_gap_followed_by_a_turn_end_is_corruption() -> None:
    error = violation(lambda: storage.load(FIXTURES / "seq-gap.jsonl"))
    assert error.rule == "SESSION-STORAGE-SEQ.1" and error.line == 4 and "SESSION-TORN-TAIL.2" in error.message


def test_a_malformed_row_followed_by_a_turn_end_is_corruption() -> None:
    error = violation(lambda: storage.load(FIXTURES / "malformed-row.jsonl"))
    assert error.rule == "SESSION-CHUNK-ROWS.4" and error.line == 3 and "SESSION-TORN-TAIL.2" in error.message


def test_a_defect_without_a_later_turn_end_starts_a_torn_tail(tmp_path: Path) -> None:
    """SESSION-TORN-TAIL.3"""
    lines = (FIXTURES / "torn.jsonl").read_bytes().split(b"\n")
    path = tmp_path / "d.jsonl"
    path.write_bytes(b"\n".join([*lines[:5], b'{"type":"step/start","seq":4,"time":NaN}', *lines[5:6]]) + b"\n")
    result = storage.load(path)
    assert result.torn is not None and result.torn.rule == "SESSION-TORN-TAIL.3" and result.torn.line == 6
    assert "SESSION-LOSSLESS-TEXT.3" in result.torn.reason
    assert len(result.events) == 4 and [c.type for c in result.closers] == ["turn/end"]


def test_an_invalid_envelope_is_refused_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    path.write_text((FIXTURES / "unknown.jsonl").read_text().replace('"data":{}', '"data":{},"extra":1'))
    error = violation(lambda: storage.load(path))
    assert error.rule == "SESSION-EVENT-ENVELOPE.1" and error.line == 2


def test_seed_validation_runs_over_the_whole_log(tmp_path: Path) -> None:
    session = build([])
    session.append("user/message", {"id": "u", "role": "user", "source": {"kind": "user"}, "content": []}, surface_op="append")
    storage.save(tmp_path / "a.jsonl", session.header, session.events)
    text = (tmp_path / "a.jsonl").read_text().replace('"role":"user"', '"role":"assistant"')
    (tmp_path / "b.jsonl").write_text(text)
    error = violation(lambda: storage.load(tmp_path / "b.jsonl"))
    assert error.rule == "SESSION-MESSAGE-SHAPE.2" and error.line == 2


def test_torn_tail_load_keeps_closers_in_memory_and_repair_commits_them(tmp_path: Path) -> None:
    """SESSION-TORN-TAIL.1, SESSION-STORAGE-LOAD.2"""
    path = fixture("torn.jsonl", tmp_path)
    before = path.read_bytes()
    result = storage.load(path)
    assert result.torn is not None and result.torn.rule == "SESSION-TORN-TAIL.1" and result.torn.line == 7
    assert [event.seq for event in result.events] == [0, 1, 2, 3, 4]
    assert [(c.type, c.seq) for c in result.closers] == [("step/end", 5), ("turn/end", 6)]
    assert path.read_bytes() == before  # load writes nothing
    repaired = storage.repair(path)
    assert repaired.torn is None and not repaired.closers
    assert list(repaired.events) == [*result.events, *result.closers]
    assert storage.repair(path) == repaired  # idempotent
    assert path.read_bytes().startswith(before[: result.torn.offset])


def test_load_never_adds_the_end_seed_marker_and_resuming_does(tmp_path: Path) -> None:
    """SESSION-STORAGE-LOAD.1"""
    session = build([])
    turn(session, 1)
    storage.save(tmp_path / "a.jsonl", session.header, session.events)
    result = storage.load(tmp_path / "a.jsonl")
    assert result.events[-1].type == "turn/end"
    resumed = result.resume()
    assert resumed.events[-1].type == END_SEED and resumed.first_live_seq == len(result.events)


def test_the_stream_yields_line_numbers_and_events() -> None:
    pairs = list(storage.stream(FIXTURES / "packed.jsonl"))
    assert [line for line, _ in pairs][:8] == [2, 3, 4, 5, 5, 5, 6, 6]
    assert [event.seq for _, event in pairs] == list(range(19))


# --- legacy upgrades, unknown types --------------------------------------------------------------


def test_legacy_events_are_upgraded_and_each_upgrade_reported() -> None:
    """SESSION-LEGACY-UPGRADE.1 to SESSION-LEGACY-UPGRADE.5 (each upgrade reported)"""
    result = storage.load(FIXTURES / "legacy.jsonl")
    assert [(u.seq, u.rule) for u in result.upgrades] == [
        (0, "SESSION-LEGACY-UPGRADE.1"), (1, "SESSION-LEGACY-UPGRADE.4"),
        (2, "SESSION-LEGACY-UPGRADE.3"), (3, "SESSION-LEGACY-UPGRADE.2")]
    events = [thaw(event.to_json()) for event in result.events]
    assert events[0]["data"] == {"turn": 1}
    assert events[1]["data"]["id"] == "legacy-message:fx:1" and events[1]["data"]["role"] == "user"
    assert events[2]["type"] == "user/message" and events[2]["data"]["id"] == "legacy-message:fx:2"
    assert events[3]["data"]["reason"] == {"kind": "aborted", "reason": {"kind": "disposed"}}


def legacy_log(tmp_path: Path, *events: dict[str, Any]) -> Path:
    path = tmp_path / "l.jsonl"
    header = json.dumps({"type": "session", "version": 0, "id": "fx", "createdAt": 0, "delegationDepth": 0})
    path.write_text("\n".join([header, *(json.dumps({"seq": i, "time": 0, **e}) for i, e in enumerate(events))]) + "\n")
    return path


def test_legacy_tool_results_and_turn_end_reasons(tmp_path: Path) -> None:
    call = {"type": "tool/result", "surfaceOp": "append", "data": {"turn": 1, "step": 1, "callId": "c1",
                                                                     "content": [{"type": "text", "text": "x"}], "isError": False}}
    rewrite = {**call, "surfaceOp": {"op": "replace", "start": 0, "end": 0}, "sourceEventSeqs": [0]}
    error_end = {"type": "turn/end", "data": {"turn": 1, "reason": {"kind": "error", "step": 1, "message": "boom"}}}
    result = storage.load(legacy_log(tmp_path, call, rewrite, error_end))
    first, second, third = (thaw(e.data) for e in result.events)
    assert first["message"]["id"] == second["message"]["id"] == "legacy-message:fx:0"
    assert first["message"]["content"][0] == {"type": "tool-result", "toolCallId": "c1",
                                              "content": [{"type": "text", "text": "x"}], "isError": False}
    assert third["reason"] == {"kind": "error", "error": {"message": "boom", "code": "UNKNOWN"}}


@pytest.mark.parametrize(("event", "rule"), [
    ({"type": "turn/start", "data": {"turn": 0, "trigger": {"kind": "user"}}}, "SESSION-LEGACY-UPGRADE.1"),
    ({"type": "turn/end", "data": {"turn": 1, "reason": {"kind": "completed", "extra": 1}}}, "SESSION-LEGACY-UPGRADE.2"),
    ({"type": "steering/message", "data": {"turn": 1}}, "SESSION-LEGACY-UPGRADE.3"),
    ({"type": "request/header-delta", "data": {}}, "SESSION-CORE-EVENTS.2"),
])
def test_malformed_legacy_shapes_are_refused(tmp_path: Path, event: dict[str, Any], rule: str) -> None:
    error = violation(lambda: storage.load(legacy_log(tmp_path, event)))
    assert error.rule == rule and error.line == 2


LEGACY_SHAPES = [
    ("turn/start", {"turn": 1, "trigger": {"kind": "user"}}),   # .1 would rewrite
    ("turn/start", {"turn": 0, "trigger": {"kind": "user"}}),   # .1 would refuse
    ("turn/end", {"turn": 0, "reason": {}}),                    # .2 would refuse (found by HypoFuzz)
    ("turn/end", {"turn": 1, "reason": {"kind": "completed", "extra": 1}}),
    ("turn/end", {"turn": 1, "reason": {"kind": "disposed"}}),  # .2 would rewrite
    ("turn/end", {"turn": 1, "reason": {"kind": "aborted"}}),
    ("turn/end", {"turn": 1, "reason": {"kind": "error", "message": "boom"}}),
    ("steering/message", {"turn": 1}),                          # .3 would refuse
    ("steering/message", {"turn": 1, "message": {"id": "m"}}),  # .3 would rewrite
]


@pytest.mark.parametrize(("event_type", "data"), LEGACY_SHAPES)
def test_append_and_seed_refuse_what_a_load_would_upgrade_or_refuse(create: SessionFactory, event_type: str,
                                                                     data: dict[str, Any]) -> None:
    """SESSION-LEGACY-UPGRADE.6: written as it stands, the event would load as another event, or not at all."""
    session = create("s", clock=lambda: 5)
    session.append("turn/start", {"turn": 1})
    error = rejects(session, "SESSION-LEGACY-UPGRADE.6", lambda: session.append(event_type, data, ignorable=True))
    assert error.seq == 1 and error.message.startswith(f"{event_type}: a pre-react-loop shape; a load would ")
    seed = [*(event.to_json() for event in session.events),
            {"type": event_type, "seq": 1, "time": 5, "data": data, "ignorable": True}]
    seed_rejects(create, seed, "SESSION-LEGACY-UPGRADE.6", 1)


def test_every_event_a_session_appends_loads_as_itself(create: SessionFactory, tmp_path: Path) -> None:
    """SESSION-LEGACY-UPGRADE.6, accepted: the current turn/end reasons are written and load unchanged, unreported."""
    session = create("s", clock=lambda: 5)
    for turn, reason in enumerate([{"kind": "completed"}, {"kind": "aborted", "reason": {"kind": "legacy"}},
                                   {"kind": "error", "error": {"message": "x", "code": "E"}}], start=1):
        session.append("turn/start", {"turn": turn})
        session.append("turn/end", {"turn": turn, "reason": reason})
    path = tmp_path / "s.jsonl"
    storage.save(path, session.header, session.events)
    result = storage.load(path)
    assert not result.upgrades
    assert [e.to_json() for e in result.events] == [e.to_json() for e in session.events]


def test_unknown_types_are_refused_unless_ignorable_against_the_chosen_catalog() -> None:
    """SESSION-UNKNOWN-EVENT-GATE.1"""
    error = violation(lambda: storage.load(FIXTURES / "unknown.jsonl"))
    assert error.kind == "unknown-event" and error.seq == 0 and error.line == 2
    assert len(storage.load(FIXTURES / "ignorable.jsonl").events) == 2
    error = violation(lambda: storage.load(FIXTURES / "ignorable.jsonl", catalog="baseline-44"))
    assert error.rule == "SESSION-UNKNOWN-EVENT-GATE.1" and "team/task" in error.message


# --- durable writes ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", SUFFIXES)
def test_create_never_overwrites_and_appends_continue_the_seq(tmp_path: Path, name: str) -> None:
    """SESSION-STORAGE-WRITE.1, SESSION-STORAGE-WRITE.2, SESSION-STORAGE-SEQ.1"""
    session = build([])
    turn(session, 1)
    turn(session, 2)
    path = tmp_path / name
    log = storage.save(path, session.header, session.events[:6])
    assert violation(lambda: storage.save(path, session.header, [])).rule == "SESSION-STORAGE-WRITE.1"
    assert violation(lambda: log.append(session.events[7:])).rule == "SESSION-STORAGE-SEQ.1"
    log.append(session.events[6:9])
    assert list(storage.load(path).events) == list(session.events[:9])
    log.append(session.events[9:])
    assert list(storage.load(path).events) == list(session.events)
    turn(session, 3)
    reopened = storage.open_for_append(path)
    assert reopened.next_seq == 12
    reopened.append(session.events[12:])
    assert list(storage.load(path).events) == list(session.events)
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize("name", ["log.jsonl", "log.jsonl.zstd"])
def test_a_failed_append_rolls_the_file_back(tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """SESSION-STORAGE-WRITE.3"""
    session = build([])
    turn(session, 1)
    path = tmp_path / name
    log = storage.save(path, session.header, session.events[:3])
    size = path.stat().st_size
    real_fsync = os.fsync

    calls: list[int] = []

    def failing(fd: int) -> None:
        calls.append(fd)
        if len(calls) == 1:  # the batch's fsync fails; the rollback's succeeds
            raise OSError("disk full")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", failing)
    with pytest.raises(OSError, match="disk full"):
        log.append(session.events[3:])
    monkeypatch.setattr(os, "fsync", real_fsync)
    assert path.stat().st_size == size
    log.append(session.events[3:])
    assert list(storage.load(path).events) == list(session.events)


def test_records_beyond_the_bound_are_refused_on_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """SESSION-STORAGE-RECORD.1 (the always-on variant of the 100 MB line)."""
    monkeypatch.setattr(jsonlread, "MAX_RECORD_BYTES", 1 << 16)
    path = tmp_path / "big.jsonl"
    header = (FIXTURES / "unknown.jsonl").read_text().splitlines()[0]
    path.write_text(header + "\n" + '{"type":"x","data":"' + "y" * (1 << 18) + '"}\n')
    error = violation(lambda: storage.load(path))
    assert error.rule == "SESSION-STORAGE-RECORD.1" and error.line == 2


# --- zstd ----------------------------------------------------------------------------------------


def test_the_zstd_fixture_loads_and_its_torn_frame_is_repaired(tmp_path: Path) -> None:
    """SESSION-ZSTD-FRAMES.4"""
    path = fixture("frames.jsonl.zstd", tmp_path)
    result = storage.load(path)
    expected = [e.to_json() for e in storage.load(FIXTURES / "packed.jsonl").events][:16]
    assert [e.to_json() for e in result.events] == expected
    assert result.torn is not None and [c.type for c in result.closers] == ["tool/result", "step/end", "turn/end"]
    repaired = storage.repair(path)
    assert repaired.torn is None and list(repaired.events) == [*result.events, *result.closers]


@pytest.mark.parametrize("buffer", [zstdlog.PLAIN_BUFFER, 64 << 10], ids=["kept", "decoded-twice"])
def test_a_torn_frame_gives_back_its_complete_records(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, buffer: int) -> None:
    """SESSION-ZSTD-FRAMES.4, whether the torn frame's plaintext fits the buffer or is decoded again."""
    monkeypatch.setattr(zstdlog, "PLAIN_BUFFER", buffer)
    session = build([])
    for n in range(1, 4):
        turn(session, n)
    path = tmp_path / "r.jsonl.zstd"
    log = storage.save(path, session.header, session.events[:6])
    size = path.stat().st_size
    lines = [json.dumps({"type": "plugin/x", "seq": 6 + k, "time": 0, "data": os.urandom(1000).hex(), "ignorable": True})
             for k in range(300)]
    with open(path, "ab") as stream:
        frame = zstandard.ZstdCompressor(level=1, write_checksum=True).compress(("\n".join(lines) + "\n").encode())
        stream.write(frame[: len(frame) * 3 // 4])
    result = storage.load(path)
    assert result.recovered > 0 and result.torn is not None and result.torn.offset == size
    assert [e.seq for e in result.events] == list(range(6 + result.recovered))
    repaired = storage.repair(path)
    assert list(repaired.events) == list(result.events) and repaired.torn is None
    del log


@pytest.mark.parametrize(("mutate", "rule"), [
    (lambda data: data + b"garbage!", "SESSION-ZSTD-FRAMES.1"),
    (lambda data: data[:4] + bytes([data[4] | 0x08]) + data[5:], "SESSION-ZSTD-FRAMES.1"),
    (lambda data: compress(b'{"type":"session"}\n{"type":"session"}\n') + data, "SESSION-ZSTD-FRAMES.2"),
    (lambda data: b"", "SESSION-STORAGE-HEADER.1"),
    (lambda data: data + zstandard.ZstdCompressor().compress(b"{}\n"), "SESSION-ZSTD-FRAMES.3"),
    (lambda data: data + compress(b'{"type":"turn/start","seq":0,"time":0,"data":{"turn":1}}'), "SESSION-ZSTD-FRAMES.3"),
    (lambda data: data[:-3] + bytes(b ^ 0xFF for b in data[-3:]), "SESSION-ZSTD-FRAMES.3"),
])
@pytest.mark.parametrize("buffer", [zstdlog.PLAIN_BUFFER, 1], ids=["kept", "decoded-twice"])
def test_zstd_corruption_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mutate: Any, rule: str,
                                    buffer: int) -> None:
    monkeypatch.setattr(zstdlog, "PLAIN_BUFFER", buffer)
    path = tmp_path / "c.jsonl.zstd"
    storage.save(path, HEADER, [{"type": "turn/start", "seq": 0, "time": 0, "data": {"turn": 1}}])
    path.write_bytes(mutate(path.read_bytes()))
    assert violation(lambda: storage.load(path)).rule == rule


def plugin_events(first: int, count: int, size: int = 1500) -> list[dict[str, Any]]:
    """Ignorable events of about `size` bytes of incompressible text each (the gate keeps nothing of them)."""
    return [{"type": "plugin/x", "seq": first + k, "time": 0, "data": os.urandom(size // 2).hex(), "ignorable": True}
            for k in range(count)]


def test_a_zstd_frame_with_a_dictionary_id_is_read_past_its_header_and_refused_by_its_decode(tmp_path: Path) -> None:
    """SESSION-ZSTD-FRAMES.1 refuses only the reserved bit (0x08); the dictionary-id flag (bits 0-1) is a legal header
    field whose size the reader skips. Such a frame reaches the decoder, which has no dictionary: SESSION-ZSTD-FRAMES.3."""
    samples = [json.dumps({"type": "turn/start", "seq": i, "time": 0, "data": {"turn": i}}).encode() * 3 for i in range(200)]
    dictionary = zstandard.train_dictionary(4096, samples)
    header = json.dumps({"type": "session", "version": 0, "id": "fx", "createdAt": 0, "delegationDepth": 0})
    frame = zstandard.ZstdCompressor(dict_data=dictionary, write_checksum=True).compress(f"{header}\n".encode())
    assert frame[4] & 0x03 and not frame[4] & 0x08  # a dictionary id is present; the reserved bit is clear
    path = tmp_path / "dictionary.jsonl.zstd"
    path.write_bytes(frame)
    error = violation(lambda: storage.load(path))
    assert error.rule == "SESSION-ZSTD-FRAMES.3" and "fails to decode" in error.message


def test_a_zstd_log_streams_in_memory_bounded_by_the_frame_buffer_not_the_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """SESSION-ZSTD-FRAMES.1: one 3 MB seed frame (twelve times the buffer) and 40 batch frames, read by the
    checker's stream with a traced peak below the buffer plus a few records: the old reader held the whole file."""
    monkeypatch.setattr(zstdlog, "PLAIN_BUFFER", 256 << 10)
    path = tmp_path / "big.jsonl.zstd"
    log = storage.save(path, HEADER, plugin_events(0, 2000))
    for _ in range(40):
        log.append(plugin_events(log.next_seq, 50))
    size = path.stat().st_size
    tracemalloc.start()
    try:
        count = sum(1 for _ in storage.stream(path))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert count == 4000
    bound = zstdlog.PLAIN_BUFFER + 4 * 1500 + (1 << 20)  # the buffer, a few records, a block's pieces, the interpreter
    assert peak < bound < size // 2, (peak, bound, size)


def test_a_zstd_record_beyond_the_bound_is_cut_at_the_bound_and_refused_at_its_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """SESSION-STORAGE-RECORD.1 in a zstd frame: the reader keeps one byte past the bound, never the whole record."""
    monkeypatch.setattr(gate, "MAX_RECORD_BYTES", 1 << 16)
    monkeypatch.setattr(zstdlog, "PLAIN_BUFFER", 1 << 12)
    path = tmp_path / "long.jsonl.zstd"
    storage.save(path, HEADER, plugin_events(0, 3))
    with open(path, "ab") as stream:
        stream.write(compress(json.dumps(plugin_events(3, 1, 1 << 18)[0]).encode() + b"\n"))
    # Refused at its line, as the JSONL reader refuses it: a committed record is never a torn tail to cut.
    error = violation(lambda: storage.load(path))
    assert error.rule == "SESSION-STORAGE-RECORD.1" and error.line == 5 and f"exceeds {1 << 16} bytes" in str(error)


# --- repair against another writer ----------------------------------------------------------------


def other_writer(path: Path, next_seq: int) -> Any:
    """A second writer on the same log, as another process would hold one."""
    if path.suffix == ".sqlite":
        return sqlite.SqliteWriter(path, HEADER["id"], next_seq)
    return (zstdlog.ZstdWriter if path.suffix == ".zstd" else jsonl.JsonlWriter)(path, next_seq)


@pytest.mark.parametrize("name", SUFFIXES)
def test_a_repair_is_refused_when_another_writer_appended_after_the_read(tmp_path: Path, name: str) -> None:
    """SESSION-STORAGE-WRITE.4: the live writer ends its turn between the read and the repair; the closers would answer
    it twice (and SQLite's cut would delete its row), so the repair is refused and the writer's event kept."""
    path = tmp_path / name
    storage.save(path, HEADER, [{"type": "turn/start", "seq": 0, "time": 0, "data": {"turn": 1}}])
    plan = storage.load(path)
    assert [c.type for c in plan.closers] == ["turn/end"]
    end = {"type": "turn/end", "seq": 1, "time": 5, "data": {"turn": 1, "reason": {"kind": "completed"}}}
    other_writer(path, 1).append([end])
    error = violation(lambda: storage.repair(path, plan=plan))
    assert error.rule == "SESSION-STORAGE-WRITE.4" and "repair is stale" in error.message
    after = storage.load(path)
    assert [e.to_json() for e in after.events][1] == end and not after.needs_repair


@pytest.mark.parametrize("name", ["torn.jsonl", "frames.jsonl.zstd", "t.sqlite"])
def test_a_torn_tail_plan_is_refused_once_another_repair_committed(tmp_path: Path, name: str) -> None:
    """SESSION-STORAGE-WRITE.4 on the cut: a second repair from the same read would cut what the first one wrote."""
    if name == "t.sqlite":
        path, _ = sqlite_log(tmp_path)
        with sqlite3.connect(path) as db:
            db.execute("UPDATE events SET source_event_seqs = x'80' WHERE seq = 8")
        db.close()
    else:
        path = fixture(name, tmp_path)
    plan = storage.load(path)
    assert plan.torn is not None
    repaired = storage.repair(path)
    error = violation(lambda: storage.repair(path, plan=plan))
    assert error.rule == "SESSION-STORAGE-WRITE.4"
    assert storage.load(path) == repaired


# --- SQLite --------------------------------------------------------------------------------------


def test_the_sqlite_identity_and_schema(tmp_path: Path) -> None:
    path = tmp_path / "a.sqlite"
    session = build([])
    turn(session, 1, chunks=5)
    storage.save(path, session.header, session.events)
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA user_version").fetchone()[0] == 17
    assert db.execute("PRAGMA application_id").fetchone()[0] == 1146308688
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    rows = db.execute("SELECT seq, type, ignorable FROM events ORDER BY seq").fetchall()
    assert rows == [(0, "turn/start", None), (1, "text-chunks", 0), (6, "turn/end", None)]
    assert db.execute("SELECT revision FROM sessions").fetchone()[0] == 1
    db.close()


@pytest.mark.parametrize(("name", "rule", "text"), [
    ("foreign.sqlite", "SESSION-SQLITE-SCHEMA.3", "unversioned"),
    ("v16.sqlite", "SESSION-SQLITE-SCHEMA.1", "no upgrade path"),
    ("v18.sqlite", "SESSION-SQLITE-SCHEMA.1", "written by a newer format, upgrade"),
])
def test_foreign_and_other_version_databases_are_refused(tmp_path: Path, name: str, rule: str, text: str) -> None:
    path = fixture(name, tmp_path)
    for call in (lambda: storage.load(path), lambda: storage.save(path, HEADER, [])):
        error = violation(call)
        assert error.rule == rule and text in error.message and error.kind == "version"


def test_wrong_application_id_missing_columns_and_non_databases(tmp_path: Path) -> None:
    path = tmp_path / "a.sqlite"
    storage.save(path, HEADER, [])
    db = sqlite3.connect(path)
    db.execute("PRAGMA application_id = 7")
    db.commit()
    db.close()
    assert violation(lambda: storage.load(path)).rule == "SESSION-SQLITE-SCHEMA.2"
    path = tmp_path / "b.sqlite"
    storage.save(path, HEADER, [])
    db = sqlite3.connect(path)
    db.execute("ALTER TABLE events DROP COLUMN ignorable")
    db.commit()
    db.close()
    assert violation(lambda: storage.load(path)).rule == "SESSION-SQLITE-SCHEMA.4"
    (tmp_path / "c.sqlite").write_bytes(b"\x00" * 100)
    assert violation(lambda: storage.load(tmp_path / "c.sqlite")).rule == "SESSION-SQLITE-SCHEMA.3"


def test_varints_round_trip_and_bad_ones_are_refused() -> None:
    """SESSION-SQLITE-ROW.1"""
    for seqs in ([], [0], [5, 3, 900, 1, 2**53 - 1, 0]):
        assert sqlite.decode_seqs(sqlite.encode_seqs(seqs)) == seqs
    for blob in (b"\x80", b"\x81\x00", b"\x05\x0b", b"\xff" * 10 + b"\x01"):
        assert violation(lambda blob=blob: sqlite.decode_seqs(blob)).rule == "SESSION-SQLITE-ROW.1"


def sqlite_log(tmp_path: Path) -> tuple[Path, Any]:
    session = build([])
    turn(session, 1)
    session.append("turn/start", {"turn": 2})
    session.append("step/start", {"turn": 2, "step": 1})
    # Text that compresses as a log's text does (a few times, not the 300 times of one repeated letter, which
    # SESSION-STORAGE-RECORD.3 makes the writer store as TEXT).
    session.append("request/context", {"blob": " ".join(str(i * 7919 % 10007) for i in range(2_000))})
    path = tmp_path / "t.sqlite"
    storage.save(path, session.header, session.events)
    return path, session


def test_large_data_is_a_zstd_blob_and_a_bad_blob_or_column_is_refused(tmp_path: Path) -> None:
    """SESSION-SQLITE-ROW.2, SESSION-SQLITE-ROW.3"""
    path, session = sqlite_log(tmp_path)
    assert list(storage.load(path).events) == list(session.events)
    db = sqlite3.connect(path)
    assert db.execute("SELECT typeof(data) FROM events WHERE type = 'request/context'").fetchone()[0] == "blob"
    db.execute("UPDATE events SET data = x'28b52ffd00' WHERE type = 'request/context'")
    db.commit()
    result = storage.load(path)
    assert result.torn is not None and "SESSION-SQLITE-ROW.2" in result.torn.reason
    db.execute("UPDATE events SET ignorable = 0, data = '{}' WHERE seq = 0")
    db.commit()
    db.close()
    error = violation(lambda: storage.load(path))
    assert error.rule == "SESSION-SQLITE-ROW.3" and error.seq == 0 and "SESSION-TORN-TAIL.2" in error.message


def test_sqlite_torn_tail_repair_replaces_the_rows(tmp_path: Path) -> None:
    path, session = sqlite_log(tmp_path)
    db = sqlite3.connect(path)
    db.execute("UPDATE events SET source_event_seqs = x'80' WHERE seq = 8")
    db.commit()
    db.close()
    result = storage.load(path)
    assert result.torn is not None and result.torn.seq == 8
    assert [c.type for c in result.closers] == ["step/end", "turn/end"]
    repaired = storage.repair(path)
    assert list(repaired.events) == [*session.events[:8], *result.closers] and repaired.torn is None


def test_a_database_of_many_sessions_is_opened_by_id(tmp_path: Path) -> None:
    path = tmp_path / "m.sqlite"
    storage.save(path, HEADER, [])
    storage.save(path, {**HEADER, "id": "s2"}, [])
    assert violation(lambda: storage.load(path)).rule == "SESSION-STORAGE-HEADER.5"
    assert storage.load(path, session_id="s2").header["id"] == "s2"


# --- layout ---------------------------------------------------------------------------------------


def test_encode_segment_and_project_key() -> None:
    """SESSION-STORAGE-LAYOUT.1, SESSION-STORAGE-LAYOUT.2, SESSION-STORAGE-LAYOUT.3"""
    assert encode_segment("a.B_c-9") == "a.B_c-9"
    assert encode_segment("a/b~c") == "a~002Fb~007Ec"
    assert encode_segment(".") == "~002E" and encode_segment("..") == "~002E~002E"
    assert encode_segment("é😀") == "~00E9~D83D~DE00"
    assert violation(lambda: encode_segment("")).rule == "SESSION-STORAGE-LAYOUT.3"
    assert project_key("/home/dev/my project") == "--home-dev-my~0020project--"
    assert project_key("C:\\\\Users\\x") == "--C-Users-x--"
    assert project_key("/") == "--root--" and project_key(None) == "_no-cwd"
    assert len(project_key("/" + "a" * 400)) == 251 + 4
    assert session_path(Path("/r"), "s1", "/w") == Path("/r/--w--/s1/session.jsonl.zstd")
