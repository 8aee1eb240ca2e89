"""What the explorer observes of a session: its views as canonical bytes, and a state's digest."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from sessionspec.envelope import Event, Replace


@dataclass(frozen=True, slots=True)
class View:
    """Everything observable about a session, as canonical JSON bytes per view."""

    events: bytes
    nodes: tuple[int, ...]
    replace_generation: int
    messages: bytes
    transcript: tuple[int, ...]
    first_live_seq: int
    seq: int


def canonical(value: Any) -> bytes:
    """Canonical JSON bytes: sorted keys, no spaces. orjson reads frozen containers as they are (no thaw)."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def envelope_json(event: Any) -> Any:
    """`Event.to_json()` without copying the frozen data: the same bytes once canonicalised."""
    if type(event) is not Event:
        return event.to_json()
    out: dict[str, Any] = {"type": event.type, "seq": event.seq, "time": event.time, "data": event.data}
    if event.source_event_seqs is not None:
        out["sourceEventSeqs"] = event.source_event_seqs
    op = event.surface_op
    if op is not None:
        out["surfaceOp"] = op.to_json() if isinstance(op, Replace) else op
    if event.ignorable:
        out["ignorable"] = True
    return out


def events_bytes(events: Sequence[Any]) -> bytes:
    return canonical([envelope_json(event) for event in events])


def observe(session: Any) -> View:
    surface = session.surface
    return View(
        events=events_bytes(session.events),
        nodes=tuple(surface.nodes),
        replace_generation=surface.replace_generation,
        messages=canonical(session.derive_messages()),
        transcript=tuple(event.seq for event in session.transcript()),
        first_live_seq=session.first_live_seq,
        seq=session.seq,
    )


def state_key(model_log: bytes, first_live_seq: int, actual: View) -> bytes:
    """The 128-bit digest of a state: the model's log and first live seq, and the implementation's views.

    The model's other views are functions of its log, so they add nothing to the key.
    """
    digest = hashlib.blake2b(model_log, digest_size=16)
    digest.update(repr((first_live_seq, actual.nodes, actual.replace_generation, actual.transcript,
                        actual.first_live_seq, actual.seq)).encode())
    digest.update(actual.events)
    digest.update(actual.messages)
    return digest.digest()
