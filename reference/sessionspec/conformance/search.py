"""The machine's search: pass after pass of the testee machine, the first divergence of each family collected.

One run of the stateful machine (`sessionspec.testing.testee_machine`) against the testee and the
reference, `--examples` long: the first divergence of each family is collected (the example then
goes on quietly, and the next examples look for more), so the search never fails a Hypothesis
example and spends its whole budget looking. A failure list changes nothing here (it changes the
verdict on what is found, never what is found). Afterwards each collected family is minimized (`conformance.minimize`: cut, shrunk inside its request, named after
its root cause). Hypothesis's shrinking is off: generation is derandomized and the minimizer works
by counts, so a run is reproducible, and the minimizer's cuts are what shortens a trace anyway.

Whatever goes wrong inside a pass (a testee that dies or stalls mid-example makes Hypothesis see an
example it cannot replay) ends the search, never the run: every family found so far is kept, and
why the search stopped is said.
"""

from __future__ import annotations

import contextlib
import gc
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from hypothesis import HealthCheck, Phase, Verbosity, configuration, seed, settings
from hypothesis.stateful import get_state_machine_test

from sessionspec.conformance.minimize import minimize
from sessionspec.testing import profiles
from sessionspec.testing.testee_machine import SearchOver, testee_machine
from sessionspec.wire.divergence import Divergence
from sessionspec.wire.exchange import Exchange
from sessionspec.wire.protocol import HOOKS, INPROCESS, Answer

MAX_FAMILIES: Final = 64
"""Families minimized at most: a testee this far off needs fixing before more searching."""
ROUND: Final = 50
"""Examples a round of the search runs, each round from its own seed."""
MINIMIZE_SHARE: Final = 0.2
"""Of the time left, what one family's minimizing may take at most (with a budget): the rest is left to search."""


@dataclass
class Search:
    """What a search found and how far it went."""

    examples: int = 0
    found: list[Divergence] = field(default_factory=list)
    stopped: str | None = None
    """Why the search ended before its budget, when something other than the budget ended it."""


def machine_settings(examples: int | None, profile: str | None) -> settings:
    """The search's settings. Quiet: conform reports each divergence itself (its trace and one-line replay);
    Hypothesis's own report names steps of a test the user never wrote, and an `@seed` to add to it. No
    Hypothesis shrinking: `minimize` cuts and shrinks, by counts, so the run is reproducible."""
    if profile is not None:
        profiles.register()
        base = settings.get_profile(profile)
        return settings(base, database=None, deadline=None, report_multiple_bugs=False, print_blob=False,
                        verbosity=Verbosity.quiet, suppress_health_check=list(HealthCheck),
                        phases=[phase for phase in base.phases if phase is not Phase.shrink])
    return settings(max_examples=max(1, examples or 1), stateful_step_count=25, deadline=None, database=None,
                    derandomize=True, report_multiple_bugs=False, print_blob=False, verbosity=Verbosity.quiet,
                    phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))


@contextlib.contextmanager
def collector_for_a_search() -> Iterator[None]:
    """CPython's cyclic collector set for the machine's search, and put back after it.

    A search keeps many objects for long (the oracle's tree of answers and sessions, Hypothesis's
    tree of choices) and makes many that die young. With the default thresholds the collector's full
    walks over all of them were about a tenth of the runner's CPU (measured with `gc.callbacks` over
    100 examples: 0.46 s of about 4.4 s); with what exists when the search starts (modules, vectors)
    frozen out of its walks and a young collection every 10,000 net allocations instead of 700, 0.11 s.
    When the search ends the thresholds are put back and the frozen objects are under the collector again.
    """
    thresholds = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(10_000, *thresholds[1:])
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()


def hypothesis_home() -> Path:
    """Where Hypothesis keeps its files during a search: the user's cache (`$XDG_CACHE_HOME`, else ~/.cache), not
    `.hypothesis/` in the directory `conform` runs in. The search keeps no examples (no database) and reads no
    constants from local source (`no_local_constants_for_a_search`), which Hypothesis caches in files; whatever
    else it may write, a checker run in another project's checkout must leave nothing there.
    `HYPOTHESIS_STORAGE_DIRECTORY`, when set, is the user's choice and is kept."""
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "sessionspec" / "hypothesis"


@contextlib.contextmanager
def hypothesis_home_for_a_search() -> Iterator[None]:
    """Hypothesis's home set to `hypothesis_home()` for the search, and put back after it."""
    if os.environ.get("HYPOTHESIS_STORAGE_DIRECTORY"):
        yield
        return
    previous = configuration.storage_directory(intent_to_write=False).home_directory
    configuration.set_hypothesis_home_dir(hypothesis_home())
    try:
        yield
    finally:
        configuration.set_hypothesis_home_dir(previous)


@contextlib.contextmanager
def no_local_constants_for_a_search() -> Iterator[None]:
    """Hypothesis's constants from local source kept out of the search, and let back in after it.

    Recent Hypothesis (6.170) now and then draws a literal found in the source of a "local" module (one not in
    site-packages, not a test) the process has imported: the pool is read again whenever `sys.modules` grows
    (`providers._get_local_constants`). So the search drew other examples after an import that brought new
    literals: in-process after `import sessionspec.logcheck.checkfile` (1000, ".jsonl", ...), a default run
    against three planted bugs searched 219 examples instead of 207. It would differ too between a checkout and an
    installed package, and with any literal edited anywhere in the code. With the pool empty (Hypothesis's
    own constants stay), a search is a function of its arguments. The cache of what each draw may take from the
    pools is emptied before (it may hold local constants) and after (it holds none). A Hypothesis without the
    pool is left as it is."""
    try:
        from hypothesis.internal.conjecture import providers
        from hypothesis.internal.constants_ast import Constants
    except ImportError:  # a Hypothesis older than the pool
        yield
        return
    local_constants = getattr(providers, "_get_local_constants", None)
    cache = getattr(providers, "CONSTANTS_CACHE", None)
    if local_constants is None or cache is None:
        yield
        return
    none = Constants()
    providers._get_local_constants = lambda: none
    cache.cache.clear()
    try:
        yield
    finally:
        providers._get_local_constants = local_constants
        cache.cache.clear()


def _round(machine: type[Any], chosen: settings, number: int) -> None:
    """One round of examples, generated from its own seed (the round's number): derandomized rounds would draw the
    same examples each time, and one found early (a fault every seeded create shows) would mask the rest."""
    test = get_state_machine_test(machine, settings=chosen)
    seed(number)(test)()


def search(exchange: Exchange, testee: Answer, *, examples: int | None, profile: str | None, deadline: float | None, progress: Callable[[str, int, int], None] | None = None, seed: int = 0, shard: tuple[int, int] | None = None) -> Search:
    """Every divergence family the machine finds before `deadline`, each minimized and followed.

    Round `number` is generated from the seed `seed + number` (`--seed`); with `shard` (I, N), only the rounds
    whose number is I-1 modulo N run, so the N shards of a run search, between them, the rounds it searches."""
    extensions = testee.get("extensions")
    listed = extensions if isinstance(extensions, list) else []
    machine = testee_machine(exchange, hooks=HOOKS in listed, inprocess=INPROCESS in listed, deadline=deadline)
    result = Search()
    exchange.collecting, exchange.collected = True, []
    budget = settings(machine_settings(examples, profile)).max_examples
    rounds = max(1, -(-budget // ROUND))
    try:
        with hypothesis_home_for_a_search(), no_local_constants_for_a_search():
            for number in range(rounds):
                if progress is not None:
                    progress(f"machine: round {number + 1} of {rounds}", number, rounds)
                if exchange.past_deadline or exchange.gave_up or (deadline is not None and time.monotonic() > deadline):
                    break
                if shard is not None and number % shard[1] != shard[0] - 1:
                    continue
                _round(machine, machine_settings(min(ROUND, budget - number * ROUND), profile), seed + number)
    except SearchOver as over:  # the budget is spent (no `why`), or the run's deadline passed mid-example
        result.stopped = over.why
    except Exception as error:  # the machine's own fault: what was found is kept
        result.stopped = f"the machine stopped: {type(error).__name__}: {str(error)[:200]}"
    finally:
        result.examples = machine.examples
        exchange.collecting = False
    result.found = _minimized(exchange, exchange.collected[:MAX_FAMILIES], deadline, progress)
    return result


def _minimized(exchange: Exchange, collected: list[Divergence], deadline: float | None,
               progress: Callable[[str, int, int], None] | None) -> list[Divergence]:
    """Each family found minimized to its root cause, once: two found apart that minimize to one family are one.

    Listed families are minimized too: a divergence is met under the name of the first rule the reference checks
    and minimizes to its root cause's, so a run that skipped the listed ones would name (and find) other families
    than the run the list was written from, and judge its entries stale."""
    families: set[str] = set()
    out: list[Divergence] = []
    for number, found in enumerate(collected):
        if progress is not None:
            progress(f"minimizing family {number + 1} of {len(collected)}", number, len(collected))
        if exchange.past_deadline:
            out.append(found)  # found, not minimized: the deadline is the run's, the finding is kept
            continue
        share = None if deadline is None else time.monotonic() + max(1.0, (deadline - time.monotonic()) * MINIMIZE_SHARE)
        best = minimize(exchange, found, deadline=share)
        if best.family in families:
            continue
        families.add(best.family)
        out.append(best)
    return out
