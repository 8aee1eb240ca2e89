"""Branch coverage of the store under the oracle, one command: how much of `live/` do the generators reach?

    python mutation/reach.py                          # the default conform run (vectors + machine) against serve --impl live
    python mutation/reach.py --stage vectors          # the vectors alone (conform --examples 0)
    python mutation/reach.py --stage inprocess        # conform, then the in-process machine and the Python API tests
    python mutation/reach.py --json out.json          # every file's figures and missing branches, for a script

A mutant of a branch no request reaches survives whatever the oracle compares, so the lane's
score is only as good as the generators' reach. This runs the oracle with the testee under
coverage.py (`coverage run --branch`, parallel mode: conform restarts a testee that crashed or hung,
and every testee process writes its own data file), combines the data and lists, for each module
of `live/`, the branches no request took. Each missing branch is matched against
`mutation/unreached.toml` (why no input can take it, or which generator is still owed); one that
is not listed there is printed UNEXPLAINED and makes the exit code 1, so the list stays complete.

The in-process stage adds what conform cannot send (the Python API: `append` keywords, frozen
inputs, requests that are not mappings): the lane's machine stage, `pytest tests/test_machine.py -k
LiveAgainstModel`, under coverage, combined with conform's data. The figures of the run
are recorded in mutation/REPORT.md beside the mutation scores.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
LIVE = REPO / "reference" / "sessionspec" / "live"
UNREACHED = Path(__file__).resolve().parent / "unreached.toml"
PY = sys.executable
INPROCESS = [PY, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "tests/test_machine.py", "-k", "LiveAgainstModel"]
"""What the in-process stage runs: the lane's machine stage (the ci profile: derandomized), whose rules include the
Python API's (`testing.machine_api`)."""
STAGES = ("vectors", "conform", "inprocess")


def rcfile(directory: Path) -> Path:
    """A coverage configuration: branches, one data file per process, `live/` only."""
    path = directory / "coveragerc"
    path.write_text("\n".join([
        "[run]", "branch = True", "parallel = True", f"data_file = {directory / '.coverage'}", f"source = {LIVE}",
        "[report]", "show_missing = True", "",
    ]), encoding="utf-8")
    return path


def conform_command(rc: Path, stage: str) -> list[str]:
    testee = [PY, "-m", "coverage", "run", f"--rcfile={rc}", "-m", "sessionspec", "serve", "--impl", "live"]
    budget = ["--examples", "0"] if stage == "vectors" else []
    return [PY, "-m", "sessionspec", "conform", *budget, "--", *testee]


def run(command: list[str], env: dict[str, str]) -> tuple[int, float]:
    started = time.monotonic()
    print("$ " + " ".join(command), flush=True)
    code = subprocess.run(command, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT).returncode
    return code, time.monotonic() - started


def measure(directory: Path, stage: str) -> dict[str, Any]:
    """Run the stage(s) with the testee (and the in-process tests) under coverage; the combined JSON report."""
    rc = rcfile(directory)
    env = {**os.environ, "HYPOTHESIS_PROFILE": "ci", "COVERAGE_RCFILE": str(rc)}
    runs = []
    code, seconds = run(conform_command(rc, stage), env)
    runs.append({"command": "conform" + (" --examples 0" if stage == "vectors" else ""), "exit": code,
                 "seconds": round(seconds, 1)})
    if stage == "inprocess":
        code, seconds = run([PY, "-m", "coverage", "run", f"--rcfile={rc}", *INPROCESS[1:]], env)
        runs.append({"command": "pytest (in-process machine, Python API machine)", "exit": code,
                     "seconds": round(seconds, 1)})
    subprocess.run([PY, "-m", "coverage", "combine", f"--rcfile={rc}", "-q"], cwd=REPO, env=env, check=True)
    out = directory / "coverage.json"
    subprocess.run([PY, "-m", "coverage", "json", f"--rcfile={rc}", "-q", "-o", str(out)], cwd=REPO, env=env, check=True)
    report: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    report["runs"] = runs
    return report


def load_reasons(path: Path = UNREACHED) -> list[dict[str, str]]:
    """Why a branch is not reached: `file`, `line` (the source line, stripped), `to` (the target line, stripped,
    or "exit"), `reason`; matched by text, not number, so an edit elsewhere in the file keeps the entry."""
    with path.open("rb") as handle:
        entries: list[dict[str, str]] = tomllib.load(handle).get("unreached", [])
    return entries


def _text(lines: list[str], number: int) -> str:
    return "exit" if number <= 0 else lines[number - 1].strip()


def _reason(reasons: list[dict[str, str]], short: str, line: str, to: str | None) -> str | None:
    return next((r["reason"] for r in reasons if r["file"] == short and r["line"] == line and r.get("to") == to), None)


def missing(report: dict[str, Any], reasons: list[dict[str, str]]) -> list[dict[str, Any]]:
    """Every branch not taken, and the first line of every run of lines not run that no such branch leads to (a
    method no request calls), with its source and the reason `unreached.toml` gives (None: unexplained)."""
    found = []
    for name, figures in sorted(report["files"].items()):
        lines = Path(name).read_text(encoding="utf-8").splitlines()
        short = Path(name).name
        targets = set()
        for source, target in figures.get("missing_branches", []):
            line, to = _text(lines, source), _text(lines, target)
            targets.add(target)
            found.append({"file": short, "from": source, "to": target, "line": line, "target": to,
                          "reason": _reason(reasons, short, line, to)})
        for first in _runs(figures):
            if first not in targets:
                line = _text(lines, first)
                found.append({"file": short, "from": first, "to": None, "line": line, "target": None,
                              "reason": _reason(reasons, short, line, None)})
    return found


def _runs(figures: dict[str, Any]) -> list[int]:
    """The first line of each run of lines not run with no line run between them."""
    executed, firsts, previous = set(figures.get("executed_lines", [])), [], None
    for number in sorted(figures.get("missing_lines", [])):
        if previous is None or any(line in executed for line in range(previous + 1, number)):
            firsts.append(number)
        previous = number
    return firsts


def summary(report: dict[str, Any]) -> list[tuple[str, int, int, int, int]]:
    """(file, statements, missing statements, branches, missing branches) per file, and the total last."""
    rows = []
    for name, figures in sorted(report["files"].items()):
        s = figures["summary"]
        rows.append((Path(name).name, s["num_statements"], s["missing_lines"], s["num_branches"], s["missing_branches"]))
    t = report["totals"]
    rows.append(("total", t["num_statements"], t["missing_lines"], t["num_branches"], t["missing_branches"]))
    return rows


def render(report: dict[str, Any], gaps: list[dict[str, Any]], stage: str) -> str:
    out = [f"branch coverage of live/ under: {stage}"]
    out += [f"  {r['command']}: exit {r['exit']}, {r['seconds']} s" for r in report["runs"]]
    out.append(f"  {'file':<14} {'lines':>11} {'branches':>12}")
    for name, statements, lost, branches, missed in summary(report):
        out.append(f"  {name:<14} {statements - lost:>5}/{statements:<5} {branches - missed:>5}/{branches:<5}"
                   f" {100 * (branches - missed) / branches if branches else 100:5.1f}%")
    for gap in gaps:
        why = gap["reason"] or "UNEXPLAINED"
        where = f"{gap['file']}:{gap['from']}" + (f"->{gap['to']}  {gap['line']}  ->  {gap['target']}" if gap["to"] is not None
                                                  else f" (not run)  {gap['line']}")
        out.append(f"  {where}\n      {why}")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stage", choices=STAGES, default="conform",
                        help="vectors: conform --examples 0; conform: the default conform run (default); "
                             "inprocess: conform, then the in-process machines")
    parser.add_argument("--json", type=Path, metavar="OUT.json", help="write the figures and the missing branches as JSON")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="sessionspec-coverage-") as scratch:
        report = measure(Path(scratch), args.stage)
    gaps = missing(report, load_reasons())
    print(render(report, gaps, args.stage))
    if args.json is not None:
        rows = [dict(zip(("file", "statements", "missing_lines", "branches", "missing_branches"), row, strict=True))
                for row in summary(report)]
        args.json.write_text(json.dumps({"stage": args.stage, "runs": report["runs"], "files": rows, "missing": gaps},
                                        indent=1) + "\n", encoding="utf-8")
    failed = [r for r in report["runs"] if r["exit"] != 0]
    return 1 if failed or any(gap["reason"] is None for gap in gaps) else 0


if __name__ == "__main__":
    sys.exit(main())
