"""The storage capability of SCP (spec/10, "Storage capability"): `load`, `save`, `attach` and `repair-file`.

Half of a session store is its persistence, and a reader or writer in another language is judged
the way its session is: it answers requests, and the runner compares the answers with the
reference's. A testee declares in `hello` which backends it reads and writes (`"storage":
["jsonl", "jsonl.zstd", "sqlite"]`); a storage op for a backend it did not declare is refused as
`unsupported` (SESSION-CONFORMANCE-PROTOCOL.12), so a testee without persistence loses nothing.

The protocol stands apart from `sessionspec.storage` (tests/test_layout.py): the backends are
loaded by name when a storage op first arrives, so `sessionspec serve` answering `hello` and the
session ops loads no storage code at all (tests/test_startup.py). What a storage op does to a
file is a `Codec`'s: ours is the project's own reader and writer; a planted storage bug
(`sessionspec.testing.planted_storage`) is a codec wrong in one way, carried by its session class
as `storage_codec`.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Mapping
from typing import Any, Final

from sessionspec.errors import Kind, SpecViolation
from sessionspec.jsonvalue import thaw
from sessionspec.preview import shown
from sessionspec.rules import RULES, check, define, fail

STORAGE_OPS: Final = ("load", "save", "attach", "repair-file")
BACKENDS: Final = ("jsonl", "jsonl.zstd", "sqlite")
"""The backend names a testee may declare: `sessionspec.storage.formats.FORMATS`, spelt here so that answering
`hello` loads no storage code (a test holds the two equal)."""
STORAGE_MODULE: Final = "sessionspec.storage"
STORE_MODULE: Final = "sessionspec.live"
"""The store's session, whose `load` is the store's own (`Codec.load`); loaded with the storage code, as it imports it."""

K = Kind
STORAGE_SHAPE = define("SESSION-CONFORMANCE-PROTOCOL.11", K.ENVELOPE,
                       "load and repair-file carry exactly path and session; save and attach exactly path and backend")
UNDECLARED = define("SESSION-CONFORMANCE-PROTOCOL.12", K.UNSUPPORTED,
                    "a storage op for a backend the testee's hello does not declare is answered unsupported")
NO_LOG = define("SESSION-CONFORMANCE-PROTOCOL.13", K.HEADER,
                "a load or repair-file of a path that holds no session log is refused as header")
EXISTS = define("SESSION-CONFORMANCE-PROTOCOL.14", K.HEADER,
                "a save or attach to a path where a file already is is refused as header: a log is never overwritten")
LOADS_AS_REFERENCE = define("SESSION-CONFORMANCE-STORAGE.1", K.INTERNAL,
                            "load answers what the reference's load gate answers for the same file")
SAVES_WHAT_LOADS = define("SESSION-CONFORMANCE-STORAGE.2", K.INTERNAL,
                          "save writes a log the reference loads to the same header and events, byte rules holding")
ACKNOWLEDGED_DURABLE = define("SESSION-CONFORMANCE-STORAGE.3", K.INTERNAL,
                              "an append acknowledged on an attached session survives SIGKILL")
REPAIRS_AS_REFERENCE = define("SESSION-CONFORMANCE-STORAGE.4", K.INTERNAL,
                              "repair-file commits the reference's cut and closers")


def _storage() -> Any:
    """`sessionspec.storage`, loaded when a storage op first needs it (never at a testee's start)."""
    return importlib.import_module(STORAGE_MODULE)


def torn_json(torn: Any) -> dict[str, Any] | None:
    """A torn tail on the wire: where it starts (line, None in SQLite; seq) and why, for people (never compared)."""
    if torn is None:
        return None
    return {"line": torn.line, "seq": torn.seq, "reason": torn.reason}


def load_answer(result: Any) -> dict[str, Any]:
    """SESSION-CONFORMANCE-STORAGE.1: what a load answers, the reference's `LoadResult` as JSON."""
    return {"ok": True, "format": result.format, "header": thaw(result.header),
            "events": [thaw(event.to_json()) for event in result.events], "torn": torn_json(result.torn),
            "closers": [thaw(event.to_json()) for event in result.closers]}


class Codec:
    """What the storage ops do to a file: the project's own reader and writer (spec/07)."""

    def load(self, path: str, session_id: str | None, create: Callable[..., Any]) -> Any:
        """The store's own session (`live`) loads a log as a program using the store does: `storage.load` with no
        factory, its fast form first (storage/storedlog.py), so the storage vectors reach the code users run. Any other
        session seeds what the gate itself read."""
        store = create == importlib.import_module(STORE_MODULE).Session.create
        return _storage().load(path, session_id=session_id, create=None if store else create)

    def save(self, path: str, header: Any, events: Any, backend: str) -> Any:
        """A new log at `path`; returns the open log, to which an attached session appends."""
        return _storage().save(path, header, events, format=backend)

    def append(self, log: Any, events: list[Any]) -> None:
        """SESSION-STORAGE-WRITE.2: durable (fsync or COMMIT) when this returns."""
        log.append(events)

    def repair(self, path: str, session_id: str | None, create: Callable[..., Any]) -> Any:
        """The plan a load makes, committed (SESSION-STORAGE-WRITE.4: only that plan); returns the plan."""
        storage = _storage()
        plan = storage.load(path, session_id=session_id, create=create)
        storage.repair(path, session_id=session_id, create=create, plan=plan)
        return plan


class GateCodec(Codec):
    """Every log read by the load gate itself and seeded by the session's `create`, never the store's fast form: the
    reference's answer, which the storage vectors record (`storagevectors.vectorfiles`)."""

    def load(self, path: str, session_id: str | None, create: Callable[..., Any]) -> Any:
        return _storage().load(path, session_id=session_id, create=create)


def codec_of(factory: Callable[..., Any]) -> Codec:
    """The codec an implementation's session class carries (`storage_codec`), else ours."""
    codec = getattr(getattr(factory, "__self__", None), "storage_codec", None)
    return codec if isinstance(codec, Codec) else Codec()


class StorageOps:
    """The storage ops of one executor: the backends it declares, its codec, and the log its session is attached to."""

    def __init__(self, backends: tuple[str, ...], factory: Callable[..., Any]) -> None:
        self.backends = backends
        self.factory = factory
        self.codec = codec_of(factory)
        self.attached: Any = None
        """The open log every later successful append is made durable in, before its answer (`attach`)."""

    def _path_and_session(self, request: Mapping[str, Any]) -> tuple[str, str | None]:
        # SESSION-CONFORMANCE-PROTOCOL.11: load and repair-file name a file and, in SQLite, a session (null: the only one).
        extra = sorted(key for key in set(request) - {"op", "path", "session"} if key != "x-time")
        check(not extra, STORAGE_SHAPE, f"{request['op']} has unknown keys {shown(extra)}")
        path, session = request.get("path"), request.get("session", ...)
        if not (isinstance(path, str) and path != "" and (session is None or isinstance(session, str))):
            fail(STORAGE_SHAPE, f"{request['op']} carries path, a string, and session, a string or null")
        return path, session

    def _path_and_backend(self, request: Mapping[str, Any]) -> tuple[str, str]:
        # SESSION-CONFORMANCE-PROTOCOL.11: save and attach name a new file and the backend to write it in.
        extra = sorted(key for key in set(request) - {"op", "path", "backend"} if key != "x-time")
        check(not extra, STORAGE_SHAPE, f"{request['op']} has unknown keys {shown(extra)}")
        path, backend = request.get("path"), request.get("backend")
        if not (isinstance(path, str) and path != "" and isinstance(backend, str)):
            fail(STORAGE_SHAPE, f"{request['op']} carries path and backend, both strings")
        # SESSION-CONFORMANCE-PROTOCOL.12: a backend not declared is not guessed at.
        check(backend in self.backends, UNDECLARED, f"backend {shown(backend)} is not one this testee declares "
                                                    f"({', '.join(self.backends) or 'none'})")
        # SESSION-CONFORMANCE-PROTOCOL.14: a log is never overwritten (SESSION-STORAGE-WRITE.1).
        check(not os.path.lexists(path), EXISTS, f"{path}: a file is already there; a save never overwrites")
        return path, backend

    def _declared(self, op: str) -> None:
        # SESSION-CONFORMANCE-PROTOCOL.12: a testee that declared no backend answers every storage op unsupported.
        check(bool(self.backends), UNDECLARED, f"{op}: this testee declares no storage backend")

    def _opened(self, path: str, action: Callable[[], Any]) -> Any:
        """`action` on the log at `path`: a file of an undeclared backend is unsupported (.12), none at all .13."""
        storage = _storage()
        try:
            backend = storage.detect(path)
        except storage.Unreadable as error:
            raise _unreadable(error) from None
        check(backend in self.backends, UNDECLARED, f"{path}: a {backend} log; this testee does not declare {backend}")
        try:
            return action()
        except storage.Unreadable as error:
            raise _unreadable(error) from None

    def load(self, request: Mapping[str, Any]) -> dict[str, Any]:
        self._declared("load")
        path, session = self._path_and_session(request)
        # SESSION-CONFORMANCE-STORAGE.1: the testee's own gate; commits nothing.
        return load_answer(self._opened(path, lambda: self.codec.load(path, session, self.factory)))

    def repair_file(self, request: Mapping[str, Any]) -> dict[str, Any]:
        self._declared("repair-file")
        path, session = self._path_and_session(request)
        # SESSION-CONFORMANCE-STORAGE.4: the cut and closers committed are the ones a load shows.
        plan = self._opened(path, lambda: self.codec.repair(path, session, self.factory))
        return {"ok": True, "closers": [thaw(event.to_json()) for event in plan.closers], "torn": torn_json(plan.torn)}

    def save(self, request: Mapping[str, Any], session: Any, *, attach: bool = False) -> dict[str, Any]:
        self._declared(str(request["op"]))
        path, backend = self._path_and_backend(request)
        # SESSION-CONFORMANCE-STORAGE.2: the session's header and events, as the reference would write them.
        log = self.codec.save(path, session.header, list(session.events), backend)
        self.attached = log if attach else self.attached
        return {"ok": True}

    def persist(self, event: Any) -> None:
        """SESSION-CONFORMANCE-STORAGE.3: an attached session's appended event, durable before the append is answered."""
        if self.attached is not None:
            self.codec.append(self.attached, [event])

    def detach(self) -> None:
        """A create replaces the session: the log the old one was attached to is left as it is."""
        self.attached = None


def _unreadable(error: Any) -> SpecViolation:
    """A log the storage layer cannot open at all, refused with the rule that refuses it (its kind), else .11."""
    rule = getattr(error, "rule", None)
    if isinstance(rule, str) and rule in RULES:
        return SpecViolation(rule, RULES[rule].kind, str(error))
    return SpecViolation(NO_LOG, K.HEADER, f"{error} (SESSION-CONFORMANCE-PROTOCOL.13: no session log to open)")

