"""The storage vectors' cases: each a stored log with one thing true or wrong of it, and the rules it is about.

One case per storage rule of spec/07 that a file can break, at the bound and one past it where
there is a bound, in each backend where the rule applies (`EXCLUDED` in `storagevectors` says
why a rule has none). A case is a builder of its file, or, for a file too large to commit, a
named generator with its arguments (`GENERATORS`), which the runner expands into a fresh file.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Final

from sessionspec.conformance.storagevectors import bounds as b
from sessionspec.conformance.storagevectors import faults as f
from sessionspec.conformance.storagevectors.bounds import (
    FRAME_RECORDS,
    PLAINTEXT_LINE,
    RECORD_BOUND,
    RECORD_PAD,
    RECORDS_FLOOR,
    ROW_MEMBERS,
    SQLITE_ROW_MEMBERS,
    TRAIL,
)
from sessionspec.conformance.storagevectors.builders import turn_events
from sessionspec.jsontext import dumps
from sessionspec.storage.sqliterows import encode_seqs

TEXT: Final = ("jsonl", "jsonl.zstd")
ALL: Final = ("jsonl", "jsonl.zstd", "sqlite")
TAG: Final = {"jsonl": "jsonl", "jsonl.zstd": "zstd", "sqlite": "sqlite"}
"""A backend as a vector id names it."""
SUFFIX: Final = {"jsonl": ".jsonl", "jsonl.zstd": ".jsonl.zstd", "sqlite": ".sqlite", "none": ".log"}
LONG_HEADER: Final = (1 << 20) + 100
"""A header line of 1 MiB and 100 bytes: longer than the piece a reader reads a line in (ours: 1 MiB)."""
LONG_QUESTION: Final = (64 << 10) + 100
"""A last turn of more than 64 KiB: further than the store's fast form looks from a file's end for an open turn."""


@dataclass(frozen=True)
class StorageCase:
    id: str
    summary: str
    rules: tuple[str, ...]
    backend: str
    build: Callable[[Path], Path]
    session: str | None = None
    generator: dict[str, Any] | None = None
    """`{"name", "args"}` for a file too large to commit: the runner expands it with `GENERATORS[name](path, **args)`."""
    refused: bool = field(default=False)
    """Whether the reference refuses the file (then its refusal's rule is one of `rules`)."""
    suffix: str | None = None
    """The file's suffix, where it is not its backend's (a log under a name no backend claims)."""

    @property
    def file_name(self) -> str:
        return self.id + (self.suffix or SUFFIX[self.backend if self.backend in SUFFIX else "none"])


GENERATORS: Final[dict[str, Callable[..., Path]]] = {
    "long-record": b.long_record,
    "packed-row": b.row_at,
    "many-records": b.many_records,
    "budget-rows": b.budget_rows,
}
"""The generators a storage vector may name: each writes its log at the path it is given."""


def generated(name: str, **args: Any) -> tuple[Callable[[Path], Path], dict[str, Any]]:
    return partial(GENERATORS[name], **args), {"name": name, "args": args}


def _per_backend(rule: str, summary: str, build: Callable[[Path], Path], backends: tuple[str, ...] = ALL, *,
                 rules: tuple[str, ...] = (), refused: bool = False, variant: str = "",
                 session: str | None = None) -> list[StorageCase]:
    name = f"-{variant}" if variant else ""
    return [StorageCase(f"{rule}-{TAG[backend]}{name}", summary, (rule, *rules), backend, build, session, refused=refused)
            for backend in backends]


def _mid(edit: f.Edit) -> Callable[[Path], Path]:
    return partial(f.edited, seq=f.MIDDLE, edit=edit)


def _mid_of(seq: int, edit: f.Edit) -> Callable[[Path], Path]:
    """The closed log with the record at `seq` (an event's, not a packed row's) what `edit` makes of it."""
    return partial(f.edited, seq=seq, edit=edit)


def _tail(edit: f.Edit) -> Callable[[Path], Path]:
    return partial(f.edited, seq=f.TAIL, edit=edit, open_tail=True)


def _bounded() -> list[StorageCase]:
    """The bounds, at and one past (a file too large to commit is a generator)."""
    past_record, past_args = generated("long-record", size=RECORD_BOUND + 1)
    at_record, at_args = generated("long-record", size=RECORD_BOUND, pad=RECORD_PAD)
    trailed, trailed_args = generated("long-record", size=RECORD_BOUND + TRAIL, pad=RECORD_PAD, trail=TRAIL)
    budget_at, budget_at_args = generated("budget-rows", rows=1, members=RECORDS_FLOOR - 4)
    rows_at, rows_at_args = generated("packed-row", members=ROW_MEMBERS)
    rows_past, rows_past_args = generated("packed-row", members=ROW_MEMBERS + 1)
    frame_at, frame_at_args = generated("many-records", records=FRAME_RECORDS)
    frame_past, frame_past_args = generated("many-records", records=FRAME_RECORDS + 1)
    return [
        StorageCase("SESSION-STORAGE-RECORD.1-jsonl-past", "a record one byte over 64 MiB is refused",
                    ("SESSION-STORAGE-RECORD.1",), "jsonl", past_record, generator=past_args, refused=True),
        StorageCase("SESSION-STORAGE-RECORD.1-zstd-past", "a record one byte over 64 MiB is refused",
                    ("SESSION-STORAGE-RECORD.1",), "jsonl.zstd", past_record, generator=past_args, refused=True),
        *(StorageCase(f"SESSION-STORAGE-RECORD.1-{TAG[backend]}-at", "a record of exactly 64 MiB (1 MiB of it "
                      "whitespace) loads", ("SESSION-STORAGE-RECORD.1",), backend, at_record, generator=at_args)
          for backend in TEXT),
        *(StorageCase(f"SESSION-STORAGE-RECORD.1-{TAG[backend]}-past-spaces", "a line 256 KiB past 64 MiB is refused, "
                      "though the JSON value in it ends at 64 MiB (spaces follow it)", ("SESSION-STORAGE-RECORD.1",),
                      backend, trailed, generator=trailed_args, refused=True) for backend in TEXT),
        StorageCase("SESSION-CHUNK-ROWS.8-jsonl-at", "a packed row of 65,536 members loads",
                    ("SESSION-CHUNK-ROWS.8",), "jsonl", rows_at, generator=rows_at_args),
        StorageCase("SESSION-CHUNK-ROWS.8-jsonl-past", "a packed row of 65,537 members is refused",
                    ("SESSION-CHUNK-ROWS.8",), "jsonl", rows_past, generator=rows_past_args, refused=True),
        StorageCase("SESSION-CHUNK-ROWS.5-sqlite-at", "a SQLite row of 1,024 members loads", ("SESSION-CHUNK-ROWS.5",),
                    "sqlite", partial(b.row_at, members=SQLITE_ROW_MEMBERS, sqlite_row=True)),
        StorageCase("SESSION-CHUNK-ROWS.5-sqlite-past", "a SQLite row of 1,025 members is refused",
                    ("SESSION-CHUNK-ROWS.5",), "sqlite", partial(b.row_at, members=SQLITE_ROW_MEMBERS + 1,
                                                                   sqlite_row=True), refused=True),
        StorageCase("SESSION-CHUNK-ROWS.5-sqlite-under", "a SQLite row of 2 members is refused",
                    ("SESSION-CHUNK-ROWS.5",), "sqlite", partial(b.row_at, members=2, sqlite_row=True), refused=True),
        StorageCase("SESSION-ZSTD-FRAMES.5-at", "a frame of 65,536 records loads",
                    ("SESSION-ZSTD-FRAMES.5",), "jsonl.zstd", frame_at, generator=frame_at_args),
        StorageCase("SESSION-ZSTD-FRAMES.5-past", "a frame of 65,537 records is refused",
                    ("SESSION-ZSTD-FRAMES.5",), "jsonl.zstd", frame_past,
                    generator=frame_past_args, refused=True),
        StorageCase("SESSION-STORAGE-RECORD.3-zstd-past", "200 bytes of frames that decode to 131,070 records",
                    ("SESSION-STORAGE-RECORD.3", "SESSION-ZSTD-FRAMES.5"), "jsonl.zstd",
                    partial(b.expanding_frames, frames=2, per_frame=FRAME_RECORDS - 1), refused=True),
        StorageCase("SESSION-STORAGE-RECORD.3-zstd-plaintext", "10 KB of frames whose torn tail decodes to 288 MiB of "
                    "plaintext", ("SESSION-STORAGE-RECORD.3",), "jsonl.zstd",
                    partial(b.plaintext_bomb, frames=2, lines=4, size=PLAINTEXT_LINE), refused=True),
        StorageCase("SESSION-STORAGE-RECORD.3-zstd-at", "a few hundred bytes of zstd that decode to exactly 65,536 "
                    "records, a small file's budget, load", ("SESSION-STORAGE-RECORD.3",), "jsonl.zstd", budget_at,
                    generator=budget_at_args),
        StorageCase("SESSION-STORAGE-RECORD.3-sqlite-rows", "a 32 KB SQLite log whose packed rows (zstd BLOBs) expand "
                    "to 65,539 records is refused", ("SESSION-STORAGE-RECORD.3", "SESSION-CHUNK-ROWS.5"), "sqlite",
                    partial(b.sqlite_budget_rows, rows=64), refused=True),
        StorageCase("SESSION-STORAGE-RECORD.3-zstd-rows", "a few KB of packed rows that expand to 196,608 records",
                    ("SESSION-STORAGE-RECORD.3", "SESSION-CHUNK-ROWS.8"), "jsonl.zstd",
                    partial(b.budget_rows, rows=3, members=ROW_MEMBERS), refused=True),
        StorageCase("SESSION-STORAGE-RECORD.1-sqlite-blob-past", "a data BLOB that decodes to one byte over 64 MiB is "
                    "refused", ("SESSION-STORAGE-RECORD.1", "SESSION-SQLITE-ROW.2"), "sqlite",
                    partial(b.large_blob, seq=f.MIDDLE, size=RECORD_BOUND + 1), refused=True),
    ]


def _gate() -> list[StorageCase]:
    """What every backend's load gate says of a whole log."""
    unknown = {"type": "plugin/unknown", "seq": f.MIDDLE, "time": 1002, "data": {"turn": 1, "step": 1}}
    return [
        *_per_backend("SESSION-STORAGE-LOAD.1", "a balanced two-turn log loads as stored, its chunks packed",
                      f.clean, rules=("SESSION-CHUNK-ROWS.6", "SESSION-STORAGE-HEADER.3")),
        *_per_backend("SESSION-STORAGE-LOAD.2", "an open tail turn loads with its closers, committing nothing",
                      partial(f.clean, open_tail=True)),
        *(StorageCase(f"SESSION-STORAGE-LOAD.1-{TAG[backend]}-unnamed", "a log under a name no backend claims (.log) is "
                      "read by its first bytes: magic bytes, else JSON text", ("SESSION-STORAGE-LOAD.1",), backend,
                      partial(f.unnamed, suffix=SUFFIX[backend]), suffix=SUFFIX["none"]) for backend in ALL),
        *_per_backend("SESSION-STORAGE-SEQ.1", "a record missing in the middle is a seq gap", _mid(lambda r: None),
                      TEXT, refused=True),
        StorageCase("SESSION-STORAGE-SEQ.1-sqlite", "a row missing in the middle is a seq gap", ("SESSION-STORAGE-SEQ.1",),
                    "sqlite", f.sql("DELETE FROM events WHERE seq = 2"), refused=True),
        *_per_backend("SESSION-UNKNOWN-EVENT-GATE.1", "an unknown type that is not ignorable is refused",
                      _mid(lambda r: dumps(unknown).encode()), TEXT, refused=True),
        StorageCase("SESSION-UNKNOWN-EVENT-GATE.1-sqlite", "an unknown type that is not ignorable is refused",
                    ("SESSION-UNKNOWN-EVENT-GATE.1",), "sqlite",
                    f.sql("UPDATE events SET type = 'plugin/unknown' WHERE seq = 2"), refused=True),
        *_per_backend("SESSION-UNKNOWN-EVENT-GATE.1", "an unknown type marked ignorable loads",
                      _mid(lambda r: dumps({**unknown, "ignorable": True}).encode()), TEXT, variant="ignorable"),
        # A log with no turn record: a reader that leaves turn records to a slower path reads all of it on trust.
        *_per_backend("SESSION-UNKNOWN-EVENT-GATE.1", "an unknown type that is not ignorable is refused in a log with no "
                      "turn record", partial(f.without_turns, record={"type": "plugin/unknown", "data": {"turn": 1}}),
                      TEXT, variant="no-turns", refused=True),
        StorageCase("SESSION-SURFACE-PROJECTION.3-jsonl-no-turns", "a user message without a surfaceOp is refused in a "
                    "log with no turn record", ("SESSION-SURFACE-PROJECTION.3",), "jsonl",
                    partial(f.without_turns, record={"type": "user/message", "data": turn_events(1, 0)[1]["data"]}),
                    refused=True),
        StorageCase("SESSION-CORE-EVENTS.2-jsonl-no-turns", "a retired type is refused in a log with no turn record",
                    ("SESSION-CORE-EVENTS.2",), "jsonl",
                    partial(f.without_turns, record={"type": "mode/set", "data": {}}), refused=True),
        *_per_backend("SESSION-SURFACE-TOOL-RESULT.3", "a tool result pruned, then its rewrite pruned again, loads",
                      f.pruned_twice, TEXT, variant="twice"),
        *_per_backend("SESSION-EVENT-ENVELOPE.1", "a stored event with a key outside the envelope is refused",
                      _mid(lambda r: dumps({**r, "extra": 1}).encode()), TEXT, variant="extra-key", refused=True),
        StorageCase("SESSION-LOSSLESS-TEXT.1-sqlite-data", "an event row's data of TEXT that is not UTF-8 is refused",
                    ("SESSION-LOSSLESS-TEXT.1",), "sqlite",
                    f.sql("UPDATE events SET data = CAST(x'7b2274757226ff6e223a317d' AS TEXT) WHERE seq = 2"),
                    refused=True),
        *_per_backend("SESSION-TORN-TAIL.2", "unparsable data followed by a committed turn/end is corruption",
                      _mid(f.replace_data(b"{not json")), TEXT, rules=("SESSION-LOSSLESS-TEXT.2",), refused=True),
        StorageCase("SESSION-TORN-TAIL.2-sqlite", "unparsable data followed by a committed turn/end is corruption",
                    ("SESSION-TORN-TAIL.2", "SESSION-LOSSLESS-TEXT.2"), "sqlite",
                    f.sql("UPDATE events SET data = '{not json' WHERE seq = 2"), refused=True),
        *_per_backend("SESSION-TORN-TAIL.2", "unparsable data followed by a committed turn/end spelled with an escape "
                      "(turn\\/end) is corruption", f.escaped_turn_ends, TEXT, rules=("SESSION-LOSSLESS-TEXT.2",),
                      variant="escaped", refused=True),
        *_per_backend("SESSION-TORN-TAIL.3", "unparsable data with no later turn/end starts a torn tail",
                      _tail(f.replace_data(b"{not json")), TEXT),
        StorageCase("SESSION-SURFACE-REPLACE.1-jsonl-ignorable-start", "a replacement whose range starts at an "
                    "ignorable event (never on the surface) is refused", ("SESSION-SURFACE-REPLACE.1",), "jsonl",
                    f.replace_from_ignorable, refused=True),
        StorageCase("SESSION-ZSTD-FRAMES.4-magic", "a final frame torn within its magic (3 bytes) is a torn tail",
                    ("SESSION-ZSTD-FRAMES.4", "SESSION-TORN-TAIL.1"), "jsonl.zstd", f.frame_cut_at_its_magic),
        StorageCase("SESSION-TORN-TAIL.3-zstd-frames", "unparsable data, then a whole frame with no turn/end: the torn "
                    "tail runs to the end of the file", ("SESSION-TORN-TAIL.3",), "jsonl.zstd", f.torn_frames),
        StorageCase("SESSION-TORN-TAIL.3-sqlite", "an undecodable last row starts a torn tail", ("SESSION-TORN-TAIL.3",),
                    "sqlite", f.sql("UPDATE events SET data = '{not json' WHERE seq = 20", open_tail=True)),
        StorageCase("SESSION-STORAGE-LOAD.2-jsonl-long-turn",
                    "an open tail turn that started more than 64 KiB before the end loads with its closers",
                    ("SESSION-STORAGE-LOAD.2",), "jsonl", partial(f.long_open_turn, question=LONG_QUESTION)),
        *_per_backend("SESSION-STORAGE-LOAD.1", "a log whose records each pass the gate but whose replacement starts "
                      "off the surface is refused at seeding", _mid_of(13, f.changed(
                          surfaceOp={"op": "replace", "start": 2, "end": 7}, sourceEventSeqs=[2, 7])), TEXT,
                      rules=("SESSION-SURFACE-REPLACE.1",), variant="seeding", refused=True),
        StorageCase("SESSION-STORAGE-LOAD.1-sqlite-seeding", "a log whose rows each pass the gate but whose replacement "
                    "starts off the surface is refused at seeding", ("SESSION-STORAGE-LOAD.1", "SESSION-SURFACE-REPLACE.1"),
                    "sqlite", f.sql("UPDATE events SET surface_op = '{\"op\":\"replace\",\"start\":2,\"end\":7}', "
                                    f"source_event_seqs = x'{encode_seqs([2, 7]).hex()}' WHERE seq = 13"), refused=True),
        StorageCase("SESSION-SURFACE-PROJECTION.4-jsonl-replace-extra", "a replacement whose surfaceOp has a key "
                    "besides op, start and end is refused", ("SESSION-SURFACE-PROJECTION.4",), "jsonl", _mid_of(13, f.changed(
                        surfaceOp={"op": "replace", "start": 7, "end": 9, "extra": 1}, sourceEventSeqs=[7, 9])),
                    refused=True),
        *_per_backend("SESSION-STORAGE-SEQ.1", "a last turn/end whose seq skips ahead is corruption, not a torn tail",
                      _mid_of(23, f.changed(seq=25)), TEXT, rules=("SESSION-TORN-TAIL.2",), variant="turn-end",
                      refused=True),
        StorageCase("SESSION-STORAGE-SEQ.1-sqlite-turn-end", "a last turn/end whose seq skips ahead is corruption, not a "
                    "torn tail", ("SESSION-STORAGE-SEQ.1", "SESSION-TORN-TAIL.2"), "sqlite",
                    f.sql("UPDATE events SET seq = 25 WHERE seq = 23"), refused=True),
        StorageCase("SESSION-TORN-TAIL.1-jsonl", "a last line without its newline is a torn tail",
                    ("SESSION-TORN-TAIL.1",), "jsonl", f.torn_line),
        StorageCase("SESSION-ZSTD-FRAMES.4", "a torn final frame: its complete records are recovered",
                    ("SESSION-ZSTD-FRAMES.4", "SESSION-TORN-TAIL.1"), "jsonl.zstd", f.torn_frame),
    ]


def _rows() -> list[StorageCase]:
    """Packed chunk rows (SESSION-CHUNK-ROWS), each fault in the middle row (seq0 3: followed by a turn/end)."""
    def row(edit: f.Edit) -> Callable[[Path], Path]:
        return partial(f.edited, seq=3, edit=edit)

    cases = [
        *_per_backend("SESSION-CHUNK-ROWS.1", "a packed row with a key of no row is refused",
                      row(edit=f.changed(seq=3)), TEXT, refused=True),
        *_per_backend("SESSION-CHUNK-ROWS.2", "a packed row whose time0 is not an integer is refused",
                      row(edit=f.changed(time0=1.5)), TEXT, refused=True),
        *_per_backend("SESSION-CHUNK-ROWS.3", "a packed row whose turn is a string is refused",
                      row(edit=f.changed(data_turn="1")), TEXT, refused=True),
        *_per_backend("SESSION-CHUNK-ROWS.4", "a packed row of four texts and one gap is refused",
                      row(edit=f.changed(data_dt=[1])), TEXT, refused=True),
        *_per_backend("SESSION-CHUNK-ROWS.4", "a packed row whose texts hold a number is refused",
                      row(edit=f.changed(data_texts=["Let ", 5, "look", "."])), TEXT, variant="member", refused=True),
        StorageCase("SESSION-CHUNK-ROWS.7-jsonl", "an event stored verbatim under a row tag is refused",
                    ("SESSION-CHUNK-ROWS.7", "SESSION-CHUNK-ROWS.1"), "jsonl", _mid(lambda r: dumps(
                        {"type": "text-chunks", "seq": f.MIDDLE, "time": 1002, "data": {}}).encode()), refused=True),
    ]
    rows = "UPDATE events SET data = json_set(data, {}) WHERE seq = 3"
    cases += [
        StorageCase("SESSION-CHUNK-ROWS.1-sqlite", "a packed row's data with a key of no row is refused",
                    ("SESSION-CHUNK-ROWS.1",), "sqlite", f.sql(rows.format("'$.extra', 1")), refused=True),
        StorageCase("SESSION-CHUNK-ROWS.3-sqlite", "a packed row whose turn is a string is refused",
                    ("SESSION-CHUNK-ROWS.3",), "sqlite", f.sql(rows.format("'$.turn', '1'")), refused=True),
        StorageCase("SESSION-CHUNK-ROWS.4-sqlite", "a packed row of four texts and one gap is refused",
                    ("SESSION-CHUNK-ROWS.4",), "sqlite", f.sql(rows.format("'$.dt', json('[1]')")),
                    refused=True),
        StorageCase("SESSION-CHUNK-ROWS.4-sqlite-member", "a packed row whose texts hold a number is refused",
                    ("SESSION-CHUNK-ROWS.4",), "sqlite", f.sql(rows.format("'$.texts[1]', 5")), refused=True),
    ]
    return cases


def _headers() -> list[StorageCase]:
    """The header record and the format version (SESSION-STORAGE-HEADER, SESSION-FORMAT-VERSION)."""
    def header(**changes: Any) -> Callable[[Path], Path]:
        return partial(f.with_header, header=f.header_line(**changes))

    return [
        StorageCase("SESSION-STORAGE-HEADER.1-jsonl-empty", "an empty file has no header", ("SESSION-STORAGE-HEADER.1",),
                    "jsonl", lambda path: (path.write_bytes(b""), path)[1], refused=True),
        StorageCase("SESSION-STORAGE-HEADER.1-zstd-empty", "an empty zstd log has no header frame",
                    ("SESSION-STORAGE-HEADER.1",), "jsonl.zstd", lambda path: (path.write_bytes(b""), path)[1],
                    refused=True),
        *_per_backend("SESSION-STORAGE-HEADER.2", "a log whose first record is an event has no header",
                      partial(f.with_header, header=b'{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}'), TEXT,
                      variant="event-first", refused=True),
        *_per_backend("SESSION-STORAGE-HEADER.2", "a header whose type is not session is refused",
                      header(type="sessions"), TEXT, refused=True),
        *_per_backend("SESSION-STORAGE-HEADER.4", "a header with the retired sandboxMode is refused",
                      header(sandboxMode="x"), TEXT, refused=True),
        *_per_backend("SESSION-STORAGE-HEADER.5", "a log opened as another session is refused", f.clean,
                      variant="other", session="other", refused=True),
        StorageCase("SESSION-STORAGE-HEADER.5-sqlite-named", "a database of two sessions opens as the one named",
                    ("SESSION-STORAGE-HEADER.5",), "sqlite", f.two_sessions, session="k"),
        StorageCase("SESSION-STORAGE-HEADER.5-sqlite-unnamed", "a database of two sessions, none named, is refused",
                    ("SESSION-STORAGE-HEADER.5",), "sqlite", f.two_sessions, refused=True),
        *_per_backend("SESSION-FORMAT-VERSION.1", "a log of a newer format is refused", header(version=1), TEXT,
                      refused=True),
        *_per_backend("SESSION-FORMAT-VERSION.2", "a log of an older format is refused", header(version=-1), TEXT,
                      refused=True),
        StorageCase("SESSION-FORMAT-VERSION.1-sqlite", "a session of a newer format is refused",
                    ("SESSION-FORMAT-VERSION.1",), "sqlite", f.sql("UPDATE sessions SET version = 1"),
                    refused=True),
        StorageCase("SESSION-STORAGE-RECORD.1-jsonl-long-header", "a header line padded with spaces past 1 MiB loads",
                    ("SESSION-STORAGE-RECORD.1", "SESSION-STORAGE-HEADER.1"), "jsonl",
                    partial(f.padded_header, size=LONG_HEADER)),
        *_per_backend("SESSION-LOSSLESS-TEXT.2", "a header line that is not JSON is refused at line 1",
                      partial(f.with_header, header=b"{not json"), TEXT, rules=("SESSION-STORAGE-HEADER.1",),
                      variant="header", refused=True),
        StorageCase("SESSION-LOSSLESS-TEXT.1-sqlite-header", "a header column (cwd) of TEXT that is not UTF-8 is refused",
                    ("SESSION-LOSSLESS-TEXT.1",), "sqlite",
                    f.sql("UPDATE sessions SET cwd = CAST(x'2f746d70ff' AS TEXT)"), refused=True),
        StorageCase("SESSION-CONFORMANCE-PROTOCOL.13", "bytes of no backend are no session log",
                    ("SESSION-CONFORMANCE-PROTOCOL.13",), "none", f.not_a_log, refused=True),
    ]


def _zstd_and_sqlite() -> list[StorageCase]:
    """The zstd framing and the SQLite schema and rows."""
    cases = [
        StorageCase("SESSION-ZSTD-FRAMES.1", "a frame with a bad magic number is corruption", ("SESSION-ZSTD-FRAMES.1",),
                    "jsonl.zstd", f.frame_bad_magic, refused=True),
        StorageCase("SESSION-ZSTD-FRAMES.2", "a first frame of two lines is refused", ("SESSION-ZSTD-FRAMES.2",),
                    "jsonl.zstd", f.header_frame_of_two_lines, refused=True),
        StorageCase("SESSION-ZSTD-FRAMES.2-no-newline", "a first frame whose header line has no newline is refused",
                    ("SESSION-ZSTD-FRAMES.2",), "jsonl.zstd", f.header_frame_without_newline, refused=True),
        StorageCase("SESSION-ZSTD-FRAMES.3", "a frame without a content checksum is refused", ("SESSION-ZSTD-FRAMES.3",),
                    "jsonl.zstd", f.frame_without_checksum, refused=True),
        StorageCase("SESSION-ZSTD-FRAMES.3-empty-last", "a last frame that ends at its block header, with no checksum, "
                    "is refused", ("SESSION-ZSTD-FRAMES.3",), "jsonl.zstd", f.empty_last_frame_without_checksum,
                    refused=True),
        StorageCase("SESSION-ZSTD-FRAMES.1-five-bytes", "five bytes of no frame after the last are corruption",
                    ("SESSION-ZSTD-FRAMES.1",), "jsonl.zstd", f.five_bytes_of_no_frame, refused=True),
    ]
    schema = [
        ("SESSION-SQLITE-SCHEMA.1", "older", "a database of schema 16 is refused", "PRAGMA user_version = 16"),
        ("SESSION-SQLITE-SCHEMA.1", "newer", "a database of schema 18 is refused", "PRAGMA user_version = 18"),
        ("SESSION-SQLITE-SCHEMA.2", "", "a database of another application id is refused", "PRAGMA application_id = 7"),
        ("SESSION-SQLITE-SCHEMA.4", "", "an events table with a column of no format is refused",
         "ALTER TABLE events ADD COLUMN extra TEXT"),
        ("SESSION-SQLITE-SCHEMA.5", "", "a trigger of anyone else is refused",
         "CREATE TRIGGER t BEFORE UPDATE ON sessions BEGIN SELECT RAISE(ABORT, 'no'); END"),
        ("SESSION-SQLITE-ROW.1", "", "a padded LEB128 seq is refused", "UPDATE events SET source_event_seqs = x'8100' "
                                                                       "WHERE seq = 7"),
        ("SESSION-SQLITE-ROW.2", "", "a data BLOB that is no complete zstd frame is refused",
         "UPDATE events SET data = x'28b52ffd0000' WHERE seq = 2"),
        ("SESSION-SQLITE-ROW.3", "", "ignorable 0 on an event row is refused", "UPDATE events SET ignorable = 0 "
                                                                                "WHERE seq = 0"),
    ]
    cases += [StorageCase(f"{rule}-sqlite" + (f"-{variant}" if variant else ""), summary, (rule,), "sqlite", f.sql(statement),
                          refused=True) for rule, variant, summary, statement in schema]
    cases += [
        StorageCase("SESSION-SQLITE-SCHEMA.3", "a database of someone else's tables, version 0, is refused",
                    ("SESSION-SQLITE-SCHEMA.3",), "sqlite", partial(f.foreign_database), refused=True),
        StorageCase("SESSION-SQLITE-ROW.4", "a database whose last page is damaged is refused", ("SESSION-SQLITE-ROW.4",),
                    "sqlite", f.damaged_page, refused=True),
    ]
    return cases


def _legacy() -> list[StorageCase]:
    """Legacy records a load upgrades (SESSION-LEGACY-UPGRADE), and ones it refuses."""
    return [
        StorageCase("SESSION-LEGACY-UPGRADE.1-jsonl", "a turn/start with a trigger loads as {turn}, reported",
                    ("SESSION-LEGACY-UPGRADE.1", "SESSION-LEGACY-UPGRADE.5"), "jsonl",
                    partial(f.edited, seq=0, edit=f.changed(data_trigger={"kind": "user"}))),
        StorageCase("SESSION-LEGACY-UPGRADE.1-jsonl-turn-0", "a turn/start with a trigger and turn 0 is refused",
                    ("SESSION-LEGACY-UPGRADE.1",), "jsonl",
                    partial(f.edited, seq=0, edit=f.changed(data_trigger={"kind": "user"}, data_turn=0)), refused=True),
        StorageCase("SESSION-LEGACY-UPGRADE.2-jsonl", "a turn/end reason disposed loads as aborted/disposed",
                    ("SESSION-LEGACY-UPGRADE.2",), "jsonl",
                    partial(f.edited, seq=11, edit=f.changed(data_reason={"kind": "disposed"}))),
        StorageCase("SESSION-LEGACY-UPGRADE.2-jsonl-extra", "a completed reason with another key is refused",
                    ("SESSION-LEGACY-UPGRADE.2",), "jsonl",
                    partial(f.edited, seq=11, edit=f.changed(data_reason={"kind": "completed", "x": 1})), refused=True),
        StorageCase("SESSION-LEGACY-UPGRADE.3-jsonl", "a steering/message loads as a user/message",
                    ("SESSION-LEGACY-UPGRADE.3",), "jsonl", partial(f.edited, seq=f.MIDDLE, edit=lambda r: dumps(
                        {"type": "steering/message", "seq": f.MIDDLE, "time": 1002, "data": {
                            "turn": 1, "content": [{"type": "text", "text": "Faster"}], "source": {"kind": "user"}}}
                    ).encode())),
        StorageCase("SESSION-LEGACY-UPGRADE.4-jsonl", "a pre-identity user message gains its legacy id and role",
                    ("SESSION-LEGACY-UPGRADE.4",), "jsonl", partial(f.edited, seq=1, edit=lambda r: dumps(
                        {**r, "data": {"source": {"kind": "user"}, "content": [{"type": "text", "text": "Old"}]}}
                    ).encode())),
    ]


def storage_cases() -> list[StorageCase]:
    """Every storage case, in a fixed order; ids are unique."""
    return [*_gate(), *_rows(), *_headers(), *_zstd_and_sqlite(), *_legacy(), *_bounded()]
