"""The SQLite backend (notes §4.3): the upstream's schema, row encoding and transactions.

One database holds many sessions. Its identity and schema (`sqlitefile`) are checked before
anything is read or written. Each durable batch is one `BEGIN IMMEDIATE` transaction in WAL mode
with `synchronous = FULL`, so an acknowledged batch survives a crash and a torn one never appears.
A reader opens the database read-only and leaves no file behind (`sqlitefile.ReadOnly`).

SQLite itself may fail on a damaged file at any statement ("database disk image is malformed",
a malformed schema): every such error becomes a refusal naming SESSION-SQLITE-ROW.4 and where
the read stood, never a traceback. The row codec is `sqliterows`.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import uuid
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, NoReturn

from sessionspec.envelope import Event
from sessionspec.errors import Kind, SpecViolation
from sessionspec.header import HEADER_KEYS
from sessionspec.jsonvalue import MAX_SAFE_INTEGER, FrozenDict, Json, thaw
from sessionspec.preview import clipped, shown
from sessionspec.storage.budget import Budget, Spent, refusal
from sessionspec.storage.chunkrows import check_storable, pack
from sessionspec.storage.durable import PUBLISH, STALE, VERIFIED
from sessionspec.storage.gate import HEADER_IDENTITY, SEQ, LoadResult, Scanner, TornTail, header_from_record, refuse
from sessionspec.storage.records import as_events, checked_header
from sessionspec.storage.sqlitefile import (
    DRIVER_ERRORS,
    ReadOnly,
    changed,
    check_identity,
    connect,
    damaged,
    forget_side_files,
    side_files,
)
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
)

HEADER_COLUMNS = {"version": "version", "id": "id", "createdAt": "created_at", "cwd": "cwd",
                  "parentSession": "parent_session", "seedLength": "seed_length", "origin": "origin",
                  "delegationDepth": "delegation_depth", "agentPreset": "agent_preset"}

__all__ = ["DATA", "DISCRIMINATOR", "VARINT", "SqliteReader", "SqliteWriter", "decode_seqs", "encode_seqs"]


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
        # SESSION-SQLITE-READ.1: opened read-only, with no file created beside the database.
        self._read: ReadOnly | None = None
        if connection is None:
            self._read = ReadOnly(self.path)
            connection = self._read.connection
        self._connection = connection
        try:
            if self._read is not None:
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
        self.budget = Budget.of(stored_size(self.path))
        """SESSION-STORAGE-RECORD.3: what the rows may decode to, out of the size of the file and its WAL."""

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
                         f"session {shown(session_id)} not found; the database holds {len(ids)} sessions: {shown(ids[:10], 600)}")
        return session_id

    def _header_record(self) -> dict[str, Json]:
        columns = ", ".join(HEADER_COLUMNS.values())
        row = self._connection.execute(f"SELECT {columns} FROM sessions WHERE id = ?", (self.session_id,)).fetchone()
        if row is None:
            raise refuse(HEADER_IDENTITY, Kind.HEADER, self._name, f"session {shown(self.session_id)} has no header row")
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
        budget = self.budget

        def read(row: tuple[Any, ...]) -> Json:
            return read_row(row, budget)

        try:
            try:
                rows = self._connection.execute(ROW_QUERY, (self.session_id,))
                while (row := rows.fetchone()) is not None:
                    last = row[0]
                    records = self.scanner.feed(row[0], row, 0, read=read)
                    # SESSION-STORAGE-RECORD.3: a packed row is as many records as its members.
                    budget.spend(records=len(records))
                    for record in records:
                        yield None, record
            except DRIVER_ERRORS as error:
                # SESSION-STORAGE-RECORD.4: an error of a file that changed under an unlocked read is the change's.
                if self._read is not None and not self._read.unchanged():
                    raise changed(self._name, after=last, seq=self.scanner.expected) from None
                # SESSION-SQLITE-ROW.4: refused where the read stood, at the seq it expected next.
                raise damaged(error, self._name, after=last, seq=self.scanner.expected) from None
            except Spent as spent:
                raise refusal(spent, self._name, seq=last if type(last) is int else None) from None
            if self._read is not None and not self._read.unchanged():
                # SESSION-STORAGE-RECORD.4: rows read without a lock from a file that changed are no snapshot.
                raise changed(self._name, after=last, seq=self.scanner.expected)
            self.torn = self.scanner.finish()
        finally:
            self.close()

    def close(self) -> None:
        if self._read is not None:
            self._read.close()


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
        rows = rows_of(batch, packed)

        def body(connection: sqlite3.Connection) -> None:
            exists = connection.execute("SELECT 1 FROM sessions WHERE id = ?", (valid["id"],)).fetchone()
            # SESSION-STORAGE-WRITE.1: a session is created once; an existing one is loaded or resumed.
            if exists:
                raise refuse(PUBLISH, Kind.INTERNAL, str(path),
                             f"session {shown(valid['id'])} already exists in this database; load or resume it instead")
            values = [thaw(valid[key]) if key in valid else None for key in HEADER_KEYS]
            connection.execute(f"INSERT INTO sessions ({', '.join(HEADER_COLUMNS.values())}, incarnation, revision) "
                               f"VALUES ({', '.join('?' * len(HEADER_KEYS))}, ?, 0)", (*values, str(uuid.uuid4())))
            _insert(connection, valid["id"], rows)

        transaction(Path(path), body, initialise=True)
        return cls(path, valid["id"], len(batch))

    def append(self, events: Iterable[Event | Json], *, packed: bool = True) -> None:
        batch = as_events(events, self.next_seq)
        if not batch:
            return
        rows = rows_of(batch, packed)
        transaction(self.path, lambda connection: self._append_rows(connection, batch, rows))
        self.next_seq += len(batch)

    def _append_rows(self, connection: sqlite3.Connection, batch: list[Event], rows: list[tuple[Any, ...]]) -> None:
        stored = _stored_next_seq(connection, self.session_id, str(self.path))
        # SESSION-STORAGE-SEQ.1: the batch continues exactly where the stored log ends.
        if batch[0].seq != stored:
            raise refuse(SEQ, Kind.SEQ, str(self.path),
                         f"session {clipped(self.session_id, 120)} append starts at seq {batch[0].seq}, stored next seq is {stored}")
        _insert(connection, self.session_id, rows)

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
            _insert(connection, self.session_id, rows_of(as_events(result.closers, len(result.events)), True))
            # SESSION-STORAGE-WRITE.5: read back inside the transaction; a result that does not verify is rolled back.
            verified.append(verify(SqliteReader(self.path, self.session_id, connection=connection)))

        transaction(self.path, body)
        self.next_seq = len(result.events) + len(result.closers)
        return verified[0]


def _unverified(path: str, why: str) -> NoReturn:
    raise refuse(VERIFIED, Kind.INTERNAL, path, f"repair not written: {why}")


def transaction(path: Path, body: Callable[[sqlite3.Connection], None], *, initialise: bool = False) -> None:
    """`body` in one BEGIN IMMEDIATE transaction of a database of our identity: committed if it returns.

    A failed one leaves no new side file (issue 34: a full disk left an empty -wal and a -shm)."""
    before = side_files(path)
    try:
        _transaction(path, body, initialise=initialise)
    except BaseException:
        forget_side_files(path, before)
        raise


def _transaction(path: Path, body: Callable[[sqlite3.Connection], None], *, initialise: bool) -> None:
    connection = connect(path)
    try:
        connection.execute("BEGIN IMMEDIATE")
        try:
            check_identity(connection, str(path), initialise=initialise)
            body(connection)
            connection.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(*DRIVER_ERRORS):  # a failed COMMIT may have ended the transaction itself
                connection.execute("ROLLBACK")
            raise
    except DRIVER_ERRORS as error:
        raise damaged(error, str(path)) from None
    finally:
        connection.close()


def stored_size(path: Path) -> int:
    """The bytes a reader of the database may read: the file and its write-ahead log."""
    size = 0
    for name in (str(path), f"{path}-wal"):
        with contextlib.suppress(OSError):
            size += os.stat(name).st_size
    return size


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
        raise refuse(SEQ, Kind.SEQ, path, f"session {clipped(session_id, 120)} has an invalid physical tail at seq {row[0]}") from None
    return int(row[0]) + row_members(record)


def rows_of(batch: list[Event], packed: bool) -> list[tuple[Any, ...]]:
    """The rows of one batch, bound before any transaction begins: a record the writer refuses (too long,
    SESSION-STORAGE-RECORD.1; a row tag, SESSION-CHUNK-ROWS.7) is refused before a byte of the database is written."""
    records = [event.to_json() for event in batch]
    if packed:
        records = pack(records, sqlite=True)
    else:
        for record in records:
            check_storable(record)
    return [bind_record(record) for record in records]


def _insert(connection: sqlite3.Connection, session_id: str, rows: list[tuple[Any, ...]]) -> None:
    if not rows:
        return
    connection.executemany(
        "INSERT INTO events (session_id, seq, type, time, data, source_event_seqs, surface_op, ignorable) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?)", [(session_id, *row) for row in rows])
    connection.execute("UPDATE sessions SET revision = revision + 1 WHERE id = ?", (session_id,))


assert MAX_SAFE_INTEGER < 2**63
