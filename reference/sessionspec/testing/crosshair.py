"""Running the CrossHair obligations in `proofs/` and tabulating what the solver found.

An obligation is a function in `proofs/obligations_*.py` whose icontract `ensure` states one
property (see proofs/README.md). Each runs in its own `crosshair check --analysis_kind=icontract`
subprocess, so one that hangs or crashes costs its own row and not the run. CrossHair is a
bounded search, not a proof: "no counterexample within the bound" means exactly that, and only
"confirmed over all paths" means the solver exhausted every path.

Budgets are CPU time, as CrossHair's own timeouts are: each condition (one `ensure`) gets
`per_condition_timeout` CPU seconds, so an obligation of n conditions gets n times that, plus
one path's overrun and the start of the process (`Bounds.budget`). The subprocess's CPU is
capped there (RLIMIT_CPU, where the system has it): an obligation that overruns its budget is a
timeout whether the cores were idle or shared, and a loaded host makes a run slower, never a
timeout. The wall clock is only a guard against a process that stops using the CPU at all.
A timeout, an error, a counterexample and an obligation that cannot be imported all fail a run:
only "no counterexample within the bound" and "confirmed over all paths" pass.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import icontract._checkers

from sessionspec.resources import shipped

NO_COUNTEREXAMPLE = "no counterexample within the bound"
CONFIRMED = "confirmed over all paths"
COUNTEREXAMPLE = "counterexample"
TIMEOUT = "timeout"
ERROR = "error"
NOT_AVAILABLE = "not available"


STARTUP = 5.0
"""CPU seconds an obligation's process may spend besides its search: starting Python, CrossHair and z3,
and importing the obligation (about 1 s measured on the 2-core reference host; 5 leaves room)."""
OVERRUN = 1.5
"""A condition may take this many times its search and one path before its obligation is a timeout: CrossHair
checks its clock between paths, and a call into z3 is not interrupted (measured at the quick bounds: 4.2 CPU s
for a condition of 4 + 1)."""
WALL_FACTOR = 20
"""The wall-clock guard, against a process that stops using the CPU: this many times the CPU budget. An obligation
uses about a third of its budget (4.3 of 12.5 CPU s at the quick bounds), so only a process slowed sixty-fold by
other work on its cores would meet it."""


@dataclass(frozen=True, slots=True)
class Bounds:
    """CrossHair's per-condition and per-path timeouts, in CPU seconds, as CrossHair counts them."""

    per_condition_timeout: float
    per_path_timeout: float

    def budget(self, conditions: int) -> float:
        """The CPU seconds an obligation of `conditions` conditions may use: each condition's search and one path's
        overrun (CrossHair finishes the path it is on), half again for a solver call that overruns its path,
        and the process's start."""
        return max(1, conditions) * (self.per_condition_timeout + self.per_path_timeout) * OVERRUN + STARTUP

    def describe(self) -> str:
        return (f"--per_condition_timeout={self.per_condition_timeout:g} --per_path_timeout={self.per_path_timeout:g} "
                f"(CPU seconds; each obligation capped at its conditions x "
                f"{(self.per_condition_timeout + self.per_path_timeout) * OVERRUN:g} + {STARTUP:g} CPU s)")


QUICK = Bounds(per_condition_timeout=4, per_path_timeout=1)
"""The CI run: 15 obligations of 16 conditions, about 70 CPU seconds (proofs/README.md, "The quick run")."""
FULL = Bounds(per_condition_timeout=120, per_path_timeout=5)


@dataclass(frozen=True, slots=True)
class Obligation:
    module: str
    name: str
    summary: str
    unavailable: str | None = None
    conditions: int = 1
    """Its `ensure` clauses: CrossHair searches each one in turn, with its own time."""

    @property
    def target(self) -> str:
        return f"{self.module}.{self.name}"


@dataclass(frozen=True, slots=True)
class Result:
    obligation: Obligation
    status: str
    detail: str
    seconds: float
    cpu_seconds: float | None = None
    """What the obligation's process used, as it reported at exit (None: it did not exit by itself)."""

    def to_json(self) -> dict[str, object]:
        return {"obligation": self.obligation.target, "status": self.status, "detail": self.detail,
                "seconds": round(self.seconds, 1),
                "cpuSeconds": None if self.cpu_seconds is None else round(self.cpu_seconds, 1)}


def available() -> bool:
    """Whether CrossHair is installed here (the `proofs` extra)."""
    return importlib.util.find_spec("crosshair") is not None


def default_directory() -> Path:
    """`proofs/` of the checkout, else the copy the installed package carries (sessionspec.resources)."""
    return shipped("proofs")


def discover(directory: Path) -> list[Obligation]:
    """Every icontract-checked function defined in `directory/obligations_*.py`, in file order.

    A module whose import fails with ImportError (e.g. `sessionspec.live` not yet written) is
    listed as one row "not available", with the reason.
    """
    found: list[Obligation] = []
    if str(directory) not in sys.path:
        sys.path.insert(0, str(directory))
    for path in sorted(directory.glob("obligations_*.py")):
        name = path.stem
        try:
            module = importlib.import_module(name)
        except ImportError as error:
            found.append(Obligation(name, "*", "", unavailable=str(error)))
            continue
        functions = [value for value in vars(module).values()
                     if inspect.isfunction(value) and value.__module__ == name
                     and icontract._checkers.find_checker(value) is not None]
        functions.sort(key=lambda f: inspect.getsourcelines(f)[1])
        for function in functions:
            doc = inspect.getdoc(function) or ""
            checker = icontract._checkers.find_checker(function)
            conditions = len(getattr(checker, "__postconditions__", ()) or ())
            found.append(Obligation(name, function.__name__, doc.split("\n\n")[0].replace("\n", " "),
                                    conditions=conditions))
    return found


LAUNCH = """
import atexit, runpy, sys
limit = float(sys.argv.pop(1))
try:
    import resource
except ImportError:  # no RLIMIT_CPU here: the wall-clock guard alone
    resource = None
if resource is not None:
    seconds = int(limit) + 1
    try:
        resource.setrlimit(resource.RLIMIT_CPU, (seconds, seconds + 5))
    except (ValueError, OSError):  # a lower limit is already set: it stays
        pass
    def report():
        used = resource.getrusage(resource.RUSAGE_SELF)
        print(f"\\nsessionspec-cpu-seconds {used.ru_utime + used.ru_stime:.2f}", file=sys.stderr, flush=True)
    atexit.register(report)
sys.argv[0] = "crosshair"
runpy.run_module("crosshair", run_name="__main__", alter_sys=True)
"""
"""Runs CrossHair with the process's CPU capped at its budget (the kernel ends it with SIGXCPU past it), and
reports the CPU it used when it exits."""
CPU_MARK = "sessionspec-cpu-seconds "
CPU_LIMIT_SIGNALS = frozenset(-getattr(signal, name) for name in ("SIGXCPU", "SIGKILL") if hasattr(signal, name))
"""How a process past its CPU limit ends: SIGXCPU at the soft limit, SIGKILL at the hard one (a return code of -N)."""


def command(obligation: Obligation, bounds: Bounds) -> list[str]:
    return [sys.executable, "-c", LAUNCH, f"{bounds.budget(obligation.conditions):g}", "check",
            "--analysis_kind=icontract", f"--per_condition_timeout={bounds.per_condition_timeout:g}",
            f"--per_path_timeout={bounds.per_path_timeout:g}", "--report_all", obligation.target]


def cpu_used(output: str) -> tuple[str, float | None]:
    """The output without the launcher's report, and the CPU seconds it reported."""
    head, mark, tail = output.rpartition("\n" + CPU_MARK)
    if not mark:
        return output, None
    number = tail.split()[0] if tail.split() else ""
    try:
        return head, float(number)
    except ValueError:
        return output, None


def classify(returncode: int, output: str) -> tuple[str, str]:
    """The status of one crosshair run from its exit code and output."""
    errors = [line.split(": error: ", 1)[1] for line in output.splitlines() if ": error: " in line]
    if any("when calling" in line for line in errors):
        return COUNTEREXAMPLE, next(line for line in errors if "when calling" in line)
    if errors or returncode not in (0, 1):
        return ERROR, (errors[0] if errors else output.strip().splitlines()[-1:] or [f"exit {returncode}"])[0]
    if "Confirmed over all paths" in output and "Not confirmed" not in output:
        return CONFIRMED, ""
    return NO_COUNTEREXAMPLE, ""


def check(obligation: Obligation, bounds: Bounds, directory: Path) -> Result:
    """One obligation in its own subprocess, within its CPU budget."""
    if obligation.unavailable is not None:
        return Result(obligation, NOT_AVAILABLE, obligation.unavailable, 0.0)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(directory), env.get("PYTHONPATH", "")]))
    # The model's own contracts off: CrossHair treats a nested contract that fails on a symbolic
    # value as a path to ignore, and a run in which every path is ignored reports "confirmed".
    env["SESSIONSPEC_CONTRACTS"] = "0"
    budget = bounds.budget(obligation.conditions)
    started = time.perf_counter()
    try:
        done = subprocess.run(command(obligation, bounds), cwd=directory, env=env, capture_output=True, text=True,
                              timeout=budget * WALL_FACTOR, check=False)
    except subprocess.TimeoutExpired:
        return Result(obligation, TIMEOUT, f"no answer within {budget * WALL_FACTOR:g} s of wall clock",
                      time.perf_counter() - started)
    seconds = time.perf_counter() - started
    output, cpu = cpu_used(done.stdout + done.stderr)
    if done.returncode in CPU_LIMIT_SIGNALS:
        return Result(obligation, TIMEOUT, f"over its budget of {budget:g} CPU s", seconds)
    status, detail = classify(done.returncode, output)
    return Result(obligation, status, detail, seconds, cpu)


def prove(obligations: Sequence[Obligation], bounds: Bounds, directory: Path, *, jobs: int = 2,
          progress: Callable[[Result], None] | None = None,
          starting: Callable[[Obligation], None] | None = None) -> list[Result]:
    """Check every obligation, `jobs` subprocesses at a time; results in the obligations' order.

    `starting` hears of each obligation as its process starts, `progress` of each result as it comes.
    """

    def one(obligation: Obligation) -> Result:
        if starting is not None:
            starting(obligation)
        result = check(obligation, bounds, directory)
        if progress is not None:
            progress(result)
        return result

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        return list(pool.map(one, obligations))


def table(results: Sequence[Result]) -> str:
    """A Markdown table: obligation, status (with the counterexample or error), wall-clock and CPU seconds."""
    rows = ["| obligation | status | time (s) | CPU (s) |", "|---|---|---|---|"]
    for result in results:
        status = result.status if not result.detail else f"{result.status}: {result.detail}"
        cpu = "" if result.cpu_seconds is None else f"{result.cpu_seconds:.1f}"
        rows.append(f"| `{result.obligation.target}` | {status.replace('|', '/')} | {result.seconds:.1f} | {cpu} |")
    return "\n".join(rows)


PASSING = (NO_COUNTEREXAMPLE, CONFIRMED)
"""What passes: the search ran to its bound and found nothing. A timeout is a search that did not finish, so it
says nothing about the obligation, and an obligation that cannot be imported was never searched."""


def failed(results: Sequence[Result]) -> bool:
    """Anything but a search that ran to its bound and found nothing fails the run (PASSING)."""
    return any(result.status not in PASSING for result in results)


def budget(obligations: Sequence[Obligation], bounds: Bounds) -> float:
    """The CPU seconds a run of `obligations` may use at most."""
    return sum(bounds.budget(o.conditions) for o in obligations if o.unavailable is None)
