"""The implementations a testee, a machine, the explorer or a benchmark can name.

`model` is the naive reference, `live` the incremental store, and `planted:NAME` each planted
bug of `sessionspec.testing.planted` (the oracle's self-test). A name resolves to the
implementation's `create`, whose signature is `model.Session.create`'s.
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
    if found is None:
        raise KeyError(f"unknown implementation {name!r}; known: {', '.join(names())}")
    return found
