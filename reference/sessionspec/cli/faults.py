"""Faults of the machine a command runs on: one line saying which, and exit 2 (issue 34).

A full disk (ENOSPC, SQLITE_FULL), a read-only file system (EROFS, SQLITE_READONLY), a file-size
limit (EFBIG), a name or path too long (ENAMETOOLONG), no permission (EACCES, SQLITE_PERM), an I/O
error (EIO, SQLITE_IOERR), a database SQLite cannot open (SQLITE_CANTOPEN), and a standard output
that is closed, full or a broken pipe say nothing about a log: they are the machine's, so a command
cannot run (exit 2, the convention of `sessionspec --help`), never a traceback, never a finding and
never "damaged". The storage layer leaves the log unchanged or valid when a write fails (spec/07,
SESSION-STORAGE-WRITE.3 and .5); this module only says so, once, for every command: `main`
catches what `caught()` names, and `report` writes the reason.

sqlite3 is never imported here (a JSONL command does not load it, tests/test_startup.py): its
errors are caught only once a command has loaded it, and told apart from damage by their code.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys
from typing import Final, TextIO

FAULT: Final = 2
"""The exit code: the command cannot run."""

SQLITE_FAULTS: Final = {3: "SQLITE_PERM", 5: "SQLITE_BUSY", 6: "SQLITE_LOCKED", 8: "SQLITE_READONLY",
                        10: "SQLITE_IOERR", 13: "SQLITE_FULL", 14: "SQLITE_CANTOPEN"}
"""SQLite's primary result codes that are the machine's (its file, its disk, its locks), not the database's content;
an extended code (SQLITE_IOERR_WRITE is 778) has its primary code in its low byte."""

STDOUT: Final = "standard output"


def caught() -> tuple[type[BaseException], ...]:
    """What `dispatch` catches to look at: OSError, and sqlite3.Error once a command has loaded sqlite3."""
    sqlite3 = sys.modules.get("sqlite3")
    return (OSError,) if sqlite3 is None else (OSError, sqlite3.Error)


def is_fault(error: BaseException) -> bool:
    """Whether `error` is the machine's: any OSError, or a SQLite error whose code is one of SQLITE_FAULTS."""
    if isinstance(error, OSError):
        return True
    code = getattr(error, "sqlite_errorcode", None)
    return isinstance(code, int) and code & 0xFF in SQLITE_FAULTS


def closed_stdout() -> OSError | None:
    """A standard output that was closed before the command started (Python then sets `sys.stdout` to None)."""
    if sys.stdout is None:
        return OSError(errno.EBADF, "is closed (nothing the command says could be read)")
    return None


def flush() -> None:
    """Standard output flushed inside the command, so a full or broken one fails where `main` catches it, not as
    the interpreter exits (where Python prints a traceback of its own and exits 120)."""
    if sys.stdout is not None:
        sys.stdout.flush()


class Watched:
    """Standard output as a command writes to it, whose failures name it: a write to a full or closed pipe raises
    an OSError that names no file, like a failed write to the log itself, so the one is told from the other here."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except OSError as error:
            raise _named(error) from error

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as error:
            raise _named(error) from error

    def __getattr__(self, name: str) -> object:
        return getattr(self._stream, name)


def _named(error: OSError) -> OSError:
    named = type(error)(error.errno, error.strerror or str(error))
    named.filename = STDOUT
    return named


def reason(error: BaseException, subject: str | None) -> str:
    """One line: what failed (the file the error names, else standard output if that is what is broken, else
    `subject`), why (the system's or SQLite's words), and the error's name."""
    if isinstance(error, OSError):
        name = errno.errorcode.get(error.errno or 0, "OSError")
        text = error.strerror or str(error) or name
        what = error.filename if error.filename is not None else None
    else:
        name = str(getattr(error, "sqlite_errorname", "SQLITE_ERROR"))
        text, what = str(error) or name, None
    if what is None:
        what = STDOUT if isinstance(error, BrokenPipeError) else subject
    where = "" if what is None else f"{os.fsdecode(what) if isinstance(what, str | bytes) else what}: "
    return " ".join(f"sessionspec: {where}{text} ({name})".split())


def report(error: BaseException, subject: str | None) -> int:
    """The reason on standard error (if that can still be written), standard output made harmless; returns FAULT."""
    line = "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in reason(error, subject))
    silence(sys.stdout)
    if sys.stderr is not None:  # a closed one: the exit code says it alone
        with contextlib.suppress(OSError, ValueError, AttributeError):
            print(line, file=sys.stderr, flush=True)
    return FAULT


def silence(stream: TextIO | None) -> None:
    """A failed standard output pointed at /dev/null, so what is still buffered cannot fail again as Python exits."""
    if stream is None:
        return
    try:
        stream.flush()
        return  # it works: the fault was elsewhere
    except (OSError, ValueError):
        pass
    try:
        fd = stream.fileno()
    except (OSError, ValueError, AttributeError):
        return  # not a file (a caller's buffer): nothing is flushed to it as Python exits
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, fd)
    finally:
        os.close(null)
