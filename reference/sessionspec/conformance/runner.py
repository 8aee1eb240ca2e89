"""`sessionspec conform`: the vectors and the machine against a testee, every divergence family in one run.

The runner must be the most robust program in the repository: whatever the testee does (crash,
hang, print garbage, answer forever) the run ends within its budget with a report and an exit
code: 0 for no divergence (after the failure list), 1 for divergences, 2 when the testee could not
be run at all. The machine keeps searching after a divergence: each new family is shrunk by
Hypothesis, then cut down further by replaying the trace without each request in turn
(`minimize`), recorded, and from then on known, so the next pass looks for the next family.
"""

from __future__ import annotations

import contextlib
import gc
import json
import shlex
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from hypothesis import HealthCheck, Phase, Verbosity, settings
from hypothesis.errors import Flaky, Unsatisfiable
from hypothesis.internal.conjecture import engine
from hypothesis.stateful import run_state_machine_as_test

from sessionspec.conformance import vectors as vector_files
from sessionspec.conformance.cuts import accepted_seqs, alone, cuts, unseeded
from sessionspec.testing import profiles
from sessionspec.testing.testee_machine import testee_machine
from sessionspec.wire.client import Connection, TesteeFailure
from sessionspec.wire.compare import describe, op_of
from sessionspec.wire.divergence import Divergence
from sessionspec.wire.exchange import DivergenceFound, Exchange
from sessionspec.wire.protocol import HOOKS, INPROCESS, Answer
from sessionspec.wire.trace import Trace, write_trace
from sessionspec.wire.verdict import breaches_from_json

OK, DIVERGED, UNRUNNABLE = 0, 1, 2
MAX_FAMILIES: Final = 32
"""Search passes end after this many families: a testee this far off needs fixing before more searching."""
SHRINK_SECONDS: Final = 5.0
"""Hypothesis's shrinking per family, before `minimize`. `minimize` cuts a trace to its family's shortest on its
own (measured on three planted deviations with no Hypothesis shrinking at all); this budget buys smaller
values inside the requests. It was once 30 s to hide a bug in the pipelined exchange (a divergence carried the
next session's trace, which no cut could reproduce), which made each default run against a deviating testee
spend minutes shrinking, and which timed out to a 25-request trace on a slower machine."""


class Unrunnable(Exception):
    """The testee cannot be run (does not start, or cannot answer hello)."""


@dataclass
class Options:
    command: list[str]
    examples: int | None = 30
    seconds: float | None = None
    profile: str | None = None
    timeout: float = 10.0
    vectors_dir: Path = vector_files.DEFAULT_DIR
    replay: Path | None = None
    traces_dir: Path | None = None
    skip_vectors: bool = False
    known: frozenset[str] = frozenset()
    """Machine families the failure list names: known from the start, so the search looks past them."""


@dataclass
class Result:
    testee: Answer
    passed: int = 0
    failed: int = 0
    vector_ids: list[str] = field(default_factory=list)
    examples: int = 0
    divergences: list[Divergence] = field(default_factory=list)
    unchecked: list[str] = field(default_factory=list)
    requests: int = 0
    seconds: float = 0.0
    partial: bool = False
    stopped: str | None = None
    """Why the run stopped early (a testee that keeps failing), if it did."""

    def report(self) -> dict[str, Any]:
        """The --json report (spec/10-conformance.md)."""
        machine = sum(d.source == "machine" for d in self.divergences)
        return {"testee": self.testee, "vectors": {"passed": self.passed, "failed": self.failed},
                "machine": {"examples": self.examples, "divergences": machine}, "unchecked": self.unchecked,
                "requests": self.requests, "seconds": round(self.seconds, 3), "stopped": self.stopped,
                "divergences": [d.to_json() for d in self.divergences]}


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


def run_vector(exchange: Exchange, vector: dict[str, Any]) -> Divergence | None:
    """Every step of one vector against its recorded answers, then its final snapshot; pipelined."""
    exchange.begin("vector", vector["id"])
    try:
        for step in vector["steps"]:
            exchange.send(step["line"] if "line" in step else step["request"], expected=step["expected"],
                          breaches=breaches_from_json(step.get("breaches")))
        exchange.send({"op": "snapshot"}, expected=vector["final"])
        exchange.flush()
    except DivergenceFound as found:
        return found.divergence
    return None


# --- the machine --------------------------------------------------------------------------------


def machine_settings(options: Options) -> settings:
    """The search's settings. Quiet: conform reports each divergence itself (its trace and one-line replay);
    Hypothesis's own report names steps of a test the user never wrote, and an `@seed` to add to it."""
    if options.profile is not None:
        profiles.register()
        return settings(settings.get_profile(options.profile), database=None, deadline=None, report_multiple_bugs=False,
                        print_blob=False, verbosity=Verbosity.quiet, suppress_health_check=list(HealthCheck))
    return settings(max_examples=max(1, options.examples or 1), stateful_step_count=25, deadline=None, database=None,
                    derandomize=True, report_multiple_bugs=False, print_blob=False, verbosity=Verbosity.quiet,
                    phases=[Phase.explicit, Phase.generate, Phase.shrink], suppress_health_check=list(HealthCheck))


@contextlib.contextmanager
def collector_for_a_search() -> Iterator[None]:
    """CPython's cyclic collector set for the machine's search, and put back after it.

    A search keeps many objects for long (the oracle's tree of answers and sessions, Hypothesis's
    tree of choices) and makes many that die young. With the default thresholds the collector's full
    walks over all of them were about a tenth of the runner's CPU (measured with `gc.callbacks` over
    100 examples: 0.46 s of about 4.4 s); with what exists when the search starts (modules, vectors)
    frozen out of its walks and a young collection every 10,000 net allocations instead of 700, 0.11 s.
    When the search ends the thresholds are put back and the frozen objects are under the collector again.
    """
    thresholds = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(10_000, *thresholds[1:])
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()


def search(exchange: Exchange, options: Options, testee: Answer) -> tuple[int, list[Divergence]]:
    """Every divergence family the machine finds within the budget, each shrunk and minimized."""
    extensions = testee.get("extensions")
    deadline = time.monotonic() + options.seconds if options.seconds else None
    listed = extensions if isinstance(extensions, list) else []
    machine = testee_machine(exchange, hooks=HOOKS in listed, inprocess=INPROCESS in listed, deadline=deadline)
    found: list[Divergence] = []
    families = set(options.known)
    exchange.known = lambda divergence: divergence.family in families
    examples = 0
    shrink = engine.MAX_SHRINKING_SECONDS
    try:
        while len(found) < MAX_FAMILIES:
            seconds = SHRINK_SECONDS if deadline is None else max(1.0, deadline - time.monotonic())
            engine.MAX_SHRINKING_SECONDS = int(seconds)
            exchange.last = None
            machine.examples = 0
            try:
                run_state_machine_as_test(machine, settings=machine_settings(options))
            except (AssertionError, Flaky) as error:
                if exchange.last is None and isinstance(error, Flaky) and deadline is not None \
                        and time.monotonic() > deadline:
                    break  # examples rejected at once past the deadline look like inconsistent generation: budget spent
                if exchange.last is None:
                    raise RuntimeError(f"the machine failed without a recorded divergence: {error!r}") from error
            except Unsatisfiable:
                break  # every example was rejected at its start: the budget is spent or the testee gave out
            finally:
                examples += machine.examples
            if exchange.last is None:
                break
            divergence = minimize(exchange, exchange.last)
            families.add(divergence.family)
            found.append(divergence)
            if deadline is not None and time.monotonic() > deadline:
                break
    finally:
        engine.MAX_SHRINKING_SECONDS = shrink
    met = [d for family, d in exchange.met.items() if family in options.known]
    return examples, [*found, *met]


def _reproduces(exchange: Exchange, trace: list[Any], family: str) -> Divergence | None:
    """Replay `trace` lock-step; the divergence it ends in, if it is of `family`."""
    exchange.begin("machine")
    exchange.known = lambda divergence: False
    try:
        for request in trace:
            exchange.send(request)
        exchange.flush()
    except DivergenceFound as found:
        return found.divergence if found.divergence.family == family else None
    return None


def minimize(exchange: Exchange, divergence: Divergence) -> Divergence:
    """The divergence's trace cut down: snapshots before the diverging request dropped, then runs of requests
    whose removal still reproduces the same family, halving the run length down to single requests, and
    single requests to a fixpoint (no one request can go). The first request (the create) and the last (the
    diverging one) stay; a create from a seed is first tried as a create without one and the seed's events
    as appends (`cuts.unseeded`). A removed append's seq is taken out of the seq references after it (`cuts.without`), so
    a replacement later in the log still names what it named; where that does not reproduce, the plain cut is
    tried. Every cut is kept only if replaying it reproduces the family: the trace stays a reproduction."""
    known = exchange.known
    trace = [r for r in divergence.trace[:-1] if op_of(r) != "snapshot"] + divergence.trace[-1:]
    best = _reproduces(exchange, trace, divergence.family) or divergence
    trace = best.trace
    for candidate in (alone(trace), unseeded(trace)):  # the diverging request in a fresh session; the seed as appends
        attempt = _reproduces(exchange, candidate, divergence.family) if candidate is not None else None
        if attempt is not None and len(attempt.trace) < len(trace):
            best, trace = attempt, attempt.trace
            break
    length = max(1, (len(trace) - 2) // 2)
    while True:
        removed = False
        position = 1
        seqs = accepted_seqs(trace)
        while position < len(trace) - 1:
            stop = min(position + length, len(trace) - 1)
            attempt = None
            for candidate in cuts(trace, position, stop, seqs):
                attempt = _reproduces(exchange, candidate, divergence.family)
                if attempt is not None and len(attempt.trace) < len(trace):
                    break
                attempt = None
            if attempt is not None:
                best, trace, removed = attempt, attempt.trace, True
                seqs = accepted_seqs(trace)
            else:
                position += length
        if length > 1:
            length //= 2
        elif not removed:
            break
    exchange.known = known
    best.source, best.id = divergence.source, divergence.id
    return best


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


def run(options: Options, *, trace: Trace | None = None,
        progress: Callable[[str, int, int], None] | None = None) -> Result:
    """Hello, every vector, then the machine's search (or only a replay of `trace`); raises Unrunnable."""
    connection = Connection(options.command, timeout=options.timeout)
    try:
        result = Result(hello(connection))
        exchange = Exchange(connection)
        started = time.perf_counter()
        if trace is not None:
            result.divergences = replay(exchange, trace, options.replay.name if options.replay else "trace")
            result.partial = True
        else:
            _run_vectors(exchange, options, result, progress)
            if (options.examples == 0 and options.profile is None) or exchange.gave_up:
                result.partial = True
            else:
                with collector_for_a_search():
                    result.examples, found = search(exchange, options, result.testee)
                result.divergences.extend(found)
        result.unchecked = sorted(exchange.unchecked)
        result.requests = connection.requests
        result.seconds = time.perf_counter() - started
    finally:
        connection.close()
    write_traces(result, options)
    return result


def _run_vectors(exchange: Exchange, options: Options, result: Result,
                 progress: Callable[[str, int, int], None] | None) -> None:
    if options.skip_vectors:
        result.partial = True
        return
    vectors = vector_files.load(options.vectors_dir)
    for number, vector in enumerate(vectors):
        if exchange.gave_up:
            result.stopped = (f"the testee failed {exchange.streak} times in a row; {len(vectors) - number} vectors and the "
                              f"machine were not run")
            result.partial = True
            return
        result.vector_ids.append(vector["id"])
        found = run_vector(exchange, vector)
        if found is None:
            result.passed += 1
        else:
            result.failed += 1
            result.divergences.append(found)
        if progress is not None:
            progress("vectors", number + 1, len(vectors))


def write_traces(result: Result, options: Options) -> None:
    """Each divergence's requests as a trace file, for the one-line reproduction."""
    if not result.divergences:
        return
    for found in result.divergences:
        if found.source == "replay" and options.replay is not None:
            found.replay = str(options.replay)
            continue
        trace = Trace(found.trace, "conform" if found.source == "machine" else found.source, found.id, None,
                      {"family": found.family, "rule": found.rule, "why": found.why})
        found.replay = str(write_trace(trace, options.traces_dir))


def explain(found: Divergence, command: Sequence[str]) -> str:
    """A divergence for a person: its family, what was sent, what the reference said and why, what the testee said."""
    last = found.trace[-1] if found.trace else "(nothing)"
    sent = last if isinstance(last, str) else _json(last)
    sent = sent if len(sent) <= 500 else sent[:500] + "..."
    lines = [f"DIVERGENCE [{found.family}] ({found.source} {found.id})",
             f"  sent:      {sent}" + (f"  (request {len(found.trace)} of the trace)" if len(found.trace) > 1 else ""),
             f"  reference: {describe(found.expected)}",
             f"  testee:    {describe(found.actual)}"]
    lines.extend(f"  differs:   {why}" for why in found.why)
    if found.replay:
        lines.append(f"  reproduce: sessionspec replay {shlex.quote(found.replay)} -- {shlex.join(command)}")
    return "\n".join(lines)


def _json(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, default=repr)
    except (ValueError, RecursionError):
        return repr(type(value))


def families(divergences: Iterable[Divergence]) -> list[str]:
    return sorted({d.family for d in divergences if d.source == "machine"})
