"""spec/07-persistence.md, packed chunk rows: the upstream's codec cases (chunk-rows.spec.ts)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sessionspec.errors import SpecViolation
from sessionspec.jsonvalue import MAX_SAFE_INTEGER
from sessionspec.storage.chunkrows import decode, pack


def chunk(seq: int, time: int, text: str = "t", *, kind: str = "text-delta", index: int = 0, turn: Any = 1,
          step: Any = 1, call: str | None = None, name: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"type": kind, "index": index}
    if kind == "tool-call-delta":
        body["id"] = call
        if name is not None:
            body["name"] = name
        body["argumentsDelta"] = text
    else:
        body["text"] = text
    return {"type": "assistant/chunk", "seq": seq, "time": time, "data": {"turn": turn, "step": step, "chunk": body}}


def expand(records: list[Any], *, sqlite: bool = False) -> list[Any]:
    return [event for record in json.loads(json.dumps(records)) for event in decode(record, sqlite=sqlite)]


def test_a_five_member_text_run_is_one_row() -> None:
    events = [chunk(k, 1000 + 10 * k, f"t{k}") for k in range(5)]
    rows = pack(events)
    assert rows == [{"type": "text-chunks", "seq0": 0, "time0": 1000,
                     "data": {"turn": 1, "step": 1, "index": 0, "dt": [10, 10, 10, 10], "texts": ["t0", "t1", "t2", "t3", "t4"]}}]
    assert expand(rows) == events


def test_reasoning_and_tool_call_runs_get_their_own_tags_and_name_stays_absent() -> None:
    events = [chunk(k, k, kind="reasoning-delta") for k in range(3)]
    events += [chunk(3 + k, 3 + k, f"a{k + 4}", kind="tool-call-delta", index=1, call="c1", name="write") for k in range(3)]
    events += [chunk(6 + k, 6 + k, kind="tool-call-delta", index=1, call="c2") for k in range(3)]
    rows = pack(events)
    assert [row["type"] for row in rows] == ["reasoning-chunks", "tool-call-chunks", "tool-call-chunks"]
    assert rows[1]["data"]["name"] == "write" and rows[1]["data"]["args"] == ["a4", "a5", "a6"]
    assert "name" not in rows[2]["data"]
    assert expand(rows) == events


def test_short_runs_and_broken_runs_stay_verbatim() -> None:
    assert pack([chunk(0, 0), chunk(1, 1)]) == [chunk(0, 0), chunk(1, 1)]
    breaks = [
        [chunk(0, 0), chunk(1, 1), chunk(3, 3), chunk(4, 4)],  # seq gap
        [chunk(0, 0), chunk(1, 1), chunk(2, 2, kind="reasoning-delta"), chunk(3, 3, kind="reasoning-delta")],
        [chunk(0, 0), chunk(1, 1), chunk(2, 2, index=1), chunk(3, 3, index=1)],
        [chunk(0, 0), chunk(1, 1), chunk(2, 2, step=2), chunk(3, 3, step=2)],
        [chunk(0, 0, turn=1), chunk(1, 1, turn=1.0), chunk(2, 2, turn=1)],  # 1 and 1.0 differ in type
        [chunk(0, 0, kind="tool-call-delta", call="a"), chunk(1, 1, kind="tool-call-delta", call="a"),
         chunk(2, 2, kind="tool-call-delta", call="b")],
        [chunk(0, 0, kind="tool-call-delta", call="a", name="n"), chunk(1, 1, kind="tool-call-delta", call="a"),
         chunk(2, 2, kind="tool-call-delta", call="a", name="n")],
        [chunk(0, -MAX_SAFE_INTEGER), chunk(1, MAX_SAFE_INTEGER - 1), chunk(2, MAX_SAFE_INTEGER)],
    ]
    for events in breaks:
        assert pack(events) == events
        assert expand(pack(events)) == events


def test_ineligible_shapes_stay_verbatim() -> None:
    base = chunk(0, 0)
    odd: list[dict[str, Any]] = [
        {**base, "surfaceOp": "append"},
        {**base, "data": {**base["data"], "extra": 1}},
        {**base, "data": {**base["data"], "turn": "1"}},
        {**base, "data": {**base["data"], "chunk": "x"}},
        {**base, "data": {**base["data"], "chunk": {"type": "text-delta", "index": "0", "text": "t"}}},
        {**base, "data": {**base["data"], "chunk": {"type": "text-delta", "index": 0, "text": 5}}},
        {**base, "data": {**base["data"], "chunk": {"type": "block-start", "index": 0}}},
        {**base, "time": 1.5},
        {**base, "data": None},
    ]
    for record in odd:
        events = [{**record, "seq": k} for k in range(3)]
        assert pack(events) == events


def test_block_boundaries_split_runs() -> None:
    events = [{"type": "assistant/chunk", "seq": 0, "time": 0, "data": {"turn": 1, "step": 1, "chunk": {"type": "block-start", "index": 0}}},
              chunk(1, 1), chunk(2, 2), chunk(3, 3),
              {"type": "assistant/chunk", "seq": 4, "time": 4, "data": {"turn": 1, "step": 1, "chunk": {"type": "block-end", "index": 0}}},
              {"type": "step/end", "seq": 5, "time": 5, "data": {"turn": 1, "step": 1}}]
    rows = pack(events)
    assert len(rows) == 4 and rows[1]["type"] == "text-chunks"
    assert expand(rows) == events


def test_negative_gaps_round_trip_and_non_rows_pass_through() -> None:
    events = [chunk(0, 1000), chunk(1, 990), chunk(2, 995)]
    assert pack(events)[0]["data"]["dt"] == [-10, 5]
    assert expand(pack(events)) == events
    assert decode("junk") == ["junk"] and decode(None) == [None]


GOOD = {"type": "text-chunks", "seq0": 0, "time0": 0, "data": {"turn": 1, "step": 1, "index": 0, "dt": [1, 1], "texts": ["a", "b", "c"]}}


def _with(**changes: Any) -> dict[str, Any]:
    data = {**GOOD["data"], **changes}
    return {**GOOD, "data": {k: v for k, v in data.items() if v is not ...}}


@pytest.mark.parametrize(("record", "rule"), [
    ({**GOOD, "seq": 0}, "SESSION-CHUNK-ROWS.1"),
    ({k: v for k, v in GOOD.items() if k != "time0"}, "SESSION-CHUNK-ROWS.1"),
    ({**GOOD, "data": []}, "SESSION-CHUNK-ROWS.1"),
    (_with(extra=1), "SESSION-CHUNK-ROWS.1"),
    (_with(id="c1"), "SESSION-CHUNK-ROWS.1"),
    ({**GOOD, "seq0": -1}, "SESSION-CHUNK-ROWS.2"),
    ({**GOOD, "seq0": True}, "SESSION-CHUNK-ROWS.2"),
    ({**GOOD, "time0": 0.5}, "SESSION-CHUNK-ROWS.2"),
    ({**GOOD, "seq0": MAX_SAFE_INTEGER - 1}, "SESSION-CHUNK-ROWS.2"),
    ({**GOOD, "time0": MAX_SAFE_INTEGER}, "SESSION-CHUNK-ROWS.2"),
    (_with(turn="1"), "SESSION-CHUNK-ROWS.3"),
    (_with(index=None), "SESSION-CHUNK-ROWS.3"),
    ({"type": "tool-call-chunks", "seq0": 0, "time0": 0,
      "data": {"turn": 1, "step": 1, "index": 0, "id": 5, "dt": [], "args": ["a"]}}, "SESSION-CHUNK-ROWS.3"),
    ({"type": "tool-call-chunks", "seq0": 0, "time0": 0,
      "data": {"turn": 1, "step": 1, "index": 0, "id": "c", "name": 5, "dt": [], "args": ["a"]}}, "SESSION-CHUNK-ROWS.3"),
    (_with(texts=[], dt=[]), "SESSION-CHUNK-ROWS.4"),
    (_with(texts=["a", 1, "c"]), "SESSION-CHUNK-ROWS.4"),
    (_with(dt=[1, 0.5]), "SESSION-CHUNK-ROWS.4"),
    (_with(dt=[1]), "SESSION-CHUNK-ROWS.4"),
])
def test_malformed_rows_are_refused(record: dict[str, Any], rule: str) -> None:
    with pytest.raises(SpecViolation, match=r"malformed .* storage row") as caught:
        decode(record)
    assert caught.value.rule == rule


def test_sqlite_rows_hold_3_to_1024_members_and_one_mib() -> None:
    """SESSION-CHUNK-ROWS.5: the SQLite codec splits long runs and refuses rows outside its bounds."""
    events = [chunk(k, k, "x") for k in range(2100)]
    rows = pack(events, sqlite=True)
    assert [len(row["data"]["texts"]) for row in rows if "seq0" in row] == [1024, 1024, 52]
    assert expand(rows, sqlite=True) == events
    big = [chunk(k, k, "y" * 300_000) for k in range(8)]
    rows = pack(big, sqlite=True)
    assert [len(row["data"]["texts"]) for row in rows if "seq0" in row] == [3, 3] and len(rows) == 4
    assert expand(rows, sqlite=True) == big
    with pytest.raises(SpecViolation) as caught:
        decode({**GOOD, "data": {**GOOD["data"], "dt": [1], "texts": ["a", "b"]}}, sqlite=True)
    assert caught.value.rule == "SESSION-CHUNK-ROWS.5"
    assert decode({**GOOD, "data": {**GOOD["data"], "dt": [1], "texts": ["a", "b"]}}) != []


def test_an_event_under_a_row_tag_is_never_stored() -> None:
    with pytest.raises(SpecViolation) as caught:
        pack([{"type": "text-chunks", "seq": 0, "time": 0, "data": {}}])
    assert caught.value.rule == "SESSION-CHUNK-ROWS.7"


safe = st.integers(-MAX_SAFE_INTEGER, MAX_SAFE_INTEGER)


@st.composite
def chunk_batches(draw: Any) -> list[dict[str, Any]]:
    out = []
    for seq in range(draw(st.integers(0, 30))):
        kind = draw(st.sampled_from(["text-delta", "reasoning-delta", "tool-call-delta"]))
        out.append(chunk(seq, draw(safe), draw(st.text(max_size=3)), kind=kind, index=draw(st.integers(0, 1)),
                         step=draw(st.sampled_from([1, 1, 2])), call=draw(st.sampled_from(["a", "b"])),
                         name=draw(st.sampled_from([None, "n"]))))
    return out


@settings(max_examples=150, deadline=None)
@given(chunk_batches(), st.booleans())
def test_packing_then_decoding_is_the_identity(events: list[dict[str, Any]], sqlite: bool) -> None:
    """SESSION-CHUNK-ROWS.6: rows are an encoding only; the logical events never change."""
    assert expand(pack(events, sqlite=sqlite), sqlite=sqlite) == events
