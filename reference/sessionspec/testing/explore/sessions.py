"""Running requests on sessions: outcomes, the explorer's hooks, and cheap copies of a session."""

from __future__ import annotations

import io
import pickle
import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sessionspec import model
from sessionspec.envelope import Event, append_request_parts
from sessionspec.errors import SpecViolation
from sessionspec.jsonvalue import FrozenDict, FrozenList, Json
from sessionspec.testing.explore.alphabet import SESSION_ID, Request


def constant_clock() -> int:
    """A constant clock: time orders nothing, and a constant keeps equal states equal."""
    return 0

@dataclass(frozen=True, slots=True)
class Outcome:
    """What one side did with a request: accepted, rejected with a rule, or crashed."""

    accepted: bool
    rule: str | None = None
    crash: str | None = None

    def describe(self) -> str:
        if self.crash is not None:
            return f"crashed: {self.crash}"
        return "accepted" if self.accepted else f"rejected ({self.rule})"


NESTED_REJECTED = Outcome(False, "SESSION-APPEND-COMMIT.4")


def veto(session: Any, candidate: Event) -> None:
    """The explorer's one precommit validator: it vetoes any event whose data says `"veto": true`.

    A vetoed event passed every check and was planned; the implementation must drop the plan
    with it (SESSION-APPEND-COMMIT.2). The protocol has no validators, so a testee replaying a
    trace accepts such an append; the explorer's own replay does not.
    """
    if isinstance(candidate.data, dict) and candidate.data.get("veto") is True:
        raise RuntimeError("vetoed by the explorer")


def create(factory: Callable[..., Any], seed: Json, observers: Sequence[Callable[[Any, Event], object]] = ()) -> Any:
    return factory(SESSION_ID, seed=seed, header=None, clock=constant_clock, validators=[veto], observers=observers)


def append(session: Any, request: Request) -> Outcome:
    try:
        session.append_request(request)
    except SpecViolation as violation:
        return Outcome(False, violation.rule)
    except Exception as error:
        return Outcome(False, crash=repr(error))
    return Outcome(True)


def model_append(reference: model.Session, request: Request) -> Outcome:
    """An append on the reference model without its contracts.

    The contracts hold the model to itself, and the model's own tests run them; here the model is
    the oracle, and its contracts (a refold and two projections per append) were a third of the
    model's cost per append.
    """
    try:
        reference._append(*append_request_parts(request))
    except SpecViolation as violation:
        return Outcome(False, violation.rule)
    except Exception as error:
        return Outcome(False, crash=repr(error))
    return Outcome(True)


class NestedAppend:
    """A postcommit observer on every session of the implementation: it tries one nested append.

    SESSION-APPEND-COMMIT.4: an append made from inside another must be rejected, whatever the
    state; the explorer checks what this observer saw after every accepted append. It is shared,
    not copied, when a session is copied.
    """

    def __init__(self) -> None:
        self.request: Request = {"op": "append", "type": "turn/start", "data": {"turn": 1}}
        self.outcomes: list[Outcome] = []
        self.armed = True

    def __call__(self, session: Any, event: Event) -> None:
        if not self.armed:
            return
        self.armed = False
        try:
            self.outcomes.append(append(session, self.request))
        finally:
            self.armed = True


_SHARED = (Event, FrozenDict, FrozenList, NestedAppend, types.FunctionType, types.BuiltinFunctionType)


class _Pickler(pickle.Pickler):
    """Pickles a session by value, except what is immutable or shared: those travel by reference."""

    def __init__(self, out: io.BytesIO, shared: list[object]) -> None:
        super().__init__(out, protocol=pickle.HIGHEST_PROTOCOL)
        self.shared = shared

    def persistent_id(self, obj: object) -> int | None:
        if isinstance(obj, _SHARED):
            self.shared.append(obj)
            return len(self.shared) - 1
        return None


class _Unpickler(pickle.Unpickler):
    def __init__(self, data: io.BytesIO, shared: list[object]) -> None:
        super().__init__(data)
        self.shared = shared

    def persistent_load(self, pid: Any) -> object:
        return self.shared[pid]


Frozen = tuple[bytes, list[object]]
"""A pickled session and the shared objects its pickle refers to."""


def freeze(session: Any) -> Frozen:
    shared: list[object] = []
    out = io.BytesIO()
    _Pickler(out, shared).dump(session)
    return out.getvalue(), shared


def thaw_frozen(frozen: Frozen) -> Any:
    """A new, independent session from a frozen one; each call makes another."""
    data, shared = frozen
    return _Unpickler(io.BytesIO(data), shared).load()


def clone(session: Any) -> Any:
    """An independent copy of a session: its own lists and caches, sharing events, frozen JSON and functions."""
    return thaw_frozen(freeze(session))
