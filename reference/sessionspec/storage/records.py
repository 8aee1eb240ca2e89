"""Storage records shared by the JSONL and zstd writers: the header line and the event lines.

The bytes follow the upstream's writer (notes §4.2): the header keys in its order with
delegationDepth always present, events in the canonical key order, compact separators, one
record per line, packed chunk rows by default. So a log we write is a log the upstream reads,
and a log it wrote loads here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from sessionspec.envelope import Event, parse_event
from sessionspec.errors import Kind, SpecViolation
from sessionspec.header import HEADER_KEYS, validate_header
from sessionspec.jsontext import dumps
from sessionspec.jsonvalue import FrozenDict, Json, thaw
from sessionspec.storage.chunkrows import check_storable, pack
from sessionspec.storage.gate import MAX_RECORD_BYTES, RECORD_SIZE, SEQ


def as_events(events: Iterable[Event | Json], first_seq: int) -> list[Event]:
    """Events from Event objects or their JSON envelopes, checked to continue the seq (SESSION-STORAGE-SEQ.1)."""
    out: list[Event] = []
    for offset, raw in enumerate(events):
        event = raw if isinstance(raw, Event) else parse_event(raw, first_seq + offset)
        if event.seq != first_seq + offset:
            raise SpecViolation(SEQ, Kind.SEQ, f"append seq mismatch: expected {first_seq + offset} at index {offset}, "
                                f"got {event.seq}", seq=event.seq, index=offset)
        out.append(event)
    return out


def checked_header(header: Mapping[str, Json]) -> FrozenDict:
    raw = thaw(dict(header))
    raw.pop("type", None)
    return validate_header(raw, raw.get("id"))


def header_record(header: Mapping[str, Json]) -> dict[str, Json]:
    """The JSONL header line: type first, then the upstream's key order, delegationDepth always."""
    out: dict[str, Json] = {"type": "session"}
    for key in HEADER_KEYS:
        if key in header:
            out[key] = thaw(header[key])
        elif key == "delegationDepth":
            out[key] = 0
    return out


def encode_line(record: Json) -> bytes:
    data = (dumps(record) + "\n").encode("utf-8")
    # SESSION-STORAGE-RECORD.1: nothing is written that the reader's bound would refuse (the line without its newline,
    # as the readers measure it: exactly the bound is written and loads).
    if len(data) - 1 > MAX_RECORD_BYTES:
        raise SpecViolation(RECORD_SIZE, Kind.JSON, f"record of {len(data) - 1} bytes exceeds {MAX_RECORD_BYTES}")
    return data


def encode_batch(events: Iterable[Event], *, packed: bool = True) -> bytes:
    """One durable batch: its records, each newline-terminated (rows only within the batch)."""
    records: list[Any] = [event.to_json() for event in events]
    if packed:
        records = pack(records)
    else:
        for record in records:
            check_storable(record)
    return b"".join(encode_line(record) for record in records)
