"""The storage vectors at spec/07's bounds: each bound's number, stated here as spec/07 states it (never read from the
code under test), and the builders of logs at a bound and one past it.

Apart from `faults` (one fault each of a small log) because these logs are made by size: a record of 64 MiB, a row
of 65,536 members, a frame of 65,536 records, a few hundred bytes that decode to a file's whole budget. Those too
large to commit are the runner's generators (`cases.GENERATORS`).
"""

from __future__ import annotations

import contextlib
import io
import sqlite3
from pathlib import Path
from typing import Final

import zstandard

from sessionspec.conformance.storagevectors.builders import (
    agent_log,
    edit_sqlite,
    frame,
    lines_of,
    write_sqlite,
    write_zstd,
)
from sessionspec.conformance.storagevectors.faults import clean, text_log
from sessionspec.jsontext import dumps

RECORD_BOUND: Final = 64 << 20
"""SESSION-STORAGE-RECORD.1: 64 MiB (spec/07)."""
SQLITE_ROW_MEMBERS: Final = 1_024
"""SESSION-CHUNK-ROWS.5: a SQLite row holds at most 1,024 members (spec/07)."""
ROW_MEMBERS: Final = 65_536
"""SESSION-CHUNK-ROWS.8: a packed row holds at most 65,536 members (spec/07)."""
RECORDS_FLOOR: Final = 65_536
"""SESSION-STORAGE-RECORD.3: a compressed file may decode to at least 65,536 records, however small (spec/07)."""
FRAME_RECORDS: Final = 65_536
"""SESSION-ZSTD-FRAMES.5: a frame decodes to at most 65,536 records (spec/07)."""
PLAINTEXT_LINE: Final = 36 << 20
"""Eight lines of 36 MiB: 288 MiB, past the 256 MiB of plaintext a small compressed log may decode to
(SESSION-STORAGE-RECORD.3), each line within 64 MiB and each frame of four within 256 MiB (spec/07)."""
RECORD_PAD: Final = 1 << 20
"""The JSON whitespace in a record at the bound, so that a load's answer, which carries the event without it, fits an
answer line (64 MiB, SESSION-CONFORMANCE-PROTOCOL.7)."""
TRAIL: Final = 256 << 10
"""The spaces after a record's JSON value that carry its line past the bound: two zstd blocks' worth (128 KiB each), so
a reader that reads a line in pieces has pieces to read past the bound."""

def row_at(path: Path, members: int, *, sqlite_row: bool = False) -> Path:
    """A turn holding one packed text row of `members` members, then its committed end, so a row refused is
    corruption rather than a torn tail (SESSION-CHUNK-ROWS.5/.8, at and past a bound)."""
    batch = agent_log(1, open_tail=True)[0][:3]  # turn/start, user/message, step/start
    row = {"type": "text-chunks", "seq0": 3, "time0": 2000,
           "data": {"turn": 1, "step": 1, "index": 0, "dt": [1] * (members - 1), "texts": ["a"] * members}}
    seq = 3 + members
    ends = [{"type": "step/end", "seq": seq, "time": 3000, "data": {"turn": 1, "step": 1}},
            {"type": "turn/end", "seq": seq + 1, "time": 3001, "data": {"turn": 1, "reason": {"kind": "completed"}}}]
    if sqlite_row:
        write_sqlite(path, [batch], fixed=True)
        edit_sqlite(path, "INSERT INTO events VALUES ('h', 3, 'text-chunks', 2000, ?, NULL, NULL, 0)",
                    (dumps(row["data"]),))
        for end in ends:
            edit_sqlite(path, "INSERT INTO events VALUES ('h', ?, ?, ?, ?, NULL, NULL, NULL)",
                        (end["seq"], end["type"], end["time"], dumps(end["data"])))
        return path
    return text_log(path, [lines_of(batch), [dumps(row).encode()], lines_of(ends)])


def expanding_frames(path: Path, frames: int, per_frame: int) -> Path:
    """An open turn, then `frames` identical frames of `per_frame` `"turn/end"` lines: a few hundred bytes that decode
    to more records than SESSION-STORAGE-RECORD.3 allows."""
    write_zstd(path, [lines_of(agent_log(1, open_tail=True)[0])])
    one = zstandard.ZstdCompressor(level=19, write_checksum=True).compress(b'"turn/end"\n' * per_frame)
    with path.open("ab") as stream:
        stream.write(one * frames)
    return path


def plaintext_bomb(path: Path, frames: int, lines: int, size: int) -> Path:
    """The closed one-turn log, then `frames` identical frames of `lines` lines of `size` bytes of `x` (no JSON: a torn
    tail, each frame and line within its own bound): a few KB that decode to more plaintext than SESSION-STORAGE-RECORD.3
    allows a small file, 256 MiB."""
    write_zstd(path, [lines_of(agent_log(1)[0])])
    line = b"x" * (size - 1) + b"\n"
    plain = io.BytesIO()
    with zstandard.ZstdCompressor(level=3, write_checksum=True).stream_writer(plain, size=size * lines,
                                                                              closefd=False) as writer:
        for _ in range(lines):
            writer.write(line)
    with path.open("ab") as stream:
        stream.write(plain.getvalue() * frames)
    return path


def budget_rows(path: Path, rows: int, members: int) -> Path:
    """SESSION-STORAGE-RECORD.3: an open turn, then one frame of `rows` packed rows of `members` one-letter texts each
    (nothing after them: a load that did not count the members would close the turn): a few hundred bytes of zstd whose
    rows expand to as many records as a small file's budget allows, 65,536 (the header line, the turn's three records
    and 65,532 members), or more, each row within SESSION-CHUNK-ROWS.8."""
    head = agent_log(1, open_tail=True)[0][:3]  # turn/start, user/message, step/start
    packed = [{"type": "text-chunks", "seq0": 3 + k * members, "time0": 2000,
               "data": {"turn": 1, "step": 1, "index": 0, "dt": [0] * (members - 1), "texts": ["a"] * members}}
              for k in range(rows)]
    return write_zstd(path, [lines_of(head), [dumps(row).encode() for row in packed]])


def sqlite_budget_rows(path: Path, rows: int) -> Path:
    """SESSION-STORAGE-RECORD.3 in SQLite: an open turn, then `rows` packed rows of 1,024 one-letter texts each (the
    most a SQLite row holds, SESSION-CHUNK-ROWS.5), each row's data a zstd BLOB of a few dozen bytes (SESSION-SQLITE-
    ROW.2): a file of tens of KB whose rows expand to more records than its budget, 65,536."""
    members = 1_024
    write_sqlite(path, [agent_log(1, open_tail=True)[0][:3]], fixed=True)  # turn/start, user/message, step/start
    with contextlib.closing(sqlite3.connect(path)) as connection:
        for k in range(rows):
            data = dumps({"turn": 1, "step": 1, "index": 0, "dt": [0] * (members - 1), "texts": ["a"] * members})
            connection.execute("INSERT INTO events VALUES ('h', ?, 'text-chunks', 2000, ?, NULL, NULL, 0)",
                               (3 + k * members, frame(data.encode())))
        connection.commit()
        connection.execute("VACUUM")
    return path


def large_blob(path: Path, seq: int, size: int) -> Path:
    """SESSION-STORAGE-RECORD.1: the closed SQLite log, the data of the row at `seq` a zstd BLOB (SESSION-SQLITE-ROW.2)
    of a JSON string `size` bytes long: a few KB that a reader must stop decoding at the bound, 64 MiB."""
    clean(path)
    blob = frame(b'"' + b"a" * (size - 2) + b'"')
    return edit_sqlite(path, "UPDATE events SET data = ? WHERE seq = ?", (blob, seq))


def many_records(path: Path, records: int) -> Path:
    """A frame of exactly `records` records (SESSION-ZSTD-FRAMES.5's count): a turn of ignorable events between its
    start and its committed end, so a frame refused is corruption rather than a torn tail."""
    extra = [{"type": "plugin/note", "seq": 1 + k, "time": 1001, "data": None, "ignorable": True}
             for k in range(records - 2)]
    ends = [{"type": "turn/start", "seq": 0, "time": 1000, "data": {"turn": 1}}, *extra,
            {"type": "turn/end", "seq": records - 1, "time": 1002, "data": {"turn": 1, "reason": {"kind": "completed"}}}]
    return text_log(path, [[dumps(record).encode() for record in ends]])


def long_record(path: Path, size: int, pad: int = 0, trail: int = 0) -> Path:
    """A closed turn, then an ignorable event whose line is exactly `size` bytes (SESSION-STORAGE-RECORD.1), `pad` of
    them JSON whitespace before its closing brace and `trail` after it. The bound measures the line: a load's answer
    carries the event without its whitespace, so the answer to a log with a record at the bound still fits an answer
    line (64 MiB, spec/10); and a line past the bound is refused even where the JSON value in it ends within it."""
    head = b'{"type":"plugin/note","seq":12,"time":1012,"data":"'
    tail = b'","ignorable":true' + b" " * pad + b"}"
    line = head + b"a" * (size - trail - len(head) - len(tail)) + tail + b" " * trail
    return text_log(path, [lines_of(agent_log(1)[0]), [line]])


