"""A violation's requests leave the explorer two ways: as a trace file, and in the Informal Trace Format.

`write_trace` writes a violation's trace with `conformance.trace.write_trace`, as `conform` and the
machine write theirs: the one trace format, under a content-addressed name, which `sessionspec
replay FILE` runs through the one executor against the model (or `-- TESTEE` against any testee
offering x-hooks). `to_itf` writes the same
requests as ITF (https://apalache-mc.org/docs/adr/015adr-trace.html) for TLA+ and Quint tooling.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sessionspec import model
from sessionspec.jsonvalue import Json, thaw
from sessionspec.testing import implementations as impls
from sessionspec.testing.explore.alphabet import Request
from sessionspec.testing.explore.report import Violation
from sessionspec.testing.explore.sessions import NestedAppend, append, create
from sessionspec.wire import trace as traces


def to_trace(violation: Violation, impl: str) -> traces.Trace:
    """The requests that reproduce `violation`, found against `impl`, as a trace of the one format."""
    return traces.Trace(list(violation.requests), source="explore", id=f"explore-{impl}-{violation.invariant}",
                        implementation=impl, notes={"invariant": violation.invariant, "why": violation.message,
                                                    "depth": violation.depth, "steps": violation.labels})


def write_trace(violation: Violation, impl: str, directory: Path | None = None) -> Path:
    """Write `violation`'s trace in `directory` (default: $SESSIONSPEC_TRACE_DIR or the temp dir); its path."""
    return traces.write_trace(to_trace(violation, impl), directory)


def _itf_value(value: Json) -> Json:
    """A JSON value in ITF: records stay objects, arrays are sequences; null and floats have no ITF form."""
    if value is None or isinstance(value, float):
        return {"#unserializable": repr(value)}
    if isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return value if abs(value) < 2**53 else {"#bigint": str(value)}
    if isinstance(value, dict):
        return {key: _itf_value(child) for key, child in value.items()}
    return [_itf_value(child) for child in value]


def _run(factory: Any, session: Any, request: Request) -> tuple[Any, str]:
    """The session after `request`, and what it did with it."""
    if request["op"] == "create":
        try:
            return create(factory, request["seed"], [NestedAppend()]), "accepted"
        except Exception as error:
            return None, f"raised {error!r}"
    if request["op"] == "snapshot":
        return session, "accepted"
    return session, append(session, request).describe()


def _surface(session: Any) -> tuple[list[int], int]:
    try:
        surface = session.surface
        return list(surface.nodes), surface.replace_generation
    except Exception:
        return [], -1


def to_itf(violation: Violation, impl: str = "live") -> dict[str, Json]:
    """The violation's requests as an ITF document.

    One ITF state per request: the reference model's log, surface and first live seq after it,
    the implementation's surface beside it (`[]` and -1 when it has none), and what each side did.
    """
    factory = impls.factory(impl)
    reference: Any = None
    actual: Any = None
    states: list[Json] = []
    for index, request in enumerate(violation.requests):
        reference, model_outcome = _run(model.Session.create, reference, request)
        actual, impl_outcome = _run(factory, actual, request)
        nodes, generation = _surface(reference)
        impl_nodes, impl_generation = _surface(actual)
        states.append({
            "#meta": {"index": index},
            "request": _itf_value(request),
            "events": _itf_value([thaw(event.to_json()) for event in reference.events]),
            "nodes": nodes,
            "replaceGeneration": generation,
            "firstLiveSeq": reference.first_live_seq,
            "implNodes": impl_nodes,
            "implReplaceGeneration": impl_generation,
            "modelOutcome": model_outcome,
            "implOutcome": impl_outcome,
        })
    return {
        "#meta": {"format": "ITF", "format-description": "https://apalache-mc.org/docs/adr/015adr-trace.html",
                  "source": f"sessionspec explore --impl {impl}",
                  "description": f"{violation.invariant}: {violation.message}"},
        "vars": ["request", "events", "nodes", "replaceGeneration", "firstLiveSeq", "implNodes",
                 "implReplaceGeneration", "modelOutcome", "implOutcome"],
        "states": states,
    }
