"""Running requests on sessions: outcomes, the explorer's x-hooks, and cheap copies of a session."""

from __future__ import annotations

import io
import pickle
import types
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from sessionspec import model
from sessionspec.envelope import Event, append_request_parts
from sessionspec.errors import SpecViolation
from sessionspec.jsonvalue import FrozenDict, FrozenList, Json
from sessionspec.testing.explore.alphabet import SESSION_ID, Request


def constant_clock() -> int:
    """A constant clock: time orders nothing, and a constant keeps equal states equal."""
    return 0


class Outcome(NamedTuple):
    """What one side did with a request: accepted, rejected with a rule, or crashed."""

    accepted: bool
    rule: str | None = None
    crash: str | None = None

    def describe(self) -> str:
        if self.crash is not None:
            return f"crashed: {self.crash}"
        return "accepted" if self.accepted else f"rejected ({self.rule})"


ACCEPTED = Outcome(True)
NESTED_REJECTED = Outcome(False, "SESSION-APPEND-COMMIT.4")
NESTED: Request = {"op": "append", "type": "turn/start", "data": {"turn": 99}}
"""What the reentrant observer tries to append: the protocol testee's own x-hooks request, refused only because it nests."""


class _Armed:
    """The x-hooks of the append in progress, armed for that one append as the protocol's testee arms them."""

    __slots__ = ("reenter", "veto")

    def __init__(self) -> None:
        self.veto = False
        self.reenter = False


_ARMED = _Armed()


def veto(session: Any, candidate: Event) -> None:
    """The precommit validator of every session the explorer makes: `"x-validator": "raise"` vetoes that append.

    A vetoed event passed every check and was planned; the implementation must drop the plan
    with it (SESSION-APPEND-COMMIT.2).
    """
    if _ARMED.veto:
        raise RuntimeError("vetoed by the x-validator hook")


class NestedAppend:
    """The postcommit observer of every implementation session: `"x-observer": "reentrant"` makes it try one nested append.

    SESSION-APPEND-COMMIT.4: an append made from inside another must be rejected, whatever the
    state; the explorer checks what this observer saw after every accepted append. It is shared,
    not copied, when a session is copied.
    """

    def __init__(self) -> None:
        self.outcomes: list[Outcome] = []

    def __call__(self, session: Any, event: Event) -> None:
        if _ARMED.reenter:
            self.outcomes.append(append(session, _NESTED_CALL))  # NESTED carries no hook: it cannot nest again


def create(factory: Callable[..., Any], seed: Json, observers: Sequence[Callable[[Any, Event], object]] = ()) -> Any:
    return factory(SESSION_ID, seed=seed, header=None, clock=constant_clock, validators=[veto], observers=observers)


class Call(NamedTuple):
    """An append request made ready to run: its body (the request without its x-hooks) and the hooks it arms."""

    body: Request
    veto: bool
    reenter: bool


def prepare(request: Request) -> Call:
    return Call({key: value for key, value in request.items() if not key.startswith("x-")},
                request.get("x-validator") == "raise", request.get("x-observer") == "reentrant")


_NESTED_CALL = prepare(NESTED)
"""NESTED made ready once: the observer tries it after every accepted append (the letters' requests are shared too)."""


def _hooked(call: Callable[[Request], object], prepared: Call) -> Outcome:
    """`call(prepared.body)` with the request's hooks armed while it runs, as an outcome."""
    armed = _ARMED.veto, _ARMED.reenter
    _ARMED.veto, _ARMED.reenter = prepared.veto, prepared.reenter
    try:
        call(prepared.body)
    except SpecViolation as violation:
        return Outcome(False, violation.rule)
    except Exception as error:
        return Outcome(False, crash=repr(error))
    finally:
        _ARMED.veto, _ARMED.reenter = armed
    return ACCEPTED


def append(session: Any, request: Request | Call) -> Outcome:
    """One append request on any implementation, its x-hooks honoured (`request` may be `prepare`d already)."""
    return _hooked(session.append_request, request if isinstance(request, Call) else prepare(request))


def model_append(reference: model.Session, request: Request) -> Outcome:
    """An append on the reference model without its contracts.

    The contracts hold the model to itself, and the model's own tests run them; here the model is
    the oracle, and its contracts (a refold and two projections per append) were a third of the
    model's cost per append.
    """
    return _hooked(lambda body: reference._append(*append_request_parts(body)), prepare(request))


# --- copies ------------------------------------------------------------------------------------

_SHARED = (Event, FrozenDict, FrozenList, NestedAppend, type, types.FunctionType, types.BuiltinFunctionType)
"""What a copy shares with its original: immutable values (events, frozen JSON), the one observer, and classes
and functions. Pickle would look a class up by its name on every unpickling, half of an unpickling's time."""


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


Frozen = tuple[bytes, list[object]]
"""A pickled session and the shared objects its pickle refers to."""


def freeze(session: Any) -> Frozen:
    shared: list[object] = []
    out = io.BytesIO()
    _Pickler(out, shared).dump(session)
    return out.getvalue(), shared


def thaw_frozen(frozen: Frozen) -> Any:
    """A new, independent session from a frozen one; each call makes another.

    The shared objects are found by `list.__getitem__`, in C: one unpickling per accepted letter.
    """
    data, shared = frozen
    unpickler = pickle.Unpickler(io.BytesIO(data))
    unpickler.persistent_load = shared.__getitem__  # type: ignore[method-assign]  # the attribute pickle documents
    return unpickler.load()


def clone(session: Any) -> Any:
    """An independent copy of a session: its own lists and caches, sharing events, frozen JSON and functions."""
    return thaw_frozen(freeze(session))
