"""The upstream's directory layout: `<root>/--<projectKey(cwd)>--/<encodeSegment(id)>/session.jsonl[.zstd]`.

Operators point our tools at a harness's session root and name a session by id and cwd; these
mappings are the upstream's, code unit for code unit (UTF-16, as JavaScript strings are), so
the path we compute is the path the harness wrote.
"""

from __future__ import annotations

import re
from pathlib import Path

from sessionspec.errors import Kind, SpecViolation
from sessionspec.rules import define

SEGMENT = define("SESSION-STORAGE-LAYOUT.1", Kind.HEADER,
                 "encodeSegment keeps [A-Za-z0-9._-] and writes every other UTF-16 unit as ~XXXX; . and .. are encoded")
PROJECT = define("SESSION-STORAGE-LAYOUT.2", Kind.HEADER,
                 "projectKey maps separator runs to -, strips leading -, encodes the rest, keeps 251 characters")
EMPTY_ID = define("SESSION-STORAGE-LAYOUT.3", Kind.HEADER, "a session id that is empty has no directory")

_SAFE = re.compile(r"[A-Za-z0-9._-]")
_SEPARATORS = re.compile(r"[/\\:]+")
NO_CWD = "_no-cwd"
PROJECT_KEY_LIMIT = 251


def _units(text: str) -> list[int]:
    """The UTF-16 code units of `text` (a lone surrogate is one unit, as in JavaScript)."""
    raw = text.encode("utf-16-le", "surrogatepass")
    return [int.from_bytes(raw[i:i + 2], "little") for i in range(0, len(raw), 2)]


def _encode_units(text: str, keep: re.Pattern[str]) -> str:
    out = []
    for unit in _units(text):
        char = chr(unit)
        out.append(char if unit < 0x80 and keep.fullmatch(char) else f"~{unit:04X}")
    return "".join(out)


def encode_segment(session_id: str) -> str:
    """SESSION-STORAGE-LAYOUT.1: one path segment for a session id, reversible and never `.` or `..`."""
    # .3 An empty id would name the project directory itself.
    if session_id == "":
        raise SpecViolation(EMPTY_ID, Kind.HEADER, "cannot encode an empty session id as a path segment")
    if session_id in (".", ".."):
        return "~002E" * len(session_id)
    return _encode_units(session_id, _SAFE)


def project_key(cwd: str | None) -> str:
    """SESSION-STORAGE-LAYOUT.2: the project directory of a cwd (lossy: many cwds share one key)."""
    if cwd is None:
        return NO_CWD
    key = _SEPARATORS.sub("-", cwd).lstrip("-") or "root"
    return f"--{_encode_units(key, _SAFE)[:PROJECT_KEY_LIMIT]}--"


def session_path(root: Path, session_id: str, cwd: str | None = None, *, compression: bool = True) -> Path:
    """Where the harness keeps the log of `session_id` started in `cwd`."""
    name = "session.jsonl.zstd" if compression else "session.jsonl"
    return Path(root) / project_key(cwd) / encode_segment(session_id) / name
