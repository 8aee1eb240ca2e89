"""The surveyor (logcheck/workers.py): a second process that surveys blocks, and the check's findings never depend on it.

Each test runs a check with the surveyor and compares it with the one-process check (and the
exact checker): a surveyor that works, one killed part-way, one that declines, one that answers
nonsense. Blocks are made small so that a short log is many blocks, shared between the sides.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sessionspec import storage
from sessionspec.errors import SpecViolation
from sessionspec.logcheck import blocks
from sessionspec.logcheck import reader as sources
from sessionspec.logcheck import workers as surveyor
from sessionspec.logcheck.checker import Checker
from sessionspec.logcheck.checkfile import check_path
from sessionspec.storage import jsonlread
from sessionspec.storage.jsonlread import JsonlReader
from sessionspec.testing.loops import Loop, agent_loops, build
from test_logcheck_checker import apply_stored, reference_report, stored_log

pytestmark = pytest.mark.skipif(not surveyor.can_fork(), reason="the surveyor forks: Linux, one thread")

HEAD = b'{"type":"session","version":0,"id":"demo","createdAt":1,"delegationDepth":0}\n'
CHANGES: list[tuple[int, str, str, Any]] = [(8, "set", "sourceEventSeqs", [99]), (11, "set", "surfaceOp.start", 5),
                                            (4, "set", "data.dt", []), (13, "space", "", None)]


def write_log(path: Path, changes: list[tuple[int, str, str, Any]]) -> Path:
    """The stored log of test_logcheck_checker (every record shape the fast path takes) with `changes`."""
    records = stored_log()
    lines = [orjson.dumps(record) for record in records]
    for change in changes:
        apply_stored(records, lines, change)
    path.write_bytes(HEAD + b"\n".join(lines) + b"\n")
    return path


def outcome(path: Path, jobs: int | None) -> tuple[Any, ...]:
    report = check_path(str(path), jobs=jobs)
    return [(f.line, f.seq, f.rule, f.message) for f in report.findings], report.events, report.nodes, \
        report.replace_generation


@pytest.fixture()
def small_blocks() -> Iterator[None]:
    with mock.patch.object(jsonlread, "BLOCK", 200):
        yield


def spy_answers() -> tuple[list[bytes | None], Callable[..., Any]]:
    answers: list[bytes | None] = []
    answer = surveyor.Surveyor.answer

    def spy(self: surveyor.Surveyor) -> bytes | None:
        answers.append(got := answer(self))
        return got

    return answers, spy


def test_the_surveyor_answers_in_order_and_exits_when_closed() -> None:
    helper = surveyor.Surveyor.start(lambda part: part[::-1], forced=True)
    assert helper is not None
    for part in (b"abc", b"", b"x" * 200_000):
        assert helper.submit(part)
    assert [helper.answer() for _ in range(3)] == [b"cba", b"", b"x" * 200_000]
    helper.close()
    with pytest.raises(ChildProcessError):
        os.waitpid(helper.pid, 0)  # reaped by close


def test_a_declining_surveyor_hands_the_block_back() -> None:
    def work(part: bytes) -> bytes:
        raise ValueError(part)

    helper = surveyor.Surveyor.start(work, forced=True)
    assert helper is not None
    assert helper.submit(b"abc") and helper.answer() == b"" and helper.alive
    helper.close()


def test_a_dead_surveyor_says_so() -> None:
    helper = surveyor.Surveyor.start(lambda part: part, forced=True)
    assert helper is not None
    os.kill(helper.pid, signal.SIGKILL)
    os.waitpid(helper.pid, 0)
    helper.submit(b"abc")  # may still fit in the pipe
    assert helper.answer() is None and not helper.alive and helper.ready()
    assert not helper.submit(b"abc")
    helper.close()


@pytest.mark.usefixtures("small_blocks")
def test_the_surveyor_surveys_blocks_and_the_findings_are_the_same(tmp_path: Path) -> None:
    path = write_log(tmp_path / "log.jsonl", CHANGES)
    answers, spy = spy_answers()
    with mock.patch.object(surveyor.Surveyor, "answer", spy):
        parallel = outcome(path, jobs=2)
    assert [a for a in answers if a], "the surveyor surveyed no block"
    assert parallel == outcome(path, jobs=1)
    assert parallel[0] and [f[:3] for f in parallel[0]] == reference_report(path, False)[0]


@pytest.mark.usefixtures("small_blocks")
def test_several_surveyors_share_the_blocks_and_each_exits(tmp_path: Path) -> None:
    """Three surveyors: each holds none of the others' pipes (else closing one would wait for ever), all are reaped."""
    path = write_log(tmp_path / "log.jsonl", CHANGES)
    answers, spy = spy_answers()
    def hung(signum: int, frame: Any) -> None:
        raise TimeoutError("a surveyor never saw its request pipe close")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(30)
    try:
        with mock.patch.object(surveyor.Surveyor, "answer", spy):
            assert outcome(path, jobs=4) == outcome(path, jobs=1)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert len([a for a in answers if a]) >= 3
    assert not surveyor.Surveyor._held
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)


@pytest.mark.usefixtures("small_blocks")
def test_a_surveyor_killed_part_way_leaves_the_findings_unchanged(tmp_path: Path) -> None:
    path = write_log(tmp_path / "log.jsonl", CHANGES)
    answer = surveyor.Surveyor.answer
    answered: list[bytes | None] = []

    def dies_after_two(self: surveyor.Surveyor) -> bytes | None:
        if len(answered) == 2:
            os.kill(self.pid, signal.SIGKILL)
        answered.append(got := answer(self))
        return got

    with mock.patch.object(surveyor.Surveyor, "answer", dies_after_two):
        parallel = outcome(path, jobs=2)
    assert None in answered, "the surveyor was not killed while it owed answers"
    assert parallel == outcome(path, jobs=1)


@pytest.mark.parametrize("answer", [b"", b"[1,", b"5", b"[3]", b"[2,[[0]]]"], ids=["declined", "torn", "number",
                                                                                 "short", "malformed-run"])
@pytest.mark.usefixtures("small_blocks")
def test_an_answer_that_is_not_a_survey_is_surveyed_here(tmp_path: Path, answer: bytes) -> None:
    path = write_log(tmp_path / "log.jsonl", CHANGES)
    with mock.patch.object(sources, "survey_answer", lambda part, survey: answer):  # inherited by the fork
        parallel = outcome(path, jobs=2)
    assert parallel == outcome(path, jobs=1)


def test_no_surveyor_is_left_behind(tmp_path: Path) -> None:
    """Reaped and its pipes closed: after a full check, and after a consumer that stops reading early."""
    path = write_log(tmp_path / "log.jsonl", CHANGES)
    before = set(os.listdir("/proc/self/fd"))
    with mock.patch.object(jsonlread, "BLOCK", 200):
        check_path(str(path), jobs=2)
        checker = Checker(str(path))
        log = sources.open_log(path, survey=checker.survey, fold=checker.fold, jobs=2)
        records = log.records()
        next(records)
        records.close()
    assert set(os.listdir("/proc/self/fd")) == before
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)


def test_the_default_forks_only_for_large_logs(tmp_path: Path) -> None:
    path = write_log(tmp_path / "log.jsonl", [])
    started: list[bool] = []
    start = surveyor.Surveyor.start

    def spy(work: Callable[[bytes], bytes], *, forced: bool = False) -> surveyor.Surveyor | None:
        started.append(forced)
        return start(work, forced=forced)

    with mock.patch.object(surveyor.Surveyor, "start", spy), mock.patch.object(surveyor, "runnable_others", lambda: 0):
        check_path(str(path))
        assert started == []
        with mock.patch.object(sources, "PARALLEL_BYTES", 0):
            check_path(str(path))
        by_default = [False] * (min(surveyor.usable_cpus(), sources.DEFAULT_JOBS) - 1)
        assert started == by_default
        check_path(str(path), jobs=1)
        check_path(str(path), strict=True, jobs=2)  # strict has no survey to share
        assert started == by_default
        check_path(str(path), jobs=3)
        assert started == [*by_default, True, True]


@pytest.mark.parametrize(("others", "cpus", "usable", "free"), [
    (0, 2, 2, 2), (1, 2, 2, 1), (2, 2, 2, 1), (5, 2, 2, 1), (1, 8, 8, 7), (3, 8, 4, 4), (6, 8, 4, 2), (None, 2, 2, 2)])
def test_the_default_counts_the_cpus_other_work_leaves_free(others: int | None, cpus: int, usable: int,
                                                            free: int) -> None:
    """Each task runnable besides this one takes a CPU (issue 36: a surveyor on a busy machine cost more than it
    saved); where the count cannot be read, every usable CPU counts."""
    with (mock.patch.object(surveyor, "runnable_others", lambda: others), mock.patch.object(surveyor.os, "cpu_count", lambda: cpus),
          mock.patch.object(surveyor, "usable_cpus", lambda: usable)):
        assert surveyor.free_cpus() == free


def test_no_surveyor_by_default_while_other_work_keeps_the_cpus_busy(tmp_path: Path) -> None:
    path = write_log(tmp_path / "log.jsonl", CHANGES)
    started: list[bool] = []
    start = surveyor.Surveyor.start

    def spy(work: Callable[[bytes], bytes], *, forced: bool = False) -> surveyor.Surveyor | None:
        started.append(forced)
        return start(work, forced=forced)

    busy = (os.cpu_count() or 1) + 1
    with (mock.patch.object(surveyor.Surveyor, "start", spy), mock.patch.object(sources, "PARALLEL_BYTES", 0),
          mock.patch.object(surveyor, "runnable_others", lambda: busy)):
        assert outcome(path, None) == outcome(path, 1)
        assert started == []
        outcome(path, 2)  # asked for: forked whatever the load
        assert started == [True]


def test_the_runnable_count_is_read_from_the_kernel() -> None:
    others = surveyor.runnable_others()
    assert others is None or 0 <= others < 100_000


def test_no_surveyor_where_the_pipes_cannot_be_widened(tmp_path: Path) -> None:
    """Narrow pipes could fill both ways at once (a deadlock), so the check runs in one process instead."""
    path = write_log(tmp_path / "log.jsonl", CHANGES)
    before = set(os.listdir("/proc/self/fd"))
    with mock.patch.object(surveyor, "_widened", lambda fd: False):
        assert surveyor.Surveyor.start(lambda part: part, forced=True) is None
        assert outcome(path, jobs=2) == outcome(path, jobs=1)
    assert set(os.listdir("/proc/self/fd")) == before


CORRUPTIONS = st.sampled_from(["byte", "drop", "repeat", "swap", "cut"])


def corrupt(text: bytes, how: str, at: int, byte: int) -> bytes:
    """One corruption of a stored log's body (after its header line) at a position drawn as `at`."""
    head, _, body = text.partition(b"\n")
    lines = body.split(b"\n")[:-1]
    if not lines:
        return text
    line = at % len(lines)
    if how == "byte":
        raw = bytearray(lines[line])
        raw[at % len(raw)] = byte  # lines are never empty: each is a JSON object
        lines[line] = bytes(raw)
    elif how == "drop":
        del lines[line]
    elif how == "repeat":
        lines.insert(line, lines[line])
    elif how == "swap" and line + 1 < len(lines):
        lines[line], lines[line + 1] = lines[line + 1], lines[line]
    out = head + b"\n" + b"".join(raw + b"\n" for raw in lines)
    return out[: len(head) + 1 + at % max(len(out) - len(head) - 1, 1)] if how == "cut" else out


CORRUPTED = {"how": CORRUPTIONS, "at": st.integers(0, 10**6), "byte": st.sampled_from(b' "0:,{}[]\\x-9e'),
             "block": st.sampled_from([256, 1024, 32 << 10]), "jobs": st.sampled_from([2, 3])}
SLOW_OK = [HealthCheck.function_scoped_fixture, HealthCheck.too_slow]


@settings(max_examples=60, deadline=None, suppress_health_check=SLOW_OK)
@given(loop=agent_loops(max_turns=6, max_steps=3), **CORRUPTED)
def test_agent_logs_with_a_corruption_check_the_same_with_and_without_the_surveyor(
        tmp_path: Path, loop: Loop, how: str, at: int, byte: int, block: int, jobs: int) -> None:
    """Generated agent loops (prunings, compactions, packed rows, request headers) stored as JSONL and corrupted once:
    the check with surveyors, without, and the exact checker over the storage reader report the same."""
    check_corrupted(tmp_path, loop, how, at, byte, block, jobs)


@pytest.mark.nightly
@settings(max_examples=2000, deadline=None, suppress_health_check=SLOW_OK)
@given(loop=agent_loops(max_turns=30, max_steps=4, max_calls=3), **CORRUPTED)
def test_long_agent_logs_with_a_corruption_check_the_same_with_and_without_the_surveyor(
        tmp_path: Path, loop: Loop, how: str, at: int, byte: int, block: int, jobs: int) -> None:
    """The nightly form: longer loops (more blocks, more replaces in flight), many more examples."""
    check_corrupted(tmp_path, loop, how, at, byte, block, jobs)


def check_corrupted(tmp_path: Path, loop: Loop, how: str, at: int, byte: int, block: int, jobs: int) -> None:
    session = build(loop.requests, "live")
    path = tmp_path / f"{len(os.listdir(tmp_path))}.jsonl"
    storage.save(path, session.header, session.events)
    path.write_bytes(corrupt(path.read_bytes(), how, at, byte))
    with mock.patch.object(jsonlread, "BLOCK", block):
        alone = outcome(path, jobs=1)
        assert outcome(path, jobs=jobs) == alone
        # The torn tail too, with the byte offset a repair would keep.
        assert torn_tail(path, jobs=1) == torn_tail(path, jobs=jobs) == reader_torn_tail(path)
    assert [f[:3] for f in alone[0]] == reference_report(path, False)[0]


def torn_tail(path: Path, jobs: int) -> Any:
    """The check's reader's torn tail (None for a clean end), or the rule that refused the log."""
    checker = Checker(str(path))
    try:
        log = sources.open_log(path, survey=checker.survey, fold=checker.fold, jobs=jobs)
        checker.feed_all(log.records())
    except SpecViolation as violation:
        return violation.rule, violation.line
    return log.torn


def reader_torn_tail(path: Path) -> Any:
    """The storage backend's own reader's torn tail, or the rule that refused the log."""
    try:
        reader = JsonlReader(path)
        for _ in reader.records():
            pass
    except SpecViolation as violation:
        return violation.rule, violation.line
    return reader.torn


def test_read_ahead_is_bounded_in_bytes_with_long_lines() -> None:
    """Blocks of one long line each: the surveyors' queue holds at most AHEAD_BYTES of them, not a block count's worth."""
    line = b'{"type":"x","seq":%d,"time":1,"ignorable":true,"data":"' + b"y" * (1 << 18) + b'"}'
    long_blocks = [line % seq for seq in range(40)]
    pulled: list[int] = []

    def chunks() -> Iterator[bytes]:
        for block in long_blocks:
            pulled.append(len(block))
            yield block

    checker = Checker("x")
    surveyors = [p for p in (surveyor.Surveyor.start(lambda part: blocks.survey_answer(part, checker.survey), forced=True)
                           for _ in range(2)) if p is not None]
    ahead: list[int] = []
    try:
        with mock.patch.object(blocks, "AHEAD_BYTES", 1 << 20):
            for done, (block, surveyed) in enumerate(blocks.surveyed_blocks(chunks(), checker.survey, surveyors), 1):
                assert block == long_blocks[done - 1] and surveyed is not None
                ahead.append(sum(pulled) - sum(map(len, long_blocks[:done])))
    finally:
        for helper in surveyors:
            helper.close()
    assert len(surveyors) == 2 and len(ahead) == len(long_blocks)
    # At most AHEAD_BYTES in the queue when another is read, so less than that plus one block; a count of
    # blocks alone (OWED * 2 + AHEAD = 10) would allow 2.5 MiB.
    assert max(ahead) < (1 << 20) + len(long_blocks[0]), max(ahead)


def test_when_no_more_surveyors_can_start_the_check_goes_on_with_those_it_has(tmp_path: Path) -> None:
    """Out of file descriptors after one surveyor: the check runs with that one, and the findings are the same."""
    path = write_log(tmp_path / "log.jsonl", CHANGES)
    pipe = os.pipe
    made: list[int] = []

    def scarce() -> tuple[int, int]:
        made.append(1)
        if len(made) > 2:
            raise OSError(24, "Too many open files")
        return pipe()

    before = set(os.listdir("/proc/self/fd"))
    with mock.patch.object(os, "pipe", scarce):
        assert outcome(path, jobs=8) == outcome(path, jobs=1)
    assert len(made) == 3 and set(os.listdir("/proc/self/fd")) == before
