"""The packed chunk-row codec (SESSION-CHUNK-ROWS; upstream `chunk-rows.ts`, notes §4.4).

A streamed answer is thousands of `assistant/chunk` events that differ only in their text and
time. Storing a run of them as one row (`text-chunks`, `reasoning-chunks`, `tool-call-chunks`)
makes logs several times smaller, and the upstream writes them by default, so a reader of real
logs must expand them. Expansion is strict: a row that does not decode to exactly the events it
stands for would change the log silently, so a malformed row is refused, never guessed at.
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import pairwise
from typing import Any, Final

from sessionspec.errors import Kind, SpecViolation
from sessionspec.jsontext import dumps
from sessionspec.jsonvalue import Json, is_nonneg_safe_int, is_safe_int
from sessionspec.preview import shown
from sessionspec.rules import define

ROW_SHAPE = define("SESSION-CHUNK-ROWS.1", Kind.ENVELOPE, "a packed row has exactly the envelope and payload keys of its tag")
ROW_RANGE = define("SESSION-CHUNK-ROWS.2", Kind.ENVELOPE, "seq0, time0 and every member's seq and time are safe integers")
ROW_FIELDS = define("SESSION-CHUNK-ROWS.3", Kind.ENVELOPE, "turn, step and index are numbers; id and name are strings")
ROW_PAYLOAD = define("SESSION-CHUNK-ROWS.4", Kind.ENVELOPE, "one string per member and members - 1 safe-integer time gaps")
ROW_BOUNDS = define("SESSION-CHUNK-ROWS.5", Kind.ENVELOPE, "a SQLite row holds 3 to 1,024 members and at most 1 MiB of data")
ROW_PACKING = define("SESSION-CHUNK-ROWS.6", Kind.INTERNAL, "runs of 3 or more eligible chunks are packed; reading always expands")
ROW_TAG_RESERVED = define("SESSION-CHUNK-ROWS.7", Kind.ENVELOPE, "no event is stored verbatim under a row tag")
ROW_MEMBERS = define("SESSION-CHUNK-ROWS.8", Kind.ENVELOPE, "a packed row holds at most 65,536 members on every backend")

CHUNK = "assistant/chunk"
TEXT_ROW, REASONING_ROW, TOOL_ROW = "text-chunks", "reasoning-chunks", "tool-call-chunks"
ROW_TAGS: Final = frozenset({TEXT_ROW, REASONING_ROW, TOOL_ROW})
_DELTA_OF = {TEXT_ROW: "text-delta", REASONING_ROW: "reasoning-delta", TOOL_ROW: "tool-call-delta"}
_TAG_OF = {delta: tag for tag, delta in _DELTA_OF.items()}
_TEXT_KEYS = frozenset({"turn", "step", "index", "dt", "texts"})
_TOOL_KEYS = frozenset({"turn", "step", "index", "id", "dt", "args"})

SQLITE_MIN_MEMBERS, SQLITE_MAX_MEMBERS, SQLITE_MAX_BYTES = 3, 1024, 1 << 20
"""The SQLite codec's bounds (a frozen copy of the core codec with limits, notes §5.21)."""
MAX_MEMBERS = 1 << 16
"""Every backend's bound (SESSION-CHUNK-ROWS.8): a row of n members expands to n events in memory, about 1 KiB each,
where its text costs as little as 5 bytes a member; without a bound one 25 MB line is 5 M events and gigabytes."""


def _number(value: object) -> bool:
    return type(value) in (int, float)


def _same(a: object, b: object) -> bool:
    return type(a) is type(b) and a == b


def classify(record: Json) -> tuple[Any, ...] | None:
    """The run key of a packable event, or None: only exactly-shaped deltas pack, all else is verbatim."""
    if not isinstance(record, dict) or set(record) != {"type", "seq", "time", "data"} or record["type"] != CHUNK:
        return None
    if not is_nonneg_safe_int(record["seq"]) or not is_safe_int(record["time"]):
        return None
    data = record["data"]
    if not isinstance(data, dict) or set(data) != {"turn", "step", "chunk"}:
        return None
    chunk = data["chunk"]
    if not _number(data["turn"]) or not _number(data["step"]) or not isinstance(chunk, dict):
        return None
    if not _number(chunk.get("index")):
        return None
    tag = _TAG_OF.get(chunk.get("type"))  # type: ignore[arg-type]
    if tag in (TEXT_ROW, REASONING_ROW):
        if set(chunk) != {"type", "index", "text"} or type(chunk["text"]) is not str:
            return None
        return (tag, data["turn"], data["step"], chunk["index"])
    if tag == TOOL_ROW:
        keys = set(chunk)
        if keys not in ({"type", "index", "id", "argumentsDelta"}, {"type", "index", "id", "name", "argumentsDelta"}):
            return None
        if not all(type(chunk[k]) is str for k in keys - {"type", "index"}):
            return None
        return (tag, data["turn"], data["step"], chunk["index"], chunk["id"], "name" in chunk, chunk.get("name"))
    return None


def _continues(key: tuple[Any, ...], prev_key: tuple[Any, ...], record: Json, prev: Json) -> bool:
    gap = record["time"] - prev["time"]
    return (
        len(key) == len(prev_key)
        and all(_same(a, b) for a, b in zip(key, prev_key, strict=True))
        and record["seq"] == prev["seq"] + 1
        and is_safe_int(gap)
    )


def runs(records: Iterable[Json]) -> list[list[Json]]:
    """Split records into maximal runs of packable chunks; every other record is a run of one."""
    out: list[list[Json]] = []
    prev_key: tuple[Any, ...] | None = None
    for record in records:
        key = classify(record)
        if key is not None and prev_key is not None and _continues(key, prev_key, record, out[-1][-1]):
            out[-1].append(record)
        else:
            out.append([record])
        prev_key = key
    return out


def row(members: list[Json]) -> dict[str, Json]:
    """One packed row for a run of at least one packable chunk."""
    first = members[0]
    data, chunk = first["data"], first["data"]["chunk"]
    tag = _TAG_OF[chunk["type"]]
    # The upstream writer's key order (notes §4.4): dt before a tool row's id and name.
    payload: dict[str, Json] = {"turn": data["turn"], "step": data["step"], "index": chunk["index"],
                                "dt": [b["time"] - a["time"] for a, b in pairwise(members)]}
    if tag == TOOL_ROW:
        payload["id"] = chunk["id"]
        if "name" in chunk:
            payload["name"] = chunk["name"]
    field, text_key = ("args", "argumentsDelta") if tag == TOOL_ROW else ("texts", "text")
    payload[field] = [m["data"]["chunk"][text_key] for m in members]
    return {"type": tag, "seq0": first["seq"], "time0": first["time"], "data": payload}


def is_row_tag(value: object) -> bool:
    """Whether a record's `type` names a packed row; any JSON value may stand there in a bad log."""
    return type(value) is str and value in ROW_TAGS


def check_storable(record: Json) -> None:
    """SESSION-CHUNK-ROWS.7: a verbatim event under a row tag would be read back as a (malformed) row."""
    if isinstance(record, dict) and is_row_tag(record.get("type")):
        raise SpecViolation(ROW_TAG_RESERVED, Kind.ENVELOPE,
                            f"event type {shown(record['type'])} is reserved for packed rows and cannot be stored",
                            seq=record.get("seq"))


def pack(records: Iterable[Json], *, sqlite: bool = False) -> list[Json]:
    """Storage records for one batch: runs of 3 or more chunks become rows (SESSION-CHUNK-ROWS.6).

    With `sqlite`, rows also hold at most 1,024 members and 1 MiB of data (SESSION-CHUNK-ROWS.5);
    a longer run is split, each row the largest that fits (binary search, as upstream).
    """
    out: list[Json] = []
    for run in runs(records):
        for record in run:
            check_storable(record)
        if len(run) < 3:
            out.extend(run)
            continue
        if not sqlite:
            # SESSION-CHUNK-ROWS.8: runs longer than the bound become several rows, each the largest that fits.
            start = 0
            while len(run) - start >= SQLITE_MIN_MEMBERS:
                out.append(row(run[start:start + MAX_MEMBERS]))
                start += MAX_MEMBERS
            out.extend(run[start:])
            continue
        start = 0
        while len(run) - start >= SQLITE_MIN_MEMBERS:
            low, high = SQLITE_MIN_MEMBERS, min(SQLITE_MAX_MEMBERS, len(run) - start)
            if _row_bytes(run[start:start + low]) > SQLITE_MAX_BYTES:
                break
            while low < high:
                middle = (low + high + 1) // 2
                if _row_bytes(run[start:start + middle]) <= SQLITE_MAX_BYTES:
                    low = middle
                else:
                    high = middle - 1
            out.append(row(run[start:start + low]))
            start += low
        out.extend(run[start:])
    return out


def _row_bytes(members: list[Json]) -> int:
    return len(dumps(row(members)["data"]).encode("utf-8"))


def _malformed(tag: str, rule: str, why: str) -> SpecViolation:
    return SpecViolation(rule, Kind.ENVELOPE, f"malformed {tag} storage row: {why}")


def decode(record: Json, *, sqlite: bool = False) -> list[Json]:
    """The events a storage record stands for: a row expands, anything else passes through as itself."""
    if not isinstance(record, dict) or not is_row_tag(record.get("type")):
        return [record]
    tag: str = record["type"]
    # .1 The row envelope and payload keys are exactly those of its tag.
    if set(record) != {"type", "seq0", "time0", "data"}:
        raise _malformed(tag, ROW_SHAPE, f"envelope keys are {shown(sorted(record))}")
    seq0, time0, data = record["seq0"], record["time0"], record["data"]
    # .2 The first seq and time are safe integers.
    if not is_nonneg_safe_int(seq0):
        raise _malformed(tag, ROW_RANGE, f"seq0 {shown(seq0)} is not a non-negative safe integer")
    if not is_safe_int(time0):
        raise _malformed(tag, ROW_RANGE, f"time0 {shown(time0)} is not a safe integer")
    if not isinstance(data, dict):
        raise _malformed(tag, ROW_SHAPE, "data is not an object")
    keys = set(data)
    expected = {_TEXT_KEYS} if tag != TOOL_ROW else {_TOOL_KEYS, _TOOL_KEYS | {"name"}}
    if keys not in expected:
        raise _malformed(tag, ROW_SHAPE, f"data keys are {shown(sorted(keys))}")
    # .3 turn, step and index are numbers; a tool call's id and name are strings.
    for field in ("turn", "step", "index"):
        if not _number(data[field]):
            raise _malformed(tag, ROW_FIELDS, f"{field} is not a number")
    for field in ("id", "name"):
        if field in data and type(data[field]) is not str:
            raise _malformed(tag, ROW_FIELDS, f"{field} is not a string")
    field = "args" if tag == TOOL_ROW else "texts"
    texts, gaps = data[field], data["dt"]
    # .8 Bounded before anything is expanded: a row's members are events in memory.
    if isinstance(texts, list) and len(texts) > MAX_MEMBERS:
        raise _malformed(tag, ROW_MEMBERS, f"{len(texts)} members, more than {MAX_MEMBERS}")
    # .4 One string per member, one safe-integer gap between consecutive members.
    if not isinstance(texts, list) or not texts or not all(type(t) is str for t in texts):
        raise _malformed(tag, ROW_PAYLOAD, f"{field} is not a non-empty array of strings")
    if not isinstance(gaps, list) or not all(is_safe_int(g) for g in gaps):
        raise _malformed(tag, ROW_PAYLOAD, "dt is not an array of safe integers")
    if len(gaps) != len(texts) - 1:
        raise _malformed(tag, ROW_PAYLOAD, f"dt has {len(gaps)} gaps for {len(texts)} members")
    # .5 The SQLite codec holds 3 to 1,024 members (the core codec any positive number).
    if sqlite and not SQLITE_MIN_MEMBERS <= len(texts) <= SQLITE_MAX_MEMBERS:
        raise _malformed(tag, ROW_BOUNDS, f"{len(texts)} members, outside 3..1024")
    # .2 Every member's seq and time stays in the safe range.
    if not is_nonneg_safe_int(seq0 + len(texts) - 1):
        raise _malformed(tag, ROW_RANGE, "the last member seq leaves the safe-integer range")
    events: list[Json] = []
    time = time0
    for k, text in enumerate(texts):
        if k:
            time += gaps[k - 1]
            if not is_safe_int(time):
                raise _malformed(tag, ROW_RANGE, f"member {k} time leaves the safe-integer range")
        chunk: dict[str, Json] = {"type": _DELTA_OF[tag], "index": data["index"]}
        if tag == TOOL_ROW:
            chunk["id"] = data["id"]
            if "name" in data:
                chunk["name"] = data["name"]
            chunk["argumentsDelta"] = text
        else:
            chunk["text"] = text
        events.append({"type": CHUNK, "seq": seq0 + k, "time": time,
                       "data": {"turn": data["turn"], "step": data["step"], "chunk": chunk}})
    return events
