"""Stored logs of each backend, built byte for byte: a small agent log, then one thing wrong with it.

The storage vectors (and the storage tests, through tests/hostile.py) are made the way a writer
or a dying disk makes a log: the project's own writer (`sessionspec.storage.save`) for a valid
SQLite log, this module's line and frame writers for JSONL and zstd (so a fault can be put in any
byte), then a fault. Every time in an event is fixed (`1000 + seq`), and a SQLite file's random
identities (the store id, the session's incarnation) are set to fixed ones, so a log built twice
is the same bytes (`sessionspec vectors check` regenerates and compares).
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from pathlib import Path
from typing import Any, Final

import zstandard

from sessionspec import storage
from sessionspec.jsontext import dumps
from sessionspec.storage.chunkrows import pack

HEADER: Final = {"type": "session", "version": 0, "id": "h", "createdAt": 1, "delegationDepth": 0}
FIXED_ID: Final = "00000000-0000-4000-8000-000000000000"
"""What a SQLite file's store id and a session's incarnation (random UUIDs when written) are set to."""


def _message(message_id: str, role: str, source: dict[str, Any], content: list[Any]) -> dict[str, Any]:
    return {"id": message_id, "role": role, "source": source, "content": content}


def turn_events(turn: int, seq: int, *, closed: bool = True) -> list[dict[str, Any]]:
    """One agent turn from `seq`: a user message, streamed chunks, a tool call and its result (closed: and the ends)."""
    out: list[dict[str, Any]] = []

    def add(kind: str, data: Any, **extra: Any) -> int:
        out.append({"type": kind, "seq": seq + len(out), "time": 1000 + seq + len(out), "data": data, **extra})
        return seq + len(out) - 1

    add("turn/start", {"turn": turn})
    add("user/message", _message(f"u{turn}", "user", {"kind": "user"}, [{"type": "text", "text": f"question {turn}"}]),
        surfaceOp="append")
    add("step/start", {"turn": turn, "step": 1})
    chunks = [add("assistant/chunk", {"turn": turn, "step": 1, "chunk": {"type": "text-delta", "index": 0, "text": t}})
              for t in ("Let ", "me ", "look", ".")]
    call = {"type": "tool-call", "id": f"c{turn}", "name": "read", "arguments": '{"path":"a"}'}
    add("assistant/message", {"turn": turn, "step": 1, "message": _message(
        f"a{turn}", "assistant", {"kind": "model", "provider": "p", "model": "m"},
        [{"type": "text", "text": "Let me look."}, call])}, sourceEventSeqs=chunks, surfaceOp="append")
    called = add("tool/call", {"turn": turn, "step": 1, "callId": f"c{turn}", "name": "read", "arguments": '{"path":"a"}'})
    if not closed:
        return out
    block = {"type": "tool-result", "toolCallId": f"c{turn}", "content": [{"type": "text", "text": "contents"}]}
    add("tool/result", {"turn": turn, "step": 1, "message": _message(f"r{turn}", "user", {"kind": "tool", "callId": f"c{turn}"},
                                                                     [block])}, sourceEventSeqs=[called], surfaceOp="append")
    add("step/end", {"turn": turn, "step": 1})
    add("turn/end", {"turn": turn, "reason": {"kind": "completed"}})
    return out


def agent_log(turns: int = 2, *, open_tail: bool = False) -> list[list[dict[str, Any]]]:
    """Batches (one a turn) of a valid log; with `open_tail`, the last turn never ends (a crash: closers to add)."""
    batches, seq = [], 0
    for turn in range(1, turns + 1):
        batch = turn_events(turn, seq, closed=not (open_tail and turn == turns))
        batches.append(batch)
        seq += len(batch)
    return batches


def lines_of(batch: list[dict[str, Any]]) -> list[bytes]:
    """A batch's records as the writers store them: runs of chunks packed (SESSION-CHUNK-ROWS.6), canonical text."""
    return [dumps(record).encode() for record in pack(batch)]


def write_jsonl(path: Path, batches: list[list[bytes]], header: bytes | None = None) -> Path:
    head = header if header is not None else dumps(HEADER).encode()
    path.write_bytes(b"".join(line + b"\n" for line in [head] + [line for batch in batches for line in batch]))
    return path


def frame(plain: bytes) -> bytes:
    """One zstd frame as the upstream writes one: checksummed, its content size given."""
    return zstandard.ZstdCompressor(level=3, write_checksum=True, write_content_size=True).compress(plain)


def write_zstd(path: Path, batches: list[list[bytes]], header: bytes | None = None) -> Path:
    """The header line alone in the first frame, then a frame per batch (SESSION-ZSTD-FRAMES.2)."""
    head = header if header is not None else dumps(HEADER).encode()
    frames = [frame(head + b"\n")] + [frame(b"".join(line + b"\n" for line in batch)) for batch in batches if batch]
    path.write_bytes(b"".join(frames))
    return path


def write_sqlite(path: Path, batches: list[list[dict[str, Any]]], *, fixed: bool = False) -> Path:
    """A SQLite log of `batches` by our own writer (a batch a transaction); `fixed`: its random identities fixed."""
    log = storage.save(path, {k: v for k, v in HEADER.items() if k not in ("type", "delegationDepth")}, batches[0])
    for batch in batches[1:]:
        log.append(batch)
    if fixed:
        edit_sqlite(path, "UPDATE persistence_state SET store_id = ?", (FIXED_ID,))
        edit_sqlite(path, "UPDATE sessions SET incarnation = ?", (FIXED_ID,))
    return path


def edit_sqlite(path: Path, statement: str, parameters: tuple[Any, ...] = ()) -> Path:
    """One statement run on a SQLite file and committed, then the file rewritten whole (VACUUM), its WAL folded in:
    the same edits of the same log give the same bytes."""
    with contextlib.closing(sqlite3.connect(path)) as connection:
        connection.execute(statement, parameters)
        connection.commit()
        connection.execute("VACUUM")
    return path


def write_raw(path: Path, fmt: str, batches: list[list[dict[str, Any]]], raw: dict[int, bytes]) -> Path:
    """The log of `batches`, the record of each seq in `raw` replaced by those bytes (JSONL, zstd) or that data (SQLite)."""
    if fmt == "sqlite":
        write_sqlite(path, batches)
        with contextlib.closing(sqlite3.connect(path)) as connection:
            for seq, text in raw.items():
                connection.execute("UPDATE events SET data = CAST(? AS TEXT) WHERE seq = ?", (text, seq))
            connection.commit()
        return path
    records = [[line if json.loads(line).get("seq") not in raw else raw_record(json.loads(line), raw[json.loads(line)["seq"]])
                for line in lines_of(batch)] for batch in batches]
    return (write_jsonl if fmt == "jsonl" else write_zstd)(path, records)


def raw_record(record: dict[str, Any], data: bytes) -> bytes:
    """A record's line with `data` as the given bytes, whatever they are."""
    head = dumps({k: v for k, v in record.items() if k in ("type", "seq", "time")}).encode()[:-1]
    tail = b',"ignorable":true}' if record.get("ignorable") else b"}"
    return head + b',"data":' + data + tail
