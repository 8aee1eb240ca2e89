"""The crash trial (SESSION-CONFORMANCE-STORAGE.3, the Jepsen rule): nothing an attached testee acknowledged is lost.

Per declared backend, a testee of its own creates a session, attaches it to a new log and appends
an agent log's events; at a point drawn from a seeded random generator (the same seed, the same
kills) its process group is killed with SIGKILL, with none or a few appends still in flight. The
log is then loaded by the reference (it must not refuse it, and must hold every acknowledged
event, exactly, at its seq; anything after is at most a torn tail, which the reference's repair
cuts) and by a fresh testee (which must answer what the reference's gate answers). As in
tests/test_07_crash.py, where the project's own writer is killed in the same way.
"""

from __future__ import annotations

import random
import shutil
import time
from pathlib import Path
from typing import Any, Final

from sessionspec import live, storage
from sessionspec.conformance.storagevectors.builders import agent_log
from sessionspec.conformance.storagevectors.cases import SUFFIX
from sessionspec.conformance.vectoroutcome import VectorOutcome
from sessionspec.errors import SpecViolation
from sessionspec.levels import Level
from sessionspec.wire.client import Connection, TesteeFailure
from sessionspec.wire.compare import differences
from sessionspec.wire.divergence import Divergence, divergence
from sessionspec.wire.storageops import ACKNOWLEDGED_DURABLE, load_answer

TURNS: Final = 4
IN_FLIGHT: Final = (0, 3)
"""Each backend's trials: killed right after an acknowledgement (nothing in flight: a write-behind is caught), and
with up to three appends sent and not yet answered (a kill inside an append)."""


def requests() -> list[dict[str, Any]]:
    """The appends of an agent log of TURNS turns (its chunk runs packed by a writer that packs within a batch)."""
    return [{key: value for key, value in event.items() if key not in ("seq", "time")}
            for batch in agent_log(TURNS) for event in batch]


def _killed(command: list[str], path: Path, backend: str, appends: list[dict[str, Any]], kill_after: int,
            in_flight: int, timeout: float) -> tuple[list[Any], list[Any]]:
    """Run one trial: the acknowledged events, and the requests sent (the trace). Raises TesteeFailure when the testee
    fails before the kill."""
    connection = Connection(command, timeout=timeout)
    connection.start()
    sent: list[Any] = [{"op": "create", "id": "crash", "seed": None, "header": None},
                       {"op": "attach", "path": str(path), "backend": backend}]
    try:
        connection.request({"op": "hello"})
        for request in sent:
            answer = connection.request(request)
            if not answer.get("ok"):
                raise TesteeFailure("refused", f"{request['op']} refused: {answer.get('error')}")
        acknowledged = []
        for request in appends[:kill_after]:
            sent.append({"op": "append", **request})
            answer = connection.request(sent[-1])
            # Every append is an agent log's, valid: one refused while attached (its log failing, say) is a failure
            # before the kill, never an append that was simply not acknowledged.
            if not answer.get("ok"):
                raise TesteeFailure("refused", f"append {len(sent) - 2} refused while attached: {answer.get('error')}")
            acknowledged.append(answer["event"])
        for request in appends[kill_after:kill_after + in_flight]:
            sent.append({"op": "append", **request})
            connection.send(sent[-1])
    finally:
        connection.abandon("killed", "the crash trial's SIGKILL")  # the whole process group, at once
    return acknowledged, sent


def _judge(path: Path, acknowledged: list[Any], fresh: Connection) -> list[str]:
    """Why the log after the kill breaks SESSION-CONFORMANCE-STORAGE.3 (empty: it holds)."""
    try:
        loaded = storage.load(path, create=live.Session.create)
    except (SpecViolation, storage.Unreadable) as error:
        return [f"file: expected a log the reference loads, got a refusal: {str(error)[:300]}"]
    events = load_answer(loaded)["events"]
    kept = events[:len(acknowledged)]
    if kept != acknowledged:
        lost = next((seq for seq, event in enumerate(acknowledged) if seq >= len(kept) or kept[seq] != event), None)
        return [f"events: expected the {len(acknowledged)} acknowledged events, got {len(events)} (the first lost or "
                f"changed: seq {lost})"]
    copy = path.with_name(f"repaired-{path.name}")
    shutil.copyfile(path, copy)
    try:
        storage.repair(copy, create=live.Session.create)
    except (SpecViolation, storage.Unreadable) as error:
        return [f"repair: expected the reference to repair the torn tail, got {str(error)[:300]}"]
    expected = load_answer(loaded)
    try:
        answer = fresh.request({"op": "load", "path": str(path), "session": None})
    except TesteeFailure as failure:
        answer = failure.answer()
    return [f"load: {why}" for why in differences("load", expected, answer)]


def crash_trials(command: list[str], backends: tuple[str, ...], workdir: Path, *, timeout: float,
                 seed: int) -> list[VectorOutcome]:
    """Each declared backend's trials, one case per backend; one fresh testee loads every trial's log."""
    workdir.mkdir(parents=True, exist_ok=True)
    appends = requests()
    out: list[VectorOutcome] = []
    fresh = Connection(command, timeout=timeout)
    try:
        fresh.start()
        fresh.request({"op": "hello"})
    except TesteeFailure as failure:
        fresh.close()
        why = [f"a fresh testee to load the logs could not be started: {failure.message}"]
        return [VectorOutcome(f"crash:{backend}", "failed", 0.0, divergence("vector", f"crash:{backend}", "load", {"ok": True},
                                                                       failure.answer(), [], why),
                        rules=(ACKNOWLEDGED_DURABLE,), level=Level.RECOMMENDED.value) for backend in backends]
    try:
        for backend in backends:
            begun = time.perf_counter()
            found = _backend_trials(command, backend, workdir, appends, seed, timeout, fresh)
            out.append(VectorOutcome(f"crash:{backend}", "passed" if found is None else "failed",
                               time.perf_counter() - begun, found, rules=(ACKNOWLEDGED_DURABLE,),
                               level=Level.RECOMMENDED.value))
    finally:
        fresh.close()
    return out


def _backend_trials(command: list[str], backend: str, workdir: Path, appends: list[dict[str, Any]], seed: int,
                    timeout: float, fresh: Connection) -> Divergence | None:
    chooser = random.Random(f"{seed}:{backend}")
    try:
        for number, in_flight in enumerate(IN_FLIGHT):
            kill_after = chooser.randrange(1, len(appends) - in_flight)
            found = _trial(command, backend, workdir / f"{backend}-{number}{SUFFIX[backend]}", appends, kill_after,
                           in_flight, timeout, fresh)
            if found is not None:
                return found
    except TesteeFailure as failure:
        return divergence("vector", f"crash:{backend}", "attach", {"ok": True}, failure.answer(), [],
                          [f"the testee failed before the kill: {failure.message}"])
    return None


def _trial(command: list[str], backend: str, path: Path, appends: list[dict[str, Any]], kill_after: int,
           in_flight: int, timeout: float, fresh: Connection) -> Divergence | None:
    """One kill; on a loss, the shortest kill that still shows it (the fewest appends before it), as the divergence."""
    path.unlink(missing_ok=True)
    acknowledged, sent = _killed(command, path, backend, appends, kill_after, in_flight, timeout)
    why = _judge(path, acknowledged, fresh)
    if not why:
        return None
    for shorter in range(1, kill_after):  # minimized: the fewest acknowledged appends that lose one
        again = path.with_name(f"short-{path.name}")
        again.unlink(missing_ok=True)
        short_acknowledged, short_sent = _killed(command, again, backend, appends, shorter, in_flight, timeout)
        short_why = _judge(again, short_acknowledged, fresh)
        if short_why:
            sent, why = short_sent, short_why
            break
        if shorter >= 3:
            break
    why = [*why, f"(its process group killed with SIGKILL after {len(sent) - 2 - in_flight} answered appends, "
                 f"{in_flight} in flight)"]
    found = divergence("vector", f"crash:{backend}", "attach", {"ok": True}, {"ok": True}, sent, why)
    found.named, found.level = ACKNOWLEDGED_DURABLE, Level.RECOMMENDED.value
    return found
