"""Every stop keeps its report (issue 34): a signal at any moment of a run, a testee that fails hello, a deadline, a
testee that stalls after every restart; and failure lists that say what changed (issue 35)."""

from __future__ import annotations

import gc
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from sessionspec.cli import main
from sessionspec.conformance import stopping
from support import valid_report

PY = sys.executable

# Our live store behind a delay per request, ignoring SIGTERM (as a careless testee does), its pid written down.
# argv: pids file, seconds per request, mode ("serve", "no-hello", "one-then-stall").
TESTEE = r'''
import os, signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
signal.signal(signal.SIGINT, signal.SIG_IGN)
with open(sys.argv[1], "a") as out:
    out.write(f"{os.getpid()}\n")
delay, mode = float(sys.argv[2]), sys.argv[3]
from sessionspec.testing.implementations import factory
from sessionspec.wire.executor import Executor
from sessionspec.wire.serve import answer_line
executor = Executor(factory("live"), "live")
answered = 0
for line in sys.stdin.buffer:
    if mode == "no-hello":
        sys.stdout.buffer.write(b'{"ok": false, "error": {"kind": "internal", "message": "not today"}}\n')
        sys.stdout.buffer.flush()
        continue
    if mode == "one-then-stall" and answered >= 2:
        time.sleep(600)
    time.sleep(delay)
    answered += 1
    sys.stdout.buffer.write(answer_line(executor, line.rstrip(b"\n")) + b"\n")
    sys.stdout.buffer.flush()
'''


def slow_testee(tmp_path: Path, delay: float = 0.0, mode: str = "serve") -> tuple[list[str], Path]:
    script, pids = tmp_path / "testee.py", tmp_path / "pids"
    script.write_text(TESTEE)
    pids.write_text("")
    return [PY, str(script), str(pids), str(delay), mode], pids


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def no_process_left(pids: Path) -> None:
    left = [pid for pid in map(int, pids.read_text().split()) if alive(pid)]
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert not left, f"testee processes outlived the run: {left}"


def conform_process(tmp_path: Path, command: list[str], *options: str) -> subprocess.Popen[str]:
    report = tmp_path / "report.json"
    return subprocess.Popen([PY, "-m", "sessionspec.cli", "conform", "--json", str(report), "--junit",
                             str(tmp_path / "report.xml"), "--traces", str(tmp_path / "traces"), *options, "--",
                             *command], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)


MOMENTS = [(signal.SIGTERM, 1.5), (signal.SIGINT, 4.0), (signal.SIGTERM, 9.0)]
"""Where a default run of the test is stopped: during start-up and the vectors, and in the machine's search (the
nightly profile tries 50 moments drawn at random)."""


def stopped_by(tmp_path: Path, signum: int, after: float) -> dict[str, Any]:
    command, pids = slow_testee(tmp_path, delay=0.0005)
    run = conform_process(tmp_path, command, "--examples", "40")
    time.sleep(after)
    run.send_signal(signum)
    try:
        out, err = run.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        run.kill()
        raise AssertionError("the run did not stop within 60 s of the signal") from None
    if run.returncode == 0:  # it finished before the signal: nothing to judge at this moment
        return {}
    assert run.returncode == 128 + signum, (run.returncode, err[-2000:])
    assert "Traceback" not in err, err[-3000:]
    report = valid_report(tmp_path / "report.json")
    assert report["complete"] is False and report["signal"] == signum
    assert report["footer"]["complete"] is False and report["footer"]["reason"] == "signal"
    assert report["stopped"] == f"stopped by {signal.Signals(signum).name}"
    assert f"STOPPED: stopped by {signal.Signals(signum).name}" in out
    assert (tmp_path / "report.xml").read_text().startswith("<?xml")
    assert not list(tmp_path.glob(".report*.tmp")), "no temporary report is left"
    no_process_left(pids)
    return report


@pytest.mark.parametrize("signum, after", MOMENTS, ids=lambda value: str(value))
def test_a_signal_stops_the_run_with_its_report_and_no_testee_left(tmp_path: Path, signum: int, after: float) -> None:
    report = stopped_by(tmp_path, signum, after)
    if report:
        summary = report["vectors"]
        assert summary["total"] == 270 or summary["total"] == len(report["cases"]) - 1 or summary["total"] > 0
        assert summary["passed"] + summary["failed"] + summary["skipped"] + summary["notApplicable"] == summary["total"]


@pytest.mark.nightly
def test_fifty_signals_at_random_moments_each_leave_a_valid_report(tmp_path_factory: pytest.TempPathFactory) -> None:
    draw = random.Random(20261207)
    for number in range(50):
        signum = draw.choice((signal.SIGTERM, signal.SIGINT))
        stopped_by(tmp_path_factory.mktemp(f"stop{number}"), signum, draw.uniform(0.5, 30.0))


def test_a_signal_raised_inside_a_gc_callback_is_raised_again_where_the_run_is(
        capsys: pytest.CaptureFixture[str]) -> None:
    """A SIGTERM that lands in Hypothesis's gc callback raised `Interrupted` where Python drops it ("Exception
    ignored", a traceback on stderr, and the run went on): it is raised again a moment later, where the run is."""
    def collect_when_asked(_phase: str, _info: dict[str, int]) -> None:
        if _phase == "start" and not raised:
            raised.append(True)
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.01)  # the handler runs here, inside this gc callback, and its exception is dropped
    raised: list[bool] = []
    stopped = None
    gc.callbacks.append(collect_when_asked)
    try:
        with stopping.stop_on_signals():
            try:
                gc.collect()
                deadline = time.monotonic() + 5
                while time.monotonic() < deadline:
                    time.sleep(0.01)
            except stopping.Interrupted as stop:
                stopped = stop.signum
    finally:
        gc.callbacks.remove(collect_when_asked)
        stopping._State.received = None
    assert raised and stopped == signal.SIGTERM
    assert "Traceback" not in capsys.readouterr().err


def test_a_testee_that_fails_hello_still_gets_its_report(tmp_path: Path) -> None:
    command, pids = slow_testee(tmp_path, mode="no-hello")
    report_path = tmp_path / "report.json"
    assert main(["conform", "--json", str(report_path), "--", *command]) == 2
    report = valid_report(report_path)
    assert report["complete"] is False and "refused hello" in report["stopped"]
    no_process_left(pids)


def test_vectors_a_deadline_left_unreached_are_counted_as_not_run(tmp_path: Path) -> None:
    command, pids = slow_testee(tmp_path, delay=0.02)
    report_path = tmp_path / "report.json"
    main(["conform", "--deadline", "3", "--examples", "5", "--json", str(report_path), "--", *command])
    report = valid_report(report_path)
    vectors = report["vectors"]
    assert vectors["total"] == len([c for c in report["cases"] if c["suite"] == "vectors"]) > 100
    assert vectors["notRun"] > 0 and vectors["notRun"] == report["summary"]["notRun"]
    assert all(c["message"].startswith("not run: ") for c in report["cases"] if c["status"] == "skipped" and c["suite"] == "vectors")
    no_process_left(pids)


def test_a_testee_that_stalls_after_each_restart_is_declared_unusable_after_three(tmp_path: Path) -> None:
    """Each incarnation answers two requests and stalls: a give-up count reset by any answer never reached its limit,
    and every request waited out its timeout until the restart limit (520 s at the default timeout)."""
    command, pids = slow_testee(tmp_path, mode="one-then-stall")
    report_path = tmp_path / "report.json"
    started = time.monotonic()
    code = main(["conform", "--timeout", "3", "--json", str(report_path), "--", *command])
    assert time.monotonic() - started < 60
    assert code == 1, json.loads(report_path.read_text())["stopped"]
    report = valid_report(report_path)
    assert "stalled or overflowed in 3 incarnations in a row" in report["stopped"]
    assert report["vectors"]["notRun"] > 200
    no_process_left(pids)


def test_a_listed_entry_that_now_diverges_otherwise_is_reported_changed_not_passing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from sessionspec.conformance import failures
    from sessionspec.wire.divergence import Divergence

    found = Divergence("vector", "SESSION-SURFACE-REPLACE.2-reject", "append", "SESSION-SURFACE-REPLACE.2", "range",
                       {"ok": False, "error": {"kind": "range"}}, {"ok": False, "error": {"kind": "seq"}}, [],
                       answered="seq")
    verdict = failures.judge(failures.parse("SESSION-SURFACE-REPLACE.2-reject accepted\n"), [found])
    assert verdict.stale == ["line 1: SESSION-SURFACE-REPLACE.2-reject accepted CHANGED: it now answers seq "
                             "(was accepted; update the entry, or fix what changed)"]
    assert failures.judge(failures.parse("SESSION-SURFACE-REPLACE.2-reject seq\n"), [found]).stale == []
    gone = failures.judge(failures.parse("SESSION-SURFACE-REPLACE.2-reject accepted\n"), [])
    assert gone.stale == ["line 1: SESSION-SURFACE-REPLACE.2-reject accepted passes now (remove it)"]


def test_a_failure_list_that_does_not_exist_is_exit_2_unless_fix_writes_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "known.txt"
    assert main(["conform", "--failures", str(missing), "--", PY, "-m", "sessionspec.cli", "serve"]) == 2
    assert f"no failure list at {missing}" in capsys.readouterr().err


def test_fix_lists_what_the_reference_accepts_under_no_rule_never_under_the_vectors_recommended_ground(
        tmp_path: Path) -> None:
    """A starter refusing a seeded create diverged at the first step of SESSION-CORE-EVENTS.1-reject; `--fix` wrote it
    under "=== required" with CORE-EVENTS.1's recommended ground (issue 35)."""
    from sessionspec.conformance import failures
    from sessionspec.wire.divergence import Divergence

    found = Divergence("vector", "SESSION-CORE-EVENTS.1-reject", "create", None, "unsupported", {"ok": True},
                       {"ok": False, "error": {"kind": "unsupported"}}, [], answered="unsupported", level="required")
    listed = tmp_path / "known.txt"
    failures.rewrite(listed, [found])
    text = listed.read_text()
    required = text.split("# === required")[1]
    assert "SESSION-CORE-EVENTS.1-reject unsupported" in required
    assert "the reference accepts the request" in required
    assert "recommended because" not in text and "decision: the marker" not in text


def test_conform_called_as_a_function_leaves_the_signal_handlers_as_it_found_them() -> None:
    """A process that ran `main(["conform", ...])` (a test, a library's caller) only noted SIGTERM ever after, so a
    process it later forked outlived the pool that stopped it (the default suite hung in test_proofs)."""
    stops = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
    before = {signum: signal.getsignal(signum) for signum in stops}
    assert main(["conform", "--examples", "0", "--run", "SESSION-EVENT-ENVELOPE.1-*", "--", PY, "-m", "sessionspec.cli",
                 "serve", "--impl", "live"]) == 0
    assert {signum: signal.getsignal(signum) for signum in stops} == before
    assert stopping.received() is None
