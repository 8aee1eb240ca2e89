"""Which backend a path holds: the one `detect` every reader and tool uses, and how a log file is opened.

A stored file's first bytes are the truth about its format (a zstd frame, a SQLite database);
its name only speaks for a file that is not there yet (a log about to be written) or that is
empty, or for text the readers must judge. One function decides, so that `load`, `check`,
`show` and `repair` can never open one file as two different formats.

A log is a regular file. A FIFO given as a log would block its reader until some writer came
along, a device never ends, a directory has no bytes to read: each is refused before a byte is
read (SESSION-STORAGE-RECORD.2), by opening without blocking and asking the descriptor what it is.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import BinaryIO, Final

from sessionspec.errors import Kind
from sessionspec.rules import define

REGULAR = define("SESSION-STORAGE-RECORD.2", Kind.UNSUPPORTED,
                 "a log is a regular file; a FIFO, directory, device or socket is refused before it is read")

ZSTD_MAGIC: Final = b"\x28\xb5\x2f\xfd"
SQLITE_MAGIC: Final = b"SQLite format 3\x00"
FORMATS: Final = ("jsonl", "jsonl.zstd", "sqlite")


class Unreadable(Exception):
    """Not a session log this build can open at all (missing, not a regular file, an unknown format, a newer
    format, a foreign database): exit 2. `rule` names the rule that refuses it, where one does."""

    def __init__(self, message: str, *, rule: str | None = None) -> None:
        super().__init__(message)
        self.rule = rule


def by_name(path: Path | str) -> str | None:
    """The format a file name says: `.jsonl`; `.jsonl.zstd`, `.zst`, `.zstd`; `.sqlite`, `.sqlite3`, `.db`."""
    name = Path(path).name.lower()
    if name.endswith(".jsonl"):
        return "jsonl"
    if name.endswith((".jsonl.zstd", ".zst", ".zstd")):
        return "jsonl.zstd"
    if name.endswith((".sqlite", ".sqlite3", ".db")):
        return "sqlite"
    return None


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def open_regular(path: Path | str) -> BinaryIO:
    """SESSION-STORAGE-RECORD.2: `path` opened for reading, if it is a regular file; else Unreadable.

    O_NONBLOCK makes the open of a FIFO return at once (a blocking open waits for a writer);
    the descriptor's own fstat then decides, so a path swapped after a check cannot slip through.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0))
    except FileNotFoundError:
        raise Unreadable(f"{path}: no such file") from None
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise Unreadable(f"{path}: {REGULAR}: a symbolic link loop, not a regular file", rule=REGULAR) from None
        raise Unreadable(f"{path}: {error.strerror or error}") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise Unreadable(f"{path}: {REGULAR}: {_kind(mode)}, not a regular file: a log is a regular file",
                             rule=REGULAR)
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def check_regular(path: Path | str) -> None:
    """SESSION-STORAGE-RECORD.2 for a reader that opens the path itself (SQLite): refuse what is not a regular file."""
    open_regular(path).close()


def detect(path: Path | str, *, existing: bool = True) -> str:
    """The backend of `path`: "jsonl", "jsonl.zstd" or "sqlite".

    An existing file is read by its magic bytes, then by its name, then as JSONL if it starts
    like a JSON object or array (the header gate then says what is wrong with it); anything else
    raises Unreadable. With `existing=False` (a path to write) a missing or empty file is named by
    its suffix, JSONL when the suffix says nothing.
    """
    try:
        with open_regular(path) as stream:
            head = stream.read(16)
    except Unreadable:
        if not existing and not os.path.lexists(path):
            return by_name(path) or "jsonl"
        raise
    if head.startswith(ZSTD_MAGIC):
        return "jsonl.zstd"
    if head.startswith(SQLITE_MAGIC):
        return "sqlite"
    named = by_name(path)
    if named is not None:
        return named
    if head.startswith((b"{", b"[")) or (not head and not existing):
        return "jsonl"
    raise Unreadable(f"{path}: not a session log (neither JSONL, zstd-framed JSONL nor SQLite)")
