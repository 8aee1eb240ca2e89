"""A divergence cut down to its root cause, and what it leaves behind (spec/10, "Divergence families").

The machine finds a divergence in whatever example it was drawing: a long trace, a request whose
values break several rules at once. What a maintainer needs is the shortest input that still shows
the same fault, named after the one rule it breaks. So a found divergence is

1. **cut**: requests are removed while the same family still shows (snapshots before the diverging
   request first, then runs of requests, halving the run down to single requests, to a fixpoint;
   a create from a seed is first offered without it, the seed as appends; `conformance.cuts`); and
   when a snapshot just before the diverging request already shows the two sessions apart, the
   request is a symptom of an earlier fault, and that snapshot's divergence is what is cut instead;
2. **shrunk inside its last request**: keys and list entries removed, values replaced by simpler
   ones (null, 0, "", an empty container, one of its own children), while the testee still answers
   the same way (accepts, or rejects with the same kind, or differs in the same fields) and the
   request breaks no more rules than before; the family is then named after the rule the reference
   gives the smallest such request (an object `type` holding `-0.0`, first refused for the `-0.0`,
   becomes a missing type: SESSION-EVENT-ENVELOPE.2); a shrunk request is then offered the cut again,
   since it may need less before it (a replace of positions 2..1 needs three nodes, of 0..0 one);
3. **followed**: after the trace, the testee is asked for a snapshot, a valid append and a repair of
   its log, so the report says whether its session still works (an accepted malformed
   `assistant/message` leaves every later snapshot failing).

Every step replays against the testee and keeps a change only if it reproduces: the trace stays a
reproduction. Each works within a number of attempts, not a time, so a run is reproducible.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any, Final

from sessionspec.conformance.cuts import accepted_seqs, alone, cuts, unseeded
from sessionspec.wire.client import Connection, TesteeFailure
from sessionspec.wire.compare import op_of
from sessionspec.wire.divergence import Divergence
from sessionspec.wire.exchange import DivergenceFound, Exchange
from sessionspec.wire.oracle import ReferenceExecutor, reference_answer
from sessionspec.wire.requestline import encodable

SHRINK_ATTEMPTS: Final = 200
"""Replays the value shrinking of one family may make."""
PROBES: Final = ("snapshot", "append", "repair")
PROBE_APPEND: Final = {"op": "append", "type": "x-sessionspec/probe", "data": {}}


def reproduces(exchange: Exchange, trace: list[Any], same: Callable[[Divergence], bool]) -> Divergence | None:
    """Replay `trace`; the first divergence `same` accepts. A divergence of another family on the way is passed over
    as the search passes over a known one (the replay goes on while both sessions are still alike)."""
    exchange.begin("machine")
    exchange.known = lambda divergence: not same(divergence)
    try:
        for request in trace:
            exchange.send(request)
        exchange.flush()
    except DivergenceFound as found:
        return found.divergence if same(found.divergence) else None
    return None


def minimize(exchange: Exchange, divergence: Divergence, *, deadline: float | None = None) -> Divergence:
    """The divergence cut to its shortest trace, then shrunk inside its last request (see the module docstring)."""
    known = exchange.known
    try:
        best = cut(exchange, divergence, deadline)
        earlier = already_apart(exchange, best)
        if earlier is not None:  # the sessions differed before the request: the fault is what a snapshot shows
            best = cut(exchange, earlier, deadline)
        shrunk = shrink_values(exchange, best, deadline)
        if shrunk.trace[-1:] != best.trace[-1:] and len(shrunk.trace) > 2:
            # A smaller last request may need less before it (a replace of position 0 needs one node, of 2 three).
            shrunk = cut(exchange, shrunk, deadline)
        best = shrunk
    finally:
        exchange.known = known
    best.source, best.id = divergence.source, divergence.id
    return best


def already_apart(exchange: Exchange, divergence: Divergence) -> Divergence | None:
    """The divergence a snapshot shows just before the diverging request, if the two sessions already differed there:
    a request that diverges only because an earlier one left the testee's session wrong is a symptom, and the family
    is the earlier fault's (one planted bug, one family)."""
    if len(divergence.trace) < 2 or op_of(divergence.trace[-1]) == "snapshot":
        return None
    probe = [*divergence.trace[:-1], {"op": "snapshot"}]
    return reproduces(exchange, probe, lambda found: found.op == "snapshot" and len(found.trace) == len(probe))


def _past(deadline: float | None) -> bool:
    return deadline is not None and time.monotonic() > deadline


def cut(exchange: Exchange, divergence: Divergence, deadline: float | None = None) -> Divergence:
    """Requests removed while the family still shows: snapshots, then halving runs, then single requests; the last
    (the diverging request) always stays."""
    family = divergence.family

    def same(found: Divergence) -> bool:
        return found.family == family

    trace = [r for r in divergence.trace[:-1] if op_of(r) != "snapshot"] + divergence.trace[-1:]
    best = reproduces(exchange, trace, same) or divergence
    trace = best.trace
    for candidate in (alone(trace), unseeded(trace)):  # the diverging request in a fresh session; the seed as appends
        attempt = reproduces(exchange, candidate, same) if candidate is not None else None
        if attempt is not None and len(attempt.trace) < len(trace):
            best, trace = attempt, attempt.trace
            break
    length = max(1, (len(trace) - 1) // 2)
    while not _past(deadline):
        # From the first request on: a trace can begin with requests that left no session (a refused create).
        removed, position, seqs = False, 0, accepted_seqs(trace)
        while position < len(trace) - 1 and not _past(deadline):
            stop = min(position + length, len(trace) - 1)
            attempt = next((found for candidate in cuts(trace, position, stop, seqs) if _starts(candidate)
                            and (found := reproduces(exchange, candidate, same)) is not None
                            and len(found.trace) < len(trace)), None)
            if attempt is not None:
                best, trace, removed, seqs = attempt, attempt.trace, True, accepted_seqs(attempt.trace)
            else:
                position += length
        if length > 1:
            length //= 2
        elif not removed:
            break
    return best


def _starts(trace: list[Any]) -> bool:
    """Whether `trace` begins with a create the reference accepts: a replay must not lean on a session the testee
    kept from before. A create the reference refuses leaves a conformant testee with no session, but a testee that
    keeps its old one after a refused create (a fault of its own) would make such a trace diverge only in the
    process the minimizer used, and its reproduction line would show nothing."""
    if not trace or op_of(trace[0]) != "create":
        return False
    line = encodable(trace[0])
    return line is not None and reference_answer(ReferenceExecutor(), line).get("ok") is True


# --- values inside the diverging request ------------------------------------------------------

def _size(value: Any) -> int:
    """How much there is of a JSON value: every node counts one, a string one per character."""
    count, stack = 0, [value]
    while stack:
        item = stack.pop()
        count += 1 + (len(item) if isinstance(item, str) else 0)
        if isinstance(item, dict):
            stack.extend(item.values())
            count += len(item)
        elif isinstance(item, list):
            stack.extend(item)
    return count


def _simpler(value: Any) -> Iterator[Any]:
    """Values simpler than `value`, simplest first: a container emptied or one of its children, shorter, or a
    plain scalar."""
    if isinstance(value, dict):
        yield {}
        yield from value.values()
        for key in value:
            yield {k: v for k, v in value.items() if k != key}
    elif isinstance(value, list):
        yield []
        yield from value
        for index in range(len(value)):
            yield value[:index] + value[index + 1:]
    elif isinstance(value, str):
        if value:
            yield ""
            yield value[: len(value) // 2]
    elif isinstance(value, (int, float)) and not isinstance(value, bool) and value != 0:
        yield 0
    yield None


def _paths(value: Any) -> Iterator[tuple[Any, ...]]:
    """Every path into `value`, breadth first (the root's children before theirs), never the request's op."""
    queue: list[tuple[tuple[Any, ...], Any]] = [((), value)]
    while queue:
        path, item = queue.pop(0)
        if path and path != ("op",):
            yield path
        children = item.items() if isinstance(item, dict) else enumerate(item) if isinstance(item, list) else ()
        queue.extend(((*path, key), child) for key, child in children if path or key != "op")


def _get(value: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        value = value[key]
    return value


def _put(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    """A copy of `value` with the item at `path` replaced by `new` (only the containers on the path are copied)."""
    if not path:
        return new
    head, rest = path[0], path[1:]
    copy: Any = dict(value) if isinstance(value, dict) else list(value)
    copy[head] = _put(value[head], rest, new)
    return copy


def candidates(request: Any) -> Iterator[Any]:
    """Requests smaller than `request`, one change each, the changes nearest its root first: a key of the request
    left out (never its op), then each value inside it made simpler."""
    size = _size(request)
    if isinstance(request, dict):
        yield from ({k: v for k, v in request.items() if k != key} for key in request if key != "op")
    for path in _paths(request):
        try:
            here = _get(request, path)
        except (KeyError, IndexError, TypeError):
            continue
        for simpler in _simpler(here):
            changed = _put(request, path, simpler)
            if _size(changed) < size:
                yield changed


def shrink_values(exchange: Exchange, divergence: Divergence, deadline: float | None = None,
                  attempts: int = SHRINK_ATTEMPTS) -> Divergence:
    """The last request made smaller while the testee answers it the same way, it breaks only rules the request
    before it broke (never another one: a wrong role must not become a missing message), and the divergence keeps
    its level (a required fault is never shrunk into a recommended one)."""
    best = divergence
    if not best.trace or not isinstance(best.trace[-1], dict):
        return best

    def same(found: Divergence) -> bool:
        rules = {b.rule for b in found.breaches}
        return (found.op == divergence.op and found.answered == divergence.answered and bool(rules)
                and rules <= {b.rule for b in best.breaches} and (found.level == best.level or best.level != "required"))

    while attempts > 0 and not _past(deadline):
        for candidate in candidates(best.trace[-1]):
            attempts -= 1
            found = reproduces(exchange, [*best.trace[:-1], candidate], same) if encodable(candidate) is not None \
                else None
            if found is not None:
                best = found
                break
            if attempts <= 0 or _past(deadline):
                return best
        else:
            return best
    return best


# --- what the testee's session is left as -------------------------------------------------------

def aftermath(exchange: Exchange, divergence: Divergence) -> dict[str, str]:
    """After the trace, a snapshot, a valid append and a repair of the log: "ok" or what the testee answered instead.

    The probes go to the testee alone, a process of its own started for them (the run's testee is left as it
    is), and nothing is compared (the states may differ by then): what matters is whether its session still
    works at all."""
    connection = Connection(exchange.connection.command, timeout=exchange.connection.timeout,
                            deadline=exchange.connection.deadline)
    reference = ReferenceExecutor()
    out: dict[str, str] = {}
    try:
        connection.start()
        for request in divergence.trace:
            line = encodable(request)
            if line is None:
                return {}
            reference_answer(reference, line)
            connection.request(line)
        events = reference_answer(reference, b'{"op":"snapshot"}').get("events", [])
        for name, request in (("snapshot", {"op": "snapshot"}), ("append", PROBE_APPEND),
                              ("repair", {"op": "repair", "events": events})):
            answer = connection.request(request)
            out[name] = "ok" if answer.get("ok") else _failed(answer)
    except TesteeFailure as failure:
        out.setdefault(next((probe for probe in PROBES if probe not in out), "snapshot"),
                       f"the testee failed: {failure.kind}")
    finally:
        connection.close()
    return out


def _failed(answer: dict[str, Any]) -> str:
    error = answer.get("error")
    if not isinstance(error, dict):
        return "fails"
    kind, message = str(error.get("kind")), str(error.get("message", ""))[:160]
    if kind == "unsupported":
        return "unsupported"
    return f"fails ({kind}: {message})"
