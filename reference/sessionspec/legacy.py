"""The legacy import upgrades (SESSION-LEGACY-UPGRADE; upstream coordinator, notes §4.5).

Logs written before the react loop and before messages had identities are still on people's
disks. The upstream reads them by rewriting a closed list of old shapes into current ones on
load; we do the same, but every rewrite is reported, so an operator can see that the events a
checker validated are not byte for byte the ones on disk. An old shape that does not match the
closed list exactly is refused: guessing would invent history.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from sessionspec.envelope import APPEND, Event, Replace
from sessionspec.errors import Kind, SpecViolation
from sessionspec.jsonvalue import Json, is_nonempty_str, is_safe_int, snapshot, thaw
from sessionspec.preview import shown
from sessionspec.rules import check, define

TURN_START = define("SESSION-LEGACY-UPGRADE.1", Kind.ENVELOPE,
                    "a turn/start with a trigger is exactly {turn >= 1, trigger {kind}} and keeps {turn}")
TURN_END = define("SESSION-LEGACY-UPGRADE.2", Kind.ENVELOPE, "legacy turn/end reasons become current ones; malformed ones are refused")
STEERING = define("SESSION-LEGACY-UPGRADE.3", Kind.ENVELOPE, "a steering/message becomes a user/message")
PRE_IDENTITY = define("SESSION-LEGACY-UPGRADE.4", Kind.ENVELOPE,
                      "pre-identity message events gain the legacy message id and their role")
REPORTED = define("SESSION-LEGACY-UPGRADE.5", Kind.INTERNAL, "every upgrade applied on load is reported")
CURRENT = define("SESSION-LEGACY-UPGRADE.6", Kind.ENVELOPE,
                 "append and seed refuse an event that the load's upgrades would rewrite or refuse")


@dataclass(frozen=True, slots=True)
class LegacyUpgrade:
    """One rewrite the load applied: which event, which rule, from what to what."""

    seq: int
    line: int | None
    rule: str
    summary: str


def legacy_id(session_id: str, seq: int) -> str:
    return f"legacy-message:{session_id}:{seq}"


def _malformed(rule: str, what: str, seq: int) -> SpecViolation:
    return SpecViolation(rule, Kind.ENVELOPE, f"malformed pre-react-loop {what} at seq {seq}", seq=seq)


_SIMPLE_REASONS = ("completed", "blocked", "max-tokens", "interrupted")


def _turn_end_reason(reason: Json, seq: int) -> Json | None:
    """The current reason for a legacy one, or None when it is already current."""
    if not isinstance(reason, dict) or type(reason.get("kind")) is not str:
        raise _malformed(TURN_END, "turn/end", seq)
    kind = reason["kind"]
    if kind in _SIMPLE_REASONS:
        if set(reason) != {"kind"}:
            raise _malformed(TURN_END, "turn/end", seq)
        return None
    if kind == "aborted" and "reason" not in reason:
        return {**reason, "reason": {"kind": "legacy"}}
    if kind == "disposed":
        return {"kind": "aborted", "reason": {"kind": "disposed"}}
    if kind == "error" and "error" not in reason:
        failure = reason.get("failure")
        if set(reason) == {"kind", "step", "failure"} and isinstance(failure, dict) \
                and type(failure.get("message")) is str and "code" in failure:
            return {"kind": "error", "error": failure}
        if set(reason) <= {"kind", "step", "message", "code"} and type(reason.get("message")) is str:
            return {"kind": "error", "error": {"message": reason["message"], "code": reason.get("code", "UNKNOWN")}}
        raise _malformed(TURN_END, "turn/end", seq)
    return None


def may_upgrade(kind: object, data: object) -> bool:
    """Whether `upgrade` could change or refuse an event of this type and data: cheap, and never wrong when False.

    For a reader that builds no Event for a current record (`sessionspec show`): only what this
    admits needs `upgrade` itself.
    """
    if not isinstance(data, dict):  # a plain record's data or an event's frozen one: `upgrade` takes both
        return False
    if kind == "turn/start":
        return "trigger" in data
    if kind == "turn/end":
        if "reason" not in data:
            return False
        reason = data["reason"]
        if type(reason) is not dict or type(reason.get("kind")) is not str:
            return True
        reason_kind = reason["kind"]
        return ((reason_kind in _SIMPLE_REASONS and len(reason) != 1) or (reason_kind == "aborted" and "reason" not in reason)
                or reason_kind == "disposed" or (reason_kind == "error" and "error" not in reason))
    if kind == "steering/message":
        return True
    if kind == "user/message":
        return "id" not in data
    return kind in ("assistant/message", "tool/result") and "message" not in data


def upgrade(event: Event, session_id: str, message_ids: Mapping[int, str]) -> tuple[Event, str, str] | None:
    """The upgraded event, its rule and a summary, or None when `event` is current.

    `message_ids` maps earlier surface seqs to their message ids (a legacy tool/result that
    replaces another inherits the replaced message's id).
    """
    data, seq = event.data, event.seq
    if not isinstance(data, dict):
        return None
    new_type, new_data, op = event.type, None, event.surface_op
    if event.type == "turn/start" and "trigger" in data:
        # .1 The trigger moved out of turn/start; only its exact old shape is understood.
        trigger = data["trigger"]
        if not (set(data) == {"turn", "trigger"} and is_safe_int(data["turn"]) and data["turn"] >= 1
                and isinstance(trigger, dict) and is_nonempty_str(trigger.get("kind"))):
            raise _malformed(TURN_START, "turn/start", seq)
        rule, new_data, summary = TURN_START, {"turn": data["turn"]}, "turn/start trigger dropped"
    elif event.type == "turn/end" and "reason" in data:
        # .2 Old reasons map onto the current union.
        reason = _turn_end_reason(data["reason"], seq)
        if reason is None:
            return None
        rule, new_data = TURN_END, {**thaw(data), "reason": reason}
        summary = f"turn/end reason {shown(data['reason'].get('kind'))} upgraded"
    elif event.type == "steering/message":
        # .3 Steering became an ordinary user message.
        if set(data) == {"turn", "message"} and isinstance(data["message"], dict):
            new_data = thaw(data["message"])
        elif set(data) == {"turn", "content", "source"}:
            new_data = {"id": legacy_id(session_id, seq), "role": "user", "content": thaw(data["content"]),
                        "source": thaw(data["source"])}
        else:
            raise _malformed(STEERING, "steering/message", seq)
        rule, new_type, op, summary = STEERING, "user/message", APPEND, "steering/message became user/message"
    else:
        found = _pre_identity(event, session_id, message_ids)
        if found is None:
            return None
        rule, new_data, summary = PRE_IDENTITY, found, f"{event.type} gained a message identity"
    upgraded = Event(new_type, seq, event.time, snapshot(new_data), op, event.source_event_seqs, event.ignorable)
    return upgraded, rule, summary


def _pre_identity(event: Event, session_id: str, message_ids: Mapping[int, str]) -> Json | None:
    """.4 Message events from before messages had ids and roles."""
    data, seq = event.data, event.seq
    if event.type == "user/message" and "content" in data and "source" in data and "id" not in data and "role" not in data:
        return {"id": legacy_id(session_id, seq), "role": "user", **thaw(data)}
    if event.type == "assistant/message" and "message" not in data and {"content", "provenance"} <= set(data):
        rest = {k: thaw(v) for k, v in data.items() if k not in ("content", "provenance")}
        provenance = data["provenance"]
        if not isinstance(provenance, dict):
            raise _malformed(PRE_IDENTITY, "assistant/message", seq)
        source = {**thaw(provenance), "kind": "model"}
        return {**rest, "message": {"id": legacy_id(session_id, seq), "role": "assistant",
                                    "content": thaw(data["content"]), "source": source}}
    if event.type == "tool/result" and "message" not in data and {"callId", "content", "isError"} <= set(data):
        rest = {k: thaw(v) for k, v in data.items() if k not in ("callId", "content", "isError")}
        message_id = legacy_id(session_id, seq)
        if isinstance(event.surface_op, Replace):
            inherited = message_ids.get(event.surface_op.start)
            if inherited is None:
                raise _malformed(PRE_IDENTITY, "tool/result replacement", seq)
            message_id = inherited
        block = {"type": "tool-result", "toolCallId": data["callId"], "content": thaw(data["content"]),
                 "isError": data["isError"]}
        return {**rest, "message": {"id": message_id, "role": "user", "content": [block],
                                    "source": {"kind": "tool", "callId": data["callId"]}}}
    return None


def check_current(event: Event, *, index: int | None = None) -> None:
    """SESSION-LEGACY-UPGRADE.6: a session writes only events that load as themselves.

    The load rewrites a closed list of old shapes (.1-.4) and refuses a malformed one. An event
    appended or seeded in one of those shapes would be stored as it is, and then load as another
    event, or stop the log loading at all: the file would no longer hold the history the session
    recorded. So the writer refuses it, and says what the load would have done.

    Called after the message shapes are checked (SESSION-MESSAGE-SHAPE.1 already refuses a
    message event without its identity, the shape .4 rewrites), so no earlier message is needed.
    """
    try:
        found = upgrade(event, "", {})
        would = None if found is None else f"a load would rewrite it: {found[2]}"
    except SpecViolation as refused:
        would = f"a load would refuse it ({refused.rule}: {refused.message})"
    # .6 Only current shapes are written: the log on disk loads as the events the session holds.
    check(would is None, CURRENT, f"{event.type}: a pre-react-loop shape; {would}", seq=event.seq, index=index)


def message_id_of(event: Event) -> str | None:
    data: Any = event.data
    message = data if event.type == "user/message" else data.get("message") if isinstance(data, dict) else None
    value = message.get("id") if isinstance(message, dict) else None
    return value if type(value) is str else None


class Upgrader:
    """Applies `upgrade` along a log, remembering message ids for inherited replacements."""

    def __init__(self, session_id: str, report: Callable[[LegacyUpgrade], object]) -> None:
        self._session_id = session_id
        self._report = report
        self._message_ids: dict[int, str] = {}

    def __call__(self, event: Event, line: int | None) -> Event:
        """The upgraded (or unchanged) event; each upgrade is reported (SESSION-LEGACY-UPGRADE.5).

        `upgrade` is asked only where `may_upgrade` admits it could apply: a load reads every event through here.
        """
        found = upgrade(event, self._session_id, self._message_ids) if may_upgrade(event.type, event.data) else None
        if found is not None:
            event, rule, summary = found
            # SESSION-LEGACY-UPGRADE.5: reported, since the validated log differs from the bytes on disk.
            self._report(LegacyUpgrade(event.seq, line, rule, summary))
        if event.surface_op is not None:
            message_id = message_id_of(event)
            if message_id is not None:
                self._message_ids[event.seq] = message_id
        return event


__all__ = ["LegacyUpgrade", "Upgrader", "check_current", "legacy_id", "may_upgrade", "upgrade"]
