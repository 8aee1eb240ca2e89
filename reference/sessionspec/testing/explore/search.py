"""The breadth-first search: every letter in every state, the implementation beside the reference model.

`Explorer.run` searches the first levels itself, breadth first, until the frontier holds
`SPLIT_AT` states; each of those is then the root of a subtree searched on its own, breadth first,
in this process or in worker processes (`subtrees.py`). A state's successors are the letters of the
alphabet applied to it: the reference side is answered by the `Oracle`, the implementation side
runs on a copy of the state's implementation session (`sessions.freeze`: pickled once, when the
step that reached the state had run and before any view was read, so every copy starts as the
step left it).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import orjson

from sessionspec import model
from sessionspec.errors import SpecViolation
from sessionspec.jsonvalue import Json
from sessionspec.testing import implementations as impls
from sessionspec.testing.explore.alphabet import (
    ALPHABETS,
    SESSION_ID,
    Request,
    Step,
    default_alphabet,
    letter_key,
    log_letters,
    steps,
    surface_letters,
)
from sessionspec.testing.explore.invariants import check_state, same_views
from sessionspec.testing.explore.observation import (
    Known,
    View,
    canonical,
    events_bytes,
    extend_digest,
    log_digest,
    read,
    state_key,
)
from sessionspec.testing.explore.oracle import Oracle, Reference
from sessionspec.testing.explore.report import Frontier, Progress, Report, StateTable, Violation
from sessionspec.testing.explore.sessions import (
    NESTED_REJECTED,
    Call,
    Frozen,
    NestedAppend,
    append,
    create,
    freeze,
    prepare,
    thaw_frozen,
)
from sessionspec.testing.explore.subtrees import search_subtrees

SPLIT_AT = 128
"""The frontier size from which each frontier state's subtree is searched on its own (and can go to
another process). A constant, so that a run's counts do not depend on the number of processes."""

SNAPSHOT: Request = {"op": "snapshot"}
Prepared = tuple[tuple[Call, bytes], ...]
"""A step's requests, each ready to run (`sessions.prepare`) and as canonical bytes (the oracle's key)."""


class Explorer:
    """Breadth-first search over the alphabet for one implementation against the reference model."""

    def __init__(self, impl: str = "live", alphabet: str = "full", *, verify_oracle: bool = False) -> None:
        if alphabet not in ALPHABETS:
            raise KeyError(f"unknown alphabet {alphabet!r}; known: {', '.join(ALPHABETS)}")
        self.impl = impl
        self.alphabet = alphabet
        self.factory = impls.factory(impl)
        self.oracle = Oracle(verify=verify_oracle)
        self.states = StateTable()
        self.seen: set[bytes] = set()
        self.report = Report(impl, alphabet)
        self.max_depth = 0
        self.nested = NestedAppend()
        self._picklable = True
        self._known = Known()
        self._kept_letters: dict[tuple[object, ...], list[tuple[Step, Prepared]]] = {}

    # --- the run -----------------------------------------------------------------------------------

    def run(self, depth: int, *, jobs: int = 1, progress: Progress | None = None) -> Report:
        """Search every state within `depth` accepted steps of the empty session; subtrees on `jobs` processes."""
        started, started_wall = time.process_time(), time.perf_counter()
        report = self.report
        report.jobs = max(1, jobs)
        self.max_depth = depth
        first = self._add(None, (), self.oracle.start(), self._new_impl(None), 0)
        frontier = [] if first is None else [first]
        level = 0
        while frontier and not report.violations and level < depth and len(frontier) < SPLIT_AT:
            level += 1
            states_before, transitions_before = len(self.seen), report.transitions
            frontier = self.level(frontier)
            report.depth = level
            self.record_level(level, len(self.seen) - states_before, report.transitions - transitions_before,
                      time.process_time() - started, progress)
        report.distinct_states = len(self.seen)
        report.seconds = time.process_time() - started
        if frontier and not report.violations and level < depth:
            search_subtrees(self, frontier, jobs, progress)
        report.model_runs += self.oracle.runs
        report.model_answers_reused += self.oracle.hits
        report.wall_seconds = time.perf_counter() - started_wall
        return report

    def record_level(self, level: int, new: int, transitions: int, seconds: float, progress: Progress | None) -> None:
        previous = self.report.levels[-1]["distinct_states"] if self.report.levels else 1
        assert isinstance(previous, int)
        row: dict[str, Json] = {"depth": level, "new_states": new, "distinct_states": previous + new,
                                "transitions": transitions, "seconds": round(seconds, 2)}
        self.report.levels.append(row)
        if progress is not None:
            progress(row)

    def level(self, frontier: list[Frontier]) -> list[Frontier]:
        """Expand every state of `frontier` (stopping at the first violation); the next frontier."""
        next_frontier: list[Frontier] = []
        for state in frontier:
            next_frontier.extend(self._expand(state))
            if self.report.violations:
                break
        return next_frontier

    # --- one state -----------------------------------------------------------------------------------

    def _expand(self, state: Frontier) -> list[Frontier]:
        """Every letter in `state`, each on a copy of the state's implementation session.

        A copy starts as the step that reached the state left it: no view has been read since
        (`_add` pickles before it reads). A rejected step leaves the sessions as they are, and the
        next letters run on them: the views are read after it (they must not have changed), so the
        step after it runs on a session whose views were just read, and must not change the events
        list that read returned.
        """
        reference = state.reference
        view = reference.view()  # the implementation's too: the state passed impl-matches-model
        self._known = Known(state.events)  # the state's events as its implementation listed them
        actual: Any = None  # a copy is made when an append step needs one
        held: Any = None  # the events list the last read of `actual` returned, if it was read
        rejected: list[str] = []
        children: list[Frontier] = []
        for step, prepared in self._letters(reference):
            self.report.transitions += 1
            if step.reseeds:
                child = self._reseed(state, view, step)
            else:
                if actual is None:
                    actual = self._copy(state)
                child, held = self._append_step(state, view, step, prepared, actual, rejected, held)
                if held is None:
                    actual, rejected = None, []
                else:
                    rejected.append(step.label)
            if child is not None:
                children.append(child)
            if self.report.violations:
                break
        return children

    def _letters(self, reference: Reference) -> list[tuple[Step, Prepared]]:
        """The letters offered in `reference`'s state, each with its requests prepared: their calls and canonical bytes.

        The letters but reseed and repair depend on `letter_key` only and are kept by it, prepared
        once (the bytes are the oracle's key). The reseed's seed is the log's canonical bytes,
        parsed: a fresh plain JSON value, as a testee would read it.
        """
        key = letter_key(reference.log, reference.nodes, self.alphabet)
        kept = self._kept_letters.get(key)
        if kept is None:
            kept = self._kept_letters[key] = [
                (step, tuple((prepare(request), canonical(request)) for request in step.requests))
                for step in surface_letters(reference.log, reference.nodes, self.alphabet)]
        logged = log_letters(reference.log, orjson.loads(reference.log_bytes))
        return [*kept, *((step, () if step.reseeds else tuple((prepare(request), canonical(request))
                                                              for request in step.requests)) for step in logged)]

    def _append_step(self, state: Frontier, view: View, step: Step, prepared: Prepared, actual: Any,
                     rejected: list[str], held: Any) -> tuple[Frontier | None, Any]:
        """Apply the step's appends to both sides.

        Returns the new child, and the events list read after the step if it was rejected (the
        session is then as before, and the next step runs on it), else None.
        """
        reference: Reference | None = state.reference
        labels = [*rejected, step.label]
        for position, request in enumerate(step.requests):
            assert reference is not None
            call, encoded = prepared[position]
            expected, reference = self.oracle.step(reference, request, encoded)
            got = append(actual, call)
            if expected.crash is not None or got.crash is not None or expected != got:
                self._violate(state, labels, "same-outcome",
                              f"request {position}: model {expected.describe()}, impl {got.describe()}")
                return None, None
            problem = self._nested_problem() if self.nested.outcomes else None
            if problem is not None:
                self._violate(state, labels, "nested-append-rejected", problem)
                return None, None
            if not expected.accepted:
                if step.label == "repair":
                    self._violate(state, labels, "closers-are-appendable", f"closer {position} was rejected")
                    return None, None
                return None, self._after_rejection(state, view, labels, actual)
        if held is not None and events_bytes(held, self._known) != view.events:
            self._violate(state, labels, "snapshots-never-change", "an events list returned earlier changed later")
            return None, None
        assert reference is not None
        return self._add(state, tuple(labels), reference, actual, state.depth + 1), None

    def _nested_problem(self) -> str | None:
        """What is wrong with the nested appends the reentrant observer tried since the last call, if anything."""
        outcomes = self.nested.outcomes
        if not outcomes:
            return None
        wrong = [outcome for outcome in outcomes if outcome != NESTED_REJECTED]
        outcomes.clear()
        return f"an observer's nested append was {wrong[0].describe()}" if wrong else None

    def _after_rejection(self, state: Frontier, view: View, labels: list[str], actual: Any) -> Any:
        """The views after a rejected append must be the state's (SESSION-APPEND-COMMIT.2, .6): the events list read, or None."""
        after, held = read(actual, self._known)
        if after != view:
            self._violate(state, labels, "unchanged-on-rejection", "the implementation changed after a rejected append: "
                          + (same_views(view, after, actual) or "views differ"))
            return None
        return held

    def _reseed(self, state: Frontier, view: View, step: Step) -> Frontier | None:
        """Reseed, and check `fresh-rebuild-agrees`: the seeded session shows the surface and messages it was seeded from."""
        seed = step.requests[0]["seed"]
        try:
            reference = self.oracle.reseeded(state.reference, seed)
        except SpecViolation as violation:
            self._violate(state, [step.label], "seed-accepts-own-log", f"the model rejects its own log: {violation}")
            return None
        try:
            actual = self._new_impl(seed)
        except Exception as error:
            self._violate(state, [step.label], "same-outcome", f"model accepted the seed, impl raised {error!r}")
            return None
        frozen = self._freeze(actual) if state.depth + 1 < self.max_depth else None
        try:
            nodes, messages = tuple(actual.surface.nodes), canonical(actual.derive_messages())
        except Exception as error:
            nodes, messages = (), repr(error).encode()
        if nodes != view.nodes or messages != view.messages:
            what = f"surface {nodes}, not {view.nodes}" if nodes != view.nodes else "different messages"
            self._violate(state, [step.label], "fresh-rebuild-agrees", f"a session seeded with this log has {what}")
            return None
        return self._add(state, (step.label,), reference, actual, state.depth + 1, frozen)

    def _add(self, parent: Frontier | None, labels: tuple[str, ...], reference: Reference, actual: Any, depth: int,
             frozen: Frozen | None = None) -> Frontier | None:
        """Record a successor of `parent` and check the invariants if it is new. Returns it if it is to be expanded."""
        expand = depth < self.max_depth
        if expand and frozen is None:
            frozen = self._freeze(actual)  # before any view is read: every copy starts as the step left it
        actual_view, events = read(actual, self._known)
        reference_view = reference.view()
        if parent is None or parent.log_digest is None:
            digest = log_digest(reference.log_bytes)
        else:
            digest = extend_digest(parent.log_digest, parent.reference.log_bytes, reference.log_bytes)
        key = state_key(digest, reference.first_live_seq, reference_view, actual_view)
        if key in self.seen:
            return None
        self.seen.add(key)
        parent_index = -1 if parent is None else parent.index
        problem = check_state(reference_view, actual_view, actual)
        if problem is not None:
            self.report.violations.append(self._violation(parent_index, list(labels), depth, *problem))
            return None
        index = self.states.add(parent_index, labels)
        return Frontier(index, depth, reference, frozen, digest, events) if expand else None

    # --- implementation sessions ---------------------------------------------------------------------

    def _new_impl(self, seed: Json) -> Any:
        return create(self.factory, seed, [self.nested])

    def _freeze(self, session: Any) -> Frozen | None:
        if self._picklable:
            try:
                return freeze(session)
            except Exception:  # an implementation holding what pickle cannot copy: replay instead
                self._picklable = False
        return None

    def _copy(self, state: Frontier) -> Any:
        """A fresh copy of the implementation in `state`: one unpickling, or a replay of the path."""
        if state.impl is not None:
            return thaw_frozen(state.impl)
        _, requests = self.path(state.index)
        session: Any = None
        for request in requests:  # a rejected step's snapshot is replayed too: it reads every view
            if request["op"] == "snapshot" and session is not None:
                read(session)
            elif request["op"] == "create":
                session = self._new_impl(request["seed"])
            elif request["op"] == "append":
                append(session, request)
        self.nested.outcomes.clear()  # checked when these steps were first taken
        return session

    # --- traces --------------------------------------------------------------------------------------

    def path(self, index: int, tail: Sequence[str] = ()) -> tuple[list[str], list[Request]]:
        """The labels and protocol requests from the empty session to state `index`, then the steps `tail`.

        The requests are what the explorer did to the implementation: each step's, and a `snapshot`
        after each rejected one, where the explorer read every view. `tail` is rejected steps then
        one more. States keep only their steps' labels (a reseed's request holds a whole log); the
        requests are found again by walking the labels on the reference model.
        """
        groups = [*self.states.groups(index), tuple(tail)]
        requests: list[Request] = [{"op": "create", "id": SESSION_ID, "seed": None, "header": None}]
        reference = create(model.Session.create, None)
        for group in groups:
            for position, label in enumerate(group):
                step = next(step for step in steps(reference, self.alphabet) if step.label == label)
                requests.extend(step.requests)
                if position < len(group) - 1:
                    requests.append(SNAPSHOT)  # a rejected step: the explorer read every view after it
                elif step.reseeds:
                    reference = create(model.Session.create, step.requests[0]["seed"])
                else:
                    for request in step.requests:
                        append(reference, request)
        return [label for group in groups for label in group], requests

    def _violation(self, parent: int, tail: list[str], depth: int, invariant: str, message: str) -> Violation:
        labels, requests = self.path(parent, tail)
        return Violation(invariant, message, depth, labels, [*requests, SNAPSHOT])

    def _violate(self, state: Frontier, tail: list[str], invariant: str, message: str) -> None:
        self.report.violations.append(self._violation(state.index, tail, state.depth + 1, invariant, message))


def explore(depth: int, impl: str = "live", *, alphabet: str | None = None, jobs: int = 1,
            progress: Progress | None = None, verify_oracle: bool = False) -> Report:
    """Explore every state within `depth` steps of the empty session for `impl` (alphabet: `default_alphabet`)."""
    return Explorer(impl, alphabet or default_alphabet(depth), verify_oracle=verify_oracle).run(
        depth, jobs=jobs, progress=progress)
