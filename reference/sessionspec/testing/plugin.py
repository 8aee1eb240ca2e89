"""The pytest plugin (entry point `pytest11`): the settings profiles for a run of the installed fuzz targets.

    python -m pytest --pyargs sessionspec.testing.fuzz --hypothesis-profile nightly

Installed with the package, the plugin is loaded by every pytest run in the environment, so it
acts only on a run that names `sessionspec.testing.fuzz` (by module or by path): it registers the
profiles of `sessionspec.testing.profiles` before Hypothesis's own plugin loads the one named by
`--hypothesis-profile`, and when none is named loads $HYPOTHESIS_PROFILE, else `dev`. Any other
run is left as it was: a project that installs sessionspec to use its strategies keeps its own
Hypothesis profiles (Hypothesis's `ci` among them) and loads nothing of sessionspec's here.
A project that wants the profiles in its own suite calls `sessionspec.testing.profiles.load()`
from its conftest.

In a HypoFuzz run of the targets (`hypothesis fuzz -- --pyargs sessionspec.testing.fuzz`) the plugin
also works around four faults of HypoFuzz 25 (`fix_hypofuzz`; issue 35, each with its test in
tests/test_fuzz_plugin.py): the hub collects the targets and then forks its workers, so

- every worker inherits the hub's `process_uuid`, and two workers' reports on one target interleave
  as one worker's: the dashboard's cumulative counts go negative and it dies on
  `AssertionError: {Status.VALID: -1, ...}`. Each worker here draws its own.
- the hub ends the run when no worker has published a target still to fuzz, and a worker publishes
  only after its first batch of 100 inputs: a batch of the stateful machines takes longer than the
  hub's first 60-second look, so the hub printed `Found a failing input for every test!`, shut its
  shared state down under the workers (BrokenPipeError) and exited 1. Each worker here publishes
  the targets it was given before it starts.
- a worker that finds a failure shrinks it, then reads `shrink_target.slice_comments`, which Hypothesis
  has renamed `span_comments` (HypoFuzz 25.11.1 with Hypothesis 6.170): the worker died with
  AttributeError on the first failure it found. `slice_comments` is given back as the alias it was.
- on SIGINT (or a worker's death) the hub left its workers running, and waited for them at exit:
  a hub with a defunct worker stayed for as long as the other fuzzed. Here the workers ignore SIGINT
  (the hub alone answers it), and the hub ends every child it started when its run ends, however it
  ends; a worker that dies ends the run with exit 2 and says so.
"""

from __future__ import annotations

import functools
import importlib
import multiprocessing
import os
import signal
import sys
import threading
import uuid
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import pytest

TARGETS = "sessionspec.testing.fuzz"
TARGETS_FILE = Path(__file__).resolve().with_name("fuzz.py")
WORKER_DIED_EXIT = 2
"""The exit of a HypoFuzz run one of whose workers died: the search could not run (the project's codes)."""
_UUID_HOLDERS = ("hypofuzz.utils", "hypofuzz.provider", "hypofuzz.hypofuzz")
"""HypoFuzz's modules that hold the worker's `process_uuid` (each imported it by name)."""
HUB_GONE = (BrokenPipeError, ConnectionResetError, EOFError, FileNotFoundError)
"""What a worker's call to the hub's shared state raises once the hub has shut it down."""
_WORKERS: list[Any] = []
"""The worker processes this hub started (multiprocessing.Process)."""


def names_the_targets(args: Iterable[str]) -> bool:
    """Whether a command line's arguments name the fuzz targets: `sessionspec.testing.fuzz[::TEST]` or its file."""
    for arg in args:
        target = arg.split("::", 1)[0]
        if target == TARGETS or target.startswith(f"{TARGETS}."):
            return True
        if target.endswith(".py") and Path(target).resolve() == TARGETS_FILE:
            return True
    return False


def in_hypofuzz_run() -> bool:
    """Whether this process is `hypothesis fuzz` (or one of its workers): HypoFuzz says so once it has been started."""
    detection = sys.modules.get("hypofuzz.detection")
    return bool(detection is not None and detection.in_hypofuzz_run())


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """Before Hypothesis's plugin loads `--hypothesis-profile`: the profiles, for a run of the fuzz targets."""
    if not names_the_targets(config.args):
        return
    profiles = importlib.import_module("sessionspec.testing.profiles")
    profiles.load()
    if in_hypofuzz_run():
        fix_hypofuzz()


def fix_hypofuzz() -> bool:
    """Install the workarounds in HypoFuzz's hub (idempotent); False where this HypoFuzz has not the code they wrap.

    Called during the hub's collection, before it forks its workers, which inherit them (Linux's fork;
    a spawned worker imports HypoFuzz afresh and so has its own uuid already).
    """
    hub: Any = importlib.import_module("hypofuzz.hypofuzz")
    if getattr(hub, "_sessionspec_fixed", False):
        return True
    if not all(hasattr(hub, name) for name in ("_start_worker", "FuzzWorkerHub", "Process")):
        print("sessionspec: this HypoFuzz has no _start_worker/FuzzWorkerHub; its known faults are not worked around",
              file=sys.stderr)
        return False
    alias_slice_comments()
    hub._start_worker = worker_entry(hub._start_worker)
    hub.FuzzWorkerHub.start = hub_start(hub.FuzzWorkerHub.start)
    hub.Process = _recorded_process
    hub._sessionspec_fixed = True
    return True


def alias_slice_comments() -> None:
    """`slice_comments`, which HypoFuzz reads and writes, as Hypothesis's `span_comments` (where it is gone)."""
    data: Any = importlib.import_module("hypothesis.internal.conjecture.data")
    for kind in (data.ConjectureResult, data.ConjectureData):
        if not hasattr(kind, "slice_comments"):
            kind.slice_comments = property(_span_comments, _set_span_comments)


def _span_comments(self: Any) -> Any:
    return self.span_comments


def _set_span_comments(self: Any, comments: Any) -> None:
    self.span_comments = comments


def _recorded_process(*args: Any, **kwargs: Any) -> Any:
    """HypoFuzz's hub makes its workers with this: a `multiprocessing.Process`, kept to be watched and ended."""
    process = multiprocessing.Process(*args, **kwargs)
    _WORKERS.append(process)
    return process


def worker_entry(original: Callable[..., None]) -> Callable[..., None]:
    """A worker's start: its own uuid, SIGINT left to the hub, its targets published before its first batch."""

    @functools.wraps(original)
    def start_worker(pytest_args: Any, shared_state: Mapping[str, Any]) -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        fresh = uuid.uuid4().hex
        for name in _UUID_HOLDERS:
            module: Any = sys.modules.get(name)
            if module is not None and hasattr(module, "process_uuid"):
                module.process_uuid = fresh
        # Until its first batch ends, every target the hub gave this worker is still to be fuzzed.
        shared_state["worker_state"]["valid_nodeids"] = sorted(shared_state["hub_state"]["nodeids"])
        try:
            original(pytest_args=pytest_args, shared_state=shared_state)
        except HUB_GONE:
            # The hub's shared state is gone: the hub has ended its run, and this worker has no one to report to.
            os._exit(0)

    return start_worker


class _Watch(threading.Thread):
    """Watches the hub's workers: the first to die interrupts the hub (SIGINT to itself), so the run ends."""

    def __init__(self) -> None:
        super().__init__(name="sessionspec-hypofuzz-watch", daemon=True)
        self.stopped = threading.Event()
        self.died: list[tuple[int | None, int | None]] = []

    def run(self) -> None:
        while not self.stopped.wait(0.5):
            dead = [(worker.pid, worker.exitcode) for worker in list(_WORKERS)
                    if worker.pid is not None and worker.exitcode is not None]
            if dead and not self.stopped.is_set():
                self.died = dead
                os.kill(os.getpid(), signal.SIGINT)
                return

    def stop(self) -> None:
        self.stopped.set()
        self.join(timeout=5)


def hub_start(original: Callable[[Any], None]) -> Callable[[Any], None]:
    """The hub's run, which ends every process it started however it ends, and ends when a worker dies.

    On SIGINT the workers are ended first, before HypoFuzz's hub unwinds and shuts its shared state down
    under them (a worker still running then dies on BrokenPipeError).
    """

    @functools.wraps(original)
    def start(self: Any) -> None:
        watch = _Watch()
        previous = signal.signal(signal.SIGINT, _end_workers_then_interrupt)
        watch.start()
        try:
            original(self)
        except KeyboardInterrupt:
            if not watch.died:
                raise
            codes = ", ".join(f"pid {pid} exit {code}" for pid, code in watch.died)
            print(f"sessionspec: a HypoFuzz worker died ({codes}; its traceback is above): the run is stopped",
                  file=sys.stderr)
            raise SystemExit(WORKER_DIED_EXIT) from None
        finally:
            watch.stop()
            signal.signal(signal.SIGINT, previous)
            end_processes(multiprocessing.active_children())

    return start


def _end_workers_then_interrupt(signum: int, frame: object) -> None:
    """The hub's SIGINT: its workers end, then the hub is interrupted as Python's own handler would."""
    end_processes([worker for worker in _WORKERS if worker.pid is not None])
    raise KeyboardInterrupt


def end_processes(processes: list[Any], grace: float = 10.0) -> None:
    """Each process (multiprocessing.Process) is ended: SIGTERM, then SIGKILL if it is still there after `grace` s."""
    for process in processes:
        if process.exitcode is None:
            process.terminate()
    for process in processes:
        process.join(grace)
        if process.is_alive():
            process.kill()
            process.join()
