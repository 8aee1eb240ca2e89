"""The icontract contracts of model.Session are live: break what they state and they fire.

The reference model is trusted because its contracts restate the spec; a contract that is
disabled, or that cannot fail, states nothing. Each test plants one defect in the model's
namespace and checks the contract that names it catches it.
"""

from __future__ import annotations

from typing import Any

import icontract
import pytest
from sessionspec import model, transaction
from sessionspec.envelope import Event
from sessionspec.jsonvalue import FrozenDict, FrozenList
from sessionspec.surface import Fold, fold

USER = {"id": "u1", "role": "user", "source": {"kind": "user"}, "content": []}


def two_messages() -> model.Session:
    session = model.Session.create("s", clock=lambda: 1)
    session.append("turn/start", {"turn": 1})
    session.append("user/message", USER, surface_op="append")
    return session


def test_contracts_are_enabled_by_default() -> None:
    assert model.CONTRACTS, "run the tests without SESSIONSPEC_CONTRACTS=0"


def test_a_fold_that_repeats_a_node_breaks_the_surface_contract(monkeypatch: pytest.MonkeyPatch) -> None:
    """'nodes are unique surface events of this log' (SESSION-SURFACE-REPLACE.3)."""
    session = two_messages()

    def broken_fold(events: Any) -> Fold:
        real = fold(events)
        return Fold(FrozenList([*real.nodes, *real.nodes]), real.replacements)

    monkeypatch.setattr(model, "fold", broken_fold)
    with pytest.raises(icontract.ViolationError, match="nodes are unique surface events"):
        session.append("turn/end", {"turn": 1})


def test_a_fold_that_puts_a_log_only_event_on_the_surface_breaks_the_contract(monkeypatch: pytest.MonkeyPatch) -> None:
    session = two_messages()
    monkeypatch.setattr(model, "fold", lambda events: Fold(FrozenList([0]), ()))
    with pytest.raises(icontract.ViolationError, match="nodes are unique surface events"):
        session.append("turn/end", {"turn": 1})


def test_an_append_that_rewrites_history_breaks_append_only(monkeypatch: pytest.MonkeyPatch) -> None:
    session = two_messages()
    real = model.Session._append

    def rewriting(self: model.Session, *args: Any) -> Event:
        event = real(self, *args)
        self._log[0] = self._log[0].replace_seq(0, time=999)
        return event

    monkeypatch.setattr(model.Session, "_append", rewriting)
    with pytest.raises(icontract.ViolationError, match="append only appends"):
        session.append("turn/end", {"turn": 1})


def test_returning_another_event_breaks_seq_is_the_log_position(monkeypatch: pytest.MonkeyPatch) -> None:
    session = two_messages()
    real = model.Session._append

    def lying(self: model.Session, *args: Any) -> Event:
        event = real(self, *args)
        return event.replace_seq(event.seq + 1)

    monkeypatch.setattr(model.Session, "_append", lying)
    with pytest.raises(icontract.ViolationError, match="seq is the log position"):
        session.append("turn/end", {"turn": 1})


def test_messages_that_do_not_follow_the_surface_break_the_contract(monkeypatch: pytest.MonkeyPatch) -> None:
    """'messages follow the surface' (SESSION-DERIVED-CACHE.1)."""
    session = two_messages()
    monkeypatch.setattr(model.Session, "derive_messages", lambda self: FrozenList())
    with pytest.raises(icontract.ViolationError, match="messages follow the surface"):
        session.append("turn/end", {"turn": 1})


def test_a_rejection_that_changes_the_session_breaks_unchanged_on_rejection(monkeypatch: pytest.MonkeyPatch) -> None:
    session = two_messages()
    real = model.Session._candidate

    def leaky(self: model.Session, *args: Any) -> Event:
        self._log.append(Event("x/leak", len(self._log), 0, FrozenDict()))
        return real(self, *args)

    monkeypatch.setattr(model.Session, "_candidate", leaky)
    with pytest.raises(AssertionError, match="a rejected append changed the session"):
        session.append("", {})


def test_a_seed_without_its_marker_breaks_the_create_contract(monkeypatch: pytest.MonkeyPatch) -> None:
    """'a seeded log ends in the marker' (SESSION-SEED-ACCEPTANCE.3)."""
    monkeypatch.setattr(transaction, "Event", lambda type, seq, time, data: Event("x/not-a-marker", seq, time, data))
    with pytest.raises(icontract.ViolationError, match="a seeded log ends in the marker"):
        model.Session.create("s", seed=[], clock=lambda: 1)


def test_a_wrong_first_live_seq_breaks_the_create_contract(monkeypatch: pytest.MonkeyPatch) -> None:
    """'first_live_seq is the seed length' (SESSION-SEED-ACCEPTANCE.4)."""
    monkeypatch.setattr(model.Session, "first_live_seq", property(lambda self: self._first_live_seq + 1))
    with pytest.raises(icontract.ViolationError, match="first_live_seq is the seed length"):
        model.Session.create("s", seed=[], clock=lambda: 1)


def test_a_fresh_session_with_events_breaks_the_create_contract(monkeypatch: pytest.MonkeyPatch) -> None:
    ghost = Event("turn/start", 0, 0, FrozenDict())
    monkeypatch.setattr(model.Session, "events", property(lambda self: FrozenList([*self._log, ghost])))
    with pytest.raises(icontract.ViolationError, match="a fresh session has no events"):
        model.Session.create("s", clock=lambda: 1)
