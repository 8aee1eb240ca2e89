"""Every reproduction reproduces (issue 35.3): each family a run reports has a trace that, replayed against the same
testee, shows the same family, because the trace holds the session its expected answers came from."""

from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from sessionspec.cli import main
from sessionspec.conformance import runner
from sessionspec.wire.trace import read_trace

PY = sys.executable
THREE = "planted:stale-derived-cache+double-marker+provenance-unchecked"
"""Three independent deviations from required rules in one store (as tests/test_10_runner.py plants them)."""

# A starter as a newcomer writes one (tests/test_10_capabilities.py's STARTER): hello, create without seed or header,
# log-only appends and a log-only snapshot; everything else `unsupported`; it lists no ops, and its json.loads dies on
# a line nested past Python's recursion limit. On top, a seq bug: from the third event on, seqs skip one.
STARTER = r'''
import json, sys
session = None
def answer(value):
    print(json.dumps(value), flush=True)
def unsupported(what):
    answer({"ok": False, "error": {"kind": "unsupported", "message": what, "rule": None}})
for line in sys.stdin:
    try:
        request = json.loads(line)
    except ValueError:
        answer({"ok": False, "error": {"kind": "json", "message": "not json", "rule": None}})
        continue
    op = request.get("op") if isinstance(request, dict) else None
    if op == "hello":
        answer({"ok": True, "implementation": "starter", "version": "0", "profile": "scp-0"})
    elif op == "create":
        session = None
        if set(request) != {"op", "id", "seed", "header"} or request["seed"] is not None or request["header"] is not None:
            unsupported("seeds and headers are not supported yet")
            continue
        session = []
        answer({"ok": True, "firstLiveSeq": 0, "seq": 0})
    elif op == "append" and session is not None and request.get("type") in ("turn/start", "turn/end") \
            and set(request) == {"op", "type", "data"}:
        event = {"type": request["type"], "seq": len(session) + (len(session) >= 2), "time": 1, "data": request["data"]}
        session.append(event)
        answer({"ok": True, "event": event})
    elif op == "snapshot" and session is not None and set(request) == {"op"}:
        answer({"ok": True, "events": session, "surface": {"nodes": [], "replaceGeneration": 0}, "messages": [],
                "firstLiveSeq": 0})
    else:
        unsupported(f"{op} is not supported yet")
'''


def _testee(directory: Path, which: str) -> list[str]:
    if which == "planted":
        return [PY, "-m", "sessionspec.cli", "serve", "--impl", THREE]
    script = directory / "starter.py"
    script.write_text(STARTER)
    return [PY, str(script)]


@pytest.fixture(scope="module", params=["planted", "starter"])
def run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[list[str], dict[str, Any]]:
    """A short conform run (the vectors and a few machine examples) of the testee: its command and --json report."""
    directory = tmp_path_factory.mktemp(request.param)
    testee = _testee(directory, request.param)
    report = directory / "report.json"
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        code = main(["conform", "--examples", "20", "--json", str(report), "--traces", str(directory / "traces"),
                     "--", *testee])
    assert code == 1
    return testee, json.loads(report.read_text())


def test_every_family_of_a_run_reproduces_from_its_trace(run: tuple[list[str], dict[str, Any]]) -> None:
    testee, report = run
    families = report["families"]
    assert families and any(family["machine"] for family in families)  # the machine's findings are among them
    wrong = []
    for family in families:
        path = family["shortest"]["replay"]
        assert path, f"{family['family']} has no trace"
        trace = read_trace(path)
        assert trace.requests and trace.requests[0].get("op") == "create", f"{path} does not start with a create"
        replayed = runner.run(runner.Options(testee, replay=Path(path)), trace=trace).divergences
        shown = [found.family for found in replayed]
        if shown != [family["family"]]:
            wrong.append(f"{family['family']} replays as {shown} ({path})")
    assert not wrong, "\n".join(wrong)
