"""The faults a stored log can carry, one function each: a valid log of a backend, then one thing wrong with it.

Each builder writes the log at `path` (its suffix names the backend) and returns it. The log is
`builders.agent_log`: two turns of twelve events (seqs 0-11 and 12-23), or, with an open tail,
a second turn that stops after its tool call (seq 20). A fault "in the middle" is put at seq 2
(a committed `turn/end` follows: corruption, SESSION-TORN-TAIL.2); one "at the tail" at seq 20 of
the open log (nothing follows: a torn tail, SESSION-TORN-TAIL.3).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import zstandard

from sessionspec.conformance.storagevectors.builders import (
    FIXED_ID,
    HEADER,
    agent_log,
    edit_sqlite,
    frame,
    lines_of,
    turn_events,
    write_jsonl,
    write_sqlite,
    write_zstd,
)
from sessionspec.jsontext import dumps

MIDDLE: Final = 2
TAIL: Final = 20
Edit = Callable[[dict[str, Any]], bytes | None]
"""What a fault does to one stored record (a dict as stored: an event, or a packed row): its new line, or None to drop
it."""


def backend_of(path: Path) -> str:
    name = path.name
    return "jsonl.zstd" if name.endswith(".jsonl.zstd") else "sqlite" if name.endswith(".sqlite") else "jsonl"


def header_line(**changes: Any) -> bytes:
    """The JSONL header with `changes` (a value None removes its key)."""
    header = {**HEADER, **changes}
    return dumps({k: v for k, v in header.items() if v is not None}).encode()


def clean(path: Path, *, open_tail: bool = False, turns: int = 2) -> Path:
    """A valid log (chunks packed, as the writers pack them)."""
    batches = agent_log(turns, open_tail=open_tail)
    if backend_of(path) == "sqlite":
        return write_sqlite(path, batches, fixed=True)
    return text_log(path, [lines_of(batch) for batch in batches])


def unnamed(path: Path, suffix: str) -> Path:
    """The clean log of the backend `suffix` names, at `path`, whose name no backend claims (`.log`): a reader tells
    the backend by the file's first bytes (the magic bytes, else JSON text), as spec/07 chooses a format."""
    return clean(path.with_name(path.name + suffix)).rename(path)


def text_log(path: Path, batches: list[list[bytes]], header: bytes | None = None) -> Path:
    return (write_zstd if backend_of(path) == "jsonl.zstd" else write_jsonl)(path, batches, header)


def _seq(record: dict[str, Any]) -> Any:
    return record.get("seq", record.get("seq0"))


def edited(path: Path, seq: int, edit: Edit, *, open_tail: bool = False, header: bytes | None = None) -> Path:
    """A JSONL or zstd log whose record at `seq` (an event's seq, a row's seq0) is what `edit` makes of it."""
    out = []
    for batch in agent_log(2, open_tail=open_tail):
        lines = []
        for line in lines_of(batch):
            record = json.loads(line)
            new = edit(record) if _seq(record) == seq else line
            if new is not None:
                lines.append(new)
        out.append(lines)
    return text_log(path, out, header)


def with_header(path: Path, header: bytes) -> Path:
    """A JSONL or zstd log under another header line."""
    return edited(path, -1, lambda record: None, header=header)


def sql(*statements: str, open_tail: bool = False) -> Callable[[Path], Path]:
    """A builder: a SQLite log by our writer, then `statements` run on it, each committed."""
    def build(path: Path) -> Path:
        clean(path, open_tail=open_tail)
        for statement in statements:
            edit_sqlite(path, statement)
        return path
    return build


def replace_data(text: bytes) -> Callable[[dict[str, Any]], bytes]:
    """The record's data replaced by `text`, whatever bytes it is."""
    def edit(record: dict[str, Any]) -> bytes:
        head = dumps({k: v for k, v in record.items() if k in ("type", "seq", "time")}).encode()[:-1]
        return head + b',"data":' + text + b"}"
    return edit


def changed(**changes: Any) -> Edit:
    """The record with keys changed (at the top, or in `data` for a key given as `data.KEY`)."""
    def edit(record: dict[str, Any]) -> bytes:
        out = json.loads(json.dumps(record))
        for key, value in changes.items():
            if key.startswith("data_"):
                out["data"][key.removeprefix("data_")] = value
            else:
                out[key] = value
        return dumps(out).encode()
    return edit


def without_turns(path: Path, record: dict[str, Any]) -> Path:
    """A JSONL or zstd log of a user message (seq 0) and then `record` (seq 1), and no turn record at all: a reader
    that takes runs of records on trust and leaves turn records to a slower path (ours: `storage.storedlog`) reads
    every record of this log on trust, so it must refuse what is wrong with `record` there too."""
    message = {**turn_events(1, 0)[1], "seq": 0, "time": 1000}
    return text_log(path, [[dumps(message).encode(), dumps({**record, "seq": 1, "time": 1001}).encode()]])


def replace_from_ignorable(path: Path) -> Path:
    """SESSION-SURFACE-REPLACE.1: a user message (seq 0), an ignorable note (seq 1, never on the surface), then a user
    message that replaces the range from the note, naming it as its source: refused, its start not on the surface. A
    reader that reads the note by a slower path than the messages must still keep it off the surface it replaces on."""
    message = turn_events(1, 0)[1]
    records = [{**message, "seq": 0, "time": 1000},
               {"type": "plugin/note", "seq": 1, "time": 1001, "data": None, "ignorable": True},
               {**message, "seq": 2, "time": 1002, "surfaceOp": {"op": "replace", "start": 1, "end": 1},
                "sourceEventSeqs": [1]}]
    return text_log(path, [[dumps(record).encode() for record in records]])


def pruned_twice(path: Path) -> Path:
    """The closed log, then a turn that prunes the first turn's tool result (seq 9) and then prunes that rewrite: each
    rewrite keeps what a rewrite of the result it shadows must keep (SESSION-SURFACE-TOOL-RESULT.3), so the log loads;
    a reader must judge the second against the first rewrite's data, not the original's, nor lose it."""
    batches = agent_log(2)
    result = batches[0][9]
    turn = [{"type": "turn/start", "seq": 24, "time": 1024, "data": {"turn": 3}}]
    target = result["seq"]
    for seq, note in ((25, "[pruned]"), (26, "[pruned again]")):
        data = json.loads(json.dumps(result["data"]))
        data["message"]["content"][0]["content"] = [{"type": "text", "text": note}]
        turn.append({"type": "tool/result", "seq": seq, "time": 1000 + seq, "data": data, "sourceEventSeqs": [target],
                     "surfaceOp": {"op": "replace", "start": target, "end": target}})
        target = seq
    turn.append({"type": "turn/end", "seq": 27, "time": 1027, "data": {"turn": 3, "reason": {"kind": "completed"}}})
    return text_log(path, [lines_of(batch) for batch in [*batches, turn]])


def escaped_turn_ends(path: Path) -> Path:
    """SESSION-TORN-TAIL.2: the closed log with unparsable data at seq 2, each later `turn/end` spelled `turn\\/end` (the
    same string, by a JSON escape): a reader that looks for the literal name to find a committed turn/end after a
    defect, and passes over the text without it, must still read every text with an escape."""
    def escaped(record: dict[str, Any]) -> bytes:
        return dumps(record).encode().replace(b'"type":"turn/end"', b'"type":"turn\\/end"')

    out = []
    for batch in agent_log(2):
        lines = []
        for line in lines_of(batch):
            record = json.loads(line)
            lines.append(replace_data(b"{not json")(record) if _seq(record) == MIDDLE
                         else escaped(record) if record["type"] == "turn/end" else line)
        out.append(lines)
    return text_log(path, out)


def torn_frames(path: Path) -> Path:
    """SESSION-TORN-TAIL.3 across frames: the open log with unparsable data at seq 20, its last record, then one more
    whole frame of records with no turn/end: the torn tail runs from seq 20 to the end of the file, that frame with it
    (a reader may pass over a frame that cannot hold a turn/end, but not lose track of it)."""
    batches = [lines_of(batch) for batch in agent_log(2, open_tail=True)]
    batches[-1][-1] = replace_data(b"{not json")(json.loads(batches[-1][-1]))
    more = {"type": "assistant/chunk", "seq": 21, "time": 1021,
            "data": {"turn": 2, "step": 1, "chunk": {"type": "text-delta", "index": 0, "text": "late"}}}
    return write_zstd(path, [*batches, [dumps(more).encode()]])


def padded_header(path: Path, size: int) -> Path:
    """SESSION-STORAGE-RECORD.1: the valid log under a header line of `size` bytes, its header padded with spaces (JSON
    whitespace), as a writer pads a header it means to rewrite in place: a reader that reads a line in pieces (ours
    in 1 MiB ones) must join them before it judges the line."""
    head = header_line()
    return with_header(path, head + b" " * (size - len(head)))


def long_open_turn(path: Path, question: int) -> Path:
    """SESSION-STORAGE-LOAD.2: the open log, its last turn's question `question` bytes of text: the open turn/start
    lies further before the end of the file than a look at its last bytes reaches."""
    batches = agent_log(2, open_tail=True)
    batches[1][1]["data"]["content"][0]["text"] = "Q" * question
    return text_log(path, [lines_of(batch) for batch in batches])


def torn_line(path: Path) -> Path:
    """SESSION-TORN-TAIL.1: the open log's last record without its newline, cut halfway."""
    clean(path, open_tail=True)
    data = path.read_bytes()
    last = data.rstrip(b"\n").rfind(b"\n")
    path.write_bytes(data[: last + 1 + (len(data) - last) // 2])
    return path


def torn_frame(path: Path) -> Path:
    """SESSION-ZSTD-FRAMES.4: a final frame cut at 60%: its complete records are recovered."""
    batches = [lines_of(batch) for batch in agent_log(2, open_tail=True)]
    write_zstd(path, batches[:1])
    last = frame(b"".join(line + b"\n" for line in batches[1]))
    with path.open("ab") as stream:
        stream.write(last[: len(last) * 6 // 10])
    return path


def zstd_frames(path: Path, frames: list[bytes]) -> Path:
    """A zstd log of the header frame and then exactly these frames' bytes."""
    path.write_bytes(frame(HEADER_LINE + b"\n") + b"".join(frames))
    return path


HEADER_LINE: Final = dumps(HEADER).encode()


def closed_batches() -> list[bytes]:
    """The closed log's two batches as the plaintext of a frame each."""
    return [b"".join(line + b"\n" for line in lines_of(batch)) for batch in agent_log(2)]


def frame_cut_at_its_magic(path: Path) -> Path:
    """SESSION-ZSTD-FRAMES.4: a closed log, then the first three bytes of a frame's magic: a final frame torn before it
    could say anything (fewer bytes than a magic and a descriptor), recovered as nothing, a torn tail."""
    first, second = closed_batches()
    return zstd_frames(path, [frame(first), frame(second), frame(b"")[:3]])


def frame_without_checksum(path: Path) -> Path:
    first, second = closed_batches()
    plain = zstandard.ZstdCompressor(level=3, write_checksum=False, write_content_size=True).compress(first)
    return zstd_frames(path, [plain, frame(second)])


def empty_last_frame_without_checksum(path: Path) -> Path:
    """A closed log, then an empty frame with no checksum: it ends exactly at its last block's header, which a reader
    must read whole (and refuse, SESSION-ZSTD-FRAMES.3), not take for a frame cut short."""
    first, second = closed_batches()
    return zstd_frames(path, [frame(first), frame(second), zstandard.ZstdCompressor(write_checksum=False).compress(b"")])


def five_bytes_of_no_frame(path: Path) -> Path:
    """A closed log, then five bytes that are no frame's magic: enough to read a frame's magic and descriptor, so
    they are corruption (SESSION-ZSTD-FRAMES.1), not the start of a frame cut short."""
    first, second = closed_batches()
    return zstd_frames(path, [frame(first), frame(second), b"\x00" * 5])


def frame_bad_magic(path: Path) -> Path:
    first, second = closed_batches()
    return zstd_frames(path, [b"\x00" + frame(first)[1:], frame(second)])


def header_frame_of_two_lines(path: Path) -> Path:
    first, second = closed_batches()
    lines = first.split(b"\n")
    path.write_bytes(frame(HEADER_LINE + b"\n" + lines[0] + b"\n") + frame(b"\n".join(lines[1:])) + frame(second))
    return path


def header_frame_without_newline(path: Path) -> Path:
    """SESSION-ZSTD-FRAMES.2: the closed log, its first frame the header line without its newline: not exactly one
    header line (a header frame, not one line past the record bound)."""
    first, second = closed_batches()
    path.write_bytes(frame(HEADER_LINE) + frame(first) + frame(second))
    return path


def damaged_page(path: Path) -> Path:
    """SESSION-SQLITE-ROW.4: a SQLite log whose last page is overwritten with 0xFF."""
    clean(path)
    data = bytearray(path.read_bytes())
    data[-4096:] = b"\xff" * 4096
    path.write_bytes(bytes(data))
    return path


def two_sessions(path: Path) -> Path:
    """A SQLite database of two sessions, `h` (the agent log) and `k` (one event) (SESSION-STORAGE-HEADER.5)."""
    clean(path)
    edit_sqlite(path, "INSERT INTO sessions (id, version, created_at, incarnation, revision) VALUES ('k', 0, 1, ?, 0)",
                (FIXED_ID,))
    return edit_sqlite(path, "INSERT INTO events VALUES ('k', 0, 'turn/start', 1000, '{\"turn\":1}', NULL, NULL, NULL)")


def not_a_log(path: Path) -> Path:
    """SESSION-CONFORMANCE-PROTOCOL.13: bytes of no backend, under a name that says none."""
    path.write_bytes(b"\x00\x01\x02 these bytes are no session log of any backend\n")
    return path


def foreign_database(path: Path) -> Path:
    """SESSION-SQLITE-SCHEMA.3: someone else's database (user_version 0, a table of its own)."""
    edit_sqlite(path, "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
    return edit_sqlite(path, "INSERT INTO notes (body) VALUES ('not a session')")
