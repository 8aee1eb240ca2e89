"""Running the CrossHair obligations in `proofs/` and tabulating what the solver found.

An obligation is a function in `proofs/obligations_*.py` whose icontract `ensure` states one
property (see proofs/README.md). Each runs in its own `crosshair check --analysis_kind=icontract`
subprocess, so one that hangs or crashes costs its own row and not the run. CrossHair is a
bounded search, not a proof: "no counterexample within the bound" means exactly that, and only
"confirmed over all paths" means the solver exhausted every path.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
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


@dataclass(frozen=True, slots=True)
class Bounds:
    """CrossHair's per-condition and per-path timeouts, and a wall-clock limit per subprocess."""

    per_condition_timeout: float
    per_path_timeout: float
    process_timeout: float

    def describe(self) -> str:
        return (f"--per_condition_timeout={self.per_condition_timeout:g} --per_path_timeout={self.per_path_timeout:g} "
                f"(process limit {self.process_timeout:g} s)")


QUICK = Bounds(per_condition_timeout=4, per_path_timeout=1, process_timeout=60)
FULL = Bounds(per_condition_timeout=120, per_path_timeout=5, process_timeout=600)


@dataclass(frozen=True, slots=True)
class Obligation:
    module: str
    name: str
    summary: str
    unavailable: str | None = None

    @property
    def target(self) -> str:
        return f"{self.module}.{self.name}"


@dataclass(frozen=True, slots=True)
class Result:
    obligation: Obligation
    status: str
    detail: str
    seconds: float

    def to_json(self) -> dict[str, object]:
        return {"obligation": self.obligation.target, "status": self.status, "detail": self.detail,
                "seconds": round(self.seconds, 1)}


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
            found.append(Obligation(name, function.__name__, doc.split("\n\n")[0].replace("\n", " ")))
    return found


def command(obligation: Obligation, bounds: Bounds) -> list[str]:
    return [sys.executable, "-m", "crosshair", "check", "--analysis_kind=icontract",
            f"--per_condition_timeout={bounds.per_condition_timeout:g}",
            f"--per_path_timeout={bounds.per_path_timeout:g}", "--report_all", obligation.target]


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
    if obligation.unavailable is not None:
        return Result(obligation, NOT_AVAILABLE, obligation.unavailable, 0.0)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(directory), env.get("PYTHONPATH", "")]))
    # The model's own contracts off: CrossHair treats a nested contract that fails on a symbolic
    # value as a path to ignore, and a run in which every path is ignored reports "confirmed".
    env["SESSIONSPEC_CONTRACTS"] = "0"
    started = time.perf_counter()
    try:
        done = subprocess.run(command(obligation, bounds), cwd=directory, env=env, capture_output=True, text=True,
                              timeout=bounds.process_timeout, check=False)
    except subprocess.TimeoutExpired:
        return Result(obligation, TIMEOUT, f"no answer within {bounds.process_timeout:g} s", time.perf_counter() - started)
    status, detail = classify(done.returncode, done.stdout + done.stderr)
    return Result(obligation, status, detail, time.perf_counter() - started)


def prove(obligations: Sequence[Obligation], bounds: Bounds, directory: Path, *, jobs: int = 2,
          progress: Callable[[Result], None] | None = None) -> list[Result]:
    """Check every obligation, `jobs` subprocesses at a time; results in the obligations' order."""

    def one(obligation: Obligation) -> Result:
        result = check(obligation, bounds, directory)
        if progress is not None:
            progress(result)
        return result

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        return list(pool.map(one, obligations))


def table(results: Sequence[Result]) -> str:
    """A Markdown table: obligation, status (with the counterexample or error), seconds."""
    rows = ["| obligation | status | time (s) |", "|---|---|---|"]
    for result in results:
        status = result.status if not result.detail else f"{result.status}: {result.detail}"
        rows.append(f"| `{result.obligation.target}` | {status.replace('|', '/')} | {result.seconds:.1f} |")
    return "\n".join(rows)


def failed(results: Sequence[Result]) -> bool:
    """A counterexample or an error fails the run; a timeout or "not available" does not."""
    return any(result.status in (COUNTEREXAMPLE, ERROR) for result in results)
