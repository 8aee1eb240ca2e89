"""The implementations a testee or a benchmark can run, by name.

`model` is the naive reference; `live` the incremental store. Other modules (the planted-bug
variants of the oracle's self-test) register theirs with `register`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

SessionFactory = Callable[..., Any]
"""`create(session_id, seed=None, header=None, *, clock=..., validators=(), observers=())`."""

_FACTORIES: dict[str, str] = {
    "model": "sessionspec.model:Session.create",
    "live": "sessionspec.live:Session.create",
}


def register(name: str, target: str) -> None:
    """Register `module:attr.path` as the factory of implementation `name`."""
    _FACTORIES[name] = target


def names() -> list[str]:
    return sorted(_FACTORIES)


def factory(name: str) -> SessionFactory:
    """The `create` function of the named implementation (imported on first use)."""
    if name.startswith("planted:"):
        importlib.import_module("sessionspec.testing.planted")
    target = _FACTORIES.get(name)
    if target is None:
        raise KeyError(f"unknown implementation {name!r}; known: {', '.join(names())}")
    module_name, _, path = target.partition(":")
    value: Any = importlib.import_module(module_name)
    for part in path.split("."):
        value = getattr(value, part)
    return value  # type: ignore[no-any-return]
