"""Durable file writes: atomic create without overwrite, fsynced appends that roll back on failure.

A log that a crash leaves half-published, or that a failed append leaves with a partial batch
in the middle, is a log that later appends make unreadable. So a new log appears complete or
not at all (temp file, fsync, hard link, directory fsync), a batch is acknowledged only after
fsync, and a failed write truncates the file back to the size it had.

Every write to an existing log holds an exclusive advisory lock (`flock`) on it, so a repair can
check, under that lock, that the log is still the one its closers were computed from, and a
repair is read back before it is written (`spliced`: the kept bytes, then the new ones).

A writer killed between creating its temp file and publishing it leaves the temp file behind;
its name carries the writer's pid, so the next save or repair of that log removes it once the
writer is gone.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import io
import os
import re
import resource
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from sessionspec.errors import Kind, SpecViolation
from sessionspec.rules import define

PUBLISH = define("SESSION-STORAGE-WRITE.1", Kind.INTERNAL, "a new log is published atomically and never overwrites one")
ACKNOWLEDGE = define("SESSION-STORAGE-WRITE.2", Kind.INTERNAL, "a batch is acknowledged only after it is fsynced")
ROLLBACK = define("SESSION-STORAGE-WRITE.3", Kind.INTERNAL, "a failed append leaves the file at its previous size")
STALE = define("SESSION-STORAGE-WRITE.4", Kind.INTERNAL,
               "a repair commits only if, under the write lock, the log is still the one it was computed from")
VERIFIED = define("SESSION-STORAGE-WRITE.5", Kind.INTERNAL,
                  "a repair is written only once its result reads back as the loaded events plus the closers")
TEMP_FILES = define("SESSION-STORAGE-WRITE.6", Kind.INTERNAL,
                    "a temp file names its writer's pid; the next save or repair of the log removes those of dead writers")


def fsync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # it exists, under another user
    return True


def remove_stale_temps(path: Path) -> list[Path]:
    """SESSION-STORAGE-WRITE.6: remove the temp files of `path` whose writer is no longer running; returns them."""
    pattern = re.compile(rf"\.{re.escape(path.name)}\.([0-9]+)\.[0-9a-f]{{12}}\.tmp")
    removed: list[Path] = []
    try:
        entries = list(os.scandir(path.parent))
    except OSError:
        return removed
    for entry in entries:
        match = pattern.fullmatch(entry.name)
        if match and int(match.group(1)) != os.getpid() and not _alive(int(match.group(1))):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(entry.path)
                removed.append(Path(entry.path))
    return removed


def publish(path: Path, content: bytes) -> None:
    """SESSION-STORAGE-WRITE.1: write a temp file, fsync it, hard-link it into place, fsync the directory."""
    path = Path(path)
    remove_stale_temps(path)
    # SESSION-STORAGE-WRITE.6: the pid in the name tells a later writer whether this one is gone.
    temp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(6)}.tmp")
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


def revision(stat: os.stat_result, size: int) -> tuple[int, ...]:
    """The upstream's file revision token (notes §4.2), with the size a reader actually read."""
    return (stat.st_dev, stat.st_ino, size, stat.st_mtime_ns)


def append(path: Path, content: bytes) -> None:
    """SESSION-STORAGE-WRITE.2 and SESSION-STORAGE-WRITE.3: append and fsync, or truncate back and re-raise."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        _append_locked(fd, path, content)
    finally:
        os.close(fd)


def repair(path: Path, read: tuple[int, ...], keep: int | None, content: bytes,
           verify: Callable[[], object] = lambda: None) -> os.stat_result:
    """SESSION-STORAGE-WRITE.4: under the lock, the log must be as read; then cut it to `keep` bytes and append.

    `verify` reads the result back before anything is written (SESSION-STORAGE-WRITE.5), under the
    lock and after the revision is compared: a log that changed since the plan is stale, whatever
    its read-back would say, and no writer can change it between the read-back and the write.
    Returns the file's status once written, for the revision token of the repaired log.
    """
    remove_stale_temps(Path(path))
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        stat = os.fstat(fd)
        # .4 Another writer appended (or rewrote the file) after the read: the cut and the closers are stale.
        if revision(stat, stat.st_size) != read:
            raise SpecViolation(STALE, Kind.INTERNAL,
                                f"{path}: repair is stale: the log changed after it was read (another writer appended "
                                f"or rewrote it; it is now {stat.st_size} bytes); load it and repair again")
        # .5 Then the result is read back; a raise here leaves the file as it was.
        verify()
        room(path, stat.st_size, (stat.st_size if keep is None else keep) + len(content))
        if keep is not None:
            os.ftruncate(fd, keep)
            os.fsync(fd)
        _append_locked(fd, path, content)
        return os.fstat(fd)
    finally:
        os.close(fd)


def room(path: Path, size: int, final: int) -> None:
    """Before a repair cuts anything: a file of `size` bytes may grow to `final` (issue 34: a file-size limit made a
    repair commit its cut, then fail to write the closers). A limit (RLIMIT_FSIZE) below `final` and a file system
    without the bytes the file grows by are said as the OSError the write would raise (EFBIG, ENOSPC), with the file
    as it was; a disk that fills up after this leaves the cut alone committed, a valid log that repair finishes."""
    limit = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
    if limit != resource.RLIM_INFINITY and final > limit:
        raise OSError(errno.EFBIG, f"{os.strerror(errno.EFBIG)}: the repaired log would be {final} bytes, over the "
                      f"file-size limit of {limit}", str(path))
    if final > size:
        status = os.statvfs(Path(path).parent)
        if status.f_bavail * status.f_frsize < final - size + status.f_frsize:
            raise OSError(errno.ENOSPC, f"{os.strerror(errno.ENOSPC)}: the repair needs {final - size} more bytes",
                          str(path))


class _Spliced(io.RawIOBase):
    """The bytes `path[:keep] + content`, seekable, without writing them: what a repair would leave."""

    def __init__(self, path: Path, keep: int, content: bytes) -> None:
        self._file = open(path, "rb")  # noqa: SIM115 - closed with this stream
        self._keep = keep
        self._content = content
        self._pos = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        size = self._keep + len(self._content)
        self._pos = max(0, {io.SEEK_SET: offset, io.SEEK_CUR: self._pos + offset, io.SEEK_END: size + offset}[whence])
        return self._pos

    def tell(self) -> int:
        return self._pos

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        view = memoryview(buffer).cast("B")
        if self._pos < self._keep:
            self._file.seek(self._pos)
            got = self._file.readinto(view[: min(len(view), self._keep - self._pos)])
        else:
            at = self._pos - self._keep
            chunk = self._content[at: at + len(view)]
            view[: len(chunk)] = chunk
            got = len(chunk)
        self._pos += got
        return got

    def close(self) -> None:
        self._file.close()
        super().close()


def spliced(path: Path, keep: int, content: bytes) -> BinaryIO:
    """SESSION-STORAGE-WRITE.5: a stream of what a repair that keeps `keep` bytes and appends `content` leaves."""
    return io.BufferedReader(_Spliced(path, keep, content), buffer_size=1 << 20)


def _append_locked(fd: int, path: Path, content: bytes) -> None:
    if not content:
        return
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
