"""The spec's examples, read from its text and run (spec/README.md, "How to read an example").

Every rule line of `spec/` ends its text with `Example:`. An example states cases, each an inline code
span `LEFT → OUTCOME`: LEFT is Python (statements joined by `;`, the last an expression, JSON's `true`,
`false` and `null` being names too), and when its value is a JSON object with a string `op` it is an SCP
request, sent to the executor of the implementation under test, and the outcome is its answer's. OUTCOME
is `ok` (accepted, or answered `"ok": true`), a rule ID (refused by that rule, with that rule's kind), an
exception's class name (`TypeError`), or a value the result equals (a JSON object states the fields of an
answer it names). The cases of one example run in order against one session per implementation, which
starts as `create("s")`. An example that cannot run says so in its text, `(not executable: WHY)`, and is
counted with its reason. A rule line with neither is a failure: the spec's examples cannot drift from the
code unseen, and a rule added later without an executable example is reported until it has one.
"""

from __future__ import annotations

import ast
import io
import math
import os
import re
import shutil
import sqlite3
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from functools import reduce
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import hostile
import zstandard
from sessionspec import cli, storage
from sessionspec.envelope import parse_event
from sessionspec.fork import fork
from sessionspec.invariants import Companion, replay
from sessionspec.jsontext import parse
from sessionspec.jsonvalue import json_equal, snapshot, thaw
from sessionspec.provider import provider_findings
from sessionspec.repair import closers, repaired
from sessionspec.requestheader import canonical_header, fold_request_context, fold_request_header, header_equals
from sessionspec.rules import kind_of
from sessionspec.storage.chunkrows import pack
from sessionspec.storage.layout import encode_segment, project_key
from sessionspec.storage.sqlite import decode_seqs
from sessionspec.surface import fold
from sessionspec.testing import builders
from sessionspec.testing.implementations import factory
from sessionspec.wire.capabilities import Capabilities
from sessionspec.wire.compare import differences
from sessionspec.wire.divergence import divergence
from sessionspec.wire.executor import Executor
from sessionspec.wire.protocol import dumps, loads
from sessionspec.wire.serve import answer_line, serve
from sessionspec.wire.storageops import StorageOps

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "spec"
FIXTURES = ROOT / "tests" / "fixtures" / "storage"
SIDES = ("model", "live")

RULE_ID = r"SESSION-[A-Z][A-Z0-9]*(?:-[A-Z0-9]+)*\.[0-9]+"
RULE_LINE = re.compile(rf"^- \*\*({RULE_ID})\*\* ")
EXAMPLE = re.compile(r"\bExample:(.*?)(?:\*Level:|$)")
SPAN = re.compile(r"`([^`]+)`")
NOT_EXECUTABLE = re.compile(r"\(not executable: ([^)]+)\)")
EXCEPTION_NAME = re.compile(r"[A-Z][A-Za-z]*(?:Error|Exception)")
ARROW = " → "


@dataclass(frozen=True)
class Case:
    """One `LEFT → OUTCOME` of an example."""

    left: str
    outcome: str


@dataclass(frozen=True)
class Example:
    """A rule's example: where it is, its cases, and the reason it gives for not running, if it gives one."""

    rule: str
    where: str
    text: str
    cases: tuple[Case, ...]
    not_executable: str | None

    @property
    def runs(self) -> bool:
        return bool(self.cases)


def examples(spec: Path = SPEC) -> list[Example]:
    """Every rule line's example in `spec`'s chapters, in chapter order; a rule without `Example:` gets an empty one."""
    found = []
    for path in sorted(spec.glob("*.md")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            rule = RULE_LINE.match(line)
            if rule is None:
                continue
            clause = EXAMPLE.search(line)
            text = clause.group(1).strip() if clause else ""
            spans = [span.rsplit(ARROW, 1) for span in SPAN.findall(text) if ARROW in span]
            cases = tuple(Case(left.strip(), outcome.strip()) for left, outcome in spans)
            reason = NOT_EXECUTABLE.search(text)
            found.append(Example(rule.group(1), f"{path.name}:{number}", text, cases,
                                 reason.group(1).strip() if reason else None))
    return found


# --- the names an example's Python reads ----------------------------------------------------------


class Files:
    """The files of one example: written in a temporary folder, removed with it."""

    def __init__(self) -> None:
        self._folder = tempfile.TemporaryDirectory(prefix="spec-example-")
        self.root = Path(self._folder.name)

    def text(self, text: str | bytes, name: str = "log.jsonl") -> Path:
        """A file holding exactly `text`."""
        path = self.root / name
        path.write_bytes(text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text)
        return path

    def jsonl(self, *records: Any, header: Any = None, name: str = "log.jsonl") -> Path:
        """A JSONL log: the session header line of session `s` (or `header`), then each record, one line each (a str
        is written as it is, anything else as compact JSON)."""
        first = {"type": "session", **HEADER, "delegationDepth": 0} if header is None else header
        lines = [item if isinstance(item, str) else dumps(item).decode() for item in (first, *records)]
        return self.text("".join(line + "\n" for line in lines), name)

    def path(self, name: str) -> Path:
        """A path in the example's folder, not yet written."""
        return self.root / name

    def saved(self, name: str, *events: Any) -> Path:
        """A log of session `s` written by `storage.save` through the backend `name`'s suffix names."""
        path = self.root / name
        storage.save(path, HEADER, events)
        return path

    def fixture(self, name: str) -> Path:
        """A copy of the storage fixture `name` (tests/fixtures/storage/)."""
        path = self.root / name
        shutil.copyfile(FIXTURES / name, path)
        return path

    def expanding_zstd(self, frames: int, per_frame: int) -> Path:
        """tests/hostile.py's zstd log: an open turn, then `frames` frames of `per_frame` `"turn/end"` lines."""
        return hostile.expanding_zstd(self.root, frames, per_frame)

    def close(self) -> None:
        self._folder.cleanup()


HEADER = {"version": 0, "id": "s", "createdAt": 0}
"""The session header of the logs an example writes."""


def sql(path: Path, statement: str) -> None:
    """Run one SQL statement on the database at `path` and commit it: another writer's change."""
    db = sqlite3.connect(path)
    try:
        db.executescript(statement)
        db.commit()
    finally:
        db.close()


def compress(data: bytes, *, checksum: bool = True) -> bytes:
    """One zstd frame of `data`, with its content checksum unless told otherwise."""
    return zstandard.ZstdCompressor(write_checksum=checksum).compress(data)


def damage_page(path: Path, page: int) -> None:
    """Overwrite the 4,096-byte page `page` (0 is the first) of the file at `path` with 0xFF, as a failing disk may."""
    data = bytearray(path.read_bytes())
    data[page * 4096:(page + 1) * 4096] = b"\xff" * 4096
    path.write_bytes(bytes(data))


def check(path: Path) -> int:
    """The exit code of `sessionspec check PATH` (its report goes to the captured stdout)."""
    return cli.main(["check", str(path)])


def text_chunks(count: int, *, first: int = 0, gap: int = 10) -> list[Any]:
    """`count` `assistant/chunk` text deltas of turn 1, step 1, block 0, seqs from `first`, `gap` ms apart."""
    return [builders.envelope("assistant/chunk", first + k, {"turn": 1, "step": 1, "chunk": {
        "type": "text-delta", "index": 0, "text": f"t{k}"}}, time=k * gap) for k in range(count)]


def text_row(seq0: int, members: int = 3) -> dict[str, Any]:
    """A valid packed `text-chunks` row of `members` empty deltas at `seq0` (tests/hostile.py's `chunk_row`)."""
    return hostile.chunk_row(seq0, members)


def turn_end(seq: int, turn: int = 1) -> dict[str, Any]:
    """A completed `turn/end` envelope at `seq`: what makes an earlier defect corruption, not a torn tail."""
    return builders.envelope("turn/end", seq, {"turn": turn, "reason": {"kind": "completed"}})


SURFACE_TYPES = ("user/message", "assistant/message", "tool/result")


def log(*entries: tuple[Any, ...]) -> list[Any]:
    """A log as JSON envelopes from `(type, data)` pairs: seqs from 0, time 0, a surface event appended
    (`surfaceOp: "append"`) unless a third item gives its own envelope fields."""
    out = []
    for seq, entry in enumerate(entries):
        event_type, data, *fields = entry
        extra = fields[0] if fields else ({"surfaceOp": "append"} if event_type in SURFACE_TYPES else {})
        out.append(builders.envelope(event_type, seq, data, **extra))
    return out


def namespace(side: str, files: Files) -> dict[str, Any]:
    """The names an example of `side` reads: the current session and its calls, the builders, the spec's functions."""
    create_session = factory(side)
    executor = Executor(create_session, side)
    executor.run({"op": "create", "id": "s", "seed": None, "header": None})
    names: dict[str, Any] = {}

    def create(session_id: str, seed: Any = None, header: Any = None, **options: Any) -> Any:
        options.setdefault("clock", executor.clock)
        executor.session = create_session(session_id, seed, header, **options)
        names["s"] = executor.session
        return executor.session

    def send(request: Mapping[str, Any]) -> Any:
        answer = executor.run(thaw(request))
        names["s"] = executor.session
        names["sent"].append((thaw(request), answer))
        return answer

    def line(text: str | bytes) -> Any:
        """The answer to one raw request line, as the testee loop gives it."""
        raw = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
        answer = loads(answer_line(executor, raw))
        names["s"] = executor.session
        return answer

    def append_user(message_id: str = "u1") -> Any:
        """A user message appended to the surface."""
        return names["s"].append("user/message", builders.user_message(message_id), surface_op="append")

    def compact(start: int, end: int, sources: Any = None) -> Any:
        """A compaction: a summary replacing the surface range from node `start` to node `end`, citing `sources`."""
        return names["s"].append("user/message", builders.compaction_summary("summary", "the summary"),
                                 surface_op=builders.replace_op(start, end), source_event_seqs=sources)

    def declare_storage(*backends: str) -> None:
        """The executor answers the storage ops for `backends`, as a testee whose hello declares them."""
        executor.storage = StorageOps(backends, create_session)

    def serve_lines(data: bytes) -> list[Any]:
        """The answers of the testee loop to the request lines `data` holds."""
        out = io.BytesIO()
        serve(executor, io.BytesIO(data), out)
        return [loads(answer) for answer in out.getvalue().splitlines()]

    names.update(
        {name: getattr(builders, name) for name in dir(builders) if not name.startswith("_")},
        true=True, false=False, null=None, math=math, thaw=thaw, snapshot=snapshot, parse=parse,
        parse_event=parse_event, fold=fold, closers=closers, repaired=repaired,
        fork=lambda source, boundary=None, **options: fork(source, boundary, factory=create_session, **options), replay=replay,
        Companion=Companion, provider_findings=provider_findings, canonical_header=canonical_header,
        header_equals=header_equals, fold_request_header=fold_request_header,
        fold_request_context=fold_request_context, encode_segment=encode_segment, project_key=project_key,
        s=executor.session, sent=[], create=create, append_user=append_user, compact=compact,
        json_equal=json_equal, reduce=reduce, differences=differences, divergence=divergence, Capabilities=Capabilities,
        family=lambda found: found.family, log=log, plain=plain, serve_lines=serve_lines, declare_storage=declare_storage, send=send, line=line,
        append=lambda *args, **kwargs: names["s"].append(*args, **kwargs),
        Session=SimpleNamespace(create=create_session), executor=executor,
        text_file=files.text, jsonl=files.jsonl, fixture=files.fixture, path=files.path, saved=files.saved,
        expanding_zstd=files.expanding_zstd, HEADER=HEADER, sql=sql, damage_page=damage_page, storage=storage, compress=compress, check=check, os=os,
        text_chunks=text_chunks, text_row=text_row, turn_end=turn_end, pack=pack, decode_seqs=decode_seqs,
        load=lambda path, **kwargs: storage.load(path, create=create_session, **kwargs),
        save=lambda path, header, events=(): storage.save(path, header, events) and None,
        repair=lambda path, **kwargs: storage.repair(path, create=create_session, **kwargs),
    )
    return names


# --- running a case ------------------------------------------------------------------------------


def plain(value: Any) -> Any:
    """The JSON a result stands for: an event's envelope, a frozen value thawed, a list of either."""
    if hasattr(value, "to_json"):
        return thaw(value.to_json())
    if isinstance(value, (list, tuple)) and not isinstance(value, str):
        return [plain(item) for item in value]
    if isinstance(value, Mapping):
        return {key: plain(item) for key, item in value.items()}
    return value


def evaluate(left: str, names: dict[str, Any]) -> Any:
    """Run LEFT's statements and return the value of its last one when it is an expression; a request is sent."""
    tree = ast.parse(left, mode="exec")
    last = tree.body[-1] if tree.body else None
    if not isinstance(last, ast.Expr):  # a last statement that is no expression gives None
        exec(compile(tree, "<example>", "exec"), names)
        return None
    tree.body.pop()
    exec(compile(tree, "<example>", "exec"), names)
    value = eval(compile(ast.Expression(last.value), "<example>", "eval"), names)
    if isinstance(value, Mapping) and isinstance(value.get("op"), str):
        return names["send"](value)
    return value


def is_answer(value: Any) -> bool:
    return isinstance(value, Mapping) and isinstance(value.get("ok"), bool)


def verdict(case: Case, names: dict[str, Any]) -> str | None:
    """None when the case gets its stated outcome, else what it got instead."""
    try:
        result = evaluate(case.left, names)
    except Exception as error:  # the outcome may be a refusal, or any exception the spec names
        rule = getattr(error, "rule", None)
        if re.fullmatch(RULE_ID, case.outcome):
            if rule != case.outcome:
                return f"refused by {rule} ({type(error).__name__}: {error})"
            kind = getattr(error, "kind", None)
            if kind is not None and kind != kind_of(rule):
                return f"refused by {rule} with kind {kind}, not the rule's {kind_of(rule)}"
            return None
        if case.outcome == type(error).__name__:
            return None
        return f"raised {type(error).__name__}: {error}"
    return _compare(case.outcome, result, names)


def _compare(outcome: str, result: Any, names: dict[str, Any]) -> str | None:
    if is_answer(result):
        error = result.get("error") or {}
        if outcome == "ok":
            return None if result["ok"] else f"answered {result}"
        if re.fullmatch(RULE_ID, outcome):
            if result["ok"] or error.get("rule") != outcome or error.get("kind") != kind_of(outcome).value:
                return f"answered {result}"
            return None
    elif outcome == "ok":
        return None
    elif re.fullmatch(RULE_ID, outcome) or EXCEPTION_NAME.fullmatch(outcome):
        return f"accepted, giving {plain(result)!r}"
    expected = plain(eval(outcome, names))
    got = plain(result)
    if isinstance(expected, dict) and isinstance(got, dict) and is_answer(result):
        got = {key: got.get(key, "(absent)") for key in expected}
    return None if got == expected else f"gave {got!r}, not {expected!r}"


def run(example: Example, side: str, sent: list[Any] | None = None) -> list[str]:
    """What went wrong running `example` on `side`, one line per case that did not get its outcome; the requests
    its cases sent, each with its answer, are added to `sent` when it is given."""
    files = Files()
    try:
        names = namespace(side, files)
        if sent is not None:
            names["sent"] = sent
        problems = []
        for case in example.cases:
            try:
                problem = verdict(case, names)
            except Exception as error:  # an example that does not parse or evaluate is a problem, reported as one
                problem = f"cannot run: {type(error).__name__}: {error}"
            if problem is not None:
                problems.append(f"{example.where} {example.rule} [{side}] `{case.left}{ARROW}{case.outcome}`: {problem}")
        return problems
    finally:
        files.close()

