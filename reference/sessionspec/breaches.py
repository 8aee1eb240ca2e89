"""Every rule a request breaks, each check run on its own (spec/10, "Comparison": fair kinds).

The reference answers a rejected request with the first failing check in spec/04's or spec/05's
order. The seeds fix no such order (SESSION-APPEND-COMMIT.7 and SESSION-SEED-ACCEPTANCE.5 are
recommended rules), so an implementation that checks in another order rejects a request breaking
two rules with the kind of the other one, and is right at the required level. To judge that, the
oracle must know every rule the request breaks, not only the first: here each check of an append,
a create and a log given whole (fold, repair) runs on its own, on the request's own values, with
the parts it does not judge replaced by ones that pass (a log-only or "append" marker, no sources,
not ignorable). A check that cannot run because what it reads is itself broken is skipped: the
breach that stops it is already counted.

The first breach of each list is the reference's own answer; the list is what a testee's kind may
match at the required level. Nothing here changes a session.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sessionspec.catalog import END_SEED, SURFACE_TYPES
from sessionspec.envelope import APPEND, APPEND_REQUEST_KEYS, Event, Replace, build_event, check_type, parse_event
from sessionspec.errors import SpecViolation
from sessionspec.header import validate_header
from sessionspec.jsonvalue import FrozenList, Json, is_nonempty_str, snapshot
from sessionspec.preview import shown
from sessionspec.rules import kind_of as _kind
from sessionspec.shapes import check_content
from sessionspec.surface import apply, plan

_FAILED = object()
HEADER_BASE = ("version", "id", "createdAt")


def _run(found: list[SpecViolation], check: Callable[..., Any], *args: Any) -> Any:
    """`check(*args)`, or _FAILED with its violation added to `found`. A check that cannot read what it was given
    (it assumes what an earlier check of the model establishes) is skipped: the breach that stops it is counted."""
    try:
        return check(*args)
    except SpecViolation as violation:
        found.append(violation)
        return _FAILED
    except (TypeError, KeyError, IndexError, AttributeError, ValueError):
        return _FAILED


def _unique(found: list[SpecViolation]) -> list[SpecViolation]:
    seen: set[str] = set()
    out = []
    for violation in found:
        if violation.rule not in seen:
            seen.add(violation.rule)
            out.append(violation)
    return out


def append_breaches(log: Sequence[Event], nodes: Sequence[int], request: object) -> list[SpecViolation]:
    """The rules an append request breaks on a session whose log is `log` and surface `nodes`."""
    found: list[SpecViolation] = []
    if not isinstance(request, Mapping):
        return [SpecViolation("SESSION-EVENT-ENVELOPE.1", _kind("SESSION-EVENT-ENVELOPE.1"), "an append request is an object")]
    _request_shape(found, request)
    event_type, seq = request.get("type"), len(log)
    _run(found, check_type, event_type)  # SESSION-EVENT-ENVELOPE.2, .8
    if event_type == END_SEED:
        found.append(SpecViolation("SESSION-APPEND-COMMIT.5", _kind("SESSION-APPEND-COMMIT.5"),
                                   f"{END_SEED} is written only by seeding"))
    data = _run(found, snapshot, request.get("data"))
    op = _run(found, snapshot, request.get("surfaceOp"))
    sources = _run(found, snapshot, request.get("sourceEventSeqs"))
    if not isinstance(event_type, str) or not event_type:
        # A type that names no event is no surface type: what a log-only event may not carry still counts.
        if "surfaceOp" in request:
            found.append(SpecViolation("SESSION-SURFACE-PROJECTION.1", _kind("SESSION-SURFACE-PROJECTION.1"),
                                       "an event that is not a surface type carries a surfaceOp"))
        elif "sourceEventSeqs" in request:
            found.append(SpecViolation("SESSION-SURFACE-PROJECTION.2", _kind("SESSION-SURFACE-PROJECTION.2"),
                                       "an event that is not a surface type carries sourceEventSeqs"))
        return _unique(found)
    parts = _Parts(event_type, seq, data, op, "surfaceOp" in request, sources, "sourceEventSeqs" in request,
                   request.get("ignorable") is True)
    whole = parts.each_alone(found)
    _plan_alone(found, log, nodes, whole, parts)
    return _unique(found)


def _request_shape(found: list[SpecViolation], request: Mapping[str, Any]) -> None:
    extra = sorted(set(request) - APPEND_REQUEST_KEYS)
    if extra:
        found.append(SpecViolation("SESSION-EVENT-ENVELOPE.1", _kind("SESSION-EVENT-ENVELOPE.1"),
                                   f"append request has unknown keys {shown(extra)}"))
    if "data" not in request:
        found.append(SpecViolation("SESSION-EVENT-ENVELOPE.5", _kind("SESSION-EVENT-ENVELOPE.5"), "append request has no data"))
    if "ignorable" in request and request["ignorable"] is not True:
        found.append(SpecViolation("SESSION-EVENT-ENVELOPE.6", _kind("SESSION-EVENT-ENVELOPE.6"),
                                   f"ignorable must be absent or true, got {shown(request['ignorable'])}"))


class _Parts:
    """An event's parts, each judged with the others replaced by parts that pass."""

    def __init__(self, event_type: str, seq: int, data: Any, op: Any, has_op: bool, sources: Any, has_sources: bool,
                 ignorable: bool) -> None:
        self.type, self.seq, self.ignorable = event_type, seq, ignorable
        self.data = {} if data is _FAILED else data
        self.data_ok = data is not _FAILED
        self.op, self.has_op, self.op_ok = op, has_op, op is not _FAILED
        self.sources, self.has_sources, self.sources_ok = sources, has_sources, sources is not _FAILED
        self.surface = event_type in SURFACE_TYPES

    def build(self, op: bool = False, sources: bool = False, ignorable: bool = False) -> Event:
        """The event with only the chosen parts as given: a surface event otherwise appends, with no sources."""
        surface_op = self.op if op else (APPEND if self.surface else None)
        has_op = self.has_op if op else self.surface
        return build_event(self.type, self.seq, 0, self.data, surface_op, self.sources if sources else None,
                           self.ignorable if ignorable else False, has_surface_op=has_op,
                           has_sources=self.has_sources if sources else False)

    def each_alone(self, found: list[SpecViolation]) -> Event | None:
        """Build-time checks, one part at a time, then the content; the whole event if every part passed."""
        base = _run(found, self.build)  # the type itself: retired types, the marker's data
        _run(found, self.build, False, False, True)
        if self.op_ok:
            _run(found, self.build, True)
        if self.sources_ok:
            _run(found, self.build, False, True)
        if base is not _FAILED and self.data_ok:
            _run(found, check_content, base)
        if not (self.op_ok and self.sources_ok):
            return None
        whole: Event | object = _run([], self.build, True, True, True)
        return whole if isinstance(whole, Event) else None


def _plan_alone(found: list[SpecViolation], log: Sequence[Event], nodes: Sequence[int], whole: Event | None,
                parts: _Parts) -> None:
    """The surface plan: of the whole event as given (coverage), and of its marker with sources that cover every
    earlier event (the range and the rewrite alone, whatever its own sources are)."""
    if whole is not None:
        _run(found, plan, nodes, log, whole)
    marked = _run([], parts.build, True) if parts.op_ok else _FAILED
    if isinstance(marked, Event) and isinstance(marked.surface_op, Replace):
        covering = Event(marked.type, marked.seq, marked.time, marked.data, marked.surface_op,
                         FrozenList(range(marked.seq)) or None, False)
        _run(found, plan, nodes, log, covering)


def create_breaches(request: Mapping[str, Any]) -> list[SpecViolation]:
    """The rules a create breaks: the session id, each header field on its own, and each seed entry on its own."""
    found: list[SpecViolation] = []
    raw_id, header, seed = request.get("id"), request.get("header"), request.get("seed")
    session_id = raw_id if isinstance(raw_id, str) and raw_id else "s"
    if not is_nonempty_str(raw_id):
        found.append(SpecViolation("SESSION-FORMAT-HEADER.3", _kind("SESSION-FORMAT-HEADER.3"),
                                   f"session id must be a non-empty string, got {shown(raw_id)}"))
    if header is not None:
        _header_alone(found, header, session_id)
    if seed is not None:
        if not isinstance(seed, list):
            found.append(SpecViolation("SESSION-SEED-ACCEPTANCE.1", _kind("SESSION-SEED-ACCEPTANCE.1"),
                                       "the seed must be a list of events"))
        else:
            _entries_alone(found, seed, contiguous="SESSION-SEED-ACCEPTANCE.2")
    return _unique(found)


def events_breaches(events: object) -> list[SpecViolation]:
    """The rules a log given whole breaks (`fold`, `repair`): each entry read as a seed entry is, and contiguity."""
    found: list[SpecViolation] = []
    if isinstance(events, list):
        _entries_alone(found, events, contiguous="SESSION-SURFACE-FOLD.1")
    return _unique(found)


def _header_alone(found: list[SpecViolation], header: Json, session_id: str) -> None:
    """The header as given, then each of its other fields alone on a base that passes."""
    if _run(found, validate_header, header, session_id) is not _FAILED or not isinstance(header, dict):
        return
    base: dict[str, Json] = {"version": 0, "id": session_id, "createdAt": 0}
    for key, value in header.items():
        _run(found, validate_header, {**base, key: value}, session_id)


def _entries_alone(found: list[SpecViolation], entries: list[Any], *, contiguous: str) -> None:
    """Each entry's envelope, content and seq on their own; the surface plan on the nodes of the entries before it.

    The plan is judged only while the entries before it are a log: once an entry cannot be read as an event,
    or sits at a position other than its seq, later entries' seqs no longer say where they are, and a plan
    over that log (a hole where the broken entry was) names surface rules the request does not break. An
    entry whose content is refused is still planned and kept, as a fold that checks no content plans it."""
    log: list[Event] = []
    nodes: list[int] = []
    aligned = True
    for index, raw in enumerate(entries):
        event = _run(found, parse_event, raw, index)
        if not isinstance(event, Event):
            seq = raw.get("seq") if isinstance(raw, dict) else None
            if type(seq) is int and seq != index:
                found.append(SpecViolation(contiguous, _kind(contiguous), f"entry {index} has seq {seq}", index=index))
            aligned = False
            continue
        if event.seq != index:
            found.append(SpecViolation(contiguous, _kind(contiguous), f"entry {index} has seq {event.seq}", index=index))
            aligned = False
            continue
        _run(found, check_content, event)
        if not aligned:
            continue
        step = _run(found, plan, nodes, log, event)
        log.append(event)
        if step is not _FAILED:
            nodes = apply(nodes, step)
