"""The runner's reference (`conformance.oracle`) answers exactly what `model.Session` answers, byte for byte.

The oracle drops the model's self-checks, carries its fold from one event to the next and computes
its views once per log (see the module's docstring for why each is answer-preserving); these tests
hold it to the model through the one executor, on the vectors and on the requests the conformance
machine sends, rejections, seeds, hooks and raw lines included.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sessionspec import model
from sessionspec.conformance import vectors as vector_files
from sessionspec.testing import breaking, loops
from sessionspec.testing import choose as generate
from sessionspec.testing import strategies as ss
from sessionspec.testing.testee_machine import append_request
from sessionspec.wire.breaching import breaches_of
from sessionspec.wire.executor import Executor
from sessionspec.wire.oracle import Judged, Reference, ReferenceExecutor, reference_answer
from sessionspec.wire.oracle import judged as oracle_breaches
from sessionspec.wire.protocol import dumps
from sessionspec.wire.requestline import encodable
from sessionspec.wire.verdict import Breach


def both_answer(oracle: Executor, naive: Executor, request: Any) -> dict[str, Any]:
    """Run `request` on both as a line, as the runner does; the answers must be the same text."""
    line = encodable(request)
    assert line is not None
    expected, actual = reference_answer(naive, line), reference_answer(oracle, line)
    assert dumps(actual) == dumps(expected), (request, expected, actual)
    return expected


def test_the_oracle_runs_the_models_code_without_its_contracts() -> None:
    for name in ("append", "append_request"):
        assert not hasattr(getattr(Reference, name), "__wrapped__"), name
    assert not hasattr(Reference.create, "__wrapped__")
    assert issubclass(Reference, model.Session)


def test_the_oracle_answers_every_vector_step_as_the_model_does() -> None:
    for vector in vector_files.load(vector_files.DEFAULT_DIR):
        oracle, naive = ReferenceExecutor(), Executor(model.Session.create, "model")
        for step in vector["steps"]:
            both_answer(oracle, naive, step.get("line", step.get("request")))
        both_answer(oracle, naive, {"op": "snapshot"})


def _machine_steps(data: st.DataObject, send: Callable[[Any], dict[str, Any]], steps: int) -> None:
    """What the conformance machine sends, step by step, each drawn for the log `send`'s snapshot shows."""
    look = send({"op": "snapshot"})
    events, nodes = (look["events"], look["surface"]["nodes"]) if look["ok"] else ([], [])
    for step in range(steps):
        view = ss.View(tuple(events), tuple(nodes))
        kind = data.draw(st.sampled_from(["loop", "appends", "odd", "reseed", "fold"]), label="kind")
        choose = generate.seeded(data.draw(st.integers(0, 2**32 - 1), label="seed"))
        if kind == "loop":
            start = loops.state_of(events, nodes)
            requests: list[Any] = [{"op": "append", **r} for r in data.draw(loops.agent_loops(max_turns=1, start=start))
                                   .requests]
        elif kind == "appends":
            requests = [append_request(choose, view, hooks=True) for _ in range(8)]
        elif kind == "odd":
            requests = [breaking.odd_line(choose), breaking.broken_log_request(choose, view, f"s{step + 2}")]
        elif kind == "reseed":
            requests = [{"op": "create", "id": f"s{step + 2}", "seed": events[: choose(len(events) + 1)], "header": None}]
        else:
            requests = [{"op": "fold", "events": events}, {"op": "repair", "events": events}]
        for request in requests:
            if encodable(request) is not None:
                send(request)
        look = send({"op": "snapshot"})
        if look["ok"]:
            events, nodes = look["events"], look["surface"]["nodes"]
        else:
            send({"op": "create", "id": f"t{step}", "seed": None, "header": None})
            events, nodes = [], []


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.data())
def test_the_oracle_answers_what_the_conformance_machine_sends_as_the_model_does(data: st.DataObject) -> None:
    oracle, naive = ReferenceExecutor(), Executor(model.Session.create, "model")
    both_answer(oracle, naive, {"op": "create", "id": "s1", "seed": None, "header": None})
    _machine_steps(data, lambda request: both_answer(oracle, naive, request), data.draw(st.integers(1, 12), label="steps"))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.data())
def test_answers_remembered_by_their_path_are_the_models_answers(data: st.DataObject) -> None:
    """`ReferenceExecutor.answer` over examples that repeat an earlier one's first lines and then go their own way
    (as Hypothesis's mutations make them), each line held to a fresh model that sees only its own example."""
    oracle = ReferenceExecutor()
    examples: list[list[bytes]] = []
    judged: list[tuple[bytes, Judged, tuple[Breach, ...]]] = []
    for number in range(data.draw(st.integers(2, 6), label="examples")):
        naive = Executor(model.Session.create, "model")
        lines: list[bytes] = []

        def send(request: Any, naive: Executor = naive, lines: list[bytes] = lines) -> dict[str, Any]:
            line = request if isinstance(request, bytes) else encodable(request)
            assert line is not None
            lines.append(line)
            before = naive.session
            expected = reference_answer(naive, line)
            answer, written = oracle.answer(line)
            assert written == dumps(answer) == dumps(expected), (request, expected, answer)
            # The breaches, as the session the line met judges them now, and as the oracle works them out later.
            judged.append((line, oracle.judgement(), breaches_of(line, expected, before if before is naive.session else None)))
            return expected

        send({"op": "create", "id": "s1", "seed": None, "header": None if number % 2 else {"version": 0, "createdAt": 1}})
        repeat: bool = data.draw(st.booleans(), label="repeat")
        if examples and repeat:
            earlier = data.draw(st.sampled_from(examples), label="earlier")
            for line in earlier[1 : data.draw(st.integers(1, len(earlier)), label="cut")]:
                send(line)
        _machine_steps(data, send, data.draw(st.integers(0, 4), label="steps"))
        examples.append(lines)
    for line, later, now in judged:  # worked out after every example: the oracle's sessions have moved on since
        assert oracle_breaches(later) == now, line


def test_a_path_that_leaves_the_tree_gets_the_state_of_its_last_known_step() -> None:
    """Two examples that share their create and then append different messages: the second is answered from the
    state the create left, not from the first example's (its log, its surface, its views kept by log length)."""
    oracle = ReferenceExecutor()
    create = {"op": "create", "id": "s1", "seed": None, "header": None}
    for text in ("first", "second", "first"):
        naive = Executor(model.Session.create, "model")
        message = {"op": "append", "type": "user/message", "surfaceOp": "append",
                   "data": {"id": f"u-{text}", "role": "user", "source": {"kind": "user"},
                            "content": [{"type": "text", "text": text}]}}
        for request in (create, {"op": "snapshot"}, message, {"op": "snapshot"}):
            line = encodable(request)
            assert line is not None
            answer, written = oracle.answer(line)
            assert written == dumps(answer) == dumps(reference_answer(naive, line)), (text, request)


def test_a_snapshots_line_is_the_protocols_text_of_its_answer_whichever_writer_writes_it() -> None:
    """The oracle joins a snapshot's line from each event's text (`wire.snapshotline`): byte for byte `dumps`'s, when
    orjson writes the log and when one event sends the whole line to the lossless writer (a lone surrogate; nesting
    past orjson's bound), whose text of a number differs from orjson's (`1e-07`, not `1e-7`)."""
    oracle = ReferenceExecutor()
    deep = b'{"a":' * 300 + b"1" + b"}" * 300
    lines = [b'{"op":"create","id":"s","seed":null,"header":null}',
             b'{"op":"append","type":"plugin/note","data":{"n":1e-7,"f":0.1}}', b'{"op":"snapshot"}',
             b'{"op":"append","type":"plugin/note","data":{"t":"\\ud800"}}', b'{"op":"snapshot"}',
             b'{"op":"append","type":"plugin/note","data":' + deep + b"}", b'{"op":"snapshot"}',
             b'{"op":"snapshot","x-messages":false}', b'{"op":"create","id":"t","seed":null,"header":null}',
             b'{"op":"append","type":"plugin/note","data":' + deep + b"}", b'{"op":"snapshot"}']
    texts = []
    for line in lines:
        answer, written = oracle.answer(line)
        assert answer["ok"] is True, (line, answer)
        assert written == dumps(answer), line
        texts.append(written)
    assert b"1e-07" in texts[4] and b"1e-7," in texts[2]  # the first snapshot orjson's, the one after the surrogate not
    assert b"\\ud800" in texts[6] and b'{"a":' * 300 in texts[6] and b'{"a":' * 300 in texts[10]


def test_a_request_carrying_a_log_the_lossless_writer_writes_is_joined_from_the_kept_texts() -> None:
    """A reseed, `fold` or `repair` of a log holding a lone surrogate is written by the lossless writer; the exchange
    joins it from the texts the oracle kept for each event (`encodable(request, known)`), byte for byte as before."""
    oracle = ReferenceExecutor()
    for line in (b'{"op":"create","id":"s","seed":null,"header":null}',
                 b'{"op":"append","type":"plugin/note","data":{"t":"\\ud800","n":1e-7}}',
                 b'{"op":"append","type":"plugin/note","data":{"n":0.5}}'):
        assert oracle.answer(line)[0]["ok"] is True
    events = oracle.answer(b'{"op":"snapshot"}')[0]["events"]
    assert all(oracle.known_text(event) is not None for event in events)  # the snapshot's line kept them
    asked: list[Any] = []

    def known(value: Any) -> bytes | None:
        asked.append(value)
        return oracle.known_text(value)

    for request in ({"op": "fold", "events": events}, {"op": "repair", "events": events[:1]},
                    {"op": "create", "id": "t", "seed": list(events), "header": {"version": 0, "createdAt": 1}},
                    {"op": "fold", "events": [*events, {"type": "x", "seq": 9, "time": 0, "data": "\ud801"}]}):
        line = encodable(request, known)
        assert line is not None and line == encodable(request) == dumps(request), request
        assert b"\\ud800" in line and b"1e-07" in line
    assert len(asked) >= 2 * len(events) + 1
    assert encodable({"op": "fold", "events": [(1, 2), "\ud800"]}, known) is None  # a tuple: JSON text cannot carry it
