"""Opening a stored log for the tools: which backend wrote it, its header, and its records in order.

The zstd and SQLite readers are the storage backends' own (sessionspec.storage), so the tools
see exactly the committed region a load would see. Plain JSONL, the format people check most
and the one whose speed is measured, has a lean loop here: orjson parses a block of lines at
once, and the lines go on only if each is exactly what a canonical writer would have written
for the value orjson read (so no duplicate key, no -0, no 1E5, no integer beyond 2**53-1 can
hide in it; see `blocks.parse_block`). A parsed block that proved canonical is surveyed (logcheck/survey.py) and its runs are folded
into the consumer's state whole; every other line is parsed by the lossless parser, which names
the rule it breaks. The torn tail is decided by the backends' `Scanner`, fed the same records.
On a machine with cores to spare, forked surveyors (logcheck/workers.py) parse and survey blocks
ahead while this process folds them in order, surveying one itself whenever it would wait.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator, Sequence
from itertools import accumulate
from pathlib import Path
from typing import Any, BinaryIO, Final

import orjson
from sessionspec.errors import Kind, SpecViolation
from sessionspec.jsonvalue import FrozenDict, Json
from sessionspec.live.fastpath import implies, rule_ids
from sessionspec.logcheck.blocks import (
    Oversized,
    StoredLine,
    Survey,
    Surveyed,
    no_runs,
    read_blocks,
    survey_answer,
    surveyed_blocks,
)
from sessionspec.logcheck.workers import Surveyor, usable_cpus
from sessionspec.storage.formats import Unreadable, detect, open_regular
from sessionspec.storage.gate import MAX_RECORD_BYTES, RECORD_SIZE, Scanner, TornTail, may_end_turn, refuse
from sessionspec.storage.jsonl import read_header
from sessionspec.storage.losslessparse import parse
from sessionspec.storage.sqlite import SqliteReader
from sessionspec.storage.zstdlog import ZstdReader

_SLOW: Final = object()
_LOADS = orjson.loads
_DUMPS = orjson.dumps
_STRICT: Final = orjson.OPT_STRICT_INTEGER
_DECODE_ERROR = orjson.JSONDecodeError
_ENCODE_ERROR = orjson.JSONEncodeError


def _parsed(value: Json) -> Json:
    return value


@implies(reference=parse, rules=rule_ids("SESSION-LOSSLESS-TEXT", 1, 6))
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


def parse_line(raw: bytes) -> Json:
    """One line's value, read losslessly: at C speed when the line is canonical, else by the lossless parser."""
    value = fast_parse(raw)
    return parse(raw) if value is _SLOW else value


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


Fold = Callable[[Sequence[Any], int, int, int], int]
"""`fold(ops, k, first, next) -> r`: the consumer's stateful half (see Checker.fold): ops[k:r] applied, -1 for none."""


def open_log(path: Path, session_id: str | None = None, *, survey: Survey | None = None, fold: Fold | None = None,
             jobs: int | None = None) -> Log:
    """Open `path` with the backend that wrote it. Raises Unreadable, or SpecViolation for a bad header.

    For JSONL, a consumer that gives `survey` and `fold` takes whole runs of lines itself, and
    only the lines in no run come out of `records()`; `jobs` is how many processes share the
    surveys (1: this one alone; None: one per usable CPU, up to DEFAULT_JOBS, for a large
    log), the others forked as surveyors (see logcheck/workers.py).

    A log this build cannot read at all (a newer or older format, a foreign database: the rules
    of kind `version`) raises Unreadable naming its rule: it is not a log with findings.
    """
    try:
        return _open(path, session_id, survey, fold, jobs)
    except SpecViolation as violation:
        if violation.kind is Kind.VERSION:
            raise Unreadable(str(violation), rule=violation.rule) from None
        raise


def _open(path: Path, session_id: str | None, survey: Survey | None, fold: Fold | None, jobs: int | None) -> Log:
    fmt = detect(path)
    if fmt == "jsonl":
        return _open_jsonl(path, session_id, survey, fold, jobs)
    if fmt == "jsonl.zstd":
        zstd = ZstdReader(path, session_id)
        size = path.stat().st_size
        return Log(path, fmt, zstd.header, zstd.records, lambda: zstd.torn, lambda: (size, size))
    return _open_sqlite(path, session_id)


def _open_sqlite(path: Path, session_id: str | None) -> Log:
    reader = SqliteReader(path, session_id)
    return Log(path, "sqlite", reader.header, reader.records, lambda: reader.torn, lambda: (0, 0))


PARALLEL_BYTES: Final = 4 << 20
"""The size from which a surveyor pays for its fork (about a millisecond) when `jobs` is not given."""
DEFAULT_JOBS: Final = 4
"""Processes at most when `jobs` is not given: past a few, the fold in this process is the bound."""


def _surveyors(survey: Survey | None, jobs: int | None, size: int) -> list[Surveyor]:
    """The surveyors a check of a `size`-byte log gets: `jobs - 1` asked for, or by default one per usable CPU but
    this process's (at most DEFAULT_JOBS - 1) for a log of PARALLEL_BYTES or more. None without a survey to share."""
    if survey is None or jobs == 1 or (jobs is None and size < PARALLEL_BYTES):
        return []
    wanted = jobs - 1 if jobs is not None else min(usable_cpus(), DEFAULT_JOBS) - 1
    surveyors: list[Surveyor] = []
    try:
        for _ in range(wanted):
            surveyor = Surveyor.start(lambda part: survey_answer(part, survey), forced=jobs is not None)
            if surveyor is None:
                break  # what could be started is enough: the rest of the work is done here
            surveyors.append(surveyor)
    except BaseException:
        for surveyor in surveyors:
            surveyor.close()
        raise
    return surveyors


def _open_jsonl(path: Path, session_id: str | None, survey: Survey | None, fold: Fold | None, jobs: int | None) -> Log:
    # SESSION-STORAGE-RECORD.2: opened only as a regular file (a FIFO swapped in after `detect` still cannot block).
    stream: BinaryIO = open_regular(path)
    try:
        header, offset = read_header(stream, str(path), session_id)
    except BaseException:
        stream.close()
        raise
    scanner = Scanner(str(path), committed_end=offset)
    size = path.stat().st_size
    state: dict[str, Any] = {"torn": None}

    def records() -> Iterator[tuple[int | None, Json]]:
        surveyors = _surveyors(survey if fold is not None else None, jobs, size)
        try:
            with stream:
                tail: list[bytes] = []
                blocks = surveyed_blocks(read_blocks(stream, tail), survey, surveyors)
                line = yield from _jsonl_records(blocks, scanner, offset, fold)
                # SESSION-TORN-TAIL.1: the final fragment of an interrupted write.
                state["torn"] = scanner.finish(fragment_line=line + 1, fragment=True) if tail else scanner.finish()
        finally:
            for surveyor in surveyors:
                surveyor.close()

    return Log(path, "jsonl", header, records, lambda: state["torn"], lambda: (stream.tell() if not stream.closed else size, size))


class _Lines:
    """One block of complete lines at file offset `base`, split into its lines only when some line goes alone."""

    __slots__ = ("_ends", "_raws", "base", "part", "total", "values")

    def __init__(self, part: bytes, base: int, total: int, values: list[Any] | None) -> None:
        self.part = part
        self.base = base
        self.total = total
        self.values = values
        """Each line's value where the block was parsed here (`parse_block` proved each line canonical), else None."""
        self._raws: list[bytes] = []
        self._ends: list[int] = []

    def raw(self, index: int) -> bytes:
        if not self._raws:
            self._split()
        return self._raws[index]

    def end(self, index: int) -> int:
        """The file offset just after line `index`'s newline."""
        if not self._raws:
            self._split()
        return self.base + self._ends[index]

    def _split(self) -> None:
        self._raws = self.part.split(b"\n")
        self._ends = list(accumulate(len(raw) + 1 for raw in self._raws))


def _alone(scanner: Scanner, lines: _Lines, first: int, last: int, line: int) -> Generator[tuple[int | None, Json], None, int]:
    """Lines first..last-1 of a block, each parsed alone and fed to the scanner; returns the last line number."""
    values = lines.values
    for index in range(first, last):
        line += 1
        if values is not None and scanner.pending is None:
            for record in scanner.feed(line, values[index], lines.end(index), read=_parsed):
                yield line, record
        else:
            yield from _one_line(scanner, line, lines.raw(index), lines.end(index))
    return line


def _jsonl_records(blocks: Iterator[tuple[bytes | Oversized, Surveyed]], scanner: Scanner, offset: int,
                   fold: Fold | None) -> Generator[tuple[int | None, Json], None, int]:
    """The records no run takes, as `JsonlReader.records` yields them; returns the number of the last line read.

    Each block's runs go to `fold`, which applies them to the consumer's state as far as the
    log bears them out (the seq the log expects, a replace that lands); every other line is
    parsed alone and fed to the scanner, whose records come out. Either way the scanner's seq
    and committed end move as if it had read every line itself.
    """
    line = 1
    for chunk, surveyed in blocks:
        if isinstance(chunk, Oversized):
            # SESSION-STORAGE-RECORD.1: refused at its line, as `storage.jsonl` refuses it.
            line += 1
            raise refuse(RECORD_SIZE, Kind.JSON, scanner.path, f"record at line {line} exceeds {MAX_RECORD_BYTES} bytes",
                         line=line)
        if scanner.pending is not None and not may_end_turn(chunk):
            # SESSION-TORN-TAIL.2: after a defect only a later turn/end matters, and this block can hold none.
            line += chunk.count(b"\n") + 1
            offset += len(chunk) + 1
            continue
        total, runs, values = surveyed if surveyed is not None else (chunk.count(b"\n") + 1, [], None)
        lines = _Lines(chunk, offset, total, values)
        offset += len(chunk) + 1
        done = 0
        for start, end, first, nxt, ops in runs:
            line = yield from _alone(scanner, lines, done, start, line)
            done = start
            k = 0
            while fold is not None and scanner.pending is None and first == scanner.expected:
                refused = fold(ops, k, first, nxt)
                if refused < 0:
                    break
                if refused == len(ops):
                    line += end - done
                    done, scanner.expected = end, nxt
                else:
                    # The fold stopped at a replace it could not place: the lines before it are taken.
                    at, seq = ops[refused][0], ops[refused][1]
                    line += at - done
                    done, scanner.expected = at, seq
                if done:
                    scanner.committed_end = offset if done == lines.total else lines.end(done - 1)
                if done == end:
                    break
                # ... and the replace goes alone, to the exact path; the run resumes after it.
                line = yield from _alone(scanner, lines, done, done + 1, line)
                done += 1
                first, k = seq + 1, refused + 1
            line = yield from _alone(scanner, lines, done, end, line)
            done = end
        line = yield from _alone(scanner, lines, done, lines.total, line)
    return line


def _one_line(scanner: Scanner, line: int, raw: bytes, end: int) -> Iterator[tuple[int | None, Json]]:
    """One line (without its newline) the block path could not take: parsed alone, the lossless parser deciding."""
    value = fast_parse(raw) if len(raw) <= MAX_RECORD_BYTES and scanner.pending is None else _SLOW
    records = scanner.feed(line, raw, end) if value is _SLOW else scanner.feed(line, value, end, read=_parsed)
    for record in records:
        yield line, record


__all__ = ["Log", "SpecViolation", "StoredLine", "Unreadable", "detect", "fast_parse", "no_runs", "open_log", "parse_line"]
