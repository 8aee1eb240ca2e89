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

Every condition is conservative: it implies the reference's acceptance (SESSION-ENVELOPE-*,
SESSION-MESSAGE-SHAPE, SESSION-SURFACE-PROVENANCE.1-.5, the packed-row rules), never the
other way round, and `tests/test_logcheck_checker.py` breaks each one against the exact path.
"""

from __future__ import annotations

from itertools import islice
from operator import lt
from typing import Any, Final

from sessionspec.catalog import ASSISTANT_MESSAGE, SURFACE_TYPES, TOOL_RESULT, USER_MESSAGE
from sessionspec.jsonvalue import MAX_SAFE_INTEGER
from sessionspec.storage.chunkrows import MAX_MEMBERS, ROW_TAGS

_INT: Final = frozenset({int})
_LOW: Final = -MAX_SAFE_INTEGER

Run = tuple[int, int, int, int, list[Any]]
"""(start, end, first, next, ops): see the module docstring."""


def lean_row(row: Any, kind: str, seq0: int) -> int:
    """The member count of a row that `chunkrows.decode` certainly accepts, or 0 to let it decide.

    Conservative: every condition here implies one of decode's, so a row this accepts expands
    to `count` well-formed assistant/chunk events with seqs seq0.. and safe-integer times. Keys
    are exact when a dict's length equals the number of its keys the lookups found; a failed
    lookup (KeyError, or TypeError where a list or string stands for an object) means 0.
    """
    try:
        data, time0 = row["data"], row["time0"]
        if len(row) != 4 or "type" not in row or "seq0" not in row or type(time0) is not int:
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


def survey(values: list[Any], plain: frozenset[str], rows: bool) -> list[Run]:
    """The runs of `values` (one parsed, canonical block) that the fast path takes; see the module docstring.

    `plain` is the log-only types a record may have with nothing but the four envelope keys
    (the catalog's, less what needs the exact path); `rows` whether packed chunk rows expand.

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
                    # type, seq, time, data and nothing else.
                    seq, time = record["seq"], record["time"]
                    if (seq != nxt or type(seq) is not int or type(time) is not int or not _LOW <= time <= MAX_SAFE_INTEGER
                            or "data" not in record):
                        break
                    nxt += 1
                elif size == 5 or size == 6:
                    # type, seq, time, data, surfaceOp, and perhaps sourceEventSeqs.
                    seq, time, data, op = record["seq"], record["time"], record["data"], record["surfaceOp"]
                    sources = record["sourceEventSeqs"] if size == 6 else None
                    if (kind not in SURFACE_TYPES or seq != nxt or type(seq) is not int or type(time) is not int
                            or not _LOW <= time <= MAX_SAFE_INTEGER):
                        break
                    # SESSION-MESSAGE-SHAPE, as `checker._fast_message` decides it.
                    message = data if kind == USER_MESSAGE else data["message"]
                    ident, role, source, content = message["id"], message["role"], message["source"], message["content"]
                    if type(ident) is not str or not ident or type(source) is not dict or type(content) is not list:
                        break
                    source_kind = source["kind"]
                    if kind == ASSISTANT_MESSAGE:
                        provider, model = source["provider"], source["model"]
                        if (role != "assistant" or source_kind != "model" or type(provider) is not str or not provider
                                or type(model) is not str or not model):
                            break
                    elif role != "user" or type(source_kind) is not str or not source_kind:
                        break
                    elif kind == TOOL_RESULT:
                        call_id = source["callId"]
                        if source_kind != "tool" or type(call_id) is not str or not call_id or len(content) != 1:
                            break
                        block = content[0]
                        if (type(block) is not dict or block["type"] != "tool-result" or type(block["content"]) is not list
                                or block["toolCallId"] != call_id):
                            break
                    # SESSION-SURFACE-PROVENANCE.1-.5.
                    if size == 6:
                        if type(sources) is not list:
                            break
                        if len(sources) == 1:
                            if type(sources[0]) is not int or not 0 <= sources[0] < seq:
                                break
                        elif sources:
                            low = sources[0]
                            if (type(low) is int and low > 1 and sources == list(range(low, low + len(sources)))
                                    and type(sum(sources)) is int):
                                # The usual chunk run: equal to ints above 1 (so no bool), an int sum (so no
                                # float), distinct, from the first to the last.
                                if low + len(sources) > seq:
                                    break
                            elif set(map(type, sources)) != _INT:
                                break
                            elif all(map(lt, sources, islice(sources, 1, None))):
                                # Ascending ints are distinct, from the first to the last.
                                if low < 0 or sources[-1] >= seq:
                                    break
                            elif min(sources) < 0 or max(sources) >= seq or len(set(sources)) != len(sources):
                                break
                        elif kind != ASSISTANT_MESSAGE:
                            break
                    if op == "append":
                        if not appended:
                            appended = ([], [], [])
                            ops.append(appended)
                        appended[0].append(seq)
                        appended[1].append((kind, data if kind == TOOL_RESULT else None))
                        appended[2].append(at)
                    elif type(op) is dict:
                        # A replace is the fold's to place; here only its form, an object.
                        ops.append((at, seq, kind, data if kind == TOOL_RESULT else None, op, sources))
                        appended = None
                    else:
                        break
                    nxt += 1
                elif rows and size == 4 and kind in ROW_TAGS and record["seq0"] == nxt and type(record["seq0"]) is int:
                    members = lean_row(record, kind, nxt)
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
