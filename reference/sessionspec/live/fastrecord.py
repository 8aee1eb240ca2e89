"""The fast form of `envelope.parse_event` for a stored record: what the load gate reads every event with.

A stored log is read event by event through the gate (`storage.gate.gate_events`); the reference
parser copies each envelope with the iterative `snapshot` and checks it rule by rule, which was two
thirds of `storage.load` on a long log (benchmarks/README.md). The plain envelopes a writer stores
are taken here, at the cost of one copy of their values; anything else is the reference's.
Declared with `live.fastpath.implies` and held to `parse_event` by tests/test_fastpaths.py.
"""

from __future__ import annotations

from sessionspec.envelope import ENVELOPE_KEYS, Event, parse_event
from sessionspec.jsonvalue import MAX_SAFE_INTEGER, Json
from sessionspec.live.fastpath import Unvouched, event_of, implies, owned_fast, rule_ids

_MAX = MAX_SAFE_INTEGER


@implies(reference=parse_event, rules=(*rule_ids("SESSION-LOSSLESS-JSON", 1, 6), *rule_ids("SESSION-EVENT-ENVELOPE", 1, 8),
                                       *rule_ids("SESSION-CORE-EVENTS", 1, 2), *rule_ids("SESSION-SURFACE-PROJECTION", 1, 4),
                                       *rule_ids("SESSION-SURFACE-PROVENANCE", 1, 5)))
def stored_event(raw: Json, index: int) -> Event:
    """`envelope.parse_event(raw, index)` for a record as a reader returns it: the same Event, or the same SpecViolation.

    Almost every stored envelope is plain: a dict of envelope keys with a non-empty string type,
    safe-integer seq and time, data, and `ignorable` absent or true (SESSION-EVENT-ENVELOPE.1-.6,
    .8). Its parts are then copied by the fast form of `snapshot` and built by `event_of`, which
    hands every shape it does not vouch for to `build_event`, as `parse_event` does, with this
    index. Any other record, and one with a part the fast copy cannot vouch for, is the
    reference's from the start. The reference copies the whole envelope with the iterative
    `snapshot` and formats every rule's message as it checks: on a 2,000-turn log that was
    two thirds of `storage.load` (benchmarks/README.md).
    """
    if type(raw) is dict and raw.keys() <= ENVELOPE_KEYS and "data" in raw:
        kind, seq, time = raw.get("type"), raw.get("seq"), raw.get("time")
        if (type(kind) is str and kind and type(seq) is int and 0 <= seq <= _MAX and type(time) is int
                and -_MAX <= time <= _MAX and raw.get("ignorable", True) is True):
            has_op, has_sources = "surfaceOp" in raw, "sourceEventSeqs" in raw
            try:
                data = owned_fast(raw["data"])
                op = owned_fast(raw["surfaceOp"]) if has_op else None
                sources = owned_fast(raw["sourceEventSeqs"]) if has_sources else None
            except Unvouched:
                return parse_event(raw, index)
            return event_of(kind, seq, time, data, op, has_op, sources, has_sources, "ignorable" in raw, index=index)
    return parse_event(raw, index)
