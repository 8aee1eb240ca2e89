"""The Informal Trace Format export of a violation (https://apalache-mc.org/docs/adr/015adr-trace.html)."""

from __future__ import annotations

from typing import Any

from sessionspec import model
from sessionspec.jsonvalue import Json, thaw
from sessionspec.testing import implementations as impls
from sessionspec.testing.explore.report import Violation
from sessionspec.testing.explore.sessions import append, create


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


def to_itf(violation: Violation, impl: str = "live") -> dict[str, Json]:
    """The violation's trace as an ITF document (https://apalache-mc.org/docs/adr/015adr-trace.html).

    One ITF state per request: the reference model's log, surface and first live seq after it,
    the implementation's surface beside it, and what each side did.
    """
    factory = impls.factory(impl)
    reference: Any = None
    actual: Any = None
    states: list[Json] = []
    for index, request in enumerate(violation.trace):
        if request["op"] == "create":
            ref_outcome, impl_outcome = "accepted", "accepted"
            reference = create(model.Session.create, request["seed"])
            try:
                actual = create(factory, request["seed"])
            except Exception as error:
                impl_outcome = f"raised {error!r}"
        else:
            ref_outcome = append(reference, request).describe()
            impl_outcome = append(actual, request).describe()
        surface = reference.surface
        impl_surface = actual.surface
        states.append({
            "#meta": {"index": index},
            "request": _itf_value(request),
            "events": _itf_value([thaw(event.to_json()) for event in reference.events]),
            "nodes": list(surface.nodes),
            "replaceGeneration": surface.replace_generation,
            "firstLiveSeq": reference.first_live_seq,
            "implNodes": list(impl_surface.nodes),
            "implReplaceGeneration": impl_surface.replace_generation,
            "modelOutcome": ref_outcome,
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
