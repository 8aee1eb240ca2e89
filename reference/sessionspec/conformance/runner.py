"""`sessionspec conform`: run the vectors and the machine against a testee and report every divergence.

The runner must be the most robust program in the repository: whatever the testee does (crash,
hang, print garbage) the run ends with a report and an exit code, 0 for no divergence (after the
failure list), 1 for divergences, 2 when the testee could not be run at all.
"""

from __future__ import annotations

import json
import shlex
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from hypothesis import HealthCheck, Phase, settings
from hypothesis.errors import Flaky
from hypothesis.stateful import run_state_machine_as_test

from sessionspec.conformance import vectors as vector_files
from sessionspec.conformance.client import Connection, TesteeFailure
from sessionspec.conformance.compare import describe, differences, op_of, skipped
from sessionspec.conformance.machine import Divergence, Exchange, divergence, make_conformance_machine
from sessionspec.conformance.protocol import HOOKS, Answer, dumps

TRACE_FORMAT: Final = "sessionspec-scp-trace/1"
OK, DIVERGED, UNRUNNABLE = 0, 1, 2


class Unrunnable(Exception):
    """The testee cannot be run (does not start, or cannot answer hello)."""


@dataclass
class Options:
    command: list[str]
    examples: int | None = 30
    profile: str | None = None
    timeout: float = 10.0
    vectors_dir: Path = vector_files.DEFAULT_DIR
    replay: Path | None = None
    traces_dir: Path | None = None
    skip_vectors: bool = False


@dataclass
class Result:
    testee: Answer
    passed: int = 0
    failed: int = 0
    vector_ids: list[str] = field(default_factory=list)
    examples: int = 0
    divergences: list[Divergence] = field(default_factory=list)
    requests: int = 0
    seconds: float = 0.0
    partial: bool = False

    def report(self) -> dict[str, Any]:
        """The --json report, in the shape spec/10-conformance.md fixes."""
        machine = sum(d.source == "machine" for d in self.divergences)
        return {"testee": self.testee, "vectors": {"passed": self.passed, "failed": self.failed},
                "machine": {"examples": self.examples, "divergences": machine},
                "divergences": [d.to_json() for d in self.divergences]}


def _request_line(step: dict[str, Any]) -> tuple[Any, bytes]:
    if "line" in step:
        return step["line"], str(step["line"]).encode("utf-8", "surrogatepass")
    return step["request"], dumps(step["request"])


def _ask(connection: Connection, line: bytes) -> Answer:
    """One request; a testee failure becomes an answer and the testee is restarted for what follows."""
    try:
        return connection.request(line)
    except TesteeFailure as failure:
        try:
            connection.restart()
        except TesteeFailure as again:
            raise Unrunnable(again.message) from None
        return failure.answer()


def run_vector(connection: Connection, vector: dict[str, Any]) -> Divergence | None:
    """Every step of one vector, then its final snapshot; the first difference is the divergence."""
    trace: list[Any] = []
    for step in vector["steps"]:
        request, line = _request_line(step)
        if op_of(request) == "create":
            trace = []
        trace.append(request)
        actual = _ask(connection, line)
        if skipped(op_of(request), actual):
            return None
        why = differences(op_of(request), step["expected"], actual)
        if why:
            return divergence("vector", vector["id"], step["expected"], actual, trace, why)
    snapshot = {"op": "snapshot"}
    actual = _ask(connection, dumps(snapshot))
    why = differences("snapshot", vector["final"], actual)
    if why:
        return divergence("vector", vector["id"], vector["final"], actual, [*trace, snapshot], why)
    return None


def machine_settings(options: Options) -> settings:
    if options.profile is not None:
        from sessionspec.testing import profiles

        profiles.register()
        base = settings.get_profile(options.profile)
        return settings(base, database=None, deadline=None, report_multiple_bugs=False)
    return settings(max_examples=options.examples or 1, stateful_step_count=25, deadline=None, database=None,
                    derandomize=True, report_multiple_bugs=False, print_blob=False,
                    phases=[Phase.explicit, Phase.generate, Phase.shrink],
                    suppress_health_check=list(HealthCheck))


def run_machine(connection: Connection, options: Options, testee: Answer) -> tuple[int, Divergence | None]:
    """The stateful machine; a divergence comes back shrunk (the last failing run is the minimal one)."""
    extensions = testee.get("extensions")
    machine = make_conformance_machine(connection, hooks=isinstance(extensions, list) and HOOKS in extensions)
    try:
        run_state_machine_as_test(machine, settings=machine_settings(options))
    except (AssertionError, Flaky) as error:
        if machine.last is None:
            raise RuntimeError(f"the machine failed without a recorded divergence: {error}") from error
        return machine.examples, machine.last
    except Exception as error:
        if isinstance(error, Unrunnable) or machine.last is None:
            raise
        return machine.examples, machine.last
    return machine.examples, None


def replay(connection: Connection, path: Path) -> list[Divergence]:
    """`--replay TRACE.json`: the recorded requests to the reference and the testee, stopping at the first divergence."""
    data = json.loads(path.read_text(encoding="utf-8"))
    requests = data["requests"] if isinstance(data, dict) else data
    exchange = Exchange(connection)
    for request in requests:
        line = request.encode("utf-8", "surrogatepass") if isinstance(request, str) else dumps(request)
        exchange.send(request, line)
        if exchange.divergence is not None:
            found = exchange.divergence
            found.source, found.id = "replay", f"replay:{path.name}"
            return [found]
    return []


def hello(connection: Connection) -> Answer:
    try:
        connection.start()
        answer = connection.request({"op": "hello"})
    except TesteeFailure as failure:
        raise Unrunnable(f"{failure.kind}: {failure.message}") from None
    if not answer.get("ok"):
        raise Unrunnable(f"the testee refused hello: {describe(answer)}")
    return answer


def run(options: Options) -> Result:
    """Hello, every vector, then the machine (or only a replay); raises Unrunnable."""
    connection = Connection(options.command, timeout=options.timeout)
    try:
        result = Result(hello(connection))
        started = time.perf_counter()
        if options.replay is not None:
            result.divergences = replay(connection, options.replay)
            result.partial = True
        else:
            if not options.skip_vectors:
                for vector in vector_files.load(options.vectors_dir):
                    result.vector_ids.append(vector["id"])
                    found = run_vector(connection, vector)
                    if found is None:
                        result.passed += 1
                    else:
                        result.failed += 1
                        result.divergences.append(found)
            else:
                result.partial = True
            if options.examples == 0 and options.profile is None:
                result.partial = True
            else:
                result.examples, found = run_machine(connection, options, result.testee)
                if found is not None:
                    result.divergences.append(found)
        result.requests = connection.requests
        result.seconds = time.perf_counter() - started
    finally:
        connection.close()
    write_traces(result, options)
    return result


def write_traces(result: Result, options: Options) -> None:
    """Each divergence's requests as a trace file, for the one-line reproduction."""
    if not result.divergences:
        return
    directory = options.traces_dir or Path(tempfile.mkdtemp(prefix="sessionspec-conform-"))
    directory.mkdir(parents=True, exist_ok=True)
    for number, found in enumerate(result.divergences):
        if found.source == "replay" and options.replay is not None:
            found.replay = str(options.replay)
            continue
        name = "".join(c if c.isalnum() or c in ".-" else "_" for c in found.id)
        path = directory / f"{number:03d}-{name}.json"
        path.write_text(json.dumps({"format": TRACE_FORMAT, "id": found.id, "requests": found.trace}, indent=1,
                                   ensure_ascii=True) + "\n", encoding="utf-8")
        found.replay = str(path)


def explain(found: Divergence, command: Sequence[str]) -> str:
    """A divergence for a person: what was sent, what the reference said and why, what the testee said."""
    last = found.trace[-1] if found.trace else "(nothing)"
    sent = last if isinstance(last, str) else json.dumps(last, ensure_ascii=False, default=repr)
    sent = sent if len(sent) <= 500 else sent[:500] + "..."
    lines = [f"DIVERGENCE ({found.source} {found.id})" + (f": rule {found.rule} [{found.kind}]" if found.rule else ""),
             f"  sent:      {sent}" + (f"  (step {len(found.trace)} since the last create)" if len(found.trace) > 1 else ""),
             f"  reference: {describe(found.expected)}",
             f"  testee:    {describe(found.actual)}"]
    lines.extend(f"  differs:   {why}" for why in found.why)
    if found.replay:
        lines.append(f"  reproduce: sessionspec conform --replay {shlex.quote(found.replay)} -- {shlex.join(command)}")
    return "\n".join(lines)
