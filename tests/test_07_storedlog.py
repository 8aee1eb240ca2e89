"""The load gate's fast form (storage/storedlog.py) and the events it keeps as stored (storage/storedevents.py).

`storage.load` of a JSONL log is read first as `sessionspec check` reads it, keeping the file's
blocks and building no event; `events[i]` is built when read. These tests hold it to the gate
itself (`load_from` over the same file, which seeds the store with every event): the same
result where it loads, the gate's own refusal (rule, message, line, seq) where the gate refuses,
on a log holding every stored shape and broken once or more by the checker's mutations; and they
hold the sequence to the list it replaces: equal to it both ways, immutable, sliced, indexed,
reversed, copied, and a seed as that list is.
"""

from __future__ import annotations

import copy
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from nearmisses import outcome
from sessionspec import live, model, storage
from sessionspec.catalog import DEFAULT_CATALOG
from sessionspec.conformance.storagevectors import faults
from sessionspec.envelope import Event
from sessionspec.errors import SpecViolation
from sessionspec.jsonvalue import FrozenList
from sessionspec.storage import jsonlread, storedlog
from sessionspec.storage.storedevents import StoredEvents
from test_logcheck_checker import apply_stored, stored_log, stored_mutations

HEAD = b'{"type":"session","version":0,"id":"demo","createdAt":1,"delegationDepth":0}\n'


def write(path: Path, records: list[Any], lines: list[bytes] | None = None, tail: bytes = b"") -> Path:
    lines = lines if lines is not None else [orjson.dumps(record) for record in records]
    path.write_bytes(HEAD + b"\n".join(lines) + (b"\n" if lines else b"") + tail)
    return path


@pytest.fixture
def folder() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as tmp:
        yield Path(tmp)


def gate(path: Path) -> storage.LoadResult:
    """The gate itself: every record parsed, the store seeded with all of them."""
    return storage.load_from(storage.open_reader(path), str(path), catalog=DEFAULT_CATALOG, create=None)


def seen(call: Any) -> Any:
    """A load's outcome: its parts (events as a plain list), or the refusal's rule, message, line and seq."""
    try:
        result = call()
    except SpecViolation as violation:
        return ("refused", violation.rule, violation.kind, violation.message, violation.line, violation.seq)
    return (result.path, result.format, result.header, list(result.events), list(result.closers), result.torn,
            result.upgrades, result.recovered, result.revision)


def test_a_clean_log_loads_as_stored_events_equal_to_the_gates(folder: Path) -> None:
    path = write(folder / "log.jsonl", stored_log())
    loaded, reference = storage.load(path), gate(path)
    assert type(loaded.events) is StoredEvents and type(reference.events) is FrozenList
    assert seen(lambda: loaded) == seen(lambda: reference)
    assert loaded == reference and loaded.events == reference.events and reference.events == loaded.events
    assert outcome(lambda: list(loaded.events)) == outcome(lambda: list(reference.events))  # frozen values alike


def test_no_event_is_built_by_the_load_but_those_no_run_takes(folder: Path) -> None:
    """The log's one request/header goes through the reference's functions; the 28 others are vouched for as text."""
    path = write(folder / "log.jsonl", stored_log())
    with mock.patch.object(storedlog, "stored_event", wraps=storedlog.stored_event) as built:
        loaded = storage.load(path)
    assert built.call_count == 1 and len(loaded.events) == 29


def test_the_events_are_an_immutable_sequence_equal_to_the_list(folder: Path) -> None:
    path = write(folder / "log.jsonl", stored_log())
    events, reference = storage.load(path).events, gate(path).events
    assert len(events) == 29 and list(events) == list(reference) and list(reversed(events)) == list(reversed(reference))
    assert events[0] == reference[0] and events[-1] == reference[-1] and events[17] == reference[17]
    assert events[3:9] == reference[3:9] and events[::2] == reference[::2] and events[-3:] == reference[-3:]
    assert events[5:2] == [] and len(events[27:100]) == 2 and events[4:8][1:3] == reference[5:7]
    assert reference[12] in events and events.index(reference[12]) == 12 and events.count(reference[12]) == 1
    assert events != reference[:-1] and events != [*reference[:-1], reference[0]] and events != "x"
    with pytest.raises(IndexError):
        events[29]
    with pytest.raises(IndexError):
        events[-30]
    for change in (lambda: events.append(reference[0]), lambda: events.__setitem__(0, reference[0]),
                   lambda: events.__delitem__(0), lambda: events.sort(), lambda: setattr(events, "_stop", 3)):
        with pytest.raises(TypeError, match="immutable"):
            change()
    with pytest.raises(TypeError):
        events[1].data["id"] = "changed"  # the event built when read is frozen (decision 5)
    assert copy.copy(events) is events and copy.deepcopy(events) is events
    with pytest.raises(TypeError):
        hash(events)


def test_a_loaded_log_seeds_a_session_as_the_list_does(folder: Path) -> None:
    path = write(folder / "log.jsonl", stored_log())
    loaded = storage.load(path)
    for create in (live.Session.create, model.Session.create):
        seeded = create("demo", seed=loaded.events, clock=lambda: 5)
        assert seeded.events == create("demo", seed=list(gate(path).events), clock=lambda: 5).events
    assert loaded.resume(clock=lambda: 5).events == gate(path).resume(clock=lambda: 5).events


@pytest.mark.parametrize("tail", [b'{"type":"turn/st', b""])
def test_a_torn_or_open_tail_is_the_gates(folder: Path, tail: bytes) -> None:
    """An open turn gets closers, a torn tail is cut: the fast form leaves both to the gate."""
    path = write(folder / "log.jsonl", stored_log()[:-1], tail=tail)
    loaded = storage.load(path)
    assert storedlog.needs_repair_likely(path)  # seen at the file's end: the fast form does not read the log at all
    with mock.patch.object(storedlog, "needs_repair_likely", lambda path: False):
        assert storedlog.load_jsonl(str(path), None, DEFAULT_CATALOG) is None  # and had it read it, it leaves it
    assert seen(lambda: loaded) == seen(lambda: gate(path)) and loaded.needs_repair


def test_a_hint_of_an_open_tail_is_only_a_hint(folder: Path) -> None:
    """A clean log whose last line names a turn/start in its data is loaded by the fast form all the same; the
    hint only decides whether it tries."""
    records = stored_log()
    records[-1]["data"]["note"] = '"turn/start"'
    path = write(folder / "log.jsonl", records)
    assert not storedlog.needs_repair_likely(path)
    assert type(storage.load(path).events) is StoredEvents and seen(lambda: storage.load(path)) == seen(lambda: gate(path))


def test_a_refused_log_is_refused_by_the_gate_itself(folder: Path) -> None:
    records = stored_log()
    records[12]["seq"] = 40  # a seq gap before the turn/end: corruption (SESSION-TORN-TAIL.2)
    path = write(folder / "log.jsonl", records)
    assert seen(lambda: storage.load(path)) == seen(lambda: gate(path))
    assert seen(lambda: storage.load(path))[0] == "refused"


def test_a_replace_with_a_fourth_key_is_refused_by_the_load_itself(folder: Path) -> None:
    """SESSION-SURFACE-PROJECTION.4: a replace's surfaceOp is exactly op, start and end. The fast form vouches for
    the replace that lands (its events kept as stored), and not for one with a fourth key: else `load` returns and
    the refusal comes only when the event is read, without its line (conform compares rule and kind, so only this
    test tells the two apart)."""
    def replacing(name: str, **extra: int) -> Path:
        op = {"op": "replace", "start": 7, "end": 9, **extra}
        return faults.edited(folder / name, seq=13, edit=faults.changed(surfaceOp=op, sourceEventSeqs=[7, 9]))

    assert type(storage.load(replacing("landed.jsonl")).events) is StoredEvents
    path = replacing("extra.jsonl", extra=1)
    refusal = seen(lambda: storage.load(path))
    assert refusal == seen(lambda: gate(path))
    assert refusal[:3] == ("refused", "SESSION-SURFACE-PROJECTION.4", "surface-op") and refusal[4:] == (12, 13)


def test_another_implementations_seeding_reads_every_event_as_before(folder: Path) -> None:
    path = write(folder / "log.jsonl", stored_log())
    assert type(storage.load(path, create=model.Session.create).events) is FrozenList


@settings(max_examples=200, deadline=None)
@given(st.lists(stored_mutations(), max_size=3), st.sampled_from([32 << 10, 300, 64]), st.sampled_from([b"", b"{", b"\n"]),
       st.booleans())
def test_the_load_is_the_gates_on_logs_broken_any_way(changes: list[tuple[int, str, str, Any]], block: int, tail: bytes,
                                                       open_tail: bool) -> None:
    """Every condition the checker's fast path puts on a record, broken (the checker's mutations), in blocks of any
    size: `load` gives what the gate gives, event for event, or the gate's refusal."""
    records = stored_log()
    lines = [orjson.dumps(record) for record in records]
    for change in changes:
        apply_stored(records, lines, change)
    with tempfile.TemporaryDirectory() as tmp, mock.patch.object(jsonlread, "BLOCK", block):
        path = write(Path(tmp) / "log.jsonl", records, lines[:-1] if open_tail else lines, tail)
        assert seen(lambda: storage.load(path)) == seen(lambda: gate(path))


def test_an_event_read_is_the_event_the_gate_built(folder: Path) -> None:
    path = write(folder / "log.jsonl", stored_log())
    for event, expected in zip(storage.load(path).events, gate(path).events, strict=True):
        assert type(event) is Event and outcome(lambda e=event: e) == outcome(lambda x=expected: x)
