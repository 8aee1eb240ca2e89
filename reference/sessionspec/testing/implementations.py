"""The implementations a testee, a machine, the explorer or a benchmark can name.

`model` is the naive reference, `live` the incremental store, and `planted:NAME` each planted
bug of `sessionspec.testing.planted` (the oracle's self-test); `planted:A+B+C` is one store with
the bugs A, B and C at once (their classes combined), which the runner must report as three
families in one run. A name resolves to the implementation's `create`, whose signature is
`model.Session.create`'s.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sessionspec import live, model
from sessionspec.testing.planted import PLANTED

SessionFactory = Callable[..., Any]
"""`create(session_id, seed=None, header=None, *, clock=..., validators=(), observers=())`."""

FACTORIES: dict[str, SessionFactory] = {
    "model": model.Session.create,
    "live": live.Session.create,
    **{f"planted:{name}": variant.create for name, variant in PLANTED.items()},
}


def names() -> list[str]:
    return sorted(FACTORIES)


def factory(name: str) -> SessionFactory:
    """The `create` function of the named implementation."""
    found = FACTORIES.get(name)
    if found is None and name.startswith("planted:") and "+" in name:
        found = _combined(name.removeprefix("planted:").split("+"))
    if found is None:
        raise KeyError(f"unknown implementation {name!r}; known: {', '.join(names())}, and planted:A+B for several")
    return found


def _combined(bugs: list[str]) -> SessionFactory | None:
    """One store with several planted bugs: their classes combined in the order named (None if one is unknown)."""
    if not all(bug in PLANTED for bug in bugs) or len(set(bugs)) != len(bugs):
        return None
    variant: Any = type(f"Planted[{'+'.join(bugs)}]", tuple(PLANTED[bug] for bug in bugs),
                        {"__slots__": (), "__module__": __name__})
    create: SessionFactory = variant.create
    return create
