"""Issue 28, item 6: no message or report recurses over, or copies, a value it quotes.

A value in a refusal came from a log, a request or a testee's answer, so it may be an array
100,000 levels deep (`repr` raises RecursionError: a traceback from `check`, `internal` from
`serve` instead of the rule's kind) or a 10 MiB string (a 10 MB message). Every message names
such a value through `sessionspec.preview.shown`: `repr` when that is short, so ordinary messages
read as they always did, a bounded preview when it is not. Here each header field and each
append-request key carries each hostile value, in process on `live` and `model`, over the wire
through `sessionspec serve`, and in a stored log through `sessionspec check`.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hostile import (
    APPEND_KEYS,
    DEPTH,
    HEADER_FIELDS,
    MESSAGE_BOUND,
    MESSAGE_DEPTH,
    MESSAGE_SIZE,
    RULE,
    hostile_append,
    hostile_event_log,
    hostile_header,
    hostile_header_log,
    hostile_texts,
    hostile_values,
    nested,
    run_cli,
)
from hypothesis import given
from hypothesis import strategies as st
from sessionspec import invariants, storage
from sessionspec.conformance.results import ResultsError, Row
from sessionspec.envelope import Event
from sessionspec.errors import SpecViolation
from sessionspec.fork import fork
from sessionspec.jsontext import dumps, parse
from sessionspec.jsonvalue import FrozenDict, FrozenList, snapshot
from sessionspec.preview import as_text, clipped, preview, shown
from sessionspec.rules import kind_of
from sessionspec.storage import chunkrows
from sessionspec.testing.implementations import factory
from sessionspec.wire.compare import differences
from sessionspec.wire.protocol import error_answer
from sessionspec.wire.trace import untag

IMPLEMENTATIONS = ("live", "model")
SIZES = [pytest.param(DEPTH, id="slice"), pytest.param(MESSAGE_DEPTH, id="full", marks=pytest.mark.nightly)]
"""The depth of the deep values: past the recursion limit by default, the issue's 100,000 levels nightly (the strings
are 10 MiB in both)."""


@pytest.fixture(scope="module", params=SIZES)
def depth(request: pytest.FixtureRequest) -> int:
    chosen: int = request.param
    return chosen


@pytest.fixture(scope="module")
def values(depth: int) -> dict[str, Any]:
    return hostile_values(depth)


@pytest.fixture(scope="module")
def texts(depth: int) -> dict[str, bytes]:
    return hostile_texts(depth)


def refused(rule: str | None, call: Any, *args: Any, **options: Any) -> SpecViolation | None:
    """`call(*args, **options)`: refused by `rule` in a bounded message that names it, or (`rule` None) accepted."""
    try:
        call(*args, **options)
    except SpecViolation as violation:
        said = str(violation)
        assert len(said) < MESSAGE_BOUND, (violation.rule, len(said), said[:300])
        assert violation.rule == rule and rule in said, (rule, said[:300])
        return violation
    assert rule is None, f"accepted; {rule} should refuse it"
    return None


# --- shown: repr for what people send, a bounded preview for the rest -------------------------------------------

SMALL = ["yes", "", "it's", "\x00\u202e", 5, -3, 2**53, None, True, False, 1.5, -0.0, [1, 2], {"a": 1}, ("a",), (),
         {"op": "replace", "start": 1, "end": "x"}, ["extra", "keys"], FrozenList([1, [2]]), FrozenDict({"a": [1]}),
         "a" * 120, list(range(20)), {1: 2}, b"bytes", {"s"}, [[[[[[[[1]]]]]]]]]


@pytest.mark.parametrize("value", SMALL, ids=repr)
def test_shown_is_repr_for_ordinary_values(value: Any) -> None:
    """Ordinary messages, tests and the spec's examples keep their spelling."""
    assert shown(value) == repr(value)


def _cycle() -> list[Any]:
    loop: list[Any] = []
    loop.append(loop)
    return loop


LARGE = {
    "deep array": lambda: nested(MESSAGE_DEPTH),
    "deep object": lambda: _deep_object(MESSAGE_DEPTH),
    "huge string": lambda: "x" * MESSAGE_SIZE,
    "huge string of escapes": lambda: "\x00" * MESSAGE_SIZE,
    "huge bytes": lambda: b"\x00" * MESSAGE_SIZE,
    "huge int": lambda: 10**5000,
    "huge negative int": lambda: -(10**5000),
    "cycle": _cycle,
    "wide array": lambda: list(range(1_000_000)),
    "huge key": lambda: {"k" * MESSAGE_SIZE: 1},
    "huge int key": lambda: {10**5000: 1},
    "wide set": lambda: set(range(100_000)),
    "array of huge strings": lambda: ["x" * MESSAGE_SIZE] * 3,
}


def _deep_object(depth: int) -> dict[str, Any]:
    root: dict[str, Any] = {}
    level = root
    for _ in range(depth - 1):
        level["a"] = {}
        level = level["a"]
    return root


@pytest.mark.parametrize("name", LARGE)
def test_shown_bounds_a_value_too_large_for_repr(name: str) -> None:
    value = LARGE[name]()
    text = shown(value)
    assert len(text) < 400, (name, len(text), text)


def test_shown_names_what_it_cut() -> None:
    """A string keeps its head and says how long it was; an integer too large for `repr` is named by its size."""
    assert shown("x" * MESSAGE_SIZE) == repr("x" * 120)[:-1] + f"...' ({MESSAGE_SIZE} characters)"
    assert shown(10**5000) == "an integer of 16610 bits"
    assert shown(-(10**5000)) == "a negative integer of 16610 bits"
    assert shown(nested(MESSAGE_DEPTH)).startswith("[[[[[...]]]]] (an array of 1 entry")
    assert shown(list(range(1000))).startswith("[0, 1, 2, 3, 4, 5, 6, 7, ...] (an array of 1000 entries")


class _Hostile:
    def __repr__(self) -> str:
        raise RuntimeError("no repr")


class _Recursive:
    def __repr__(self) -> str:
        return repr(self)


class _Sizeless(list[Any]):
    def __len__(self) -> int:
        raise RuntimeError("no len")


class _Long:
    def __repr__(self) -> str:
        return "L" * MESSAGE_SIZE


@pytest.mark.parametrize("value", [_Hostile(), _Recursive(), _Sizeless([1]), _Long(), [_Hostile()], {"a": _Recursive()}],
                         ids=["repr-raises", "repr-recurses", "len-raises", "repr-huge", "inside-array", "inside-object"])
def test_shown_never_raises(value: Any) -> None:
    """The caller's own objects too: a message is never where a refusal turns into another error."""
    text = shown(value)
    assert isinstance(text, str) and len(text) < 400


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=300),
    lambda children: st.lists(children, max_size=40) | st.dictionaries(st.text(max_size=20), children, max_size=40),
    max_leaves=200,
)


@given(json_values)
def test_shown_is_repr_when_that_is_short_and_bounded_when_not(value: Any) -> None:
    text = shown(value)
    if len(repr(value)) <= 60:
        assert text == repr(value)
    assert text == repr(value) or len(text) < 400
    assert len(text) <= 10 * 120 + 2  # repr passed only when it is short: escapes make a character at most ten


def test_preview_is_bounded_on_huge_keys_and_integers() -> None:
    """`preview` itself, which `shown` uses: a key is cut, an integer beyond `repr` named by its size."""
    assert len(preview({"k" * MESSAGE_SIZE: 10**5000})) < 200
    assert preview(10**5000) == "an integer of 16610 bits"


def test_clipped_and_as_text() -> None:
    assert clipped("short") == "short"
    assert clipped("x" * MESSAGE_SIZE, 10) == f"xxxxxxxxxx... ({MESSAGE_SIZE} characters)"
    assert as_text("json") == "json" and as_text(None) == "None" and as_text(3) == "3"
    assert len(as_text(nested(MESSAGE_DEPTH))) < 400


# --- in process: every header field and append-request key, on live and model -----------------------------


@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
@pytest.mark.parametrize("field", HEADER_FIELDS)
def test_a_hostile_header_field_is_refused_in_a_bounded_message(impl: str, field: str, values: dict[str, Any]) -> None:
    create = factory(impl)
    for name, value in values.items():
        refused(HEADER_FIELDS[field][name], create, "s", header=hostile_header(field, value))


ISSUE_CASES = (("header", "cwd"), ("header", "id"), ("header", "version"), ("append", "type"), ("append", "surfaceOp"),
               ("append", "sourceEventSeqs"), ("append", "ignorable"))
"""The cases the issue measured (a RecursionError for the deep value, a 10 MB message for the string), at its sizes."""


@pytest.mark.nightly  # 20 s an implementation: the smaller sizes above run by default
@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
def test_the_issues_cases_at_full_size(impl: str) -> None:
    create = factory(impl)
    for name, value in hostile_values(MESSAGE_DEPTH).items():
        for where, field in ISSUE_CASES:
            if where == "header":
                refused(HEADER_FIELDS[field][name], create, "s", header=hostile_header(field, value))
            else:
                session = create("s", header=None)
                refused(APPEND_KEYS[field][1][name], session.append_request, hostile_append(field, value))


@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
def test_a_hostile_session_id_or_header_key_is_refused_in_a_bounded_message(impl: str, values: dict[str, Any]) -> None:
    create = factory(impl)
    refused("SESSION-FORMAT-HEADER.3", create, values["deep"])
    refused("SESSION-FORMAT-HEADER.11", create, "s", header={**hostile_header("id", "s"), values["huge"]: 1})
    long_id = values["huge"]
    refused("SESSION-FORMAT-HEADER.3", create, long_id, header=hostile_header("id", long_id + "!"))
    session = create(long_id)
    for boundary in values.values():
        refused("SESSION-FORK.1", fork, session, boundary)


@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
@pytest.mark.parametrize("key", APPEND_KEYS)
def test_a_hostile_append_request_key_is_refused_in_a_bounded_message(impl: str, key: str, values: dict[str, Any]) -> None:
    create = factory(impl)
    for name, value in values.items():
        session = create("s", header=None)
        violation = refused(APPEND_KEYS[key][1][name], session.append_request, hostile_append(key, value))
        if violation is None:  # accepted: the event's repr is bounded too
            assert len(repr(session.events[-1])) < 3 * 2000
        else:
            assert len(session.events) == 0


@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
def test_a_hostile_append_request_key_name_is_refused_in_a_bounded_message(impl: str, values: dict[str, Any]) -> None:
    session = factory(impl)("s", header=None)
    refused("SESSION-EVENT-ENVELOPE.1", session.append_request, {"type": "turn/start", "data": {"turn": 1}, values["huge"]: 1})


# --- over the wire: sessionspec serve answers with the rule's kind, never `internal` -----------------------------


def _line(request: dict[str, Any], key: str, text: bytes, *, inner: str | None = None) -> bytes:
    """A request line with the JSON `text` at `key` (or at `key` of the object at `inner`)."""
    if inner is None:
        head = dumps({k: v for k, v in request.items() if k != key}).encode()
        return head[:-1] + b"," + json.dumps(key).encode() + b":" + text + b"}"
    head = dumps({k: v for k, v in request.items() if k != inner}).encode()
    return head[:-1] + b"," + json.dumps(inner).encode() + b":" + _line(request[inner], key, text) + b"}"


def _requests(texts: dict[str, bytes]) -> Iterator[tuple[bytes, str | None]]:
    """(request line, the rule that refuses it, None when it is accepted, or "ok" for a create that sets up an append)."""
    yield b'{"op":"hello"}', "ok"
    for field, rules in HEADER_FIELDS.items():
        for name, text in texts.items():
            create = {"op": "create", "id": "s", "seed": None, "header": hostile_header(field, 0)}
            yield _line(create, field, text, inner="header"), rules[name]
    fresh = dumps({"op": "create", "id": "s", "seed": None, "header": None}).encode()
    for key, (rest, rules) in APPEND_KEYS.items():
        for name, text in texts.items():
            yield fresh, "ok"
            yield _line({"op": "append", **rest}, key, text), rules[name]


def test_serve_answers_hostile_requests_with_the_rules_kind(tmp_path: Path, texts: dict[str, bytes]) -> None:
    """`sessionspec serve --impl live`: each hostile create and append is answered with the kind of the rule that
    refuses it (or accepted where the value is valid), its message bounded; `internal` never. The lines go through
    files, one at a time: together they are a few hundred MB."""
    sent, answered = tmp_path / "requests.jsonl", tmp_path / "answers.jsonl"
    expected: list[tuple[bytes, str | None]] = []
    with sent.open("wb") as requests:
        for line, rule in _requests(texts):
            requests.write(line + b"\n")
            expected.append((line[:120], rule))
    with sent.open("rb") as requests, answered.open("wb") as answers:
        ran = subprocess.run([sys.executable, "-m", "sessionspec", "serve", "--impl", "live"], stdin=requests,
                             stdout=answers, stderr=subprocess.PIPE, timeout=600, check=False)
    assert ran.returncode == 0 and not ran.stderr, ran.stderr[-2000:]
    with answered.open("rb") as answers:
        for (line, rule), text in zip(expected, answers, strict=True):
            answer = parse(text.rstrip(b"\n"))  # an accepted deep value comes back whole: read without recursion
            assert isinstance(answer, dict)
            error = answer.get("error") or {}
            where = (line, rule, error)
            if rule in ("ok", None):
                assert answer["ok"], where
                continue
            assert not answer["ok"] and error["kind"] == kind_of(rule) and error["rule"] == rule, where
            assert len(error["message"]) < MESSAGE_BOUND, where


# --- in a stored log: sessionspec check finds the defect in a bounded finding, without a traceback --------------


def _checked(path: Path, *options: str) -> str:
    ran = run_cli("check", *options, str(path))
    said = ran.out + ran.err
    assert ran.traceback is None and "Traceback (most recent" not in said, (path.name, ran.traceback or said[-2000:])
    assert ran.code in (1, 2) and RULE in said, (path.name, ran.code, said[-2000:])
    for line in said.splitlines():
        assert len(line) < MESSAGE_BOUND + len(str(path)), (path.name, len(line), line[:300])
    return said


@pytest.mark.parametrize("field", [*HEADER_FIELDS, "type"])
def test_check_reports_a_hostile_header_field_in_a_bounded_finding(tmp_path: Path, field: str,
                                                                   texts: dict[str, bytes]) -> None:
    for name, text in texts.items():
        if field in ("id", "parentSession", "agentPreset") and name == "huge":
            continue  # a valid header (a stored header's id is any string)
        _checked(hostile_header_log(tmp_path / f"header-{field}-{name}.jsonl", field, text))


def test_the_load_gate_names_a_huge_session_id_in_a_bounded_refusal(tmp_path: Path, texts: dict[str, bytes]) -> None:
    """A valid huge id, in the refusals that name the session: a newer format, an unknown event type."""
    newer = hostile_header_log(tmp_path / "newer.jsonl", "id", texts["huge"])
    newer.write_bytes(newer.read_bytes().replace(b'"version":0', b'"version":1', 1))
    assert "SESSION-FORMAT-VERSION.1" in _checked(newer)
    unknown = hostile_header_log(tmp_path / "unknown.jsonl", "id", texts["huge"])
    unknown.write_bytes(unknown.read_bytes().replace(b'"step/start"', b'"step/begun"', 1))
    for path, rule in ((newer, "SESSION-FORMAT-VERSION.1"), (unknown, "SESSION-UNKNOWN-EVENT-GATE.1")):
        with pytest.raises(SpecViolation) as refusal:
            storage.load(path)
        assert refusal.value.rule == rule and len(str(refusal.value)) < MESSAGE_BOUND + len(str(path))


@pytest.mark.parametrize("key", ["type", "seq", "time", "surfaceOp", "sourceEventSeqs", "ignorable", "unknown"])
def test_check_reports_a_hostile_envelope_field_in_a_bounded_finding(tmp_path: Path, key: str,
                                                                     texts: dict[str, bytes]) -> None:
    for name, text in texts.items():
        for at in (1, 2):  # a surface event (user/message) and a log-only one (step/start)
            _checked(hostile_event_log(tmp_path / f"event-{key}-{name}-{at}.jsonl", key, text, at=at))


@pytest.mark.parametrize(("at", "data_key"), [(0, "turn"), (2, "turn"), (2, "step"), (8, "callId"), (11, "turn")])
def test_check_strict_reports_hostile_turns_steps_and_calls_in_a_bounded_finding(tmp_path: Path, at: int, data_key: str,
                                                                                texts: dict[str, bytes]) -> None:
    """The relational invariants (`--strict`) name the turn, step and call they find wrong."""
    for name, text in texts.items():
        path = hostile_event_log(tmp_path / f"data-{at}-{data_key}-{name}.jsonl", "data", text, at=at, data_key=data_key)
        _checked(path, "--strict")


def test_check_reports_a_hostile_key_name_in_a_bounded_finding(tmp_path: Path) -> None:
    key = "k" * MESSAGE_SIZE
    _checked(hostile_header_log(tmp_path / "header-key.jsonl", key, b"1"))
    _checked(hostile_event_log(tmp_path / "event-key.jsonl", key, b"1"))


# --- each module's own messages, on its own ---------------------------------------------------------------------


def _bounded_refusal(rule: str, call: Any, *args: Any, **options: Any) -> str:
    with pytest.raises(SpecViolation) as refusal:
        call(*args, **options)
    said = str(refusal.value)
    assert refusal.value.rule == rule and len(said) < MESSAGE_BOUND, (refusal.value.rule, len(said), said[:300])
    return said


def test_a_lossless_json_refusal_names_a_deep_path_by_its_ends() -> None:
    deep = nested(MESSAGE_DEPTH)
    innermost = deep
    while innermost:
        innermost = innermost[0]
    innermost.append(float("nan"))
    said = _bounded_refusal("SESSION-LOSSLESS-JSON.3", snapshot, deep)
    assert f"...({MESSAGE_DEPTH - 16} levels)..." in said and said.endswith("[0][0][0][0][0][0][0][0]")
    assert "at $.a[1].b" in _bounded_refusal("SESSION-LOSSLESS-JSON.2", snapshot, {"a": [1, {"b": 2**60}]})  # as before


def test_a_lossless_json_refusal_cuts_a_huge_key_and_names_a_huge_integer() -> None:
    said = _bounded_refusal("SESSION-LOSSLESS-JSON.2", snapshot, {"k" * MESSAGE_SIZE: 10**5000})
    assert "an integer of 16610 bits is outside" in said and f"({MESSAGE_SIZE} characters)" in said
    _bounded_refusal("SESSION-LOSSLESS-JSON.5", snapshot, {("k" * MESSAGE_SIZE,): 1})


def test_a_lossless_text_refusal_quotes_a_huge_duplicate_key_in_part() -> None:
    key = json.dumps("k" * MESSAGE_SIZE).encode()
    _bounded_refusal("SESSION-LOSSLESS-TEXT.6", parse, b"{" + key + b":1," + key + b":2}")
    key = key[: 1 << 20] + b'"'  # the reader's iterative path, past the recursion limit (1 MiB: its copies add up)
    _bounded_refusal("SESSION-LOSSLESS-TEXT.6", parse, b"[" * MESSAGE_DEPTH + b"{" + key + b":1," + key + b":2}"
                     + b"]" * MESSAGE_DEPTH)


def test_a_packed_row_refusal_quotes_its_seq0_and_time0_in_part() -> None:
    row = {"type": "text-chunks", "seq0": 0, "time0": 0, "data": {}}
    for value in hostile_values(DEPTH).values():
        _bounded_refusal("SESSION-CHUNK-ROWS.2", chunkrows.decode, {**row, "seq0": value})
        _bounded_refusal("SESSION-CHUNK-ROWS.2", chunkrows.decode, {**row, "time0": value})
        _bounded_refusal("SESSION-CHUNK-ROWS.1", chunkrows.decode, {**row, "k" * MESSAGE_SIZE: value})


def test_an_events_repr_is_bounded() -> None:
    session = factory("live")("s", header=None)
    for value in (nested(MESSAGE_DEPTH), "x" * MESSAGE_SIZE):
        event = session.append("x/log", value, ignorable=True)
        assert len(repr(event)) < 2 * 2000
    event = session.append("x/log", {"a": 1}, ignorable=True)
    assert repr(event) == f"Event('x/log', seq=2, time={event.time}, data={{'a': 1}}, ignorable=True)"  # as before


def test_a_replacement_names_the_first_missing_seqs() -> None:
    session = factory("model")("s", header=None)
    for turn in range(1, 101):
        session.append("user/message", {"id": f"u{turn}", "role": "user", "source": {"kind": "user"}, "content": []},
                       surface_op="append")
    said = _bounded_refusal("SESSION-SURFACE-PROVENANCE.6", session.append, "user/message",
                            {"id": "r", "role": "user", "source": {"kind": "user"}, "content": []},
                            surface_op={"op": "replace", "start": 0, "end": 99}, source_event_seqs=[0])
    assert said.endswith("missing 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, ... (99 in all)")


def test_the_relational_invariants_name_hostile_turns_in_part_and_take_any_call_id() -> None:
    """A turn, a step or a call id is any JSON value in a bad log; a list as a call id is no set member either."""
    for value in hostile_values(MESSAGE_DEPTH).values():
        _bounded_refusal("SESSION-RELATIONAL-INVARIANT.3", invariants.step, invariants.Trace(),
                         Event("turn/start", 0, 0, {"turn": value}))
    trace = invariants.replay([Event("turn/start", 0, 0, {"turn": 1}), Event("step/start", 1, 0, {"turn": 1, "step": 1}),
                               Event("tool/call", 2, 0, {"turn": 1, "step": 1, "callId": [1]})])
    assert trace.pending == frozenset()


def test_a_comparison_names_an_answers_keys_and_kinds_in_part() -> None:
    """`differences` on a testee's answer that holds a 10 MiB key, a 10 MiB kind or a deep one."""
    huge = "k" * MESSAGE_SIZE
    why = differences("append", {"ok": True}, {"ok": True, huge: 1}, rules=True)
    assert why and all(len(line) < MESSAGE_BOUND for line in why)
    for kind in (huge, nested(MESSAGE_DEPTH)):
        refusal = {"ok": False, "error": {"kind": "json", "rule": "SESSION-LOSSLESS-JSON.1", "message": ""}}
        why = differences("append", refusal, {"ok": False, "error": {"kind": kind, "rule": kind, "message": ""}}, rules=True)
        assert why and all(len(line) < MESSAGE_BOUND for line in why), why


def test_wire_errors_quote_what_they_were_sent_in_part() -> None:
    """An `internal` answer's text, a tag that does not read, and a results row that is no row."""
    assert len(error_answer(ValueError("v" * MESSAGE_SIZE))["error"]["message"]) < 2 * 2000
    with pytest.raises(ValueError) as unread:
        untag({"$float": "f" * MESSAGE_SIZE})
    assert len(str(unread.value)) < MESSAGE_BOUND
    for value in hostile_values(MESSAGE_DEPTH).values():
        with pytest.raises(ResultsError) as refusal:
            Row.from_json({"implementation": value, "version": "1", "required": [0, 0], "recommended": [0, 0],
                           "families": [0, 0], "listed": value, "seconds": value, "command": []})
        assert len(str(refusal.value)) < MESSAGE_BOUND
