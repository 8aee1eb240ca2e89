"""The installed fuzzing path: the fuzz targets as a package module, and the pytest plugin that gives them the profiles.

Each run is a fresh `python -m pytest` from a directory outside the checkout, as a user of
sessionspec with its `fuzz` extra runs it (the plugin is the `pytest11` entry point of the installed
package; an editable install has it too). Below them, the plugin's workarounds of HypoFuzz's faults (issue 35),
each by a test that fails without it; the HypoFuzz runs themselves are in tests/test_fuzz_database.py.
"""

from __future__ import annotations

import contextlib
import importlib
import multiprocessing
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis.internal.conjecture.data import ConjectureData
from sessionspec.testing import fuzz, plugin
from sessionspec.testing.plugin import TARGETS, names_the_targets

ONE_TARGET = f"{TARGETS}::test_every_invalid_operation_is_refused_by_the_model_with_its_rule"


def pytest_run(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def test_the_targets_are_named_by_module_or_by_path() -> None:
    assert names_the_targets([TARGETS]) and names_the_targets([ONE_TARGET])
    assert names_the_targets([fuzz.__file__]) and names_the_targets([f"{fuzz.__file__}::TestLiveAgainstModel"])
    assert not names_the_targets(["tests", "sessionspec.testing.fuzzy", "test_fuzz.py"])


def test_the_installed_targets_run_from_anywhere_in_the_profile_named(tmp_path: Path) -> None:
    done = pytest_run("-v", "--pyargs", ONE_TARGET, "--hypothesis-profile", "ci", cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "hypothesis profile 'ci'" in done.stdout and "max_examples=60" in done.stdout
    assert "1 passed" in done.stdout


def test_hypothesis_profile_in_the_environment_and_every_target_collected(tmp_path: Path) -> None:
    env = {**os.environ, "HYPOTHESIS_PROFILE": "nightly"}
    done = pytest_run("-v", "--collect-only", "--pyargs", TARGETS, cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "hypothesis profile 'nightly'" in done.stdout and "max_examples=10000" in done.stdout
    for target in ("TestLiveAgainstModel", "TestModelAgainstItself", "TestCompanionLiveAgainstModel",
                   "test_every_invalid_operation_is_refused_by_the_model_with_its_rule",
                   "test_a_loop_cut_anywhere_is_read_back_and_continues_well_formed"):
        assert target in done.stdout, target


def test_the_nightly_profile_is_randomized_even_where_ci_is_set() -> None:
    """Where $CI is set, Hypothesis's default is its own derandomized `ci` profile, which a profile inherits;
    `hypothesis fuzz` then collects nothing ("sets_derandomize"), as the project's CI once showed."""
    script = ("from hypothesis import settings; from sessionspec.testing import profiles; profiles.load('nightly'); "
              "print(settings.default.derandomize)")
    done = subprocess.run([sys.executable, "-c", script], env={**os.environ, "CI": "true"}, capture_output=True,
                          text=True, check=False, timeout=120)
    assert done.stdout.strip() == "False", done.stdout + done.stderr


def test_any_other_run_keeps_its_own_profiles(tmp_path: Path) -> None:
    """Installing sessionspec changes nothing for another project's suite: Hypothesis's `ci` stays Hypothesis's."""
    (tmp_path / "test_other.py").write_text(
        "from hypothesis import settings\n\n\n"
        "def test_profiles_are_hypothesis_own() -> None:\n"
        "    assert settings.get_profile('ci').max_examples == 100\n"
        "    assert 'nightly' not in settings._profiles\n", encoding="utf-8")
    done = pytest_run("-q", "test_other.py", cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


# HypoFuzz's faults and their workarounds (sessionspec.testing.plugin, issue 35). HypoFuzz's hub forks its
# workers after collecting the targets; these tests fork as it does (Linux's start method).

HYPOTHESIS = shutil.which("hypothesis", path=str(Path(sys.executable).parent)) or shutil.which("hypothesis") or "hypothesis"
UUID_HOLDERS = ("hypofuzz.utils", "hypofuzz.provider", "hypofuzz.hypofuzz")
needs_proc = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads the processes from /proc (Linux)")


def _probe_worker(pytest_args: tuple[str, ...], shared_state: Any) -> None:
    """A stand-in for HypoFuzz's worker: what it sees as it starts (its uuid, as each HypoFuzz module holds it,
    and the targets it has published), handed back through the shared state."""
    shared_state["worker_state"]["seen"] = {
        "uuids": [importlib.import_module(name).process_uuid for name in UUID_HOLDERS],
        "valid_nodeids": list(shared_state["worker_state"]["valid_nodeids"]),
    }


def test_each_forked_worker_has_its_own_uuid_and_publishes_its_targets_before_its_first_batch() -> None:
    """Without `worker_entry`, both workers report as the hub's uuid (the dashboard's AssertionError) and publish
    nothing until their first batch ends (the hub's exit after 60 s, BrokenPipeError in the workers)."""
    hub_uuid = importlib.import_module("hypofuzz.utils").process_uuid
    context = multiprocessing.get_context("fork")
    with context.Manager() as manager:
        states = []
        for _ in range(2):
            state = manager.dict()
            state["hub_state"] = manager.dict({"nodeids": {"a.py::test_b", "a.py::test_a"}})
            state["worker_state"] = manager.dict({"valid_nodeids": manager.list()})
            states.append(state)
        workers = [context.Process(target=plugin.worker_entry(_probe_worker),
                                   kwargs={"pytest_args": (), "shared_state": state}) for state in states]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(60)
            assert worker.exitcode == 0
        seen = [dict(state["worker_state"]["seen"]) for state in states]
    for each in seen:
        assert len(set(each["uuids"])) == 1 and hub_uuid not in each["uuids"]
        assert each["valid_nodeids"] == ["a.py::test_a", "a.py::test_b"]
    assert seen[0]["uuids"] != seen[1]["uuids"]


def test_fix_hypofuzz_wraps_the_hub_once(monkeypatch: pytest.MonkeyPatch) -> None:
    hub = importlib.import_module("hypofuzz.hypofuzz")
    for name in ("_start_worker", "Process"):
        monkeypatch.setattr(hub, name, getattr(hub, name))
    monkeypatch.setattr(hub.FuzzWorkerHub, "start", hub.FuzzWorkerHub.start)
    monkeypatch.setattr(hub, "_sessionspec_fixed", False, raising=False)
    original = hub._start_worker
    assert plugin.fix_hypofuzz() and plugin.fix_hypofuzz()
    assert hub._start_worker.__wrapped__ is original and hub.Process is plugin._recorded_process
    assert hub.FuzzWorkerHub.start.__wrapped__.__name__ == "start"
    assert not hasattr(hub.FuzzWorkerHub.start.__wrapped__, "__wrapped__")  # wrapped once, however often called


def test_a_shrunk_failure_has_the_slice_comments_hypofuzz_reads() -> None:
    """HypoFuzz 25.11.1 reads `shrink_target.slice_comments` after shrinking, which Hypothesis renamed
    `span_comments`: without the alias a worker died on the first failure it found."""
    plugin.alias_slice_comments()
    data = ConjectureData.for_choices((1,))
    data.draw_integer(0, 10)
    data.freeze()
    result = data.as_result()
    again = ConjectureData.for_choices(result.choices)
    again.slice_comments = result.slice_comments  # what HypoFuzz does, word for word
    assert again.span_comments is result.span_comments


DYING_WORKER = """
import os, sys, time
from sessionspec.testing import plugin

def hub_run(self):
    stays = plugin._recorded_process(target=time.sleep, args=(600,))
    stays.start()
    print(stays.pid, flush=True)
    plugin._recorded_process(target=os._exit, args=(3,)).start()
    time.sleep(600)

plugin.hub_start(hub_run)(None)
"""


@needs_proc
def test_a_worker_that_dies_ends_the_run_with_exit_2_and_its_siblings(tmp_path: Path) -> None:
    """Without `hub_start`, HypoFuzz's hub sleeps on beside a defunct worker while the others fuzz."""
    done = subprocess.run([sys.executable, "-c", DYING_WORKER], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == plugin.WORKER_DIED_EXIT, done.stdout + done.stderr
    assert "a HypoFuzz worker died" in done.stderr and "exit 3" in done.stderr, done.stderr
    sibling = int(done.stdout.split()[0])
    assert not Path(f"/proc/{sibling}").exists() or "Z" in Path(f"/proc/{sibling}/stat").read_text().split()[2]


def session_processes(session: int) -> list[str]:
    """The processes of a session (all that a command started with start_new_session left), as `pid (name) state`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        name_end = stat.rindex(")")
        fields = stat[name_end + 2:].split()
        if int(fields[3]) == session:
            found.append(f"{stat[:name_end + 1]} {fields[0]}")
    return found


def start_fuzzer(args: list[str], *, cwd: Path, env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    """`hypothesis fuzz --no-dashboard ARGS` in a session of its own, its output to `log`."""
    with log.open("wb") as out:
        return subprocess.Popen([HYPOTHESIS, "fuzz", "--no-dashboard", *args], cwd=cwd, env=env, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)


def wait_for(condition: Callable[[], bool], what: str, *, within: float,
             fuzzers: dict[str, tuple[subprocess.Popen[bytes], Path]]) -> None:
    """Poll `condition` until it holds; fail, with the fuzzers' output, when a fuzzer ended or `within` s passed."""
    deadline = time.monotonic() + within
    while not condition():
        ended = {name: process.returncode for name, (process, _) in fuzzers.items() if process.poll() is not None}
        if ended or time.monotonic() > deadline:
            logs = "\n".join(f"--- {name}\n{log.read_text(errors='replace')[-4000:]}" for name, (_, log) in fuzzers.items())
            stop(fuzzers)
            pytest.fail(f"waiting for {what}: {'ended ' + str(ended) if ended else f'{within} s passed'}\n{logs}")
        time.sleep(0.5)


def stop(fuzzers: dict[str, tuple[subprocess.Popen[bytes], Path]]) -> None:
    for process, _ in fuzzers.values():
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def interrupt(name: str, fuzzers: dict[str, tuple[subprocess.Popen[bytes], Path]], *, group: bool) -> str:
    """SIGINT to a fuzzer, to its hub alone or to its whole process group (a terminal's ^C, `timeout`): it ends
    within 60 s and leaves no process behind. Its output."""
    process, log = fuzzers[name]
    (os.killpg if group else os.kill)(process.pid, signal.SIGINT)
    try:
        process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        left = session_processes(process.pid)
        stop(fuzzers)
        pytest.fail(f"{name} still runs 60 s after SIGINT: {left}\n{log.read_text(errors='replace')[-4000:]}")
    time.sleep(1)
    assert session_processes(process.pid) == [], f"{name} left processes behind"
    output = log.read_text(errors="replace")
    for fault in ("Traceback", "Error", "Found a failing input for every test"):
        assert fault not in output, f"{name}:\n{output[-4000:]}"
    return output
