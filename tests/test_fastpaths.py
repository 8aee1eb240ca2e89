"""Every fast form implies the reference it speeds up ("fast accept, exact reject"), and says which rules.

Three kinds of test hold each fast form declared with `live.fastpath.implies`:

- its declaration: the rule IDs the reference functions raise (read from their source, following
  the sessionspec functions they call) are all declared, so a rule added to the reference and not
  to the fast form fails here;
- its implication: a Hypothesis property over valid inputs and near misses that break any field at
  any depth (`near_misses`): where the fast form accepts, the reference accepts (and returns the
  same value), and every single change of a valid input is tried too (`every_single_change`);
- its speed: it accepts the common valid cases itself, without handing them to the reference.
"""

from __future__ import annotations

import ast
import functools
import inspect
import re
import shutil
import sys
import tempfile
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any
from unittest import mock

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from nearmisses import FOREIGN, NEAR_MISSES, every_single_change, json_or_foreign, near_misses, outcome, typed
from sessionspec import jsonvalue, shapes, storage
from sessionspec.catalog import DEFAULT_CATALOG, SURFACE_TYPES
from sessionspec.envelope import APPEND, Event, Replace, append_request_parts, build_event, parse_event, parse_sources
from sessionspec.jsontext import parse
from sessionspec.jsonvalue import FrozenDict, FrozenList, is_json, snapshot
from sessionspec.legacy import check_current, upgrade
from sessionspec.live import fastpath, fastrecord, fasttext
from sessionspec.live.fastpath import FAST_FORMS, FastForm, message_shape_holds, rule_ids
from sessionspec.logcheck.checker import Checker
from sessionspec.rules import RULES, check
from sessionspec.shapes import check_content
from sessionspec.storage import storedlog, survey
from sessionspec.storage.chunkrows import ROW_TAGS, decode
from sessionspec.surface import check_tool_result_rewrite, plan_replace
from sessionspec.testing import builders
from sessionspec.testing import crosshair as proving
from sessionspec.testing import strategies as gen
from test_logcheck_checker import stored_log

# --- the declarations ---------------------------------------------------------------------------

RULE_ID = re.compile(r"SESSION-[A-Z][A-Z0-9]*(?:-[A-Z0-9]+)*\.[0-9]+")
_NOT_REFERENCE = ("sessionspec.live", "sessionspec.logcheck", "sessionspec.storage.survey")


def raised_rules(function: Callable[..., Any], seen: set[Any] | None = None) -> set[str]:
    """The rule IDs in `function`'s code (its docstring and comments aside), and in the functions it names, transitively.

    An ID counts as a string literal, or as a module constant holding one (`ROW_SHAPE = define(...)`);
    a named function counts when it is part of the reference (any sessionspec module outside
    `live/` and `logcheck/`), whether it is called or passed (`object_pairs_hook=_object`).
    """
    seen = set() if seen is None else seen
    if function in seen:
        return set()
    seen.add(function)
    tree = ast.parse(textwrap.dedent(inspect.getsource(function))).body[0]
    assert isinstance(tree, ast.FunctionDef)
    body = tree.body[1:] if ast.get_docstring(tree) is not None else tree.body
    names = function.__globals__
    found: set[str] = set()
    for node in (part for statement in body for part in _reached(statement)):
        target: Any = node.value if isinstance(node, ast.Constant) else names.get(node.id) if isinstance(node, ast.Name) else None
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and inspect.ismodule(names.get(node.value.id)):
            target = getattr(names[node.value.id], node.attr, None)
        if isinstance(target, str) and RULE_ID.fullmatch(target):
            found.add(target)
        elif (inspect.isfunction(target) and target.__module__.startswith("sessionspec.")
              and not target.__module__.startswith(_NOT_REFERENCE)):
            found |= raised_rules(target, seen)
    return found


def _reached(node: ast.AST) -> Any:
    """`node` and everything under it, less the body of a `try` that catches SpecViolation: what that body raises is
    the handler's to turn into its own rule (`legacy.check_current` reports an upgrade's refusal as its .6)."""
    yield node
    catches = isinstance(node, ast.Try) and any(
        isinstance(handler.type, ast.Name) and handler.type.id == "SpecViolation" for handler in node.handlers)
    children = [*node.handlers, *node.orelse, *node.finalbody] if catches else ast.iter_child_nodes(node)
    for child in children:
        yield from _reached(child)


def undeclared(form: FastForm) -> set[str]:
    """The rules its reference raises that the fast form neither decides nor has its callers establish."""
    raised = set().union(*(raised_rules(reference) for reference in form.reference))
    return raised - set(form.rules) - set(form.assumes)


def test_the_rule_scan_reads_calls_constants_and_passed_functions() -> None:
    assert raised_rules(shapes.check_message_shape) == set(rule_ids("SESSION-MESSAGE-SHAPE", 1, 9))
    assert raised_rules(decode) == {*rule_ids("SESSION-CHUNK-ROWS", 1, 5), "SESSION-CHUNK-ROWS.8"}  # constants named ROW_*
    assert raised_rules(parse) == set(rule_ids("SESSION-LOSSLESS-TEXT", 1, 6))  # hooks passed to json.loads
    assert set(rule_ids("SESSION-SURFACE-PROVENANCE", 1, 5)) <= raised_rules(build_event)  # through parse_sources
    assert "SESSION-LOSSLESS-JSON.7" not in raised_rules(snapshot)  # named in its docstring only
    assert raised_rules(check_current) == {"SESSION-LEGACY-UPGRADE.6"}  # what `upgrade` raises is caught and reported as .6


def _reference_with_a_new_rule(event: Event) -> None:
    shapes.check_message_shape(event)
    check(event.data is not None, "SESSION-MESSAGE-SHAPE.10", "a rule added to the reference")


def test_a_rule_added_to_the_reference_and_not_to_the_fast_form_is_found() -> None:
    form = FastForm(message_shape_holds, (_reference_with_a_new_rule,), rule_ids("SESSION-MESSAGE-SHAPE", 1, 9), ())
    assert undeclared(form) == {"SESSION-MESSAGE-SHAPE.10"}


@pytest.mark.parametrize("form", FAST_FORMS, ids=lambda form: form.fast.__name__)
def test_each_fast_form_declares_every_rule_its_reference_raises(form: FastForm) -> None:
    assert not undeclared(form), f"{form.name} does not declare {sorted(undeclared(form))}"
    declared = set(form.rules) | set(form.assumes)
    assert declared <= set(RULES), f"{form.name} declares unknown rules {sorted(declared - set(RULES))}"
    assert not set(form.rules) & set(form.assumes), f"{form.name} both decides and assumes a rule"


# --- the implications, one input at a time --------------------------------------------------------
# Each takes one input (its arguments as a list), asserts that where the fast form accepts the
# reference accepts (returning the same value), and says whether the fast form took it itself.


def decides_as(fast: Callable[[], Any], reference: Callable[[], Any], name: str) -> bool:
    """`fast()` has the outcome of `reference()`; whether it decided alone, without calling `fastpath.<name>`."""
    with mock.patch.object(fastpath, name, wraps=getattr(fastpath, name)) as slow:
        got = outcome(fast)
    assert got == outcome(reference)
    return not slow.called


def owned_is_snapshot(args: list[Any]) -> bool:
    [value] = args
    return decides_as(lambda: fastpath.owned(value), lambda: snapshot(value), "snapshot")


def request_parts_is_the_reference(args: list[Any]) -> bool:
    [request] = args
    return decides_as(lambda: fastpath.request_parts(request), lambda: append_request_parts(request), "append_request_parts")


def _in_live_domain(args: list[Any]) -> bool:
    """The parts `live` hands `event_of`: a checked type, its seq and clock, owned values, flags saying presence."""
    event_type, seq, time, data, op, has_op, sources, has_sources, ignorable = args
    return (jsonvalue.is_nonempty_str(event_type) and jsonvalue.is_nonneg_safe_int(seq) and jsonvalue.is_safe_int(time)
            and all(type(flag) is bool for flag in (has_op, has_sources, ignorable)) and is_json([data, op, sources])
            and (has_op or op is None) and (has_sources or sources is None))


def event_of_is_build_event(args: list[Any]) -> bool:
    if not _in_live_domain(args):
        return False
    event_type, seq, time, data, op, has_op, sources, has_sources, ignorable = args
    parts = (event_type, seq, time, snapshot(data), snapshot(op), has_op, snapshot(sources), has_sources, ignorable)
    flags = {"has_surface_op": has_op, "has_sources": has_sources}
    return decides_as(lambda: fastpath.event_of(*parts), lambda: build_event(*parts[:5], parts[6], ignorable, **flags),
                      "build_event")


def stored_event_is_parse_event(args: list[Any]) -> bool:
    raw, index = args
    if not jsonvalue.is_nonneg_safe_int(index):
        return False
    with mock.patch.object(fastrecord, "parse_event", wraps=parse_event) as slow:
        got = outcome(lambda: fastrecord.stored_event(raw, index))
    assert got == outcome(lambda: parse_event(raw, index))
    return not slow.called


def sources_hold_implies_parse_sources(args: list[Any]) -> bool:
    event_type, seq, sources = args
    if not (jsonvalue.is_nonneg_safe_int(seq) and is_json(sources)):
        return False
    held = fastpath.sources_hold(event_type, seq, sources)
    if held:
        parse_sources(event_type, seq, snapshot(sources))
    return held


def message_shape_implies_check_message_shape(args: list[Any]) -> bool:
    event_type, data = args
    held = message_shape_holds(event_type, data)
    if held:
        shapes.check_message_shape(Event(event_type, 0, 0, data))
    return held


def current_holds_implies_check_current(args: list[Any]) -> bool:
    event_type, data = args
    if not (jsonvalue.is_nonempty_str(event_type) and is_json(data)):
        return False
    held = fastpath.current_holds(event_type, data)
    if held:
        check_current(Event(event_type, 0, 0, snapshot(data)))
    return held


def rewrite_keeps_implies_the_rewrite_check(args: list[Any]) -> bool:
    target, data = args
    if not is_json(args):
        return False
    held = fastpath.rewrite_keeps(target, data)
    if held:
        result = Event("tool/result", 0, 0, snapshot(target), APPEND)
        check_tool_result_rewrite([result], Event("tool/result", 1, 0, snapshot(data), Replace(0, 0)), (0,))
    return held


def replace_holds_implies_plan_replace(args: list[Any]) -> bool:
    """args: the surface (seqs in surface order), each node's type and data, then the replacement."""
    nodes, types, datas, event_type, start, end, sources, data = args
    seq = 10
    surface = (isinstance(nodes, list) and all(type(n) is int and 0 <= n < seq for n in nodes) and len(set(nodes)) == len(nodes)
               and isinstance(types, list) and isinstance(datas, list) and len(types) == len(datas) == len(nodes)
               and all(message_shape_holds(*node) for node in zip(types, datas, strict=True)) and is_json(datas))
    # The domain: a surface of accepted events; a replacement whose marker and sources passed their checks.
    if not (surface and jsonvalue.is_nonneg_safe_int(start) and jsonvalue.is_nonneg_safe_int(end) and is_json(data)
            and (sources is None or fastpath.sources_hold(event_type, seq, sources))):
        return False
    on_surface = dict(zip(nodes, zip(types, datas, strict=True), strict=True))
    log = [Event(on_surface[n][0], n, 0, snapshot(on_surface[n][1]), APPEND) if n in on_surface
           else Event("turn/start", n, 0, FrozenDict()) for n in range(seq)]
    current = {node: (log[node].type, log[node].data) for node in nodes}
    landed = fastpath.replace_holds(nodes, current, event_type, start, end, sources, data)
    if landed is not None:
        event = Event(event_type, seq, 0, snapshot(data), Replace(start, end), None if sources is None else FrozenList(sources))
        planned = plan_replace(nodes, log, event, Replace(start, end))
        assert (planned.first, planned.last) == landed
    return landed is not None


def lean_row_implies_decode(args: list[Any]) -> bool:
    [row] = args
    kind = row.get("type") if isinstance(row, dict) else None
    if type(kind) is not str or kind not in ROW_TAGS or not is_json(row):
        return False
    members = survey.lean_row(row, kind)
    if members:
        assert len(decode(row)) == members
    return members > 0


PLAIN = Checker("x")._plain


def survey_implies_the_reference(args: list[Any]) -> bool:
    """Every record of a run that starts where a log could expect it passes the reference, its seqs continue from
    the run's first, its type is in the catalog, and the run's surface events are listed in order."""
    [values] = args
    if not isinstance(values, list) or not is_json(values):
        return False
    runs = survey.survey(values, PLAIN, True)
    for start, end, first, nxt, ops in runs:
        if first < 0:
            continue  # the fold takes a run only at the seq the log expects, a count of records
        seq, surface = first, []
        for record in values[start:end]:
            for event in map(snapshot, decode(record)):
                parsed = parse_event(event, seq)
                assert upgrade(parsed, "s", {}) is None  # a legacy shape is the exact path's (the load gate upgrades it)
                check_content(parsed)
                assert parsed.seq == seq and parsed.type in DEFAULT_CATALOG.types
                surface += [seq] if parsed.surface_op is not None else []
                seq += 1
        assert seq == nxt
        assert [s for step in ops for s in (step[0] if len(step) == 3 else [step[1]])] == surface
    return [run[:2] for run in runs] == [(0, len(values))]


RESPELLINGS = [(b"", b""), (b":", b": "), (b"1", b"-0"), (b"1", b"1E5"), (b"1", b"1.0"), (b"1", b"9007199254740993"),
               (b'"', b'"\\ud800'), (b"{", b'{"type":"x",'), (b"}", b",}"), (b"t", b"\\u0074"), (b"e", b"\xff"),
               (b'"seq":', b'"n":-0.0,"seq":'), (b'"seq":', b'"n":[-0],"seq":'), (b'"seq":', b'"seq":1,"seq":'),
               (b"1", b"NaN"), (b"1", b"1e400"), (b"[", b"[ ")]
"""Ways to spell a stored line differently: (the first `old`, replaced by `new`)."""


def fast_parse_is_parse(args: list[Any]) -> bool:
    """args: a record, written as canonical text, then respelled by RESPELLINGS[index] at its first place."""
    record, index = args
    if type(index) is not int or not 0 <= index < len(RESPELLINGS):
        return False
    try:
        raw = orjson.dumps(record)
    except orjson.JSONEncodeError:
        return False
    old, new = RESPELLINGS[index]
    raw = raw.replace(old, new, 1) if old else raw
    value = fasttext.fast_parse(raw)
    if value is fasttext.SLOW:
        return False
    assert typed(value) == typed(parse(raw))
    return True


@functools.lru_cache(maxsize=4096)
def read_losslessly(line: bytes) -> Any:
    """The lossless parser's reading of one line, typed: a block's lines but one are the same from change to change
    (the sweep of every change of the 20-record log below reread every unchanged line with the slow parser)."""
    return typed(parse(line))


def parse_block_is_parse(args: list[Any]) -> bool:
    """args: records written as canonical lines, then line `where` respelled by RESPELLINGS[index]; the block is the
    lines joined by newlines. Where `parse_block` reads it, it reads each line as the lossless parser does."""
    records, where, index = args
    if not isinstance(records, list) or not records or type(where) is not int or not 0 <= where < len(records) \
            or type(index) is not int or not 0 <= index < len(RESPELLINGS):
        return False
    try:
        lines = [orjson.dumps(record) for record in records]
    except (orjson.JSONEncodeError, TypeError):
        return False
    old, new = RESPELLINGS[index]
    lines[where] = lines[where].replace(old, new, 1) if old else lines[where]
    values = fasttext.parse_block(b"\n".join(lines))
    if values is None:
        return False
    assert len(values) == len(lines)
    assert [typed(value) for value in values] == [read_losslessly(line) for line in lines]
    return True


# --- the common cases, and every single change of them ---------------------------------------------

USER = builders.user_message("u1", "hi")
SUMMARY = builders.compaction_summary("s1", "summary")
ASSISTANT = builders.assistant_message("a1", [builders.text_block("ok"), builders.tool_call_block("c1")])
RESULT = builders.tool_result("c1", "a long output")
def stored_log_file(records: list[Any]) -> Path:
    """`records` as the lines of a JSONL log after a valid header: canonical text, or `{` where it has none."""
    lines = [orjson.dumps({"type": "session", "version": 0, "id": "s", "createdAt": 1, "delegationDepth": 0})]
    for record in records:
        try:
            lines.append(orjson.dumps(record, option=orjson.OPT_STRICT_INTEGER))
        except (orjson.JSONEncodeError, TypeError):
            lines.append(b"{")
    path = Path(tempfile.mkdtemp()) / "log.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def load_jsonl_is_the_gate(args: list[Any]) -> bool:
    """A log the fast form loads, the gate loads (with the store's seeding) as the same result; anything else is the
    gate's, which loads it (with closers, upgrades or a torn tail) or refuses it."""
    [records] = args
    if not isinstance(records, list):
        return False
    path = stored_log_file(records)
    try:
        fast = storedlog.load_jsonl(str(path), None, DEFAULT_CATALOG)
        if fast is None:
            return False
        gate = storage.load_from(storage.open_reader(path), str(path), catalog=DEFAULT_CATALOG, create=None)
        assert (fast.header, fast.closers, fast.torn, fast.upgrades, fast.revision) == (
            gate.header, gate.closers, gate.torn, gate.upgrades, gate.revision)
        assert fast.events == gate.events and list(fast.events) == list(gate.events)
        return True
    finally:
        shutil.rmtree(path.parent)


RECORDS = stored_log()
"""A clean stored log: turn/start, user (1), step/start, request/header (3), four packed rows (4-7), assistant (8),
tool/call, tool/result (10), its pruning (11), step/end, turn/end, a compaction (14-16), a second turn (17-19)."""
SURFACE = [[0, 2, 5], ["user/message", "tool/result", "assistant/message"], [USER, RESULT, ASSISTANT]]

CASES: dict[Callable[..., Any], tuple[Callable[[list[Any]], bool], list[list[Any]]]] = {
    fastpath.owned: (owned_is_snapshot, [[RESULT], [USER], [[1, 2.5, "x", None, True]], [snapshot(RESULT)], ["s"], [7]]),
    fastpath.request_parts: (request_parts_is_the_reference, [
        [{"op": "append", "type": "turn/start", "data": {"turn": 1}}],
        [{"type": "user/message", "data": USER, "surfaceOp": "append"}],
        [{"type": "tool/result", "data": RESULT, "surfaceOp": "append", "sourceEventSeqs": [4]}],
        [{"type": "x/audit", "data": None, "ignorable": True}]]),
    fastpath.event_of: (event_of_is_build_event, [
        ["turn/start", 3, 1, {"turn": 1}, None, False, None, False, False],
        ["x/audit", 3, -5, None, None, False, None, False, True],
        ["user/message", 3, 1, USER, "append", True, None, False, False],
        ["assistant/message", 9, 1, ASSISTANT, "append", True, [2, 3, 4, 5], True, False],
        ["assistant/message", 9, 1, ASSISTANT, "append", True, [], True, False],
        ["tool/result", 9, 1, RESULT, "append", True, [8], True, False],
        ["user/message", 9, 1, USER, {"op": "replace", "start": 2, "end": 5}, True, [2, 3, 4, 5], True, False],
        ["tool/result", 9, 1, RESULT, {"op": "replace", "start": 8, "end": 8}, True, [8], True, False],
        ["assistant/message", 9, 1, ASSISTANT, {"op": "replace", "start": 0, "end": 0}, True, None, False, False]]),
    fastrecord.stored_event: (stored_event_is_parse_event, [
        [event, event["seq"]] for record in RECORDS for event in decode(record)]),
    fastpath.sources_hold: (sources_hold_implies_parse_sources, [
        ["tool/result", 9, [8]], ["assistant/message", 20, list(range(4, 12))], ["assistant/message", 5, []],
        ["user/message", 9, [0, 3, 5]], ["user/message", 9, [5, 0, 3]], ["assistant/message", 9, [0, 1]]]),
    message_shape_holds: (message_shape_implies_check_message_shape, [
        ["user/message", USER], ["assistant/message", ASSISTANT], ["tool/result", RESULT],
        ["tool/result", snapshot(RESULT)], ["assistant/message", builders.assistant_message("a2", [])]]),
    fastpath.current_holds: (current_holds_implies_check_current, [
        ["turn/end", {"turn": 1, "reason": {"kind": "completed"}}], ["turn/start", {"turn": 1}],
        ["turn/end", {"turn": 1, "reason": {"kind": "aborted", "reason": {"kind": "legacy"}}}],
        ["turn/end", {"turn": 1, "reason": {"kind": "error", "error": {"message": "x", "code": "E"}}}],
        ["user/message", USER], ["assistant/message", ASSISTANT], ["tool/result", RESULT], ["x/audit", None]]),
    fastpath.rewrite_keeps: (rewrite_keeps_implies_the_rewrite_check, [[RESULT, builders.pruned(RESULT)], [RESULT, RESULT]]),
    fastpath.replace_holds: (replace_holds_implies_plan_replace, [
        [*SURFACE, "user/message", 0, 5, [0, 2, 5], SUMMARY], [*SURFACE, "user/message", 2, 2, [2, 4], SUMMARY],
        [*SURFACE, "tool/result", 2, 2, [2], builders.pruned(RESULT)]]),
    survey.lean_row: (lean_row_implies_decode, [[row] for row in RECORDS if "seq0" in row]),
    survey.survey: (survey_implies_the_reference, [[RECORDS[:3]], [RECORDS[7:11]], [RECORDS[14:17]], [RECORDS[4:]]]),
    fasttext.fast_parse: (fast_parse_is_parse, [[record, 0] for record in RECORDS]),
    fasttext.parse_block: (parse_block_is_parse, [[RECORDS, 0, 0], [RECORDS[:3], 2, 0], [RECORDS[4:8], 1, 0]]),
    storedlog.load_jsonl: (load_jsonl_is_the_gate, [  # the sweep takes the first three; the whole log is broken any
        # way in tests/test_07_storedlog.py (a file written and loaded twice for each change)
        [[*RECORDS[:3], {**RECORDS[-1], "seq": 3, "data": {"turn": 1, "reason": {"kind": "completed"}}}]], [[]],
        [[RECORDS[0], {**RECORDS[-1], "seq": 1, "data": {"turn": 1, "reason": {"kind": "completed"}}}]], [RECORDS]]),
}
"""Each fast form: the implication it is held to, and the common valid inputs it must accept itself."""


def test_every_fast_form_is_held_to_its_implication_here() -> None:
    assert {form.fast for form in FAST_FORMS} == set(CASES)


@pytest.mark.parametrize("fast", list(CASES), ids=lambda fast: fast.__name__)
def test_each_fast_form_accepts_the_common_cases_itself(fast: Callable[..., Any]) -> None:
    implied, bases = CASES[fast]
    for base in bases:
        assert implied(base), f"{fast.__name__} hands a common valid input to the reference: {base!r:.200}"


BOUNDARIES: dict[Callable[..., Any], list[list[Any]]] = {
    fastpath.sources_hold: [["assistant/message", 12, list(range(4, 12))], ["user/message", 6, [5, 0, 3]]],
    fastpath.replace_holds: [[*SURFACE, "tool/result", 2, 5, [2, 5], builders.pruned(RESULT)]],
    fasttext.fast_parse: [[RECORDS[10], index] for index in range(len(RESPELLINGS))],
    fasttext.parse_block: [[RECORDS[8:12], 2, index] for index in range(len(RESPELLINGS))],
}
"""More inputs to change one thing in: at the edge of acceptance (the last source just below the seq, a rewrite
of two nodes), and every respelling of a stored line."""


@pytest.mark.parametrize("fast", list(CASES), ids=lambda fast: fast.__name__)
def test_each_fast_form_implies_its_reference_one_change_from_every_common_case(fast: Callable[..., Any]) -> None:
    """Every path of the first common inputs and the boundaries, set to every near miss, deleted, extended, wrapped,
    reordered, one up or one down."""
    implied, bases = CASES[fast]
    leaves = NEAR_MISSES + FOREIGN if fast in (fastpath.owned, fastpath.request_parts) else NEAR_MISSES
    for base in bases[:3] + BOUNDARIES.get(fast, []):
        for variant in every_single_change(base, leaves):
            implied(variant)


# --- the properties: valid inputs and near misses, several changes at a time ------------------------


@given(near_misses(st.one_of(json_or_foreign(st.sampled_from(NEAR_MISSES + FOREIGN)), gen.json_values).map(lambda v: [v]),
                   NEAR_MISSES + FOREIGN))
def test_owned_returns_what_snapshot_returns(args: list[Any]) -> None:
    owned_is_snapshot(args)


def test_owned_takes_deep_values_to_the_iterative_snapshot() -> None:
    deep: Any = []
    for _ in range(100_000):
        deep = [deep]
    copy = fastpath.owned(deep)
    assert isinstance(copy, FrozenList) and copy is not deep


@given(near_misses(st.sampled_from(CASES[fastpath.request_parts][1]), NEAR_MISSES + FOREIGN))
def test_request_parts_returns_what_append_request_parts_returns(args: list[Any]) -> None:
    request_parts_is_the_reference(args)


_appends = st.builds(
    lambda kind, seq, data, sources, ignorable: (
        [kind, seq, 1, data, "append", True, *sources, False] if kind in SURFACE_TYPES
        else [kind, seq, -1, data, None, False, None, False, ignorable]),
    st.sampled_from([*sorted(SURFACE_TYPES), "turn/start", "x/audit"]), st.integers(0, 12),
    st.one_of(gen.json_values, gen.user_message_data()),
    st.sampled_from([(None, False), ([], True), ([0], True), ([0, 1], True), ([2, 3, 4], True), ([1, 0], True)]),
    st.booleans())
"""The appends a live session makes all day: log-only events, and surface events with sources below seq 12 or none."""
_event_parts = st.builds(
    lambda kind, seq, data, op, sources, ignorable: [kind, seq, 1, data, *op, *sources, ignorable],
    st.sampled_from([*sorted(SURFACE_TYPES), "turn/start", "x/audit", "mode/set", "session/end-seed", "request/header"]),
    st.integers(0, 12),
    st.one_of(gen.user_message_data(), gen.assistant_message_data(), gen.tool_result_data(), st.sampled_from([{}, None])),
    st.sampled_from([(None, False), (None, True), ("append", True), ("Append", True), (["append"], True),
                     ({"op": "replace", "start": 0, "end": 1}, True), ({"op": "replace", "start": 0}, True)]),
    st.one_of(st.sampled_from([(None, False), (None, True)]), st.lists(
        st.one_of(st.integers(-1, 13), st.booleans(), st.sampled_from([2.0, -0.0])), max_size=4).map(lambda s: (s, True))),
    st.booleans(),
)


@given(near_misses(st.one_of(_appends, _event_parts)))
def test_event_of_returns_what_build_event_returns(args: list[Any]) -> None:
    event_of_is_build_event(args)


@given(near_misses(st.sampled_from(CASES[fastrecord.stored_event][1]), NEAR_MISSES + FOREIGN))
def test_stored_event_returns_what_parse_event_returns(args: list[Any]) -> None:
    stored_event_is_parse_event(args)


@st.composite
def _sources(draw: st.DrawFn) -> list[Any]:
    """A surface event's type, seq and sources: earlier seqs in any order, a run of them, or anything like a seq."""
    seq = draw(st.integers(0, 14))
    low = draw(st.integers(0, seq))
    earlier = st.permutations(range(seq)).map(lambda seqs: seqs[:low])
    run = st.integers(0, seq - low).map(lambda start: list(range(start, start + low)))
    loose = st.lists(st.one_of(st.integers(-2, 14), st.booleans(), st.sampled_from([2.0, -0.0, 2**53])), max_size=6)
    return [draw(st.sampled_from(sorted(SURFACE_TYPES))), seq, draw(st.one_of(earlier, run, loose))]


@given(near_misses(_sources()))
def test_sources_fast_accept_implies_parse_sources_accepts(args: list[Any]) -> None:
    sources_hold_implies_parse_sources(args)


_messages = st.one_of(*(st.tuples(st.just(kind), data) for kind, data in (
    ("user/message", gen.user_message_data()), ("assistant/message", gen.assistant_message_data()),
    ("tool/result", gen.tool_result_data()))))


@given(near_misses(_messages.map(list)))
def test_message_shape_fast_accept_implies_reference_accepts(args: list[Any]) -> None:
    message_shape_implies_check_message_shape(args)


_LEGACY_REASONS = [{"kind": kind} for kind in ("completed", "blocked", "max-tokens", "interrupted", "aborted", "disposed",
                                                 "error")] + [{"kind": "error", "error": {"message": "m", "code": "c"}}]
_turn_events = st.one_of(
    st.tuples(st.just("turn/end"), st.fixed_dictionaries({"turn": st.integers(0, 3), "reason": st.sampled_from(_LEGACY_REASONS)})),
    st.tuples(st.just("turn/start"), st.fixed_dictionaries({"turn": st.integers(0, 3)}, optional={"trigger": st.just({"kind": "u"})})),
    st.tuples(st.sampled_from(["steering/message", "user/message", "x/audit"]), st.just({"turn": 1, "message": {"id": "m"}})))


@given(near_misses(st.one_of(_turn_events, _messages).map(list)))
def test_current_shape_fast_accept_implies_no_load_upgrade_applies(args: list[Any]) -> None:
    current_holds_implies_check_current(args)


@given(near_misses(gen.tool_result_data().map(lambda data: [data, builders.pruned(data)])))
def test_rewrite_keeps_fast_accept_implies_the_rewrite_check_accepts(args: list[Any]) -> None:
    rewrite_keeps_implies_the_rewrite_check(args)


@st.composite
def _replacements(draw: st.DrawFn) -> list[Any]:
    """A surface of 1-5 accepted nodes, then a replacement of a range of it, or near it (the last 5 arguments change)."""
    nodes = draw(st.lists(st.integers(0, 9), min_size=1, max_size=5, unique=True))
    types = [draw(st.sampled_from(sorted(SURFACE_TYPES))) for _ in nodes]
    datas = [{"user/message": USER, "assistant/message": ASSISTANT, "tool/result": RESULT}[kind] for kind in types]
    event_type = draw(st.sampled_from(["user/message", "tool/result"]))
    results = [n for n, kind in zip(nodes, types, strict=True) if kind == "tool/result"]
    if event_type == "tool/result" and results and draw(st.booleans()):
        start = end = draw(st.sampled_from(results))  # a pruning
    else:
        first, last = sorted(draw(st.lists(st.integers(0, len(nodes) - 1), min_size=2, max_size=2)))
        start, end = nodes[first], nodes[last]
        if draw(st.booleans()):  # perhaps not a range of the surface
            start, end = draw(st.sampled_from([*nodes, 1, 9])), draw(st.sampled_from([*nodes, 1, 9]))
    covering = sorted(nodes[min(nodes.index(start), nodes.index(end)):]) if start in nodes and end in nodes else nodes
    sources = draw(st.one_of(st.just(covering), st.none(), st.lists(st.integers(0, 9), max_size=5, unique=True)))
    data = SUMMARY if event_type == "user/message" else builders.pruned(RESULT)
    return [nodes, types, datas, *draw(near_misses(st.just([event_type, start, end, sources, data])))]


@given(_replacements())
def test_replace_holds_implies_plan_replace_accepts_the_same_range(args: list[Any]) -> None:
    replace_holds_implies_plan_replace(args)


_rows = st.builds(
    lambda tag, seq0, time0, turn, gaps, texts, name: [{"type": tag, "seq0": seq0, "time0": time0, "data": {
        "turn": turn, "step": 1, "index": 0, **({"id": "c1", **name} if tag == "tool-call-chunks" else {}),
        "dt": gaps[:len(texts) - 1] + [0] * (len(texts) - 1 - len(gaps)),
        ("args" if tag == "tool-call-chunks" else "texts"): texts}}],
    st.sampled_from(sorted(ROW_TAGS)), st.integers(0, 2**53), st.integers(-(2**53), 2**53),
    st.integers(0, 3), st.lists(st.integers(-(2**52), 2**52), max_size=6), st.lists(st.text(max_size=3), min_size=1, max_size=6),
    st.sampled_from([{}, {"name": "read_file"}]),
)
"""Packed rows of every tag, at any seq and time: the safe-integer bounds are where rows go wrong."""


@given(near_misses(st.one_of(st.sampled_from(CASES[survey.lean_row][1]), _rows)))
def test_lean_row_implies_decode_accepts_as_many_members(args: list[Any]) -> None:
    lean_row_implies_decode(args)


_blocks = st.builds(lambda start, count: [RECORDS[start:start + count]], st.integers(0, len(RECORDS) - 1), st.integers(1, 8))


@given(near_misses(_blocks))
def test_survey_runs_imply_every_record_passes_the_reference(args: list[Any]) -> None:
    survey_implies_the_reference(args)


@given(near_misses(st.tuples(st.sampled_from(RECORDS), st.integers(0, len(RESPELLINGS) - 1)).map(list)))
def test_fast_parse_implies_the_lossless_parser_reads_the_same_value(args: list[Any]) -> None:
    fast_parse_is_parse(args)


@given(near_misses(st.tuples(st.lists(st.sampled_from(RECORDS), min_size=1, max_size=6), st.integers(0, 5),
                             st.integers(0, len(RESPELLINGS) - 1)).map(list)))
def test_parse_block_implies_the_lossless_parser_reads_each_line(args: list[Any]) -> None:
    parse_block_is_parse(args)


# --- the CrossHair obligations (proofs/obligations_fastpaths.py) hold on concrete inputs -------------

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "proofs"))
import obligations_fastpaths as obligations  # noqa: E402


def test_prove_lists_an_obligation_for_each_fast_form_the_solver_can_carry() -> None:
    listed = {o.name for o in proving.discover(Path(obligations.__file__).parent) if o.module == "obligations_fastpaths"}
    assert listed == {"sources_fast_accept_implies_reference", "message_shape_fast_accept_implies_reference",
                      "request_parts_is_the_reference", "event_of_is_build_event", "owned_is_snapshot",
                      "replace_fast_accept_implies_reference", "current_fast_accept_implies_reference",
                      "stored_event_is_parse_event"}


@given(st.integers(-3, 40), st.integers(-3, 40), st.integers(-3, 40), st.booleans(), st.lists(st.integers(-3, 10), max_size=3))
def test_the_fast_path_obligations_hold_on_concrete_inputs(a: int, b: int, c: int, flag: bool, raw: list[int]) -> None:
    obligations.sources_fast_accept_implies_reference(a, b, flag, c, a, raw)
    obligations.message_shape_fast_accept_implies_reference(a, b, c)
    obligations.request_parts_is_the_reference(a, b, c, a + c)
    obligations.event_of_is_build_event(a, b, c, a + b, b, c, raw)
    obligations.owned_is_snapshot([a, b], raw)
    obligations.replace_fast_accept_implies_reference(a, b, c, a - b, flag, b, sorted({n % 8 for n in raw}), c)
    obligations.current_fast_accept_implies_reference(a, b, c, a + b, flag, not flag)
    obligations.stored_event_is_parse_event(a, b, c, a + b, c)


@pytest.mark.parametrize("data", [{"turn": 1, "trigger": {"kind": "user"}}, {"turn": 1, "trigger": "x"}])
def test_the_survey_leaves_a_legacy_turn_start_to_the_upgrade(data: dict[str, Any]) -> None:
    """SESSION-LEGACY-UPGRADE.1: the load gate upgrades (or refuses) it, so no fast run may take it as it stands."""
    record = {"type": "turn/start", "seq": 0, "time": 1, "data": data}
    assert survey.survey([record], PLAIN, True) == []


@pytest.mark.parametrize("dots", [0, 1, 63, 64, 65, 200])
def test_parse_block_finds_negative_zero_after_any_number_of_dots(dots: int) -> None:
    """`_negative_zero` looks at the first 64 dots one by one, then searches the rest: a -0.0 after more than 64
    dots (other floats before it) must still send the block to the lossless reader, which refuses it (TEXT.5).
    (Mutant, seed 20261205's text sample: the search after the 64th dot returning None.)"""
    floats = [{"x": 0.5}] * dots
    lines = [orjson.dumps(record) for record in (*floats, {"z": -0.0})]
    assert fasttext.parse_block(b"\n".join(lines)) is None
    assert fasttext.parse_block(b"\n".join([*lines[:-1], b'{"z":0.0}'])) == [*floats, {"z": 0.0}]
