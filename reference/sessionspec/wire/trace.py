"""The one trace format: what `conform`, the machines and the explorer write, and `sessionspec replay` reads.

A trace is the requests that reproduce a finding, in the protocol's request shapes, from the
`create` that starts it: `{"format": "sessionspec-trace/3", "id", "source", "implementation",
"requests": [...]}` plus whatever the writer adds for people (`rule`, `family`, `why`). A request
is an object, or a string: a raw line sent as it is (a line that is not JSON, or a value nested
deeper than a JSON document should hold), or, for a raw line that is not valid UTF-8, its bytes
as `{"$line-base64": "..."}`: a JSON string cannot hold such bytes, and the surrogate escape
Python would write (`"\udcff"`) is read by every other language as the character U+DCFF, so
another reader would send other bytes. In-process writers may hold values JSON cannot (the
machine's deliberately invalid data: tuples, NaN, integer keys); they are written as tagged
objects (`{"$tuple": [...]}`) and restored on reading, so a replay sends exactly what was sent.
Format 2 (without `$line-base64`) is still read. `spec/schema/trace.schema.json` is the shape.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import math
import os
import stat
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from sessionspec.preview import clipped, shown
from sessionspec.wire.protocol import dumps

FORMAT: Final = "sessionspec-trace/3"
READABLE: Final = ("sessionspec-trace/2", FORMAT)
"""The formats this build reads: 3 added `$line-base64`, so a trace of 2 reads the same."""
LINE_BYTES: Final = "$line-base64"
SOURCES: Final = ("conform", "machine", "explore", "vector", "replay")
MAX_TRACE_BYTES: Final = 256 << 20
"""Four request lines at the protocol's line bound: a file larger than that is not a trace anyone wrote."""
MAX_OBJECT_DEPTH: Final = 200
"""A request nested deeper is written as its line, so reading the trace never needs deep recursion."""


class TraceError(Exception):
    """A file that is not a trace this build reads: one line for a person, exit 2."""


@dataclass
class Trace:
    """The requests of one finding, where it came from, and what the writer said about it."""

    requests: list[Any]
    source: str = "replay"
    id: str = ""
    implementation: str | None = None
    notes: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"format": FORMAT, "id": self.id, "source": self.source, "implementation": self.implementation,
                **self.notes, "requests": [written(request) for request in self.requests]}


# --- values JSON cannot hold --------------------------------------------------------------------

_TAGS: Final = ("$tuple", "$frozenset", "$bytes", "$float", "$int", "$pairs")


def encode(value: Any) -> Any:
    """A JSON-writable form of `value` that `decode` turns back into the same Python value."""
    if isinstance(value, tuple):
        return {"$tuple": [encode(v) for v in value]}
    if isinstance(value, frozenset):
        return {"$frozenset": [encode(v) for v in value]}
    if isinstance(value, bytes):
        return {"$bytes": value.hex()}
    if isinstance(value, float) and not math.isfinite(value):
        return {"$float": repr(value)}
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 2**63:
        return {"$int": str(value)}
    if isinstance(value, list):
        return [encode(v) for v in value]
    if isinstance(value, dict):
        if all(type(k) is str for k in value) and not any(k.startswith("$") for k in value):
            return {k: encode(v) for k, v in value.items()}
        return {"$pairs": [[encode(k), encode(v)] for k, v in value.items()]}
    return value


_DECODERS: dict[str, Callable[[Any], Any]] = {
    "$tuple": tuple,
    "$frozenset": frozenset,
    "$bytes": bytes.fromhex,
    "$float": float,
    "$int": int,
    "$pairs": lambda pairs: {k if not isinstance(k, list) else tuple(k): v for k, v in pairs},
}


def _decode_tags(obj: dict[str, Any]) -> Any:
    if len(obj) == 1:
        ((key, value),) = obj.items()
        decoder = _DECODERS.get(key)
        if decoder is not None:
            return decoder(value)
    return obj


def untag(value: Any) -> Any:
    """`value`, plain JSON as a request line carries it, with each tagged object (`{"$tuple": [...]}`) turned into the
    Python value it names: what `x-append` appends (spec/10, x-inprocess). Raises ValueError on a malformed tag."""
    try:
        return json.loads(json.dumps(value), object_hook=_decode_tags)
    except (TypeError, ValueError, RecursionError) as error:  # float("x" * 10 MiB) quotes all of it: cut
        raise ValueError(f"cannot read tagged values: {clipped(str(error), 200)}") from None


def _depth(value: Any, limit: int) -> int:
    """How deep `value` nests, counted up to `limit` (iterative)."""
    stack = [(value, 1)]
    deepest = 0
    while stack:
        node, level = stack.pop()
        if isinstance(node, (dict, list, tuple)):
            deepest = max(deepest, level)
            if deepest >= limit:
                return deepest
            stack.extend((child, level + 1) for child in (node.values() if isinstance(node, dict) else node))
    return deepest


def line_entry(line: str | bytes) -> str | dict[str, str]:
    """A raw line as a trace holds it: the string when the line is valid UTF-8, else its bytes in base64. In memory
    a line that is not (a lone surrogate, as the machine sends one) is the str whose `surrogatepass` encoding is its
    bytes, or the bytes themselves."""
    raw = line if isinstance(line, bytes) else line.encode("utf-8", "surrogatepass")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return {LINE_BYTES: base64.b64encode(raw).decode("ascii")}


def _line_read(entry: Any) -> Any:
    """A request as read: `{"$line-base64": ...}` back to its exact bytes (as the str the runner holds such a line
    as, when it has one: lone surrogates, encoded with `surrogatepass`), anything else as it is."""
    if not (isinstance(entry, dict) and len(entry) == 1 and LINE_BYTES in entry):
        return entry
    text = entry[LINE_BYTES]
    try:
        raw = base64.b64decode(text.encode("ascii") if isinstance(text, str) else b"!", validate=True)
    except (binascii.Error, UnicodeEncodeError):
        raise TraceError(f"not a sessionspec trace: {LINE_BYTES} holds {shown(text)}, not base64") from None
    try:
        return raw.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        return raw


def written(request: Any) -> Any:
    """`request` as a trace holds it: a JSON value that reads back to exactly what was sent."""
    if isinstance(request, (str, bytes)):
        return line_entry(request)
    if _depth(request, MAX_OBJECT_DEPTH) < MAX_OBJECT_DEPTH:
        return encode(request)
    return line_entry(dumps(request))


# --- files -------------------------------------------------------------------------------------


def render(trace: Trace) -> str:
    return json.dumps(trace.to_json(), indent=1, ensure_ascii=True) + "\n"


def fresh_directory() -> Path:
    """A new directory for one run's traces (under $SESSIONSPEC_TRACE_DIR when set, else the temp dir): a run's
    report names it, and no run's files mix with another's."""
    parent = os.environ.get("SESSIONSPEC_TRACE_DIR")
    if parent:
        Path(parent).mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix="sessionspec-conform-", dir=parent or None))


def write_trace(trace: Trace, directory: Path | None = None) -> Path:
    """Write `trace` under a content-addressed name in `directory` (default: $SESSIONSPEC_TRACE_DIR or the temp dir)."""
    text = render(trace)
    folder = directory or Path(os.environ.get("SESSIONSPEC_TRACE_DIR") or Path(tempfile.gettempdir()) / "sessionspec-traces")
    folder.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256(text.encode("ascii")).hexdigest()[:12]
    stem = "".join(c if c.isalnum() or c in ".-" else "_" for c in (trace.id or trace.source))[:60]
    path = folder / f"{stem}-{digest}.json"
    path.write_text(text, encoding="ascii")
    return path


def parse_trace(text: str) -> Trace:
    """A trace from its text; TraceError (one line) for anything that is not one."""
    try:
        document = json.loads(text, object_hook=_decode_tags)
    except (ValueError, RecursionError, TypeError) as error:
        raise TraceError(f"not a sessionspec trace: not JSON ({str(error)[:120]})") from None
    if not isinstance(document, dict) or document.get("format") not in READABLE:
        found = document.get("format") if isinstance(document, dict) else type(document).__name__
        raise TraceError(f"not a sessionspec trace: format {shown(found)}, expected {FORMAT!r}")
    requests = document.get("requests")
    if not isinstance(requests, list) or not all(isinstance(r, (dict, str)) for r in requests):
        raise TraceError("not a sessionspec trace: `requests` must be a list of request objects or lines")
    requests = [_line_read(request) for request in requests]
    source = document.get("source")
    implementation = document.get("implementation")
    notes = {k: v for k, v in document.items() if k not in ("format", "id", "source", "implementation", "requests")}
    return Trace(requests, source if isinstance(source, str) else "replay", str(document.get("id") or ""),
                 implementation if isinstance(implementation, str) else None, notes)


def read_trace(path: Path | str) -> Trace:
    """The trace in `path`; TraceError (one line) when it cannot be read or is not a trace."""
    try:
        # O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer that may never come.
        with open(os.open(path, os.O_RDONLY | os.O_NONBLOCK), "rb") as stream:
            status = os.fstat(stream.fileno())
            # A FIFO or a device would block or never end; a trace is a file a writer made.
            if not stat.S_ISREG(status.st_mode):
                raise TraceError(f"{path}: not a regular file")
            if status.st_size > MAX_TRACE_BYTES:
                raise TraceError(f"{path}: {status.st_size:,} bytes is over the {MAX_TRACE_BYTES:,} a trace may hold")
            raw = stream.read()
    except OSError as error:
        raise TraceError(f"{path}: {error.strerror or error}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise TraceError(f"{path}: not a sessionspec trace: invalid UTF-8 at byte {error.start}") from None
    try:
        return parse_trace(text)
    except TraceError as error:
        raise TraceError(f"{path}: {error}") from None
