"""The README as a user reads it: its first two lines are the two commands, its Python example runs as written."""

from __future__ import annotations

import re
import runpy
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)


def test_the_first_lines_are_the_install_and_test_commands() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    fence = lines.index("```sh")
    assert lines[fence + 1].startswith("python3 -m venv .venv && . .venv/bin/activate && pip install -e '.[test]' && sessionspec demo")
    assert lines[fence + 2] == "python -m pytest"


def test_the_python_example_runs_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    [example] = python_blocks()
    monkeypatch.chdir(tmp_path)
    script = tmp_path / "example.py"
    script.write_text(example, encoding="utf-8")
    runpy.run_path(str(script), run_name="__main__")
    assert (tmp_path / "demo.jsonl").is_file()
