"""Flaky findings (`conform --verify N`, conformance/verify.py): a family that does not show on every replay against a
fresh testee is flaky (its own count, its trace kept), never a deviation nor a pass; a steady one stays a deviation."""

from __future__ import annotations

import sys
from pathlib import Path

from sessionspec.cli import main
from support import valid_report

PY = sys.executable
PLANTED = "planted:provenance-unchecked"
ALTERNATING = f"""
import fcntl, sys
from sessionspec.cli import main
with open(sys.argv[1], "a+") as counter:
    fcntl.flock(counter, fcntl.LOCK_EX)
    counter.seek(0)
    started = int(counter.read() or 0) + 1
    counter.seek(0)
    counter.truncate()
    counter.write(str(started))
sys.exit(main(["serve", "--impl", "{PLANTED}" if started % 2 else "live"]))
"""
"""The planted bug in every other process it is started as, the reference's store in the others: a testee whose
fault comes and goes from one run to the next, deterministically (by the count of its starts, kept in a file)."""


def run(tmp_path: Path, *testee: str) -> tuple[int, dict[str, object]]:
    report = tmp_path / "report.json"
    # Without the storage phase: neither testee's fault is met there, and its 141 cases would add 7 s a run.
    code = main(["conform", "--examples", "20", "--verify", "4", "--skip", "SESSION-CONFORMANCE-STORAGE.*", "--json",
                 str(report), "--traces", str(tmp_path / "traces"), "--", *testee])
    return code, valid_report(report)


def test_a_fault_that_comes_and_goes_is_flaky_not_a_deviation(tmp_path: Path) -> None:
    script = tmp_path / "alternating.py"
    script.write_text(ALTERNATING)
    code, data = run(tmp_path, PY, str(script), str(tmp_path / "starts"))
    flaky = data["flaky"]
    assert isinstance(flaky, list) and flaky, "the planted fault showed in the run, and not in every replay"
    assert all(0 < f["reproduced"] < f["replays"] == 4 for f in flaky)
    assert all(Path(f["divergence"]["replay"]).is_file() for f in flaky), "a flaky family keeps its trace"
    summary = data["summary"]
    assert isinstance(summary, dict) and summary["flaky"] >= len(flaky) and summary["unexpected"] == 0
    assert not {f["family"] for f in flaky} & {d["family"] for d in data["divergences"]}  # type: ignore[attr-defined]
    assert code == 0


def test_a_steady_fault_stays_a_deviation(tmp_path: Path) -> None:
    code, data = run(tmp_path, PY, "-m", "sessionspec.cli", "serve", "--impl", PLANTED)
    assert code == 1
    assert data["flaky"] == [] and data["summary"]["unexpected"] > 0  # type: ignore[index]
