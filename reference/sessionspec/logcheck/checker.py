"""The streaming checker behind `sessionspec check`: every rule the spec states about a stored log.

A stored log is checked one record at a time, keeping only what a later record can be checked
against: the current surface nodes, their types, and (for tool/result rewrites) the data of the
current tool/result nodes. Memory is bounded by the surface, not by the file, so a log of any
length can be checked, and a replace is checked against exactly the surface a replay would build.

Each record takes one of two paths. The fast path is a conservative predicate over the plain
record: if it holds, the reference checks would accept the record too. Anything it does not
recognise (a request header, a retired type, an odd shape, a replace that does not land) goes to
the exact path, which runs the reference functions themselves (`parse_event`, `check_content`,
`plan`) and so reports the reference's own rule and message. The fast path decides speed; the
exact path decides every finding.

The fast path comes in two halves: `survey` (storage/survey.py) judges records with no state,
and `fold` (`storage.surfacefold`, shared with the load gate's fast form) applies what it found to the
surface, in log order, placing each replace with
`live.fastpath.replace_holds`. Both are declared fast forms of the reference functions they imply
(`live.fastpath.implies`), held to it in tests/test_fastpaths.py. For a JSONL log the survey judges
whole parsed blocks and may run in forked surveyors (logcheck/workers.py), which share the blocks
with this process while it folds; `_fast` runs the same two halves on one record, for every other
backend and for the lines a survey leaves out.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sessionspec import invariants
from sessionspec.catalog import (
    ASSISTANT_MESSAGE,
    DEFAULT_CATALOG,
    END_SEED,
    RETIRED_TYPES,
    SURFACE_TYPES,
    TOOL_RESULT,
    Catalog,
)
from sessionspec.envelope import Event, parse_event
from sessionspec.errors import SpecViolation
from sessionspec.header import validate_header
from sessionspec.jsonvalue import Json
from sessionspec.legacy import LegacyUpgrade, message_id_of, upgrade
from sessionspec.logcheck.reader import StoredLine
from sessionspec.preview import as_text, shown
from sessionspec.provider import RANGE_KEEPS_PAIRS, call_ids, provider_findings, result_call_id
from sessionspec.rules import check
from sessionspec.shapes import check_content
from sessionspec.storage.chunkrows import CHUNK
from sessionspec.storage.gate import SEQ as CONTIGUOUS
from sessionspec.storage.gate import UNKNOWN as UNKNOWN_EVENT
from sessionspec.storage.surfacefold import CurrentNodes, SurfaceFold
from sessionspec.storage.survey import Run, survey
from sessionspec.surface import ReplacePlan, plan
from sessionspec.views import project


@dataclass(frozen=True, slots=True)
class Finding:
    """One thing wrong with a stored log: where it is, which rule it breaks, in one plain sentence."""

    file: str
    line: int | None
    seq: int | None
    rule: str
    message: str

    def to_json(self) -> dict[str, Json]:
        return {"file": self.file, "line": self.line, "seq": self.seq, "rule": self.rule, "message": self.message}

    def __str__(self) -> str:
        where = self.file + (f":{self.line}" if self.line is not None else "")
        at = f" seq {self.seq}" if self.seq is not None else ""
        return f"{where}:{at} {self.rule}: {self.message}"


def _resolved(data: Any) -> Any:
    """A current node's data, read from its stored line where the surveyor surveyed it (see blocks.StoredLine)."""
    return data.data() if type(data) is StoredLine else data


class _MessageIds(Mapping[int, str]):
    """The message id of each current node, read when asked: what a legacy tool/result replacement inherits.

    The load gate's upgrader remembers every surface event's id as it goes; the checker keeps only
    the current nodes (a replacement's start must be one), and tool results' data, which is what a
    legacy replacement (a pruned tool result) names.
    """

    def __init__(self, checker: Checker) -> None:
        self._info = checker.info

    def __getitem__(self, seq: int) -> str:
        kind, data = self._info[seq]
        found = message_id_of(Event(kind, seq, 0, _resolved(data), "append"))
        if found is None:
            raise KeyError(seq)
        return found

    def __iter__(self) -> Iterator[int]:
        return iter(self._info)

    def __len__(self) -> int:
        return len(self._info)


class Checker(SurfaceFold):
    """Check one stored log, record by record. `feed` each record, then `finish`; read `findings`.

    `strict` adds the relational invariants (spec/09) and the provider-validity findings; they
    need the data of every current node, still bounded by the surface.
    """

    def __init__(self, file: str, *, strict: bool = False, catalog: Catalog = DEFAULT_CATALOG, fast: bool = True) -> None:
        self.file = file
        self.strict = strict
        self.catalog = catalog
        self.known = catalog.types
        self.fast = fast
        self.findings: list[Finding] = []
        self.session_id: str | None = None
        super().__init__()  # nodes, info (data as a `StoredLine` where the surveyor surveyed it), next_seq
        self.lines: dict[int, int | None] = {}
        self._trace = invariants.Trace()
        self.upgrades: list[LegacyUpgrade] = []
        """The legacy upgrades applied on the exact path, as the load gate applies and reports them."""
        self._message_ids = _MessageIds(self)
        self._view = CurrentNodes(self)
        self._plain = frozenset(self.known - SURFACE_TYPES - RETIRED_TYPES - {"", "request/header", END_SEED})
        """The log-only types the fast path takes with nothing but the four envelope keys."""
        self._surveyed = self._plain | SURFACE_TYPES
        self._rows = CHUNK in self.known

    # --- reporting ----------------------------------------------------------------------------

    def report(self, line: int | None, seq: int | None, rule: str, message: str) -> None:
        self.findings.append(Finding(self.file, line, seq, rule, message))

    def _violation(self, line: int | None, violation: SpecViolation, seq: int | None) -> None:
        self.report(line, violation.seq if violation.seq is not None else seq, violation.rule, violation.message)

    # --- the header ---------------------------------------------------------------------------

    def header(self, line: int | None, raw: Json, session_id: str | None = None) -> None:
        """SESSION-FORMAT-HEADER: the session's header (for JSONL, its first line without `type`)."""
        identity = raw.get("id") if isinstance(raw, dict) else None
        expected = session_id if session_id is not None else identity if type(identity) is str else ""
        try:
            validate_header(raw, expected)
            self.session_id = expected
        except SpecViolation as violation:
            self._violation(line, violation, None)

    # --- events -------------------------------------------------------------------------------

    def feed(self, line: int | None, record: Any) -> None:
        """One stored event envelope (chunk rows already expanded by the reader)."""
        if not (self.fast and self._fast(line, record)):
            self._exact(line, record)

    def feed_all(self, records: Iterable[tuple[int | None, Any]]) -> None:
        feed = self.feed
        for line, record in records:
            feed(line, record)

    def survey(self, values: list[Any]) -> list[Run]:
        """The runs of a parsed block the fast path takes, judged with no state (see storage/survey.py)."""
        return survey(values, self._plain, self._rows) if self.fast and not self.strict else []

    def fold(self, ops: Sequence[Any], k: int, first: int, nxt: int) -> int:
        """`SurfaceFold.fold`: a run's surface events applied in log order. Not used with `strict`, whose checks
        need every event."""
        if self.strict or not self.fast:
            return -1
        return super().fold(ops, k, first, nxt)

    def resolve(self, data: Any) -> Json:
        return _resolved(data)

    def _fast(self, line: int | None, record: Any) -> bool:
        """One record on the fast path: the survey of a block of one, then its fold; False sends it to the exact path."""
        kind = record.get("type") if type(record) is dict else None
        if type(kind) is not str or kind not in self._surveyed:
            return False  # a request header, say: no survey takes it, so the exact path at once
        runs = survey([record], self._plain, False)
        if not runs or runs[0][2] != self.next_seq:
            return False
        _, _, _, nxt, ops = runs[0]
        if self.strict:
            # Every event also goes through the relational invariants; a replace takes the exact path.
            if ops and len(ops[0]) != 3:
                return False
            kind, seq, time, data = record["type"], record["seq"], record["time"], record["data"]
            self._relational(line, Event(kind, seq, time, data, "append" if ops else None, None, False))
            if ops:
                self.nodes.append(seq)
                self.info[seq] = (kind, data)
                self.lines[seq] = line
        elif ops:
            return self.fold(ops, 0, self.next_seq, nxt) == 1
        self.next_seq = nxt
        return True

    def _exact(self, line: int | None, record: Any) -> None:
        """The reference checks, in the reference order; a violation becomes a finding."""
        expected = self.next_seq
        raw_seq = record.get("seq") if isinstance(record, dict) else None
        seq = raw_seq if type(raw_seq) is int else expected
        try:
            event = parse_event(record, expected)
        except SpecViolation as violation:
            self._violation(line, violation, seq)
            self.next_seq = seq + 1
            return
        self.next_seq = event.seq + 1
        # SESSION-STORAGE-SEQ.1: stored seqs are log positions, contiguous from 0.
        if event.seq != expected:
            self.report(line, event.seq, CONTIGUOUS, f"seq {event.seq} is not contiguous; expected {expected}")
            return
        try:
            event = self._upgraded(line, event)
            check_content(event)
            # The load gate: an unknown type is interpretable only if its writer marked it ignorable.
            check(event.ignorable or event.type in self.known, UNKNOWN_EVENT,
                  f"event type {shown(event.type)} is unknown to catalog {self.catalog.name} and not marked ignorable",
                  seq=event.seq)
            step = plan(self.nodes, self._view, event)
        except SpecViolation as violation:
            self._violation(line, violation, event.seq)
            return
        if self.strict:
            self._relational(line, event)
        if step is None:
            return
        data = event.data if event.type == TOOL_RESULT or self.strict else None
        if isinstance(step, ReplacePlan):
            if self.strict:
                self._split_pairs(line, event, step.shadowed)
            for node in step.shadowed:
                del self.info[node]
                self.lines.pop(node, None)
            self.nodes[step.first : step.last + 1] = [event.seq]
            self.replace_generation += 1
        else:
            self.nodes.append(event.seq)
        self.info[event.seq] = (event.type, data)
        if self.strict:
            self.lines[event.seq] = line

    def _upgraded(self, line: int | None, event: Event) -> Event:
        """SESSION-LEGACY-UPGRADE: the event as the load gate reads it (upgraded and reported), or its refusal."""
        found = upgrade(event, self.session_id or "", self._message_ids)
        if found is None:
            return event
        upgraded, rule, summary = found
        self.upgrades.append(LegacyUpgrade(event.seq, line, rule, summary))
        return upgraded

    # --- strict: relational invariants and provider validity ----------------------------------

    def _relational(self, line: int | None, event: Event) -> None:
        try:
            self._trace = invariants.step(self._trace, event)
        except SpecViolation as violation:
            self._violation(line, violation, event.seq)

    def _split_pairs(self, line: int | None, event: Event, shadowed: tuple[int, ...]) -> None:
        """SESSION-PROVIDER-VALIDITY.3 on the surface just before the replacement, as `provider.split_pairs` judges it."""
        calls: dict[str, int] = {}
        results: dict[str, list[int]] = {}
        for node in self.nodes:
            kind, data = self.info[node]
            message = data.get("message") if kind in (ASSISTANT_MESSAGE, TOOL_RESULT) and isinstance(data, dict) else data
            if kind == ASSISTANT_MESSAGE:
                for call_id in call_ids(message):
                    calls.setdefault(call_id, node)
            answered = result_call_id(message) if kind == TOOL_RESULT else None
            if type(answered) is str:
                results.setdefault(answered, []).append(node)
        message = event.data.get("message") if isinstance(event.data, dict) else None
        carried = set(call_ids(message)) | {result_call_id(message)}
        hidden = set(shadowed)
        for call_id, call_seq in calls.items():
            result_seqs = results.get(call_id)
            if result_seqs and (call_seq in hidden) != any(s in hidden for s in result_seqs) and call_id not in carried:
                self.report(line, event.seq, RANGE_KEEPS_PAIRS,
                            f"replacement at seq {event.seq} splits tool call {as_text(call_id)} from its result")

    def finish(self) -> list[Finding]:
        """End of the log: with `strict`, the provider findings on the messages the model would see next."""
        if self.strict:
            positions: list[int] = []
            messages: list[Json] = []
            for node in self.nodes:
                kind, data = self.info[node]
                message = project(Event(kind, node, 0, data))
                if message is not None:
                    positions.append(node)
                    messages.append(message)
            for finding in provider_findings(messages):
                seq = positions[finding.position] if finding.at == "message" else finding.position
                self.report(self.lines.get(seq), seq, finding.rule, finding.sentence)
        return self.findings


def numbered(events: Iterable[Any], first_line: int = 2) -> Iterator[tuple[int | None, Any]]:
    """Records with the line numbers a JSONL file would give them (the header is line 1)."""
    for offset, event in enumerate(events):
        yield first_line + offset, event.to_json() if isinstance(event, Event) else event
