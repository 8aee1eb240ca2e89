"""`sessionspec spec`: the chapters listed and printed; how the commands' words read (counts, help text)."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

import pytest
from sessionspec.cli import main
from sessionspec.cli import spec as spec_command
from sessionspec.cli.words import HelpFormatter, plural
from sessionspec.resources import shipped

SPEC = Path(__file__).resolve().parents[1] / "spec"


def test_the_chapters_are_the_checkouts_in_an_editable_install() -> None:
    assert shipped("spec") == SPEC
    assert [path.name for path in spec_command.chapters()][:2] == ["01-json.md", "02-envelope.md"]


def test_the_list_names_every_chapter_with_its_title(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["spec"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == len(list(SPEC.glob("[0-9]*-*.md")))
    assert lines[3].split() == ["04", "append", "Append"]
    assert lines[6].startswith("07  persistence  Persistence and the load gate")


@pytest.mark.parametrize("name", ["04", "4", "append", "04-append", "04-append.md", "APPEND", "app"])
def test_a_chapter_is_named_by_number_name_prefix_or_file(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["spec", name]) == 0
    assert capsys.readouterr().out == (SPEC / "04-append.md").read_text(encoding="utf-8")


def test_the_index_and_an_unknown_or_ambiguous_chapter(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["spec", "index"]) == 0
    assert capsys.readouterr().out.startswith("# The sessionspec specification")
    for name in ("99", "nothing", "re"):  # "re" starts both "relational" and "repair"
        assert main(["spec", name]) == 2
        err = capsys.readouterr().err
        assert f"no chapter {name!r}" in err and "04  append" in err


def test_piped_it_is_plain_text_and_loads_no_pager() -> None:
    done = subprocess.run([sys.executable, "-c", "import sys; from sessionspec.cli import main; code = main(['spec', "
                           "'01']); assert 'pydoc' not in sys.modules; sys.exit(code)"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("# 01 — Lossless JSON") and "\x1b" not in done.stdout


def test_counts_agree_with_their_nouns() -> None:
    assert plural(1, "node") == "1 node" and plural(0, "node") == "0 nodes" and plural(2, "event") == "2 events"
    assert plural(1, "process") == "1 process" and plural(3, "process") == "3 processes"
    assert plural(2, "family") == "2 families" and plural(2, "legacy upgrade") == "2 legacy upgrades"


def test_no_command_prints_a_count_with_a_fixed_plural() -> None:
    """The paper cut of "1 nodes": an f-string that puts a count before a plural noun, in the commands we own."""
    owned = Path(spec_command.__file__).parent
    pattern = re.compile(r"\{[^{}]*\} (nodes|events|closers|obligations|vectors|states|transitions|requests|findings)\b[^/]")
    left = [f"{path.name}:{number}: {line.strip()}" for path in sorted(owned.glob("*.py"))
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if pattern.search(line)]
    assert not left, "\n".join(left)


def test_help_prose_is_wrapped_and_examples_kept() -> None:
    parser = argparse.ArgumentParser(prog="x", description="word " * 60, epilog="examples:\n  x --long " + "y " * 50,
                                     formatter_class=lambda prog: HelpFormatter(prog, width=80))
    text = parser.format_help()
    prose = [line for line in text.splitlines() if line.startswith("word")]
    assert len(prose) > 2 and all(len(line) <= 80 for line in prose)
    assert "  x --long " + "y " * 49 + "y" in text  # the example is one line, as written


def test_show_help_fits_the_terminal(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    with pytest.raises(SystemExit):
        main(["show", "--help"])
    out = capsys.readouterr().out
    before_examples = out.split("examples:")[0]
    assert max(len(line) for line in before_examples.splitlines()) <= 100


def test_replay_without_arguments_asks_for_the_trace_only(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit:
        main(["replay"])
    assert exit.value.code == 2
    err = capsys.readouterr().err
    assert "required: TRACE.json" in err and "TESTEE" not in err.splitlines()[-1]
