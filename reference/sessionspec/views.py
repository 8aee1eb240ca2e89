"""The three read views of one log (SESSION-READ-VIEWS).

The complete log is the audit record; the model view is what the next request sends; the
append-origin transcript is what a person saw. Each is wrong for the others' job: a transcript
read from the surface loses what the user already saw the moment a compaction lands, and a
request built from the transcript ignores every compaction.
"""

from __future__ import annotations

from collections.abc import Sequence

from sessionspec.catalog import ASSISTANT_MESSAGE, TOOL_RESULT, USER_MESSAGE
from sessionspec.envelope import APPEND, Event
from sessionspec.jsonvalue import FrozenList, Json
from sessionspec.surface import fold


def project(event: Event) -> Json:
    """SESSION-SURFACE-PROJECTION.5: the message one node contributes, or None."""
    if event.type == USER_MESSAGE:
        return event.data
    if event.type in (ASSISTANT_MESSAGE, TOOL_RESULT):
        message = event.data["message"]
        if event.type == ASSISTANT_MESSAGE and len(message["content"]) == 0:
            # An empty assistant message only carries usage; a provider would reject it as a turn.
            return None
        return message
    return None


def project_all(events: Sequence[Event], nodes: Sequence[int]) -> FrozenList:
    """SESSION-READ-VIEWS.2: the messages of the surface, in surface order."""
    messages = (project(events[node]) for node in nodes)
    return FrozenList(message for message in messages if message is not None)


def is_append_origin(event: Event) -> bool:
    """SESSION-READ-VIEWS.3: a surface event that entered by append (not a replacement copy)."""
    return event.surface_op == APPEND


def transcript(events: Sequence[Event]) -> FrozenList:
    """SESSION-READ-VIEWS.3: the append-origin surface events, shadowed ones included, in log order."""
    return FrozenList(event for event in events if is_append_origin(event))


def derive_messages(events: Sequence[Event]) -> FrozenList:
    """SESSION-DERIVED-CACHE.1: what every implementation's derived messages must equal."""
    return project_all(events, fold(events).nodes)
