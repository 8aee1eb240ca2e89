"""Opening a stored log for the tools: which backend wrote it, its header, and its records in order.

The zstd and SQLite readers are the storage backends' own (sessionspec.storage), so the tools
see exactly the committed region a load would see. Plain JSONL, the format people check most
and the one whose speed is measured, has a lean loop here: orjson parses a block of lines at
once, and the lines go on only if each is exactly what a canonical writer would have written
for the value orjson read (so no duplicate key, no -0, no 1E5, no integer beyond 2**53-1 can
hide in it; see `_block`). Every other line is parsed by the lossless parser, which names the
rule it breaks. The torn tail is decided by the backends' `Scanner`, fed the same records.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from operator import itemgetter
from pathlib import Path
from typing import Any, BinaryIO, Final

import orjson

from sessionspec.errors import SpecViolation
from sessionspec.jsonvalue import MAX_SAFE_INTEGER, FrozenDict, Json
from sessionspec.storage.chunkrows import ROW_TAGS
from sessionspec.storage.gate import MAX_RECORD_BYTES, Scanner, TornTail
from sessionspec.storage.jsonl import read_header

ZSTD_MAGIC: Final = b"\x28\xb5\x2f\xfd"
SQLITE_MAGIC: Final = b"SQLite format 3\x00"
_SLOW: Final = object()
_LOADS = orjson.loads
_DUMPS = orjson.dumps
_STRICT: Final = orjson.OPT_STRICT_INTEGER
_DECODE_ERROR = orjson.JSONDecodeError
_ENCODE_ERROR = orjson.JSONEncodeError


def _parsed(value: Json) -> Json:
    return value


@dataclass(frozen=True, slots=True)
class Members:
    """A packed chunk row that the lean check proved decodes: `count` assistant/chunk events from `seq0`.

    Yielded instead of the expanded events when the consumer does not need their data (a
    non-strict check); `row` is the stored record, for a consumer that does.
    """

    seq0: int
    count: int
    row: Json


_INT: Final = frozenset({int})


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
        if (type(texts) is not list or type(gaps) is not list or len(gaps) + 1 != len(texts)
                or type(data["turn"]) is not int or type(data["step"]) is not int or type(data["index"]) is not int
                or not set(map(type, gaps)) <= _INT
                or abs(time0) + sum(map(abs, gaps)) > MAX_SAFE_INTEGER or seq0 + len(texts) > MAX_SAFE_INTEGER):
            return 0
        "".join(texts)  # one string per member: TypeError on anything else (orjson makes no str subclass)
    except (KeyError, TypeError):
        return 0
    return len(texts)


class Unreadable(Exception):
    """Not a session log this build can open at all (missing, unknown format, no header): exit 2."""


def detect(path: Path) -> str:
    """The backend that wrote `path`, by its first bytes: "jsonl", "jsonl.zstd" or "sqlite"."""
    try:
        with open(path, "rb") as stream:
            head = stream.read(16)
    except OSError as error:
        raise Unreadable(f"{path}: {error.strerror or error}") from None
    if head.startswith(ZSTD_MAGIC):
        return "jsonl.zstd"
    if head.startswith(SQLITE_MAGIC):
        return "sqlite"
    if head.startswith(b"{"):
        return "jsonl"
    raise Unreadable(f"{path}: not a session log (neither JSONL, zstd-framed JSONL nor SQLite)")


def fast_parse(raw: bytes) -> Any:
    """The value of one line (without its newline), or _SLOW when only the lossless parser may decide."""
    try:
        value = _LOADS(raw)
        again = _DUMPS(value, option=_STRICT)
    except (_DECODE_ERROR, _ENCODE_ERROR):
        return _SLOW
    if again != raw or b"-0.0" in raw:
        return _SLOW
    return value


class Log:
    """One opened log: `header`, `records()` yielding (line, raw event), then `torn` once exhausted."""

    def __init__(self, path: Path, fmt: str, header: FrozenDict, records: Callable[[], Iterator[tuple[int | None, Json]]],
                 torn: Callable[[], TornTail | None], progress: Callable[[], tuple[int, int]]) -> None:
        self.path = path
        self.format = fmt
        self.header = header
        self.records = records
        self._torn = torn
        self.progress = progress
        """(bytes or rows done, total): what a progress bar shows."""

    @property
    def torn(self) -> TornTail | None:
        return self._torn()


Consume = Callable[[list[Any], int, int], tuple[int, int]]
"""`consume(values, start, expected) -> (taken, next seq)`: a consumer's own hot loop over a block (see Checker.fast_block)."""


def open_log(path: Path, session_id: str | None = None, *, expand: bool = True, consume: Consume | None = None) -> Log:
    """Open `path` with the backend that wrote it. Raises Unreadable, or SpecViolation for a bad header."""
    fmt = detect(path)
    if fmt == "jsonl":
        return _open_jsonl(path, session_id, expand, consume)
    if fmt == "jsonl.zstd":
        from sessionspec.storage.zstdlog import ZstdReader

        zstd = ZstdReader(path, session_id)
        size = path.stat().st_size
        return Log(path, fmt, zstd.header, zstd.records, lambda: zstd.torn, lambda: (size, size))
    return _open_sqlite(path, session_id)


def _open_sqlite(path: Path, session_id: str | None) -> Log:
    try:
        from sessionspec.storage import sqlite as backend
    except ImportError:
        raise Unreadable(f"{path}: this build has no SQLite backend") from None
    reader: Any = backend.SqliteReader(path, session_id)
    return Log(path, "sqlite", reader.header, reader.records, lambda: reader.torn, lambda: (0, 0))


def _open_jsonl(path: Path, session_id: str | None, expand: bool, consume: Consume | None) -> Log:
    stream: BinaryIO = open(path, "rb")  # noqa: SIM115 - closed when the records are exhausted
    try:
        header, offset = read_header(stream, str(path), session_id)
    except BaseException:
        stream.close()
        raise
    scanner = Scanner(str(path), committed_end=offset)
    size = path.stat().st_size
    state: dict[str, Any] = {"torn": None}

    def records() -> Iterator[tuple[int | None, Json]]:
        with stream:
            yield from _jsonl_records(stream, scanner, offset, state, expand, consume)

    return Log(path, "jsonl", header, records, lambda: state["torn"], lambda: (stream.tell() if not stream.closed else size, size))


BLOCK: Final = 32 << 10
"""Small enough that a block's parsed values stay in cache (a MiB block halves the parse rate)."""


_KEY: Final = "~" * 24
_OPEN: Final = b'[{"' + _KEY.encode() + b'":'
_MARK: Final = b'},{"' + _KEY.encode() + b'":'
_CLOSE: Final = b"}]"
_UNWRAP: Final = itemgetter(_KEY)
_DOTS_LOOKED_AT: Final = 64


def _negative_zero(part: bytes) -> bool:
    """Whether `-0.0` occurs in `part`: by its dot, found with memchr, while dots are few, then by search.

    A substring search for a short needle of common characters is slow (about 0.6 ns a byte);
    finding the dots is memchr speed, and most blocks hold few dots.
    """
    find = part.find
    at = find(b".")
    for _ in range(_DOTS_LOOKED_AT):
        if at < 0:
            return False
        if at >= 2 and part.startswith(b"-0.0", at - 2):
            return True
        at = find(b".", at + 1)
    return at >= 0 and part.find(b"-0.0", max(at - 2, 0)) >= 0


def _block(part: bytes) -> list[Any] | None:
    """The values of a block of complete lines (without the last newline) if every line is canonical JSON, else None.

    One orjson parse and one dump for the whole block (a split and a parse per line cost a
    third more). Each line is wrapped as `{"KEY":line}` and the wraps joined by commas, one
    array text T, by a single `replace` of the newlines with the separator M = `},{"KEY":`.
    The block is accepted only if the canonical dump of the parsed array is T itself, M occurs
    in no line, the array has one element per line, and each element is a dict of the one key
    KEY. Then each line is the canonical dump of its element's value: between elements the dump
    has M (n - 1 times); T holds M exactly n - 1 times (M has no border, so no occurrence
    straddles a line and a separator), so the elements' boundaries are the lines' boundaries,
    and an element of one key dumps as `{"KEY":` + its value + `}`. `-0.0` is the one value
    whose canonical dump reads back as itself; it is refused by search.
    """
    text = b"".join((_OPEN, part.replace(b"\n", _MARK), _CLOSE))
    lines = (len(text) - len(part) - len(_OPEN) - len(_CLOSE)) // (len(_MARK) - 1) + 1
    try:
        wrapped = _LOADS(text)
        again = _DUMPS(wrapped, option=_STRICT)
    except (_DECODE_ERROR, _ENCODE_ERROR):
        return None
    if again != text or len(wrapped) != lines or _MARK in part or _negative_zero(part):
        return None
    try:
        values = list(map(_UNWRAP, wrapped))  # every element a dict holding KEY
    except (KeyError, TypeError):
        return None
    # ... and nothing else: each has at least one key, so a total of one a line means exactly one each.
    return values if sum(map(len, wrapped)) == lines else None


def _jsonl_records(stream: BinaryIO, scanner: Scanner, offset: int, state: dict[str, Any],
                   expand: bool, consume: Consume | None = None) -> Iterator[tuple[int | None, Json]]:
    """The committed records, as `JsonlReader.records` yields them, read a block of lines at a time.

    With `expand` false, a row the lean check accepts comes out as one `Members` instead of its events.
    """
    line = 1
    carry = b""
    while True:
        block = stream.read(BLOCK)
        if not block:
            break
        data = carry + block if carry else block
        cut = data.rfind(b"\n") + 1
        if cut == 0:
            # A line longer than a block: read the rest of it in one bounded call.
            data += stream.readline(MAX_RECORD_BYTES + 2 - len(data))
            if not data.endswith(b"\n"):
                if len(data) <= MAX_RECORD_BYTES:
                    carry = data
                    break
                # SESSION-STORAGE-RECORD.1: the scanner refuses the over-long record; skip to its end.
                line += 1
                scanner.feed(line, data, offset)
                offset += len(data)
                rest = stream.readline(BLOCK)
                while rest and not rest.endswith(b"\n"):
                    offset += len(rest)
                    rest = stream.readline(BLOCK)
                offset += len(rest)
                carry = b"" if rest else b"x"
                if not rest:
                    break
                continue
            cut = len(data)
        part, carry = data[: cut - 1], data[cut:]
        values = _block(part)
        start = 0
        while values is not None and start < len(values):
            if consume is not None and scanner.pending is None:
                # The consumer takes what it can itself; those values continue the seq, so the scanner agrees.
                taken, scanner.expected = consume(values, start, scanner.expected)
                start += taken
                line += taken
                if start == len(values):
                    break
            value = values[start]
            if type(value) is not dict or scanner.pending is not None:
                break
            kind = value.get("type")
            if type(kind) is not str or kind not in ROW_TAGS:
                if value.get("seq") != scanner.expected or type(value["seq"]) is not int:
                    break
                # Scanner.feed's own happy path, inline: one plain event that continues the seq.
                scanner.expected += 1
                line += 1
                start += 1
                yield line, value
                continue
            count = 0
            if not expand and value.get("seq0") == scanner.expected and type(value["seq0"]) is int:
                count = lean_row(value, kind, scanner.expected)
            if not count:
                break
            line += 1
            start += 1
            yield line, Members(scanner.expected, count, value)
            scanner.expected += count
        if values is not None and start == len(values):
            # every line of the block was taken
            offset += cut
            scanner.committed_end = offset
            continue
        lines = part.split(b"\n")
        offset += sum(map(len, lines[:start])) + start
        scanner.committed_end = offset
        for raw in lines[start:]:
            line += 1
            offset += len(raw) + 1
            yield from _one_line(scanner, line, raw, offset)
    if carry:
        # SESSION-TORN-TAIL.1: the final fragment of an interrupted write.
        state["torn"] = scanner.finish(fragment_line=line + 1, fragment=True)
    else:
        state["torn"] = scanner.finish()


def _one_line(scanner: Scanner, line: int, raw: bytes, end: int) -> Iterator[tuple[int | None, Json]]:
    """One line (without its newline) the block path could not take: parsed alone, the lossless parser deciding."""
    value = fast_parse(raw) if len(raw) <= MAX_RECORD_BYTES else _SLOW
    records = scanner.feed(line, raw, end) if value is _SLOW else scanner.feed(line, value, end, read=_parsed)
    for record in records:
        yield line, record


__all__ = ["Log", "SpecViolation", "Unreadable", "detect", "fast_parse", "open_log"]
