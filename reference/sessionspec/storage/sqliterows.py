"""The SQLite row codec (notes §4.3): how one storage record is bound to a row, and read back from one.

Every column of a stored row is untrusted: TEXT may hold bytes that are not UTF-8, a BLOB may
be a zstd frame that decodes to a GiB, a damaged file may put any type in any column. So the
connection hands TEXT over as bytes (`text_factory`), the row query reports each value's length
and withholds one beyond the record bound, and a compressed `data` BLOB is decoded a block at a
time up to that bound. Each defect becomes a SpecViolation naming its rule and the row's seq,
which the scanner then judges as a torn tail or as corruption, as it judges a bad JSONL line.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

import zstandard

from sessionspec.errors import Kind, SpecViolation
from sessionspec.jsontext import UTF8, dumps
from sessionspec.jsonvalue import Json, is_nonneg_safe_int
from sessionspec.live.fasttext import read_line
from sessionspec.rules import define
from sessionspec.storage.budget import Budget, affordable
from sessionspec.storage.chunkrows import ROW_TAGS
from sessionspec.storage.gate import MAX_RECORD_BYTES, RECORD_SIZE
from sessionspec.storage.zstdframes import decode_blob

VARINT = define("SESSION-SQLITE-ROW.1", Kind.ENVELOPE, "source_event_seqs is NULL or a canonical varint BLOB of safe seqs")
DATA = define("SESSION-SQLITE-ROW.2", Kind.JSON, "data is JSON TEXT, or a zstd BLOB of JSON text")
DISCRIMINATOR = define("SESSION-SQLITE-ROW.3", Kind.ENVELOPE,
                       "ignorable is NULL or 1 on events; 0 only on packed rows, with a row tag and no surface columns")

COMPRESS_FROM = 4096


class InvalidText:
    """A TEXT value whose bytes are not UTF-8: held as bytes until a reader refuses it (SESSION-LOSSLESS-TEXT.1)."""

    __slots__ = ("raw",)

    def __init__(self, raw: bytes) -> None:
        self.raw = raw

    def __repr__(self) -> str:
        return f"InvalidText({self.raw[:40]!r})"


def text_factory(raw: bytes) -> str | InvalidText:
    """SQLite TEXT to str, strictly: the sqlite3 default raises mid-query, which would end the read of every row."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return InvalidText(raw)


def text(value: object, what: str, seq: int | None = None) -> object:
    """SESSION-LOSSLESS-TEXT.1: `value` as read, unless it is TEXT that is not UTF-8."""
    if isinstance(value, InvalidText):
        where = f" at seq {seq}" if seq is not None else ""
        raise SpecViolation(UTF8, Kind.JSON, f"{what}{where} is TEXT that is not valid UTF-8", seq=seq)
    return value


# --- the varint BLOB ------------------------------------------------------------------------------


def _uvarint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def encode_seqs(seqs: Iterable[int]) -> bytes:
    """The first seq as unsigned LEB128, each later one as a ZigZag delta."""
    out, prev = bytearray(), None
    for seq in seqs:
        if prev is None:
            out += _uvarint(seq)
        else:
            delta = seq - prev
            out += _uvarint(delta * 2 if delta >= 0 else -delta * 2 - 1)
        prev = seq
    return bytes(out)


def decode_seqs(blob: bytes) -> list[int]:
    """SESSION-SQLITE-ROW.1: refuse truncated, non-canonical and out-of-range varints."""
    values: list[int] = []
    pos, prev = 0, None
    while pos < len(blob):
        value, shift, start = 0, 0, pos
        while True:
            if pos >= len(blob):
                raise SpecViolation(VARINT, Kind.ENVELOPE, "source_event_seqs varint is truncated")
            byte = blob[pos]
            pos += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                break
            if shift > 63:
                raise SpecViolation(VARINT, Kind.ENVELOPE, "source_event_seqs varint is out of range")
        if byte == 0 and pos - start > 1:
            raise SpecViolation(VARINT, Kind.ENVELOPE, "source_event_seqs varint is not canonical")
        seq = value if prev is None else prev + (value >> 1 if not value & 1 else -((value + 1) >> 1))
        if not is_nonneg_safe_int(seq):
            raise SpecViolation(VARINT, Kind.ENVELOPE, f"source_event_seqs value {seq} is out of range")
        values.append(seq)
        prev = seq
    return values


# --- rows ---------------------------------------------------------------------------------------


def _bind_data(value: Json, records: int, seq: int) -> tuple[str | bytes, int]:
    """The `data` column of a row of `records` records, and its stored size.

    SESSION-STORAGE-RECORD.1: nothing is written that a reader would refuse as too long, decoded
    (a BLOB is decoded no further than the bound) or stored. SESSION-STORAGE-RECORD.3: a BLOB holds
    the budget's ratios on its own, or the value is stored as TEXT, which a reader never decodes
    and which the file holds byte for byte; so the compressed BLOBs of any log a writer wrote
    together decode to less than the file's budget.
    """
    text_value = dumps(value)
    raw = text_value.encode("utf-8")
    if len(raw) > MAX_RECORD_BYTES:
        raise SpecViolation(RECORD_SIZE, Kind.JSON, f"data at seq {seq} of {len(raw)} bytes exceeds {MAX_RECORD_BYTES}",
                            seq=seq)
    if len(raw) < COMPRESS_FROM:
        return text_value, len(raw)
    blob: bytes = zstandard.ZstdCompressor(level=3).compress(raw)
    if len(blob) < len(raw) and affordable(len(raw), records, len(blob)):
        return blob, len(blob)
    return text_value, len(raw)


def _read_data(value: object, seq: object, budget: Budget | None) -> Json:
    if isinstance(value, str):
        return read_line(value)
    if isinstance(value, bytes):
        # SESSION-STORAGE-RECORD.3: no further than what is left of the file's budget either.
        limit = MAX_RECORD_BYTES if budget is None else max(0, min(MAX_RECORD_BYTES, budget.plain))
        try:
            # SESSION-STORAGE-RECORD.1: decoded no further than the bound, however small the BLOB.
            plain = decode_blob(value, limit)
        except zstandard.ZstdError as error:
            raise SpecViolation(DATA, Kind.JSON, f"data BLOB at seq {seq} is not one complete zstd frame: {error}") from None
        if budget is not None:
            # Past the budget the whole log is refused (Spent); a BLOB past the record bound is this row's defect,
            # and what its decode cost is spent all the same, so the next BLOB finds the budget smaller.
            budget.spend(limit + 1 if plain is None and limit < MAX_RECORD_BYTES else 0)
            budget.plain -= MAX_RECORD_BYTES + 1 if plain is None else len(plain)
        if plain is None:
            raise SpecViolation(RECORD_SIZE, Kind.JSON, f"data BLOB at seq {seq} decodes to more than {MAX_RECORD_BYTES} bytes")
        return read_line(plain)
    text(value, "data", seq if type(seq) is int else None)
    raise SpecViolation(DATA, Kind.JSON, f"data column at seq {seq} holds {type(value).__name__}, not TEXT or BLOB")


def bind_record(record: Json) -> tuple[Any, ...]:
    """(seq, type, time, data, source_event_seqs, surface_op, ignorable) for one storage record.

    SESSION-STORAGE-RECORD.1: a row is one record, its columns together within the bound, as the
    reader measures them (`read_row`); a longer one is refused here, before anything is written.
    """
    packed = record["type"] in ROW_TAGS
    seq = record["seq0"] if packed else record["seq"]
    data, size = _bind_data(record["data"], row_members(record), seq)
    sources = None if packed or record.get("sourceEventSeqs") is None else encode_seqs(record["sourceEventSeqs"])
    op = None if packed or record.get("surfaceOp") is None else dumps(record["surfaceOp"])
    length = size + sum(map(_size, (record["type"], sources, op)))
    if length > MAX_RECORD_BYTES:
        raise SpecViolation(RECORD_SIZE, Kind.JSON, f"row at seq {seq} of {length} bytes exceeds {MAX_RECORD_BYTES}",
                            seq=seq)
    if packed:
        return (seq, record["type"], record["time0"], data, None, None, 0)
    return (seq, record["type"], record["time"], data, sources, op, 1 if record.get("ignorable") else None)


def _bounded(column: str) -> str:
    return f"CASE WHEN length({column}) > {MAX_RECORD_BYTES} THEN NULL ELSE {column} END"


ROW_QUERY: Final = (
    f"SELECT seq, {_bounded('type')}, time, "
    + ", ".join(_bounded(column) for column in ("data", "source_event_seqs", "surface_op"))
    + ", ignorable, "
    + " + ".join(f"coalesce(length({column}), 0)" for column in ("type", "data", "source_event_seqs", "surface_op"))
    + " FROM events WHERE session_id = ? ORDER BY seq"
)
"""The rows of a session with their total length, a value beyond the record bound withheld (never loaded)."""


def _size(value: object) -> int:
    if isinstance(value, InvalidText):
        return len(value.raw)
    if isinstance(value, str):
        return len(value.encode("utf-8", "surrogatepass"))
    return len(value) if isinstance(value, bytes) else 0


def read_row(row: tuple[Any, ...], budget: Budget | None = None) -> Json:
    """The storage record of one row of ROW_QUERY (a packed row's record, or an event envelope).

    A compressed `data` BLOB is decoded out of `budget`, the log's (SESSION-STORAGE-RECORD.3), which raises Spent
    once it is overdrawn: a refusal of the whole log, not a defect of this row.
    """
    seq, kind, time, data, sources, op, ignorable, length = row
    # SESSION-STORAGE-RECORD.1: a row is a record; its bound holds in SQLite as on a line.
    if (type(length) is int and length > MAX_RECORD_BYTES) or sum(map(_size, (kind, data, sources, op))) > MAX_RECORD_BYTES:
        raise SpecViolation(RECORD_SIZE, Kind.JSON, f"row at seq {seq} exceeds {MAX_RECORD_BYTES} bytes", seq=seq)
    kind = text(kind, "type", seq)
    if ignorable == 0:
        # .3 The packed discriminator: a row tag and nothing of the surface.
        if kind not in ROW_TAGS or sources is not None or op is not None:
            raise SpecViolation(DISCRIMINATOR, Kind.ENVELOPE, f"row at seq {seq} is marked packed but is not a chunk row")
        return {"type": kind, "seq0": seq, "time0": time, "data": _read_data(data, seq, budget)}
    if ignorable not in (None, 1) or (type(kind) is str and kind in ROW_TAGS):
        raise SpecViolation(DISCRIMINATOR, Kind.ENVELOPE, f"row at seq {seq} has an invalid ignorable column or row tag")
    record: dict[str, Json] = {"type": kind, "seq": seq, "time": time, "data": _read_data(data, seq, budget)}
    if sources is not None:
        if not isinstance(sources, bytes):
            raise SpecViolation(VARINT, Kind.ENVELOPE, f"source_event_seqs at seq {seq} is not a BLOB")
        record["sourceEventSeqs"] = decode_seqs(sources)
    if op is not None:
        op = text(op, "surface_op", seq)
        if not isinstance(op, str):
            raise SpecViolation(DATA, Kind.JSON, f"surface_op at seq {seq} is not TEXT")
        record["surfaceOp"] = read_line(op)
    if ignorable == 1:
        record["ignorable"] = True
    return record


def row_members(record: Json) -> int:
    """How many seqs a decoded row stands for (a packed row's members, else one)."""
    if isinstance(record, dict) and record.get("type") in ROW_TAGS:
        payload = record.get("data")
        members: Any = payload.get("texts", payload.get("args", [])) if isinstance(payload, dict) else []
        return len(members) if isinstance(members, list) else 1
    return 1
