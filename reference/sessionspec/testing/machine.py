"""The stateful machine: the reference model and a system under test, driven step by step.

In the style of Hypothesis's model-versus-real example. Every rule builds one operation (a trace
op in the protocol's request shape), runs it on the model and on the system under test with one
shared fake clock, and requires the same answer: the same event, or a rejection with the same rule
and kind that left both sessions exactly as they were. After every step the invariants compare
the two sessions and hold the system under test to what a fresh session seeded from its own log
says. A failing run prints Hypothesis's program and writes the op trace (`sessionspec replay`).
Besides the random operations, an agent works in the log (`agent_works`: well-formed loops from
sessionspec.testing.loops, stopped anywhere), so crash repair and fork meet open turns, open
steps and pending calls; `--hypothesis-show-statistics` shows how often (`repair: N closers`).

`make_machine(sut_factory)` takes any factory with the signature of `model.Session.create`: the
incremental `live` (the default), a planted-bug variant, or an adapter to an external testee.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import event, note
from hypothesis import strategies as st
from hypothesis.control import current_build_context
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from sessionspec import storage
from sessionspec.catalog import DEFAULT_CATALOG, END_SEED, SURFACE_TYPES, TOOL_RESULT
from sessionspec.envelope import APPEND
from sessionspec.errors import SpecViolation
from sessionspec.fork import OPEN_TURN, ForkError, fork, open_turn_at
from sessionspec.invariants import Companion, replay
from sessionspec.jsonvalue import thaw
from sessionspec.repair import closers, repaired
from sessionspec.requestheader import fold_request_header
from sessionspec.testing import implementations as impls
from sessionspec.testing import loops
from sessionspec.testing import strategies as ss
from sessionspec.testing.trace import MUTATIONS, Answer, Op, Side, attempt_mutation, differences, write_trace

START_TIME = 1_700_000_000_000
PERSIST_PER_EXAMPLE = 2
"""Saves and loads per example: the storage round trip is the machine's dearest rule."""
PERSIST_MAX_EVENTS = 40
BACKENDS = ("log.jsonl", "log.jsonl.zstd", "log.sqlite")


def _view(answer_events: list[dict[str, Any]], nodes: list[int]) -> ss.View:
    return ss.View(tuple(answer_events), tuple(nodes))


def make_machine(
    sut_factory: Callable[..., Any] | None = None,
    *,
    name: str = "live",
    model_factory: Callable[..., Any] | None = None,
    compare_time: bool = True,
) -> type[RuleBasedStateMachine]:
    """A RuleBasedStateMachine class holding `sut_factory`'s sessions to the reference model's.

    `compare_time=False` for a system under test with its own clock (an external testee).
    """
    sut_create = sut_factory if sut_factory is not None else impls.factory("live")
    model_create = model_factory if model_factory is not None else impls.factory("model")

    class SessionMachine(RuleBasedStateMachine):
        """The model and the system under test, one operation at a time."""

        IMPLEMENTATION = name
        last_trace: Any = None
        last_steps: int | None = None

        def __init__(self) -> None:
            super().__init__()
            self.now = START_TIME
            self.model = Side(model_create, self._clock)
            self.sut = Side(sut_create, self._clock)
            self.ops: list[Op] = []
            self.steps = 0
            self.sessions = 0
            self.replaces = 0
            self.derive_each_step = True
            self.held: list[tuple[str, Any, Any]] = []
            self.events: list[dict[str, Any]] = []
            self.nodes: list[int] = []
            self.persisted = 0

        def _clock(self) -> int:
            return self.now

        # --- running one op on both sides -------------------------------------------------------

        def run(self, op: Op) -> tuple[Answer, Answer]:
            """Apply `op` to the model and the system under test; their answers must agree."""
            self.now += 1
            op = {**op, "x-time": self.now}
            self.ops.append(op)
            expected, actual = self.model.run(op), self.sut.run(op)
            diff = differences(expected, actual, compare_time=compare_time)
            assert not diff, f"{op['op']} answered differently by {name}: " + "; ".join(diff)
            self.steps += 1
            return expected, actual

        def look(self) -> Answer:
            """A snapshot of both sides (recorded in the trace); they must agree."""
            expected, _ = self.run({"op": "snapshot"} if self.derive_each_step else {"op": "snapshot", "x-messages": False})
            self.steps -= 1
            self.events = expected["events"]
            self.nodes = expected["surface"]["nodes"]
            return expected

        def view(self) -> ss.View:
            return _view(self.events, self.nodes)

        def append(self, request: ss.Request, **hooks: str) -> tuple[Answer, Answer]:
            before = (self.model.session.seq, self.sut.session.seq)
            expected, actual = self.run({"op": "append", **request, **hooks})
            if not expected["ok"]:
                after = (self.model.session.seq, self.sut.session.seq)
                assert after == before, f"a rejected append changed the log length: {before} -> {after}"
            else:
                op = expected["event"].get("surfaceOp")
                self.replaces += isinstance(op, dict)
            return expected, actual

        def create(self, seed: list[Any] | None, header: Any = None) -> None:
            self.sessions += 1
            session_id = f"s{self.sessions}"
            if header is not None:
                header = {**header, "id": session_id}
            expected, _ = self.run({"op": "create", "id": session_id, "seed": seed, "header": header})
            assert expected["ok"], f"the model refused a seed taken from an accepted log: {expected}"
            self.replaces = sum(isinstance(e.get("surfaceOp"), dict) for e in seed or [])
            self.look()

        # --- rules ------------------------------------------------------------------------------

        @initialize(derive_each_step=st.booleans(), header=st.sampled_from([None, {"version": 0, "createdAt": 1, "cwd": "/w"}]),
                    idle=st.integers(0, 3).map(lambda n: n == 0), data=st.data())
        def start(self, derive_each_step: bool, header: Any, idle: bool, data: st.DataObject) -> None:
            """A fresh session; half of the runs derive only at random points, so the cache sees several steps at once.

            Three runs in four start with an agent at work (see `agent_works`), so most runs have
            turns to cut into even when the rule selection leaves `agent_works` out.
            """
            self.derive_each_step = derive_each_step
            self.create(None, header)
            if not idle:
                self.work(data)

        @rule(data=st.data())
        def append_user_message(self, data: st.DataObject) -> None:
            self.append(data.draw(ss.user_message_requests(self.view()), label="request"))

        @rule(data=st.data())
        def append_assistant_message(self, data: st.DataObject) -> None:
            self.append(data.draw(ss.assistant_message_requests(self.view()), label="request"))

        @rule(data=st.data())
        def append_tool_result(self, data: st.DataObject) -> None:
            self.append(data.draw(ss.tool_result_requests(self.view()), label="request"))

        @rule(request=ss.log_only_requests)
        def append_log_only(self, request: ss.Request) -> None:
            self.append(request)

        @rule(data=st.data())
        def agent_works(self, data: st.DataObject) -> None:
            """A harness at work: the well-formed continuation of the log's agent loop, stopped at any request.

            The loop (sessionspec.testing.loops) first finishes what the log left open (answering the
            step's recorded calls, or recording and answering the rest), then runs a turn. Where it
            stops, a turn, a step or a call may be left open, for the repair and fork rules to cut at.
            """
            self.work(data)

        def work(self, data: st.DataObject) -> None:
            start = loops.state_of(self.events, self.nodes)
            loop = data.draw(loops.agent_loops(max_turns=1, min_turns=1, min_steps=1, max_steps=2, start=start), label="agent loop")
            if not loop.requests:
                return
            stop = data.draw(st.integers(1, len(loop.requests)), label="stop")
            for request in loop.requests[:stop]:
                expected, _ = self.append(request)
                assert expected["ok"], f"the model refused a well-formed agent request: {expected}"
            event(f"agent: stopped {_where(loop.states[stop])}")

        @precondition(lambda self: bool(self.nodes))
        @rule(data=st.data())
        def replace(self, data: st.DataObject) -> None:
            expected, _ = self.append(data.draw(ss.replacements(self.view()), label="replacement"))
            assert expected["ok"], f"the model refused a valid replacement: {expected}"

        @rule(data=st.data())
        def invalid_operation(self, data: st.DataObject) -> None:
            """Both reject with the same rule and kind (checked in `run`), and neither changes."""
            invalid = data.draw(ss.invalid_requests(self.view()), label="invalid")
            expected, _ = self.append(invalid.request)
            assert not expected["ok"], f"the model accepted an operation meant to be invalid ({invalid.why})"
            assert expected["error"]["rule"] == invalid.rule, (
                f"strategy expected {invalid.rule} for {invalid.why}; the model said {expected['error']['rule']}")

        @precondition(lambda self: bool(self.view().tool_result_nodes()))
        @rule(data=st.data())
        def forged_tool_result_rewrite(self, data: st.DataObject) -> None:
            """SESSION-SURFACE-TOOL-RESULT.3: a pruning that changes an id, isError, error, meta or turn is refused by both.

            Its own rule (it is also one of the invalid operations) because a store that compares only
            the call id accepts these, and one draw among all invalid operations finds it too rarely.
            """
            invalid = data.draw(ss.forged_tool_result_rewrites(self.view()), label="forged rewrite")
            expected, _ = self.append(invalid.request)
            assert not expected["ok"] and expected["error"]["rule"] == invalid.rule, (
                f"the model did not refuse a forged rewrite ({invalid.why}): {expected}")

        @precondition(lambda self: bool(self.nodes))
        @rule(data=st.data())
        def incomplete_provenance_is_refused(self, data: st.DataObject) -> None:
            """SESSION-SURFACE-PROVENANCE.6: a replacement whose sources miss a shadowed node is refused by both.

            Its own rule for the same reason as the forged rewrite: a store that skips the coverage
            check differs only on this request, and it is one draw among many invalid operations.
            """
            invalid = data.draw(ss.incomplete_provenance_replacements(self.view()), label="incomplete provenance")
            expected, _ = self.append(invalid.request)
            assert not expected["ok"] and expected["error"]["rule"] == invalid.rule, (
                f"the model did not refuse a replacement ({invalid.why}): {expected}")

        @rule(data=st.data(), mode=st.sampled_from(["raise", "violation", "reentrant"]))
        def vetoed_append(self, data: st.DataObject, mode: str) -> None:
            """A validator that raises (or reenters) vetoes the append: nothing is logged."""
            expected, _ = self.append(data.draw(ss.append_requests(self.view()), label="request"), **{"x-validator": mode})
            assert not expected["ok"] and expected["error"]["kind"] in ("veto", "reentrant"), expected
            if compare_time:
                assert self.model.candidate == self.sut.candidate, "validators saw different candidates"

        @rule(data=st.data(), mode=st.sampled_from(["raise", "reentrant"]))
        def append_with_misbehaving_observer(self, data: st.DataObject, mode: str) -> None:
            """An observer that raises is contained; one that appends is refused as reentrant; the event stays."""
            expected, _ = self.append(data.draw(ss.append_requests(self.view()), label="request"), **{"x-observer": mode})
            assert expected["ok"], expected
            if mode == "reentrant":
                assert expected["x-reentrant"]["error"]["rule"] == "SESSION-APPEND-COMMIT.4"

        @rule(data=st.data())
        def caller_mutates_its_input(self, data: st.DataObject) -> None:
            """SESSION-IMMUTABILITY.3: changing the request's data after append changes nothing logged."""
            expected, _ = self.append(data.draw(ss.append_requests(self.view()), label="request"), **{"x-mutate-input": "data"})
            assert expected["ok"], expected

        @rule(what=st.sampled_from(sorted(MUTATIONS)))
        def mutate_returned_value(self, what: str) -> None:
            """Decision 5: mutating anything returned raises TypeError (checked on both sides)."""
            expected, actual = self.run({"op": "x-mutate", "target": what})
            assert actual["raised"] in ("TypeError", "n/a"), f"{what} on {name} raised {actual['raised']}, not TypeError"
            assert expected["raised"] in ("TypeError", "n/a"), f"{what} on the model raised {expected['raised']}"

        @rule()
        def derive(self) -> None:
            """Derive at a random point: the cache may have several appends, or a replace, to catch up on."""
            self.run({"op": "snapshot"})
            messages = self.sut.session.derive_messages()
            self.held.append(("messages", messages, plain("messages", messages)))
            assert list(messages) == list(self.model.session.derive_messages()), "derived messages differ"

        @rule()
        def reseed_from_current_events(self) -> None:
            """Every accepted log re-seeds; the new session continues from it (marker added unless it ends in one)."""
            self.create(self.events)

        @rule(data=st.data())
        def seed_from_prefix(self, data: st.DataObject) -> None:
            """Every prefix of an accepted log is an accepted seed."""
            cut = data.draw(st.integers(0, len(self.events)), label="cut")
            self.create(self.events[:cut])

        @precondition(lambda self: bool(self.events))
        @rule(data=st.data())
        def repair_cut_log_is_balanced_and_only_appends(self, data: st.DataObject) -> None:
            """SESSION-CRASH-REPAIR: a log cut anywhere repairs to a balanced log that seeds; closers only append.

            Most cuts leave a turn open (where repair has closers to add): as many land on a recorded
            call with no result, a call never recorded, an open step and an open turn as anywhere
            at all; `agent_works` puts such points in the log.
            """
            states = list(loops.states_along(self.events))
            cuts = [st.integers(1, len(self.events)), *(st.sampled_from(c) for c in _cuts_inside(states) if c)]
            cut = data.draw(st.one_of(cuts), label="cut")
            prefix = self.events[:cut]
            added = closers(prefix)
            _repair_events(added)
            _closers_fit(added, states[cut - 1])
            whole = [e.to_json() for e in repaired(prefix)]
            assert whole[:cut] == prefix, "repair changed the events it was given"
            assert closers(whole) == [], "SESSION-CRASH-REPAIR.7: the repaired log still has closers"
            answered = {_call_id(e) for e in prefix if e["type"] == TOOL_RESULT}
            for offset, closer in enumerate(added):
                assert closer.seq == cut + offset, f"SESSION-CRASH-REPAIR.5: closer at seq {closer.seq}, not {cut + offset}"
                assert closer.surface_op in (None, APPEND), f"SESSION-CRASH-REPAIR.5: closer {closer.seq} shadows"
                if closer.type == TOOL_RESULT:
                    call = _call_id(closer.to_json())
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
                        fork(side.session, k, factory=side.factory, clock=self._clock)
                    except ForkError as error:
                        assert error.code == OPEN_TURN and error.rule == "SESSION-FORK.3", error.to_json()
                    else:
                        raise AssertionError(f"a fork at {k}, inside an open turn, was accepted")
            if not closed_at:
                return
            k = data.draw(st.sampled_from(closed_at), label="boundary")
            child = fork(self.sut.session, k, factory=self.sut.factory, clock=self._clock)
            seeded = self.model.factory("prefix", self.events[: k + 1], clock=self._clock)
            assert child.header["seedLength"] == k + 1 and child.header["parentSession"] == self.sut.session.id
            assert [e.to_json() for e in child.events] == [e.to_json() for e in seeded.events], "fork has other events"
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
                    loaded = storage.load(path, impl="live")
                except SpecViolation as refusal:
                    unknown = [e["type"] for e in self.events if not DEFAULT_CATALOG.knows(e["type"])]
                    assert refusal.rule == "SESSION-UNKNOWN-EVENT-GATE.1" and unknown, f"{backend}: load refused {refusal}"
                    return
                assert _events_json(loaded.events) == self.events, f"{backend} gave back other events"
                here = self.sut.factory("here", session.events, clock=self._clock)
                there = self.sut.factory("there", loaded.events, clock=self._clock)
                assert _events_json(there.events) == _events_json(here.events), f"{backend}: seeded logs differ"
                assert list(there.surface.nodes) == list(here.surface.nodes), f"{backend}: surfaces differ"
                assert list(there.derive_messages()) == list(here.derive_messages()), f"{backend}: messages differ"
                if backend != "log.jsonl":
                    return
                storage.save(Path(tmp) / "log.sqlite", loaded.header, loaded.events)
                via = storage.load(Path(tmp) / "log.sqlite", impl="live")
                storage.save(Path(tmp) / "back.jsonl", via.header, via.events)
                back = storage.load(Path(tmp) / "back.jsonl", impl="live")
                assert _events_json(back.events) == self.events, "JSONL -> SQLite -> JSONL changed the events"

        # --- invariants ---------------------------------------------------------------------------

        @invariant()
        def request_header_matches_a_full_fold(self) -> None:
            """SESSION-REQUEST-HEADER-FOLD.3: the header in force is the fold of the whole log, on both sides."""
            header = self.sut.session.request_header()
            assert header == fold_request_header(self.sut.session.events), "request_header() is not the full fold"
            assert header == self.model.session.request_header(), "request headers differ"

        @invariant()
        def events_equal(self) -> None:
            snapshot = self.look()
            assert snapshot is not None
            events = self.sut.session.events
            self.held.append(("events", events, plain("events", events)))
            nodes = self.sut.session.surface.nodes
            self.held.append(("nodes", nodes, plain("nodes", nodes)))
            del self.held[:-12]

        @invariant()
        def surface_nodes_and_replace_generation_equal(self) -> None:
            model_surface, sut_surface = self.model.session.surface, self.sut.session.surface
            assert list(sut_surface.nodes) == list(model_surface.nodes), "surface nodes differ"
            assert sut_surface.replace_generation == model_surface.replace_generation, "replace_generation differs"

        @invariant()
        def derived_messages_equal(self) -> None:
            if self.derive_each_step:
                assert list(self.sut.session.derive_messages()) == list(self.model.session.derive_messages()), "messages differ"

        @invariant()
        def transcripts_equal(self) -> None:
            left = [e.to_json() for e in self.model.session.transcript()]
            right = [e.to_json() for e in self.sut.session.transcript()]
            assert _timeless(left, compare_time) == _timeless(right, compare_time), "transcripts differ"

        @invariant()
        def returned_sequences_never_change(self) -> None:
            for label, returned, copy_then in self.held:
                assert plain(label, returned) == copy_then, f"a returned {label} sequence changed after it was returned"

        @invariant()
        def returned_values_refuse_mutation(self) -> None:
            """Decision 5, after every step and for every kind of returned value: mutation raises TypeError.

            The `mutate_returned_value` rule tries one target at a random point (and records it in
            the trace); this tries them all on the system under test, so a store that hands out one
            mutable kind of value is caught on the first step that has such a value.
            """
            for target in sorted(MUTATIONS):
                raised = attempt_mutation(self.sut.session, target)
                assert raised in ("TypeError", "n/a"), f"{target} on {name} raised {raised}, not TypeError"

        @invariant()
        def seq_is_log_length(self) -> None:
            seq, length = self.sut.session.seq, len(self.sut.session.events)
            assert seq == length, f"seq {seq} but {length} events"

        @invariant()
        def nodes_are_unique_eligible_surface_events(self) -> None:
            assert len(set(self.nodes)) == len(self.nodes), f"repeated nodes {self.nodes}"
            for node in self.nodes:
                event = self.events[node]
                assert event["type"] in SURFACE_TYPES and "surfaceOp" in event, f"node {node} is not a surface event"

        @invariant()
        def off_surface_events_are_explained_by_a_replacement(self) -> None:
            on = set(self.nodes)
            covered = {s for e in self.events if isinstance(e.get("surfaceOp"), dict) for s in e.get("sourceEventSeqs", [])}
            unexplained = [e["seq"] for e in self.events if "surfaceOp" in e and e["seq"] not in on and e["seq"] not in covered]
            assert not unexplained, f"surface events {unexplained} left the surface without a replacement naming them"

        @invariant()
        def replace_generation_counts_accepted_replaces(self) -> None:
            generation = self.sut.session.surface.replace_generation
            assert generation == self.replaces, f"replace_generation {generation}, but {self.replaces} replaces were accepted"

        @invariant()
        def fresh_rebuild_equal(self) -> None:
            """Every accepted log re-seeds, to the same surface and messages (+1 marker, or 0 if it ends in one)."""
            _, actual = self.run({"op": "x-rebuild"})
            self.steps -= 1
            marker = 0 if self.events and self.events[-1]["type"] == END_SEED else 1
            assert actual["seq"] == len(self.events) + marker, (
                f"a fresh rebuild of {len(self.events)} events has {actual['seq']}; expected {len(self.events) + marker}")
            assert actual["surface"]["nodes"] == self.nodes, "a fresh rebuild has another surface"
            assert actual["surface"]["replaceGeneration"] == self.replaces, "a fresh rebuild counts other replaces"

        def teardown(self) -> None:
            """On the final (reported) run of a failure, write the op trace and say where."""
            try:
                final = current_build_context().is_final
            except Exception:
                final = False
            if final:
                path = write_trace(self.ops, implementation=name)
                type(self).last_trace = path
                type(self).last_steps = self.steps
                message = f"sessionspec: {self.steps} steps; op trace written to {path}\n  replay: sessionspec replay {path}"
                note(message)
                print(message)

    SessionMachine.__name__ = SessionMachine.__qualname__ = f"SessionMachine[{name}]"
    return SessionMachine


def _cuts_inside(states: list[loops.LoopState]) -> list[list[int]]:
    """The cuts (prefix lengths) that leave a turn open, by what repair must close: a call recorded
    but unanswered, a call never recorded, an open step, or only the turn."""
    where: dict[str, list[int]] = {"with a call recorded": [], "with a call unrecorded": [], "inside a step": [],
                                   "inside a turn": []}
    for state in states:
        if state.open_turn is not None:
            where[_where(state)].append(state.seq)
    return list(where.values())


def _closers_fit(added: list[Any], state: loops.LoopState) -> None:
    """The closers answer what the loop state at the cut (sessionspec.testing.loops) has open.

    SESSION-CRASH-REPAIR.1/.4: closers exactly when a turn is open, the last an interrupted
    turn/end; .2/.3: each call recorded and unanswered gets TOOL_OUTCOME_UNKNOWN citing its
    tool/call, each call never recorded TOOL_NOT_STARTED citing nothing.
    """
    assert bool(added) == (state.open_turn is not None), f"SESSION-CRASH-REPAIR.1/.4: {len(added)} closers at {state}"
    if not added:
        return
    assert added[-1].type == "turn/end" and added[-1].data["reason"]["kind"] == "interrupted", "SESSION-CRASH-REPAIR.4"
    results = {_call_id(c.to_json()): c for c in added if c.type == TOOL_RESULT}
    for call, seq in state.recorded_at:
        closer = results.get(call)
        assert closer is not None and closer.data["error"]["code"] == "TOOL_OUTCOME_UNKNOWN", f"SESSION-CRASH-REPAIR.2: {call}"
        assert list(closer.source_event_seqs or []) == [seq], f"SESSION-CRASH-REPAIR.3: {call} cites {closer.source_event_seqs}"
    for call in state.unrecorded:
        closer = results.get(call)
        assert closer is not None and closer.data["error"]["code"] == "TOOL_NOT_STARTED", f"SESSION-CRASH-REPAIR.2: {call}"
        assert closer.source_event_seqs is None, f"SESSION-CRASH-REPAIR.3: {call} never started, but cites a seq"


def _where(state: loops.LoopState) -> str:
    if state.open_turn is None:
        return "between turns"
    if state.open_step is None:
        return "inside a turn"
    if state.pending:
        return "with a call recorded"
    return "with a call unrecorded" if state.unrecorded else "inside a step"


def _repair_events(added: list[Any]) -> None:
    """Make visible (`--hypothesis-show-statistics`) what the repair rule saw: how many closers, of which kind."""
    event(f"repair: {min(len(added), 4)}{'+' if len(added) >= 4 else ''} closers")
    for closer in added:
        if closer.type == TOOL_RESULT:
            event(f"repair: closer result {closer.data['error']['code']}")
        elif closer.type == "step/end":
            event("repair: closes an open step")


def _call_id(event: dict[str, Any]) -> Any:
    """The call a tool/result answers (message.source.callId), as repair reads it."""
    data = event.get("data")
    message = data.get("message") if isinstance(data, dict) else None
    source = message.get("source") if isinstance(message, dict) else None
    return source.get("callId") if isinstance(source, dict) else None


def _events_json(events: Any) -> list[dict[str, Any]]:
    return [e.to_json() for e in events]


def _timeless(events: list[dict[str, Any]], compare_time: bool) -> list[dict[str, Any]]:
    return events if compare_time else [{k: v for k, v in e.items() if k != "time"} for e in events]


def plain(label: str, returned: Any) -> Any:
    """A plain copy of a returned sequence, to compare with what it holds later."""
    if label == "events":
        return [e.to_json() for e in returned]
    return thaw(list(returned))


def with_companion(factory: Callable[..., Any]) -> Callable[..., Any]:
    """`factory`, with a fresh sessionspec.invariants.Companion attached to every session it creates."""

    def create(*args: Any, **kwargs: Any) -> Any:
        session = factory(*args, **kwargs)
        Companion().attach(session)
        return session

    return create


def make_companion_machine(sut_factory: Callable[..., Any] | None = None, *, name: str = "live") -> type[RuleBasedStateMachine]:
    """Both sides with the companion attached, driven by well-formed agent loops and relational violations.

    A loop's requests name absolute seqs, so each rule starts a fresh session on both sides.
    """
    sut_create = with_companion(sut_factory if sut_factory is not None else impls.factory("live"))
    model_create = with_companion(impls.factory("model"))

    class CompanionMachine(RuleBasedStateMachine):
        """The companion on both sides: the same loops accepted, the same violations vetoed by the same rule."""

        def __init__(self) -> None:
            super().__init__()
            self.now = START_TIME
            self.model = Side(model_create, lambda: self.now)
            self.sut = Side(sut_create, lambda: self.now)
            self.sessions = 0

        def run(self, op: Op) -> Answer:
            self.now += 1
            op = {**op, "x-time": self.now}
            expected, actual = self.model.run(op), self.sut.run(op)
            diff = differences(expected, actual)
            assert not diff, f"{op['op']} answered differently by {name} with the companion: " + "; ".join(diff)
            return expected

        def fresh(self, seed: list[Any] | None = None) -> None:
            self.sessions += 1
            answer = self.run({"op": "create", "id": f"c{self.sessions}", "seed": seed, "header": None})
            assert answer["ok"], f"the companion refused a seed: {answer}"

        @initialize()
        def start(self) -> None:
            self.fresh()

        @rule(loop=loops.agent_loops(max_turns=2, max_steps=2))
        def well_formed_loop_is_accepted_by_both(self, loop: loops.Loop) -> None:
            self.fresh()
            for request in loop.requests:
                answer = self.run({"op": "append", **request})
                assert answer["ok"], f"the companion vetoed a well-formed loop: {answer}"

        @rule(violation=loops.relational_violations())
        def violation_is_vetoed_with_the_same_rule(self, violation: loops.Violation) -> None:
            self.fresh()
            for request in violation.prefix:
                assert self.run({"op": "append", **request})["ok"], "the companion vetoed a well-formed prefix"
            answer = self.run({"op": "append", **violation.request})
            assert not answer["ok"], f"the companion let through a {violation.rule} violation"
            assert answer["error"]["rule"] == violation.rule, f"vetoed with {answer['error']['rule']}, not {violation.rule}"

        @rule(data=st.data(), loop=loops.agent_loops(max_turns=2, max_steps=2, min_turns=1))
        def repaired_cut_loop_passes_the_companion(self, data: st.DataObject, loop: loops.Loop) -> None:
            """SESSION-INVARIANT-COMMIT.2 on a repaired crash: the companion replays the balanced log."""
            cut = data.draw(st.integers(1, len(loop.requests)), label="cut")
            built = loops.build(loop.requests[:cut], impl="live")
            added = closers(built.events)
            assert bool(added) == (loop.states[cut].open_turn is not None), "closers for a balanced log, or none for an open one"
            assert all(c.surface_op in (None, APPEND) for c in added), "SESSION-CRASH-REPAIR.5: a closer shadows"
            whole = repaired(built.events)
            assert closers(whole) == [], "SESSION-CRASH-REPAIR.7: the repaired log still has closers"
            self.fresh([e.to_json() for e in whole])

        @invariant()
        def companion_traces_equal(self) -> None:
            """Both logs replay to the same companion trace (what is open, what is pending)."""
            if self.model.session is not None:
                assert replay(self.model.session.events) == replay(self.sut.session.events), "companion traces differ"

    CompanionMachine.__name__ = CompanionMachine.__qualname__ = f"CompanionMachine[{name}]"
    return CompanionMachine
