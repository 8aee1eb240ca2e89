"""The breadth-first search over the alphabet, the implementation beside the reference model."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from sessionspec import model
from sessionspec.envelope import Event
from sessionspec.errors import SpecViolation
from sessionspec.jsonvalue import Json
from sessionspec.surface import fold
from sessionspec.testing import implementations as impls
from sessionspec.testing.explore.alphabet import ALPHABETS, SESSION_ID, Request, Step, default_alphabet, steps
from sessionspec.testing.explore.invariants import check_state, same_views
from sessionspec.testing.explore.observation import View, canonical, envelope_json, events_bytes, observe, state_key
from sessionspec.testing.explore.report import Frontier, Report, StateTable, Violation
from sessionspec.testing.explore.sessions import (
    NESTED_REJECTED,
    NestedAppend,
    append,
    constant_clock,
    create,
    freeze,
    model_append,
    thaw_frozen,
    veto,
)
from sessionspec.views import project_all, transcript


class Explorer:
    """Breadth-first search over the alphabet for one implementation against the reference model."""

    def __init__(self, impl: str = "live", alphabet: str = "full") -> None:
        if alphabet not in ALPHABETS:
            raise KeyError(f"unknown alphabet {alphabet!r}; known: {', '.join(ALPHABETS)}")
        self.impl = impl
        self.alphabet = alphabet
        self.factory = impls.factory(impl)
        self.states = StateTable()
        self.seen: set[bytes] = set()
        self.report = Report(impl, alphabet)
        self.max_depth = 0
        self.rejected: list[Step] = []
        self.nested = NestedAppend()
        self.header: Any = None
        self._events: dict[bytes, Event] = {}
        self._event_bytes: dict[int, bytes] = {}
        self._requests: dict[bytes, Request] = {}
        self._copies = True

    # --- rebuilding states ---------------------------------------------------------------------

    def _new_impl(self, seed: Json) -> Any:
        return create(self.factory, seed, [self.nested])

    def _model_at(self, state: Frontier) -> model.Session:
        session = model.Session(SESSION_ID, self.header, constant_clock, (veto,), ())
        session._log.extend(state.events)  # an accepted state: the model rereads the whole log on every call anyway
        session._first_live_seq = state.first_live_seq
        return session

    def _impl_at(self, state: Frontier) -> Any:
        """The implementation in `state`, replayed; the nested-append probe is off (these appends were checked)."""
        self.nested.armed = False
        try:
            session = self._new_impl(state.seed)
            for request in state.appends:
                outcome = append(session, request)
                if not outcome.accepted:
                    raise RuntimeError(f"replay of an accepted append was {outcome.describe()}: {request}")
        finally:
            self.nested.armed = True
        return session

    def _working_copies(self, state: Frontier) -> tuple[View, Callable[[], Any]]:
        """The view of the implementation in `state`, and a source of fresh copies of it to run steps on.

        The state is replayed once and pickled (`freeze`); each copy is one unpickling, a third
        of a replay at depth 6 and a small fraction of a re-seed. The pickle is taken before the
        views are read, so every copy starts with cold caches, as a replay would. An
        implementation that cannot be pickled is replayed for every copy.
        """
        pristine = self._impl_at(state)
        frozen = None
        if self._copies:
            try:
                frozen = freeze(pristine)
            except Exception:  # an implementation holding what pickle cannot copy: replay instead
                self._copies = False
        view = observe(pristine)
        if frozen is None:
            return view, lambda: self._impl_at(state)
        return view, lambda: thaw_frozen(frozen)

    def _log_bytes(self, log: list[Event]) -> bytes:
        """The model's log as canonical bytes; each event is interned (replaced by its one canonical copy)."""
        parts = []
        for position, event in enumerate(log):
            encoded = self._event_bytes.get(id(event))
            if encoded is None:
                encoded = canonical(envelope_json(event))
                interned = self._events.setdefault(encoded, event)
                self._event_bytes[id(interned)] = encoded
                log[position] = interned
            parts.append(encoded)
        return b"[" + b",".join(parts) + b"]"

    def _interned(self, requests: tuple[Request, ...]) -> tuple[Request, ...]:
        return tuple(self._requests.setdefault(canonical(request), request) for request in requests)

    # --- traces --------------------------------------------------------------------------------

    def path(self, index: int, *last: Step) -> tuple[list[str], list[Request]]:
        """The labels and protocol requests from the empty session to state `index` (then `last`).

        States keep only their step's label (a reseed's request holds a whole log); the requests
        are found again by walking the labels on the reference model.
        """
        labels = self.states.labels(index)
        requests: list[Request] = [{"op": "create", "id": SESSION_ID, "seed": None, "header": None}]
        reference = create(model.Session.create, None)
        for label in labels:
            step = next(step for step in steps(reference, self.alphabet) if step.label == label)
            requests.extend(step.requests)
            if step.requests[0]["op"] == "create":
                reference = create(model.Session.create, step.requests[0]["seed"])
            else:
                for request in step.requests:
                    append(reference, request)
        for step in last:
            labels.append(step.label)
            requests.extend(step.requests)
        return labels, requests

    def _violate(self, depth: int, parent: int, step: Step | None, invariant: str, message: str) -> None:
        # The rejected steps the sessions went through since they were last rebuilt are part of
        # the path: a rejection must change nothing, and an implementation that it did change
        # is caught only with them in the trace.
        labels, trace = self.path(parent, *self.rejected, *([] if step is None else [step]))
        self.report.violations.append(Violation(invariant, message, depth, labels, trace))

    # --- the search ----------------------------------------------------------------------------

    def _add(self, parent: int, step: Step | None, reference: model.Session, actual: Any, depth: int, seed: Json,
             appends: tuple[Request, ...]) -> Frontier | None:
        """Record a successor and check the invariants if it is new. Returns it if it is to be expanded."""
        log = reference._log
        model_log = self._log_bytes(log)
        actual_view = observe(actual)
        key = state_key(model_log, reference.first_live_seq, actual_view)
        if key in self.seen:
            return None
        self.seen.add(key)
        # The model's views, from one fold (the model's own properties would fold once each).
        folded = fold(log)
        reference_view = View(model_log, tuple(folded.nodes), len(folded.replacements),
                              canonical(project_all(log, folded.nodes)), tuple(event.seq for event in transcript(log)),
                              reference.first_live_seq, len(log))
        problem = check_state(reference_view, actual_view, actual)
        if problem is not None:
            self._violate(depth, parent, step, *problem)
            return None
        index = self.states.add(parent, None if step is None else step.label)
        if depth >= self.max_depth:  # states at the last depth are never expanded
            return None
        return Frontier(index, seed, self._interned(appends), tuple(log), reference.first_live_seq)

    def run(self, depth: int, *, progress: Callable[[dict[str, Json]], None] | None = None) -> Report:
        started = time.process_time()
        report = self.report
        self.max_depth = depth
        reference, actual = create(model.Session.create, None), self._new_impl(None)
        self.header = reference.header
        first = self._add(-1, None, reference, actual, 0, None, ())
        frontier = [] if first is None else [first]
        for level in range(1, depth + 1):
            if report.violations or not frontier:
                break
            transitions_before, states_before, next_frontier = report.transitions, len(self.seen), []
            for state in frontier:
                next_frontier.extend(self._expand(state, level))
                if report.violations:
                    break
            frontier = next_frontier
            report.depth = level
            report.distinct_states = len(self.seen)
            report.seconds = time.process_time() - started
            row: dict[str, Json] = {"depth": level, "new_states": len(self.seen) - states_before,
                                    "distinct_states": len(self.seen),
                                    "transitions": report.transitions - transitions_before,
                                    "seconds": round(report.seconds, 2)}
            report.levels.append(row)
            if progress is not None:
                progress(row)
        report.distinct_states = len(self.seen)
        report.seconds = time.process_time() - started
        return report

    def _expand(self, state: Frontier, depth: int) -> list[Frontier]:
        view, copies = self._working_copies(state)
        reference, actual = self._model_at(state), copies()
        self.rejected = []
        children: list[Frontier] = []
        for step in list(steps(reference, self.alphabet)):
            self.report.transitions += 1
            if step.requests[0]["op"] == "create":
                saved, self.rejected = self.rejected, []
                child = self._reseed(state, view, step, depth)
                self.rejected = saved
            else:
                child, dirty = self._append_step(state, view, step, reference, actual, depth)
                if dirty:
                    reference, actual = self._model_at(state), copies()
                    self.rejected = []
                else:
                    self.rejected.append(step)
            if child is not None:
                children.append(child)
            if self.report.violations:
                break
        return children

    def _reseed(self, state: Frontier, view: View, step: Step, depth: int) -> Frontier | None:
        """Reseed, and check `fresh-rebuild-agrees`: the seeded session shows the surface and messages it was seeded from."""
        seed = step.requests[0]["seed"]
        try:
            reference = create(model.Session.create, seed)
        except SpecViolation as violation:
            self._violate(depth, state.index, step, "seed-accepts-own-log", f"the model rejects its own log: {violation}")
            return None
        try:
            actual = self._new_impl(seed)
        except Exception as error:
            self._violate(depth, state.index, step, "same-outcome", f"model accepted the seed, impl raised {error!r}")
            return None
        try:
            nodes, messages = tuple(actual.surface.nodes), canonical(actual.derive_messages())
        except Exception as error:
            nodes, messages = (), repr(error).encode()
        if nodes != view.nodes or messages != view.messages:
            what = f"surface {nodes}, not {view.nodes}" if nodes != view.nodes else "different messages"
            self._violate(depth, state.index, step, "fresh-rebuild-agrees", f"a session seeded with this log has {what}")
            return None
        return self._add(state.index, step, reference, actual, depth, seed, ())

    def _append_step(self, state: Frontier, view: View, step: Step, reference: model.Session, actual: Any,
                     depth: int) -> tuple[Frontier | None, bool]:
        """Apply the step's appends to both sides. Returns (new child, whether the sessions changed)."""
        held = actual.events
        for position, request in enumerate(step.requests):
            expected, got = model_append(reference, request), append(actual, request)
            changed = position > 0 or expected.accepted or got.accepted
            if expected.crash is not None or got.crash is not None or expected != got:
                self._violate(depth, state.index, step, "same-outcome",
                              f"request {position}: model {expected.describe()}, impl {got.describe()}")
                return None, changed
            if self.nested.outcomes:
                nested, self.nested.outcomes[:] = self.nested.outcomes[:], []
                wrong = [outcome for outcome in nested if outcome != NESTED_REJECTED]
                if wrong:
                    self._violate(depth, state.index, step, "nested-append-rejected",
                                  f"an observer's nested append was {wrong[0].describe()}")
                    return None, True
            if not expected.accepted:
                if step.label == "repair":
                    self._violate(depth, state.index, step, "closers-are-appendable",
                                  f"closer {position} was {expected.describe()}")
                    return None, changed
                after = observe(actual)
                if after != view:
                    self._violate(depth, state.index, step, "unchanged-on-rejection",
                                  "the implementation changed after a rejected append: "
                                  + (same_views(view, after, actual) or "views differ"))
                return None, changed
        if events_bytes(held) != view.events:
            self._violate(depth, state.index, step, "snapshots-never-change", "an events list returned earlier changed later")
            return None, True
        appends = state.appends + step.requests
        return self._add(state.index, step, reference, actual, depth, state.seed, appends), True


def explore(depth: int, impl: str = "live", *, alphabet: str | None = None,
            progress: Callable[[dict[str, Json]], None] | None = None) -> Report:
    """Explore every state within `depth` steps of the empty session for `impl` (alphabet: `default_alphabet`)."""
    return Explorer(impl, alphabet or default_alphabet(depth)).run(depth, progress=progress)
