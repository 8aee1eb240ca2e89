"""The survey of a JSONL check's blocks: each block parsed at C speed, proven canonical, surveyed ahead.

`sessionspec check` spends its time here on a large log. The one JSONL reader
(`storage.jsonlread`) reads the log in blocks of lines; each block is parsed at once and proven
canonical (`live.fasttext.parse_block`: no duplicate key, no -0, no 1E5, no integer beyond
2**53-1 can hide in it), then surveyed (storage/survey.py); forked surveyors
(logcheck/workers.py) parse and survey blocks ahead while the reader folds them in order, and
this process surveys one itself whenever it would wait. Every line a block does not vouch for
goes back to the reader, which reads it alone, losslessly.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final

import orjson
from sessionspec.jsonvalue import Json
from sessionspec.live.fasttext import parse_block
from sessionspec.logcheck.workers import Surveyor
from sessionspec.storage.jsonlread import Stopped, Surveyed
from sessionspec.storage.survey import Run

Survey = Callable[[list[Any]], list[Run]]
"""`survey(values) -> runs`: the consumer's stateless judgement of one parsed block (see storage/survey.py)."""
_LOADS = orjson.loads
_DUMPS = orjson.dumps
_DECODE_ERROR = orjson.JSONDecodeError




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
    """A block parsed and surveyed in this process; its values go along, so a line no run takes is not parsed again."""
    if survey is None:
        return None
    values = parse_block(part)
    return None if values is None else (len(values), survey(values), values)


def no_runs(values: list[Any]) -> list[Run]:
    """A survey that takes no run: every line comes out of `records()`, parsed a block at a time (for `show`)."""
    return []


def survey_answer(part: bytes, survey: Survey) -> bytes:
    """What the surveyor sends back for a block: `[lines, runs, spans]` as JSON, `null` where it is not canonical.

    A tool/result's data is not sent: its place in the runs holds null, and `spans` lists each
    such place as `[run, step, member or -1 for a replace, start, end]`, the byte span of its
    line in the block (see StoredLine).
    """
    values = parse_block(part)
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
    return total, runs, None


AHEAD: Final = 4
"""Blocks read ahead of the fold beyond those the surveyors hold."""
AHEAD_BYTES: Final = 8 << 20
"""... and bytes read ahead at most, whatever the blocks (a block of one long line can be 64 MiB): memory stays
bounded by this and the longest record, as it is without surveyors."""
OWED: Final = 3
"""Blocks a surveyor holds at a time: enough that it does not idle while this process surveys one."""


def surveyed_blocks(chunks: Iterator[bytes | Stopped], survey: Survey | None,
              surveyors: Sequence[Surveyor]) -> Iterator[tuple[bytes | Stopped, Surveyed]]:
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
