"""The composite action (action.yml) and its script (.github/sessionspec-action.sh), run as a CI would run them.

The script is what the action runs and what any other CI runs: here against `sessionspec serve
--impl live` (green), then against a planted bug with and without a baseline (only what is new
fails), and every input of the action is one variable of the script.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from support import valid_report

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / ".github" / "sessionspec-action.sh"
SERVE = f"{sys.executable} -m sessionspec.cli serve --impl"


def action(tmp_path: Path, testee: str, **inputs: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SESSIONSPEC_PYTHON": sys.executable, "SESSIONSPEC_TESTEE": testee,
           "SESSIONSPEC_ARGS": "--examples 3", "GITHUB_STEP_SUMMARY": str(tmp_path / "step.md"),
           "SESSIONSPEC_TRACE_DIR": str(tmp_path), **{f"SESSIONSPEC_{k.upper()}": v for k, v in inputs.items()}}
    env.pop("SESSIONSPEC_INSTALL", None)
    return subprocess.run(["bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=600, cwd=tmp_path)


def test_the_action_script_is_green_against_our_live_store(tmp_path: Path) -> None:
    (tmp_path / "none.txt").write_text("# nothing known\n")
    done = action(tmp_path, f"{SERVE} live", json=str(tmp_path / "r.json"), junit=str(tmp_path / "r.xml"),
                  markdown=str(tmp_path / "r.md"), failures=str(tmp_path / "none.txt"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "smoke sessionspec-live: speaks SCP v0" in done.stdout
    assert valid_report(tmp_path / "r.json")["header"]["options"]["examples"] == 3
    assert (tmp_path / "r.xml").is_file() and (tmp_path / "r.md").read_text() == (tmp_path / "step.md").read_text()


@pytest.mark.nightly  # three whole runs (~25 s on 2 busy cores); conform --baseline is tested by test_10_baseline.py
def test_with_a_baseline_only_what_is_new_fails(tmp_path: Path) -> None:
    planted = f"{SERVE} planted:double-marker"
    first = action(tmp_path, planted, json=str(tmp_path / "main.json"), smoke="false")
    assert first.returncode == 1, first.stderr[-2000:]
    again = action(tmp_path, planted, baseline=str(tmp_path / "main.json"), json=str(tmp_path / "pr.json"))
    assert again.returncode == 0, again.stdout[-2000:]
    missing = action(tmp_path, planted, baseline=str(tmp_path / "no-such.json"), smoke="false")
    assert missing.returncode == 1 and "no baseline" in missing.stderr


def test_an_adapter_that_fails_the_smoke_check_stops_the_step(tmp_path: Path) -> None:
    done = action(tmp_path, f"{sys.executable} -c \"print('hello')\"", json=str(tmp_path / "r.json"))
    assert done.returncode == 1 and "SESSION-CONFORMANCE-PROTOCOL.16" in done.stdout
    assert not (tmp_path / "r.json").exists(), "conform does not run after a smoke finding"
    assert action(tmp_path, "exit 0").returncode == 2
    assert action(tmp_path, "").returncode == 2


def test_every_input_of_the_action_is_a_variable_of_its_script() -> None:
    spec = yaml.safe_load((ROOT / "action.yml").read_text())
    steps = spec["runs"]["steps"]
    env = next(step["env"] for step in steps if "env" in step)
    script = SCRIPT.read_text()
    for name in spec["inputs"]:
        if name == "python-version":
            continue
        variable = f"SESSIONSPEC_{name.upper()}"
        assert env[variable] == f"${{{{ inputs.{name} }}}}", name
        assert re.search(rf"\${{{variable}[:}}]", script), f"{variable} is not read by the script"
    assert spec["runs"]["using"] == "composite" and "sessionspec-action.sh" in steps[-1]["run"]


@pytest.mark.parametrize("word", ["pipx run --spec", "pip install"])
def test_the_readme_gives_the_one_liner_for_any_ci(word: str) -> None:
    assert word in (ROOT / "README.md").read_text()
