"""The save check's fixed statement of what a writer lays out: each saved session's records, per zstd frame.

The save check holds a testee's file to the bytes the reference's writer writes for the same
events. That comparison is only as good as the reference's writer: had it moved (a run of three
chunks left verbatim, SESSION-CHUNK-ROWS.6; one zstd frame per record where a batch is one frame,
SESSION-ZSTD-FRAMES.2), the testee's file and the canonical one would have moved alike and agreed.
So each saved session's layout, as the reference wrote it when the vectors were generated, is
committed beside the storage vectors (`save-layouts.jsonl`, kept current by `vectors check`), and a
saved file is held to it as well.

A layout is read with orjson, zstandard and sqlite3 alone, never with the storage package, so a
change in the reference's writer shows as a change and is not copied: each record's type and first
seq (a packed row's tag and seq0; the header's type and no seq), in its zstd frame. Times are left
out (they are the testee's clock), so a session's layout depends only on its requests.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Final

import orjson
import zstandard

FILE: Final = "save-layouts.jsonl"
"""Beside the storage vectors, one line per saved session and backend: `{"session", "backend", "layout"}`."""
Layouts = dict[tuple[str, str], Any]


def _record(line: bytes) -> list[Any]:
    value = orjson.loads(line)
    return [value.get("type"), value.get("seq", value.get("seq0"))]


def _frames(data: bytes) -> Iterator[bytes]:
    """Each zstd frame's plaintext, in order (a frame's decoder stops at its end and leaves the rest unused)."""
    while data:
        decoder = zstandard.ZstdDecompressor().decompressobj()
        yield decoder.decompress(data)
        data = decoder.unused_data


def layout(path: Path, backend: str) -> Any:
    """The file's records as [type, first seq]: a list of them (JSONL, SQLite rows in seq order), or of frames of them
    (zstd). None if the file cannot be read so (the reference's gate has loaded it by then, so that is a finding)."""
    try:
        if backend == "jsonl":
            return [_record(line) for line in path.read_bytes().splitlines() if line]
        if backend == "jsonl.zstd":
            return [[_record(line) for line in plain.splitlines() if line] for plain in _frames(path.read_bytes())]
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as connection:
            return [[kind, seq] for seq, kind in connection.execute("SELECT seq, type FROM events ORDER BY session_id, seq")]
    except (OSError, ValueError, zstandard.ZstdError, sqlite3.Error):
        return None


def render(entries: Iterable[tuple[str, str, Any]]) -> bytes:
    """The committed file: one JSON line per (session, backend, layout), in the order given."""
    return b"".join(orjson.dumps({"session": session, "backend": backend, "layout": laid}) + b"\n"
                    for session, backend, laid in entries)


def read(directory: Path) -> Layouts:
    """The committed layouts by (session, backend); none when the vectors' folder has no such file (an older copy)."""
    path = directory / FILE
    if not path.is_file():
        return {}
    out: Layouts = {}
    for line in path.read_bytes().splitlines():
        entry = json.loads(line)
        out[(entry["session"], entry["backend"])] = entry["layout"]
    return out


def differences(path: Path, backend: str, expected: Any) -> list[str]:
    """Why the saved file's layout is not the committed one (empty: it is)."""
    got = layout(path, backend)
    if got == expected:
        return []
    if got is None:
        return ["layout: expected records and frames to read, got a file orjson, zstandard or sqlite3 cannot read"]
    flat_got, flat_expected = (_flat(got), _flat(expected)) if backend == "jsonl.zstd" else (got, expected)
    if flat_got == flat_expected:
        return [f"layout: expected the records in {len(expected)} zstd frames (SESSION-ZSTD-FRAMES.2: one a batch), "
                f"got {len(got)}"]
    at = next((k for k, (a, b) in enumerate(zip(flat_got, flat_expected, strict=False)) if a != b), min(len(flat_got), len(flat_expected)))
    return [f"layout: expected {len(flat_expected)} stored records as spec/07 packs them (SESSION-CHUNK-ROWS.6), got "
            f"{len(flat_got)}; the first to differ is record {at}: expected "
            f"{flat_expected[at] if at < len(flat_expected) else 'none'}, got {flat_got[at] if at < len(flat_got) else 'none'}"]


def _flat(frames: list[Any]) -> list[Any]:
    return [record for frame in frames for record in frame]
