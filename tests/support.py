"""What the per-chapter tests share: the observable state of a session, and "rejected, nothing changed"."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import wire
from sessionspec.errors import SpecViolation
from sessionspec.jsonvalue import thaw
from sessionspec.resources import shipped
from sessionspec.rules import RULES


def state(session: Any) -> Any:
    """Everything a caller can observe: events, surface, messages, transcript, seqs and header."""
    return ([e.to_json() for e in session.events], list(session.surface.nodes), session.surface.replace_generation,
            thaw(session.derive_messages()), [e.seq for e in session.transcript()], session.seq,
            session.first_live_seq, thaw(session.header))


def rejects(session: Any, rule: str, call: Callable[[], object]) -> SpecViolation:
    """`call` is rejected with `rule` and its registered kind; the session is exactly as before."""
    before = state(session)
    with pytest.raises(SpecViolation) as info:
        call()
    assert info.value.rule == rule, str(info.value)
    assert info.value.kind is RULES[rule].kind
    assert state(session) == before
    return info.value


def seed_rejects(create: Callable[..., Any], seed: Any, rule: str, index: int | None) -> SpecViolation:
    """Seeding `seed` is rejected with `rule`, its kind and the seed `index`; the caller's seed is left as it was."""
    before = copy.deepcopy(seed)
    with pytest.raises(SpecViolation) as info:
        create("s", seed=seed, clock=lambda: 1)
    assert info.value.rule == rule, str(info.value)
    assert info.value.kind is RULES[rule].kind
    assert info.value.index == index or wire.read_as_text(info.value)
    assert seed == before
    return info.value


@cache
def report_validator() -> jsonschema.Draft202012Validator:
    """The published report schema (spec/schema/report.schema.json), itself checked against draft 2020-12."""
    schema = json.loads((shipped("schema") / "report.schema.json").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def valid_report(path: Path) -> Any:
    """A `conform --json` (or `merge --json`) report read from `path`, after checking it against the published schema:
    every report a test writes goes through here, so the schema and the writer cannot drift apart."""
    data = json.loads(path.read_text(encoding="utf-8"))
    errors = sorted(report_validator().iter_errors(data), key=lambda error: list(error.absolute_path))
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message[:300]}" for e in errors[:5])
    return data
