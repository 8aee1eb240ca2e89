"""Event vocabularies: the surface types, the 13 core types and the known-event catalogs.

Catalogs are data (DESIGN decision 10): a build states which vocabulary it understands, and the
load gate (spec/07-persistence.md) refuses a log that uses words outside it unless the writer
marked them `ignorable`. The catalog says nothing about which events reach the model: only the
three surface types can.
"""

from __future__ import annotations

from dataclasses import dataclass

USER_MESSAGE = "user/message"
ASSISTANT_MESSAGE = "assistant/message"
TOOL_RESULT = "tool/result"
END_SEED = "session/end-seed"
REQUEST_HEADER = "request/header"

SURFACE_TYPES: frozenset[str] = frozenset({USER_MESSAGE, ASSISTANT_MESSAGE, TOOL_RESULT})
"""The only event types that may enter the surface (SESSION-SURFACE-PROJECTION)."""

CORE_TYPES: tuple[str, ...] = (
    "turn/start",
    "turn/end",
    "step/start",
    "step/end",
    USER_MESSAGE,
    "assistant/chunk",
    ASSISTANT_MESSAGE,
    "tool/call",
    TOOL_RESULT,
    "todo/write",
    REQUEST_HEADER,
    "request/context",
    END_SEED,
)
"""The 13 types the core session declares (SESSION-CORE-EVENTS)."""

RETIRED_TYPES: frozenset[str] = frozenset({"request/header-delta", "mode/set"})
"""Types an earlier format wrote and no reader may interpret (SESSION-CORE-EVENTS.2)."""

_CONTROL = (
    "agent-preset/selected",
    "agent/inbox/spliced",
    "approval/asked",
    "approval/decided",
    "approval/policy",
    "permission/preset",
    "sandbox/mode",
    "plan/mode",
    "goal/change",
    "schedule/change",
)
_COMPACTION = (
    "compaction/start",
    "compaction/prune",
    "compaction/summary",
    "compaction/end",
    "llm/retry",
    "llm/retry-started",
)
_AUXILIARY = ("session/title", "session/title-llm-request", "web/deepseek-search-llm-request", "feedback/record")
_COMMANDS = ("command/run", "command/done", "hook/invoked", "hook/result")
_ORCHESTRATION = (
    "subagent/descriptor",
    "tool-workflow/run-start",
    "tool-workflow/run-end",
    "tool-workflow/agent-start",
    "tool-workflow/agent-end",
    "tool/code-dispatch",
    "tool/code-dispatch-start",
)
_TEAMS = ("team/member", "team/message/delivered", "team/message/queued", "team/task")


@dataclass(frozen=True, slots=True)
class Catalog:
    """A named vocabulary: the event types a build knows how to interpret."""

    name: str
    types: frozenset[str]

    def knows(self, event_type: str) -> bool:
        return event_type in self.types


BASELINE_44 = Catalog(
    "baseline-44",
    frozenset((*CORE_TYPES, *_CONTROL, *_COMPACTION, *_AUXILIARY, *_COMMANDS, *_ORCHESTRATION)),
)
"""The 44 types the seed document lists (13 core plus 31 owned by plugins)."""

DSH_0_1_1 = Catalog("dsh-0.1.1", BASELINE_44.types | frozenset(_TEAMS))
"""The 48 types of @deepseek-ai/dsh-session 0.1.1: the baseline plus the four team/* types."""

CATALOGS: dict[str, Catalog] = {c.name: c for c in (BASELINE_44, DSH_0_1_1)}
DEFAULT_CATALOG = DSH_0_1_1
"""The newest catalog, used by the load gate when none is named."""

assert len(CORE_TYPES) == 13 and len(BASELINE_44.types) == 44 and len(DSH_0_1_1.types) == 48


def is_surface_type(event_type: str) -> bool:
    return event_type in SURFACE_TYPES
