"""The machine's rules for the Python API: what a request line cannot say, said to both sides and compared.

A mixin of `sessionspec.testing.machine.SessionMachine`. Every other rule goes through the
protocol's executor (`append_request` of a JSON object), so a store's paths for the other shapes
of its own API were never run under the oracle: `append` with its keywords (`surface_op` a
`Replace` or a frozen marker, `source_event_seqs` a tuple or a frozen list, `ignorable` given or
not), the frozen values a session hands out given back to it, requests that are not dicts
(`append_request` of a list, None, a read-only mapping), and the views no snapshot asks for
(`complete_log()`). Each call is made on the model and on the implementation with the same
arguments; both must return the same event (rule, kind, time and all) or refuse with the same
rule and kind and stay as they were.

These calls are not requests, so a failing run's trace (`sessionspec replay`) does not hold them:
Hypothesis's printed program does.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from types import MappingProxyType
from typing import Any

from hypothesis import event
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, precondition, rule

from sessionspec.catalog import DSH_0_1_1
from sessionspec.envelope import Replace
from sessionspec.errors import SpecViolation
from sessionspec.jsonvalue import FrozenDict, FrozenList, freeze, thaw
from sessionspec.testing import edges
from sessionspec.testing import strategies as ss
from sessionspec.testing.choose import drawn

CONSTANTS = {name: name for name in DSH_0_1_1.types}
"""The catalog's own type strings: a store may compare a type by identity (`is TOOL_RESULT`), which a type read from
a request line (a new string) never is, so in process the constant itself and an equal new string are both sent."""


class _Request(Mapping[str, Any]):
    """A read-only mapping that is neither a dict nor a frozen one: what a caller may hand `append_request`."""

    def __init__(self, items: dict[str, Any]) -> None:
        self._items = items

    def __getitem__(self, key: str) -> Any:
        return self._items[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)


def outcome(call: Callable[[], Any]) -> tuple[Any, ...]:
    """What a call did: ("ok", the event as JSON), ("refused", rule, kind) or ("raised", the exception type)."""
    try:
        result = call()
    except SpecViolation as refusal:
        return ("refused", refusal.rule, refusal.kind)
    except Exception as error:  # a store that crashes where the model refuses: compared, and reported
        return ("raised", type(error).__name__, str(error)[:200])
    return ("ok", thaw(result.to_json()))


def _type_of(draw: Any, event_type: Any) -> Any:
    if not isinstance(event_type, str) or not draw(st.booleans(), label="catalog constant"):
        return "".join(list(event_type)) if isinstance(event_type, str) else event_type
    return CONSTANTS.get(event_type, event_type)


def _marker(draw: Any, op: Any) -> Any:
    """The surfaceOp as a caller may pass it: as sent, a `Replace` (when it holds int endpoints) or frozen."""
    how = draw(st.sampled_from(("as sent", "object", "frozen")), label="surface_op as")
    if how == "object" and isinstance(op, dict) and type(op.get("start")) is int and type(op.get("end")) is int:
        return Replace(op["start"], op["end"])
    return freeze(op) if how == "frozen" and isinstance(op, (dict, list)) else op


def _sources(draw: Any, sources: Any) -> Any:
    how = draw(st.sampled_from(("list", "tuple", "frozen")), label="sources as")
    if isinstance(sources, list) and how == "tuple":
        return tuple(sources)
    return FrozenList(sources) if isinstance(sources, list) and how == "frozen" else sources


def api_call(draw: Any, request: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """`request` (the protocol's append shape) as the arguments of `Session.append`, in one of its spellings."""
    event_type, data = _type_of(draw, request.get("type")), request.get("data")
    if isinstance(data, (dict, list)) and draw(st.booleans(), label="data frozen"):
        data = freeze(data)
    spelling = draw(st.sampled_from(("positional", "keywords", "mixed")), label="spelling")
    args: tuple[Any, ...] = (event_type, data) if spelling == "positional" else (event_type,) if spelling == "mixed" else ()
    kwargs: dict[str, Any] = {} if spelling == "positional" else {"data": data} if spelling == "mixed" else {
        "type": event_type, "data": data}
    if "surfaceOp" in request:
        kwargs["surface_op"] = _marker(draw, request["surfaceOp"])
    elif draw(st.booleans(), label="surface_op=None"):
        kwargs["surface_op"] = None
    if "sourceEventSeqs" in request:
        kwargs["source_event_seqs"] = _sources(draw, request["sourceEventSeqs"])
    elif draw(st.booleans(), label="source_event_seqs=None"):
        kwargs["source_event_seqs"] = None
    if "ignorable" in request:
        kwargs["ignorable"] = request["ignorable"]
    elif draw(st.booleans(), label="ignorable=False"):
        kwargs["ignorable"] = draw(st.sampled_from((False, True, 0, 1, None)), label="ignorable")
    return args, kwargs


NOT_DICTS: tuple[Callable[[dict[str, Any]], Any], ...] = (
    lambda request: list(request.items()), lambda request: None, lambda request: "append", lambda request: 5,
    lambda request: [request], lambda request: tuple(request), lambda request: freeze(request),
    lambda request: MappingProxyType(request), lambda request: OrderedDict(request), lambda request: _Request(request),
)
"""What a caller may hand `append_request` besides a dict: no mapping at all (refused, SESSION-EVENT-ENVELOPE.1), or a
mapping of another class (read as the dict it holds)."""


class ApiRules(RuleBasedStateMachine):
    """The Python API on both sides; the machine supplies `model`, `sut`, `events`, `nodes` and `replaces`."""

    model: Any
    sut: Any
    events: list[dict[str, Any]]
    nodes: list[int]
    replaces: int
    view: Callable[[], ss.View]

    def both(self, call: Callable[[Any], Any], what: str) -> tuple[Any, ...]:
        """`call(session)` on the model and on the implementation: the same outcome, and a refusal changes neither."""
        before = (self.model.session.seq, self.sut.session.seq)
        expected, actual = outcome(lambda: call(self.model.session)), outcome(lambda: call(self.sut.session))
        assert expected == actual, f"{what}: the model {expected}, the implementation {actual}"
        event(f"api: {what} {expected[0]}")
        if expected[0] != "ok":
            assert (self.model.session.seq, self.sut.session.seq) == before, f"{what}: a refused call changed the log"
        elif isinstance(expected[1].get("surfaceOp"), dict):
            self.replaces += 1
        return expected

    @rule(data=st.data())
    def append_through_the_api(self, data: st.DataObject) -> None:
        """`append` with every argument shape, for a valid append or replacement or one at a fast form's edge."""
        view = self.view()
        kind = data.draw(st.sampled_from(("valid", "replacement", "edge")), label="kind")
        if kind == "edge":
            request = {key: value for key, value in edges.edge_request(drawn(data.draw), view, lines=False).items()
                       if key != "op"}
        else:
            strategy = ss.replacements(view) if kind == "replacement" and view.nodes else ss.append_requests(view)
            request = data.draw(strategy, label="request")
        args, kwargs = api_call(data.draw, request)
        self.both(lambda session: session.append(*args, **kwargs), "append")

    @rule(data=st.data(), shape=st.sampled_from(range(len(NOT_DICTS))))
    def append_request_of_what_is_not_a_dict(self, data: st.DataObject, shape: int) -> None:
        """`append_request` of a list, None, a string, a number, a frozen or read-only mapping, a mapping class."""
        request = data.draw(ss.append_requests(self.view()), label="request")
        self.both(lambda session: session.append_request(NOT_DICTS[shape](request)), f"append_request #{shape}")

    @precondition(lambda self: bool(self.events))
    @rule(data=st.data())
    def append_what_the_session_handed_out(self, data: st.DataObject) -> None:
        """An event of the log appended again from its own frozen parts: its FrozenDict data, its FrozenList sources,
        its surface_op (`"append"` or a `Replace`), its ignorable flag."""
        position = data.draw(st.integers(0, len(self.events) - 1), label="event")
        kept = self.sut.session.events[position]
        self.both(lambda session: session.append(kept.type, kept.data, surface_op=kept.surface_op,
                                                 source_event_seqs=kept.source_event_seqs, ignorable=kept.ignorable),
                  "append of a logged event")

    @rule()
    def every_view_of_the_api(self) -> None:
        """The views, including those no snapshot asks for: `complete_log()` is the log, as `events` is."""
        for session in (self.model.session, self.sut.session):
            log = session.complete_log()
            assert isinstance(log, FrozenList) and [e.to_json() for e in log] == self.events, "complete_log() is not the log"
        for name in ("complete_log", "derive_messages", "transcript", "request_header", "request_context"):
            expected, actual = getattr(self.model.session, name)(), getattr(self.sut.session, name)()
            assert _plain(expected) == _plain(actual), f"{name}() differs"
        assert isinstance(self.sut.session.header, FrozenDict) and thaw(self.sut.session.header) == thaw(self.model.session.header)
        assert (self.sut.session.seq, self.sut.session.first_live_seq) == (self.model.session.seq, self.model.session.first_live_seq)


def _plain(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, FrozenList):
        return [item.to_json() if hasattr(item, "to_json") else thaw(item) for item in value]
    return thaw(value)
