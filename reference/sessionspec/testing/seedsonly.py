"""`planted:seeds-only`: the store with every recommended rule it can skip skipped, checks in the upstream's order.

The levels' self-test (issue 22): an implementation of the seeds and nothing more must get no
required divergence from a default conform run, and a report that lists each recommended rule it
skips. This one behaves as the upstream does where this spec decided more than the seeds
(`sessionspec.levels`):

- `append` drops keys it does not know and cannot write `ignorable` at all (seed 004 §13), so
  SESSION-EVENT-ENVELOPE.1, .6 and .7 are never refused on append;
- an empty type is an event type (SESSION-EVENT-ENVELOPE.8 skipped);
- `append` checks no payload but the one derivation needs (SESSION-MESSAGE-SHAPE.9) and the
  retired `fallback` reason (SESSION-REQUEST-HEADER.4); message shapes and request headers are
  checked on seed only (SESSION-MESSAGE-SHAPE.1-.8, SESSION-REQUEST-HEADER.1-.3 on append skipped);
- legacy shapes are not refused (SESSION-LEGACY-UPGRADE.6);
- the header keeps unknown keys and takes an empty `parentSession` (SESSION-FORMAT-HEADER.11, .12);
- checks run in another order: an append copies its values before it reads its type, and a
  create reads the seed before the header, as the upstream does in snapshot mode (notes §5.13), so
  a request breaking two rules is rejected with the kind of the other one
  (SESSION-APPEND-COMMIT.7, SESSION-SEED-ACCEPTANCE.5).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sessionspec import live
from sessionspec.catalog import END_SEED, REQUEST_HEADER, SURFACE_TYPES
from sessionspec.envelope import Event, Replace
from sessionspec.errors import SpecViolation
from sessionspec.header import default_header, validate_header
from sessionspec.jsonvalue import FrozenDict, Json, snapshot
from sessionspec.requestheader import canonical_header
from sessionspec.rules import check
from sessionspec.shapes import check_message_shape, check_request_header, message_of
from sessionspec.transaction import Clock, Observer, Validator, read_clock

SKIPPED = ("SESSION-EVENT-ENVELOPE.1", "SESSION-EVENT-ENVELOPE.6", "SESSION-EVENT-ENVELOPE.7", "SESSION-EVENT-ENVELOPE.8",
           *(f"SESSION-MESSAGE-SHAPE.{n}" for n in range(1, 9)), "SESSION-REQUEST-HEADER.1", "SESSION-REQUEST-HEADER.2",
           "SESSION-REQUEST-HEADER.3", "SESSION-LEGACY-UPGRADE.6", "SESSION-FORMAT-HEADER.11", "SESSION-FORMAT-HEADER.12",
           "SESSION-APPEND-COMMIT.7", "SESSION-SEED-ACCEPTANCE.5")
"""The recommended rules this variant does not keep (where a rule is recommended on append only, on append)."""


def seeds_header(raw: Json, session_id: str) -> FrozenDict:
    """The header as the seeds check it: its known fields, an empty parent allowed, unknown keys kept."""
    header = snapshot(raw)
    known = {key: value for key, value in header.items() if key in _KNOWN} if isinstance(header, dict) else header
    if isinstance(known, dict) and known.get("parentSession") == "":
        known = {**known, "parentSession": "p"}
    validate_header(known, session_id)
    return header if isinstance(header, FrozenDict) else FrozenDict(header)


_KNOWN = frozenset({"version", "id", "createdAt", "cwd", "parentSession", "seedLength", "origin", "delegationDepth",
                    "agentPreset"})


class SeedsOnly(live.Session):
    """The store, keeping the seeds' rules and skipping this spec's additions (see the module docstring)."""

    __slots__ = ()

    @classmethod
    def _new(cls, session_id: str, seed: Sequence[Event | Json] | None, header: Json, clock: Clock | None,
             validators: Sequence[Validator], observers: Sequence[Observer]) -> SeedsOnly:
        clock = clock or (lambda: 0)
        check(type(session_id) is str and session_id != "", "SESSION-FORMAT-HEADER.3",
              f"session id must be a non-empty string, got {session_id!r}")
        placeholder = default_header(session_id, 0)
        session = cls(session_id, placeholder, clock, validators, observers)
        if seed is not None:
            session._seed(seed)  # the seed before the header, as the upstream's snapshot mode does
        session._header = default_header(session_id, read_clock(clock)) if header is None else seeds_header(header, session_id)
        return session

    def append(self, type: str, data: Json, *, surface_op: Json | Replace = None, source_event_seqs: Json = None,
               ignorable: bool = False) -> Event:
        return self._append(type, data, surface_op, surface_op is not None, source_event_seqs,
                            source_event_seqs is not None, False)

    def append_request(self, request: Mapping[str, Json]) -> Event:
        check(isinstance(request, Mapping), "SESSION-EVENT-ENVELOPE.1", "an append request is a JSON object")
        check("data" in request, "SESSION-EVENT-ENVELOPE.5", "append request has no data")
        return self._append(request.get("type"), request["data"], request.get("surfaceOp"), "surfaceOp" in request,
                            request.get("sourceEventSeqs"), "sourceEventSeqs" in request, False)

    def _candidate(self, event_type: Any, data: Json, surface_op: Json | Replace, has_op: bool, sources: Json,
                   has_sources: bool, ignorable: Any) -> tuple[Event, Any]:
        owned = self._owned(data)  # the values first, then the type: another order than spec/04's
        owned_op = self._owned(surface_op.to_json() if isinstance(surface_op, Replace) else surface_op)
        owned_sources = self._owned(sources)
        check(isinstance(event_type, str), "SESSION-EVENT-ENVELOPE.2", f"event type must be a string, got {event_type!r}")
        check(event_type != END_SEED, "SESSION-APPEND-COMMIT.5", f"{END_SEED} is written only by seeding")
        seq = len(self._log)
        time = read_clock(self._clock)
        if event_type == "":
            check(not has_op, "SESSION-SURFACE-PROJECTION.1", "session event '' cannot carry surfaceOp")
            check(not has_sources, "SESSION-SURFACE-PROJECTION.2", "session event '' cannot carry sourceEventSeqs")
            event = Event(event_type, seq, time, owned, None, None, False)
        else:
            event = self._build(event_type, seq, time, owned, owned_op, has_op, owned_sources, has_sources, False)
        self._check_content(event)
        return event, self._plan(event)

    def _commit(self, event: Event, step: Any) -> None:
        """The store's commit; a request header it did not check is folded as it is (the upstream's requestHeader()
        validates nothing), instead of refused by the fold after the event was logged."""
        try:
            super()._commit(event, step)
        except SpecViolation:
            if event.type != REQUEST_HEADER:
                raise
            header = event.data.get("header") if isinstance(event.data, dict) else None
            self._requests.header = canonical_header(header) if isinstance(header, dict) else None

    def _check_content(self, event: Event, *, index: int | None = None) -> None:
        if index is not None:  # a seed entry: message shapes and request headers, as the seeds check them
            if event.type in SURFACE_TYPES:
                check_message_shape(event, index=index)
            elif event.type == REQUEST_HEADER:
                check_request_header(event, index=index)
            return
        if event.type in SURFACE_TYPES:
            check(isinstance(message_of(event.type, event.data), dict), "SESSION-MESSAGE-SHAPE.9",
                  f"{event.type}: the message is not an object", seq=event.seq)
        elif event.type == REQUEST_HEADER:
            data = event.data
            check(not (isinstance(data, dict) and data.get("reason") == "fallback"), "SESSION-REQUEST-HEADER.4",
                  f'{REQUEST_HEADER}: data.reason "fallback" is retired', seq=event.seq)
