"""Opening a stored log for the tools: which backend wrote it, its header, and its records in order.

The zstd and SQLite readers are the storage backends' own (sessionspec.storage), so the tools
see exactly the committed region a load would see. Plain JSONL, the format people check most
and the one whose speed is measured, has a lean loop here: orjson parses a block of lines at
once, and the lines go on only if each is exactly what a canonical writer would have written
for the value orjson read (so no duplicate key, no -0, no 1E5, no integer beyond 2**53-1 can
hide in it; see `_block`). A parsed block that proved canonical is surveyed (logcheck/survey.py) and its runs are folded
into the consumer's state whole; every other line is parsed by the lossless parser, which names
the rule it breaks. The torn tail is decided by the backends' `Scanner`, fed the same records.
On a machine with cores to spare, forked surveyors (logcheck/workers.py) parse and survey blocks
ahead while this process folds them in order, surveying one itself whenever it would wait.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass
from itertools import accumulate
from operator import itemgetter
from pathlib import Path
from typing import Any, BinaryIO, Final

import orjson
from sessionspec.errors import Kind, SpecViolation
from sessionspec.jsonvalue import FrozenDict, Json
from sessionspec.live.fastpath import implies, rule_ids
from sessionspec.logcheck.survey import Run
from sessionspec.logcheck.workers import Surveyor, usable_cpus
from sessionspec.storage.formats import Unreadable, detect
from sessionspec.storage.gate import MAX_RECORD_BYTES, RECORD_SIZE, Scanner, TornTail, refuse
from sessionspec.storage.jsonl import read_header
from sessionspec.storage.losslessparse import parse

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


Survey = Callable[[list[Any]], list[Run]]
"""`survey(values) -> runs`: the consumer's stateless judgement of one parsed block (see logcheck/survey.py)."""
Fold = Callable[[Sequence[Any], int, int, int], int]
"""`fold(ops, k, first, next) -> r`: the consumer's stateful half (see Checker.fold): ops[k:r] applied, -1 for none."""


def open_log(path: Path, session_id: str | None = None, *, survey: Survey | None = None, fold: Fold | None = None,
             jobs: int | None = None) -> Log:
    """Open `path` with the backend that wrote it. Raises Unreadable, or SpecViolation for a bad header.

    For JSONL, a consumer that gives `survey` and `fold` takes whole runs of lines itself, and
    only the lines in no run come out of `records()`; `jobs` is how many processes share the
    surveys (1: this one alone; None: one per usable CPU, up to DEFAULT_JOBS, for a large
    log), the others forked as surveyors (see logcheck/workers.py).
    """
    fmt = detect(path)
    if fmt == "jsonl":
        return _open_jsonl(path, session_id, survey, fold, jobs)
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
            surveyor = Surveyor.start(lambda part: _answer(part, survey), forced=jobs is not None)
            if surveyor is None:
                break  # what could be started is enough: the rest of the work is done here
            surveyors.append(surveyor)
    except BaseException:
        for surveyor in surveyors:
            surveyor.close()
        raise
    return surveyors


def _open_jsonl(path: Path, session_id: str | None, survey: Survey | None, fold: Fold | None, jobs: int | None) -> Log:
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
        surveyors = _surveyors(survey if fold is not None else None, jobs, size)
        try:
            with stream:
                tail: list[bytes] = []
                blocks = _surveyed(_chunks(stream, tail), survey, surveyors)
                line = yield from _jsonl_records(blocks, scanner, offset, fold)
                # SESSION-TORN-TAIL.1: the final fragment of an interrupted write.
                state["torn"] = scanner.finish(fragment_line=line + 1, fragment=True) if tail else scanner.finish()
        finally:
            for surveyor in surveyors:
                surveyor.close()

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


class _Oversized:
    """Where `_chunks` met a record longer than MAX_RECORD_BYTES: the log's end for a reader, which refuses it there.

    Nothing of the record is kept: the rule needs only its line, and holding up to 64 MiB of it
    in a read-ahead queue would be the memory the bound exists to save.
    """


_OVERSIZED: Final = _Oversized()


def _chunks(stream: BinaryIO, tail: list[bytes]) -> Iterator[bytes | _Oversized]:
    """The log after its header: blocks of complete lines (without the last newline), and over-long records.

    A final fragment without its newline (a torn write) is put in `tail`, not yielded.
    """
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
            ended = data.endswith(b"\n")
            if len(data) - ended > MAX_RECORD_BYTES:
                # SESSION-STORAGE-RECORD.1: refused with no more of it read.
                yield _OVERSIZED
                return
            if not ended:
                carry = data
                break
            cut = len(data)
        yield data[: cut - 1]
        carry = data[cut:]
    if carry:
        tail.append(carry)


Surveyed = tuple[int, list[Run]] | None
"""A block's line count and runs, or None where the block is not canonical (or no consumer surveys)."""


@dataclass(frozen=True, slots=True)
class StoredLine:
    """A tool/result whose block the surveyor surveyed: kept as its stored line until a rewrite of it asks for its data.

    Shipping the data back would cost a dump there and a parse here for every tool/result;
    few are ever rewritten, so the line's bytes stand in for it.
    """

    raw: bytes

    def data(self) -> Json:
        data: Json = _LOADS(self.raw)["data"]
        return data


def _here(part: bytes, survey: Survey | None) -> Surveyed:
    """A block parsed and surveyed in this process."""
    if survey is None:
        return None
    values = _block(part)
    return None if values is None else (len(values), survey(values))


def _answer(part: bytes, survey: Survey) -> bytes:
    """What the surveyor sends back for a block: `[lines, runs, spans]` as JSON, `null` where it is not canonical.

    A tool/result's data is not sent: its place in the runs holds null, and `spans` lists each
    such place as `[run, step, member or -1 for a replace, start, end]`, the byte span of its
    line in the block (see StoredLine).
    """
    values = _block(part)
    if values is None:
        return b"null"
    runs = survey(values)
    spans: list[tuple[int, int, int, int, int]] = []
    raws: list[bytes] = []
    last = at = 0  # line `last` of the block starts at byte `at`

    def span(line: int) -> tuple[int, int]:
        nonlocal last, at
        if not raws:
            raws.extend(part.split(b"\n"))
        at += sum(map(len, raws[last:line])) + line - last
        last = line
        return at, at + len(raws[line])

    for r, run in enumerate(runs):
        for s, step in enumerate(run[4]):
            if len(step) == 3:
                kept, lines = step[1], step[2]
                for m, (kind, data) in enumerate(kept):
                    if data is not None:
                        kept[m] = (kind, None)
                        spans.append((r, s, m, *span(lines[m])))
            elif step[3] is not None:
                run[4][s] = (step[0], step[1], step[2], None, step[4], step[5])
                spans.append((r, s, -1, *span(step[0])))
    return _DUMPS((len(values), runs, spans))


def _received(part: bytes, answer: bytes) -> Surveyed:
    """The surveyor's answer for `part`, each tool/result's span turned back into its line."""
    got = _LOADS(answer)
    if got is None:
        return None
    total, runs, spans = got
    for r, s, m, start, end in spans:
        if m < 0:
            runs[r][4][s][3] = StoredLine(part[start:end])
        else:
            runs[r][4][s][1][m][1] = StoredLine(part[start:end])
    return total, runs


AHEAD: Final = 4
"""Blocks read ahead of the fold beyond those the surveyors hold."""
AHEAD_BYTES: Final = 8 << 20
"""... and bytes read ahead at most, whatever the blocks (a block of one long line can be 64 MiB): memory stays
bounded by this and the longest record, as it is without surveyors."""
OWED: Final = 3
"""Blocks a surveyor holds at a time: enough that it does not idle while this process surveys one."""


def _surveyed(chunks: Iterator[bytes | _Oversized], survey: Survey | None,
              surveyors: Sequence[Surveyor]) -> Iterator[tuple[bytes | _Oversized, Surveyed]]:
    """Each chunk in file order with its survey; with surveyors, shared between them and this process.

    The fold must go in file order; the survey need not. So each surveyor is kept holding OWED
    blocks, and whenever the next block to fold is still with a surveyor, this process reads a
    later block and surveys it itself instead of waiting. No side idles for long, and the share
    each takes follows its speed. An answer a surveyor does not give (it died, declined, or sent
    what does not parse) is made here, from the same bytes.
    """
    if not surveyors:
        for chunk in chunks:
            yield chunk, _here(chunk, survey) if isinstance(chunk, bytes) else None
        return
    queue: deque[list[Any]] = deque()
    """[chunk, surveyed, surveyor, bytes] in file order; surveyor is the one that owes the survey, None once it is made
    or where this process is to make it."""
    limit = OWED * len(surveyors) + AHEAD
    more = True
    held = 0
    """Bytes in the queue."""

    def room() -> bool:
        """Whether another block may be read ahead (the head of the queue always may be)."""
        return more and (not queue or (len(queue) < limit and held < AHEAD_BYTES))

    def read(surveyor: Surveyor | None) -> bool:
        nonlocal more, held
        chunk = next(chunks, None)
        if chunk is None:
            more = False
            return False
        if not isinstance(chunk, bytes):
            queue.append([chunk, None, None, 0])
        else:
            queue.append([chunk, _NOT_YET, surveyor if surveyor is not None and surveyor.submit(chunk) else None, len(chunk)])
        held += queue[-1][3]
        return True

    while True:
        while room():
            idle = min((p for p in surveyors if p.alive), key=lambda p: p.owed, default=None)
            if idle is None or idle.owed >= OWED or not read(idle):
                break
        if not queue and not (room() and read(None)):
            return
        head = queue[0]
        owing: Surveyor | None = head[2]
        if owing is not None and not owing.ready():
            # Survey a later block here rather than wait for the surveyor.
            spare = next((entry for entry in queue if entry[1] is _NOT_YET and entry[2] is None), None)
            if spare is None and room() and read(None):
                spare = queue[-1] if queue[-1][1] is _NOT_YET and queue[-1][2] is None else None
            if spare is not None:
                spare[1] = _here(spare[0], survey)
                continue
        if owing is not None:
            answer = owing.answer()
            surveyed: Surveyed = None
            try:
                surveyed = _received(head[0], answer) if answer else _here(head[0], survey)
            except (_DECODE_ERROR, TypeError, ValueError, IndexError):
                surveyed = _here(head[0], survey)
            head[1], head[2] = surveyed, None
        elif head[1] is _NOT_YET:
            head[1] = _here(head[0], survey)
        queue.popleft()
        held -= head[3]
        yield head[0], head[1]


_NOT_YET: Final = object()
"""A queued block's survey before anyone has made it."""


class _Lines:
    """One block of complete lines at file offset `base`, split into its lines only when some line goes alone."""

    __slots__ = ("_ends", "_raws", "base", "part", "total")

    def __init__(self, part: bytes, base: int, total: int) -> None:
        self.part = part
        self.base = base
        self.total = total
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
    for index in range(first, last):
        line += 1
        yield from _one_line(scanner, line, lines.raw(index), lines.end(index))
    return line


def _jsonl_records(blocks: Iterator[tuple[bytes | _Oversized, Surveyed]], scanner: Scanner, offset: int,
                   fold: Fold | None) -> Generator[tuple[int | None, Json], None, int]:
    """The records no run takes, as `JsonlReader.records` yields them; returns the number of the last line read.

    Each block's runs go to `fold`, which applies them to the consumer's state as far as the
    log bears them out (the seq the log expects, a replace that lands); every other line is
    parsed alone and fed to the scanner, whose records come out. Either way the scanner's seq
    and committed end move as if it had read every line itself.
    """
    line = 1
    for chunk, surveyed in blocks:
        if isinstance(chunk, _Oversized):
            # SESSION-STORAGE-RECORD.1: refused at its line, as `storage.jsonl` refuses it.
            line += 1
            raise refuse(RECORD_SIZE, Kind.JSON, scanner.path, f"record at line {line} exceeds {MAX_RECORD_BYTES} bytes",
                         line=line)
        total, runs = surveyed if surveyed is not None else (chunk.count(b"\n") + 1, [])
        lines = _Lines(chunk, offset, total)
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
    value = fast_parse(raw) if len(raw) <= MAX_RECORD_BYTES else _SLOW
    records = scanner.feed(line, raw, end) if value is _SLOW else scanner.feed(line, value, end, read=_parsed)
    for record in records:
        yield line, record


__all__ = ["Log", "SpecViolation", "Unreadable", "detect", "fast_parse", "open_log", "parse_line"]
