"""The stateful machine: the reference model and a system under test, driven step by step.

In the style of Hypothesis's model-versus-real example. Every rule builds one operation (a trace
op in the protocol's request shape), runs it on the model and on the system under test with one
shared fake clock, and requires the same answer: the same event, or a rejection with the same rule
and kind that left both sessions exactly as they were. After every step the invariants compare
the two sessions and hold the system under test to what a fresh session seeded from its own log
says. A failing run prints Hypothesis's program and writes the op trace (`sessionspec replay`).

`make_machine(sut_factory)` takes any factory with the signature of `model.Session.create`: the
incremental `live` (the default), a planted-bug variant, or an adapter to an external testee.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hypothesis import note
from hypothesis import strategies as st
from hypothesis.control import current_build_context
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from sessionspec import impls
from sessionspec.catalog import END_SEED, SURFACE_TYPES
from sessionspec.jsonvalue import thaw
from sessionspec.testing import strategies as ss
from sessionspec.testing.trace import MUTATIONS, Answer, Op, Side, differences, write_trace

START_TIME = 1_700_000_000_000


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

        @initialize(derive_each_step=st.booleans(), header=st.sampled_from([None, {"version": 0, "createdAt": 1, "cwd": "/w"}]))
        def start(self, derive_each_step: bool, header: Any) -> None:
            """A fresh session; half of the runs derive only at random points, so the cache sees several steps at once."""
            self.derive_each_step = derive_each_step
            self.create(None, header)

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

        # --- invariants ---------------------------------------------------------------------------

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


def _timeless(events: list[dict[str, Any]], compare_time: bool) -> list[dict[str, Any]]:
    return events if compare_time else [{k: v for k, v in e.items() if k != "time"} for e in events]


def plain(label: str, returned: Any) -> Any:
    """A plain copy of a returned sequence, to compare with what it holds later."""
    if label == "events":
        return [e.to_json() for e in returned]
    return thaw(list(returned))
