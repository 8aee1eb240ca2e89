"""`conform --seed`/`--shard I/N` and `sessionspec merge` (spec/10, "Shards"): the parts of a run, merged, are the run."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from sessionspec.cli import main
from support import valid_report

SERVE = [sys.executable, "-m", "sessionspec.cli", "serve", "--impl"]
THREE = "planted:stale-derived-cache+double-marker+provenance-unchecked"
RUN = ["--examples", "100", "--seed", "7"]
"""Two rounds of the machine (50 examples each), so each of two shards searches one."""


def conform(directory: Path, name: str, *extra: str) -> Path:
    report = directory / f"{name}.json"
    assert main(["conform", *RUN, *extra, "--json", str(report), "--traces", str(directory / "traces"),
                 "--", *SERVE, THREE]) == 1
    return report


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    directory = tmp_path_factory.mktemp("shards")
    return {"whole": conform(directory, "whole"), "1": conform(directory, "part-1", "--shard", "1/2"),
            "2": conform(directory, "part-2", "--shard", "2/2"), "dir": directory}


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
