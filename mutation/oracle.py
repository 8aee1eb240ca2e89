"""The lane's test command: the oracle, stage by stage, against the tree it lives in.

cosmic-ray runs this once per mutant (with the mutant written into the tree's source) and reads
only its exit code: 0 survived, anything else killed. Each stage runs in its own process group
under its own timeout; a stage that runs out of time is killed with its whole group (the testee
included) and the mutant counts as killed by that stage's timeout, never hangs the lane. The last
line says which stage killed it, for the report:

    oracle: killed by conform (exit 1, 14.2 s)
    oracle: killed by machine (timeout after 300 s)
    oracle: survived (vectors 6.1 s, conform 17.0 s, machine 40.3 s)

Targets and their stages (`--lane conform` stops after conform):

- live:    vectors (`conform --examples 0`), conform (the default `conform` run), machine
           (`pytest tests/test_machine.py -k LiveAgainstModel`, ci profile), fastforms
           (`tests/test_fastpaths.py`, each fast form held to its reference, and
           `tests/test_logcheck_checker.py`: `sessionspec check` calls fast forms in ways
           `serve --impl live` never does, `replace_holds` with a `resolve`, say);
- text:    (live/fasttext.py, the lossless line reader of the testee and of every storage backend) vectors,
           conform, storage (the lossless text reader's tests and the JSONL reader's), fastforms;
- storage: (storage/ and live/fastrecord.py, the stored record's fast forms) conform (`conform --examples 0`: the
           SCP vectors, then the storage phase, which drives the testee's readers and writers with the storage
           vectors, the save check and the crash trial), bounds (`conform --profile ci`, the cases the default
           run skips as too large and CI runs: the generated logs at the bounds and the bound sessions' saves, a
           record of 64 MiB and one a byte past), storage (the lossless text reader and the chapter-07 tests),
           check (`tests/test_cli_check.py`: `sessionspec check`).

A target's stages run in the order listed and the first to fail kills, so the report's figures
for live are cumulative: conform alone, conform + machine, and all four. fastforms runs last, so
it counts only the mutants neither conform nor the machine kills.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

TREE = Path(__file__).resolve().parents[1]
PY = sys.executable
SERVE = [PY, "-m", "sessionspec", "serve", "--impl", "live"]
PYTEST = [PY, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-n", "0", "-p", "mutation_profile", "--hypothesis-profile=mutation"]
"""pytest on one core (the lane runs mutants side by side), stopping at the first failure, under the ci profile
without shrinking (mutation_profile.py)."""

STAGES: dict[str, dict[str, list[str]]] = {
    "live": {
        "vectors": [PY, "-m", "sessionspec", "conform", "--examples", "0", "--", *SERVE],
        "conform": [PY, "-m", "sessionspec", "conform", "--", *SERVE],
        "machine": [*PYTEST, "tests/test_machine.py", "-k", "LiveAgainstModel"],
        "fastforms": [*PYTEST, "tests/test_fastpaths.py", "tests/test_logcheck_checker.py"],
    },
    "text": {
        "vectors": [PY, "-m", "sessionspec", "conform", "--examples", "0", "--", *SERVE],
        "conform": [PY, "-m", "sessionspec", "conform", "--", *SERVE],
        "storage": [*PYTEST, "tests/test_01_lossless_text.py", "tests/test_07_storage.py", "tests/test_07_bounds.py"],
        "fastforms": [*PYTEST, "tests/test_fastpaths.py", "tests/test_logcheck_checker.py"],
    },
    "storage": {
        "conform": [PY, "-m", "sessionspec", "conform", "--examples", "0", "--", *SERVE],
        "bounds": [PY, "-m", "sessionspec", "conform", "--profile", "ci", "--run",
                   "SESSION-STORAGE-RECORD.1-*", "--run", "SESSION-STORAGE-RECORD.3-*", "--run", "SESSION-CHUNK-ROWS.8-*",
                   "--run", "SESSION-ZSTD-FRAMES.5-*",
                   "--run", "save:record-*", "--", *SERVE],
        "storage": [*PYTEST, "tests/test_01_lossless_text.py", "tests/test_07_chunkrows.py", "tests/test_07_storage.py",
                    "tests/test_07_faults.py", "tests/test_07_crash.py", "tests/test_07_bounds.py",
                    "tests/test_07_sqlite_faults.py", "tests/test_07_budget.py", "tests/test_07_files.py",
                    "tests/test_07_sqlite_files.py", "tests/test_07_large.py", "tests/test_07_refusals.py",
                    "tests/test_07_revision.py", "tests/test_07_deep.py", "tests/test_07_edges.py",
                    "tests/test_07_exact_bounds.py", "tests/test_07_storedlog.py", "tests/test_07_symmetry.py",
                    "tests/test_07_teeth.py"],
        "check": [*PYTEST, "tests/test_cli_check.py"],
    },
}
CONFORM_STAGES = ("vectors", "conform", "bounds")
"""The stages that are `sessionspec conform`: a kill by any is a kill by conform alone."""
TAIL = 40


def stages(target: str, lane: str) -> list[str]:
    names = list(STAGES[target])
    return [name for name in names if name in CONFORM_STAGES] if lane == "conform" else names


def environment(traces: Path | None) -> dict[str, str]:
    env = dict(os.environ)
    env.update(PYTHONPATH=os.pathsep.join([str(TREE / "reference"), str(TREE / "mutation")]), PYTHONDONTWRITEBYTECODE="1",
               HYPOTHESIS_PROFILE="ci")
    if traces is not None:
        env["SESSIONSPEC_TRACE_DIR"] = str(traces)
    return env


def run_stage(command: list[str], timeout: float | None, env: dict[str, str]) -> tuple[int | None, str, float]:
    """(exit code, or None on timeout; the output's tail; seconds). The whole process group goes on timeout."""
    started = time.monotonic()
    process = subprocess.Popen(command, cwd=TREE, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        output, _ = process.communicate(timeout=timeout)
        code: int | None = process.returncode
    except subprocess.TimeoutExpired:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except OSError:
            process.kill()
        output, _ = process.communicate()
        code = None
    finally:
        if process.poll() is None:
            process.kill()
    lines = output.decode("utf-8", "replace").splitlines()
    return code, "\n".join(lines[-TAIL:]), time.monotonic() - started


def parse_timeouts(text: str) -> dict[str, float]:
    timeouts: dict[str, float] = {}
    for part in filter(None, text.split(",")):
        name, _, seconds = part.partition("=")
        timeouts[name] = float(seconds)
    return timeouts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("target", choices=sorted(STAGES))
    parser.add_argument("--lane", choices=("conform", "both"), default="both", help="live: conform alone, or every stage")
    parser.add_argument("--timeouts", default="", help="STAGE=SECONDS,... (default: none)")
    parser.add_argument("--traces", type=Path, help="where conform and the machine write divergence traces")
    args = parser.parse_args(argv)
    timeouts = parse_timeouts(args.timeouts)
    env = environment(args.traces)
    took: list[str] = []
    for name in stages(args.target, args.lane):
        code, tail, seconds = run_stage(STAGES[args.target][name], timeouts.get(name), env)
        print(f"--- stage {name}: " + ("timeout" if code is None else f"exit {code}") + f" in {seconds:.1f} s")
        if code != 0:
            print(tail)
            why = f"timeout after {timeouts.get(name):.0f} s" if code is None else f"exit {code}, {seconds:.1f} s"
            print(f"oracle: killed by {name} ({why})")
            return 1
        took.append(f"{name} {seconds:.1f} s")
    print(f"oracle: survived ({', '.join(took)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
