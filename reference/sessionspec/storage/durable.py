"""Durable file writes: atomic create without overwrite, fsynced appends that roll back on failure.

A log that a crash leaves half-published, or that a failed append leaves with a partial batch
in the middle, is a log that later appends make unreadable. So a new log appears complete or
not at all (temp file, fsync, hard link, directory fsync), a batch is acknowledged only after
fsync, and a failed write truncates the file back to the size it had.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path

from sessionspec.errors import Kind, SpecViolation
from sessionspec.rules import define

PUBLISH = define("SESSION-STORAGE-WRITE.1", Kind.INTERNAL, "a new log is published atomically and never overwrites one")
ACKNOWLEDGE = define("SESSION-STORAGE-WRITE.2", Kind.INTERNAL, "a batch is acknowledged only after it is fsynced")
ROLLBACK = define("SESSION-STORAGE-WRITE.3", Kind.INTERNAL, "a failed append leaves the file at its previous size")


def fsync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def publish(path: Path, content: bytes) -> None:
    """SESSION-STORAGE-WRITE.1: write a temp file, fsync it, hard-link it into place, fsync the directory."""
    path = Path(path)
    temp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        try:
            _write_all(fd, content)
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(temp, path)
        except FileExistsError:
            raise SpecViolation(PUBLISH, Kind.INTERNAL,
                                f"{path}: a session log already exists here; load or resume it instead of creating") from None
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
    fsync_directory(path.parent)


def _write_all(fd: int, content: bytes) -> None:
    view = memoryview(content)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def append(path: Path, content: bytes) -> None:
    """SESSION-STORAGE-WRITE.2 and SESSION-STORAGE-WRITE.3: append and fsync, or truncate back and re-raise."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        size = os.fstat(fd).st_size
        try:
            _write_all(fd, content)
            os.fsync(fd)
        except BaseException as error:
            # SESSION-STORAGE-WRITE.3: back to the previous size, durably, before the error propagates.
            try:
                os.ftruncate(fd, size)
                os.fsync(fd)
            except OSError as rollback:
                raise BaseExceptionGroup(f"failed to roll back append to {str(path)!r}", [error, rollback]) from None
            raise
    finally:
        os.close(fd)


def truncate(path: Path, size: int) -> None:
    """Cut a torn tail: keep the first `size` bytes, durably."""
    fd = os.open(path, os.O_WRONLY)
    try:
        os.ftruncate(fd, size)
        os.fsync(fd)
    finally:
        os.close(fd)
