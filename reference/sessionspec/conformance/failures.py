"""Failure lists: the divergences an implementation is known to have, kept honest.

One entry a line: a vector id, or a machine family's key (`append:SESSION-LOSSLESS-JSON.2`; a bare
rule ID matches every op), each optionally followed by what the testee answers (`accepted`, its
kind, or `differs:FIELDS`); `#` starts a comment. A listed family is known from the start of the
run, so the machine's search looks past it for new ones. A listed case that does not diverge, or
diverges with another answer, fails the run, so the list shrinks as the implementation is fixed
and never hides a new bug (the protobuf conformance runner's rule).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from sessionspec.wire.divergence import Divergence

_RULE_ID = re.compile(r"^SESSION-[A-Z-]+\.\d+$")


@dataclass(frozen=True)
class Entry:
    key: str
    kind: str | None
    line: int

    def text(self) -> str:
        return self.key if self.kind is None else f"{self.key} {self.kind}"

    def matches(self, divergence: Divergence) -> bool:
        keys = (divergence.id,) if divergence.source == "vector" else (divergence.key, divergence.rule)
        return self.key in keys and (self.kind is None or self.kind == divergence.answered)


def parse(text: str) -> list[Entry]:
    entries = []
    for number, raw in enumerate(text.splitlines(), 1):
        words = raw.split("#", 1)[0].split()
        if words:
            entries.append(Entry(words[0], words[1] if len(words) > 1 else None, number))
    return entries


def key_of(divergence: Divergence) -> str:
    """Vectors are listed by id; machine divergences by their family's key (they have no stable id)."""
    return divergence.id if divergence.source == "vector" else divergence.key


def known(entries: Iterable[Entry]) -> frozenset[str]:
    """The machine families a list names in full (key and answer): the search treats them as found."""
    return frozenset(entry.text() for entry in entries if entry.kind is not None and ":" in entry.key)


@dataclass
class Verdict:
    expected: list[Divergence]
    unexpected: list[Divergence]
    stale: list[str]
    entries: dict[int, Entry] = field(default_factory=dict)
    """The entry that lists each expected divergence, by the divergence's id()."""

    @property
    def ok(self) -> bool:
        return not self.unexpected and not self.stale


def judge(entries: Iterable[Entry], divergences: Iterable[Divergence], *, searched: bool = True) -> Verdict:
    """Split divergences into listed and new, and name the entries that no longer hold.

    `divergences` includes the known families the search met (it looks past them, but notes them);
    `searched=False` (a run without the machine) judges only the vector entries.
    """
    entries = list(entries)
    expected: list[Divergence] = []
    unexpected: list[Divergence] = []
    matched: set[int] = set()
    listing: dict[int, Entry] = {}
    for divergence in divergences:
        hits = [entry for entry in entries if entry.matches(divergence)]
        matched.update(entry.line for entry in hits)
        (expected if hits else unexpected).append(divergence)
        if hits:
            listing[id(divergence)] = hits[0]
    stale = []
    for entry in entries:
        if entry.line in matched:
            continue
        if not searched and not _is_vector_id(entry.key):
            continue
        stale.append(f"line {entry.line}: {entry.text()} passes now (remove it)")
    return Verdict(expected, unexpected, stale, listing)


def _is_vector_id(key: str) -> bool:
    """A vector id (`SESSION-SURFACE-REPLACE.2-reject`, `scenario-seed`), not a family key or a bare rule ID."""
    return ":" not in key and not _RULE_ID.match(key)


def rewrite(path: Path, divergences: Iterable[Divergence]) -> None:
    """`--fix`: the list of what was observed, one entry per key, in two sections by level, each entry with a comment
    saying what the testee answers where the reference does what (edit it to say why)."""
    notes: dict[tuple[str, str], str] = {}
    for d in divergences:
        notes.setdefault((d.level, f"{key_of(d)} {d.answered}"), f"testee {d.answered}; reference {_verdict(d)}")
    lines = ["# Known conformance divergences (sessionspec conform --failures FILE --fix writes this; edit the comments).",
             "# One entry a line: a vector id or a family (OP:RULE), then what the testee answers; # starts a comment."]
    for level, title in (("required", "deviations from what the seeds state"), ("recommended", "rules this spec added")):
        entries = sorted((entry, note) for (at, entry), note in notes.items() if at == level)
        if entries:
            lines += ["", f"# --- {level}: {title}"]
            lines += [f"{entry}  # {note}" for entry, note in entries]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _verdict(d: Divergence) -> str:
    return f"rejects ({d.rule})" if d.expected.get("ok") is False else "accepts"
