"""The machine's rules about whole logs: crash repair, fork and the storage round trip (spec/07, spec/08).

A mixin of `sessionspec.testing.machine.SessionMachine`: each rule takes the log the machine has
built so far (agent loops stopped anywhere leave open turns, open steps and pending calls in it)
and checks what repair, fork and every storage backend make of it, against the model.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import event
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, precondition, rule

from sessionspec import storage
from sessionspec.catalog import DEFAULT_CATALOG, TOOL_RESULT
from sessionspec.envelope import APPEND
from sessionspec.errors import SpecViolation
from sessionspec.fork import OPEN_TURN, ForkError, fork, open_turn_at
from sessionspec.repair import closers, repaired
from sessionspec.testing import loops

PERSIST_PER_EXAMPLE = 2
"""Saves and loads per example: the storage round trip is the machine's dearest rule."""
PERSIST_MAX_EVENTS = 40
BACKENDS = ("log.jsonl", "log.jsonl.zstd", "log.sqlite")


def where(state: loops.LoopState) -> str:
    """Where a cut leaves the agent loop: what repair must close there."""
    if state.open_turn is None:
        return "between turns"
    if state.open_step is None:
        return "inside a turn"
    if state.pending:
        return "with a call recorded"
    return "with a call unrecorded" if state.unrecorded else "inside a step"


def _cuts_inside(states: list[loops.LoopState]) -> list[list[int]]:
    """The cuts (prefix lengths) that leave a turn open, by what repair must close."""
    found: dict[str, list[int]] = {"with a call recorded": [], "with a call unrecorded": [], "inside a step": [],
                                   "inside a turn": []}
    for state in states:
        if state.open_turn is not None:
            found[where(state)].append(state.seq)
    return list(found.values())


def call_id(event_json: dict[str, Any]) -> Any:
    """The call a tool/result answers (message.source.callId), as repair reads it."""
    data = event_json.get("data")
    message = data.get("message") if isinstance(data, dict) else None
    source = message.get("source") if isinstance(message, dict) else None
    return source.get("callId") if isinstance(source, dict) else None


def closers_fit(added: list[Any], state: loops.LoopState) -> None:
    """The closers answer what the loop state at the cut has open.

    SESSION-CRASH-REPAIR.1/.4: closers exactly when a turn is open, the last an interrupted
    turn/end; .2/.3: each call recorded and unanswered gets TOOL_OUTCOME_UNKNOWN citing its
    tool/call, each call never recorded TOOL_NOT_STARTED citing nothing.
    """
    assert bool(added) == (state.open_turn is not None), f"SESSION-CRASH-REPAIR.1/.4: {len(added)} closers at {state}"
    if not added:
        return
    assert added[-1].type == "turn/end" and added[-1].data["reason"]["kind"] == "interrupted", "SESSION-CRASH-REPAIR.4"
    results = {call_id(c.to_json()): c for c in added if c.type == TOOL_RESULT}
    for call, seq in state.recorded_at:
        closer = results.get(call)
        assert closer is not None and closer.data["error"]["code"] == "TOOL_OUTCOME_UNKNOWN", f"SESSION-CRASH-REPAIR.2: {call}"
        assert list(closer.source_event_seqs or []) == [seq], f"SESSION-CRASH-REPAIR.3: {call} cites {closer.source_event_seqs}"
    for call in state.unrecorded:
        closer = results.get(call)
        assert closer is not None and closer.data["error"]["code"] == "TOOL_NOT_STARTED", f"SESSION-CRASH-REPAIR.2: {call}"
        assert closer.source_event_seqs is None, f"SESSION-CRASH-REPAIR.3: {call} never started, but cites a seq"


def _count_closers(added: list[Any]) -> None:
    """Make visible (`--hypothesis-show-statistics`) what the repair rule saw: how many closers, of which kind."""
    event(f"repair: {min(len(added), 4)}{'+' if len(added) >= 4 else ''} closers")
    for closer in added:
        if closer.type == TOOL_RESULT:
            event(f"repair: closer result {closer.data['error']['code']}")
        elif closer.type == "step/end":
            event("repair: closes an open step")


def _events_json(events: Any) -> list[dict[str, Any]]:
    return [e.to_json() for e in events]


class LogRules(RuleBasedStateMachine):
    """Repair, fork and storage rules over the machine's log; the machine supplies `events`, `nodes`, both sides."""

    events: list[dict[str, Any]]
    nodes: list[int]
    model: Any
    sut: Any
    clock: Callable[[], int]
    """The machine's one clock, read by both sides."""
    create: Callable[..., None]
    """The machine's `create(seed, header=None)`, on both sides, followed by a compared snapshot."""

    def __init__(self) -> None:
        super().__init__()
        self.persisted = 0

    @precondition(lambda self: bool(self.events))
    @rule(data=st.data())
    def repair_cut_log_is_balanced_and_only_appends(self, data: st.DataObject) -> None:
        """SESSION-CRASH-REPAIR: a log cut anywhere repairs to a balanced log that seeds; closers only append.

        Most cuts leave a turn open (where repair has closers to add): as many land on a recorded
        call with no result, a call never recorded, an open step and an open turn as anywhere.
        """
        states = list(loops.states_along(self.events))
        cuts = [st.integers(1, len(self.events)), *(st.sampled_from(c) for c in _cuts_inside(states) if c)]
        cut = data.draw(st.one_of(cuts), label="cut")
        prefix = self.events[:cut]
        added = closers(prefix)
        _count_closers(added)
        closers_fit(added, states[cut - 1])
        whole = _events_json(repaired(prefix))
        assert whole[:cut] == prefix, "repair changed the events it was given"
        assert closers(whole) == [], "SESSION-CRASH-REPAIR.7: the repaired log still has closers"
        answered = {call_id(e) for e in prefix if e["type"] == TOOL_RESULT}
        for offset, closer in enumerate(added):
            assert closer.seq == cut + offset, f"SESSION-CRASH-REPAIR.5: closer at seq {closer.seq}, not {cut + offset}"
            assert closer.surface_op in (None, APPEND), f"SESSION-CRASH-REPAIR.5: closer {closer.seq} shadows"
            if closer.type == TOOL_RESULT:
                call = call_id(closer.to_json())
                assert call not in answered, f"SESSION-CRASH-REPAIR.6: call {call!r} answered twice"
        self.create(prefix)
        before = [n for n in self.nodes if n < cut]
        self.create(whole)
        appended = [c.seq for c in added if c.surface_op == APPEND]
        assert self.nodes == before + appended, f"repair moved the surface: {before} + {appended} != {self.nodes}"

    @precondition(lambda self: bool(self.events))
    @rule(data=st.data())
    def fork_at_a_closed_boundary_equals_a_prefix_seed(self, data: st.DataObject) -> None:
        """SESSION-FORK.3/.4: a fork inside an open turn is refused by both; elsewhere it is the prefix's replay."""
        log = self.sut.session.events
        open_at = [k for k in range(len(log)) if open_turn_at(log, k)[0]]
        closed_at = [k for k in range(len(log)) if k not in set(open_at)]
        event("fork: a boundary inside an open turn" if open_at else "fork: no boundary inside an open turn")
        if open_at:
            k = data.draw(st.sampled_from(open_at), label="open boundary")
            for side in (self.model, self.sut):
                try:
                    fork(side.session, k, factory=side.factory, clock=self.clock)
                except ForkError as error:
                    assert error.code == OPEN_TURN and error.rule == "SESSION-FORK.3", error.to_json()
                else:
                    raise AssertionError(f"a fork at {k}, inside an open turn, was accepted")
        if not closed_at:
            return
        k = data.draw(st.sampled_from(closed_at), label="boundary")
        child = fork(self.sut.session, k, factory=self.sut.factory, clock=self.clock)
        seeded = self.model.factory("prefix", self.events[: k + 1], clock=self.clock)
        assert child.header["seedLength"] == k + 1 and child.header["parentSession"] == self.sut.session.id
        assert _events_json(child.events) == _events_json(seeded.events), "fork has other events"
        assert list(child.surface.nodes) == list(seeded.surface.nodes), "fork has another surface"
        assert child.surface.replace_generation == seeded.surface.replace_generation, "fork counts other replaces"
        assert list(child.derive_messages()) == list(seeded.derive_messages()), "fork derives other messages"

    @precondition(lambda self: self.persisted < PERSIST_PER_EXAMPLE and 0 < len(self.events) <= PERSIST_MAX_EVENTS)
    @rule(backend=st.sampled_from(BACKENDS))
    def stored_log_loads_to_the_same_session(self, backend: str) -> None:
        """spec/07: save then load (any backend) gives the log back; JSONL -> SQLite -> JSONL too."""
        self.persisted += 1
        session = self.sut.session
        with tempfile.TemporaryDirectory(prefix="sessionspec-machine-") as tmp:
            path = Path(tmp) / backend
            storage.save(path, session.header, session.events)
            try:
                loaded = storage.load(path)
            except SpecViolation as refusal:
                unknown = [e["type"] for e in self.events if not DEFAULT_CATALOG.knows(e["type"])]
                assert refusal.rule == "SESSION-UNKNOWN-EVENT-GATE.1" and unknown, f"{backend}: load refused {refusal}"
                return
            assert _events_json(loaded.events) == self.events, f"{backend} gave back other events"
            here = self.sut.factory("here", session.events, clock=self.clock)
            there = self.sut.factory("there", loaded.events, clock=self.clock)
            assert _events_json(there.events) == _events_json(here.events), f"{backend}: seeded logs differ"
            assert list(there.surface.nodes) == list(here.surface.nodes), f"{backend}: surfaces differ"
            assert list(there.derive_messages()) == list(here.derive_messages()), f"{backend}: messages differ"
            if backend != "log.jsonl":
                return
            storage.save(Path(tmp) / "log.sqlite", loaded.header, loaded.events)
            via = storage.load(Path(tmp) / "log.sqlite")
            storage.save(Path(tmp) / "back.jsonl", via.header, via.events)
            back = storage.load(Path(tmp) / "back.jsonl")
            assert _events_json(back.events) == self.events, "JSONL -> SQLite -> JSONL changed the events"
