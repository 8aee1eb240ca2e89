"""The registry of rule IDs: each rule's protocol kind and one line of what it says.

`spec/` is the normative text; this table is how the code knows which kind a rule's rejection
carries. A module that enforces a family of rules defines them where it enforces them (the
foundation's families are defined here), and the traceability test holds the registry, `spec/`
and the tests to the same set of IDs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NoReturn

from sessionspec.errors import Kind, SpecViolation
from sessionspec.levels import Ground, Level, ground_of


@dataclass(frozen=True, slots=True)
class Rule:
    id: str
    kind: Kind
    summary: str
    ground: Ground
    """Its conformance level and why (`sessionspec.levels`): required by the seeds, or recommended by this spec."""

    @property
    def level(self) -> Level:
        return self.ground.level


RULES: dict[str, Rule] = {}


def define(rule_id: str, kind: Kind, summary: str) -> str:
    """Register a rule; returns its ID so modules can keep it as a constant."""
    existing = RULES.get(rule_id)
    if existing is not None and (existing.kind, existing.summary) != (kind, summary):
        raise RuntimeError(f"rule {rule_id} defined twice with different meanings")
    try:
        ground = ground_of(rule_id)
    except KeyError:
        raise RuntimeError(f"rule {rule_id} has no level and ground in sessionspec.levels") from None
    RULES[rule_id] = Rule(rule_id, kind, summary, ground)
    return rule_id


def kind_of(rule_id: str) -> Kind:
    rule = RULES.get(rule_id)
    if rule is None:
        raise RuntimeError(f"rule {rule_id} is raised but not defined in sessionspec.rules")
    return rule.kind


def fail(rule: str, message: str, *, seq: int | None = None, index: int | None = None) -> NoReturn:
    """Raise the violation of `rule`, with the kind the rule registry gives it."""
    raise SpecViolation(rule, kind_of(rule), message, seq=seq, index=index)


def check(condition: bool, rule: str, message: str, *, seq: int | None = None, index: int | None = None) -> None:
    """One rule, one line: raise the violation of `rule` unless `condition` holds."""
    if not condition:
        fail(rule, message, seq=seq, index=index)


K = Kind

# --- spec/01-json.md -------------------------------------------------------------------------
define("SESSION-LOSSLESS-JSON.1", K.JSON, "only None, bool, int, float, str, list and dict, exactly (no subclasses)")
define("SESSION-LOSSLESS-JSON.2", K.JSON, "integers lie within +-(2**53-1)")
define("SESSION-LOSSLESS-JSON.3", K.JSON, "floats are finite")
define("SESSION-LOSSLESS-JSON.4", K.JSON, "negative zero appears nowhere")
define("SESSION-LOSSLESS-JSON.5", K.JSON, "object keys are strings")
define("SESSION-LOSSLESS-JSON.6", K.JSON, "no value contains itself; shared acyclic aliases become independent copies")
define("SESSION-LOSSLESS-JSON.7", K.JSON, "nesting depth is limited by memory only")
define("SESSION-LOSSLESS-JSON.8", K.INTERNAL, "an integer is an integer: 1.0 where an integer is required is not 1")
define("SESSION-IMMUTABILITY.1", K.INTERNAL, "accepted events and everything reachable from them are immutable")
define("SESSION-IMMUTABILITY.2", K.INTERNAL, "frozen values equal their plain JSON form; thaw returns plain JSON")
define("SESSION-IMMUTABILITY.3", K.INTERNAL, "the caller mutating its input after append or seeding changes nothing")
define("SESSION-IMMUTABILITY.4", K.INTERNAL, "a returned sequence never changes afterwards")

# --- spec/02-envelope.md ---------------------------------------------------------------------
define("SESSION-EVENT-ENVELOPE.1", K.ENVELOPE, "an event is an object with exactly the seven envelope keys")
define("SESSION-EVENT-ENVELOPE.2", K.ENVELOPE, "type is a string")
define("SESSION-EVENT-ENVELOPE.3", K.ENVELOPE, "seq is a non-negative safe integer")
define("SESSION-EVENT-ENVELOPE.4", K.ENVELOPE, "time is a safe integer")
define("SESSION-EVENT-ENVELOPE.5", K.ENVELOPE, "data is present")
define("SESSION-EVENT-ENVELOPE.6", K.ENVELOPE, "ignorable is absent or exactly true")
define("SESSION-EVENT-ENVELOPE.7", K.ENVELOPE, "only log-only events may be ignorable")
define("SESSION-EVENT-ENVELOPE.8", K.ENVELOPE, "type is not empty")
define("SESSION-FORMAT-HEADER.1", K.HEADER, "the header is a lossless JSON object")
define("SESSION-FORMAT-HEADER.2", K.VERSION, "version is exactly 0 (SESSION_FORMAT_VERSION)")
define("SESSION-FORMAT-HEADER.3", K.HEADER, "id is a non-empty string equal to the session id")
define("SESSION-FORMAT-HEADER.4", K.HEADER, "createdAt is a non-negative safe integer")
define("SESSION-FORMAT-HEADER.5", K.HEADER, "cwd, when present, is an absolute POSIX path")
define("SESSION-FORMAT-HEADER.6", K.HEADER, "parentSession, when present, is a string")
define("SESSION-FORMAT-HEADER.7", K.HEADER, "seedLength, when present, is a non-negative safe integer")
define("SESSION-FORMAT-HEADER.8", K.HEADER, "origin, when present, is \"subagent\"")
define("SESSION-FORMAT-HEADER.9", K.HEADER, "delegationDepth, when present, is a non-negative safe integer")
define("SESSION-FORMAT-HEADER.10", K.HEADER, "agentPreset, when present, is a string")
define("SESSION-FORMAT-HEADER.11", K.HEADER, "no other header keys")
define("SESSION-FORMAT-HEADER.12", K.HEADER, "parentSession, when present, is not empty")
define("SESSION-CORE-EVENTS.1", K.ENVELOPE, "session/end-seed carries the empty object as data")
define("SESSION-CORE-EVENTS.2", K.ENVELOPE, "retired event types are refused: request/header-delta, mode/set")
define("SESSION-MESSAGE-SHAPE.1", K.MESSAGE_SHAPE, "the message has a non-empty string id")
define("SESSION-MESSAGE-SHAPE.2", K.MESSAGE_SHAPE, "the message has the role its event type requires")
define("SESSION-MESSAGE-SHAPE.3", K.MESSAGE_SHAPE, "the message source is an object with a non-empty kind")
define("SESSION-MESSAGE-SHAPE.4", K.MESSAGE_SHAPE, "the message content is an array")
define("SESSION-MESSAGE-SHAPE.5", K.MESSAGE_SHAPE, "an assistant message has a model source with provider and model")
define("SESSION-MESSAGE-SHAPE.6", K.MESSAGE_SHAPE, "a tool result has a tool source with a callId")
define("SESSION-MESSAGE-SHAPE.7", K.MESSAGE_SHAPE, "a tool result holds exactly one tool-result block with array content")
define("SESSION-MESSAGE-SHAPE.8", K.MESSAGE_SHAPE, "the tool-result block's toolCallId equals the source callId")
define("SESSION-MESSAGE-SHAPE.9", K.MESSAGE_SHAPE, "a message event carries its message, an object (the data, or data.message)")
define("SESSION-REQUEST-HEADER.1", K.REQUEST_HEADER, "a request header names a provider and a model")
define("SESSION-REQUEST-HEADER.2", K.REQUEST_HEADER, "reasoningEffort, when present, is a non-empty string")
define("SESSION-REQUEST-HEADER.3", K.REQUEST_HEADER, "adapterDefaults marks only present config fields, with true")
define("SESSION-REQUEST-HEADER.4", K.REQUEST_HEADER, "the legacy reason \"fallback\" is refused")

# --- spec/03-surface.md ----------------------------------------------------------------------
define("SESSION-SURFACE-PROJECTION.1", K.SURFACE_ELIGIBILITY, "a log-only event carries no surfaceOp")
define("SESSION-SURFACE-PROJECTION.2", K.SURFACE_ELIGIBILITY, "a log-only event carries no sourceEventSeqs")
define("SESSION-SURFACE-PROJECTION.3", K.SURFACE_ELIGIBILITY, "a surface event carries a surfaceOp")
define("SESSION-SURFACE-PROJECTION.4", K.SURFACE_OP, "surfaceOp is \"append\" or exactly {op: \"replace\", start, end}")
define("SESSION-SURFACE-PROJECTION.5", K.INTERNAL, "each node projects to its message; empty assistant messages to none")
define("SESSION-SURFACE-PROVENANCE.1", K.PROVENANCE, "sourceEventSeqs, when present, is an array")
define("SESSION-SURFACE-PROVENANCE.2", K.PROVENANCE, "an empty source list appears only on assistant/message")
define("SESSION-SURFACE-PROVENANCE.3", K.PROVENANCE, "sources are non-negative safe integers")
define("SESSION-SURFACE-PROVENANCE.4", K.PROVENANCE, "sources are unique")
define("SESSION-SURFACE-PROVENANCE.5", K.PROVENANCE, "sources name strictly earlier events")
define("SESSION-SURFACE-PROVENANCE.6", K.PROVENANCE, "a replacement names every node it shadows")
define("SESSION-SURFACE-REPLACE.1", K.RANGE, "both endpoints name nodes currently on the surface")
define("SESSION-SURFACE-REPLACE.2", K.RANGE, "start does not come after end on the surface")
define("SESSION-SURFACE-REPLACE.3", K.INTERNAL, "the range is spliced out and the replacement takes its place")
define("SESSION-SURFACE-REPLACE.4", K.INTERNAL, "replace_generation counts committed replacements")
define("SESSION-SURFACE-TOOL-RESULT.1", K.TOOL_RESULT_REWRITE, "a tool/result replacement shadows exactly one node")
define("SESSION-SURFACE-TOOL-RESULT.2", K.TOOL_RESULT_REWRITE, "that node is a tool/result")
define("SESSION-SURFACE-TOOL-RESULT.3", K.TOOL_RESULT_REWRITE, "only the inner content of the tool-result block changes")
define("SESSION-SURFACE-FOLD.1", K.SEQ, "folded events are contiguous from 0")

# --- spec/04-append.md -----------------------------------------------------------------------
define("SESSION-APPEND-COMMIT.1", K.ENVELOPE, "the candidate's seq is the log length and its time a safe integer from the clock")
define("SESSION-APPEND-COMMIT.2", K.VETO, "a precommit validator that raises vetoes the append")
define("SESSION-APPEND-COMMIT.3", K.INTERNAL, "observers run after the commit, in order, each failure contained")
define("SESSION-APPEND-COMMIT.4", K.REENTRANT, "an append cannot reenter while another append is in progress")
define("SESSION-APPEND-COMMIT.5", K.ENVELOPE, "session/end-seed is written only by seeding")
define("SESSION-APPEND-COMMIT.6", K.INTERNAL, "append validates everything a seed validates")
define("SESSION-APPEND-COMMIT.7", K.INTERNAL, "a rejected append reports the first failing check in spec/04's order")

# --- spec/05-seed.md -------------------------------------------------------------------------
define("SESSION-SEED-ACCEPTANCE.1", K.ENVELOPE, "the seed is a list of events")
define("SESSION-SEED-ACCEPTANCE.2", K.SEQ, "seed event i has seq i")
define("SESSION-SEED-ACCEPTANCE.3", K.INTERNAL, "a seed ends in exactly one end-seed marker that seeding adds")
define("SESSION-SEED-ACCEPTANCE.4", K.INTERNAL, "first_live_seq is the seed length")
define("SESSION-SEED-ACCEPTANCE.5", K.INTERNAL, "a rejected create reports the first failing check in spec/05's order")

# --- spec/06-views.md ------------------------------------------------------------------------
define("SESSION-READ-VIEWS.1", K.INTERNAL, "the complete log holds every event")
define("SESSION-READ-VIEWS.2", K.INTERNAL, "the model view is the surface, projected")
define("SESSION-READ-VIEWS.3", K.INTERNAL, "the transcript holds the append-origin surface events in log order")
define("SESSION-DERIVED-CACHE.1", K.INTERNAL, "derived messages always equal the projection of a full fold")
