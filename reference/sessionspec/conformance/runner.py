"""`sessionspec conform`: the vectors and the machine against a testee, every divergence family in one run.

The runner must be the most robust program in the repository: whatever the testee does (crash,
hang, print garbage, answer forever, keep dying) the run ends within its deadline with a report of
everything found so far and an exit code: 0 for no divergence (after the failure list), 1 for
divergences, 2 when the testee could not be run at all or the run could not finish. A testee that
gives no valid answer several times in a row, or has to be restarted too often, is declared
unusable: the vectors left are counted as not run (skipped, with why), the machine is skipped, and
the report is written. An error in the runner itself is the oracle's fault, and said so: the report
of what was found is still written, and the traceback goes to a file in the run's directory.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from sessionspec.conformance import vectors as vector_files
from sessionspec.conformance.minimize import aftermath
from sessionspec.conformance.search import collector_for_a_search, search
from sessionspec.conformance.selection import Selection
from sessionspec.conformance.stopping import Interrupted, crash_report, deferred_signals, received
from sessionspec.conformance.storagephase import Settings, declared, run_phase
from sessionspec.conformance.storagevectors import vectorfiles as storage_vectors
from sessionspec.conformance.vectoroutcome import VectorOutcome
from sessionspec.conformance.verify import Flaky, verify
from sessionspec.wire.capabilities import CORE_OPS, NOT_APPLICABLE, Capabilities
from sessionspec.wire.client import Connection, RunOver, TesteeFailure
from sessionspec.wire.compare import describe
from sessionspec.wire.divergence import Divergence, write_traces
from sessionspec.wire.exchange import GIVE_UP, HEALTHY, DivergenceFound, Exchange
from sessionspec.wire.protocol import Answer
from sessionspec.wire.trace import Trace, fresh_directory
from sessionspec.wire.verdict import breaches_from_json

OK, DIVERGED, UNRUNNABLE = 0, 1, 2
DEADLINE: Final = 1800.0
"""The run's own deadline, in seconds, when none is given: far beyond what a default run takes (about a minute),
so a CI never needs to set it, and short enough that a testee that stalls cannot hold a CI slot for its hours."""

Progress = Callable[[str, int, int], None]


class Unrunnable(Exception):
    """The testee cannot be run (does not start, or cannot answer hello); `result` is the report of the run, which
    says why, for the sinks a run always writes (`--json`, `--junit`)."""

    result: Result | None = None


@dataclass
class Options:
    command: list[str]
    examples: int | None = 200
    """The machine's examples in all (Hypothesis's max_examples); a profile's setting when a profile is named."""
    seconds: float | None = None
    """The machine's search budget; the vectors and the minimizing of what it finds come on top (up to `deadline`)."""
    profile: str | None = None
    timeout: float = 10.0
    deadline: float = DEADLINE
    """The whole run's budget, in seconds: past it the run stops where it is and reports."""
    vectors_dir: Path = vector_files.DEFAULT_DIR
    replay: Path | None = None
    traces_dir: Path | None = None
    """Where traces go; by default a fresh directory per run, which the report names."""
    skip_vectors: bool = False
    selection: Selection = field(default_factory=Selection)
    """`--run`/`--skip` (conformance.selection): a selected run is partial, and its report says what it left out."""
    verify: int = 0
    """`--verify N`: each family's trace replayed N times against fresh testees; one not shown every time is flaky."""
    seed: int = 0
    """`--seed S`: the machine's round N is generated from seed S + N, so N machines with N seeds search apart."""
    shard: tuple[int, int] | None = None
    """`--shard I/N`: this run is part I of N (vectors by index, the machine's rounds by number); `merge` joins them."""
    storage: bool = True
    """Whether the storage phase runs (spec/10, "Storage capability") when the testee's hello declares storage."""
    watch: Callable[[Any, Answer, Answer], None] | None = None
    """Told each request the testee answered, the reference's answer and the testee's (`sessionspec replay`)."""


@dataclass
class Result:
    testee: Answer
    vectors: list[VectorOutcome] = field(default_factory=list)
    examples: int = 0
    divergences: list[Divergence] = field(default_factory=list)
    unchecked: list[str] = field(default_factory=list)
    requests: int = 0
    seconds: float = 0.0
    machine_seconds: float = 0.0
    searched: bool = False
    """Whether the machine's search ran (a failure list's machine entries are judged only then)."""
    partial: bool = False
    stopped: str | None = None
    """Why the run stopped early (a testee declared unusable, the deadline), if it did."""
    crash: str | None = None
    """The oracle's own failure, if the run could not complete because of it (the traceback's file is named)."""
    traces: Path | None = None
    options: Options | None = None
    """What the run was asked (the report's header says it)."""
    flaky: list[Flaky] = field(default_factory=list)
    """Families that did not show on every replay (`--verify`): neither passing nor divergences."""
    capabilities: Capabilities | None = None
    """What the testee's hello declared, less the ops it showed it does not implement (a testee listing no ops)."""
    not_applicable: dict[str, int] = field(default_factory=dict)
    """Requests not sent (the machine's, the storage phase's) because they need what the testee does not declare."""
    signal: int | None = None
    """The signal that stopped the run, if one did."""

    @property
    def complete(self) -> bool:
        """Whether the run did all it set out to: no stop, no crash, nothing left out (a replay, --examples 0)."""
        return not self.partial and self.stopped is None and self.crash is None
    storage_seconds: float = 0.0
    """How long the storage phase took (its vectors, the save check and the crash trial)."""

    @property
    def passed(self) -> int:
        return sum(v.status == "passed" for v in self.vectors)

    @property
    def failed(self) -> int:
        return sum(v.status == "failed" for v in self.vectors)

    @property
    def vector_ids(self) -> list[str]:
        return [v.id for v in self.vectors]


def hello(connection: Connection) -> Answer:
    try:
        connection.start()
        answer = connection.request({"op": "hello"})
    except TesteeFailure as failure:
        raise Unrunnable(f"{failure.kind}: {failure.message}") from None
    if not answer.get("ok"):
        raise Unrunnable(f"the testee refused hello: {describe(answer)}")
    return answer


# --- vectors ------------------------------------------------------------------------------------


def run_vector(exchange: Exchange, vector: dict[str, Any]) -> VectorOutcome:
    """Every step of one vector against its recorded answers, then its final snapshot; pipelined.

    A vector that needs what the testee does not declare (spec/10, "Capabilities") is not applicable and not sent;
    one that needs only the core op `snapshot` the testee lacks has its steps compared and is skipped, since its
    final state could not be."""
    started = time.perf_counter()
    rules, level = tuple(vector.get("rules", ())), vector.get("level")
    steps = vector["steps"]
    requests = [step["line"] if "line" in step else step["request"] for step in steps]
    need = exchange.capabilities.first_need(requests)
    if need is not None and need not in CORE_OPS:
        return VectorOutcome(vector["id"], NOT_APPLICABLE, reason=f"needs {need}, which the testee does not declare",
                             rules=rules, level=level)
    exchange.begin("vector", vector["id"])
    try:
        for request, step in zip(requests, steps, strict=True):
            exchange.send(request, expected=step["expected"], breaches=breaches_from_json(step.get("breaches")))
        exchange.send({"op": "snapshot"}, expected=vector["final"])
        exchange.flush()
    except DivergenceFound as found:
        return VectorOutcome(vector["id"], "failed", time.perf_counter() - started, found.divergence, rules=rules, level=level)
    seconds = time.perf_counter() - started
    optional = [op for op in exchange.needed if op not in CORE_OPS]
    if optional:
        return VectorOutcome(vector["id"], NOT_APPLICABLE, seconds, rules=rules, level=level,
                             reason=f"needs {optional[0]}, which the testee does not implement (it answered unsupported)")
    if exchange.needed:
        return VectorOutcome(vector["id"], "skipped", seconds, rules=rules, level=level,
                             reason=f"not judged: the testee does not implement {exchange.needed[0]}, a core op")
    return VectorOutcome(vector["id"], "passed", seconds, rules=rules, level=level)


def _run_vectors(exchange: Exchange, options: Options, result: Result, progress: Progress | None) -> None:
    if options.skip_vectors:
        result.partial = True
        return
    vectors = vector_files.load(options.vectors_dir)
    if options.selection.active:
        vectors, result.partial = options.selection.vectors(vectors), True
    if options.shard is not None:
        vectors, result.partial = vectors[options.shard[0] - 1::options.shard[1]], True
    try:
        for number, vector in enumerate(vectors):
            why = _unusable(exchange) or ("the run's deadline passed" if exchange.past_deadline else None)
            if why is not None:
                result.stopped = result.stopped or why
                result.partial = True
                return
            outcome = run_vector(exchange, vector)
            result.vectors.append(outcome)
            if outcome.divergence is not None:
                result.divergences.append(outcome.divergence)
            if progress is not None:
                progress("vectors", number + 1, len(vectors))
    except (RunOver, Interrupted) as stop:
        result.stopped = result.stopped or (f"stopped by {stop.name}" if isinstance(stop, Interrupted) else
                                            "the run's deadline passed")
        raise
    finally:  # whatever ended the loop, every vector not reached is counted as not run, with why
        _not_run(vectors[len(result.vectors):], result)


def _not_run(vectors: list[dict[str, Any]], result: Result) -> None:
    why = result.stopped or "the run stopped"
    result.vectors.extend(VectorOutcome(v["id"], "skipped", reason=f"not run: {why}", rules=tuple(v.get("rules", ())),
                                        level=v.get("level"), not_run=True)
                          for v in vectors)


def _run_storage(exchange: Exchange, options: Options, result: Result, progress: Progress | None) -> None:
    """The storage phase after the SCP vectors: its cases are counted as vectors are (`conformance.storagephase`),
    selected by `--run`/`--skip` and split by `--shard` as they are."""
    if options.skip_vectors or not options.storage or result.stopped is not None:
        return
    assert result.traces is not None
    started, chosen = time.perf_counter(), options.selection
    settings = Settings(options.vectors_dir / "storage", result.traces / "storage", options.command, options.timeout,
                        options.seed, large=options.profile in ("ci", "nightly"), wants=chosen.wants, shard=options.shard)
    if chosen.active:
        chosen.storage(storage_vectors.load(settings.vectors_dir), declared(result.testee))
    checked = run_phase(exchange, result.testee, settings, progress)
    for case in checked:
        case.storage = True
    result.vectors.extend(checked)
    result.divergences.extend(c.divergence for c in checked if c.divergence is not None)
    result.storage_seconds = time.perf_counter() - started


def _unusable(exchange: Exchange) -> str | None:
    """Why the testee is declared unusable, if it is: it keeps failing, or keeps having to be restarted."""
    if exchange.streak >= GIVE_UP:
        return f"the testee gave no valid answer {exchange.streak} times in a row (declared unusable)"
    if exchange.gave_up:
        return (f"the testee stalled or overflowed in {exchange.stalls} incarnations in a row, none of which gave "
                f"{HEALTHY} answers (declared unusable)")
    if exchange.connection.restarts > exchange.max_restarts:
        return f"the testee had to be restarted {exchange.connection.restarts} times (declared unusable)"
    return None


# --- a whole run ---------------------------------------------------------------------------------


def replay(exchange: Exchange, trace: Trace, name: str) -> list[Divergence]:
    """`--replay TRACE.json`: the recorded requests to the reference and the testee, to the first divergence."""
    exchange.begin("replay", f"replay:{name}")
    try:
        for request in trace.requests:
            exchange.send(request)
        exchange.flush()
    except DivergenceFound as found:
        return [found.divergence]
    return []


def run(options: Options, *, trace: Trace | None = None, progress: Progress | None = None) -> Result:
    """Hello, every vector, then the machine's search (or only a replay of `trace`); raises Unrunnable, carrying
    the report of a run that could not start (`Unrunnable.result`).

    Whatever happens after hello, a Result comes back holding everything found so far: `stopped` says why
    the run ended early (the deadline, a signal, a testee declared unusable), `crash` that the oracle itself
    failed."""
    end = time.monotonic() + options.deadline
    connection = Connection(options.command, timeout=options.timeout, deadline=end)
    result = Result({}, options=options)
    result.traces = options.traces_dir or fresh_directory()
    started = time.perf_counter()
    exchange: Exchange | None = None
    try:
        if received() is not None:  # noted before the run began (`stopping.note_signals`): it stops here, reported
            raise Interrupted(received() or 0)
        result.testee = hello(connection)
        result.capabilities = Capabilities.declared(result.testee)
        exchange = Exchange(connection, deadline=end, capabilities=result.capabilities)
        exchange.watch = options.watch
        _phases(exchange, options, result, trace, progress, end)
    except Unrunnable as unrunnable:
        result.stopped, result.partial = f"the testee could not be run: {unrunnable}", True
        unrunnable.result = result
        raise
    except RunOver:
        result.stopped, result.partial = f"the run's deadline ({options.deadline:g} s) passed", True
    except Interrupted as interrupted:  # a signal: everything found so far is reported, as at the deadline
        result.stopped, result.partial, result.signal = f"stopped by {interrupted.name}", True, interrupted.signum
    except Exception as error:  # the oracle's own fault: report what was found, and where the traceback is
        result.crash, result.partial = crash_report(error, result.traces), True
    finally:
        with deferred_signals():  # a second signal now would leave the testee running and the report unwritten
            if exchange is not None:
                _collect_exchange(exchange, result)
            result.requests = connection.requests
            result.seconds = time.perf_counter() - started
            connection.close()
    with deferred_signals():
        assert result.traces is not None
        write_traces([*result.divergences, *(flaky.divergence for flaky in result.flaky)], result.traces, options.replay)
    late = received()
    if late is not None and result.signal is None:  # it came while the run was ending: the run still says so
        result.signal = late
        result.stopped = result.stopped or f"stopped by {signal.Signals(late).name}"
    return result


def _collect_exchange(exchange: Exchange, result: Result) -> None:
    """What the exchange learned: the capabilities as answered, what was not sent for want of them, the fields it
    could not compare, and the divergences a search interrupted by a signal collected but did not minimize."""
    result.capabilities = exchange.capabilities
    result.not_applicable = dict(exchange.not_applicable)
    result.unchecked = sorted(exchange.unchecked)
    if result.signal is not None or result.stopped:
        families = {found.family for found in result.divergences}
        for found in exchange.collected:
            if found.family not in families:
                families.add(found.family)
                result.divergences.append(found)


def _phases(exchange: Exchange, options: Options, result: Result, trace: Trace | None, progress: Progress | None,
            end: float) -> None:
    if trace is not None:
        result.divergences = replay(exchange, trace, options.replay.name if options.replay else "trace")
        result.partial = True
        return
    _run_vectors(exchange, options, result, progress)
    _run_storage(exchange, options, result, progress)
    if (options.examples == 0 and options.profile is None) or result.stopped is not None or not options.selection.machine():
        result.partial = True
        return
    budget = end if options.seconds is None else min(end, time.monotonic() + options.seconds)
    started = time.perf_counter()
    with collector_for_a_search():
        found = search(exchange, result.testee, examples=options.examples, profile=options.profile,
                       deadline=budget, progress=progress, seed=options.seed, shard=options.shard)
    result.machine_seconds = time.perf_counter() - started
    result.examples, result.searched = found.examples, found.stopped is None
    result.divergences.extend(options.selection.divergences(found.found) if options.selection.active else found.found)
    result.stopped = found.stopped or _unusable(exchange)
    if exchange.past_deadline:
        result.stopped = f"the run's deadline ({options.deadline:g} s) passed during the machine's search"
    _follow(exchange, result, progress)
    if options.verify and not result.stopped:
        result.divergences, result.flaky = verify(exchange, result.divergences, options.verify, progress)
        flaky = {f.family for f in result.flaky}
        for vector in result.vectors:
            if vector.divergence is not None and vector.divergence.family in flaky:
                vector.status = "flaky"


FOLLOWED: Final = 4
"""Divergences of one family whose aftermath is asked (the shortest first) until one leaves the session broken."""


def _follow(exchange: Exchange, result: Result, progress: Progress | None) -> None:
    """What each family leaves the testee's session as (`minimize.aftermath`): asked of its shortest divergences
    (the machine's minimized one first) until one shows the session broken, since the fault that breaks it may be
    one input of the family and not another (an assistant message with no message, not a user message that is a
    string)."""
    families: dict[str, list[Divergence]] = {}
    for found in result.divergences:
        families.setdefault(found.family, []).append(found)
    for number, members in enumerate(families.values()):
        if progress is not None:
            progress("following each family", number, len(families))
        for found in sorted(members, key=lambda d: (d.source != "machine", len(d.trace), d.id))[:FOLLOWED]:
            if exchange.past_deadline or _unusable(exchange):
                return
            found.aftermath = aftermath(exchange, found)
            if broken(found.aftermath):
                break


def broken(after: dict[str, str]) -> bool:
    """Whether an aftermath shows the session broken: a probe that failed, not one refused as unsupported."""
    return any(answer not in ("ok", "unsupported") for answer in after.values())
