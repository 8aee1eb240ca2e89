"""The views of a stored log, streamed (`sessionspec show`): in about the time `check` takes, in memory bounded by the surface.

Loading a log to show it builds a frozen, seed-validated event for every record: seconds for
80,000 events, and memory for all of them. A view needs less. Each record is validated as
`check` validates it (the same `Checker`, whose fast path implies the reference rules), the
legacy upgrades of the load gate are applied first (so a log written before message identities
shows as it loads), and only the current surface is kept: the log and transcript views are
emitted as they are read, the surface and messages views once the point asked for is reached.
A record that breaks a rule stops the view with that rule (`Refused`), as `show` has nothing
true to show past it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sessionspec.catalog import ASSISTANT_MESSAGE, SURFACE_TYPES, USER_MESSAGE
from sessionspec.envelope import parse_event
from sessionspec.errors import SpecViolation
from sessionspec.jsonvalue import FrozenDict, Json
from sessionspec.legacy import may_upgrade, upgrade
from sessionspec.logcheck.checker import Checker, Finding

ENVELOPE_ORDER = ("type", "seq", "time", "data", "sourceEventSeqs", "surfaceOp", "ignorable")
_LEGACY_TYPES = frozenset({"turn/start", "turn/end", "steering/message"})
_LOOKED_AT = _LEGACY_TYPES | SURFACE_TYPES


class Refused(Exception):
    """The log breaks a rule here; the view stops (exit 1)."""

    def __init__(self, finding: Finding) -> None:
        super().__init__(str(finding))
        self.finding = finding


@dataclass(frozen=True)
class Replaced:
    """One replacement up to the point shown: the nodes it shadowed and the record that took their place."""

    seq: int
    start: int
    end: int
    shadowed: list[dict[str, Any]]
    record: dict[str, Any]

    def to_json(self) -> dict[str, Json]:
        return {"seq": self.seq, "start": self.start, "end": self.end, "shadowedSeqs": [r["seq"] for r in self.shadowed],
                "sources": list(self.record.get("sourceEventSeqs") or ()), "shadowed": self.shadowed,
                "replacement": self.record}


def canonical(record: dict[str, Any]) -> dict[str, Json]:
    """The stored envelope in the canonical key order, as `Event.to_json` writes it."""
    return {key: record[key] for key in ENVELOPE_ORDER if key in record}


def project_record(record: dict[str, Any]) -> Json:
    """SESSION-SURFACE-PROJECTION.5 on a stored (validated) record: its message, or None for an empty assistant one."""
    data = record["data"]
    if record["type"] == USER_MESSAGE:
        return data
    message = data["message"]
    if record["type"] == ASSISTANT_MESSAGE and not message["content"]:
        return None
    return message


@dataclass
class Viewer:
    """Feed it every committed record in order; it validates each and keeps the surface up to `at`."""

    path: str
    header: FrozenDict
    at: int | None = None
    diff: bool = False
    streamed: Callable[[dict[str, Json]], None] | None = None
    """Called with each record of a streamed view (log, transcript) up to `at`."""
    transcript: bool = False
    """Whether `streamed` gets the transcript (append-origin surface events) rather than the whole log."""
    nodes: list[int] = field(default_factory=list)
    kept: dict[int, dict[str, Any]] = field(default_factory=dict)
    replaced: list[Replaced] = field(default_factory=list)
    events: int = 0
    last: int = -1
    generation: int = 0
    """Replacements up to the point shown (SESSION-SURFACE-REPLACE.4)."""
    _message_ids: dict[int, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.checker = Checker(self.path)
        self.checker.header(None, dict(self.header), self.header["id"])
        if self.checker.findings:
            raise Refused(self.checker.findings[0])

    def feed(self, line: int | None, record: Any) -> None:
        """One committed record: upgraded if legacy, validated, then applied to the view; raises Refused."""
        kind = record.get("type") if type(record) is dict else None
        if type(kind) is str and kind in _LOOKED_AT and may_upgrade(kind, record.get("data")):
            record = self._upgraded(line, record)
            kind = record.get("type")
        findings = self.checker.findings
        before = len(findings)
        self.checker.feed(line, record)
        if len(findings) > before:
            raise Refused(findings[before])
        self.events += 1
        seq = record["seq"]
        if self.at is not None and seq > self.at:
            return
        self.last = seq
        if self.streamed is not None and (not self.transcript or record.get("surfaceOp") == "append"):
            self.streamed(canonical(record))
        if kind in SURFACE_TYPES:
            self._apply(canonical(record))

    def _upgraded(self, line: int | None, record: dict[str, Any]) -> Any:
        """The record as the load gate upgrades it (SESSION-LEGACY-UPGRADE), or as it is if it is current."""
        seq = record.get("seq")
        try:
            event = parse_event(record, seq if type(seq) is int else 0)
        except SpecViolation:
            return record  # not an event at all: the checker names what is wrong
        try:
            found = upgrade(event, self.header["id"], self._message_ids)
        except SpecViolation as violation:
            # A legacy shape outside the closed list: the load gate refuses it, and so does the view.
            raise Refused(Finding(self.path, line, event.seq, violation.rule, violation.message)) from None
        return found[0].to_json() if found is not None else record

    def _apply(self, record: dict[str, Any]) -> None:
        """A validated surface event: an append adds a node, a replace takes the place of its range."""
        seq = record["seq"]
        op: Any = record["surfaceOp"]
        message_id = message_id_of_record(record)
        if message_id is not None:
            self._message_ids[seq] = message_id
        if op == "append":
            self.nodes.append(seq)
        else:
            first, last = self.nodes.index(op["start"]), self.nodes.index(op["end"])
            shadowed = self.nodes[first:last + 1]
            self.nodes[first:last + 1] = [seq]
            self.generation += 1
            if self.diff:
                self.replaced.append(Replaced(seq, op["start"], op["end"], [self.kept[s] for s in shadowed], record))
            for node in shadowed:
                del self.kept[node]
        self.kept[seq] = record

    def surface(self) -> list[dict[str, Any]]:
        return [self.kept[node] for node in self.nodes]

    def messages(self) -> list[tuple[int, Json]]:
        """(node seq, message) for every node that projects to a message: what the next request sends."""
        out = []
        for node in self.nodes:
            message = project_record(self.kept[node])
            if message is not None:
                out.append((node, message))
        return out


def message_id_of_record(record: dict[str, Any]) -> str | None:
    data = record.get("data")
    message = data if record.get("type") == USER_MESSAGE else data.get("message") if isinstance(data, dict) else None
    value = message.get("id") if isinstance(message, dict) else None
    return value if type(value) is str else None


__all__ = ["Refused", "Replaced", "Viewer", "canonical", "project_record"]
