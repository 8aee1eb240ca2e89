"""Opening a stored log for the tools: which backend wrote it, its header, and its records in order.

Every format has one reader, the storage backend's own (`storage.open_reader`), so the tools see
exactly the committed region a load would see. For JSONL, the format people check most and the
one whose speed is measured, the checker takes whole runs of lines itself: `storage.jsonlread`
reads the file in blocks, a block proven canonical (`live.fasttext.parse_block`) is surveyed
(storage/survey.py) and its runs are folded into the checker's state whole; only the lines no
run takes come out of `records()`. On a machine with cores to spare, forked surveyors
(logcheck/workers.py) parse and survey blocks ahead while this process folds them in order,
surveying one itself whenever it would wait.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Final

from sessionspec.errors import Kind, SpecViolation
from sessionspec.jsonvalue import FrozenDict, Json
from sessionspec.logcheck.blocks import StoredLine, Survey, no_runs, survey_answer, surveyed_blocks
from sessionspec.logcheck.workers import Surveyor, free_cpus
from sessionspec.storage import open_reader
from sessionspec.storage.formats import Unreadable, detect
from sessionspec.storage.gate import TornTail
from sessionspec.storage.jsonlread import Stopped, Surveyed


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
PARALLEL_BYTES: Final = 4 << 20
"""The size from which a surveyor pays for its fork (about a millisecond) when `jobs` is not given."""
DEFAULT_JOBS: Final = 4
"""Processes at most when `jobs` is not given: past a few, the fold in this process is the bound."""


class _Runs:
    """The checker as the JSONL reader's run taker: its survey (shared with surveyor processes) and its fold."""

    def __init__(self, survey: Survey, fold: Fold, jobs: int | None, size: int) -> None:
        self.survey = survey
        self.fold = fold
        self.jobs = jobs
        self.size = size

    def surveyed(self, chunks: Iterator[bytes | Stopped]) -> Iterator[tuple[bytes | Stopped, Surveyed]]:
        surveyors = _surveyors(self.survey, self.jobs, self.size)
        try:
            yield from surveyed_blocks(chunks, self.survey, surveyors)
        finally:
            for surveyor in surveyors:
                surveyor.close()


def open_log(path: Path, session_id: str | None = None, *, survey: Survey | None = None, fold: Fold | None = None,
             jobs: int | None = None) -> Log:
    """Open `path` with the backend that wrote it. Raises Unreadable, or SpecViolation for a bad header.

    For JSONL, a consumer that gives `survey` and `fold` takes whole runs of lines itself, and
    only the lines in no run come out of `records()`; `survey` alone (`no_runs`) reads the log a
    block at a time and takes none. `jobs` is how many processes share the surveys (1: this one
    alone; None: one per free CPU, up to DEFAULT_JOBS, for a large log), the others forked as
    surveyors (see logcheck/workers.py).

    A log this build cannot read at all (a newer or older format, a foreign database: the rules
    of kind `version`) raises Unreadable naming its rule: it is not a log with findings.
    """
    try:
        fmt = detect(path)
        runs = _Runs(survey, fold, jobs, path.stat().st_size) if fmt == "jsonl" and survey and fold else None
        reader = open_reader(path, session_id, runs=runs)
    except SpecViolation as violation:
        if violation.kind is Kind.VERSION:
            raise Unreadable(str(violation), rule=violation.rule) from None
        raise
    progress = reader.progress if hasattr(reader, "progress") else lambda: (0, 0)
    return Log(path, fmt, reader.header, reader.records, lambda: reader.torn, progress)


def _surveyors(survey: Survey, jobs: int | None, size: int) -> list[Surveyor]:
    """The surveyors a check of a `size`-byte log gets: `jobs - 1` asked for, or by default one per free CPU but
    this process's (at most DEFAULT_JOBS - 1) for a log of PARALLEL_BYTES or more: none on a machine whose CPUs
    other work keeps busy (`workers.free_cpus`), where a surveyor would only share a CPU with this process."""
    if jobs == 1 or (jobs is None and size < PARALLEL_BYTES):
        return []
    wanted = jobs - 1 if jobs is not None else min(free_cpus(), DEFAULT_JOBS) - 1
    if wanted < 1:
        return []
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


__all__ = ["Log", "SpecViolation", "StoredLine", "Unreadable", "detect", "no_runs", "open_log"]
