"""Which backend a path holds: the one `detect` every reader and tool uses, and how a log file is opened.

A stored file's first bytes are the truth about its format (a zstd frame, a SQLite database);
its name only speaks for a file that is not there yet (a log about to be written) or that is
empty, or for text the readers must judge. One function decides, so that `load`, `check`,
`show` and `repair` can never open one file as two different formats.

A log is a regular file. A FIFO given as a log would block its reader until some writer came
along, a device never ends, a directory has no bytes to read: each is refused before a byte is
read (SESSION-STORAGE-RECORD.2), by opening without blocking and asking the descriptor what it is.
A file of a pseudo file system (`/proc`, `/sys`) says it is regular, but its size means nothing
and reading it may fail (`/proc/self/mem`) or never end: it is refused the same way, by asking
the descriptor's file system. A read that fails all the same (an I/O error) refuses the log with
SESSION-STORAGE-RECORD.4, never a traceback.
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

CHANGED = define("SESSION-STORAGE-RECORD.4", Kind.ENVELOPE,
                 "a log that fails to read, shrinks, or changes under a reader that holds no lock is refused where "
                 "that is found, never judged a torn tail")

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


PSEUDO_FILE_SYSTEMS: Final = frozenset({
    "proc", "sysfs", "debugfs", "tracefs", "securityfs", "configfs", "cgroup", "cgroup2", "bpf", "pstore", "efivarfs",
    "fusectl", "binfmt_misc", "devpts", "mqueue", "nsfs", "selinuxfs", "autofs", "rpc_pipefs", "hugetlbfs",
})
"""File systems whose files are the kernel's answers, not stored bytes (Linux names, from /proc/self/mountinfo)."""


def pseudo_file_system(fd: int) -> str | None:
    """The pseudo file system the open file `fd` lives on (`proc`, `sysfs`, ...), or None for storage.

    Such a file system has no blocks (statvfs), which is asked first, so a file on a disk costs one
    system call; the mount table then names the file system of the file's device.
    """
    try:
        if os.fstatvfs(fd).f_blocks != 0:
            return None
        device = os.fstat(fd).st_dev
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as mounts:
            table = mounts.read()
    except OSError:
        return None  # no mount table to ask (not Linux): the file's type has been judged already
    wanted = f"{os.major(device)}:{os.minor(device)}"
    for line in table.splitlines():
        fields, _, rest = line.partition(" - ")
        if fields.split()[2:3] == [wanted] and rest.split()[:1] and rest.split()[0] in PSEUDO_FILE_SYSTEMS:
            return rest.split()[0]
    return None


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
        pseudo = pseudo_file_system(fd)
        if pseudo is not None:
            raise Unreadable(f"{path}: {REGULAR}: a file of the {pseudo} pseudo file system, not a regular file: "
                             f"a log is a regular file", rule=REGULAR)
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_or_refuse(stream: BinaryIO, size: int, path: Path | str) -> bytes:
    """The first read of a log: an I/O error makes it unreadable (SESSION-STORAGE-RECORD.4), not a traceback."""
    try:
        return stream.read(size)
    except OSError as error:
        raise Unreadable(f"{path}: {CHANGED}: the file fails to read: {error.strerror or error}", rule=CHANGED) from None


def detect(path: Path | str, *, existing: bool = True) -> str:
    """The backend of `path`: "jsonl", "jsonl.zstd" or "sqlite".

    An existing file is read by its magic bytes, then by its name, then as JSONL if it starts
    like a JSON object or array (the header gate then says what is wrong with it); anything else
    raises Unreadable. With `existing=False` (a path to write) a missing or empty file is named by
    its suffix, JSONL when the suffix says nothing.
    """
    try:
        with open_regular(path) as stream:
            head = read_or_refuse(stream, 16, path)
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
