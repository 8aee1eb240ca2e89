"""`sessionspec repair`'s plan, streamed (logcheck/repairplan.py): the plan a load through the gate makes, or none.

Fast accept, exact reject: where the stream gives a plan, it is the load's plan (events, torn
tail, closers, recovered events, revision); where the load refuses the log, the stream gives no
plan (the command then loads the log, whose refusal is the verdict) or raises the very refusal
of the reader; and on a sound log, open tail or torn fragment, in every format, it gives one.
"""

from __future__ import annotations

import copy
import tempfile
from pathlib import Path
from typing import Any
from unittest import mock

import orjson
import pytest
from hostile import HEADER, agent_log, clean_log, lines_of, run_cli, write_jsonl
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sessionspec import repair, storage
from sessionspec.envelope import Event
from sessionspec.errors import SpecViolation
from sessionspec.jsontext import dumps
from sessionspec.logcheck.repairplan import RepairPlan, TailTurn, plan_repair
from sessionspec.storage import jsonlread
from sessionspec.storage.chunkrows import decode, pack
from sessionspec.testing.builders import assistant_message, tool_call, tool_call_block, tool_result, user_message
from sessionspec.testing.loops import agent_loops, build
from test_logcheck_checker import apply_stored, stored_log, stored_mutations

PROPERTY = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
JSONL_HEADER = b'{"type":"session","version":0,"id":"demo","createdAt":1,"delegationDepth":0}\n'


def exact(path: Path) -> Any:
    """What the load gate says: the plan of the load, or its refusal."""
    try:
        return RepairPlan.of(storage.load(path))
    except SpecViolation as violation:
        return ("refused", violation.rule, violation.message, violation.line, violation.seq)


def streamed(path: Path) -> Any:
    try:
        return plan_repair(path)
    except SpecViolation as violation:
        return ("refused", violation.rule, violation.message, violation.line, violation.seq)


def agrees(path: Path) -> Any:
    """The streamed plan is the load's, or there is none and the load decides; returns the stream's answer."""
    found, expected = streamed(path), exact(path)
    assert found is None or found == expected, (found, expected)
    return found


# --- the tail turn: a faster form of repair.closers --------------------------------------------------


def tail_closers(events: list[Event], *, block: int) -> list[Event] | None:
    """The closers of `events` from their records fed in parsed blocks of `block` records (packed rows and all)."""
    records = pack([event.to_json() for event in events])
    tail = TailTurn()
    for start in range(0, len(records), block):
        if block == 1:
            tail.feed(records[start])
        else:
            tail.feed_block(records[start:start + block])
    return tail.closers(len(events))


@PROPERTY
@given(agent_loops(), st.data(), st.sampled_from([1, 3, 1000]))
def test_the_tail_turn_closes_what_repair_closes(loop: Any, data: st.DataObject, block: int) -> None:
    cut = data.draw(st.integers(0, len(loop.requests)))
    events = list(build(loop.requests[:cut]).events)
    assert tail_closers(events, block=block) == repair.closers(events)


def test_a_call_answered_before_the_tail_turn_is_not_answered_again() -> None:
    """SESSION-CRASH-REPAIR.6 from the tail turn: the tail turn keeps the calls answered anywhere before it."""
    session = build([])
    session.append("turn/start", {"turn": 1})
    session.append("step/start", {"turn": 1, "step": 1})
    session.append("assistant/message", assistant_message("a1", [tool_call_block("c1")]), surface_op="append")
    call = session.append("tool/call", tool_call("c1"))
    session.append("tool/result", tool_result("c1", "ok"), surface_op="append", source_event_seqs=[call.seq])
    session.append("step/end", {"turn": 1, "step": 1})
    session.append("turn/end", {"turn": 1, "reason": {"kind": "completed"}})
    session.append("turn/start", {"turn": 2})
    session.append("user/message", user_message("u2", "again"), surface_op="append")
    session.append("step/start", {"turn": 2, "step": 1})
    session.append("assistant/message", assistant_message("a2", [tool_call_block("c1"), tool_call_block("c2")]),
                   surface_op="append")
    events = list(session.events)
    closers = repair.closers(events)
    assert [c.data["message"]["source"]["callId"] for c in closers if c.type == "tool/result"] == ["c2"]
    for block in (1, 2, 100):
        assert tail_closers(events, block=block) == closers


def test_records_that_are_not_the_logs_give_no_closers() -> None:
    tail = TailTurn()
    assert tail.closers(0) == [] and tail.closers(1) is None
    tail.feed({"type": "turn/start", "seq": 0, "time": 1, "data": {"turn": 1}})
    assert tail.closers(2) is None  # the last record fed is not the last event of the log the checker read
    assert [closer.type for closer in tail.closers(1) or []] == ["turn/end"]


# --- the stream against the load gate ---------------------------------------------------------------


RECORDS = stored_log()


@settings(max_examples=300, deadline=None)
@given(st.integers(0, len(RECORDS)), st.lists(stored_mutations(), max_size=2), st.sampled_from([32 << 10, 300, 64]),
       st.sampled_from(["", "torn", "junk", "junk strings", "bare junk", "defect then end", "defect then records",
                        "blank"]))
def test_a_streamed_jsonl_plan_is_the_loads(cut: int, changes: list[Any], block: int, tail: str) -> None:
    """Any cut of a log holding every record shape (an open turn at each place), changes that break each condition of
    the checker's fast path, torn fragments, defects and small blocks: the stream's plan is the load's, or none."""
    records = copy.deepcopy(RECORDS)
    lines = [orjson.dumps(record) for record in records]
    for change in changes:
        apply_stored(records, lines, change)
    body = lines[:cut]
    text = JSONL_HEADER + b"".join(line + b"\n" for line in body)
    if tail == "torn" and cut < len(lines):
        text += lines[cut][: len(lines[cut]) // 2]
    elif tail == "junk":
        text += b"{not json\n" + b"x\n" * 3
    elif tail == "defect then end":
        text += b"{not json\n" + orjson.dumps({"type": "turn/end", "seq": 9, "time": 0, "data": {"turn": 1}}) + b"\n"
    elif tail == "junk strings":  # canonical JSON, so parsed in blocks: values that are no object
        text += b"{not json\n" + b'"turn/end"\n' * 200 + b'["turn/end"]\n'
    elif tail == "bare junk":  # no JSON at all, naming a turn/end: each line read alone
        text += b"{not json\n" + b"turn/end\n" * 200 + b' {"turn/end"\n'
    elif tail == "defect then records":  # objects after the defect, in the blocks the tail turn is fed
        text += b"{not json\n" + b"".join(line + b"\n" for line in lines[cut:])
    elif tail == "blank":
        text += b"\n"
    with tempfile.TemporaryDirectory() as tmp, mock.patch.object(jsonlread, "BLOCK", block):
        path = Path(tmp) / "log.jsonl"
        path.write_bytes(text)
        found = agrees(path)
        if not changes and tail in ("", "torn", "junk", "junk strings", "bare junk"):
            # A sound log is planned by the stream alone, and so is junk after it (issue 34: its cost was a second read).
            assert isinstance(found, RepairPlan)


EVENTS = [event for record in RECORDS for event in decode(record)]


@pytest.mark.parametrize("fmt", ["jsonl.zstd", "sqlite"])
def test_a_streamed_plan_is_the_loads_in_every_format(tmp_path: Path, fmt: str) -> None:
    for cut in range(0, len(EVENTS) + 1, 3):
        path = tmp_path / f"cut{cut}.{fmt}"
        storage.save(path, {"version": 0, "id": "demo", "createdAt": 1}, EVENTS[:cut])
        assert isinstance(agrees(path), RepairPlan)


@pytest.mark.parametrize("fmt", ["jsonl", "jsonl.zstd", "sqlite"])
@pytest.mark.parametrize("open_tail", [False, True])
def test_a_sound_log_is_planned_by_the_stream(tmp_path: Path, fmt: str, open_tail: bool) -> None:
    path = clean_log(tmp_path / f"log.{fmt}", fmt, open_tail=open_tail, turns=30)
    plan = agrees(path)
    assert isinstance(plan, RepairPlan) and plan.needs_repair == open_tail
    if fmt != "sqlite":  # a torn final record: the fragment is cut, the closers follow the last committed event
        path.write_bytes(path.read_bytes()[:-7])
        torn = agrees(path)
        assert isinstance(torn, RepairPlan) and torn.torn is not None


def test_a_legacy_log_is_left_to_the_load_which_upgrades_it() -> None:
    """SESSION-LEGACY-UPGRADE: the load validates the upgraded events, so the stream, which reads the stored ones,
    plans nothing; `repair` says what the load says."""
    path = Path(__file__).parent / "fixtures" / "storage" / "legacy.jsonl"
    assert plan_repair(path) is None
    assert run_cli("repair", "--format", "json", str(path)).out == run_cli(
        "repair", "--format", "json", "--impl", "model", str(path)).out


def test_a_refusal_of_the_reader_is_raised_as_the_load_raises_it(tmp_path: Path) -> None:
    """A defect followed by a committed turn/end is corruption (SESSION-TORN-TAIL.2): the reader refuses it, before
    anything the gate could say, so the stream raises the load's own refusal."""
    batches = agent_log(3)
    lines = [lines_of(batch) for batch in batches]
    lines[1][2] = b"{not json"
    path = write_jsonl(tmp_path / "corrupt.jsonl", lines)
    refused = exact(path)
    assert refused[0] == "refused" and streamed(path) == refused


def test_the_stream_stops_at_its_first_finding(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    records = [record for batch in agent_log(40) for record in batch]
    records[3]["extra"] = 1
    path = write_jsonl(tmp_path / "broken.jsonl", [[dumps(record).encode() for record in pack(records)]])
    fed: list[Any] = []
    real = TailTurn.feed_block
    monkeypatch.setattr(TailTurn, "feed_block", lambda self, values: (fed.append(len(values)), real(self, values))[1])
    monkeypatch.setattr(jsonlread, "BLOCK", 256)
    assert plan_repair(path) is None and len(fed) < 5
    assert exact(path)[1] == "SESSION-EVENT-ENVELOPE.1"


def test_the_closers_are_validated_after_the_log(tmp_path: Path) -> None:
    """A closer the log makes invalid (a call id no message may name: the closer's message would be refused) is the
    load's to refuse: the stream feeds the closers to the checker, as seeding validates them."""
    session = build([])
    session.append("turn/start", {"turn": 1})
    session.append("step/start", {"turn": 1, "step": 1})
    events = [event.to_json() for event in session.events]
    message = assistant_message("a1", [tool_call_block("c1")])
    message["message"]["content"][0]["id"] = ""
    events.append({"type": "assistant/message", "seq": 2, "time": 0, "data": message, "surfaceOp": "append"})
    path = write_jsonl(tmp_path / "empty-id.jsonl", [[dumps(event).encode() for event in events]], dumps(HEADER).encode())
    assert exact(path)[:2] == ("refused", "SESSION-MESSAGE-SHAPE.6") and streamed(path) is None
    ran = run_cli("repair", str(path))
    assert ran.code == 1 and "SESSION-MESSAGE-SHAPE.6" in ran.err
