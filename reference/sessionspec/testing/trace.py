"""Operation traces: the machine's steps in the protocol's request shapes, and their execution.

A trace is what a failing machine run leaves behind besides Hypothesis's program: a JSON list of
`{"op": "create", id, seed, header}`, `{"op": "append", type, data, surfaceOp?, sourceEventSeqs?,
ignorable?}` and `{"op": "snapshot"}` requests that any implementation (or a testee speaking the
protocol) can re-execute. In-process extensions carry an `x-` prefix: `x-time` (the shared fake
clock's reading), `x-validator` and `x-observer` (a veto, a raising or a reentrant hook for that
append), `x-mutate-input` (the caller changes its request after the append), the `x-mutate` op
(a mutation attempt on a returned value) and the `x-rebuild` op (a fresh session seeded with the
current events, answered with its surface and messages); `x-messages: false` on a snapshot
leaves the derived messages out, so the machine can let the cache fall behind. Values JSON cannot hold
(the deliberately invalid data) are written as tagged objects (`{"$tuple": [...]}`) and restored
on reading, so a replay sends exactly what the machine sent.

`Side` executes one op against one session and answers in the protocol's answer shape; the
machine runs two Sides (the model and the system under test) and compares their answers, and
`sessionspec replay` does the same from a file.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import os
import tempfile
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sessionspec.errors import Kind, SpecViolation
from sessionspec.jsonvalue import thaw

Op = dict[str, Any]
Answer = dict[str, Any]
FORMAT = "sessionspec-trace/1"
REENTRANT_REQUEST: Op = {"type": "turn/start", "data": {"turn": 99}}
"""What a reentrant hook tries to append: any valid request, refused only because it nests."""


# --- encoding of values JSON cannot hold ---------------------------------------------------------


def encode(value: Any) -> Any:
    """A JSON-writable form of `value` that `decode` turns back into the same Python value."""
    if isinstance(value, tuple):
        return {"$tuple": [encode(v) for v in value]}
    if isinstance(value, frozenset):
        return {"$frozenset": [encode(v) for v in value]}
    if isinstance(value, bytes):
        return {"$bytes": value.hex()}
    if isinstance(value, float) and not math.isfinite(value):
        return {"$float": repr(value)}
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 2**63:
        return {"$int": str(value)}
    if isinstance(value, list):
        return [encode(v) for v in value]
    if isinstance(value, dict):
        if all(type(k) is str for k in value) and not any(k.startswith("$") for k in value):
            return {k: encode(v) for k, v in value.items()}
        return {"$pairs": [[encode(k), encode(v)] for k, v in value.items()]}
    return value


_DECODERS: dict[str, Callable[[Any], Any]] = {
    "$tuple": tuple,
    "$frozenset": frozenset,
    "$bytes": bytes.fromhex,
    "$float": float,
    "$int": int,
    "$pairs": lambda pairs: {k if not isinstance(k, list) else tuple(k): v for k, v in pairs},
}


def _object_hook(obj: dict[str, Any]) -> Any:
    if len(obj) == 1:
        (key, value), = obj.items()
        decoder = _DECODERS.get(key)
        if decoder is not None:
            return decoder(value)
    return obj


def dumps(ops: list[Op], **meta: Any) -> str:
    return json.dumps({"format": FORMAT, **meta, "ops": [encode(op) for op in ops]}, indent=1)


def loads(text: str) -> list[Op]:
    document = json.loads(text, object_hook=_object_hook)
    ops: list[Op] = document["ops"] if isinstance(document, dict) else document
    return ops


def write_trace(ops: list[Op], **meta: Any) -> Path:
    """Write a trace to $SESSIONSPEC_TRACE_DIR (default: the temp dir) under a content-addressed name."""
    text = dumps(ops, **meta)
    folder = Path(os.environ.get("SESSIONSPEC_TRACE_DIR") or Path(tempfile.gettempdir()) / "sessionspec-traces")
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"trace-{hashlib.sha256(text.encode('utf-8', 'surrogatepass')).hexdigest()[:12]}.json"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    return path


def read_trace(path: str | Path) -> list[Op]:
    return loads(Path(path).read_text(encoding="utf-8", errors="surrogatepass"))


# --- execution ---------------------------------------------------------------------------------


def error_answer(error: BaseException) -> Answer:
    if isinstance(error, SpecViolation):
        return {"ok": False, "error": {"kind": error.kind.value, "rule": error.rule, "message": str(error)}}
    text = "".join(traceback.format_exception(error)).strip()
    return {"ok": False, "error": {"kind": Kind.INTERNAL.value, "rule": None, "message": f"{error!r}\n{text}"}}


def _event_json(event: Any) -> Any:
    return thaw(event.to_json()) if hasattr(event, "to_json") else thaw(event)


class Side:
    """One implementation driven by trace ops, with the hooks the machine's veto and observer rules use."""

    def __init__(self, factory: Callable[..., Any], clock: Callable[[], int]) -> None:
        self.factory = factory
        self.clock = clock
        self.session: Any = None
        self.validator_mode: str | None = None
        self.observer_mode: str | None = None
        self.candidate: Any = None
        self.reentrant: Answer | None = None
        self._json: dict[int, tuple[Any, Any]] = {}

    def event_json(self, event: Any) -> Any:
        """The plain JSON of an accepted event, computed once per event object (events never change)."""
        key = id(event)
        hit = self._json.get(key)
        if hit is None or hit[0] is not event:
            hit = self._json[key] = (event, _event_json(event))
        return hit[1]

    # Hooks: installed at creation, armed per append by the op's x-validator / x-observer.
    def _validator(self, session: Any, candidate: Any) -> None:
        self.candidate = _event_json(candidate)
        mode = self.validator_mode
        if mode == "raise":
            raise ValueError("vetoed by the machine")
        if mode == "violation":
            raise SpecViolation("SESSION-APPEND-COMMIT.2", Kind.VETO, "vetoed with the validator's own rule")
        if mode == "reentrant":
            session.append_request(copy.deepcopy(REENTRANT_REQUEST))

    def _observer(self, session: Any, event: Any) -> None:
        mode = self.observer_mode
        if mode == "raise":
            raise RuntimeError("an observer failed")
        if mode == "reentrant":
            try:
                session.append_request(copy.deepcopy(REENTRANT_REQUEST))
                self.reentrant = {"ok": True}
            except Exception as error:
                self.reentrant = error_answer(error)

    def run(self, op: Op) -> Answer:
        """Execute one op; never raises (a crash is an `internal` answer)."""
        try:
            return self._run(op)
        except Exception as error:
            return error_answer(error)

    def _run(self, op: Op) -> Answer:
        name = op.get("op")
        if name == "create":
            seed = op.get("seed")
            self._json.clear()
            self.session = self.factory(op["id"], copy.deepcopy(seed), copy.deepcopy(op.get("header")), clock=self.clock,
                                        validators=[self._validator], observers=[self._observer])
            return {"ok": True, "firstLiveSeq": self.session.first_live_seq, "seq": self.session.seq}
        if name == "append":
            request = {k: copy.deepcopy(v) for k, v in op.items() if k != "op" and not k.startswith("x-")}
            self.validator_mode, self.observer_mode = op.get("x-validator"), op.get("x-observer")
            self.candidate = self.reentrant = None
            try:
                event = self.session.append_request(request)
            finally:
                self.validator_mode = self.observer_mode = None
            if op.get("x-mutate-input") and isinstance(request.get("data"), (dict, list)):
                _mutate_json(request["data"])  # SESSION-IMMUTABILITY.3: the caller's copy, not the log
            answer: Answer = {"ok": True, "event": _event_json(event)}
            if self.reentrant is not None:
                answer["x-reentrant"] = self.reentrant
            if op.get("x-observer") == "raise":
                answer["x-observerFailures"] = len(self.session.observer_failures)
            return answer
        if name == "snapshot":
            surface = self.session.surface
            answer = {"ok": True, "events": [self.event_json(e) for e in self.session.events],
                      "surface": {"nodes": list(surface.nodes), "replaceGeneration": surface.replace_generation},
                      "firstLiveSeq": self.session.first_live_seq}
            if op.get("x-messages", True):  # false: leave the derived cache alone (it is exercised at other points)
                answer["messages"] = thaw(list(self.session.derive_messages()))
            return answer
        if name == "x-rebuild":
            # Every accepted log re-seeds: a fresh session of the same implementation, from these events.
            fresh = self.factory("rebuild", self.session.events, clock=self.clock)
            surface = fresh.surface
            return {"ok": True, "seq": fresh.seq, "firstLiveSeq": fresh.first_live_seq,
                    "surface": {"nodes": list(surface.nodes), "replaceGeneration": surface.replace_generation},
                    "messages": thaw(list(fresh.derive_messages()))}
        if name == "x-mutate":
            return {"ok": True, "raised": attempt_mutation(self.session, op["target"])}
        return {"ok": False, "error": {"kind": Kind.UNSUPPORTED.value, "rule": None, "message": f"unknown op {name!r}"}}


MUTATIONS: dict[str, Callable[[Any], None]] = {
    "events.append": lambda s: s.events.append(None),
    "events[0]=": lambda s: s.events.__setitem__(0, None),
    "event.type=": lambda s: setattr(s.events[-1], "type", "forged"),
    "event.seq=": lambda s: setattr(s.events[-1], "seq", 10**6),
    "event.data[k]=": lambda s: _mutate_json(s.events[-1].data),
    "event.sourceEventSeqs.append": lambda s: s.events[-1].source_event_seqs.append(0),
    "messages.append": lambda s: s.derive_messages().append({}),
    "message[k]=": lambda s: s.derive_messages()[-1].__setitem__("id", "forged"),
    "message.content.append": lambda s: s.derive_messages()[-1]["content"].append({"type": "text", "text": "x"}),
    "surface.nodes.append": lambda s: s.surface.nodes.append(0),
    "surface.nodes.reverse": lambda s: s.surface.nodes.reverse(),
    "transcript.append": lambda s: s.transcript().append(None),
    "header[k]=": lambda s: s.header.__setitem__("id", "forged"),
}
"""Mutation attempts on returned values (decision 5): each must raise TypeError and change nothing."""


def _mutate_json(value: Any) -> None:
    if isinstance(value, dict):
        value["forged"] = True
    elif isinstance(value, list):
        value.append("forged")
    else:
        raise LookupError("a scalar has nothing to mutate")


def attempt_mutation(session: Any, target: str) -> str | None:
    """The exception type name the attempt raised, "n/a" when there was nothing to attempt it on, else None."""
    try:
        MUTATIONS[target](session)
    except (IndexError, LookupError, AttributeError) as error:
        if isinstance(error, AttributeError) and "immutable" in str(error):
            return type(error).__name__
        return "n/a"
    except Exception as error:
        return type(error).__name__
    return None


def differences(expected: Answer, actual: Answer, *, compare_time: bool = True) -> list[str]:
    """How `actual` differs from `expected`: errors by kind and rule, everything else exactly."""
    if expected.get("ok") != actual.get("ok"):
        return [f"expected {_brief(expected)}, got {_brief(actual)}"]
    if not expected.get("ok"):
        e, a = expected["error"], actual["error"]
        if (e.get("kind"), e.get("rule")) != (a.get("kind"), a.get("rule")):
            return [f"rejected differently: expected {e.get('rule')} [{e.get('kind')}], got {a.get('rule')} [{a.get('kind')}]: "
                    f"{a.get('message')}"]
        return []
    out = []
    for key in sorted(set(expected) | set(actual)):
        left, right = _normal(expected.get(key), compare_time), _normal(actual.get(key), compare_time)
        if key in ("x-reentrant",):
            out.extend(differences(left or {}, right or {}, compare_time=compare_time))
        elif left != right:
            out.append(f"{key}: expected {_short(left)}, got {_short(right)}")
    return out


def _normal(value: Any, compare_time: bool) -> Any:
    if compare_time:
        return value
    if isinstance(value, dict):
        return {k: _normal(v, compare_time) for k, v in value.items() if k != "time"}
    if isinstance(value, list):
        return [_normal(v, compare_time) for v in value]
    return value


def _brief(answer: Answer) -> str:
    if answer.get("ok"):
        return "acceptance"
    error = answer["error"]
    return f"rejection {error.get('rule')} [{error.get('kind')}]: {str(error.get('message'))[:400]}"


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=repr)
    return text if len(text) < 600 else text[:600] + "..."
