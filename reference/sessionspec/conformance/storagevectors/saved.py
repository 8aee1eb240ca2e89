"""The sessions the save check saves (SESSION-CONFORMANCE-STORAGE.2), and their committed layouts.

What the storage phase's save check (`storagephase.saves`) builds on the testee: valid appends and
replacements drawn by the conformance machine's generators (`testing.choose`, seeded, so a run is
reproducible), an agent log whose chunks the writers pack, every kind of chunk in runs of 1 to 4, a
run of 1,030 chunks (SQLite rows of at most 1,024 members: SESSION-CHUNK-ROWS.5), a run of 100 KiB
chunks (rows of at most 1 MiB), and a value nested 1,000 deep. Here, beside the storage vectors,
because each session's layout as the reference's writer lays it out is generated with them
(`expected_layouts`, `save-layouts.jsonl`: `layouts`). With the generated logs at the bounds
(`--profile ci`), also two sessions of one record at the record bound and one byte past it
(`bound_sessions`), which no layout describes: 64 MiB is no committed file.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

from sessionspec import live
from sessionspec.catalog import DEFAULT_CATALOG
from sessionspec.conformance.storagevectors import layouts
from sessionspec.conformance.storagevectors.bounds import RECORD_BOUND
from sessionspec.conformance.storagevectors.builders import agent_log
from sessionspec.conformance.storagevectors.cases import SUFFIX
from sessionspec.errors import SpecViolation
from sessionspec.jsontext import dumps
from sessionspec.testing.choose import replacement, seeded, valid_append
from sessionspec.testing.loops import ticking_clock
from sessionspec.testing.strategies import Request, View
from sessionspec.wire.executor import Executor
from sessionspec.wire.protocol import MAX_LINE_BYTES
from sessionspec.wire.storageops import BACKENDS

SEEDED: Final = (0, 1, 2)
DRAWN: Final = 30
"""Sessions drawn by the machine's generators, and requests drawn for each."""


def drawn_requests(seed: int, count: int = DRAWN) -> list[Request]:
    """Valid appends and replacements as the conformance machine draws them, each kept only if the store takes it and
    a load can read it back: an append of a type of no catalog, not marked ignorable, is taken by the store and
    refused by the load gate (SESSION-UNKNOWN-EVENT-GATE.1), so it is no test of a writer."""
    choose = seeded(seed)
    session = live.Session.create("drawn", clock=ticking_clock())
    out: list[Request] = []
    for _ in range(count):
        view = View.of(session)
        request = replacement(choose, view) if view.nodes and choose(4) == 0 else valid_append(choose, view)
        if request.get("type") not in DEFAULT_CATALOG.types and request.get("ignorable") is not True:
            continue
        try:
            session.append_request(copy.deepcopy(request))
        except SpecViolation:
            continue
        out.append(request)
    return out


def _appends(events: list[dict[str, Any]]) -> list[Request]:
    return [{key: value for key, value in event.items() if key not in ("seq", "time")} for event in events]


def chunk_run(count: int, size: int) -> list[Request]:
    """A turn whose step streams `count` text chunks of `size` characters each."""
    chunk = [{"type": "assistant/chunk", "data": {"turn": 1, "step": 1, "chunk": {
        "type": "text-delta", "index": 0, "text": chr(ord("a") + k % 26) * size}}} for k in range(count)]
    return [{"type": "turn/start", "data": {"turn": 1}}, {"type": "step/start", "data": {"turn": 1, "step": 1}}, *chunk]


def chunk_kinds() -> list[Request]:
    """A step streaming every kind of chunk a writer packs (SESSION-CHUNK-ROWS.6), in runs of 1 to 4: a tool call's
    deltas with its name and without (a packed tool row keeps `name` only when its chunks have one), reasoning and
    text. Runs of 1 and 2 stay verbatim, runs of 3 and 4 are packed, so the saved file's events hold every member's
    fields as appended whether or not the writer packed them."""
    def chunk(body: dict[str, Any]) -> Request:
        return {"type": "assistant/chunk", "data": {"turn": 1, "step": 1, "chunk": body}}

    named = [chunk({"type": "tool-call-delta", "index": 0, "id": "c1", "name": "read", "argumentsDelta": part})
             for part in ('{"pa', 'th":', '"a"', "}")]
    unnamed = [chunk({"type": "tool-call-delta", "index": 1, "id": "c2", "argumentsDelta": part}) for part in ("{", '"', "}")]
    reasoning = [chunk({"type": "reasoning-delta", "index": 0, "text": text}) for text in ("I ", "think")]
    text = [chunk({"type": "text-delta", "index": 0, "text": text}) for text in ("Done", ".", " ")]
    lone = [chunk({"type": "text-delta", "index": 1, "text": "!"})]
    return [{"type": "turn/start", "data": {"turn": 1}}, {"type": "step/start", "data": {"turn": 1, "step": 1}},
            *named, *unnamed, *reasoning, *text, *lone]


def deep_value(depth: int) -> list[Request]:
    value: Any = "leaf"
    for _ in range(depth):
        value = [value]
    return [{"type": "plugin/deep", "data": value, "ignorable": True}]


def builders() -> dict[str, Callable[[], list[Request]]]:
    """Each session the check saves, by name, and how its requests are built (only when it runs)."""
    return {**{f"drawn-{seed}": functools.partial(drawn_requests, seed) for seed in SEEDED},
            "agent-log": lambda: _appends([event for batch in agent_log(3) for event in batch]),
            "chunk-kinds": chunk_kinds, "chunks-1030": lambda: chunk_run(1_030, 1), "chunks-100k": lambda: chunk_run(12, 100 << 10),
            "deep-1000": lambda: deep_value(1_000)}


SHORT_FLOATS: Final = 10
"""Floats spelled `1e15` in the request and `1000000000000000.0` in the record (spec/01: the shortest round-trip form):
140 bytes more on disk than on the wire, so a `create` within the request line bound (64 MiB, SESSION-CONFORMANCE-
PROTOCOL.7) seeds a record past the record bound (64 MiB, SESSION-STORAGE-RECORD.1). No append can: its answer
carries the event, and an answer line is bounded at 64 MiB too."""


def bound_line(name: str, size: int) -> str:
    """The `create` request line (raw text: its spelling is the point) whose one seeded event is stored, as the
    reference's writer writes it, as a record of exactly `size` bytes: a string of `A`s and SHORT_FLOATS floats."""
    def event(text: str) -> dict[str, Any]:
        return {"type": "plugin/big", "seq": 0, "time": 1, "data": [text, *[1e15] * SHORT_FLOATS], "ignorable": True}

    record = dumps(event("A" * (size - len(dumps(event("")).encode()))))
    line = f'{{"op":"create","id":"save-{name}","seed":[{record.replace("1000000000000000.0", "1e15")}],"header":null}}'
    assert len(record.encode()) == size and len(line.encode()) <= MAX_LINE_BYTES, (name, size)
    return line


BOUNDS: Final = {"record-at": RECORD_BOUND, "record-past": RECORD_BOUND + 1}
"""The bound sessions (`--profile ci`): one record of exactly 64 MiB, which a writer writes and a reader loads, and one a
byte past, which a writer refuses before a byte is written (SESSION-STORAGE-RECORD.1), where it is one line."""


def bound_sessions() -> list[tuple[str, str]]:
    """The bound sessions: name and `create` line, each built when it runs (64 MiB)."""
    return [(name, bound_line(name, size)) for name, size in BOUNDS.items()]


def bound_answer(name: str, backend: str) -> dict[str, Any]:
    """What the `save` of a bound session answers, as spec/07 states it (not as the reference's writer happens to
    answer, which would move along with a writer bug): a record at the bound is written in every backend; one a byte
    past it is refused where a record is one line (JSONL, zstd), and written in SQLite, whose row keeps the data apart
    from the envelope, within the bound (SESSION-SQLITE-ROW)."""
    if BOUNDS[name] <= RECORD_BOUND or backend == "sqlite":
        return {"ok": True}
    return {"ok": False, "error": {"kind": "json", "rule": "SESSION-STORAGE-RECORD.1",
                                   "message": f"record of {BOUNDS[name]} bytes exceeds {RECORD_BOUND}"}}


def names() -> list[str]:
    """The sessions' names, for `conform --list` and `--run`/`--skip` (`save:NAME:BACKEND`), without building them; the
    bound sessions last."""
    return [*builders(), *BOUNDS]


def sessions() -> list[tuple[str, list[Request]]]:
    """The sessions the check saves: name and requests."""
    return [(name, build()) for name, build in builders().items()]


def built_by_reference(name: str, requests: list[Request]) -> Executor:
    """The session `name` built by the reference's executor, as `serve --impl live` builds it on a create and appends;
    its `save` writes what the reference's writer writes."""
    executor = Executor(live.Session.create, "live", storage=BACKENDS)
    for request in [{"op": "create", "id": f"save-{name}", "seed": None, "header": None},
                    *({"op": "append", **request} for request in requests)]:
        if not executor.run(request).get("ok"):
            raise ValueError(f"save session {name}: the reference refuses {str(request)[:200]}")
    return executor


def save(executor: Executor, path: Path, backend: str) -> Path:
    if not executor.run({"op": "save", "path": str(path), "backend": backend}).get("ok"):
        raise ValueError(f"the reference does not save {path} as {backend}")
    return path


def expected_layouts(workdir: Path) -> bytes:
    """`save-layouts.jsonl` (`vectors generate`): each session saved in each backend by the reference, and the file's
    layout."""
    entries = []
    for name, requests in sessions():
        executor = built_by_reference(name, requests)
        for backend in BACKENDS:
            path = save(executor, workdir / f"{name}{SUFFIX[backend]}", backend)
            entries.append((name, backend, layouts.layout(path, backend)))
            path.unlink()
    return layouts.render(entries)
