"""The one exception every rejection raises, and the protocol's error kinds.

A rejection must say which rule of `spec/` it enforces, so that a person can read the rule and a
conformance runner can compare two implementations by what they rejected, not by message text.
"""

from __future__ import annotations

from enum import StrEnum


class Kind(StrEnum):
    """The error kinds of the conformance protocol (spec/10-conformance.md)."""

    JSON = "json"
    ENVELOPE = "envelope"
    SEQ = "seq"
    SURFACE_ELIGIBILITY = "surface-eligibility"
    SURFACE_OP = "surface-op"
    PROVENANCE = "provenance"
    RANGE = "range"
    TOOL_RESULT_REWRITE = "tool-result-rewrite"
    MESSAGE_SHAPE = "message-shape"
    REQUEST_HEADER = "request-header"
    HEADER = "header"
    REENTRANT = "reentrant"
    UNKNOWN_EVENT = "unknown-event"
    VERSION = "version"
    VETO = "veto"
    UNSUPPORTED = "unsupported"
    INTERNAL = "internal"


class SpecViolation(ValueError):
    """A rejection: the rule it enforces, the protocol kind, a message, and where.

    `seq` is the event's seq (the candidate's for an append); `index` is the position in a seed
    or an event list given to `fold` or `repair`; `line` is a line of a stored file. After a
    SpecViolation the session it came from is exactly as it was before the call.
    """

    def __init__(
        self,
        rule: str,
        kind: Kind,
        message: str,
        *,
        seq: int | None = None,
        index: int | None = None,
        line: int | None = None,
    ) -> None:
        super().__init__(message)
        self.rule = rule
        self.kind = kind
        self.message = message
        self.seq = seq
        self.index = index
        self.line = line

    def __str__(self) -> str:
        where = []
        if self.index is not None:
            where.append(f"index {self.index}")
        if self.seq is not None:
            where.append(f"seq {self.seq}")
        if self.line is not None:
            where.append(f"line {self.line}")
        at = f" ({', '.join(where)})" if where else ""
        return f"{self.rule} [{self.kind.value}]{at}: {self.message}"

    def at(self, *, seq: int | None = None, index: int | None = None, line: int | None = None) -> SpecViolation:
        """The same violation located more precisely (fills only what is not yet known)."""
        return SpecViolation(
            self.rule,
            self.kind,
            self.message,
            seq=self.seq if self.seq is not None else seq,
            index=self.index if self.index is not None else index,
            line=self.line if self.line is not None else line,
        )

    def to_json(self) -> dict[str, object]:
        """The protocol's error object: the kind, the message for people, and the rule and location each in its own field
        (the message does not repeat them)."""
        out: dict[str, object] = {"kind": self.kind.value, "message": self.message, "rule": self.rule}
        if self.seq is not None:
            out["seq"] = self.seq
        if self.index is not None:
            out["index"] = self.index
        if self.line is not None:
            out["line"] = self.line
        return out
