"""The explorer's alphabet: the operations offered in a state, as conformance-protocol requests.

Every letter is one or more requests in the protocol's shapes (spec/10-conformance.md), hooks
included, so the path to any state is a trace that a testee offering the `x-hooks` extension
replays as it is: an append the explorer vetoes carries `"x-validator": "raise"`, and every
append carries `"x-observer": "reentrant"`, because the explorer's observer tries a nested append
after every committed one (SESSION-APPEND-COMMIT.4).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from sessionspec.catalog import TOOL_RESULT
from sessionspec.envelope import Event, Replace
from sessionspec.jsonvalue import Json, thaw
from sessionspec.repair import closers

SESSION_ID = "explore"
Request = dict[str, Json]

VETOED: Request = {"x-validator": "raise"}
"""The x-hooks mark of an append that a precommit validator vetoes (SESSION-APPEND-COMMIT.2)."""
PROBED: Request = {"x-observer": "reentrant"}
"""The x-hooks mark of an append whose observer tries a nested append (SESSION-APPEND-COMMIT.4)."""


def user_message(message_id: str = "u", text: str = "hi") -> Json:
    return {"id": message_id, "role": "user", "source": {"kind": "user"}, "content": [{"type": "text", "text": text}]}


def assistant_message() -> Json:
    call = {"type": "tool-call", "id": "c1", "name": "read", "arguments": "{}"}
    source = {"kind": "model", "provider": "p", "model": "m"}
    return {"turn": 1, "step": 1, "message": {"id": "a", "role": "assistant", "source": source, "content": [call]}}


def tool_result(text: str = "out", message_id: str = "r") -> Json:
    block = {"type": "tool-result", "toolCallId": "c1", "content": [{"type": "text", "text": text}]}
    source = {"kind": "tool", "callId": "c1"}
    return {"turn": 1, "step": 1, "message": {"id": message_id, "role": "user", "source": source, "content": [block]}}


def append_request(event_type: str, data: Json, surface_op: Json = None, sources: Json = None, *,
                   ignorable: bool = False, hooks: Request = PROBED) -> Request:
    """An append request as the explorer sends it: the protocol's body, then its x-hooks."""
    request: Request = {"op": "append", "type": event_type, "data": data}
    if surface_op is not None:
        request["surfaceOp"] = surface_op
    if sources is not None:
        request["sourceEventSeqs"] = sources
    if ignorable:
        request["ignorable"] = True
    request.update(hooks)
    return request


def _replace(start: int, end: int) -> Json:
    return {"op": "replace", "start": start, "end": end}


@dataclass(frozen=True, slots=True)
class Step:
    """One letter of the alphabet: a label and the protocol requests that perform it.

    `reseed` steps carry one `create` request; every other step carries appends (repair carries
    one append per closer).
    """

    label: str
    requests: tuple[Request, ...]

    @property
    def reseeds(self) -> bool:
        return bool(self.requests[0]["op"] == "create")


ALPHABETS = ("full", "compact")
"""`full`: every letter below. `compact`: a smaller alphabet (proofs/README.md): one log-only letter
whose kind alternates, a tool/result only while a tool call is unanswered, and replace ranges of at
most two nodes."""


def default_alphabet(depth: int) -> str:
    """`full` to depth 7 (4 million states, about 1,100 CPU seconds, 9 minutes on 2 cores: proofs/README.md); `compact` beyond."""
    return "full" if depth <= 7 else "compact"


def _log_only_count(events: Sequence[Event]) -> int:
    return sum(1 for event in events if event.type in ("turn/start", "session/title"))


def _calls_unanswered(events: Sequence[Event]) -> bool:
    calls = sum(1 for event in events if event.type == "assistant/message")
    results = sum(1 for event in events if event.type == TOOL_RESULT and event.surface_op == "append")
    return calls > results


def _log_only_letters(events: Sequence[Event], alphabet: str) -> list[Step]:
    turn = Step("append turn/start (log-only)", (append_request("turn/start", {"turn": 1}),))
    title = Step("append session/title (log-only, ignorable)",
                 (append_request("session/title", {"title": "t"}, ignorable=True),))
    if alphabet == "full":
        return [turn, title]
    # Log-only events are interchangeable on the surface: one letter, alternating between the
    # two kinds, so both kinds (and the ignorable flag) still occur, in every position.
    return [turn if _log_only_count(events) % 2 == 0 else title]


def letters(events: Sequence[Event], nodes: Sequence[int], alphabet: str = "full", seed: Json = None) -> Iterator[Step]:
    """Every operation the alphabet offers in the state whose reference log is `events` and surface `nodes`.

    `seed` is the log as JSON, if the caller has it (a reseed's seed); else it is made from `events`.
    """
    yield from surface_letters(events, nodes, alphabet)
    yield from log_letters(events, seed)


def surface_letters(events: Sequence[Event], nodes: Sequence[int], alphabet: str = "full") -> Iterator[Step]:
    """The letters but reseed and repair: functions of `letter_key` only, so a caller may keep them by it."""
    nodes = list(nodes)
    span = len(nodes) if alphabet == "full" else 1
    yield Step("append user/message", (append_request("user/message", user_message(), "append"),))
    yield Step("append assistant/message", (append_request("assistant/message", assistant_message(), "append"),))
    if alphabet == "full" or _calls_unanswered(events):
        yield Step("append tool/result", (append_request(TOOL_RESULT, tool_result(), "append"),))
    yield from _log_only_letters(events, alphabet)
    # The vetoed letters come just before the replaces: a rejected step leaves the sessions as
    # they are, so the replaces after it run on a session that has just seen a veto.
    yield Step("append turn/start (vetoed)", (append_request("turn/start", {"turn": 1}, hooks={**VETOED, **PROBED}),))
    if nodes:
        vetoed = user_message("v", "vetoed summary")
        yield Step(f"replace {nodes[0]}..{nodes[-1]} (vetoed)",
                   (append_request("user/message", vetoed, _replace(nodes[0], nodes[-1]), nodes,
                                  hooks={**VETOED, **PROBED}),))
    yield from _replaces(nodes, span)
    for node in nodes:
        if events[node].type == TOOL_RESULT:
            yield Step(f"rewrite tool/result {node}",
                       (append_request(TOOL_RESULT, tool_result("pruned"), _replace(node, node), [node]),))
            yield Step(f"rewrite tool/result {node} (forged id)",
                       (append_request(TOOL_RESULT, tool_result("pruned", "r2"), _replace(node, node), [node]),))


def letter_key(events: Sequence[Event], nodes: Sequence[int], alphabet: str) -> tuple[object, ...]:
    """Everything `surface_letters` reads: the nodes, which of them are tool results, and for `compact` two counts."""
    results = tuple(node for node in nodes if events[node].type == TOOL_RESULT)
    if alphabet == "full":
        return alphabet, tuple(nodes), results
    return alphabet, tuple(nodes), results, _log_only_count(events) % 2, _calls_unanswered(events)


def log_letters(events: Sequence[Event], seed: Json = None) -> Iterator[Step]:
    """Reseed (a new session seeded with the log) and, when a turn is open, repair (its crash closers appended)."""
    if seed is None:
        seed = [event.to_json() for event in events]
    yield Step("reseed", ({"op": "create", "id": SESSION_ID, "seed": seed, "header": None},))
    pending = closers(events)
    if pending:
        requests = [append_request(e.type, thaw(e.data), _op_json(e), _sources_json(e)) for e in pending]
        yield Step("repair", tuple(requests))


def _replaces(nodes: list[int], span: int) -> Iterator[Step]:
    """Every ordered (start, end) pair within `span` positions, with full and with incomplete provenance."""
    for first, start in enumerate(nodes):
        for last, end in enumerate(nodes):
            if abs(last - first) > span:
                continue
            shadowed = nodes[first : last + 1]
            summary = user_message("s", "summary")
            yield Step(f"replace {start}..{end}",
                       (append_request("user/message", summary, _replace(start, end), shadowed or [start]),))
            incomplete = shadowed[:-1] or None
            yield Step(f"replace {start}..{end} (incomplete provenance)",
                       (append_request("user/message", summary, _replace(start, end), incomplete),))


def steps(session: Any, alphabet: str = "full") -> Iterator[Step]:
    """Every operation the alphabet offers in the state of the reference `session`."""
    return letters(session.events, session.surface.nodes, alphabet)


def _op_json(event: Event) -> Json:
    op = event.surface_op
    return op.to_json() if isinstance(op, Replace) else op


def _sources_json(event: Event) -> Json:
    return None if event.source_event_seqs is None else list(event.source_event_seqs)
