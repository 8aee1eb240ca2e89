"""The implementations a testee, a machine, the explorer or a benchmark can name.

`model` is the naive reference, `live` the incremental store, and `planted:NAME` each planted
bug of `sessionspec.testing.planted` (the oracle's self-test); `planted:A+B+C` is one store with
the bugs A, B and C at once (their classes combined), which the runner must report as three
families in one run. A name resolves to the implementation's `create`, whose signature is
`model.Session.create`'s.

Each is imported when it is named, not before: `sessionspec serve --impl live` loads the store
alone, neither the reference model (and its contracts) nor the planted bugs.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any, Final

SessionFactory = Callable[..., Any]
"""`create(session_id, seed=None, header=None, *, clock=..., validators=(), observers=())`."""

PLANTED_MODULE: Final = "sessionspec.testing.planted"
STORAGE_PLANTED_MODULE: Final = "sessionspec.testing.planted_storage"
"""The planted storage bugs (a reader or writer wrong in one way), named `planted:<name>` like the session bugs."""
BUILT_IN: Final = {"model": "sessionspec.model", "live": "sessionspec.live"}
"""Each built-in implementation's module; its `Session.create` is the factory."""
VARIANTS: Final = {"planted:seeds-only": ("sessionspec.testing.seedsonly", "SeedsOnly")}
"""Variants that are not bugs: `seeds-only` keeps the seeds' rules and skips this spec's additions (the levels'
self-test: it must get no required divergence)."""


def _planted() -> dict[str, Any]:
    planted: dict[str, Any] = {**importlib.import_module(PLANTED_MODULE).PLANTED,
                               **importlib.import_module(STORAGE_PLANTED_MODULE).STORAGE_PLANTED}
    return planted


def names() -> list[str]:
    return sorted([*BUILT_IN, *VARIANTS, *(f"planted:{name}" for name in _planted())])


def known(name: str) -> bool:
    """Whether `name` names an implementation (a combination `planted:A+B` included)."""
    try:
        factory(name)
    except KeyError:
        return False
    return True


def factory(name: str) -> SessionFactory:
    """The `create` function of the named implementation."""
    module = BUILT_IN.get(name)
    if module is not None:
        create: SessionFactory = importlib.import_module(module).Session.create
        return create
    if name in VARIANTS:
        where, attribute = VARIANTS[name]
        variant: SessionFactory = getattr(importlib.import_module(where), attribute).create
        return variant
    if name.startswith("planted:"):
        bugs = name.removeprefix("planted:").split("+")
        planted = _planted()
        if len(bugs) == 1 and bugs[0] in planted:
            single: SessionFactory = planted[bugs[0]].create
            return single
        found = _combined(planted, bugs) if len(bugs) > 1 else None
        if found is not None:
            return found
    raise KeyError(f"unknown implementation {name!r}; known: {', '.join(names())}, and planted:A+B for several")


def _combined(planted: dict[str, Any], bugs: list[str]) -> SessionFactory | None:
    """One store with several planted bugs: their classes combined in the order named (None if one is unknown)."""
    if not all(bug in planted for bug in bugs) or len(set(bugs)) != len(bugs):
        return None
    variant: Any = type(f"Planted[{'+'.join(bugs)}]", tuple(planted[bug] for bug in bugs),
                        {"__slots__": (), "__module__": __name__})
    create: SessionFactory = variant.create
    return create
