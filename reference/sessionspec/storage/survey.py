"""The stateless half of the checker's fast path: the runs of a parsed block it takes, and their surface events.

Why a half. Almost every condition the fast path puts on a stored record needs nothing but the
record: its keys and their types, its message shape, its sources lying below its own seq, a
packed row's members. Only three things need the log before it: that a run starts at the seq
the log expects, where a replace lands on the surface, and what a tool-result rewrite kept.
`survey` decides everything of the first kind for a whole block with no state at all, so it may
run in another process (`logcheck/workers.py`) while this one folds the block before it;
`Checker.fold` decides the rest, in log order. A check on one core runs both, one after the
other, on every block.

A run is `(start, end, first, next, ops)`: lines `start..end-1` of the block pass every
stateless condition, their seqs run contiguously from `first` to `next - 1` (a packed row
counts its members), and `ops` lists their surface events in order, consecutive appends as one
step `(seqs, [(type, data), ...], lines)` and each replace as `(line, seq, type, data, surfaceOp,
sourceEventSeqs)`; `data` is kept for tool/results only (a later rewrite of one is compared
with it). Runs are JSON values, so a survey made elsewhere arrives as it was made.
A line in no run is the exact path's: the reference functions read it and name what it breaks.

Every condition is conservative: it implies the reference's acceptance, never the other way
round. `survey` and `lean_row` are declared fast forms (`live.fastpath.implies`) of the reference
functions they imply; the message shape and the provenance of a surface event are decided by the
one fast form of each that `live` uses too (`message_shape_holds`, `sources_hold`).
`tests/test_fastpaths.py` holds each to its implication, and `tests/test_logcheck_checker.py`
breaks each condition against the exact path.
"""

from __future__ import annotations

from itertools import islice
from typing import Any, Final

from sessionspec.catalog import SURFACE_TYPES, TOOL_RESULT
from sessionspec.envelope import parse_event
from sessionspec.jsonvalue import MAX_SAFE_INTEGER, is_nonneg_safe_int
from sessionspec.legacy import may_upgrade, upgrade
from sessionspec.live.fastpath import implies, message_shape_holds, rule_ids, sources_hold
from sessionspec.shapes import check_content
from sessionspec.storage.chunkrows import MAX_MEMBERS, ROW_TAGS, decode

_INT: Final = frozenset({int})
_TURNS: Final = frozenset({"turn/start", "turn/end"})
"""The log-only types with a legacy shape (SESSION-LEGACY-UPGRADE.1-.2): `may_upgrade` decides if one needs the exact path."""
_LOW: Final = -MAX_SAFE_INTEGER

Run = tuple[int, int, int, int, list[Any]]
"""(start, end, first, next, ops): see the module docstring."""


@implies(reference=decode, rules=(*rule_ids("SESSION-CHUNK-ROWS", 1, 5), "SESSION-CHUNK-ROWS.8"))
def lean_row(row: Any, kind: str) -> int:
    """The member count of a row that `chunkrows.decode` certainly accepts, or 0 to let it decide.

    `kind` is the row's `type`, a row tag. Conservative: every condition here implies one of
    decode's, so a row this accepts expands to `count` well-formed assistant/chunk events with
    seqs seq0.. and safe-integer times (a JSONL row has no member bounds: .5 is SQLite's). Keys
    are exact when a dict's length equals the number of its keys the lookups found; a failed
    lookup (KeyError, or TypeError where a list or string stands for an object) means 0.
    """
    try:
        data, time0, seq0 = row["data"], row["time0"], row["seq0"]
        if len(row) != 4 or "type" not in row or type(time0) is not int or type(seq0) is not int or seq0 < 0:
            return 0
        size = len(data)
        if kind == "tool-call-chunks":
            # turn, step, index, id, dt, args, and perhaps name (strings both).
            if not (size == 6 or (size == 7 and type(data["name"]) is str)) or type(data["id"]) is not str:
                return 0
            texts = data["args"]
        else:
            # turn, step, index, dt, texts.
            if size != 5:
                return 0
            texts = data["texts"]
        gaps = data["dt"]
        if (type(texts) is not list or type(gaps) is not list or len(gaps) + 1 != len(texts) or len(texts) > MAX_MEMBERS
                or type(data["turn"]) is not int or type(data["step"]) is not int or type(data["index"]) is not int
                or not set(map(type, gaps)) <= _INT
                or abs(time0) + sum(map(abs, gaps)) > MAX_SAFE_INTEGER or seq0 + len(texts) > MAX_SAFE_INTEGER):
            return 0
        "".join(texts)  # one string per member: TypeError on anything else (orjson makes no str subclass)
    except (KeyError, TypeError):
        return 0
    return len(texts)


@implies(reference=(parse_event, upgrade, check_content),
         rules=(*rule_ids("SESSION-LEGACY-UPGRADE", 1, 4), "SESSION-LEGACY-UPGRADE.6", "SESSION-EVENT-ENVELOPE.1", "SESSION-EVENT-ENVELOPE.2", *rule_ids("SESSION-EVENT-ENVELOPE", 4, 8),
                *rule_ids("SESSION-CORE-EVENTS", 1, 2), *rule_ids("SESSION-SURFACE-PROJECTION", 1, 4),
                *rule_ids("SESSION-SURFACE-PROVENANCE", 1, 5), *rule_ids("SESSION-MESSAGE-SHAPE", 1, 9),
                *rule_ids("SESSION-REQUEST-HEADER", 1, 4), "SESSION-UNKNOWN-EVENT-GATE.1"),
         assumes=(*rule_ids("SESSION-LOSSLESS-JSON", 1, 6), "SESSION-EVENT-ENVELOPE.3", "SESSION-STORAGE-SEQ.1"))
def survey(values: list[Any], plain: frozenset[str], rows: bool) -> list[Run]:
    """The runs of `values` (one parsed, canonical block) that the fast path takes; see the module docstring.

    `plain` is the log-only types a record may have with nothing but the four envelope keys
    (the catalog's, less what needs the exact path); `rows` whether packed chunk rows expand.
    Every record of a run passes `parse_event` and `check_content`, and its type is in the
    catalog, given what the callers establish: the values are lossless JSON (the block parse
    proved their text canonical), and the fold takes a run only where its first seq is the one
    the log expects, so its seqs continue the log (SESSION-STORAGE-SEQ.1) and are non-negative
    safe integers (SESSION-EVENT-ENVELOPE.3).

    The conditions are spelled for speed: a record's keys are exactly those its lookups find
    when their number is the record's length; a lookup that fails (KeyError, or TypeError on a
    list or string where an object was) ends the run at that record, before anything of it is
    recorded. The values come from `orjson.loads`, so they are exact builtins: a role equal to
    "user" is that string, `type(x) is int` excludes bool and float.
    """
    runs: list[Run] = []
    count = len(values)
    at = 0
    while at < count:
        head = values[at]
        first = (head["seq"] if "seq" in head else head.get("seq0")) if type(head) is dict else None
        if type(first) is not int:
            at += 1  # a line for the exact path
            continue
        start, nxt = at, first
        ops: list[Any] = []
        appended: tuple[list[int], list[tuple[str, Any]], list[int]] | None = None
        try:
            for record in islice(values, at, None) if at else values:
                if type(record) is not dict:
                    break
                kind = record["type"]
                size = len(record)
                if size == 4 and kind in plain:
                    # type, seq, time, data and nothing else; a legacy turn shape is the upgrade's to judge.
                    seq, time = record["seq"], record["time"]
                    if (seq != nxt or type(seq) is not int or type(time) is not int or not _LOW <= time <= MAX_SAFE_INTEGER
                            or "data" not in record or (kind in _TURNS and may_upgrade(kind, record["data"]))):
                        break
                    nxt += 1
                elif size == 5 or size == 6:
                    # type, seq, time, data, surfaceOp, and perhaps sourceEventSeqs.
                    seq, time, data, op = record["seq"], record["time"], record["data"], record["surfaceOp"]
                    sources = record["sourceEventSeqs"] if size == 6 else None
                    if (kind not in SURFACE_TYPES or seq != nxt or type(seq) is not int or type(time) is not int
                            or not _LOW <= time <= MAX_SAFE_INTEGER):
                        break
                    if not (message_shape_holds(kind, data) and (size == 5 or sources_hold(kind, seq, sources))):
                        break
                    if op == "append":
                        if not appended:
                            appended = ([], [], [])
                            ops.append(appended)
                        appended[0].append(seq)
                        appended[1].append((kind, data if kind == TOOL_RESULT else None))
                        appended[2].append(at)
                    elif (type(op) is dict and len(op) == 3 and op["op"] == "replace" and type(op["op"]) is str
                          and is_nonneg_safe_int(op["start"]) and is_nonneg_safe_int(op["end"])):
                        # A replace marker (SESSION-SURFACE-PROJECTION.4); the fold places it on the surface.
                        ops.append((at, seq, kind, data if kind == TOOL_RESULT else None, op, sources))
                        appended = None
                    else:
                        break
                    nxt += 1
                elif rows and size == 4 and kind in ROW_TAGS and record["seq0"] == nxt:
                    members = lean_row(record, kind)
                    if not members:
                        break
                    nxt += members
                else:
                    break
                at += 1
        except (KeyError, TypeError):
            pass
        if at > start:
            runs.append((start, at, first, nxt, ops))
        at += 1  # the record that ended the run is the exact path's
    return runs


__all__ = ["Run", "lean_row", "survey"]
