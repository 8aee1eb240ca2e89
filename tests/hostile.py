"""Hostile stored logs, generated: the inputs of tests/test_hostile_inputs.py and of the storage regression tests.

A log tool is attacked through its input file, so the inputs are made the way an attacker (or a
dying disk) makes them: a small agent log of each backend, then one thing wrong with it. The
things wrong are classes, not examples: the value classes of spec/01 and spec/07 put in an
event's data at the middle of the log (a committed turn/end follows: corruption) and at its tail
(an open turn: a torn tail), envelope and packed-row classes, random byte corruptions, cuts at
every byte offset of the last records, bad files, and amplification (a small file that expands).
`run_cli` runs a command in this process as a user would, and reports a traceback rather than
raising one; `oracle` is what the load gate says of a file, which every tool's exit code must
agree with.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import resource
import shutil
import sqlite3
import subprocess
import sys
import traceback
import tracemalloc
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import zstandard
from sessionspec import storage
from sessionspec.cli import main
from sessionspec.conformance.storagevectors.builders import (
    HEADER,
    agent_log,
    lines_of,
    write_jsonl,
    write_raw,
    write_sqlite,
    write_zstd,
)
from sessionspec.conformance.storagevectors.builders import frame as frame  # re-exported for the storage tests
from sessionspec.errors import Kind, SpecViolation
from sessionspec.jsontext import dumps

FORMATS = ("jsonl", "jsonl.zstd", "sqlite")
HOSTILE = "plugin/hostile"
RULE = "SESSION-"


# --- a small agent log (sessionspec.conformance.storagevectors.builders, shared with the storage vectors) -----


def hostile_event(seq: int) -> dict[str, Any]:
    return {"type": HOSTILE, "seq": seq, "time": 1000 + seq, "data": None, "ignorable": True}


def placed(where: str) -> tuple[list[list[dict[str, Any]]], int]:
    """A log with a hostile ignorable event, and its seq: in the middle (a closed turn follows) or at the open tail."""
    batches = agent_log(2, open_tail=where == "tail")
    if where == "middle":
        seq = len(batches[0])
        batches.insert(1, [hostile_event(seq)])
        for event in batches[2]:
            event["seq"] += 1
            if "sourceEventSeqs" in event:
                event["sourceEventSeqs"] = [s + 1 for s in event["sourceEventSeqs"]]
        return batches, seq
    seq = sum(map(len, batches))
    batches.append([hostile_event(seq)])
    return batches, seq


# --- writing any bytes as a log of each backend ------------------------------------------------------


# --- the value classes of spec/01 and spec/07, as the data of an event ---------------------------------

VALID = "valid"
DEPTH = 2_000
"""Nesting of the deep classes in the default slice (past the recursion limit, so the iterative paths run); the nightly
run uses 100,000."""


def deep(depth: int) -> dict[str, tuple[bytes, str]]:
    """The value classes nested `depth` levels (past the recursion limit: the lossless reader's iterative path), each
    thing it can meet inside: nothing, a pair, NaN, a key given twice, a missing comma, key or colon, trailing data."""
    arrays, objects, closing = b"[" * depth, b'{"a":' * depth, b"}" * depth
    return {
        "deep-arrays": (arrays + b"]" * depth, VALID),
        "deep-objects": (b'{"a":' * (depth // 5) + b"1" + b"}" * (depth // 5), VALID),
        "deep-pairs": (arrays + b"1,2" + b"]" * depth, VALID),
        "unclosed-deep": (arrays, "SESSION-LOSSLESS-TEXT.2"),
        "deep-nan": (arrays + b"NaN" + b"]" * depth, "SESSION-LOSSLESS-TEXT.3"),
        "deep-duplicate-key": (objects + b'{"k":1,"k":2}' + closing, "SESSION-LOSSLESS-TEXT.6"),
        "deep-missing-comma": (arrays + b"1 2" + b"]" * depth, "SESSION-LOSSLESS-TEXT.2"),
        "deep-missing-key": (objects + b"{1:2}" + closing, "SESSION-LOSSLESS-TEXT.2"),
        "deep-missing-colon": (objects + b'{"k" 2}' + closing, "SESSION-LOSSLESS-TEXT.2"),
        "deep-trailing-data": (arrays + b"]" * depth + b" 1", "SESSION-LOSSLESS-TEXT.2"),
        "deep-bad-escape": (arrays + b'"\\x"' + b"]" * depth, "SESSION-LOSSLESS-TEXT.2"),
        "deep-bad-key-escape": (objects + b'{"\\x":1}' + closing, "SESSION-LOSSLESS-TEXT.2"),
    }


def values(depth: int = DEPTH) -> dict[str, tuple[bytes, str]]:
    """name -> (JSON text placed as an ignorable event's data, VALID or the rule that refuses it)."""
    return {**VALUES, **deep(depth)}


VALUES: dict[str, tuple[bytes, str]] = {
    "lone-high-surrogate": (b'"a\\ud800b"', VALID),
    "lone-low-surrogate": (b'["\\udfff"]', VALID),
    "astral-pair": (b'"\\ud83d\\ude00 \xf0\x9f\x98\x80"', VALID),
    "terminal-escapes": (b'{"text":"\\u001b[2J\\u0007\\u202e\\u0000"}', VALID),
    "safe-extremes": (b"[9007199254740991,-9007199254740991,5e-324,1.7976931348623157e308]", VALID),
    "empty-containers": (b'[{},[],"",0,false,null]', VALID),
    "long-string": (b'"' + b"x" * (1 << 20) + b'"', VALID),
    "nan": (b"NaN", "SESSION-LOSSLESS-TEXT.3"),
    "infinity": (b"[-Infinity]", "SESSION-LOSSLESS-TEXT.3"),
    "overflow": (b"1e400", "SESSION-LOSSLESS-TEXT.3"),
    "negative-zero": (b"-0", "SESSION-LOSSLESS-TEXT.5"),
    "negative-zero-float": (b"[-0.0e5]", "SESSION-LOSSLESS-TEXT.5"),
    "unsafe-integer": (b"9007199254740992", "SESSION-LOSSLESS-TEXT.4"),
    "integer-100k-digits": (b"7" * 100_000, "SESSION-LOSSLESS-TEXT.4"),
    "duplicate-key": (b'{"a":1,"b":2,"a":1}', "SESSION-LOSSLESS-TEXT.6"),
    "invalid-utf8": (b'"\xff"', "SESSION-LOSSLESS-TEXT.1"),
    "surrogate-bytes": (b'"\xed\xa0\x80"', "SESSION-LOSSLESS-TEXT.1"),
    "overlong-utf8": (b'"\xc0\xaf"', "SESSION-LOSSLESS-TEXT.1"),
    "byte-order-mark": (b"\xef\xbb\xbf{}", "SESSION-LOSSLESS-TEXT.2"),
    "trailing-comma": (b"[1,]", "SESSION-LOSSLESS-TEXT.2"),
    "raw-control-character": (b'"\x01"', "SESSION-LOSSLESS-TEXT.2"),
    "bad-escape": (b'"\\x41"', "SESSION-LOSSLESS-TEXT.2"),
    "leading-zero": (b"012", "SESSION-LOSSLESS-TEXT.2"),
    "two-values": (b"1 2", "SESSION-LOSSLESS-TEXT.2"),
    **deep(100_000),
}
"""The classes at full size (100,000 levels of nesting, as decision 4 promises); `values` scales the deep ones."""


def _record_class(name: str, seq: int) -> tuple[bytes, str]:
    """Whole-record classes of spec/02 and spec/07: (the stored line, the rule)."""
    event = {"type": HOSTILE, "seq": seq, "time": 1000 + seq, "data": {}, "ignorable": True}
    row = {"type": "text-chunks", "seq0": seq, "time0": 0, "data": {"turn": 1, "step": 1, "index": 0, "dt": [1, 1],
                                                                     "texts": ["a", "b", "c"]}}
    cases: dict[str, tuple[Any, str]] = {
        "seq-gap": ({**event, "seq": seq + 1}, "SESSION-STORAGE-SEQ.1"),
        "seq-repeat": ({**event, "seq": seq - 1}, "SESSION-STORAGE-SEQ.1"),
        "type-object": ({**event, "type": {"a": 1}}, "SESSION-EVENT-ENVELOPE.2"),
        "type-empty": ({**event, "type": ""}, "SESSION-EVENT-ENVELOPE.8"),
        "unknown-type": ({k: v for k, v in event.items() if k != "ignorable"}, "SESSION-UNKNOWN-EVENT-GATE.1"),
        "retired-type": ({**event, "type": "mode/set", "ignorable": None}, "SESSION-"),
        "ignorable-false": ({**event, "ignorable": False}, "SESSION-EVENT-ENVELOPE.6"),
        "no-data": ({k: v for k, v in event.items() if k != "data"}, "SESSION-EVENT-ENVELOPE.5"),
        "time-unsafe": ({**event, "time": 2**53}, "SESSION-LOSSLESS-TEXT.4"),
        "not-an-object": ([1, 2], "SESSION-STORAGE-SEQ.1"),
        "row-extra-key": ({**row, "seq": 1}, "SESSION-CHUNK-ROWS.1"),
        "row-dt-mismatch": ({**row, "data": {**row["data"], "dt": [1]}}, "SESSION-CHUNK-ROWS.4"),
        "row-turn-string": ({**row, "data": {**row["data"], "turn": "1"}}, "SESSION-CHUNK-ROWS.3"),
        "row-too-many-members": ({**row, "data": {**row["data"], "dt": [0] * 65_536, "texts": [""] * 65_537}},
                                 "SESSION-CHUNK-ROWS.8"),
        "row-seq-unsafe": ({**row, "seq0": 2**53 - 2}, "SESSION-CHUNK-ROWS.2"),
        "misspelt-message": ({"type": "assistant/message", "seq": seq, "time": 0, "surfaceOp": "append",
                              "data": {"turn": 2, "step": 1, "mesage": {"id": "x"}}}, "SESSION-MESSAGE-SHAPE.9"),
    }
    value, rule = cases[name]
    if name == "retired-type":
        value.pop("ignorable")
    return json.dumps(value, separators=(",", ":")).encode(), rule


RECORD_CLASSES = ("seq-gap", "seq-repeat", "type-object", "type-empty", "unknown-type", "retired-type", "ignorable-false",
                  "no-data", "time-unsafe", "not-an-object", "row-extra-key", "row-dt-mismatch", "row-turn-string",
                  "row-too-many-members", "row-seq-unsafe", "misspelt-message")


def value_log(directory: Path, fmt: str, name: str, where: str, depth: int = DEPTH) -> tuple[Path, str]:
    """A log of backend `fmt` with value class `name` as the data of an ignorable event `where`; and its rule."""
    batches, seq = placed(where)
    text, rule = values(depth)[name]
    return write_raw(directory / f"{name}-{where}.{fmt}", fmt, batches, {seq: text}), rule


def deep_log(directory: Path, fmt: str, depth: int, *, open_tail: bool) -> Path:
    """A valid log of backend `fmt` holding a `depth`-deep array as an ignorable event's data: at its open tail (a
    repair writes closers after it) or in its middle (a closed turn follows). 1,000,000 is the issue's depth."""
    return value_log(directory, fmt, "deep-arrays", "tail" if open_tail else "middle", depth)[0]


def record_log(directory: Path, fmt: str, name: str, where: str) -> tuple[Path, str]:
    """A JSONL or zstd log whose hostile record is replaced by the record class `name`; and its rule."""
    batches, seq = placed(where)
    line, rule = _record_class(name, seq)
    records = [[line if json.loads(raw).get("seq") == seq and json.loads(raw).get("type") == HOSTILE else raw
                for raw in lines_of(batch)] for batch in batches]
    path = directory / f"{name}-{where}.{fmt}"
    return (write_jsonl if fmt == "jsonl" else write_zstd)(path, records), rule


def clean_log(path: Path, fmt: str, *, open_tail: bool = False, turns: int = 2) -> Path:
    batches = agent_log(turns, open_tail=open_tail)
    if fmt == "sqlite":
        return write_sqlite(path, batches)
    return (write_jsonl if fmt == "jsonl" else write_zstd)(path, [lines_of(batch) for batch in batches])


# --- bad files and corruptions -------------------------------------------------------------------------


def corruptions(source: Path, directory: Path, count: int, seed: int) -> Iterator[Path]:
    """`count` copies of `source`, each with 1 to 8 random bytes overwritten (the header's bytes included)."""
    data = source.read_bytes()
    rng = random.Random(seed)
    for k in range(count):
        damaged = bytearray(data)
        for _ in range(rng.randint(1, 8)):
            damaged[rng.randrange(len(damaged))] = rng.randrange(256)
        path = directory / f"corrupt-{seed}-{k}{''.join(source.suffixes)}"
        path.write_bytes(bytes(damaged))
        yield path


def cuts(source: Path, directory: Path, records: int, step: int = 1) -> Iterator[Path]:
    """Copies of `source` cut at every `step`-th byte offset within its last `records` records (or frames)."""
    data = source.read_bytes()
    if source.name.endswith(".zstd"):
        starts = [i for i in range(len(data)) if data.startswith(b"\x28\xb5\x2f\xfd", i)]
        first = starts[-records] if len(starts) > records else starts[-1]
    else:
        ends = [i + 1 for i, byte in enumerate(data) if byte == 0x0A]
        first = ends[-records - 1] if len(ends) > records else ends[0]
    for offset in range(first, len(data), step):
        path = directory / f"cut-{offset}{''.join(source.suffixes)}"
        path.write_bytes(data[:offset])
        yield path


def bad_files(directory: Path) -> Iterator[tuple[str, Path]]:
    """Files that are no log at all: each must be refused (exit 2, or 1 naming a rule), never block a tool."""
    (directory / "empty.jsonl").write_bytes(b"")
    yield "empty", directory / "empty.jsonl"
    (directory / "dir.jsonl").mkdir()
    yield "directory", directory / "dir.jsonl"
    os.mkfifo(directory / "fifo.jsonl")
    yield "fifo", directory / "fifo.jsonl"
    os.symlink(directory / "loop-b.jsonl", directory / "loop-a.jsonl")
    os.symlink(directory / "loop-a.jsonl", directory / "loop-b.jsonl")
    yield "symlink-loop", directory / "loop-a.jsonl"
    os.symlink("/dev/zero", directory / "device.jsonl")
    yield "device", directory / "device.jsonl"
    (directory / "magic.sqlite").write_bytes(b"SQLite format 2\x00" + bytes(4080))
    yield "wrong-magic", directory / "magic.sqlite"
    (directory / "array.jsonl").write_bytes(b"[]\n")
    yield "array-header", directory / "array.jsonl"
    with contextlib.closing(sqlite3.connect(directory / "foreign.sqlite")) as connection:
        connection.execute("CREATE TABLE t (x)")
        connection.commit()
    yield "foreign-schema", directory / "foreign.sqlite"


SPECIAL_FILES = {
    "proc-mem": "/proc/self/mem",
    "proc-status": "/proc/self/status",
    "sys-file": "/sys/kernel/mm/transparent_hugepage/enabled",
    "char-device-null": "/dev/null",
    "char-device-zero": "/dev/zero",
    "char-device-random": "/dev/urandom",
}
"""Paths that are no regular file after symbolic links (SESSION-STORAGE-RECORD.2): pseudo files that call themselves
regular, whose size means nothing and whose read fails or never ends, and character devices."""


def special_files(directory: Path, kinds: tuple[str, ...] = tuple(SPECIAL_FILES),
                  suffixes: tuple[str, ...] = (".jsonl", ".jsonl.zstd", ".sqlite")) -> Iterator[tuple[str, Path]]:
    """A symbolic link named as a log of each backend to each special file of `kinds` that exists on this machine."""
    for kind in kinds:
        target = SPECIAL_FILES[kind]
        if not os.path.exists(target):
            continue
        for suffix in suffixes:
            link = directory / f"{kind}{suffix}"
            os.symlink(target, link)
            yield kind, link


FOREIGN_OBJECTS = {
    "recursive-trigger": "CREATE TRIGGER t AFTER INSERT ON events BEGIN SELECT count(*) FROM (WITH RECURSIVE c(n) AS "
                         "(SELECT 1 UNION ALL SELECT n + 1 FROM c) SELECT n FROM c); END",
    "trigger-on-sessions": "CREATE TRIGGER t BEFORE UPDATE ON sessions BEGIN SELECT RAISE(ABORT, 'no'); END",
    "view": "CREATE VIEW v AS SELECT seq, type FROM events",
    "index": "CREATE INDEX i ON events (type)",
    "table": "CREATE TABLE notes (x)",
}
"""Schema objects the format does not define (SESSION-SQLITE-SCHEMA.5); the first makes every insert loop for ever."""


def foreign_schema(directory: Path, kind: str, *, open_tail: bool = True) -> Path:
    """A SQLite log (open tail: a repair would write) holding the schema object `kind` besides the format's own."""
    path = write_sqlite(directory / f"foreign-{kind}.sqlite", agent_log(2, open_tail=open_tail))
    with contextlib.closing(sqlite3.connect(path)) as connection:
        connection.execute(FOREIGN_OBJECTS[kind])
        connection.commit()
    return path


def damaged_pages(source: Path, directory: Path) -> Iterator[Path]:
    """Copies of a SQLite log with one whole page (after the first) overwritten with 0xFF, and cut at each page."""
    data = source.read_bytes()
    size = 4096
    for page in range(1, len(data) // size):
        damaged = bytearray(data)
        damaged[page * size:(page + 1) * size] = b"\xff" * size
        path = directory / f"page-{page}.sqlite"
        path.write_bytes(bytes(damaged))
        yield path
        cut = directory / f"short-{page}.sqlite"
        cut.write_bytes(data[: page * size + 100])
        yield cut


# --- logs that cost more than their size: many frames, rows and BLOBs, each within its own bound ---------


TURN_END_LINE = b'"turn/end"'
"""A line that names a turn/end without being one: after a defect each must be parsed, none proves anything."""


def expanding_zstd(directory: Path, frames: int, per_frame: int, line: bytes = TURN_END_LINE) -> Path:
    """An open turn, then `frames` identical frames of `per_frame` copies of `line`, each frame within
    SESSION-ZSTD-FRAMES.5 and a hundred bytes of zstd: (1,000, 65,535) is the issue's 90 KB log of 65 M lines."""
    path = write_zstd(directory / f"frames-{frames}x{per_frame}.jsonl.zstd", [lines_of(agent_log(1, open_tail=True)[0])])
    one = zstandard.ZstdCompressor(level=19, write_checksum=True).compress((line + b"\n") * per_frame)
    with open(path, "ab") as stream:
        for _ in range(frames):
            stream.write(one)
    return path


def chunk_row(seq: int, members: int, *, turn: int = 1) -> dict[str, Any]:
    """A valid packed row of `members` empty text deltas a millisecond apart (SESSION-CHUNK-ROWS.1-.4)."""
    return {"type": "text-chunks", "seq0": seq, "time0": 2000 + seq,
            "data": {"turn": turn, "step": 1, "index": 0, "dt": [0] * (members - 1), "texts": [""] * members}}


def expanding_rows(directory: Path, fmt: str, rows: int, members: int) -> Path:
    """An open turn inside a step, then `rows` valid packed rows of `members` members each: zstd, one row a frame;
    SQLite, one row each, its `data` a zstd BLOB (at most 1,024 members a row there, SESSION-CHUNK-ROWS.5)."""
    batch = agent_log(1, open_tail=True)[0][:3]  # turn/start, user/message, step/start
    seq = len(batch)
    records = []
    for _ in range(rows):
        records.append(chunk_row(seq, members))
        seq += members
    if fmt == "sqlite":
        path = directory / f"rows-{rows}x{members}.sqlite"
        with contextlib.closing(sqlite3.connect(path)) as connection:
            connection.execute("PRAGMA page_size = 512")  # the smallest file SQLite writes: the densest rows
            connection.execute("VACUUM")
        write_sqlite(path, [batch])
        with contextlib.closing(sqlite3.connect(path)) as connection:
            connection.executemany("INSERT INTO events VALUES ('h', ?, 'text-chunks', ?, ?, NULL, NULL, 0)",
                                   [(r["seq0"], r["time0"], zstandard.ZstdCompressor(level=3).compress(
                                       dumps(r["data"]).encode())) for r in records])
            connection.commit()
        return path
    return write_zstd(directory / f"rows-{rows}x{members}.jsonl.zstd",
                      [lines_of(batch)] + [[dumps(record).encode()] for record in records])


def expanding_blobs(directory: Path, rows: int, size: int) -> Path:
    """A SQLite log whose open turn is followed by `rows` ignorable events, each `data` a zstd BLOB of a few hundred
    bytes that decodes to `size` bytes (spaces, then `{}`: valid JSON within the record bound)."""
    batch = agent_log(1, open_tail=True)[0]
    path = write_sqlite(directory / f"blobs-{rows}x{size}.sqlite", [batch])
    blob = zstandard.ZstdCompressor(level=19).compress(b" " * (size - 2) + b"{}")
    with contextlib.closing(sqlite3.connect(path)) as connection:
        connection.executemany("INSERT INTO events VALUES ('h', ?, ?, 0, ?, NULL, NULL, 1)",
                               [(len(batch) + k, HOSTILE, blob) for k in range(rows)])
        connection.commit()
    return path


def expanders(directory: Path, records: int = 1 << 16, plain: int = 256 << 20) -> Iterator[tuple[str, Path]]:
    """One log of each class that costs more than its size allows (SESSION-STORAGE-RECORD.3), sized to pass the
    budget's floors (`records`, `plain`: the real ones by default; a test that lowers them gets smaller logs)."""
    yield "zstd frames of turn/end lines", expanding_zstd(directory, 8, min(65_535, records - 1))
    yield "zstd frames of packed rows", expanding_rows(directory, "jsonl.zstd", 3, min(65_536, records))
    yield "sqlite packed rows", expanding_rows(directory, "sqlite", -(-4 * records // 1_024), 1_024)
    yield "sqlite BLOBs", expanding_blobs(directory, 12, plain // 8)


# --- running a command, and what the load gate says -----------------------------------------------------


@dataclass(frozen=True)
class Ran:
    code: int
    out: str
    err: str
    traceback: str | None


def run_cli(*argv: str) -> Ran:
    """`sessionspec ARGV` in this process, stdout and stderr as strict UTF-8 pipes; a traceback is reported, not raised."""
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", newline="")
    err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", newline="")
    caught = None
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(argv))
        except KeyboardInterrupt:
            raise
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else 2
        except BaseException:
            caught, code = traceback.format_exc(), -1
    texts = []
    for stream in (out, err):
        stream.flush()
        texts.append(stream.buffer.getvalue().decode("utf-8", "backslashreplace"))  # type: ignore[attr-defined]
    return Ran(code, texts[0], texts[1], caught)


@dataclass(frozen=True)
class Verdict:
    """What the load gate says of a file: `clean`, `repairable` (a torn tail or closers), `refused` or `unreadable`."""

    state: str
    rule: str | None = None
    events: tuple[Any, ...] = ()
    closers: tuple[Any, ...] = ()
    torn: bool = False


def oracle(path: Path) -> Verdict:
    try:
        result = storage.load(path)
    except storage.Unreadable:
        return Verdict("unreadable")
    except SpecViolation as violation:
        return Verdict("unreadable" if violation.kind is Kind.VERSION else "refused", violation.rule)
    events = tuple(dumps(e.to_json()) for e in result.events)  # text: a 100,000-deep value compares without recursion
    closers = tuple(dumps(e.to_json()) for e in result.closers)
    return Verdict("repairable" if result.needs_repair else "clean", None, events, closers, result.torn is not None)


EXPECTED_EXIT = {
    "check": {"clean": 0, "repairable": (0, 1), "refused": 1, "unreadable": 2},
    "show": {"clean": 0, "repairable": (0, 1), "refused": 1, "unreadable": 2},
    "repair": {"clean": 0, "repairable": 0, "refused": 1, "unreadable": 2},
}
"""The exit code each tool owes for what the gate says: a torn tail is a finding (1); closers alone are not (0)."""



def oracle_peak(path: Path) -> tuple[Verdict, int]:
    """The oracle's verdict and the peak of Python memory it took to reach it (tracemalloc), for the bounds."""
    tracemalloc.start()
    try:
        verdict = oracle(path)
        return verdict, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def copy(path: Path, directory: Path) -> Path:
    target = directory / f"copy-{path.name}"
    shutil.copyfile(path, target)
    return target


# --- values a message names: nested past any recursion, or megabytes long (issue 28, item 6) ---------------

MESSAGE_DEPTH = 100_000
MESSAGE_SIZE = 10 << 20
"""The issue's sizes: an array 100,000 levels deep (`repr` raises RecursionError past about 1,000) and a 10 MiB
string (a 10 MB message when quoted whole). The default slice nests `DEPTH` levels (past the recursion limit too;
a 100,000-deep value costs a third of a second to copy, each time); the nightly run, and the issue's own cases,
the full depth."""
MESSAGE_BOUND = 1024
"""What a refusal's whole text (`str(violation)`: rule, kind, place and message) may take."""
CREATE = {"version": 0, "id": "s", "createdAt": 0}
"""A valid create header; each class below puts one hostile value in it, or in an append request."""


def nested(depth: int) -> list[Any]:
    """An array `depth` levels deep, built without recursion."""
    root: list[Any] = []
    level = root
    for _ in range(depth - 1):
        inner: list[Any] = []
        level.append(inner)
        level = inner
    return root


def hostile_values(depth: int = MESSAGE_DEPTH, size: int = MESSAGE_SIZE) -> dict[str, Any]:
    """name -> the value: `deep` (an array `depth` levels deep) and `huge` (a string of `size` characters)."""
    return {"deep": nested(depth), "huge": "x" * size}


def hostile_texts(depth: int = MESSAGE_DEPTH, size: int = MESSAGE_SIZE) -> dict[str, bytes]:
    """The same values as JSON text, for a request line or a stored record."""
    return {"deep": b"[" * depth + b"]" * depth, "huge": b'"' + b"x" * size + b'"'}


HEADER_FIELDS: dict[str, dict[str, str | None]] = {
    "version": {"deep": "SESSION-FORMAT-HEADER.2", "huge": "SESSION-FORMAT-HEADER.2"},
    "id": {"deep": "SESSION-FORMAT-HEADER.3", "huge": "SESSION-FORMAT-HEADER.3"},
    "createdAt": {"deep": "SESSION-FORMAT-HEADER.4", "huge": "SESSION-FORMAT-HEADER.4"},
    "cwd": {"deep": "SESSION-FORMAT-HEADER.5", "huge": "SESSION-FORMAT-HEADER.5"},
    "parentSession": {"deep": "SESSION-FORMAT-HEADER.6", "huge": None},
    "seedLength": {"deep": "SESSION-FORMAT-HEADER.7", "huge": "SESSION-FORMAT-HEADER.7"},
    "origin": {"deep": "SESSION-FORMAT-HEADER.8", "huge": "SESSION-FORMAT-HEADER.8"},
    "delegationDepth": {"deep": "SESSION-FORMAT-HEADER.9", "huge": "SESSION-FORMAT-HEADER.9"},
    "agentPreset": {"deep": "SESSION-FORMAT-HEADER.10", "huge": None},
    "unknown": {"deep": "SESSION-FORMAT-HEADER.11", "huge": "SESSION-FORMAT-HEADER.11"},
}
"""Each header field, with the rule that refuses each hostile value in it (None: a huge string is a valid value there;
the id's is refused only because it is not the session's). `unknown` is a key no header has."""

APPEND_KEYS: dict[str, tuple[dict[str, Any], dict[str, str | None]]] = {
    "type": ({"data": {}}, {"deep": "SESSION-EVENT-ENVELOPE.2", "huge": None}),
    "data": ({"type": "turn/start"}, {"deep": None, "huge": None}),
    "surfaceOp": ({"type": "user/message", "data": {}},
                  {"deep": "SESSION-SURFACE-PROJECTION.4", "huge": "SESSION-SURFACE-PROJECTION.4"}),
    "sourceEventSeqs": ({"type": "assistant/message", "data": {}, "surfaceOp": "append"},
                        {"deep": "SESSION-SURFACE-PROVENANCE.3", "huge": "SESSION-SURFACE-PROVENANCE.1"}),
    "ignorable": ({"type": "turn/start", "data": {"turn": 1}},
                  {"deep": "SESSION-EVENT-ENVELOPE.6", "huge": "SESSION-EVENT-ENVELOPE.6"}),
    "unknown": ({"type": "turn/start", "data": {"turn": 1}},
                {"deep": "SESSION-EVENT-ENVELOPE.1", "huge": "SESSION-EVENT-ENVELOPE.1"}),
}
"""Each key of an append request, the rest of a request that reaches the key's check, and the rule that refuses each
hostile value in it (None: accepted, as data is, and a type that is a long string)."""


def hostile_header(field: str, value: Any) -> dict[str, Any]:
    """A create header with `value` in `field`."""
    return {**CREATE, field: value}


def hostile_append(key: str, value: Any) -> dict[str, Any]:
    """An append request with `value` in `key`, the rest of it valid up to that key's check."""
    rest, _ = APPEND_KEYS[key]
    return {**rest, key: value}


def _splice(record: dict[str, Any], key: str, text: bytes) -> bytes:
    """`record` as JSON text with `key` set to the JSON `text` (written as bytes: the value may be too deep for `json`)."""
    head = dumps({k: v for k, v in record.items() if k != key}).encode()
    return head[:-1] + (b"," if len(head) > 2 else b"") + json.dumps(key).encode() + b":" + text + b"}"


def hostile_header_log(path: Path, field: str, text: bytes) -> Path:
    """A JSONL log whose header carries the JSON `text` in `field`; the events after it are valid."""
    return write_jsonl(path, [lines_of(batch) for batch in agent_log(1)], _splice(HEADER, field, text))


def hostile_event_log(path: Path, key: str, text: bytes, *, at: int = 2, data_key: str | None = None) -> Path:
    """A JSONL log whose event `at` carries the JSON `text` in envelope `key` (or, with `data_key`, in that key of its
    data); everything else valid."""
    events = [event for batch in agent_log(2) for event in batch]
    lines = [dumps(event).encode() for event in events]
    event = events[at]
    if data_key is not None:
        lines[at] = _splice({k: v for k, v in event.items() if k != "data"}, "data", _splice(event["data"], data_key, text))
    else:
        lines[at] = _splice(event, key, text)
    return write_jsonl(path, [lines])


# --- faults of the machine: a read-only or full file system, a file-size limit, long names, a closed or full stdout ---
# (issue 34): none says anything about a log, so every tool owes exit 2 with one line naming the fault, no traceback,
# no finding ("damaged"), and the log unchanged or valid; a failed `repair --write` leaves no new file beside it.

FAULT_ERRNOS = ("EROFS", "ENOSPC", "EFBIG", "ENAMETOOLONG", "EBADF", "EPIPE", "EACCES", "EIO")
"""The error names a fault's one line ends with (cli/faults.py)."""
NAME_MAX = 255
PATH_MAX = 4096
"""Linux's bounds on a file name and a path (with its NUL): the long-name sweep goes up to each."""


def mount_tmpfs(directory: Path, *options: str) -> str | None:
    """A tmpfs mounted on `directory` (`-o` options); None when mounted, else why it cannot be (not root, no mount)."""
    directory.mkdir(parents=True, exist_ok=True)
    if shutil.which("mount") is None or os.geteuid() != 0:
        return "mounting a file system needs root and mount(8)"
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", ",".join(("mode=0777", *options)), "tmpfs", str(directory)],
                          capture_output=True, text=True)
    return None if done.returncode == 0 else f"mount -t tmpfs failed: {done.stderr.strip()}"


def remount_read_only(directory: Path) -> str | None:
    done = subprocess.run(["mount", "-o", "remount,ro", str(directory)], capture_output=True, text=True)
    return None if done.returncode == 0 else f"remount ro failed: {done.stderr.strip()}"


def unmount(directory: Path) -> None:
    subprocess.run(["umount", "-l", str(directory)], capture_output=True)


def fill(directory: Path) -> None:
    """Every free byte of the file system of `directory` taken by one file (a full disk)."""
    fd = os.open(directory / "filler", os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for size in (1 << 16, 4096, 1):
            with contextlib.suppress(OSError):
                while os.write(fd, b"\0" * size):
                    pass
    finally:
        os.close(fd)


def repairable_logs(directory: Path) -> dict[str, Path]:
    """One log of each backend that a repair writes to: an open tail (closers to append) and, JSONL and zstd, a torn
    fragment after it too (a cut first), with turns enough that the closers outgrow a tmpfs page's slack."""
    logs = {}
    for fmt in FORMATS:
        logs[fmt] = clean_log(directory / f"open.{fmt}", fmt, open_tail=True, turns=2)
    for fmt in ("jsonl", "jsonl.zstd"):
        torn = directory / f"torn.{fmt}"
        torn.write_bytes(logs[fmt].read_bytes() + (b'{"type":"tool/result","seq":' if fmt == "jsonl" else b"\x28\xb5\x2f\xfd\x00"))
        logs[f"torn-{fmt}"] = torn
    return logs


@dataclass(frozen=True)
class Faulted:
    """A command run in a subprocess under a fault: its exit code, stdout, stderr."""

    code: int
    out: str
    err: str


def run_faulted(argv: list[str], *, stdout: str = "pipe", file_size: int | None = None, timeout: float = 120) -> Faulted:
    """`sessionspec ARGV` in a fresh interpreter with standard output `pipe`, `closed` (fd 1 closed before Python
    starts), `full` (/dev/full) or `broken` (a pipe whose reader is gone), and RLIMIT_FSIZE set to `file_size`."""
    def limits() -> None:
        if file_size is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (file_size, file_size))
        if stdout == "closed":
            os.close(1)

    command = [sys.executable, "-m", "sessionspec.cli", *argv]
    out: Any = {"pipe": subprocess.PIPE, "closed": subprocess.DEVNULL, "full": None}.get(stdout)
    if stdout == "broken":
        read, write = os.pipe()
        os.close(read)
        out = write
    target = open("/dev/full", "wb") if stdout == "full" else None  # noqa: SIM115 - closed below
    try:
        done = subprocess.run(command, stdout=target or out, stderr=subprocess.PIPE, preexec_fn=limits,
                              timeout=timeout, env=dict(os.environ, SESSIONSPEC_NO_PROGRESS="1"))
    finally:
        if target is not None:
            target.close()
        if stdout == "broken":
            os.close(out)
    text = (done.stdout or b"").decode("utf-8", "replace")
    return Faulted(done.returncode, text, done.stderr.decode("utf-8", "replace"))


def fault_line(err: str) -> str:
    """The one line a fault owes (and nothing else on stderr): asserted by the callers, returned for their messages."""
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err[-3000:]
    assert lines[0].startswith("sessionspec: ") and lines[0].rstrip(")").rsplit("(", 1)[-1] in FAULT_ERRNOS, lines[0]
    return lines[0]


def long_names(directory: Path, fmt: str, lengths: Iterator[int] | list[int]) -> Iterator[tuple[int, Path]]:
    """A clean and open log of backend `fmt` under a file name of each length (bytes, the suffix included)."""
    source = clean_log(directory / f"source.{fmt}", fmt, open_tail=True)
    suffix = f".{fmt}"
    for length in lengths:
        path = directory / ("n" * (length - len(suffix)) + suffix)
        shutil.copyfile(source, path)
        yield length, path
        for leftover in directory.iterdir():
            if leftover.name.startswith("n"):
                leftover.unlink()


def deep_path(directory: Path, length: int, suffix: str) -> Path:
    """A path of exactly `length` bytes (absolute) under `directory`: directories of 200 bytes, then the file name."""
    base = len(os.fsencode(str(directory.absolute()))) + 1
    parts: list[str] = []
    while length - base - sum(len(p) + 1 for p in parts) > 200 + len(suffix) + 1:
        parts.append("d" * 200)
    name = length - base - sum(len(p) + 1 for p in parts)
    folder = directory.joinpath(*parts)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / ("f" * (name - len(suffix)) + suffix)
    assert len(os.fsencode(str(path.absolute()))) == length
    return path
