"""What the explorer observes of a session: its views as canonical bytes, and a state's digest."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from operator import attrgetter
from typing import Any, NamedTuple

import orjson

from sessionspec.envelope import Event, Replace


class View(NamedTuple):
    """Everything the protocol's `snapshot` reads of a session (and the next seq), as canonical JSON bytes per view."""

    events: bytes
    nodes: tuple[int, ...]
    replace_generation: int
    messages: bytes
    transcript: tuple[int, ...]
    first_live_seq: int
    seq: int
    header: bytes
    request_header: bytes
    request_context: bytes


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


class Known:
    """The events of the state being expanded, as its implementation listed them, with their canonical bytes.

    A state's copies share its Event objects (a copy shares what is immutable), so a list read
    from a copy is known by the identities of its elements: the same exact Events have the same
    bytes, since an Event is immutable (SESSION-IMMUTABILITY). The bytes are computed once per
    state, and a list of the same events in the same order, or of them and then new ones (an
    accepted step), is recognised by comparing identities in C: joining them again, per event,
    was a twentieth of the search. The events are held, so no id is reused while this lives.
    """

    __slots__ = ("_bytes", "_events", "_ids", "_log")

    def __init__(self, events: Sequence[Any] = ()) -> None:
        self._events = events
        self._bytes: dict[int, bytes] = {}
        parts = []
        for event in events:
            encoded = canonical(envelope_json(event))
            parts.append(encoded)
            if type(event) is Event:
                self._bytes[id(event)] = encoded
        self._log = b"[" + b",".join(parts) + b"]"
        exact = all(type(event) is Event for event in events)
        self._ids: list[int] | None = [*map(id, events)] if exact else None

    def events_bytes(self, events: Sequence[Any]) -> bytes:
        """`events_bytes(events)`, from what is known."""
        ids = self._ids
        if ids is not None:
            now = [*map(id, events)]
            if now == ids:
                return self._log
            count = len(ids)
            if now[:count] == ids:  # the state's events, then new ones
                new = b",".join([canonical(envelope_json(event)) for event in events[count:]])
                return self._log[:-1] + b"," + new + b"]" if count else b"[" + new + b"]"
        get = self._bytes.get
        return b"[" + b",".join([get(id(event)) or canonical(envelope_json(event)) for event in events]) + b"]"


def events_bytes(events: Sequence[Any], known: Known | None = None) -> bytes:
    """The canonical bytes of a list of events: the canonical list of their envelopes (orjson joins elements with commas)."""
    if known is None:
        return canonical([envelope_json(event) for event in events])
    return known.events_bytes(events)


_seq = attrgetter("seq")
_new_view = tuple.__new__
"""`View(...)` without the Python `__new__` a NamedTuple carries: a view is built on every transition."""


def read(session: Any, known: Known | None = None) -> tuple[View, Any]:
    """Every view of a session, as the protocol's `snapshot` reads them, and the events list read.

    The list is kept to check later that it never changed (SESSION-IMMUTABILITY.4).
    """
    events = session.events
    surface = session.surface
    view: View = _new_view(View, (
        events_bytes(events, known), tuple(surface.nodes), surface.replace_generation,
        canonical(session.derive_messages()), tuple(map(_seq, session.transcript())),
        session.first_live_seq, session.seq, canonical(session.header), canonical(session.request_header()),
        canonical(session.request_context())))
    return view, events


def observe(session: Any, known: Known | None = None) -> View:
    return read(session, known)[0]


def log_digest(log_bytes: bytes) -> hashlib.blake2b:
    """The BLAKE2 state after a log's bytes but their closing bracket, to be extended by a successor's events.

    A log only grows, and its bytes are the canonical list of its events' bytes, so a successor's
    bytes are its parent's without the bracket, then its new events (`extend_digest`): hashing the
    whole log for every state cost a tenth of a state's time at depth 7. The digest that comes out
    is the whole log's.
    """
    return hashlib.blake2b(log_bytes[:-1], digest_size=16)


def extend_digest(parent: hashlib.blake2b, parent_bytes: bytes, log_bytes: bytes) -> hashlib.blake2b:
    """`log_digest(log_bytes)`, from the parent's digest, when `log_bytes` extends `parent_bytes` (a successor's log)."""
    digest = parent.copy()
    digest.update(log_bytes[len(parent_bytes) - 1 : -1])
    return digest


def state_key(log: hashlib.blake2b, first_live_seq: int, reference: View, actual: View) -> bytes:
    """The 128-bit digest of a state: the model's log (`log`: its `log_digest`) and first live seq, and the implementation's views.

    The model's views are functions of its log and first live seq, so they add nothing to the key;
    nor do the implementation's when they are the model's, which is what they are in every state
    that is not a violation.
    """
    digest = log.copy()
    digest.update(b"]%d" % first_live_seq)
    if actual != reference:
        digest.update(repr(tuple(actual)).encode(errors="surrogatepass"))
    return digest.digest()
