"""The deep levels, as independent subtrees: in this process, or split over worker processes.

Once the frontier holds `SPLIT_AT` states, each of them roots a subtree that is searched on its
own, breadth first, with its own set of seen states on top of the shallow levels' set. A state
is a log plus views and a log only grows, so two subtrees' states are almost never the same
state; the few that are (a repair step appends several events at once, so two roots' logs can be
one another's prefix) are counted and searched once per subtree, and the counts of a run are the
same whatever the number of processes, since the split does not depend on it.

With `jobs > 1` the subtrees are handed out one at a time, the largest first, to forked workers
(`fork`: each inherits the explorer, its frontier and its remembered model answers, and nothing is
sent but a subtree's number and its result). Results are merged in subtree order. The first violation of
the run is the shallowest, the first subtree's among equals, as the serial search would find:
every worker reads the depth of the shallowest violation found so far and searches no deeper.
"""

from __future__ import annotations

import multiprocessing
import time
from dataclasses import dataclass, field
from typing import Any, Protocol

from sessionspec.testing.explore.oracle import Oracle
from sessionspec.testing.explore.report import Frontier, Progress, Report, StateTable, Violation


class Explorer(Protocol):
    """What the subtrees need of `search.Explorer` (which imports this module, so it is named by its shape)."""

    seen: set[bytes]
    states: StateTable
    report: Report
    oracle: Oracle
    max_depth: int

    def level(self, frontier: list[Frontier]) -> list[Frontier]: ...

    def record_level(self, level: int, new: int, transitions: int, seconds: float, progress: Progress | None) -> None: ...


@dataclass(slots=True)
class Subtree:
    """What one subtree's search found: per level (new states, transitions, CPU seconds so far), and its first violation."""

    levels: list[tuple[int, int, float]] = field(default_factory=list)
    violation: Violation | None = None
    model_runs: int = 0
    model_answers_reused: int = 0


class _Floor:
    """The depth of the shallowest violation found so far, in one process (`multiprocessing.Value`'s interface)."""

    def __init__(self, value: int) -> None:
        self.value = value

    def get_lock(self) -> Any:
        return _NoLock()


class _NoLock:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def search_subtree(explorer: Explorer, root: Frontier, floor: Any) -> Subtree:
    """Breadth-first search below `root`; the explorer's seen set and state table are as before afterwards."""
    base_seen, base_states = explorer.seen, len(explorer.states)
    report = explorer.report
    base_transitions = report.transitions
    explorer.seen = set(base_seen)
    result = Subtree()
    runs, hits = explorer.oracle.runs, explorer.oracle.hits
    started = time.process_time()
    frontier = [root]
    try:
        for level in range(root.depth + 1, explorer.max_depth + 1):
            if not frontier or level > floor.value:
                break
            states_before, transitions_before = len(explorer.seen), report.transitions
            frontier = explorer.level(frontier)
            result.levels.append((len(explorer.seen) - states_before, report.transitions - transitions_before,
                                  time.process_time() - started))
            if report.violations:
                result.violation = report.violations[0]
                with floor.get_lock():
                    floor.value = min(floor.value, result.violation.depth)
                break
    finally:
        result.model_runs, result.model_answers_reused = explorer.oracle.runs - runs, explorer.oracle.hits - hits
        explorer.seen = base_seen
        explorer.states.truncate(base_states)
        report.transitions = base_transitions
        report.violations.clear()
    return result


_JOB: tuple[Explorer, list[Frontier], Any] | None = None
"""What forked workers inherit: the explorer, the subtree roots and the shared violation floor."""


def _worker(number: int) -> tuple[int, Subtree]:
    assert _JOB is not None
    explorer, roots, floor = _JOB
    return number, search_subtree(explorer, roots[number], floor)


def _largest_first(roots: list[Frontier]) -> list[int]:
    """The roots' numbers, those with the most surface nodes (the most replace letters, the largest subtrees) first.

    Handing out the largest subtrees first keeps a worker from starting a large one when the
    others are about to run out of work.
    """
    return sorted(range(len(roots)), key=lambda number: -len(roots[number].reference.nodes))


def search_subtrees(explorer: Explorer, roots: list[Frontier], jobs: int, progress: Progress | None) -> None:
    """Search below every root, on `jobs` processes, and merge the results into the explorer's report."""
    global _JOB
    depth = explorer.max_depth
    started = time.perf_counter()
    results: list[Subtree] = []
    workers = jobs > 1 and "fork" in multiprocessing.get_all_start_methods()
    if workers:
        context = multiprocessing.get_context("fork")
        floor: Any = context.Value("i", depth + 1)
        _JOB = (explorer, roots, floor)
        found: dict[int, Subtree] = {}
        try:
            with context.Pool(jobs) as pool:
                for number, result in pool.imap_unordered(_worker, _largest_first(roots), chunksize=1):
                    found[number] = result
                    _tell(progress, len(found), len(roots), started)
        finally:
            _JOB = None
        results = [found[number] for number in range(len(roots))]  # merged in subtree order, as one process would
    else:
        floor = _Floor(depth + 1)
        for root in roots:
            results.append(search_subtree(explorer, root, floor))
            _tell(progress, len(results), len(roots), started)
    _merge(explorer, roots[0].depth, results, progress, jobs_in_workers=workers)


def _tell(progress: Progress | None, done: int, total: int, started: float) -> None:
    """A progress row at every tenth of the subtrees."""
    if progress is not None and (done * 10 // total) != ((done - 1) * 10 // total):
        progress({"subtrees_done": done, "subtrees": total, "wall_seconds": round(time.perf_counter() - started, 1)})


def _merge(explorer: Explorer, root_depth: int, results: list[Subtree], progress: Progress | None,
           jobs_in_workers: bool) -> None:
    """The subtrees' levels summed into the report's rows, and the shallowest violation, the first subtree's among equals."""
    report = explorer.report
    serial_seconds = report.seconds
    found = [result.violation for result in results if result.violation is not None]
    deepest = max((len(result.levels) for result in results), default=0)
    if found:
        first = min(found, key=lambda violation: violation.depth)
        report.violations.append(first)
        deepest = min(deepest, first.depth - root_depth)  # deeper rows are partial: workers stop at the floor
    for offset in range(deepest):
        new = sum(result.levels[offset][0] for result in results if len(result.levels) > offset)
        transitions = sum(result.levels[offset][1] for result in results if len(result.levels) > offset)
        seconds = serial_seconds + sum(result.levels[min(offset, len(result.levels) - 1)][2]
                                       for result in results if result.levels)
        report.transitions += transitions
        report.depth = root_depth + offset + 1
        report.distinct_states += new
        explorer.record_level(report.depth, new, transitions, seconds, progress)
    report.seconds = serial_seconds + sum(result.levels[-1][2] for result in results if result.levels)
    if jobs_in_workers:  # in one process the oracle's own counts have them already
        report.model_runs += sum(result.model_runs for result in results)
        report.model_answers_reused += sum(result.model_answers_reused for result in results)
