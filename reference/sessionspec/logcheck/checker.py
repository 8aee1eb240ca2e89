"""The streaming checker behind `sessionspec check`: every rule the spec states about a stored log.

A stored log is checked one record at a time, keeping only what a later record can be checked
against: the current surface nodes, their types, and (for tool/result rewrites) the data of the
current tool/result nodes. Memory is bounded by the surface, not by the file, so a log of any
length can be checked, and a replace is checked against exactly the surface a replay would build.

Each record takes one of two paths. The fast path is a conservative predicate over the plain
record: if it holds, the reference checks would accept the record too. Anything it does not
recognise (a replace, a request header, a retired type, an odd shape) goes to the exact path,
which runs the reference functions themselves (`parse_event`, `check_content`, `plan`) and so
reports the reference's own rule and message. The fast path decides speed; the exact path
decides every finding.

For a JSONL log the fast path comes in two halves (logcheck/survey.py): `survey` judges a whole
parsed block with no state, and `fold` applies what it found to the surface, in log order. The
survey may run in forked surveyors (logcheck/workers.py), which share the blocks with this process
while it folds; `_fast` is the same predicate, record by record, for every other backend and
for the lines a survey leaves out.
"""

from __future__ import annotations

import gc
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, overload

import orjson
from sessionspec import invariants
from sessionspec.catalog import (
    ASSISTANT_MESSAGE,
    DEFAULT_CATALOG,
    END_SEED,
    RETIRED_TYPES,
    SURFACE_TYPES,
    TOOL_RESULT,
    USER_MESSAGE,
    Catalog,
)
from sessionspec.envelope import ENVELOPE_KEYS, Event, check_content, parse_event, validate_header
from sessionspec.errors import SpecViolation
from sessionspec.jsonvalue import MAX_SAFE_INTEGER, Json, snapshot
from sessionspec.logcheck.reader import StoredLine, Unreadable, open_log
from sessionspec.logcheck.survey import Run, survey
from sessionspec.provider import RANGE_KEEPS_PAIRS, call_ids, provider_findings, result_call_id
from sessionspec.rules import check
from sessionspec.storage.chunkrows import CHUNK
from sessionspec.storage.gate import SEQ as CONTIGUOUS
from sessionspec.storage.gate import UNKNOWN as UNKNOWN_EVENT
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


class _CurrentNodes(Sequence[Event]):
    """The log as `surface.plan` reads it, restricted to what the checker keeps: the current nodes.

    `plan` indexes the log only at a shadowed node (to check a tool/result rewrite), and every
    shadowed node is a current node, so this view answers every lookup a valid replace makes.
    """

    def __init__(self, checker: Checker) -> None:
        self._checker = checker

    @overload
    def __getitem__(self, index: int) -> Event: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Event]: ...
    def __getitem__(self, index: int | slice) -> Event | Sequence[Event]:
        if isinstance(index, slice):
            raise TypeError("the checker keeps only the current nodes")
        kind, data = self._checker.info[index]
        return Event(kind, index, 0, snapshot(_resolved(data)))

    def __len__(self) -> int:
        return self._checker.next_seq


_LOW: Final = -MAX_SAFE_INTEGER


def _nonempty_str(value: object) -> bool:
    return type(value) is str and value != ""


def _fast_message(kind: str, data: Any) -> bool:
    """A conservative form of SESSION-MESSAGE-SHAPE: True only where `check_message_shape` accepts."""
    if type(data) is not dict:
        return False
    message = data if kind == USER_MESSAGE else data.get("message")
    if type(message) is not dict:
        return False
    source = message.get("source")
    if type(source) is not dict or not _nonempty_str(message.get("id")) or type(message.get("content")) is not list:
        return False
    source_kind = source.get("kind")
    if kind == ASSISTANT_MESSAGE:
        return (message.get("role") == "assistant" and source_kind == "model" and _nonempty_str(source.get("provider"))
                and _nonempty_str(source.get("model")))
    if message.get("role") != "user" or not _nonempty_str(source_kind):
        return False
    if kind == USER_MESSAGE:
        return True
    content = message["content"]
    if source_kind != "tool" or len(content) != 1:
        return False
    block = content[0]
    call_id = source.get("callId")
    return (_nonempty_str(call_id) and type(block) is dict and block.get("type") == "tool-result"
            and type(block.get("content")) is list and type(block.get("toolCallId")) is str and block["toolCallId"] == call_id)


_INT: Final = frozenset({int})
_LOG_KEYS: Final = frozenset({"type", "seq", "time", "data"})
_APPEND_KEYS: Final = _LOG_KEYS | {"surfaceOp"}
_SOURCED_KEYS: Final = _APPEND_KEYS | {"sourceEventSeqs"}
_REPLACE_KEYS: Final = frozenset({"op", "start", "end"})


def _kept_by_rewrite(data: Any) -> bytes:
    """SESSION-SURFACE-TOOL-RESULT.3, conservatively: the result without its inner content, as canonical bytes.

    Equal bytes imply `json_equal` of the two stripped forms (same keys, same order, same typed
    values); unequal bytes send the replace to the exact path, which decides.
    """
    message = data["message"]
    block = message["content"][0]
    return orjson.dumps({**data, "message": {**message, "content": [{**block, "content": None}]}})


class Checker:
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
        self.next_seq = 0
        self.nodes: list[int] = []
        self.info: dict[int, tuple[str, Json]] = {}
        """seq -> (type, data) for current nodes; data is kept for tool/results (all nodes when strict), as a
        `StoredLine` where the surveyor surveyed it."""
        self.lines: dict[int, int | None] = {}
        self.replace_generation = 0
        self._trace = invariants.Trace()
        self._view = _CurrentNodes(self)
        self._plain = frozenset(self.known - SURFACE_TYPES - RETIRED_TYPES - {"", "request/header", END_SEED})
        """The log-only types the fast path takes with nothing but the four envelope keys."""
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
        """The runs of a parsed block the fast path takes, judged with no state (see logcheck/survey.py)."""
        return survey(values, self._plain, self._rows) if self.fast and not self.strict else []

    def fold(self, ops: Sequence[Any], k: int, first: int, nxt: int) -> int:
        """Apply a run's surface events `ops[k:]` to the surface, the run continuing the log at seq `first`.

        The stateful half of the fast path: the survey vouched for each record alone; here the
        run must start at the seq the log expects, and each replace must land (`_fast_replace`).
        Returns r: `ops[k:r]` are applied and the run is taken up to the line of the replace
        `ops[r]`, which is the exact path's; r = len(ops) takes the whole run (the next seq is then
        `nxt`); -1 takes nothing. Not used with `strict`, whose checks need every event.
        """
        if self.strict or not self.fast or first != self.next_seq:
            return -1
        nodes, info = self.nodes, self.info
        for refused in range(k, len(ops)):
            step = ops[refused]
            if len(step) == 3:
                # appends: each a new node at the end of the surface.
                seqs, kept, _ = step
                nodes.extend(seqs)
                info.update(zip(seqs, kept, strict=True))
                continue
            _, seq, kind, data, op, sources = step
            if not self._fast_replace(kind, seq, op, sources, data):
                self.next_seq = seq
                return refused
        self.next_seq = nxt
        return len(ops)

    def _fast(self, line: int | None, record: Any) -> bool:
        """The common case, accepted in a few dict lookups; False sends the record to the exact path."""
        if type(record) is not dict or not record.keys() <= ENVELOPE_KEYS:
            return False
        kind = record.get("type")
        seq = record.get("seq")
        time = record.get("time")
        if (seq != self.next_seq or type(seq) is not int or type(time) is not int or not _LOW <= time <= MAX_SAFE_INTEGER
                or type(kind) is not str or "data" not in record or kind in RETIRED_TYPES):
            return False
        if "ignorable" in record:
            if record["ignorable"] is not True or kind in SURFACE_TYPES:
                return False
        elif kind not in self.known:
            return False
        data = record["data"]
        if kind not in SURFACE_TYPES:
            if "surfaceOp" in record or "sourceEventSeqs" in record or not kind or kind == "request/header":
                return False
            if kind == END_SEED and not (type(data) is dict and not data):
                return False
            if self.strict:
                self._relational(line, Event(kind, seq, time, data, None, None, "ignorable" in record))
            self.next_seq = seq + 1
            return True
        if not _fast_message(kind, data):
            return False
        sources = record.get("sourceEventSeqs")
        if sources is not None:
            if type(sources) is not list:
                return False
            if sources:
                if (set(map(type, sources)) != _INT or min(sources) < 0 or max(sources) >= seq
                        or len(set(sources)) != len(sources)):
                    return False
            elif kind != ASSISTANT_MESSAGE:
                return False
        elif "sourceEventSeqs" in record:
            return False
        op = record.get("surfaceOp")
        if type(op) is not str or op != "append":
            return type(op) is dict and not self.strict and self._fast_replace(kind, seq, op, sources, data)
        if self.strict:
            self._relational(line, Event(kind, seq, time, data, "append", None, False))
            self.lines[seq] = line
        self.nodes.append(seq)
        self.info[seq] = (kind, data if kind == TOOL_RESULT or self.strict else None)
        self.next_seq = seq + 1
        return True

    def _fast_replace(self, kind: str, seq: int, op: dict[str, Any], sources: Any, data: Any) -> bool:
        """A replace the reference would accept: a compaction, or a tool-result pruning of one current result.

        `sources` has passed the provenance checks that need only the event.
        """
        start, end = op.get("start"), op.get("end")
        if (op.keys() != _REPLACE_KEYS or op["op"] != "replace" or type(op["op"]) is not str or type(start) is not int
                or type(end) is not int or not sources or start not in self.info or end not in self.info):
            return False
        nodes = self.nodes
        first = nodes.index(start)
        last = first if end == start else nodes.index(end)
        shadowed = nodes[first : last + 1]
        if not shadowed or not set(sources).issuperset(shadowed):
            return False
        if kind == TOOL_RESULT:
            target = self.info[start]
            if (len(shadowed) != 1 or target[0] != TOOL_RESULT
                    or _kept_by_rewrite(_resolved(target[1])) != _kept_by_rewrite(_resolved(data))):
                return False
        info = self.info
        for node in shadowed:
            del info[node]
        nodes[first : last + 1] = [seq]
        info[seq] = (kind, data if kind == TOOL_RESULT else None)
        self.replace_generation += 1
        self.next_seq = seq + 1
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
            check_content(event)
            # The load gate: an unknown type is interpretable only if its writer marked it ignorable.
            check(event.ignorable or event.type in self.known, UNKNOWN_EVENT,
                  f"event type {event.type!r} is unknown to catalog {self.catalog.name} and not marked ignorable",
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
                            f"replacement at seq {event.seq} splits tool call {call_id} from its result")

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



@dataclass
class Report:
    """The outcome of checking one file: its findings, and what was read."""

    file: str
    format: str
    events: int
    findings: list[Finding]
    nodes: int = 0
    replace_generation: int = 0
    unreadable: str | None = None

    def to_json(self) -> dict[str, Json]:
        out: dict[str, Json] = {"file": self.file, "format": self.format, "events": self.events,
                                "surfaceNodes": self.nodes, "replaceGeneration": self.replace_generation,
                                "findings": [f.to_json() for f in self.findings]}
        if self.unreadable is not None:
            out["unreadable"] = self.unreadable
        return out


def check_path(path: str, *, strict: bool = False, tick: Any = None, session_id: str | None = None,
               jobs: int | None = None) -> Report:
    """Check one stored log end to end: header, every record, the torn tail; `tick(done, total)` reports progress.

    `jobs`: 1 checks in this process alone; N > 1 has N - 1 forked surveyors parse and survey
    blocks of a JSONL log while this process folds them; None (the default) uses one process
    per usable CPU, at most four, for logs of 4 MiB or more.
    """
    checker = Checker(path, strict=strict)
    fold = checker.fold

    def ticking(ops: Sequence[Any], k: int, first: int, nxt: int) -> int:
        tick(*log.progress())
        return fold(ops, k, first, nxt)

    try:
        log = open_log(Path(path), session_id, survey=None if strict else checker.survey,
                       fold=fold if tick is None else ticking, jobs=jobs)
    except Unreadable as error:
        return Report(path, "?", 0, [], unreadable=str(error))
    except SpecViolation as violation:
        at = violation.line if violation.line is not None else 1
        return Report(path, "?", 0, [Finding(path, at, None, violation.rule, _plain(violation.message, path))])
    checker.header(1 if log.format != "sqlite" else None, dict(log.header), log.header["id"])
    feed = checker.feed
    count = 0
    # Parsed JSON holds no cycles, so the cycle collector only costs time here (a third of it).
    collecting = gc.isenabled()
    gc.disable()
    try:
        for line, record in log.records():
            feed(line, record)
            count += 1
            if tick is not None and not count & 0xFFF:
                tick(*log.progress())
    except SpecViolation as violation:
        # Corruption the storage scanner refuses outright (a defect with a committed turn/end after it).
        checker.report(violation.line, violation.seq, violation.rule, _plain(violation.message, path))
    finally:
        if collecting:
            gc.enable()
    torn = log.torn
    if torn is not None:
        checker.report(torn.line, torn.seq, torn.rule,
                       f"the log has a torn tail from seq {torn.seq} ({_plain(torn.reason, path)}); "
                       f"`sessionspec repair --write` cuts it")
    checker.finish()
    return Report(path, log.format, checker.next_seq, checker.findings, len(checker.nodes), checker.replace_generation)


def _plain(message: str, path: str) -> str:
    """A backend message without the file name it starts with (the finding names the file already)."""
    return message[len(path) + 2:] if message.startswith(f"{path}: ") else message
