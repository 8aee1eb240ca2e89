"""The SQLite backend (notes §4.3): the upstream's schema, row encoding and transactions.

One database holds many sessions. Its identity (application id 0x44534850, `user_version` 17)
is checked before anything is read or written, and any other version is refused with the
direction named (bump-and-reject: there is no migration, so reading a different physical
format would mean guessing). Each durable batch is one `BEGIN IMMEDIATE` transaction in WAL mode
with `synchronous = FULL`, so an acknowledged batch survives a crash and a torn one never appears.
"""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import zstandard

from sessionspec.envelope import HEADER_KEYS, Event
from sessionspec.errors import Kind, SpecViolation
from sessionspec.jsonvalue import MAX_SAFE_INTEGER, FrozenDict, Json, is_nonneg_safe_int, thaw
from sessionspec.rules import define
from sessionspec.storage import formats
from sessionspec.storage.chunkrows import ROW_TAGS, check_storable, pack
from sessionspec.storage.durable import PUBLISH, STALE
from sessionspec.storage.gate import HEADER_IDENTITY, SEQ, Scanner, TornTail, header_from_record, refuse
from sessionspec.storage.losslessparse import decode_utf8, dumps, parse
from sessionspec.storage.records import as_events, checked_header

SCHEMA_VERSION = define("SESSION-SQLITE-SCHEMA.1", Kind.VERSION, "user_version is 17; other versions are refused, naming the direction")
APPLICATION = define("SESSION-SQLITE-SCHEMA.2", Kind.VERSION, "application_id is 1146308688 (0x44534850)")
UNVERSIONED = define("SESSION-SQLITE-SCHEMA.3", Kind.VERSION, "a database without this identity, or not a database, is refused")
OBJECTS = define("SESSION-SQLITE-SCHEMA.4", Kind.VERSION, "the three STRICT tables have the required columns")
VARINT = define("SESSION-SQLITE-ROW.1", Kind.ENVELOPE, "source_event_seqs is NULL or a canonical varint BLOB of safe seqs")
DATA = define("SESSION-SQLITE-ROW.2", Kind.JSON, "data is JSON TEXT, or a zstd BLOB of JSON text")
DISCRIMINATOR = define("SESSION-SQLITE-ROW.3", Kind.ENVELOPE,
                       "ignorable is NULL or 1 on events; 0 only on packed rows, with a row tag and no surface columns")

USER_VERSION = 17
APPLICATION_ID = 1146308688
COMPRESS_FROM = 4096

DDL = (
    "CREATE TABLE persistence_state (singleton INTEGER PRIMARY KEY CHECK (singleton = 1), store_id TEXT NOT NULL) STRICT",
    "CREATE TABLE sessions (id TEXT PRIMARY KEY NOT NULL, version INTEGER NOT NULL, created_at INTEGER NOT NULL, "
    "cwd TEXT, parent_session TEXT, seed_length INTEGER, origin TEXT, delegation_depth INTEGER, agent_preset TEXT, "
    "incarnation TEXT NOT NULL, revision INTEGER NOT NULL) STRICT",
    "CREATE TABLE events (session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE, seq INTEGER NOT NULL, "
    "type TEXT NOT NULL, time INTEGER NOT NULL, data ANY, source_event_seqs ANY, surface_op TEXT, "
    "ignorable INTEGER CHECK (ignorable IS NULL OR ignorable IN (0, 1)), PRIMARY KEY (session_id, seq)) STRICT",
)
COLUMNS = {
    "persistence_state": ["singleton", "store_id"],
    "sessions": ["id", "version", "created_at", "cwd", "parent_session", "seed_length", "origin", "delegation_depth",
                 "agent_preset", "incarnation", "revision"],
    "events": ["session_id", "seq", "type", "time", "data", "source_event_seqs", "surface_op", "ignorable"],
}
HEADER_COLUMNS = {"version": "version", "id": "id", "createdAt": "created_at", "cwd": "cwd",
                  "parentSession": "parent_session", "seedLength": "seed_length", "origin": "origin",
                  "delegationDepth": "delegation_depth", "agentPreset": "agent_preset"}
SQLITE_MAGIC = formats.SQLITE_MAGIC


# --- the varint BLOB ------------------------------------------------------------------------------


def _uvarint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def encode_seqs(seqs: Iterable[int]) -> bytes:
    """The first seq as unsigned LEB128, each later one as a ZigZag delta."""
    out, prev = bytearray(), None
    for seq in seqs:
        if prev is None:
            out += _uvarint(seq)
        else:
            delta = seq - prev
            out += _uvarint(delta * 2 if delta >= 0 else -delta * 2 - 1)
        prev = seq
    return bytes(out)


def decode_seqs(blob: bytes) -> list[int]:
    """SESSION-SQLITE-ROW.1: refuse truncated, non-canonical and out-of-range varints."""
    values: list[int] = []
    pos, prev = 0, None
    while pos < len(blob):
        value, shift, start = 0, 0, pos
        while True:
            if pos >= len(blob):
                raise SpecViolation(VARINT, Kind.ENVELOPE, "source_event_seqs varint is truncated")
            byte = blob[pos]
            pos += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                break
            if shift > 63:
                raise SpecViolation(VARINT, Kind.ENVELOPE, "source_event_seqs varint is out of range")
        if byte == 0 and pos - start > 1:
            raise SpecViolation(VARINT, Kind.ENVELOPE, "source_event_seqs varint is not canonical")
        seq = value if prev is None else prev + (value >> 1 if not value & 1 else -((value + 1) >> 1))
        if not is_nonneg_safe_int(seq):
            raise SpecViolation(VARINT, Kind.ENVELOPE, f"source_event_seqs value {seq} is out of range")
        values.append(seq)
        prev = seq
    return values


# --- rows ---------------------------------------------------------------------------------------


def _bind_data(value: Json) -> str | bytes:
    text = dumps(value)
    raw = text.encode("utf-8")
    if len(raw) < COMPRESS_FROM:
        return text
    blob: bytes = zstandard.ZstdCompressor(level=3).compress(raw)
    return blob if len(blob) < len(raw) else text


def _read_data(value: object) -> Json:
    if isinstance(value, str):
        return parse(value)
    if isinstance(value, bytes):
        try:
            decoder = zstandard.ZstdDecompressor().decompressobj()
            plain = decoder.decompress(value)
            complete = decoder.eof
        except zstandard.ZstdError as error:
            raise SpecViolation(DATA, Kind.JSON, f"data BLOB does not decompress: {error}") from None
        if not complete:
            raise SpecViolation(DATA, Kind.JSON, "data BLOB is a truncated zstd frame")
        return parse(decode_utf8(plain))
    raise SpecViolation(DATA, Kind.JSON, f"data column holds {type(value).__name__}, not TEXT or BLOB")


def bind_record(record: Json) -> tuple[Any, ...]:
    """(seq, type, time, data, source_event_seqs, surface_op, ignorable) for one storage record."""
    if record["type"] in ROW_TAGS:
        return (record["seq0"], record["type"], record["time0"], _bind_data(record["data"]), None, None, 0)
    sources = record.get("sourceEventSeqs")
    op = record.get("surfaceOp")
    return (record["seq"], record["type"], record["time"], _bind_data(record["data"]),
            None if sources is None else encode_seqs(sources), None if op is None else dumps(op),
            1 if record.get("ignorable") else None)


def read_row(row: tuple[Any, ...]) -> Json:
    """The storage record of one row (a packed row's record, or an event envelope)."""
    seq, kind, time, data, sources, op, ignorable = row
    if ignorable == 0:
        # .3 The packed discriminator: a row tag and nothing of the surface.
        if kind not in ROW_TAGS or sources is not None or op is not None:
            raise SpecViolation(DISCRIMINATOR, Kind.ENVELOPE, f"row at seq {seq} is marked packed but is not a chunk row")
        return {"type": kind, "seq0": seq, "time0": time, "data": _read_data(data)}
    if ignorable not in (None, 1) or kind in ROW_TAGS:
        raise SpecViolation(DISCRIMINATOR, Kind.ENVELOPE, f"row at seq {seq} has an invalid ignorable column or row tag")
    record: dict[str, Json] = {"type": kind, "seq": seq, "time": time, "data": _read_data(data)}
    if sources is not None:
        if not isinstance(sources, bytes):
            raise SpecViolation(VARINT, Kind.ENVELOPE, f"source_event_seqs at seq {seq} is not a BLOB")
        record["sourceEventSeqs"] = decode_seqs(sources)
    if op is not None:
        record["surfaceOp"] = parse(op)
    if ignorable == 1:
        record["ignorable"] = True
    return record


# --- the database identity ----------------------------------------------------------------------


def connect(path: Path, *, write: bool) -> sqlite3.Connection:
    name = str(path)
    if not write or Path(path).exists():
        with open(path, "rb") as stream:
            magic = stream.read(16)
        if magic != SQLITE_MAGIC and (magic or not write):
            raise refuse(UNVERSIONED, Kind.VERSION, name, "not a SQLite session database (bad file header)")
    try:
        uri = f"file:{Path(path).absolute()}" + ("" if write else "?mode=ro")
        connection = sqlite3.connect(uri, uri=True, isolation_level=None, timeout=30)
        connection.execute("PRAGMA foreign_keys = ON")
        if write:
            connection.execute("PRAGMA journal_mode = WAL")
            connection.execute("PRAGMA synchronous = FULL")
        return connection
    except sqlite3.DatabaseError as error:
        raise refuse(UNVERSIONED, Kind.VERSION, name, f"not a SQLite session database: {error}") from None


def check_identity(connection: sqlite3.Connection, path: str, *, initialise: bool) -> None:
    """SESSION-SQLITE-SCHEMA: the database is ours, of our version, with our tables (or pristine, to initialise)."""
    try:
        version = connection.execute("PRAGMA user_version").fetchone()[0]
        application = connection.execute("PRAGMA application_id").fetchone()[0]
        objects = connection.execute("SELECT count(*) FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'").fetchone()[0]
    except sqlite3.DatabaseError as error:
        raise refuse(UNVERSIONED, Kind.VERSION, path, f"not a SQLite session database: {error}") from None
    if version == 0:
        if objects == 0 and application == 0:
            if initialise:
                _initialise(connection)
                return
            raise refuse(UNVERSIONED, Kind.VERSION, path, "session database is empty: it holds no sessions")
        # .3 Someone else's database, or one of ours from before versioning: neither can be read safely.
        raise refuse(UNVERSIONED, Kind.VERSION, path,
                     f"session database at {path!r} has an unversioned schema or application identity")
    if version != USER_VERSION:
        # .1 Bump-and-reject: say which side must move.
        direction = ("newer than this build: it was written by a newer format, upgrade to open it" if version > USER_VERSION
                     else "older than this build, which ships no upgrade path for it")
        raise refuse(SCHEMA_VERSION, Kind.VERSION, path,
                     f"session database at {path!r} has schema version {version}, {direction} ({USER_VERSION})")
    if application != APPLICATION_ID:
        # .2 A database of another application that happens to use version 17.
        raise refuse(APPLICATION, Kind.VERSION, path,
                     f"session database at {path!r} has application id {application}, expected {APPLICATION_ID}")
    for table, columns in COLUMNS.items():
        found = [row[1] for row in connection.execute(f"PRAGMA table_info({table})")]
        strict = connection.execute("SELECT strict FROM pragma_table_list WHERE name = ?", (table,)).fetchone()
        # .4 The tables this reader decodes, with exactly the columns it reads.
        if found != columns or not strict or not strict[0]:
            raise refuse(OBJECTS, Kind.VERSION, path, f"session database at {path!r} does not contain the required schema objects "
                         f"(table {table})")


def _initialise(connection: sqlite3.Connection) -> None:
    for statement in DDL:
        connection.execute(statement)
    connection.execute("INSERT INTO persistence_state (singleton, store_id) VALUES (1, ?)", (str(uuid.uuid4()),))
    connection.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    connection.execute(f"PRAGMA user_version = {USER_VERSION}")


# --- reading ------------------------------------------------------------------------------------


class SqliteReader:
    """The committed rows of one session; the torn tail is decided by the shared scanner."""

    format = "sqlite"

    def __init__(self, path: Path, session_id: str | None = None) -> None:
        self.path = Path(path)
        self._name = str(path)
        self._connection = connect(self.path, write=False)
        try:
            # One read transaction: the header, the rows and the revision token are of one snapshot.
            self._connection.execute("BEGIN")
            check_identity(self._connection, self._name, initialise=False)
            self.session_id = self._choose(session_id)
            self.revision = revision_token(self._connection, self.session_id)
            """What a repair must still find under its write lock (SESSION-STORAGE-WRITE.4)."""
            columns = ", ".join(HEADER_COLUMNS.values())
            row = self._connection.execute(f"SELECT {columns} FROM sessions WHERE id = ?", (self.session_id,)).fetchone()
            raw: dict[str, Json] = {"type": "session"}
            for key, value in zip(HEADER_COLUMNS, row, strict=True):
                if value is not None:
                    raw[key] = value
            self.header: FrozenDict = header_from_record(raw, self._name, jsonl=False)
        except BaseException:
            self._connection.close()
            raise
        self.scanner = Scanner(self._name, sqlite=True)
        self.torn: TornTail | None = None

    def _choose(self, session_id: str | None) -> str:
        ids = [row[0] for row in self._connection.execute("SELECT id FROM sessions ORDER BY id")]
        if session_id is None and len(ids) == 1:
            return str(ids[0])
        # SESSION-STORAGE-HEADER.5: a database of many sessions is opened by naming one.
        if session_id is None or session_id not in ids:
            raise refuse(HEADER_IDENTITY, Kind.HEADER, self._name,
                         f"session {session_id!r} not found; the database holds {len(ids)} sessions: {ids[:10]}")
        return session_id

    def records(self) -> Iterator[tuple[int | None, Json]]:
        try:
            rows = self._connection.execute(
                "SELECT seq, type, time, data, source_event_seqs, surface_op, ignorable FROM events "
                "WHERE session_id = ? ORDER BY seq", (self.session_id,))
            for row in rows:
                for record in self.scanner.feed(row[0], row, 0, read=read_row):
                    yield None, record
            self.torn = self.scanner.finish()
        finally:
            self._connection.close()

    def close(self) -> None:
        self._connection.close()


# --- writing ------------------------------------------------------------------------------------


class SqliteWriter:
    """Appends batches to one session of a database, each batch one BEGIN IMMEDIATE transaction."""

    def __init__(self, path: Path, session_id: str, next_seq: int) -> None:
        self.path = Path(path)
        self.session_id = session_id
        self.next_seq = next_seq

    @classmethod
    def create(cls, path: Path, header: FrozenDict | dict[str, Json], events: Iterable[Event | Json] = (),
               *, packed: bool = True) -> SqliteWriter:
        """Add a session (header row and first batch) to the database, creating the database if needed."""
        valid = checked_header(header)
        batch = as_events(events, 0)
        connection = connect(Path(path), write=True)
        try:
            connection.execute("BEGIN IMMEDIATE")
            try:
                check_identity(connection, str(path), initialise=True)
                exists = connection.execute("SELECT 1 FROM sessions WHERE id = ?", (valid["id"],)).fetchone()
                # SESSION-STORAGE-WRITE.1: a session is created once; an existing one is loaded or resumed.
                if exists:
                    raise refuse(PUBLISH, Kind.INTERNAL, str(path),
                                 f"session {valid['id']!r} already exists in this database; load or resume it instead")
                values = [thaw(valid[key]) if key in valid else None for key in HEADER_KEYS]
                connection.execute(f"INSERT INTO sessions ({', '.join(HEADER_COLUMNS.values())}, incarnation, revision) "
                                   f"VALUES ({', '.join('?' * len(HEADER_KEYS))}, ?, 0)", (*values, str(uuid.uuid4())))
                _insert(connection, valid["id"], batch, packed)
                connection.execute("COMMIT")
            except BaseException:
                connection.execute("ROLLBACK")
                raise
        finally:
            connection.close()
        return cls(path, valid["id"], len(batch))

    def append(self, events: Iterable[Event | Json], *, packed: bool = True) -> None:
        batch = as_events(events, self.next_seq)
        if not batch:
            return
        self._transaction(lambda connection: self._append_rows(connection, batch, packed))
        self.next_seq += len(batch)

    def _append_rows(self, connection: sqlite3.Connection, batch: list[Event], packed: bool) -> None:
        stored = _stored_next_seq(connection, self.session_id, str(self.path))
        # SESSION-STORAGE-SEQ.1: the batch continues exactly where the stored log ends.
        if batch[0].seq != stored:
            raise refuse(SEQ, Kind.SEQ, str(self.path),
                         f"session {self.session_id} append starts at seq {batch[0].seq}, stored next seq is {stored}")
        _insert(connection, self.session_id, batch, packed)

    def _transaction(self, body: Any) -> None:
        connection = connect(self.path, write=True)
        try:
            connection.execute("BEGIN IMMEDIATE")
            try:
                check_identity(connection, str(self.path), initialise=False)
                body(connection)
                connection.execute("COMMIT")
            except BaseException:
                connection.execute("ROLLBACK")
                raise
        finally:
            connection.close()

    def commit_repair(self, torn: TornTail | None, closers: list[Event], recovered: list[Event], *,
                      revision: tuple[int, ...]) -> None:
        """Delete the torn rows and insert the closers, in one transaction, if the rows are still as read."""
        cut = torn.seq if torn is not None else self.next_seq

        def body(connection: sqlite3.Connection) -> None:
            found = revision_token(connection, self.session_id)
            # SESSION-STORAGE-WRITE.4: re-read under the write lock; another writer's rows are never cut or answered.
            if found != revision:
                raise refuse(STALE, Kind.INTERNAL, str(self.path),
                             f"session {self.session_id}: repair is stale: the session changed after it was read "
                             f"(revision, rows, last seq were {revision}, now {found}); load it and repair again")
            connection.execute("DELETE FROM events WHERE session_id = ? AND seq >= ?", (self.session_id, cut))
            _insert(connection, self.session_id, as_events(closers, cut), True)

        self._transaction(body)
        self.next_seq = cut + len(closers)


def revision_token(connection: sqlite3.Connection, session_id: str) -> tuple[int, ...]:
    """The session's revision token: its `revision` (bumped by every append and repair), row count and last row seq."""
    bumped = connection.execute("SELECT revision FROM sessions WHERE id = ?", (session_id,)).fetchone()
    rows, last = connection.execute("SELECT count(*), coalesce(max(seq), -1) FROM events WHERE session_id = ?",
                                    (session_id,)).fetchone()
    return (-1 if bumped is None else int(bumped[0]), int(rows), int(last))


def _stored_next_seq(connection: sqlite3.Connection, session_id: str, path: str) -> int:
    row = connection.execute("SELECT seq, type, time, data, source_event_seqs, surface_op, ignorable FROM events "
                             "WHERE session_id = ? ORDER BY seq DESC LIMIT 1", (session_id,)).fetchone()
    if row is None:
        return 0
    try:
        record = read_row(row)
    except SpecViolation:
        raise refuse(SEQ, Kind.SEQ, path, f"session {session_id} has an invalid physical tail at seq {row[0]}") from None
    if record["type"] in ROW_TAGS:
        payload = record["data"]
        members: Any = payload.get("texts", payload.get("args", [])) if isinstance(payload, dict) else []
        return int(row[0]) + len(members)
    return int(row[0]) + 1


def _insert(connection: sqlite3.Connection, session_id: str, batch: list[Event], packed: bool) -> None:
    if not batch:
        return
    records = [event.to_json() for event in batch]
    if packed:
        records = pack(records, sqlite=True)
    else:
        for record in records:
            check_storable(record)
    connection.executemany(
        "INSERT INTO events (session_id, seq, type, time, data, source_event_seqs, surface_op, ignorable) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?)", [(session_id, *bind_record(record)) for record in records])
    connection.execute("UPDATE sessions SET revision = revision + 1 WHERE id = ?", (session_id,))


assert MAX_SAFE_INTEGER < 2**63
