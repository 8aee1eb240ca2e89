"""Which backend a path holds: the one `detect` every reader and tool uses.

A stored file's first bytes are the truth about its format (a zstd frame, a SQLite database);
its name only speaks for a file that is not there yet (a log about to be written) or that is
empty, or for text the readers must judge. One function decides, so that `load`, `check`,
`show` and `repair` can never open one file as two different formats.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

ZSTD_MAGIC: Final = b"\x28\xb5\x2f\xfd"
SQLITE_MAGIC: Final = b"SQLite format 3\x00"
FORMATS: Final = ("jsonl", "jsonl.zstd", "sqlite")


class Unreadable(Exception):
    """Not a session log this build can open at all (missing, not a file, an unknown format): exit 2."""


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


def detect(path: Path | str, *, existing: bool = True) -> str:
    """The backend of `path`: "jsonl", "jsonl.zstd" or "sqlite".

    An existing file is read by its magic bytes, then by its name, then as JSONL if it starts
    like a JSON object; anything else raises Unreadable. With `existing=False` (a path to write)
    a missing or empty file is named by its suffix, JSONL when the suffix says nothing.
    """
    try:
        with open(path, "rb") as stream:
            head = stream.read(16)
    except FileNotFoundError:
        if not existing:
            return by_name(path) or "jsonl"
        raise Unreadable(f"{path}: no such file") from None
    except OSError as error:
        raise Unreadable(f"{path}: {error.strerror or error}") from None
    if head.startswith(ZSTD_MAGIC):
        return "jsonl.zstd"
    if head.startswith(SQLITE_MAGIC):
        return "sqlite"
    named = by_name(path)
    if named is not None:
        return named
    if head.startswith(b"{") or (not head and not existing):
        return "jsonl"
    raise Unreadable(f"{path}: not a session log (neither JSONL, zstd-framed JSONL nor SQLite)")
