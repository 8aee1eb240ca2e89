"""The SQLite database as a file: opening it, its identity and schema, and the errors SQLite raises on it.

A database is ours only with our identity (application id 0x44534850, `user_version` 17) and
exactly our schema objects: any other version is refused with the direction named
(bump-and-reject: there is no migration, so reading a different physical format would mean
guessing), and any object the format does not define is refused too, a trigger above all, since
it would run inside our own write transactions.

Reading leaves no trace (SESSION-SQLITE-READ.1). A read-only SQLite connection to a database in
WAL mode creates the `-wal` and `-shm` files when they are missing and leaves them behind, so a
`check` would change the directory it checks. So a reader chooses by what is there: with the WAL
and its index both present (a writer is running, or crashed), SQLite reads through them under its
locks and creates nothing; with no WAL, the database file alone is the committed state, read as
immutable (no locks, no files), and a reader that holds no lock confirms afterwards that the file
did not change under it (SESSION-STORAGE-RECORD.4); with a WAL but no index (the files copied or
the index deleted), a private copy of the two is read in a temporary directory.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import sqlite3
import tempfile
import urllib.parse
import uuid
from pathlib import Path

from sessionspec.errors import Kind, SpecViolation
from sessionspec.preview import shown
from sessionspec.rules import define
from sessionspec.storage import formats
from sessionspec.storage.formats import CHANGED
from sessionspec.storage.gate import refuse
from sessionspec.storage.sqliterows import text_factory

SCHEMA_VERSION = define("SESSION-SQLITE-SCHEMA.1", Kind.VERSION, "user_version is 17; other versions are refused, naming the direction")
APPLICATION = define("SESSION-SQLITE-SCHEMA.2", Kind.VERSION, "application_id is 1146308688 (0x44534850)")
UNVERSIONED = define("SESSION-SQLITE-SCHEMA.3", Kind.VERSION, "a database without this identity, or not a database, is refused")
OBJECTS = define("SESSION-SQLITE-SCHEMA.4", Kind.VERSION, "the three STRICT tables have the required columns")
FOREIGN_OBJECTS = define("SESSION-SQLITE-SCHEMA.5", Kind.VERSION,
                         "a database holding a schema object the format does not define (trigger, view, index, table) "
                         "is refused before anything is read or written")
DAMAGED = define("SESSION-SQLITE-ROW.4", Kind.ENVELOPE,
                 "a database SQLite reports damaged is refused where the damage is met; it is never a torn tail")
NO_TRACE = define("SESSION-SQLITE-READ.1", Kind.INTERNAL,
                  "reading a database creates no file and leaves none behind: WAL and index read if both are there, "
                  "else the file as immutable, else a private copy")

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
SQLITE_MAGIC = formats.SQLITE_MAGIC
_NOT_A_DATABASE = 26
"""SQLITE_NOTADB: the file is not a database at all (its header is not SQLite's); anything else is damage."""
DRIVER_ERRORS = (sqlite3.Error, UnicodeDecodeError)
"""What the driver raises on a damaged file: its own errors, and UnicodeDecodeError where SQLite's error message
quotes damaged schema text that is not UTF-8."""


SQLITE_PATH_MAX = 504
"""The longest path SQLite's unix VFS opens (its 512-byte pathname, less the `-journal` it must be able to name):
measured, SQLITE_CANTOPEN from 505 bytes on. A longer path is no damage of the database (issue 34)."""
FAULTS = {3: errno.EACCES, 5: errno.EBUSY, 6: errno.EBUSY, 8: errno.EROFS, 10: errno.EIO, 13: errno.ENOSPC,
          14: errno.EACCES}
"""SQLite's primary codes that are the machine's, not the file's content (PERM, BUSY, LOCKED, READONLY, IOERR, FULL,
CANTOPEN), with the errno each stands for where the file system does not say more."""


def fault(error: BaseException, path: str) -> OSError | None:
    """An error SQLite raised because of the machine (its disk, its file system, a path it cannot open), as the OSError
    it stands for, naming the file: never a "damaged" diagnosis. None for anything else (the database's content)."""
    code = getattr(error, "sqlite_errorcode", None)
    if not isinstance(code, int) or code & 0xFF not in FAULTS:
        return None
    number, text = FAULTS[code & 0xFF], f"{error} ({getattr(error, 'sqlite_errorname', 'SQLITE_ERROR')})"
    if too_long(path):
        number, text = errno.ENAMETOOLONG, f"SQLite opens no path over {SQLITE_PATH_MAX} bytes ({text})"
    elif code & 0xFF in (8, 10, 13, 14):
        number = _file_system(path) or number  # a full or read-only disk, where SQLite said only "disk I/O error"
    return OSError(number, f"{os.strerror(number)}: {text}", path)


def too_long(path: str | Path) -> bool:
    return len(os.fsencode(os.path.abspath(path))) > SQLITE_PATH_MAX


def _file_system(path: str | Path) -> int | None:
    """EROFS or ENOSPC where the file system of `path` is read-only or full, else None."""
    try:
        status = os.statvfs(os.path.dirname(os.path.abspath(path)))
    except OSError:
        return None
    if status.f_flag & os.ST_RDONLY:
        return errno.EROFS
    return errno.ENOSPC if status.f_bavail == 0 else None


def writable(path: Path) -> None:
    """Before SQLite opens `path` to write: a read-only file system or a path SQLite cannot open is said as the fault
    it is, before SQLite creates anything beside the database (its -wal and -shm)."""
    if too_long(path):
        raise OSError(errno.ENAMETOOLONG, f"SQLite opens no path over {SQLITE_PATH_MAX} bytes", str(path))
    try:
        name_max = os.pathconf(os.path.dirname(os.path.abspath(path)), "PC_NAME_MAX")
    except (OSError, ValueError):
        name_max = 255
    if len(os.fsencode(Path(path).name + "-wal")) > name_max:
        raise OSError(errno.ENAMETOOLONG, f"SQLite writes through a -wal file beside the database, whose name would be "
                      f"over the file system's {name_max} bytes", str(path))
    if _file_system(path) == errno.EROFS:
        raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))


SIDE_FILES = ("-wal", "-shm", "-journal")


def side_files(path: Path) -> set[str]:
    """The side files of the database at `path` that exist (a name too long to exist is not there)."""
    return {suffix for suffix in SIDE_FILES if os.path.lexists(f"{path}{suffix}")}


def forget_side_files(path: Path, before: set[str]) -> None:
    """After a failed write: the side files SQLite created for it, if they hold nothing (an empty -wal or -journal,
    and the -shm that indexes it). None of them was there before, so no other connection had the database open; a
    log with a frame in its new WAL keeps it (SQLite ignores frames no commit ends, and a reader needs the index)."""
    created = side_files(path) - before
    journals = [suffix for suffix in ("-wal", "-journal") if suffix in created]
    if any(os.path.getsize(f"{path}{suffix}") for suffix in journals):
        return
    for suffix in created:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(f"{path}{suffix}")


def damaged(error: Exception, path: str, *, after: object = None, seq: int | None = None) -> SpecViolation | OSError:
    """The refusal for an error SQLite raised: not a database (SESSION-SQLITE-SCHEMA.3) or damaged (SESSION-SQLITE-ROW.4);
    or, for an error of the machine's (`fault`), that OSError."""
    machine = fault(error, path)
    if machine is not None:
        return machine
    if isinstance(error, UnicodeDecodeError):
        error = sqlite3.DatabaseError(f"an error message that is not UTF-8 (damaged schema text): {error}")
    if getattr(error, "sqlite_errorcode", None) == _NOT_A_DATABASE:
        return refuse(UNVERSIONED, Kind.VERSION, path, f"not a SQLite session database: {error}")
    # ROW.4: what lies past the damage cannot be read, so it cannot be judged a torn tail either.
    where = "while opening it" if after is None else f"after the row at seq {after}"
    return refuse(DAMAGED, Kind.ENVELOPE, path, f"the database is damaged: SQLite fails {where}: {error}", seq=seq)


# --- opening ------------------------------------------------------------------------------------


def _judge_file(path: Path, *, write: bool) -> None:
    """SESSION-STORAGE-RECORD.2: SQLite would block on a FIFO too; the file is judged before SQLite opens it."""
    with formats.open_regular(path) as stream:
        magic = formats.read_or_refuse(stream, 16, path)
    if magic != SQLITE_MAGIC and (magic or not write):
        raise refuse(UNVERSIONED, Kind.VERSION, str(path), "not a SQLite session database (bad file header)")


def _uri(path: Path, query: str = "") -> str:
    return f"file:{urllib.parse.quote(str(path.absolute()))}" + (f"?{query}" if query else "")


def _open(uri: str, name: str) -> sqlite3.Connection:
    try:
        connection = sqlite3.connect(uri, uri=True, isolation_level=None, timeout=30)
    except DRIVER_ERRORS as error:
        raise damaged(error, name) from None
    # SESSION-LOSSLESS-TEXT.1: TEXT arrives as bytes and is judged per value, never failing the whole query.
    connection.text_factory = text_factory
    return connection


def connect(path: Path) -> sqlite3.Connection:
    """A connection for writing: WAL, `synchronous = FULL` (SESSION-STORAGE-WRITE.2). Readers use ReadOnly."""
    name = str(path)
    writable(Path(path))
    if Path(path).exists():
        _judge_file(Path(path), write=True)
    connection = _open(_uri(Path(path)), name)
    try:
        connection.execute("PRAGMA foreign_keys = ON")
        connection.execute("PRAGMA journal_mode = WAL")
        connection.execute("PRAGMA synchronous = FULL")
    except DRIVER_ERRORS as error:
        connection.close()
        raise damaged(error, name) from None
    return connection


def _stamp(path: Path) -> tuple[int, ...] | None:
    try:
        status = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as error:
        if error.errno == errno.ENAMETOOLONG:
            return None  # a -wal whose name is too long for the file system: there is none
        raise
    return (status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns)


class ReadOnly:
    """SESSION-SQLITE-READ.1: a read-only connection to the database at `path` that creates no file beside it.

    `unchanged()` says whether a read made without SQLite's locks (of the file as immutable) still
    stands: the file is as it was when the read began. A private copy is checked while it is made.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        _judge_file(self.path, write=False)
        wal = Path(f"{path}-wal")
        sides = side_files(self.path)
        self._scratch: tempfile.TemporaryDirectory[str] | None = None
        self._watched: list[Path] = []
        if too_long(self.path):
            # A path SQLite cannot open (SQLITE_PATH_MAX): a private copy of the database (and its WAL), as below.
            uri = _uri(self._copy(wal), "")
        elif {"-wal", "-shm"} <= sides:
            # A writer's WAL and its index: read through them under SQLite's locks, which create nothing.
            uri = _uri(self.path, "mode=ro")
        elif not sides & {"-wal", "-journal"}:
            # The file alone is the committed state: read as it is, without locks; it is checked afterwards.
            self._watched = [self.path]
            uri = _uri(self.path, "mode=ro&immutable=1")
        else:
            # A WAL without its index (or a rollback journal): read a private copy, whose index goes with it; the
            # copy holds still, so only the copying is watched.
            uri = _uri(self._copy(wal), "")
        self._stamps = [_stamp(watched) for watched in self._watched]
        self.connection = _open(uri, str(path))
        try:
            # Read-only whatever was opened (a private copy is opened for writing, to recover its own journal).
            self.connection.execute("PRAGMA query_only = ON")
        except DRIVER_ERRORS as error:
            self.close()
            raise damaged(error, str(path)) from None

    def _copy(self, wal: Path) -> Path:
        self._scratch = tempfile.TemporaryDirectory(prefix="sessionspec-read-")
        copy = Path(self._scratch.name) / "log.sqlite"
        before = [_stamp(self.path), _stamp(wal)]
        sides = side_files(self.path)
        for source, suffix in ((self.path, ""), (wal, "-wal"), (Path(f"{self.path}-journal"), "-journal")):
            if not suffix or suffix in sides:
                shutil.copyfile(source, f"{copy}{suffix}")
        if [_stamp(self.path), _stamp(wal)] != before:
            self.close()
            raise refuse(CHANGED, Kind.ENVELOPE, str(self.path),
                         "the database changed while it was copied to be read; read it again")
        return copy

    def unchanged(self) -> bool:
        return [_stamp(watched) for watched in self._watched] == self._stamps

    def close(self) -> None:
        if hasattr(self, "connection"):
            self.connection.close()
        if self._scratch is not None:
            self._scratch.cleanup()


def changed(path: str, *, after: object = None, seq: int | None = None) -> SpecViolation:
    """SESSION-STORAGE-RECORD.4: a read made without SQLite's locks found the database changed under it."""
    where = "before a row was read" if after is None else f"after the row at seq {after}"
    return refuse(CHANGED, Kind.ENVELOPE, path, f"the database changed while it was read ({where}): another writer "
                  f"wrote to it; read it again", seq=seq)


# --- the database identity ----------------------------------------------------------------------


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
    _no_foreign_objects(connection, path)


def _no_foreign_objects(connection: sqlite3.Connection, path: str) -> None:
    """SESSION-SQLITE-SCHEMA.5: nothing but the format's tables, their own indexes and SQLite's internal tables."""
    for kind, name, table in connection.execute("SELECT type, name, tbl_name FROM sqlite_master ORDER BY rowid"):
        ours = kind == "table" and name in COLUMNS
        own_index = kind == "index" and str(name).startswith("sqlite_autoindex_") and table in COLUMNS
        internal = kind == "table" and str(name).startswith("sqlite_")  # sqlite_sequence, ANALYZE's sqlite_stat1
        if not (ours or own_index or internal):
            # .5 A trigger runs inside our own write transactions (it can loop, raise or rewrite rows); a view or
            #    an index is no part of the format either, and says some other writer changed the schema.
            raise refuse(FOREIGN_OBJECTS, Kind.VERSION, path,
                         f"session database at {path!r} holds a {kind} {shown(str(name))} on {shown(str(table))} that the format "
                         f"does not define: refusing to read or write it")


def _initialise(connection: sqlite3.Connection) -> None:
    for statement in DDL:
        connection.execute(statement)
    connection.execute("INSERT INTO persistence_state (singleton, store_id) VALUES (1, ?)", (str(uuid.uuid4()),))
    connection.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    connection.execute(f"PRAGMA user_version = {USER_VERSION}")
