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
from starter import starter

PY = sys.executable
THREE = "planted:stale-derived-cache+double-marker+provenance-unchecked"
"""Three independent deviations from required rules in one store (as tests/test_10_runner.py plants them)."""

def _testee(directory: Path, which: str) -> list[str]:
    if which == "planted":
        return [PY, "-m", "sessionspec.cli", "serve", "--impl", THREE]
    return starter(directory, "-", "snapshot", "seq-bug")  # a log-only snapshot, and a seq bug on top


@pytest.fixture(scope="module", params=["planted", "starter"])
def run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[list[str], dict[str, Any]]:
    """A short conform run (the vectors and a few machine examples) of the testee: its command and --json report.

    The storage phase is left out (its 141 cases, 7 s a run): the starter declares no storage, and no storage case
    of THREE diverges, so it adds no family to reproduce."""
    directory = tmp_path_factory.mktemp(request.param)
    testee = _testee(directory, request.param)
    report = directory / "report.json"
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        code = main(["conform", "--examples", "20", "--skip", "SESSION-CONFORMANCE-STORAGE.*", "--json", str(report),
                     "--traces", str(directory / "traces"), "--", *testee])
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


# --- raw request bytes, losslessly (issue 35.3) ---------------------------------------------------------------------

SCHEMA = Path(__file__).resolve().parents[1] / "spec" / "schema" / "trace.schema.json"
SURROGATE_LINE = '{"op":"append","type":"plugin/note","data":"\udcff"}'
"""The machine's raw line with a lone surrogate: sent as the bytes ED B3 BF, which are not UTF-8."""


def test_a_raw_line_that_is_not_utf8_is_written_as_its_bytes_and_read_back_exactly(tmp_path: Path) -> None:
    import base64

    import jsonschema
    from sessionspec.wire.requestline import encodable
    from sessionspec.wire.trace import Trace, write_trace

    not_even_surrogates = b'{"op":"append","type":"plugin/note","data":"\xff"}'
    requests: list[Any] = [{"op": "create", "id": "s", "seed": None, "header": None}, SURROGATE_LINE,
                           not_even_surrogates, "not json", {"op": "append", "type": "plugin/note", "data": "\udcff"}]
    path = write_trace(Trace(requests, "conform", "raw"), tmp_path)
    document = json.loads(path.read_text(encoding="ascii"))
    jsonschema.Draft202012Validator(json.loads(SCHEMA.read_text())).validate(document)
    assert document["format"] == "sessionspec-trace/3"
    written = document["requests"]
    # Any reader gets the bytes from base64: nothing in the file is a lone surrogate in a string that is a line.
    assert base64.b64decode(written[1]["$line-base64"]) == b'{"op":"append","type":"plugin/note","data":"\xed\xb3\xbf"}'
    assert base64.b64decode(written[2]["$line-base64"]) == not_even_surrogates
    assert written[3] == "not json" and written[4]["data"] == "\udcff"  # a value inside an object is JSON's own escape
    again = read_trace(path).requests
    assert [encodable(request) for request in again] == [encodable(request) for request in requests]


def test_a_format_2_trace_is_still_read(tmp_path: Path) -> None:
    path = tmp_path / "old.json"
    path.write_text(json.dumps({"format": "sessionspec-trace/2", "requests": [{"op": "snapshot"}, "x"]}))
    assert read_trace(path).requests == [{"op": "snapshot"}, "x"]


def test_a_line_that_is_not_base64_is_refused_in_one_line(tmp_path: Path) -> None:
    from sessionspec.wire.trace import TraceError

    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"format": "sessionspec-trace/3", "requests": [{"$line-base64": "%%%"}]}))
    with pytest.raises(TraceError, match=r"\$line-base64"):
        read_trace(path)


# --- replay prints each answer (issue 35.3) --------------------------------------------------------------------------


def _trace_of_three(tmp_path: Path) -> Path:
    from sessionspec.wire.trace import Trace, write_trace

    requests = [{"op": "create", "id": "s", "seed": None, "header": None},
                {"op": "append", "type": "turn/start", "data": {}}, SURROGATE_LINE.encode("utf-8", "surrogatepass"),
                {"op": "append", "type": "user/message", "data": {"id": "u", "role": "user", "source": {"kind": "user"},
                                                                 "content": [{"type": "text", "text": "hi"}]},
                 "surfaceOp": "append"}]
    return write_trace(Trace(requests, "conform", "three"), tmp_path)


def _replay(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = main(["replay", *args])
    return code, out.getvalue()


def test_replay_against_a_testee_prints_every_answer_as_json_lines_when_piped(tmp_path: Path) -> None:
    from sessionspec.wire.trace import write_trace

    path = _trace_of_three(tmp_path)
    code, out = _replay(str(path), "--", PY, "-m", "sessionspec.cli", "serve", "--impl", "live")
    lines = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and [line["n"] for line in lines] == [0, 1, 2, 3] and all(line["same"] for line in lines)
    assert lines[2]["request"] == {"$line-base64": "eyJvcCI6ImFwcGVuZCIsInR5cGUiOiJwbHVnaW4vbm90ZSIsImRhdGEiOiLts78ifQ=="}
    assert lines[2]["answer"]["error"]["rule"] == "SESSION-LOSSLESS-TEXT.1"  # the bytes arrived as they were sent
    trace = read_trace(path)
    trace.requests = [trace.requests[0], trace.requests[1], trace.requests[3]]
    short = write_trace(trace, tmp_path)
    code, out = _replay(str(short), "--", *_testee(tmp_path, "starter"))
    lines = [json.loads(line) for line in out.splitlines()]
    assert code == 1 and [line.get("same") for line in lines] == [True, True, False, None]
    assert lines[2]["answer"]["ok"] is False and lines[2]["reference"]["ok"] is True and lines[2]["differences"]
    assert lines[3]["divergence"]["family"] == "append:accepts unsupported"


def test_replay_for_a_person_shows_each_request_its_answer_and_the_difference(tmp_path: Path) -> None:
    from sessionspec.cli.replay import Printer

    path = _trace_of_three(tmp_path)
    trace = read_trace(path)
    out = io.StringIO()
    printer = Printer(trace, as_json=False, out=out)
    options = runner.Options(_testee(tmp_path, "starter"),
                             replay=path, watch=lambda request, expected, actual: printer.answer(
                                 request, expected, actual, [] if expected == actual else ["differs"]))
    runner.run(options, trace=trace)
    text = out.getvalue()
    assert "[0] create: accepted (as the reference)" in text
    # The starter answers the line that is not UTF-8 otherwise than the reference: shown with both, and the replay
    # stops at that first divergence.
    assert "[2] append: " in text and "    reference:  " in text and "    DIFFERENCE: differs" in text
    assert "[3]" not in text


def test_replay_in_process_prints_every_answer(tmp_path: Path) -> None:
    path = _trace_of_three(tmp_path)
    code, out = _replay("--impl", "planted:provenance-unchecked", str(path))
    lines = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and [line["n"] for line in lines] == [0, 1, 2, 3] and not any("differences" in x for x in lines)
    assert _replay("--impl", "planted:off-by-one-splice", str(path))[0] in (0, 1)
