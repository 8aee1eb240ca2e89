"""spec/01-json.md: lossless JSON (snapshot, thaw, json_equal) and immutability of accepted values."""

from __future__ import annotations

import copy
import datetime
import math
import pickle
from collections import OrderedDict, UserDict, defaultdict
from decimal import Decimal
from fractions import Fraction
from typing import Any

import pytest
from sessionspec.envelope import Event
from sessionspec.errors import Kind, SpecViolation
from sessionspec.jsonvalue import MAX_SAFE_INTEGER, FrozenDict, FrozenList, is_json, json_equal, snapshot, thaw
from sessionspec.rules import RULES
from sessionspec.testing.builders import envelope, replace_op, user_message
from sessionspec.testing.implementations import SessionFactory
from support import rejects


def rejected(value: object, rule: str, *, deep: bool = False) -> SpecViolation:
    """`value` is rejected with `rule`, of kind json, and the input is left as it was."""
    before = "deep" if deep else repr(value)
    with pytest.raises(SpecViolation) as info:
        snapshot(value)
    assert info.value.rule == rule, info.value
    assert info.value.kind is Kind.JSON and RULES[rule].kind is Kind.JSON
    if not deep:
        assert not is_json(value)
    assert ("deep" if deep else repr(value)) == before
    return info.value


class MyDict(dict[str, Any]):
    pass


class MyList(list[Any]):
    pass


class MyStr(str):
    pass


class MyInt(int):
    pass


class MyFloat(float):
    pass


class WithJsonHook:
    def __json__(self) -> object:
        return {"a": 1}


class WithToJson:
    def to_json(self) -> object:
        return {"a": 1}

    def toJSON(self) -> object:
        return {"a": 1}


NOT_JSON = [
    pytest.param((1, 2), id="tuple"),
    pytest.param({1, 2}, id="set"),
    pytest.param(frozenset({1}), id="frozenset"),
    pytest.param(b"ab", id="bytes"),
    pytest.param(bytearray(b"ab"), id="bytearray"),
    pytest.param(memoryview(b"ab"), id="memoryview"),
    pytest.param(Decimal("1.5"), id="Decimal"),
    pytest.param(Fraction(1, 2), id="Fraction"),
    pytest.param(1j, id="complex"),
    pytest.param(datetime.datetime(2024, 1, 1), id="datetime"),
    pytest.param(datetime.date(2024, 1, 1), id="date"),
    pytest.param(MyDict(a=1), id="dict-subclass"),
    pytest.param(OrderedDict(a=1), id="OrderedDict"),
    pytest.param(defaultdict(list), id="defaultdict"),
    pytest.param(UserDict(a=1), id="UserDict"),
    pytest.param(MyList([1]), id="list-subclass"),
    pytest.param(MyStr("a"), id="str-subclass"),
    pytest.param(MyInt(1), id="int-subclass"),
    pytest.param(MyFloat(1.0), id="float-subclass"),
    pytest.param(WithJsonHook(), id="__json__-hook"),
    pytest.param(WithToJson(), id="to_json-hook"),
    pytest.param(object(), id="object"),
    pytest.param(len, id="function"),
    pytest.param(lambda: 1, id="lambda"),
    pytest.param(int, id="class"),
    pytest.param(Ellipsis, id="Ellipsis"),
    pytest.param(iter([1]), id="iterator"),
    pytest.param(range(3), id="range"),
]


@pytest.mark.parametrize("value", NOT_JSON)
def test_non_json_types_are_rejected_at_top_level_and_nested(value: object) -> None:
    rejected(value, "SESSION-LOSSLESS-JSON.1")
    error = rejected({"a": [0, {"b": value}]}, "SESSION-LOSSLESS-JSON.1")
    assert "$.a[1].b" in error.message
    rejected([value], "SESSION-LOSSLESS-JSON.1")


def test_hooks_are_never_called_nor_converted() -> None:
    calls: list[str] = []

    class Hook:
        def __json__(self) -> object:
            calls.append("json")
            return 1

        def to_json(self) -> object:
            calls.append("to_json")
            return 1

    rejected({"x": Hook()}, "SESSION-LOSSLESS-JSON.1")
    assert calls == []


@pytest.mark.parametrize("value", [MAX_SAFE_INTEGER, -MAX_SAFE_INTEGER, 0, 1, -1])
def test_safe_integers_are_kept(value: int) -> None:
    out = snapshot({"n": value})
    assert type(out["n"]) is int and out["n"] == value


@pytest.mark.parametrize("value", [2**53, -(2**53), 2**60, 10**400, -(10**400)])
def test_unsafe_integers_are_rejected(value: int) -> None:
    rejected(value, "SESSION-LOSSLESS-JSON.2")
    rejected({"deep": [[value]]}, "SESSION-LOSSLESS-JSON.2")


def test_bool_is_not_a_number_and_stays_a_bool() -> None:
    out = snapshot([True, False, 1, 0])
    assert [type(v) for v in out] == [bool, bool, int, int]
    assert not json_equal(True, 1) and not json_equal(False, 0) and not json_equal([True], [1])
    assert not json_equal({"a": 1}, {"a": True})
    assert json_equal(1, 1.0)


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, float("nan")])
def test_non_finite_floats_are_rejected(value: float) -> None:
    rejected(value, "SESSION-LOSSLESS-JSON.3")
    rejected({"a": [1, {"b": value}]}, "SESSION-LOSSLESS-JSON.3")


@pytest.mark.parametrize("value", [1.5, 1e308, -1e-308, 0.0, 5e-324])
def test_finite_floats_are_kept(value: float) -> None:
    out = snapshot([value])
    assert type(out[0]) is float and out[0] == value


def test_negative_zero_is_rejected_at_any_depth() -> None:
    rejected(-0.0, "SESSION-LOSSLESS-JSON.4")
    error = rejected({"a": [[-0.0]]}, "SESSION-LOSSLESS-JSON.4")
    assert "$.a[0][0]" in error.message
    rejected([1, [2, [3, {"z": -0.0}]]], "SESSION-LOSSLESS-JSON.4")
    assert snapshot([0.0, 0]) == [0.0, 0]
    assert math.copysign(1.0, snapshot([0.0])[0]) > 0


@pytest.mark.parametrize("key", [1, None, True, 1.5, ("a",), b"a", MyStr("a")])
def test_non_string_keys_are_rejected(key: Any) -> None:
    rejected({key: 1}, "SESSION-LOSSLESS-JSON.5")
    rejected({"outer": {key: 1}}, "SESSION-LOSSLESS-JSON.5")


def test_cycles_are_rejected() -> None:
    loop: list[Any] = []
    loop.append(loop)
    rejected(loop, "SESSION-LOSSLESS-JSON.6")
    obj: dict[str, Any] = {}
    obj["self"] = {"back": obj}
    rejected(obj, "SESSION-LOSSLESS-JSON.6")
    deep: dict[str, Any] = {"a": [{}]}
    deep["a"][0]["b"] = deep["a"]
    rejected(deep, "SESSION-LOSSLESS-JSON.6")


def test_shared_aliases_become_independent_copies() -> None:
    shared = {"k": [1, 2]}
    value = {"x": shared, "y": [shared, shared]}
    out = snapshot(value, frozen=False)
    assert out == value
    assert out["x"] is not out["y"][0] and out["y"][0] is not out["y"][1]
    out["x"]["k"].append(3)
    assert out["y"][0]["k"] == [1, 2] and shared["k"] == [1, 2]


def test_depth_100000_in_snapshot_thaw_and_json_equal() -> None:
    """SESSION-LOSSLESS-JSON.7: no recursion limit anywhere in the JSON domain."""
    depth = 100_000
    value: Any = "leaf"
    for _ in range(depth):
        value = [value]
    nested_dict: Any = 0
    for _ in range(depth):
        nested_dict = {"a": nested_dict}
    frozen = snapshot(value)
    plain = thaw(frozen)
    assert json_equal(value, frozen) and json_equal(plain, value)
    assert json_equal(snapshot(nested_dict), nested_dict)
    node = plain
    for _ in range(depth):
        assert type(node) is list
        node = node[0]
    assert node == "leaf"
    # A bad leaf at the bottom is still found and reported.
    bad: Any = -0.0
    for _ in range(depth):
        bad = [bad]
    rejected(bad, "SESSION-LOSSLESS-JSON.4", deep=True)


@pytest.mark.parametrize("text", ["\ud800", "a\udfffb", "\udc00\ud800", "", "é🙂\x00"])
def test_strings_are_kept_exactly_including_lone_surrogates(text: str) -> None:
    out = snapshot({text: [text]})
    assert list(out) == [text] and out[text][0] == text


def test_accepted_shapes_are_kept_exactly() -> None:
    value = {"n": None, "t": True, "f": False, "i": -7, "x": 2.5, "s": "s", "l": [1, [2, {}]], "d": {"e": []}}
    out = snapshot(value)
    assert out == value and thaw(out) == value
    assert list(out) == list(value)  # key order is kept even though equality ignores it
    assert type(out) is FrozenDict and type(out["l"]) is FrozenList and type(out["l"][1][1]) is FrozenDict
    assert snapshot(None) is None and snapshot("a") == "a" and snapshot(3) == 3


def test_json_equal_ignores_key_order_but_not_array_order() -> None:
    assert json_equal({"a": 1, "b": 2}, {"b": 2, "a": 1})
    assert not json_equal([1, 2], [2, 1])
    assert not json_equal({"a": 1}, {"a": 1, "b": 2})
    assert not json_equal([], {}) and not json_equal(None, False) and not json_equal("1", 1)


# --- immutability ------------------------------------------------------------------------------


def _mutations_of_dict(d: Any) -> list[Any]:
    return [
        lambda: d.__setitem__("k", 1),
        lambda: d.__delitem__(next(iter(d))),
        lambda: d.update(k=1),
        lambda: d.setdefault("k", 1),
        lambda: d.pop(next(iter(d))),
        lambda: d.popitem(),
        lambda: d.clear(),
        lambda: d.__ior__({"k": 1}),
        lambda: setattr(d, "__class__", MyDict),
        lambda: setattr(d, "x", 1),
    ]


def _mutations_of_list(items: Any) -> list[Any]:
    return [
        lambda: items.__setitem__(0, 1),
        lambda: items.__setitem__(slice(0, 1), [9]),
        lambda: items.__delitem__(0),
        lambda: items.append(1),
        lambda: items.extend([1]),
        lambda: items.insert(0, 1),
        lambda: items.pop(),
        lambda: items.remove(items[0]),
        lambda: items.clear(),
        lambda: items.sort(),
        lambda: items.reverse(),
        lambda: items.__iadd__([1]),
        lambda: items.__imul__(2),
        lambda: setattr(items, "__class__", MyList),
    ]


def assert_frozen_dict(d: Any) -> None:
    before = thaw(d)
    for mutate in _mutations_of_dict(d):
        with pytest.raises(TypeError):
            mutate()
    d.__init__(k=1)  # filled once, in __new__: a second __init__ changes nothing
    assert d == before


def assert_frozen_list(items: Any) -> None:
    before = thaw(items) if all(not hasattr(i, "seq") for i in items) else list(items)
    for mutate in _mutations_of_list(items):
        with pytest.raises(TypeError):
            mutate()
    items.__init__([9])  # filled once, in __new__: a second __init__ changes nothing
    assert items == before


def test_frozen_values_refuse_every_mutation_path() -> None:
    """SESSION-IMMUTABILITY.1 for the value types themselves."""
    frozen = snapshot({"a": [1, {"b": [2, 3]}], "c": {"d": 1}})
    assert_frozen_dict(frozen)
    assert_frozen_dict(frozen["c"])
    assert_frozen_dict(frozen["a"][1])
    assert_frozen_list(frozen["a"])
    assert_frozen_list(frozen["a"][1]["b"])


def test_frozen_values_survive_copy_and_pickle_as_frozen_equal_values() -> None:
    frozen = snapshot({"a": [1, {"b": 2}]})
    assert copy.copy(frozen) is frozen and copy.deepcopy(frozen) is frozen
    back = pickle.loads(pickle.dumps(frozen))
    assert back == frozen and type(back) is FrozenDict
    plain = frozen.copy()
    plain["z"] = 1  # a copy is the caller's own
    assert "z" not in frozen


def test_frozen_equals_plain_and_thaw_gives_plain_types() -> None:
    """SESSION-IMMUTABILITY.2."""
    plain = {"a": [1, {"b": [True, None]}], "c": "x"}
    frozen = snapshot(plain)
    assert frozen == plain and plain == frozen and json_equal(frozen, plain)
    thawed = thaw(frozen)
    assert thawed == plain
    assert type(thawed) is dict and type(thawed["a"]) is list and type(thawed["a"][1]) is dict
    assert type(thawed["a"][1]["b"]) is list
    thawed["a"].append(2)
    assert frozen["a"] == [1, {"b": [True, None]}]
    assert repr(frozen) == repr(plain)


def test_snapshot_unfrozen_gives_plain_types() -> None:
    out = snapshot({"a": [{}]}, frozen=False)
    assert type(out) is dict and type(out["a"]) is list and type(out["a"][0]) is dict


# --- through a session: the write boundary ----------------------------------------------------


CYCLE: list[Any] = []
CYCLE.append(CYCLE)
BAD_LEAVES = [
    pytest.param((1, 2), "SESSION-LOSSLESS-JSON.1", id="tuple"),
    pytest.param(MyDict(a=1), "SESSION-LOSSLESS-JSON.1", id="dict-subclass"),
    pytest.param(2**53, "SESSION-LOSSLESS-JSON.2", id="unsafe-int"),
    pytest.param(-(2**53), "SESSION-LOSSLESS-JSON.2", id="unsafe-negative-int"),
    pytest.param(math.nan, "SESSION-LOSSLESS-JSON.3", id="nan"),
    pytest.param(-math.inf, "SESSION-LOSSLESS-JSON.3", id="-inf"),
    pytest.param(-0.0, "SESSION-LOSSLESS-JSON.4", id="negative-zero"),
    pytest.param({1: "a"}, "SESSION-LOSSLESS-JSON.5", id="int-key"),
    pytest.param(CYCLE, "SESSION-LOSSLESS-JSON.6", id="cycle"),
]


def _deep(leaf: Any, depth: int) -> Any:
    for _ in range(depth):
        leaf = {"a": [leaf]}
    return leaf


@pytest.mark.parametrize(("bad", "rule"), BAD_LEAVES)
def test_a_session_rejects_what_snapshot_rejects_wherever_it_sits(create: SessionFactory, bad: Any, rule: str) -> None:
    """An implementation may copy with its own walk (live does, on its hot path): it must reject the same leaf
    with the same rule as the whole data, nested at any depth, in a message, in the sources, a seed and a header."""
    session = create("s", clock=lambda: 1)
    session.append("user/message", user_message(), surface_op="append")
    message = user_message("u2")
    message["content"][0]["extra"] = bad
    for data in (bad, {"a": bad}, [0, [bad]], {"a": [1, {"b": [bad]}]}, _deep(bad, 100)):
        rejects(session, rule, lambda data=data: session.append("x/note", data))
    rejects(session, rule, lambda: session.append("user/message", message, surface_op="append"))
    rejects(session, rule, lambda: session.append("user/message", user_message("u2"), surface_op="append",
                                                  source_event_seqs=[0, bad]))
    rejects(session, rule, lambda: session.append_request({"type": "x/note", "data": {"a": [bad]}}))
    for seed, header in (([envelope("x/note", 0, {"a": [bad]})], None),
                         (None, {"version": 0, "id": "s", "createdAt": 0, "agentPreset": bad})):
        with pytest.raises(SpecViolation) as info:
            create("s", seed=seed, header=header)
        assert info.value.rule == rule


def test_a_session_logs_a_value_deeper_than_any_recursion_limit(create: SessionFactory) -> None:
    """SESSION-LOSSLESS-JSON.7 through append and a seed: 5,000 levels, five times Python's recursion limit."""
    session = create("s", clock=lambda: 1)
    event = session.append("x/deep", _deep("leaf", 2_500))
    assert json_equal(event.data, _deep("leaf", 2_500))
    replay = create("r", seed=session.events, clock=lambda: 1)
    assert json_equal(replay.events[0].data, event.data)


def test_events_messages_and_returned_lists_are_immutable(create: SessionFactory) -> None:
    """SESSION-IMMUTABILITY.1 and .4 through the Session's public API."""
    session = create("s", clock=lambda: 1)
    event = session.append("user/message", user_message(), surface_op="append")
    session.append("user/message", user_message("u2", "b"), surface_op=replace_op(0, 0),
                   source_event_seqs=[0])
    for name in ("type", "seq", "time", "data", "surface_op", "source_event_seqs", "ignorable"):
        with pytest.raises(TypeError):
            setattr(event, name, None)
        with pytest.raises(TypeError):
            delattr(event, name)
    replacement = session.events[1]
    with pytest.raises(TypeError):
        replacement.surface_op.start = 5  # type: ignore[union-attr]
    assert_frozen_dict(event.data)
    assert_frozen_dict(event.data["source"])
    assert_frozen_list(event.data["content"])
    assert_frozen_dict(event.data["content"][0])
    assert_frozen_list(replacement.source_event_seqs)
    assert_frozen_list(session.events)
    assert_frozen_list(session.surface.nodes)
    assert_frozen_list(session.transcript())
    messages = session.derive_messages()
    assert_frozen_list(messages)
    assert_frozen_dict(messages[0])
    assert_frozen_list(messages[0]["content"])
    assert_frozen_dict(session.header)
    assert session.events[0].to_json()["data"] == user_message()


def test_returned_sequences_never_change_afterwards(create: SessionFactory) -> None:
    """SESSION-IMMUTABILITY.4."""
    session = create("s", clock=lambda: 1)
    session.append("user/message", user_message(), surface_op="append")
    events, nodes, messages, transcript = (session.events, session.surface.nodes, session.derive_messages(),
                                          session.transcript())
    session.append("user/message", user_message("u2", "b"), surface_op="append")
    session.append("user/message", user_message("u3", "c"), surface_op=replace_op(0, 1),
                   source_event_seqs=[0, 1])
    assert len(events) == 1 and list(nodes) == [0] and len(messages) == 1 and len(transcript) == 1
    assert list(session.surface.nodes) == [2]


def test_caller_mutation_after_append_changes_nothing(create: SessionFactory) -> None:
    """SESSION-IMMUTABILITY.3: data, nested values, the source list and the replace object are copied."""
    session = create("s", clock=lambda: 1)
    session.append("user/message", user_message(), surface_op="append")
    data = user_message("u2", "b")
    op = replace_op(0, 0)
    sources = [0]
    event = session.append("user/message", data, surface_op=op, source_event_seqs=sources)
    expected = [e.to_json() for e in session.events]
    data["content"][0]["text"] = "changed"
    data["id"] = "other"
    op["end"] = 99
    sources.append(1)
    assert [e.to_json() for e in session.events] == expected
    assert event.data["content"][0]["text"] == "b" and list(event.source_event_seqs or []) == [0]
    assert list(session.surface.nodes) == [1]


def test_caller_mutation_after_seeding_changes_nothing(create: SessionFactory) -> None:
    """SESSION-IMMUTABILITY.3 for seeds and headers."""
    seed = [envelope("user/message", 0, user_message(), surfaceOp="append")]
    header = {"version": 0, "id": "s", "createdAt": 5, "cwd": "/w"}
    session = create("s", seed=seed, header=header, clock=lambda: 1)
    expected = [e.to_json() for e in session.events]
    seed[0]["data"]["content"].append({"type": "text", "text": "late"})
    seed[0]["surfaceOp"] = replace_op(0, 0)
    seed.append(seed[0])
    header["cwd"] = "/elsewhere"
    assert [e.to_json() for e in session.events] == expected
    assert session.header["cwd"] == "/w"


def test_a_caller_built_frozen_header_is_copied(create: SessionFactory) -> None:
    header = FrozenDict({"version": 0, "id": "s", "createdAt": 0, "agentPreset": "p"})
    session = create("s", header=header)
    assert session.header == header and type(session.header) is FrozenDict
    assert_frozen_dict(session.header)


def test_two_events_with_deep_equal_data_compare_without_recursion() -> None:
    """SESSION-LOSSLESS-JSON.7: `Event ==` compared `data` with Python's recursive `==` before `json_equal` (found over the wire)."""
    left, right = (Event("x/deep", 0, 0, snapshot(_deep("leaf", 5_000))) for _ in range(2))
    assert left == right and left is not right
