"""`conform --seed`/`--shard I/N` and `sessionspec merge` (spec/10, "Shards"): the parts of a run, merged, are the run."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from sessionspec.cli import jobs, main
from support import valid_report

SERVE = [sys.executable, "-m", "sessionspec.cli", "serve", "--impl"]
THREE = "planted:stale-derived-cache+double-marker+provenance-unchecked"
RUN = ["--examples", "100", "--seed", "7", "--skip", "SESSION-STORAGE-RECORD.3-*"]
"""Two rounds of the machine (50 examples each), so each of two shards searches one; the storage phase but the
budget's vectors (they decode 288 MiB, and split among shards as every other storage vector does)."""


def conform(directory: Path, name: str, *extra: str) -> Path:
    report = directory / f"{name}.json"
    assert main(["conform", *RUN, *extra, "--json", str(report), "--traces", str(directory / "traces"),
                 "--", *SERVE, THREE]) == 1
    return report


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The whole run, and `--jobs 2` with the two parts its shards wrote (`conform --shard I/2 --seed 7 --json PART`).

    The parts are those two shards' own reports, so the test of `merge` takes them rather than running each shard a
    second time (two more runs, half a minute): `jobs` would remove its parts' directory once they are merged, so here
    it makes the directory in this one and keeps it.
    """
    directory = tmp_path_factory.mktemp("shards")
    kept = directory / "jobs-parts"
    kept.mkdir()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(jobs, "tempfile", SimpleNamespace(mkdtemp=lambda prefix: str(kept)))
        patch.setattr(jobs, "shutil", SimpleNamespace(rmtree=lambda path, ignore_errors: None))
        merged = conform(directory, "jobs", "--jobs", "2")
    return {"whole": conform(directory, "whole"), "1": kept / "part-1.json", "2": kept / "part-2.json",
            "jobs": merged, "dir": directory}


def comparable(report: dict[str, Any]) -> dict[str, Any]:
    """What a run found and how it counts it: not its timings, traces' paths or how it was split."""
    return {"summary": report["summary"], "vectors": report["vectors"], "levels": report["levels"],
            "machine": report["machine"],
            "families": sorted((f["family"], f["level"], tuple(f["vectors"]), f["machine"]) for f in report["families"]),
            "cases": sorted((c["suite"], c["name"], c["status"]) for c in report["cases"]),
            "divergences": sorted((d["source"], d["id"], d["family"]) for d in report["divergences"]),
            "seed": report["header"]["seed"]}


def test_merged_shards_equal_the_unsharded_run_with_the_same_seed(runs: dict[str, Path]) -> None:
    merged = runs["dir"] / "merged.json"
    assert main(["merge", str(runs["1"]), str(runs["2"]), "--json", str(merged), "--junit",
                 str(runs["dir"] / "merged.xml")]) == 1
    whole, joined = valid_report(runs["whole"]), valid_report(merged)
    parts = [valid_report(runs["1"]), valid_report(runs["2"])]
    assert [p["vectors"]["total"] - p["vectors"]["storage"] for p in parts] == [135, 135], "vectors split by index"
    ran = [{c["name"] for c in p["cases"] if c["suite"] == "vectors"} for p in parts]
    whole_ran = {c["name"] for c in whole["cases"] if c["suite"] == "vectors"}
    assert not ran[0] & ran[1] and ran[0] | ran[1] == whole_ran, "each vector and storage case in one shard"
    assert all(p["vectors"]["storage"] > 0 for p in parts) and joined["vectors"]["storage"] == whole["vectors"]["storage"]
    crash = [any(name.startswith("crash:") for name in names) for names in ran]
    assert sorted(crash) == [False, True], "the crash trial runs in one shard"
    assert all(p["header"]["options"]["shard"][1] == 2 for p in parts)
    assert comparable(joined) == comparable(whole)
    assert joined["header"]["seed"] == 7 and joined["header"]["parts"] == [str(runs["1"]), str(runs["2"])]


def test_jobs_runs_the_shards_at_once_and_finds_what_one_job_finds(runs: dict[str, Path]) -> None:
    """`--jobs 2`: two testees, one report, the same families and numbers as `--jobs 1` with the same seed."""
    jobs, whole = valid_report(runs["jobs"]), valid_report(runs["whole"])
    assert comparable(jobs) == comparable(whole)
    assert jobs["header"]["parts"] == [str(runs["1"]), str(runs["2"])] and jobs["footer"]["complete"]


@pytest.mark.parametrize("refused", [["--fix", "--failures", "known.txt"], ["--shard", "1/2"], ["--jobs", "0"],
                                     ["--baseline", "old.json"]])
def test_jobs_refuses_what_one_whole_run_must_do(refused: list[str], tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    old = tmp_path / "old.json"
    old.write_text("{}")
    words = [word.replace("old.json", str(old)).replace("known.txt", str(tmp_path / "known.txt")) for word in refused]
    jobs = [] if "--jobs" in words else ["--jobs", "2"]
    code = main(["conform", *jobs, *words, "--", *SERVE, "live"])
    assert code == 2 and "--jobs" in capsys.readouterr().err


def test_a_signal_to_jobs_reaches_every_shard_and_keeps_the_merged_report(tmp_path: Path) -> None:
    """SIGTERM to `conform --jobs 2`: each shard writes its part, the parts are merged, exit 143."""
    report = tmp_path / "stopped.json"
    process = subprocess.Popen([sys.executable, "-m", "sessionspec", "conform", "--jobs", "2", "--examples", "400",
                                "--json", str(report), "--", *SERVE, "live"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
    time.sleep(8)
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 128 + signal.SIGTERM, err.decode()[-2000:]
    merged = valid_report(report)
    assert not merged["footer"]["complete"] and len(merged["header"]["parts"]) == 2


def test_a_seed_is_printed_and_changes_the_search(runs: dict[str, Path]) -> None:
    assert valid_report(runs["whole"])["header"]["seed"] == 7
    assert valid_report(runs["whole"])["header"]["options"]["seed"] == 7


def test_merge_refuses_parts_that_are_not_one_run(runs: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["merge", str(runs["1"])]) == 2
    assert "give each of 1..N exactly once" in capsys.readouterr().err
    assert main(["merge", str(runs["1"]), str(runs["1"])]) == 2
    other = json.loads(runs["2"].read_text())
    other["header"]["seed"] = 8
    changed = runs["dir"] / "other-seed.json"
    changed.write_text(json.dumps(other))
    assert main(["merge", str(runs["1"]), str(changed)]) == 2
    assert "not a part of the same run" in capsys.readouterr().err
    assert main(["merge", str(runs["dir"] / "missing.json")]) == 2


@pytest.mark.parametrize("shard", ["0/2", "3/2", "x", "1/0"])
def test_a_shard_that_is_not_i_of_n_is_refused(shard: str) -> None:
    with pytest.raises(SystemExit) as exit:
        main(["conform", "--shard", shard, "--", *SERVE, "live"])
    assert exit.value.code == 2
