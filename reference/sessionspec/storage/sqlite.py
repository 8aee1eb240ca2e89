"""The SQLite backend (notes §4.3): the upstream's schema, row encoding and transactions.

One database holds many sessions. Its identity (application id 0x44534850, `user_version` 17)
is checked before anything is read or written, and any other version is refused with the
direction named (bump-and-reject: there is no migration, so reading a different physical
format would mean guessing). Each durable batch is one `BEGIN IMMEDIATE` transaction in WAL mode
with `synchronous = FULL`, so an acknowledged batch survives a crash and a torn one never appears.

SQLite itself may fail on a damaged file at any statement ("database disk image is malformed",
a malformed schema): every such error becomes a refusal naming SESSION-SQLITE-ROW.4 and where
the read stood, never a traceback. The row codec is `sqliterows`.
"""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, NoReturn

from sessionspec.envelope import Event
from sessionspec.errors import Kind, SpecViolation
from sessionspec.header import HEADER_KEYS
from sessionspec.jsonvalue import MAX_SAFE_INTEGER, FrozenDict, Json, thaw
from sessionspec.rules import define
from sessionspec.storage import formats
from sessionspec.storage.chunkrows import check_storable, pack
from sessionspec.storage.durable import PUBLISH, STALE, VERIFIED
from sessionspec.storage.gate import HEADER_IDENTITY, SEQ, LoadResult, Scanner, TornTail, header_from_record, refuse
from sessionspec.storage.records import as_events, checked_header
from sessionspec.storage.sqliterows import (
    DATA,
    DISCRIMINATOR,
    ROW_QUERY,
    VARINT,
    bind_record,
    decode_seqs,
    encode_seqs,
    read_row,
    row_members,
    text,
    text_factory,
)

SCHEMA_VERSION = define("SESSION-SQLITE-SCHEMA.1", Kind.VERSION, "user_version is 17; other versions are refused, naming the direction")
APPLICATION = define("SESSION-SQLITE-SCHEMA.2", Kind.VERSION, "application_id is 1146308688 (0x44534850)")
UNVERSIONED = define("SESSION-SQLITE-SCHEMA.3", Kind.VERSION, "a database without this identity, or not a database, is refused")
OBJECTS = define("SESSION-SQLITE-SCHEMA.4", Kind.VERSION, "the three STRICT tables have the required columns")
DAMAGED = define("SESSION-SQLITE-ROW.4", Kind.ENVELOPE,
                 "a database SQLite reports damaged is refused where the damage is met; it is never a torn tail")

USER_VERSION = 17
APPLICATION_ID = 1146308688

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


__all__ = ["DATA", "DISCRIMINATOR", "VARINT", "SqliteReader", "SqliteWriter", "decode_seqs", "encode_seqs"]
_NOT_A_DATABASE = 26
"""SQLITE_NOTADB: the file is not a database at all (its header is not SQLite's); anything else is damage."""
DRIVER_ERRORS = (sqlite3.Error, UnicodeDecodeError)
"""What the driver raises on a damaged file: its own errors, and UnicodeDecodeError where SQLite's error message
quotes damaged schema text that is not UTF-8."""


def damaged(error: Exception, path: str, *, after: object = None, seq: int | None = None) -> SpecViolation:
    """The refusal for an error SQLite raised: not a database (SESSION-SQLITE-SCHEMA.3) or damaged (SESSION-SQLITE-ROW.4)."""
    if isinstance(error, UnicodeDecodeError):
        error = sqlite3.DatabaseError(f"an error message that is not UTF-8 (damaged schema text): {error}")
    if getattr(error, "sqlite_errorcode", None) == _NOT_A_DATABASE:
        return refuse(UNVERSIONED, Kind.VERSION, path, f"not a SQLite session database: {error}")
    # ROW.4: what lies past the damage cannot be read, so it cannot be judged a torn tail either.
    where = "while opening it" if after is None else f"after the row at seq {after}"
    return refuse(DAMAGED, Kind.ENVELOPE, path, f"the database is damaged: SQLite fails {where}: {error}", seq=seq)


# --- the database identity ----------------------------------------------------------------------


def connect(path: Path, *, write: bool) -> sqlite3.Connection:
    name = str(path)
    if not write or Path(path).exists():
        # SESSION-STORAGE-RECORD.2: SQLite would block on a FIFO too; the file is judged before SQLite opens it.
        with formats.open_regular(path) as stream:
            magic = stream.read(16)
        if magic != SQLITE_MAGIC and (magic or not write):
            raise refuse(UNVERSIONED, Kind.VERSION, name, "not a SQLite session database (bad file header)")
    try:
        uri = f"file:{Path(path).absolute()}" + ("" if write else "?mode=ro")
        connection = sqlite3.connect(uri, uri=True, isolation_level=None, timeout=30)
    except DRIVER_ERRORS as error:
        raise damaged(error, name) from None
    # SESSION-LOSSLESS-TEXT.1: TEXT arrives as bytes and is judged per value, never failing the whole query.
    connection.text_factory = text_factory
    try:
        connection.execute("PRAGMA foreign_keys = ON")
        if write:
            connection.execute("PRAGMA journal_mode = WAL")
            connection.execute("PRAGMA synchronous = FULL")
    except DRIVER_ERRORS as error:
        connection.close()
        raise damaged(error, name) from None
    return connection


def check_identity(connection: sqlite3.Connection, path: str, *, initialise: bool) -> None:
    """SESSION-SQLITE-SCHEMA: the database is ours, of our version, with our tables (or pristine, to initialise)."""
    try:
        _identity(connection, path, initialise=initialise)
    except DRIVER_ERRORS as error:
        raise damaged(error, path) from None


def _identity(connection: sqlite3.Connection, path: str, *, initialise: bool) -> None:
    version = connection.execute("PRAGMA user_version").fetchone()[0]
    application = connection.execute("PRAGMA application_id").fetchone()[0]
    objects = connection.execute("SELECT count(*) FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'").fetchone()[0]
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
    """The committed rows of one session; the torn tail is decided by the shared scanner.

    With `connection`, the reader reads inside that connection's open transaction and leaves it
    open (a repair verifies its own uncommitted result this way, SESSION-STORAGE-WRITE.5).
    """

    format = "sqlite"

    def __init__(self, path: Path, session_id: str | None = None, *, connection: sqlite3.Connection | None = None) -> None:
        self.path = Path(path)
        self._name = str(path)
        self._owned = connection is None
        self._connection = connection if connection is not None else connect(self.path, write=False)
        try:
            if self._owned:
                # One read transaction: the header, the rows and the revision token are of one snapshot.
                self._connection.execute("BEGIN")
                check_identity(self._connection, self._name, initialise=False)
            self.session_id = self._choose(session_id)
            self.revision = revision_token(self._connection, self.session_id)
            """What a repair must still find under its write lock (SESSION-STORAGE-WRITE.4)."""
            self.header: FrozenDict = header_from_record(self._header_record(), self._name, jsonl=False)
        except DRIVER_ERRORS as error:
            self.close()
            raise damaged(error, self._name) from None
        except BaseException:
            self.close()
            raise
        self.scanner = Scanner(self._name, sqlite=True)
        self.torn: TornTail | None = None

    def _choose(self, session_id: str | None) -> str:
        ids = [row[0] for row in self._connection.execute("SELECT id FROM sessions ORDER BY id")]
        if session_id is None and len(ids) == 1:
            try:
                only = text(ids[0], "the session id")
            except SpecViolation as violation:
                raise refuse(violation.rule, violation.kind, self._name, violation.message) from None
            if type(only) is str:
                return only
        # SESSION-STORAGE-HEADER.5: a database of many sessions is opened by naming one.
        if session_id is None or session_id not in ids:
            raise refuse(HEADER_IDENTITY, Kind.HEADER, self._name,
                         f"session {session_id!r} not found; the database holds {len(ids)} sessions: {ids[:10]}")
        return session_id

    def _header_record(self) -> dict[str, Json]:
        columns = ", ".join(HEADER_COLUMNS.values())
        row = self._connection.execute(f"SELECT {columns} FROM sessions WHERE id = ?", (self.session_id,)).fetchone()
        if row is None:
            raise refuse(HEADER_IDENTITY, Kind.HEADER, self._name, f"session {self.session_id!r} has no header row")
        raw: dict[str, Json] = {"type": "session"}
        for key, value in zip(HEADER_COLUMNS, row, strict=True):
            if value is not None:
                try:
                    raw[key] = text(value, f"header column {HEADER_COLUMNS[key]}")
                except SpecViolation as violation:
                    raise refuse(violation.rule, violation.kind, self._name, violation.message) from None
        return raw

    def records(self) -> Iterator[tuple[int | None, Json]]:
        last: object = None
        try:
            try:
                rows = self._connection.execute(ROW_QUERY, (self.session_id,))
                while (row := rows.fetchone()) is not None:
                    last = row[0]
                    for record in self.scanner.feed(row[0], row, 0, read=read_row):
                        yield None, record
            except DRIVER_ERRORS as error:
                # SESSION-SQLITE-ROW.4: refused where the read stood, at the seq it expected next.
                raise damaged(error, self._name, after=last, seq=self.scanner.expected) from None
            self.torn = self.scanner.finish()
        finally:
            self.close()

    def close(self) -> None:
        if self._owned:
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

        def body(connection: sqlite3.Connection) -> None:
            exists = connection.execute("SELECT 1 FROM sessions WHERE id = ?", (valid["id"],)).fetchone()
            # SESSION-STORAGE-WRITE.1: a session is created once; an existing one is loaded or resumed.
            if exists:
                raise refuse(PUBLISH, Kind.INTERNAL, str(path),
                             f"session {valid['id']!r} already exists in this database; load or resume it instead")
            values = [thaw(valid[key]) if key in valid else None for key in HEADER_KEYS]
            connection.execute(f"INSERT INTO sessions ({', '.join(HEADER_COLUMNS.values())}, incarnation, revision) "
                               f"VALUES ({', '.join('?' * len(HEADER_KEYS))}, ?, 0)", (*values, str(uuid.uuid4())))
            _insert(connection, valid["id"], batch, packed)

        transaction(Path(path), body, initialise=True)
        return cls(path, valid["id"], len(batch))

    def append(self, events: Iterable[Event | Json], *, packed: bool = True) -> None:
        batch = as_events(events, self.next_seq)
        if not batch:
            return
        transaction(self.path, lambda connection: self._append_rows(connection, batch, packed))
        self.next_seq += len(batch)

    def _append_rows(self, connection: sqlite3.Connection, batch: list[Event], packed: bool) -> None:
        stored = _stored_next_seq(connection, self.session_id, str(self.path))
        # SESSION-STORAGE-SEQ.1: the batch continues exactly where the stored log ends.
        if batch[0].seq != stored:
            raise refuse(SEQ, Kind.SEQ, str(self.path),
                         f"session {self.session_id} append starts at seq {batch[0].seq}, stored next seq is {stored}")
        _insert(connection, self.session_id, batch, packed)

    def commit_repair(self, result: LoadResult, verify: Callable[[Any], LoadResult]) -> LoadResult:
        """Delete the torn rows and insert the closers in one transaction, committed only once the result verifies.

        The cut starts at the defective row itself (`TornTail.row`), which a packed row before it
        may make repeat an earlier seq; the closers continue the loaded events.
        """
        torn = result.torn
        if torn is not None and torn.row is None:
            _unverified(str(self.path), "the torn tail names no row to cut from")
        verified: list[LoadResult] = []

        def body(connection: sqlite3.Connection) -> None:
            found = revision_token(connection, self.session_id)
            # SESSION-STORAGE-WRITE.4: re-read under the write lock; another writer's rows are never cut or answered.
            if found != result.revision:
                raise refuse(STALE, Kind.INTERNAL, str(self.path),
                             f"session {self.session_id}: repair is stale: the session changed after it was read "
                             f"(revision, rows, last seq were {result.revision}, now {found}); load it and repair again")
            if torn is not None:
                connection.execute("DELETE FROM events WHERE session_id = ? AND seq >= ?", (self.session_id, torn.row))
            _insert(connection, self.session_id, as_events(result.closers, len(result.events)), True)
            # SESSION-STORAGE-WRITE.5: read back inside the transaction; a result that does not verify is rolled back.
            verified.append(verify(SqliteReader(self.path, self.session_id, connection=connection)))

        transaction(self.path, body)
        self.next_seq = len(result.events) + len(result.closers)
        return verified[0]


def _unverified(path: str, why: str) -> NoReturn:
    raise refuse(VERIFIED, Kind.INTERNAL, path, f"repair not written: {why}")


def transaction(path: Path, body: Callable[[sqlite3.Connection], None], *, initialise: bool = False) -> None:
    """`body` in one BEGIN IMMEDIATE transaction of a database of our identity: committed if it returns."""
    connection = connect(path, write=True)
    try:
        connection.execute("BEGIN IMMEDIATE")
        try:
            check_identity(connection, str(path), initialise=initialise)
            body(connection)
            connection.execute("COMMIT")
        except BaseException:
            connection.execute("ROLLBACK")
            raise
    except DRIVER_ERRORS as error:
        raise damaged(error, str(path)) from None
    finally:
        connection.close()


def revision_token(connection: sqlite3.Connection, session_id: str) -> tuple[int, ...]:
    """The session's revision token: its `revision` (bumped by every append and repair), row count and last row seq."""
    bumped = connection.execute("SELECT revision FROM sessions WHERE id = ?", (session_id,)).fetchone()
    rows, last = connection.execute("SELECT count(*), coalesce(max(seq), -1) FROM events WHERE session_id = ?",
                                    (session_id,)).fetchone()
    values = (-1 if bumped is None else bumped[0], rows, last)
    return tuple(value if type(value) is int else -2 for value in values)


def _stored_next_seq(connection: sqlite3.Connection, session_id: str, path: str) -> int:
    row = connection.execute(ROW_QUERY.replace("ORDER BY seq", "ORDER BY seq DESC LIMIT 1"), (session_id,)).fetchone()
    if row is None:
        return 0
    try:
        record = read_row(row)
    except SpecViolation:
        raise refuse(SEQ, Kind.SEQ, path, f"session {session_id} has an invalid physical tail at seq {row[0]}") from None
    return int(row[0]) + row_members(record)


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
