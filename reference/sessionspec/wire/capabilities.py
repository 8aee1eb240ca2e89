"""What a testee declares it implements (spec/10, "Capabilities"), and what a request needs of it.

A conformance harness that counts "not built yet" as "built wrong" buries what a new implementer
should do next under hundreds of failures (a starter testee of `hello`, `create` and log-only
`append` once met 271 of them). So `hello` declares the testee's ops, extensions and storage
backends, the runner sends it only what it declared, and what needs anything else is **not
applicable**: counted apart, never a failure. What is declared is held to every rule: a declared op
answered `unsupported` is a divergence of its own (SESSION-CONFORMANCE-PROTOCOL.9).

The core ops (`hello`, `create`, `append`, `snapshot`) are not optional: every vector ends with a
snapshot and the machine compares one after every step, so a testee without one of them is told
so first, as the one thing to implement next, and nothing that needs it is judged.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final

from sessionspec.wire.compare import op_of
from sessionspec.wire.protocol import DECLARED, HOOK_VALUES, HOOKS, INPROCESS, OPS, Answer
from sessionspec.wire.storageops import BACKENDS, STORAGE_OPS

NOT_APPLICABLE: Final = "not applicable"
"""The status of a case that needs what the testee does not declare: neither passed nor failed (the runner, the
storage phase and the report share it)."""
CORE_OPS: Final = ("hello", "create", "append", "snapshot")
"""The ops every testee implements: nothing can be compared without them (spec/10, "Capabilities")."""
SCP0_OPS: Final = frozenset(OPS)
"""What a hello without `ops` is read as declaring: the six ops SCP v0 was fixed with."""
INPROCESS_OPS: Final = frozenset({"x-rebuild", "x-mutate", "x-append"})


__all__ = ["BACKENDS", "CORE_OPS", "DECLARED", "NOT_APPLICABLE", "STORAGE_OPS", "Capabilities", "learnable"]


def learnable(capabilities: Capabilities, op: str | None) -> bool:
    """Whether an `unsupported` answer to `op` shows the op not implemented, rather than breaking a rule: so for a
    testee that lists no ops, for every op but those whose requests vary in what they need (a create with a header,
    an append: their `unsupported` is one feature's, and a divergence of its own)."""
    return not capabilities.listed and op is not None and op not in ("hello", "create", "append")


def _names(value: Any) -> frozenset[str] | None:
    """A declared list of names, or None when hello does not carry one (or carries something else)."""
    if not isinstance(value, list):
        return None
    return frozenset(item for item in value if isinstance(item, str))


def _armed(request: dict[str, Any]) -> bool:
    """Whether an append arms an x-hooks hook with a value the extension defines (a key or value nobody offers is
    refused `unsupported` by every testee, with or without the extension: SESSION-CONFORMANCE-PROTOCOL.6)."""
    for key, value in request.items():
        if key == "x-time":
            return True
        allowed = HOOK_VALUES.get(key)
        if allowed is not None and value in allowed:
            return True
    return False


@dataclass(frozen=True)
class Capabilities:
    """The ops, extensions and storage backends a testee's hello declares."""

    ops: frozenset[str]
    extensions: frozenset[str]
    storage: frozenset[str]
    listed: bool
    """Whether hello listed its ops; a testee that does not is read as declaring SCP v0's six."""

    @classmethod
    def declared(cls, hello: Answer) -> Capabilities:
        ops = _names(hello.get("ops"))
        return cls(SCP0_OPS if ops is None else ops | {"hello"}, _names(hello.get("extensions")) or frozenset(),
                   _names(hello.get("storage")) or frozenset(), ops is not None)

    @classmethod
    def everything(cls) -> Capabilities:
        """What the reference implements: every op, extension and backend (in-process replays and our machines)."""
        return cls(frozenset({*OPS, *INPROCESS_OPS, *STORAGE_OPS}), frozenset({HOOKS, INPROCESS}),
                   frozenset(BACKENDS), True)

    @property
    def missing_core(self) -> tuple[str, ...]:
        """The core ops the testee does not declare, in the order to implement them."""
        return tuple(op for op in CORE_OPS if op not in self.ops)

    def owes(self, op: str | None) -> bool:
        """Whether an `unsupported` answer to `op` breaks the declaration (SESSION-CONFORMANCE-PROTOCOL.9): the testee
        listed the op, and the op is one whose requests all need the same (not a create or an append, whose
        `unsupported` is about what one of them carries: a header, a surface message)."""
        return self.listed and op is not None and op in self.ops and op not in ("hello", "create", "append")

    def without(self, op: str) -> Capabilities:
        """The same declaration less `op`: what a testee that did not list its ops showed it does not implement."""
        return Capabilities(self.ops - {op}, self.extensions, self.storage, self.listed)

    def needs(self, request: Any) -> str | None:
        """What `request` needs that the testee does not declare (an op, an extension, a storage backend), or None.

        A request whose op or extension nobody offers needs nothing: every testee must refuse it
        (SESSION-CONFORMANCE-PROTOCOL.2, .6), so it is always sent."""
        if isinstance(request, str):  # a raw line: what it needs if it is a request, else nothing (it must be answered)
            try:
                request = json.loads(request)
            except (ValueError, RecursionError):
                return None
        op = op_of(request)
        if op is None or not isinstance(request, dict):
            return None
        if op in INPROCESS_OPS:
            return None if INPROCESS in self.extensions else INPROCESS
        if op == "append" and _armed(request) and HOOKS not in self.extensions:
            return HOOKS
        if op in STORAGE_OPS:
            backend = request.get("backend")
            if not self.storage:
                return "storage"
            if isinstance(backend, str) and backend not in self.storage and backend in BACKENDS:
                return f"storage {backend}"
            return None
        if op in SCP0_OPS and op not in self.ops:
            return op
        return None

    def first_need(self, requests: Iterable[Any]) -> str | None:
        """The first thing a sequence of requests needs that the testee does not declare."""
        for request in requests:
            need = self.needs(request)
            if need is not None:
                return need
        return None

    def to_json(self) -> dict[str, Any]:
        return {"ops": sorted(self.ops), "extensions": sorted(self.extensions), "storage": sorted(self.storage),
                "listed": self.listed}
