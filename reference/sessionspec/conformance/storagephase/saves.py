"""The save check (SESSION-CONFORMANCE-STORAGE.2): sessions built on the testee, saved in each declared backend, and
each file read back by the reference.

The sessions are `storagevectors.saved`'s (the machine's draws, an agent log, chunks of every kind and
at the bounds, a deep value). Each request goes
to the reference and the testee through the exchange (their answers compared as always), then
`save`. The file must load through the reference's gate to the session's events, and be the bytes
the reference's writer writes for those events (the header line, every record's canonical key
order, the rows packed as spec/07 packs them; zstd compared as its plaintext, SQLite as its rows).
A divergence is minimized to the shortest prefix of the session's requests that still shows it. The file
is also held to the session's committed layout (`storagevectors.layouts`), which the reference's own writer
cannot move along with it.

With `--profile ci`, the bound sessions too (`check_bound_saves`): a record at the record bound must be written
and load back, one a byte past it refused where it is one line (JSONL, zstd) with no file left behind, since a
writer that acknowledges it has written a log no reader loads (SESSION-STORAGE-RECORD.1).
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import zstandard

from sessionspec import live, storage
from sessionspec.conformance.storagephase.loads import LARGE_TIMEOUT, breaches
from sessionspec.conformance.storagevectors import layouts
from sessionspec.conformance.storagevectors.cases import SUFFIX
from sessionspec.conformance.storagevectors.saved import bound_answer, bound_sessions, builders
from sessionspec.conformance.vectoroutcome import VectorOutcome
from sessionspec.errors import SpecViolation
from sessionspec.jsonvalue import thaw
from sessionspec.testing.strategies import Request
from sessionspec.wire.compare import same_json
from sessionspec.wire.divergence import Divergence, divergence
from sessionspec.wire.exchange import DivergenceFound, Exchange
from sessionspec.wire.protocol import Answer
from sessionspec.wire.storageops import SAVES_WHAT_LOADS


def _plain(events: Any) -> list[Any]:
    return [{k: v for k, v in thaw(event.to_json()).items() if k != "time"} for event in events]


def _zstd_plain(path: Path) -> bytes:
    with path.open("rb") as stream, zstandard.ZstdDecompressor().stream_reader(stream, read_across_frames=True) as plain:
        return plain.read()


def _sqlite_rows(path: Path) -> list[Any]:
    with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as connection:
        return [connection.execute("PRAGMA user_version").fetchall(), connection.execute("PRAGMA application_id").fetchall(),
                connection.execute("SELECT id, version, created_at, cwd, parent_session, seed_length, origin, "
                                   "delegation_depth, agent_preset FROM sessions ORDER BY id").fetchall(),
                connection.execute("SELECT * FROM events ORDER BY session_id, seq").fetchall()]


def _same_bytes(path: Path, canonical: Path, backend: str) -> bool:
    if backend == "jsonl":
        return path.read_bytes() == canonical.read_bytes()
    if backend == "jsonl.zstd":
        return _zstd_plain(path) == _zstd_plain(canonical)
    return _sqlite_rows(path) == _sqlite_rows(canonical)


def judge_file(path: Path, backend: str, events: list[Any], layout: Any = None) -> list[str]:
    """Why the file the testee saved is not what the reference's writer writes for the session (empty: it is); with
    `layout`, the session's committed layout (`layouts`), also why its records or frames are not laid out so."""
    try:
        loaded = storage.load(path, create=live.Session.create)
    except (SpecViolation, storage.Unreadable) as error:
        return [f"file: expected a log the reference loads, got a refusal: {str(error)[:300]}"]
    why = []
    if loaded.format != backend:
        why.append(f"format: expected {backend}, got {loaded.format}")
    got = _plain(loaded.events)
    if not same_json(got, [{k: v for k, v in event.items() if k != "time"} for event in events]):
        why.append(f"events: expected the session's {len(events)} events, got {len(got)} that differ")
    canonical = path.with_name(f"canonical-{path.name}")
    canonical.unlink(missing_ok=True)
    storage.save(canonical, loaded.header, loaded.events, format=backend)
    if not why and not _same_bytes(path, canonical, backend):
        why.append("bytes: expected the bytes the reference's writer writes for these events (header line, "
                   "canonical key order, packed rows), got others")
    if not why and layout is not None:
        why.extend(layouts.differences(path, backend, layout))
    return why


def _file_divergence(exchange: Exchange, name: str, backend: str, answer: Answer, why: list[str]) -> Divergence:
    """A saved file judged wrong, as the family `save:SESSION-CONFORMANCE-STORAGE.2 differs:...`: its trace is the
    session's requests and the save in this backend (a bound session's `create` is a raw line, kept as it is)."""
    trace = [request for request in exchange.trace
             if not isinstance(request, dict) or request.get("op") != "save" or request["backend"] == backend]
    found = divergence("vector", f"save:{name}:{backend}", "save", answer, answer, trace, why)
    found.named = SAVES_WHAT_LOADS
    return found


def _outcomes(name: str, backends: tuple[str, ...], found: dict[str, Divergence], seconds: float) -> list[VectorOutcome]:
    """One save case a backend: failed with its divergence, or passed."""
    return [VectorOutcome(f"save:{name}:{backend}", "failed" if backend in found else "passed", seconds, found.get(backend),
                          rules=(SAVES_WHAT_LOADS,), level="required") for backend in backends]


def _attempt(exchange: Exchange, name: str, requests: list[Request], backends: tuple[str, ...],
             workdir: Path, laid: layouts.Layouts | None = None) -> dict[str, Divergence]:
    """One session on both sides, saved by the testee in each backend and each file judged: the divergences by
    backend (the exchange's own, for a request answered otherwise, under each). `laid`: the committed layouts, for
    the whole session only (a shorter prefix, while minimizing, has none)."""
    exchange.begin("vector", f"save:{name}")
    try:
        exchange.send({"op": "create", "id": f"save-{name}", "seed": None, "header": None})
        for request in requests:
            exchange.send({"op": "append", **request})
        snapshot = exchange.send({"op": "snapshot"})
        paths = {}
        for backend in backends:
            paths[backend] = path = workdir / f"{name}{SUFFIX[backend]}"
            path.unlink(missing_ok=True)
            exchange.send({"op": "save", "path": str(path), "backend": backend}, expected={"ok": True})
        exchange.flush()
    except DivergenceFound as diverged:
        return dict.fromkeys(backends, diverged.divergence)
    found = {}
    for backend, path in paths.items():
        why = judge_file(path, backend, list(snapshot.get("events", [])), (laid or {}).get((name, backend)))
        if why:
            found[backend] = _file_divergence(exchange, name, backend, {"ok": True}, why)
    return found


def _shortest(exchange: Exchange, name: str, requests: list[Request], backend: str, workdir: Path,
              found: Divergence) -> Divergence:
    """The divergence of the shortest prefix of `requests` that still shows one of the same family (halving)."""
    low, high, best = 0, len(requests), found
    while low < high:
        middle = (low + high) // 2
        again = _attempt(exchange, name, requests[:middle], (backend,), workdir).get(backend)
        if again is not None and again.family == found.family:
            high, best = middle, again
        else:
            low = middle + 1
    return best


def check_saves(exchange: Exchange, backends: tuple[str, ...], workdir: Path,
                chosen: Callable[[str, str], bool] = lambda name, backend: True,
                laid: layouts.Layouts | None = None) -> list[VectorOutcome]:
    """Every session saved in every declared backend: one case each, a divergence minimized (a layout's divergence is
    the whole session's: its layout is committed for the whole); only the sessions and backends `chosen`
    (`--run`/`--skip`, by `save:NAME:BACKEND`) are built and saved; `laid`, the committed layouts."""
    workdir.mkdir(parents=True, exist_ok=True)
    out: list[VectorOutcome] = []
    for name, build in builders().items():
        if exchange.past_deadline:
            return out
        backends_of = tuple(backend for backend in backends if chosen(name, backend))
        if not backends_of:
            continue
        requests, started = build(), time.perf_counter()
        found = _attempt(exchange, name, requests, backends_of, workdir, laid)
        for backend, divergent in list(found.items()):
            found[backend] = _shortest(exchange, name, requests, backend, workdir, divergent)
        seconds = (time.perf_counter() - started) / len(backends_of)
        out.extend(_outcomes(name, backends_of, found, seconds))
    return out


def _bound_attempt(exchange: Exchange, name: str, line: str, backends: tuple[str, ...],
                   workdir: Path) -> dict[str, Divergence]:
    """One bound session on both sides, saved by the testee in each backend: the answer compared with the one spec/07
    states (`saved.bound_answer`), then the file judged; a refused save must leave none."""
    exchange.begin("vector", f"save:{name}")
    paths = {backend: workdir / f"{name}{SUFFIX[backend]}" for backend in backends}
    try:
        exchange.send(line)
        current = exchange.oracle.current()
        for backend, path in paths.items():
            path.unlink(missing_ok=True)
            answer = bound_answer(name, backend)
            exchange.send({"op": "save", "path": str(path), "backend": backend}, expected=answer,
                          breaches=() if answer["ok"] else breaches((answer["error"]["rule"],)))
        exchange.flush()
    except DivergenceFound as diverged:
        return dict.fromkeys(backends, diverged.divergence)
    events = current[1] if current is not None else []
    found = {}
    for backend, path in paths.items():
        answer = bound_answer(name, backend)
        why = judge_file(path, backend, events) if answer["ok"] else (
            [f"file: the save was refused ({answer['error']['rule']}), yet a file is left at the path"]
            if path.exists() else [])
        path.unlink(missing_ok=True)  # 64 MiB each; the trace makes it again
        if why:
            found[backend] = _file_divergence(exchange, name, backend, answer, why)
    return found


def check_bound_saves(exchange: Exchange, backends: tuple[str, ...], workdir: Path,
                      chosen: Callable[[str, str], bool] = lambda name, backend: True) -> list[VectorOutcome]:
    """The bound sessions (`saved.bound_sessions`) saved in every declared backend chosen, one case each; a session of
    one record has nothing to minimize."""
    workdir.mkdir(parents=True, exist_ok=True)
    out: list[VectorOutcome] = []
    for name, line in bound_sessions():
        backends_of = tuple(backend for backend in backends if chosen(name, backend))
        if exchange.past_deadline or not backends_of:
            continue
        started, timeout = time.perf_counter(), exchange.connection.timeout
        exchange.connection.timeout = max(timeout, LARGE_TIMEOUT)  # 64 MiB to take and write: seconds, not a hang
        try:
            found = _bound_attempt(exchange, name, line, backends_of, workdir)
        finally:
            exchange.connection.timeout = timeout
        seconds = (time.perf_counter() - started) / len(backends_of)
        out.extend(_outcomes(name, backends_of, found, seconds))
    return out
