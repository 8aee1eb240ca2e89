"""Each command loads only what it uses (issue 21): a run of `check`, `show`, `repair`, `serve`, `bench`,
`--help` or `--version` imports no Hypothesis, pytest or trio, not the reference model's contracts it does
not run, and no storage backend it does not open.

Each case runs the command in a fresh interpreter and reads `sys.modules` as it exits, so an import
added anywhere on the command's path (a module-level import in a module it loads, a facade that
imports eagerly) fails here. What each command costs in time is measured by `benchmarks/startup.py`.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from sessionspec import storage
from sessionspec.testing.builders import user_message

PROBE = """
import atexit, json, sys
atexit.register(lambda: print("\\nMODULES " + json.dumps(sorted(sys.modules)), file=sys.stderr))
from sessionspec.cli import main
sys.exit(main(sys.argv[1:]))
"""
ENGINE = {"hypothesis", "pytest", "trio", "icontract", "rich", "crosshair", "sessionspec.model",
          "sessionspec.testing.planted", "sessionspec.testing.machine", "sessionspec.conformance"}
"""The oracle's engine and the reference's contracts: no everyday command needs them."""
BACKENDS = {"sqlite3": {"sqlite"}, "zstandard": {"jsonl.zstd", "sqlite"}, "sessionspec.storage.sqlite": {"sqlite"},
            "sessionspec.storage.zstdlog": {"jsonl.zstd", "sqlite"}}
"""What each backend brings in, by the formats that need it (SQLite stores a large `data` as a zstd frame)."""


def loaded(*argv: str, stdin: bytes = b"") -> set[str]:
    done = subprocess.run([sys.executable, "-c", PROBE, *argv], input=stdin, capture_output=True, timeout=120)
    marker = done.stderr.rfind(b"\nMODULES ")
    assert marker >= 0, done.stderr.decode(errors="replace")[-2000:]
    return set(json.loads(done.stderr[marker + len(b"\nMODULES "):]))


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("startup")
    header = {"version": 0, "id": "s", "createdAt": 1}
    events = [{"type": "turn/start", "seq": 0, "time": 1, "data": {"turn": 1}},
              {"type": "user/message", "seq": 1, "time": 2, "data": user_message("u1", "hi"), "surfaceOp": "append"},
              {"type": "turn/end", "seq": 2, "time": 3, "data": {"turn": 1, "reason": {"kind": "completed"}}}]
    out = {}
    for fmt, name in (("jsonl", "log.jsonl"), ("jsonl.zstd", "log.jsonl.zstd"), ("sqlite", "log.sqlite")):
        out[fmt] = folder / name
        storage.save(out[fmt], header, events)
    return out


def unwanted(modules: set[str], fmt: str | None = None) -> list[str]:
    backends = {module for module, needed in BACKENDS.items() if fmt not in needed}
    return sorted(modules & (ENGINE | backends))


@pytest.mark.parametrize("command", ["check", "show", "repair"])
@pytest.mark.parametrize("fmt", ["jsonl", "jsonl.zstd", "sqlite"])
def test_a_log_tool_loads_only_the_backend_of_the_log_it_reads(logs: dict[str, Path], command: str, fmt: str) -> None:
    modules = loaded(command, str(logs[fmt]))
    assert not unwanted(modules, fmt)
    assert {module for module, needed in BACKENDS.items() if needed == {fmt}} <= modules  # the probe sees imports


def test_serve_loads_the_implementation_it_serves_and_no_other() -> None:
    modules = loaded("serve", "--impl", "live", stdin=b'{"op":"hello"}\n{"op":"create","id":"s","seed":null,"header":null}\n')
    assert not unwanted(modules) and "sessionspec.live" in modules
    assert not {"sessionspec.storage", "sessionspec.logcheck"} & modules


def test_bench_loads_the_store_it_times_and_no_oracle() -> None:
    assert not unwanted(loaded("bench", "--turns", "3", "--impl", "live"))


def test_spec_loads_the_text_and_nothing_of_the_reference() -> None:
    modules = loaded("spec", "01")
    assert not unwanted(modules) and "sessionspec.cli.spec" in modules
    assert not {"sessionspec.live", "sessionspec.storage", "sessionspec.wire", "orjson", "pydoc"} & modules


@pytest.mark.parametrize("argv", [["--help"], ["--version"], ["check", "--help"]])
def test_help_and_version_load_no_command_they_do_not_describe(argv: list[str]) -> None:
    modules = loaded(*argv)
    assert not unwanted(modules)
    assert ("sessionspec.cli.check" in modules) == (argv[0] == "check")
    if argv[0] != "check":  # the top level describes every command from one table, importing none of them
        assert not {"sessionspec.live", "sessionspec.storage", "sessionspec.wire", "orjson"} & modules


def test_an_unknown_option_of_a_command_is_said_by_that_command() -> None:
    done = subprocess.run([sys.executable, "-m", "sessionspec.cli", "check", "x.jsonl", "--bogus"], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 2
    assert "usage: sessionspec check" in done.stderr and "unrecognized arguments: --bogus" in done.stderr
