"""Failure lists: the divergences an implementation is known to have, kept honest.

One entry a line: a vector id, or a rule ID, each optionally followed by the kind the testee
answers (or `accepted`); `#` starts a comment. A listed case that does not diverge, or diverges
with another kind, fails the run, so the list shrinks as the implementation is fixed and never
hides a new bug (the protobuf conformance runner's rule).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from sessionspec.conformance.machine import Divergence


@dataclass(frozen=True)
class Entry:
    key: str
    kind: str | None
    line: int

    def text(self) -> str:
        return self.key if self.kind is None else f"{self.key} {self.kind}"


def parse(text: str) -> list[Entry]:
    entries = []
    for number, raw in enumerate(text.splitlines(), 1):
        words = raw.split("#", 1)[0].split()
        if words:
            entries.append(Entry(words[0], words[1] if len(words) > 1 else None, number))
    return entries


def key_of(divergence: Divergence) -> str:
    """Vectors are listed by id; machine divergences by rule (they have no stable id)."""
    if divergence.source == "vector":
        return divergence.id
    return divergence.rule or divergence.id


@dataclass
class Verdict:
    expected: list[Divergence]
    unexpected: list[Divergence]
    stale: list[str]

    @property
    def ok(self) -> bool:
        return not self.unexpected and not self.stale


def judge(entries: Iterable[Entry], divergences: Iterable[Divergence]) -> Verdict:
    """Split divergences into listed and new, and name the entries that no longer hold."""
    listed = {entry.key: entry for entry in entries}
    seen: dict[str, set[str | None]] = {}
    expected, unexpected = [], []
    for divergence in divergences:
        key = key_of(divergence)
        seen.setdefault(key, set()).add(divergence.answered)
        entry = listed.get(key)
        if entry is not None and (entry.kind is None or entry.kind == divergence.answered):
            expected.append(divergence)
        else:
            unexpected.append(divergence)
    stale = []
    for entry in listed.values():
        kinds = seen.get(entry.key)
        if kinds is None:
            stale.append(f"line {entry.line}: {entry.text()} passes now (remove it)")
        elif entry.kind is not None and entry.kind not in kinds:
            stale.append(f"line {entry.line}: {entry.text()} fails differently ({', '.join(sorted(map(str, kinds)))})")
    return Verdict(expected, unexpected, stale)


def rewrite(path: Path, divergences: Iterable[Divergence]) -> None:
    """`--fix`: the list of what was observed, one entry per key, sorted."""
    observed = sorted({f"{key_of(d)} {d.answered}" if d.answered else key_of(d) for d in divergences})
    header = "# Known conformance divergences (sessionspec conform --failures FILE --fix writes this).\n"
    path.write_text(header + "".join(f"{line}\n" for line in observed), encoding="utf-8")
