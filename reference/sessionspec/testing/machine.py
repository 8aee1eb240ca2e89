"""The stateful machine: the reference model and an implementation under test, driven step by step.

In the style of Hypothesis's `DatabaseComparison` example: one module-level class, the
implementation under test a class attribute (`LiveMachine`, `ModelMachine`, `machine_for(name)`
for a planted bug). Every rule builds one request in the protocol's shape, runs it through the
one executor (`sessionspec.wire.executor`) on the model and on the implementation, with
one clock reading (`x-time`) for both, and requires the same answer: the same event, or a
rejection with the same rule and kind that left both sessions exactly as they were. After every
step the invariants compare the two sessions and hold the implementation to what a fresh session
seeded from its own log says. A failing run prints Hypothesis's program and writes the request
trace, which `sessionspec replay` re-executes.

Besides random operations, an agent works in the log (`agent_works`: well-formed loops from
`sessionspec.testing.loops`, stopped anywhere), so crash repair and fork (`LogRules`) meet open
turns, open steps and pending calls; `--hypothesis-show-statistics` shows how often.
"""

from __future__ import annotations

from typing import Any, ClassVar

from hypothesis import event, note
from hypothesis import strategies as st
from hypothesis.control import current_build_context
from hypothesis.stateful import initialize, invariant, precondition, rule

from sessionspec.catalog import END_SEED, SURFACE_TYPES
from sessionspec.jsonvalue import thaw
from sessionspec.requestheader import fold_request_header
from sessionspec.testing import edges, implementations, invalid, loops, near_misses
from sessionspec.testing import strategies as ss
from sessionspec.testing.choose import drawn
from sessionspec.testing.machine_api import ApiRules
from sessionspec.testing.machine_logs import LogRules, where
from sessionspec.wire.compare import differences
from sessionspec.wire.executor import Executor
from sessionspec.wire.immutability import MUTATIONS, attempt_mutation
from sessionspec.wire.protocol import START_TIME, Answer
from sessionspec.wire.trace import Trace, write_trace

HEADERS = st.sampled_from([None, {"version": 0, "createdAt": 1, "cwd": "/w"}])


def plain(label: str, returned: Any) -> Any:
    """A plain copy of a returned sequence, to compare with what it holds later (SESSION-IMMUTABILITY.4)."""
    if label == "events":
        return [e.to_json() for e in returned]
    return thaw(list(returned))


class SessionMachine(ApiRules, LogRules):
    """The model and the implementation under test, one request at a time."""

    implementation: ClassVar[str] = "live"
    last_trace: ClassVar[Any] = None
    last_steps: ClassVar[int | None] = None

    def __init__(self) -> None:
        super().__init__()
        self.now = START_TIME
        self.model = Executor(implementations.factory("model"), "model")
        self.sut = Executor(implementations.factory(self.implementation), self.implementation)
        self.requests: list[dict[str, Any]] = []
        self.steps = 0
        self.sessions = 0
        self.replaces = 0
        self.derive_each_step = True
        self.held: list[tuple[str, Any, Any]] = []
        self.events: list[dict[str, Any]] = []
        self.nodes: list[int] = []

    def clock(self) -> int:
        return self.now

    # --- running one request on both sides ----------------------------------------------------

    def run(self, request: dict[str, Any]) -> tuple[Answer, Answer]:
        """Apply `request` to the model and the implementation; their answers must agree (rules and times too)."""
        self.now += 1
        request = {**request, "x-time": self.now}
        self.requests.append(request)
        expected, actual = self.model.run(request), self.sut.run(request)
        diff = differences(request["op"], expected, actual, rules=True, time=True)
        assert not diff, f"{request['op']} answered differently by {self.implementation}: " + "; ".join(diff)
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
        return ss.View(tuple(self.events), tuple(self.nodes))

    def append(self, request: ss.Request, **hooks: str) -> tuple[Answer, Answer]:
        before = (self.model.session.seq, self.sut.session.seq)
        expected, actual = self.run({"op": "append", **request, **hooks})
        if not expected["ok"]:
            after = (self.model.session.seq, self.sut.session.seq)
            assert after == before, f"a rejected append changed the log length: {before} -> {after}"
        else:
            self.replaces += isinstance(expected["event"].get("surfaceOp"), dict)
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

    # --- rules --------------------------------------------------------------------------------

    @initialize(derive_each_step=st.booleans(), header=HEADERS, idle=st.integers(0, 3).map(lambda n: n == 0),
                data=st.data())
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
        """A harness at work: the well-formed continuation of the log's agent loop, stopped at any request."""
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
        event(f"agent: stopped {where(loop.states[stop])}")

    @precondition(lambda self: bool(self.nodes))
    @rule(data=st.data())
    def replace(self, data: st.DataObject) -> None:
        expected, _ = self.append(data.draw(ss.replacements(self.view()), label="replacement"))
        assert expected["ok"], f"the model refused a valid replacement: {expected}"

    @rule(data=st.data())
    def invalid_operation(self, data: st.DataObject) -> None:
        """Both reject with the same rule and kind (checked in `run`), and neither changes."""
        self._refused(data.draw(invalid.invalid_requests(self.view()), label="invalid"))

    @rule(data=st.data())
    def every_fixed_invalid_operation(self, data: st.DataObject) -> None:
        """Each log-independent invalid request once (`invalid.every_fixed_invalid_request`): both reject alike."""
        for bad in data.draw(invalid.every_fixed_invalid_request(), label="every invalid"):
            self._refused(bad)

    @precondition(lambda self: bool(self.view().tool_result_nodes()))
    @rule(data=st.data())
    def forged_tool_result_rewrite(self, data: st.DataObject) -> None:
        """SESSION-SURFACE-TOOL-RESULT.3: a pruning that changes an id, isError, error, meta or turn is refused by both.

        Its own rule (it is also one of the invalid operations) because a store that compares only
        the call id accepts these, and one draw among all invalid operations finds it too rarely.
        """
        self._refused(data.draw(invalid.forged_tool_result_rewrites(self.view()), label="forged rewrite"))

    @precondition(lambda self: bool(self.nodes))
    @rule(data=st.data())
    def incomplete_provenance_is_refused(self, data: st.DataObject) -> None:
        """SESSION-SURFACE-PROVENANCE.6: a replacement whose sources miss a shadowed node is refused by both."""
        self._refused(data.draw(invalid.incomplete_provenance_replacements(self.view()), label="incomplete provenance"))

    def _refused(self, bad: invalid.Invalid) -> None:
        expected, _ = self.append(bad.request)
        assert not expected["ok"], f"the model accepted an operation meant to be invalid ({bad.why})"
        assert expected["error"]["rule"] == bad.rule, (
            f"strategy expected {bad.rule} for {bad.why}; the model said {expected['error']['rule']}")

    @rule(data=st.data())
    def append_near_misses(self, data: st.DataObject) -> None:
        """Valid requests with one thing broken anywhere in each (`testing.near_misses`): both give the same answers."""
        for request in data.draw(near_misses.near_misses(self.view()), label="near misses"):
            self.append(request)

    @rule(data=st.data())
    def append_several_broken_at_once(self, data: st.DataObject) -> None:
        """Valid requests with two or three fields broken together (`near_misses.several_at_once`): both answer alike."""
        for request in data.draw(near_misses.several_at_once(self.view()), label="several at once"):
            self.append(request)

    @rule(data=st.data())
    def non_json_anywhere(self, data: st.DataObject) -> None:
        """Decision 4 at every depth: each kind of value JSON cannot hold, anywhere in a request, is refused by both alike."""
        for request in data.draw(near_misses.non_json_anywhere(self.view()), label="non-JSON"):
            expected, _ = self.append(request)
            assert not expected["ok"], f"the model accepted a value JSON cannot hold: {expected}"

    @rule(data=st.data())
    def fast_form_edges(self, data: st.DataObject) -> None:
        """One request at each special case of the fast forms (`testing.edges`: scalar and deep data, provenance out
        of order, markers and flags at their edges, messages of another shape, equal ids that are not strings, lone
        surrogates a rewrite keeps), answered alike by both sides."""
        choose = drawn(data.draw)
        for generate in edges.OBJECT_EDGES.values():
            self.append({key: value for key, value in generate(choose, self.view()).items() if key != "op"})

    @rule(deep=near_misses.deep_values(shallow=True))
    def append_deep_value(self, deep: tuple[int, str, str]) -> None:
        """Values nested around the store's hand-over depth are logged alike (deeper ones: conform's raw lines)."""
        expected, _ = self.append({"type": near_misses.DEEP_TYPE, "data": near_misses.deep_value(*deep)})
        assert expected["ok"], expected

    @rule(data=st.data(), mode=st.sampled_from(["raise", "violation", "reentrant"]))
    def vetoed_append(self, data: st.DataObject, mode: str) -> None:
        """A validator that raises (or reenters) vetoes the append: nothing is logged; both saw the same candidate."""
        expected, _ = self.append(data.draw(ss.append_requests(self.view()), label="request"), **{"x-validator": mode})
        assert not expected["ok"] and expected["error"]["kind"] in ("veto", "reentrant"), expected

    @rule(data=st.data(), mode=st.sampled_from(["raise", "reentrant"]))
    def append_with_misbehaving_observer(self, data: st.DataObject, mode: str) -> None:
        """An observer that raises is contained; one that appends is refused as reentrant; the event stays."""
        expected, _ = self.append(data.draw(ss.append_requests(self.view()), label="request"), **{"x-observer": mode})
        assert expected["ok"], expected
        if mode == "reentrant":
            assert expected["x-reentrant"]["error"]["rule"] == "SESSION-APPEND-COMMIT.4"

    @rule(data=st.data())
    def append_with_a_clock_that_appends(self, data: st.DataObject) -> None:
        """SESSION-APPEND-COMMIT.4: the clock is caller code; an append from inside it is refused, the outer one lands."""
        expected, _ = self.append(data.draw(ss.append_requests(self.view()), label="request"), **{"x-clock": "reentrant"})
        if expected["ok"]:
            assert expected["x-reentrant"]["error"]["rule"] == "SESSION-APPEND-COMMIT.4", expected

    @rule(data=st.data())
    def caller_mutates_its_input(self, data: st.DataObject) -> None:
        """SESSION-IMMUTABILITY.3: changing the request's data, at every level, after append changes nothing logged."""
        expected, _ = self.append(data.draw(ss.append_requests(self.view()), label="request"), **{"x-mutate-input": "data"})
        assert expected["ok"], expected

    @rule(what=st.sampled_from(sorted(MUTATIONS)))
    def mutate_returned_value(self, what: str) -> None:
        """Decision 5: mutating anything returned raises TypeError (checked on both sides)."""
        expected, actual = self.run({"op": "x-mutate", "target": what})
        assert actual["raised"] in ("TypeError", "n/a"), f"{what} on {self.implementation} raised {actual['raised']}"
        assert expected["raised"] in ("TypeError", "n/a"), f"{what} on the model raised {expected['raised']}"

    @rule()
    def derive(self) -> None:
        """Derive at a random point: the cache may have several appends, or a replace, to catch up on."""
        self.run({"op": "snapshot"})
        messages = self.sut.session.derive_messages()
        self.held.append(("messages", messages, plain("messages", messages)))

    @rule()
    def reseed_from_current_events(self) -> None:
        """Every accepted log re-seeds; the new session continues from it (marker added unless it ends in one)."""
        self.create(self.events)

    @rule(data=st.data())
    def seed_from_prefix(self, data: st.DataObject) -> None:
        """Every prefix of an accepted log is an accepted seed."""
        self.create(self.events[: data.draw(st.integers(0, len(self.events)), label="cut")])

    # --- invariants -----------------------------------------------------------------------------

    @invariant()
    def both_sides_show_the_same_session(self) -> None:
        """The whole observable session agrees: log, surface, views, header, request header and context.

        Hypothesis runs invariants in name order; this one refreshes `events` and `nodes`, which the
        others read, so its name sorts first.
        """
        self.look()
        events, nodes = self.sut.session.events, self.sut.session.surface.nodes
        self.held.extend((("events", events, plain("events", events)), ("nodes", nodes, plain("nodes", nodes))))
        del self.held[:-12]

    @invariant()
    def transcript_events_are_the_log_events(self) -> None:
        """SESSION-READ-VIEWS.3: the transcript hands out the logged events themselves, append-origin only, in log order."""
        transcript = [e.to_json() for e in self.sut.session.transcript()]
        assert transcript == [e for e in self.events if e.get("surfaceOp") == "append"], "the transcript is not the log's"

    @invariant()
    def request_header_is_the_full_fold(self) -> None:
        """SESSION-REQUEST-HEADER-FOLD.3: the header in force is the fold of the whole log."""
        header = self.sut.session.request_header()
        assert header == fold_request_header(self.sut.session.events), "request_header() is not the full fold"

    @invariant()
    def returned_sequences_never_change(self) -> None:
        for label, returned, copy_then in self.held:
            assert plain(label, returned) == copy_then, f"a returned {label} sequence changed after it was returned"

    @invariant()
    def returned_values_refuse_mutation_at_every_level(self) -> None:
        """Decision 5, after every step, for every kind of returned value and every container in it."""
        for target in (*sorted(MUTATIONS), "everything"):
            raised = attempt_mutation(self.sut.session, target)
            assert raised in ("TypeError", "n/a"), f"{target} on {self.implementation}: {raised}, not TypeError"

    @invariant()
    def nodes_are_unique_eligible_surface_events(self) -> None:
        assert len(set(self.nodes)) == len(self.nodes), f"repeated nodes {self.nodes}"
        for node in self.nodes:
            logged = self.events[node]
            assert logged["type"] in SURFACE_TYPES and "surfaceOp" in logged, f"node {node} is not a surface event"

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
        """On the final (reported) run of a failure, write the request trace and say where."""
        try:
            final = current_build_context().is_final
        except Exception:
            final = False
        if final:
            trace = Trace(self.requests, "machine", f"machine-{self.implementation}", self.implementation)
            path = write_trace(trace)
            type(self).last_trace = path
            type(self).last_steps = self.steps
            message = (f"sessionspec: {self.steps} steps; trace written to {path}\n"
                       f"  replay: sessionspec replay {path} --impl {self.implementation}")
            note(message)
            print(message)


class LiveMachine(SessionMachine):
    """`live`, the incremental store, held to the model."""

    implementation = "live"


class ModelMachine(SessionMachine):
    """The model held to itself: the machine's own rules and strategies checked for consistency."""

    implementation = "model"


def machine_for(name: str) -> type[SessionMachine]:
    """The machine for any implementation `sessionspec.testing.implementations` names (`planted:NAME` too)."""
    implementations.factory(name)  # an unknown name fails here, not in the first example
    return type(f"SessionMachine[{name}]", (SessionMachine,), {"implementation": name, "__module__": __name__})
