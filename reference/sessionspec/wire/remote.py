"""A testee's session behind the read and append API of `model.Session`, over a `Connection`.

What runs in process against `model` and `live` (the chapter tests, the machines) can run against
a testee this way: each read is answered from one `snapshot`, each append is one `append` request,
and a rejection comes back as the `SpecViolation` the testee's answer names.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sessionspec.envelope import Event, Replace, parse_event
from sessionspec.errors import Kind, SpecViolation
from sessionspec.jsonvalue import FrozenList, snapshot, thaw
from sessionspec.surface import Surface
from sessionspec.wire.client import Connection
from sessionspec.wire.protocol import Answer


def _violation(answer: Answer) -> SpecViolation:
    error = answer["error"]
    try:
        kind = Kind(error["kind"])
    except ValueError:
        kind = Kind.INTERNAL
    rule = error.get("rule")
    return SpecViolation(rule if isinstance(rule, str) else "unknown", kind, str(error.get("message", "")))


class RemoteSession:
    """A testee's session behind the `model.Session` read and append API, built from `snapshot` answers.

    Validators and observers are in-process hooks a remote implementation cannot run; a session
    created with any is refused (the machines use the protocol's x-hooks instead).
    """

    def __init__(self, connection: Connection, session_id: str) -> None:
        self._connection = connection
        self._id = session_id
        self._snapshot: Answer | None = None

    @classmethod
    def over(cls, connection: Connection) -> Any:
        """A factory with the signature of `model.Session.create`, creating sessions on `connection`."""

        def create(session_id: str, seed: Sequence[Any] | None = None, header: Any = None, *, clock: Any = None,
                   validators: Sequence[Any] = (), observers: Sequence[Any] = ()) -> RemoteSession:
            if validators or observers:
                raise TypeError("a remote session cannot run in-process validators or observers")
            plain_seed = None if seed is None else [thaw(e.to_json()) if isinstance(e, Event) else thaw(e) for e in seed]
            answer = connection.request({"op": "create", "id": session_id, "seed": plain_seed, "header": thaw(header)})
            if not answer["ok"]:
                raise _violation(answer)
            return cls(connection, session_id)

        return create

    def _look(self) -> Answer:
        if self._snapshot is None:
            answer = self._connection.request({"op": "snapshot"})
            if not answer["ok"]:
                raise _violation(answer)
            self._snapshot = answer
        return self._snapshot

    @property
    def id(self) -> str:
        return self._id

    @property
    def events(self) -> FrozenList:
        return FrozenList(parse_event(raw, index) for index, raw in enumerate(self._look()["events"]))

    @property
    def seq(self) -> int:
        return len(self._look()["events"])

    @property
    def first_live_seq(self) -> int:
        value: int = self._look()["firstLiveSeq"]
        return value

    @property
    def surface(self) -> Surface:
        surface = self._look()["surface"]
        return Surface(FrozenList(surface["nodes"]), surface["replaceGeneration"])

    def derive_messages(self) -> FrozenList:
        messages = snapshot(self._look()["messages"])
        return messages if isinstance(messages, FrozenList) else FrozenList(messages)

    def append_request(self, request: Mapping[str, Any]) -> Event:
        self._snapshot = None
        answer = self._connection.request({"op": "append", **request})
        if not answer["ok"]:
            raise _violation(answer)
        return parse_event(answer["event"], 0)

    def append(self, type: str, data: Any, *, surface_op: Any = None, source_event_seqs: Any = None,
               ignorable: bool = False) -> Event:
        request: dict[str, Any] = {"type": type, "data": thaw(data)}
        if surface_op is not None:
            request["surfaceOp"] = surface_op.to_json() if isinstance(surface_op, Replace) else thaw(surface_op)
        if source_event_seqs is not None:
            request["sourceEventSeqs"] = thaw(source_event_seqs)
        if ignorable:
            request["ignorable"] = True
        return self.append_request(request)
