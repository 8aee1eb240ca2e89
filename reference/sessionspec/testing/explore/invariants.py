"""The invariants checked on every distinct state the explorer reaches."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sessionspec.jsonvalue import FrozenList
from sessionspec.surface import fold
from sessionspec.testing.explore.observation import View


def same_views(reference: View, actual: View, session: Any) -> str | None:
    if reference == actual:
        return None
    for name in View._fields:
        if getattr(reference, name) != getattr(actual, name):
            return f"{name} differs: model {_show(getattr(reference, name))} != impl {_show(getattr(actual, name))}"
    return None


def _show(value: object) -> str:
    text = value.decode() if isinstance(value, bytes) else repr(value)
    return text if len(text) <= 300 else text[:300] + "..."


def _surface_is_own_fold(reference: View, actual: View, session: Any) -> str | None:
    """The surface is the fold of the implementation's own log.

    Implied when the logs are equal (the fold is a function of the log, and `impl-matches-model`
    has compared the surfaces): folded only when they differ.
    """
    if actual.events == reference.events:
        return None
    folded = fold(session.events).surface
    if tuple(folded.nodes) != actual.nodes or folded.replace_generation != actual.replace_generation:
        return f"surface {actual.nodes} is not the fold of its own log {tuple(folded.nodes)}"
    return None


def _nodes_are_unique_surface_events(reference: View, actual: View, session: Any) -> str | None:
    events = session.events
    if len(set(actual.nodes)) != len(actual.nodes):
        return f"surface nodes repeat: {actual.nodes}"
    stray = [n for n in actual.nodes if not 0 <= n < len(events) or events[n].surface_op is None]
    return f"surface nodes {stray} are not surface events of the log" if stray else None


_REFUSED = FrozenList.append
"""What a FrozenList's `append` is: `jsonvalue`'s refusal, which raises TypeError whatever it is given."""


def _returned_views_are_immutable(reference: View, actual: View, session: Any) -> str | None:
    """SESSION-IMMUTABILITY: the events, nodes and messages handed out cannot be changed by the caller.

    A FrozenList (the exact class, its `append` still the refusal) is known to refuse without
    trying: the try costs a raised TypeError per view, in every distinct state.
    """
    for name, value in (("events", session.events), ("surface nodes", session.surface.nodes),
                        ("derived messages", session.derive_messages())):
        if type(value) is FrozenList and FrozenList.append is _REFUSED:
            continue
        try:
            value.append(None)
        except (TypeError, AttributeError):
            continue
        return f"the returned {name} accepted a mutation"
    return None


Invariant = Callable[[View, View, Any], "str | None"]
INVARIANTS: tuple[tuple[str, Invariant], ...] = (
    ("impl-matches-model", same_views),
    ("surface-is-fold-of-log", _surface_is_own_fold),
    ("nodes-are-unique-surface-events", _nodes_are_unique_surface_events),
    ("returned-views-are-immutable", _returned_views_are_immutable),
)
"""Checked on every distinct state. Outcome agreement, unchanged-on-rejection, snapshot stability
and the nested-append guard are checked on every transition, `fresh-rebuild-agrees` on every
reseed transition."""


def check_state(reference: View, actual: View, session: Any) -> tuple[str, str] | None:
    for name, invariant in INVARIANTS:
        try:
            problem = invariant(reference, actual, session)
        except Exception as error:
            problem = f"raised {error!r}"
        if problem is not None:
            return name, problem
    return None
