"""A divergence: one request the testee answered otherwise than the reference, and the family it belongs to.

A family is what a person fixes once: the op, the reference's verdict (its rule, or acceptance)
and the testee's (its kind, acceptance, or which fields of an accepting answer differ), written
as a failure-list line: `append:SESSION-LOSSLESS-JSON.2 accepted`, `snapshot:accepts
differs:messages`. The runner reports one shrunk divergence per family and searches on for new
families; a failure list names families (or vector ids) known to diverge.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from sessionspec.preview import as_text, bounded, clipped
from sessionspec.wire.protocol import ANSWER_KEYS, Answer
from sessionspec.wire.trace import Trace, line_entry, write_trace
from sessionspec.wire.verdict import Breach, Verdict, judge

_FIELD = re.compile(r"^(x-reentrant: )?(?:([\w-]+): expected|answer (?:has|lacks) '([\w-]+)')")
_EXTRA = "answer has "


def _error(answer: Answer) -> dict[str, Any] | None:
    error = answer.get("error")
    return error if not answer.get("ok") and isinstance(error, dict) else None


def verdict(answer: Answer) -> str:
    """`accepted`, or the kind the answer rejects with (`testee-timeout` and the like for a testee failure)."""
    error = _error(answer)
    return "accepted" if error is None else as_text(error.get("kind"))  # bounded: the testee chose it


@dataclass
class Divergence:
    """One disagreement: what was sent (from the last create on), both answers, and why they differ.

    `rule` and `kind` come from the reference's rejection (or, when the reference accepted, from
    the testee's); `answered` is the testee's verdict, which failure lists record so that a case
    that starts failing differently is noticed.
    """

    source: str
    id: str
    op: str | None
    rule: str | None
    kind: str | None
    expected: Answer
    actual: Answer
    trace: list[Any]
    why: list[str] = field(default_factory=list)
    answered: str = "accepted"
    replay: str | None = None
    level: str = "required"
    """`required` when the testee deviates from what the seeds state, `recommended` when only from a rule this spec
    added (`sessionspec.wire.verdict`)."""
    breaches: tuple[Breach, ...] = ()
    """Every rule the request breaks (the reference's first among them), each with its kind and level."""
    named: str | None = None
    """The rule the family is named after when it is not the reference's: the check-order rule, for a testee that
    rejected with the kind of another rule the request breaks; the first required rule the request breaks, when
    the reference's own is only recommended for the request's op (`wire.verdict`)."""
    aftermath: dict[str, str] = field(default_factory=dict)
    """What the testee answered to a snapshot, a valid append and a repair after the trace: "ok", or how it failed."""

    @property
    def key(self) -> str:
        """The request's op and the reference's verdict: `append:SESSION-LOSSLESS-JSON.2`, `snapshot:accepts`."""
        op = self.op if self.op is not None else "line"  # a raw line, or a request without a string op
        if self.named is not None:
            return f"{op}:{self.named}"
        return f"{op}:{self.rule if _error(self.expected) is not None else 'accepts'}"

    @property
    def family(self) -> str:
        """What a person fixes once, as a failure-list line: the key and the testee's verdict."""
        return f"{self.key} {self.answered}"

    def to_json(self) -> dict[str, Any]:
        """For a report: values a testee or the machine made (answers, requests) are `bounded`, so a report never
        recurses into or copies a value built to exhaust it; the trace file holds the requests whole."""
        return {"source": self.source, "id": self.id, "family": self.family, "level": self.level, "op": self.op,
                "rule": self.rule, "kind": self.kind, "breaches": [b.to_json() for b in self.breaches],
                "expected": bounded(self.expected), "actual": bounded(self.actual), "why": self.why,
                "trace": [line_entry(request) if isinstance(request, bytes) else bounded(request)
                          for request in self.trace], "aftermath": self.aftermath,
                "replay": self.replay}


def _cut(word: Any) -> Any:
    return clipped(word, 200) if isinstance(word, str) else word


def divergence(source: str, case_id: str, op: Any, expected: Answer, actual: Answer, trace: list[Any],
               why: list[str], *, breaches: tuple[Breach, ...] = ()) -> Divergence:
    """A Divergence filed under the reference's rule and kind, else the testee's, and judged by level."""
    blame = _error(expected) or _error(actual) or {}
    # Cut: when the reference accepted, the rule and kind are the testee's own words.
    rule, kind = _cut(blame.get("rule")), _cut(blame.get("kind"))
    answered = verdict(actual)
    if answered == verdict(expected):  # the same verdict: what differs is the answer's content
        fields = sorted({m.group(2) or m.group(3) for m in (_FIELD.match(line) for line in why) if m})
        answered = f"differs:{','.join(fields) or 'answer'}"
    judged = judge(op, trace[-1] if trace else None, expected, actual, breaches, why)
    if why and all(line.startswith(_EXTRA) for line in why):  # only keys the reference's answer does not have
        judged = Verdict(judged.level, ANSWER_KEYS)
    return Divergence(source, case_id, op if isinstance(op, str) else None, rule if isinstance(rule, str) else None,
                      kind if isinstance(kind, str) else None, expected, kept(actual), list(trace), list(why),
                      answered, level=judged.level, breaches=breaches, named=judged.rule)


def kept(answer: Answer) -> Answer:
    """The testee's answer as a divergence keeps it: itself when a report can hold it, else an answer of the same
    shape (`ok`, and `error` with its kind) whose large values are bounded previews. A run keeps every divergence
    it finds; a testee whose every answer holds a 100,000-deep array or 60 MB would otherwise make the runner keep
    them all (gigabytes, measured)."""
    if bounded(answer) is answer:
        return answer
    out: Answer = {}
    for key in list(answer)[:SHOWN_KEYS]:
        value = answer[key]
        if key == "error" and isinstance(value, dict):
            value = {k: (v if k == "kind" and isinstance(v, str) and len(v) <= 200 else bounded(v))
                     for k, v in list(value.items())[:SHOWN_KEYS]}
        out[key] = value if key == "ok" else bounded(value)
    return out


SHOWN_KEYS: Final = 64
"""Keys of a large answer (and of its error) a divergence keeps."""


def write_traces(found: Iterable[Divergence], folder: Path, replay: Path | None = None) -> None:
    """Each divergence's requests as a trace file in `folder`, named in its `replay` for the one-line reproduction (a
    replay's divergences name the trace replayed). A file that cannot be written leaves its divergence without one,
    never the run without a report."""
    for each in found:
        if each.source == "replay" and replay is not None:
            each.replay = str(replay)
            continue
        trace = Trace(each.trace, "conform" if each.source == "machine" else each.source, each.id, None,
                      {"family": each.family, "level": each.level, "rule": each.rule, "why": each.why})
        try:
            each.replay = str(write_trace(trace, folder))
        except (OSError, ValueError):
            each.replay = None
