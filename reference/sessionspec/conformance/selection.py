"""What a run covers: `conform --list`, and `--run`/`--skip` patterns over stable ids (spec/10, "Selection").

A maintainer who fixed one rule wants to rerun the vectors of that rule, not the whole suite; a
CI that cannot yet run the machine wants the vectors alone. So every case has an id that stays the
same from run to run, and a run may be narrowed by globs (`fnmatch`) over them:

- a **vector** by its id (`SESSION-SEED-ACCEPTANCE.3-reject`) or by any rule it covers;
- a **rule** by its id (`SESSION-LOSSLESS-TEXT.*`): the vectors covering it, and the machine's
  families named after it;
- the **machine** by its op families (`machine:append`, `machine:fold`, ...; `machine:*` is the
  whole search): a machine family is kept when its op and its rule are selected;
- a **storage case** (the storage phase, `conformance.storagephase`) by its id (a storage vector's,
  `repair:ID`, `save:SESSION:BACKEND`, `crash:BACKEND`) or its rules
  (`--skip 'SESSION-CONFORMANCE-STORAGE.*'` leaves out the whole phase).

A vector is run when a `--run` pattern (if any) matches it and no `--skip` pattern does; the
machine runs when, with `--run` patterns, one of them names a machine family or a rule. A pattern
that matches nothing is an error (exit 2, the pattern named): a typo must never make a run pass by
running nothing. A selected run is partial (a failure list is not rewritten from it) and its report
says what it left out.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from sessionspec.conformance.failures import Entry as Listed
from sessionspec.conformance.failures import Verdict, judge
from sessionspec.conformance.storagephase import cases as storage_cases
from sessionspec.levels import ground_of
from sessionspec.rules import RULES
from sessionspec.wire.divergence import Divergence
from sessionspec.wire.protocol import OPS, OPTIONAL_OPS

MACHINE_OPS: Final = (*(op for op in OPS if op != "hello"), "x-append", "x-rebuild", "x-mutate", "line")
"""The ops the machine sends (`line`: a request line that is not a JSON object), each a family of its search."""


class SelectionError(ValueError):
    """A pattern that matches no id: the run would silently cover less than asked."""


@dataclass(frozen=True)
class Entry:
    """One selectable id, for `--list`: what it is, its level, and what it is about."""

    kind: str
    """"vector", "storage", "rule" or "machine"."""
    id: str
    level: str
    about: str = ""
    rules: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "id": self.id, "level": self.level, "about": self.about, "rules": list(self.rules)}


def rule_level(rule_id: str) -> str:
    """A rule's level as `--list` shows it: its ground's, and the append's where that differs (decision 1)."""
    try:
        ground = ground_of(rule_id)
    except KeyError:
        return "unknown"
    if ground.on_append is not None and ground.on_append != ground.level:
        return f"{ground.level.value}, {ground.on_append.value} on append"
    return ground.level.value


def catalog(vectors: Sequence[dict[str, Any]], stored: Sequence[dict[str, Any]] = ()) -> list[Entry]:
    """Every selectable id: the vectors, the storage phase's cases (of the storage vectors `stored`), the registered
    rules, the machine's op families."""
    out = [Entry("vector", str(v["id"]), str(v.get("level") or "required"), str(v.get("summary", "")),
                 tuple(v.get("rules", ()))) for v in vectors]
    out.extend(Entry("storage", case.names[0], case.level, case.about, case.names[1:]) for case in storage_cases(stored))
    out.extend(Entry("rule", rule.id, rule_level(rule.id), rule.summary) for rule in sorted(RULES.values(), key=_order))
    out.extend(Entry("machine", f"machine:{op}", "required" + (" (an optional op)" if op in OPTIONAL_OPS else ""),
                     f"the machine's {op} requests" if op != "line" else "the machine's lines that are not requests")
               for op in MACHINE_OPS)
    return out


def _order(rule: Any) -> tuple[str, int]:
    family, _, number = str(rule.id).rpartition(".")
    return family, int(number) if number.isdigit() else 0


@dataclass
class Selection:
    """`--run` and `--skip` patterns; `left_out` collects what a run left out because of them."""

    run: tuple[str, ...] = ()
    skip: tuple[str, ...] = ()
    left_out: list[str] = field(default_factory=list)

    @property
    def active(self) -> bool:
        return bool(self.run or self.skip)

    def check(self, vectors: Sequence[dict[str, Any]], stored: Sequence[dict[str, Any]] = ()) -> None:
        """Raise SelectionError naming the first pattern that matches no id at all."""
        ids = [entry.id for entry in catalog(vectors, stored)]
        for pattern in (*self.run, *self.skip):
            if not fnmatch.filter(ids, pattern):
                raise SelectionError(f"the pattern {pattern!r} matches no vector, storage case, rule or machine family "
                                     "(see sessionspec conform --list)")

    def wants(self, ids: Iterable[str]) -> bool:
        """Whether a case known by `ids` (its own id first, then its rules) is selected."""
        names = list(ids)
        if self.run and not any(fnmatch.fnmatchcase(name, pattern) for name in names for pattern in self.run):
            return False
        return not any(fnmatch.fnmatchcase(name, pattern) for name in names for pattern in self.skip)

    def vectors(self, vectors: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The vectors selected; the others are noted as left out."""
        kept = [v for v in vectors if self.wants([str(v["id"]), *v.get("rules", ())])]
        if len(kept) < len(vectors):
            self.left_out.append(f"{len(vectors) - len(kept):,} of {len(vectors):,} vectors")
        return kept

    def storage(self, stored: Sequence[dict[str, Any]], backends: Sequence[str]) -> None:
        """Note the storage cases (of the storage vectors `stored`, for the declared `backends`) the patterns leave
        out: the storage phase asks `wants` of each case as it comes to it."""
        every = list(storage_cases(stored, backends))
        left = sum(not self.wants(case.names) for case in every)
        if left:
            self.left_out.append(f"{left:,} of {len(every):,} storage cases")

    def machine(self) -> bool:
        """Whether the machine's search runs: no `--run` pattern, or one naming a machine family or a rule; and
        `--skip` does not leave out the whole machine."""
        whole = ["machine:" + op for op in MACHINE_OPS]
        if self.skip and all(any(fnmatch.fnmatchcase(name, p) for p in self.skip) for name in whole):
            self.left_out.append("the machine's search (--skip)")
            return False
        if self.run and not any(fnmatch.fnmatchcase(name, p) for p in self.run for name in [*whole, *RULES]):
            self.left_out.append("the machine's search (no --run pattern names a machine family or a rule)")
            return False
        return True

    def divergences(self, found: list[Divergence]) -> list[Divergence]:
        """The machine's divergences whose op and rule are selected (those of vectors were selected already)."""
        kept = [d for d in found if d.source == "vector" or self._machine_wants(d)]
        if len(kept) < len(found):
            ids = {id(d) for d in kept}
            families = sorted({d.family for d in found if id(d) not in ids})
            self.left_out.append("machine families " + ", ".join(families))
        return kept

    def _machine_wants(self, found: Divergence) -> bool:
        names = [f"machine:{found.op or 'line'}", *(rule for rule in (found.named, found.rule) if rule)]
        if self.run and not any(fnmatch.fnmatchcase(name, p) for name in names for p in self.run):
            # a --run naming only machine ops keeps every rule of them; one naming rules keeps those rules
            return False
        return not any(fnmatch.fnmatchcase(name, p) for name in names for p in self.skip)

    def describe(self) -> str:
        return " ".join([*(f"--run {p}" for p in self.run), *(f"--skip {p}" for p in self.skip)])

    def to_json(self) -> dict[str, Any]:
        return {"run": list(self.run), "skip": list(self.skip), "leftOut": list(self.left_out)}


def listing(entries: Sequence[Entry], *, tty: bool) -> list[str]:
    """`--list`: on a terminal, grouped and aligned with a heading per kind; piped, one `KIND ID LEVEL` a line
    (tab-separated), for `grep` and `cut`."""
    if not tty:
        return [f"{e.kind}\t{e.id}\t{e.level}" for e in entries]
    lines: list[str] = []
    for kind, heading in (("vector", "vectors"), ("storage", "the storage phase's cases"), ("rule", "rules"),
                          ("machine", "the machine's op families")):
        chosen = [e for e in entries if e.kind == kind]
        if not chosen:
            continue
        width = max(len(e.id) for e in chosen)
        lines.append(f"{heading} ({len(chosen):,}):")
        lines.extend(f"  {e.id:<{width}}  [{e.level}]  {e.about[:80]}" for e in chosen)
        lines.append("")
    return lines[:-1]


def narrowed_verdict(entries: Sequence[Listed], divergences: list[Divergence], ran: set[str], *,
                     searched: bool) -> Verdict:
    """The failure list's verdict on a narrowed run (`--run`, `--skip`, `--shard`): every entry still lists what it
    matches, but only an entry of a vector the run ran can be stale; an entry of a family or a rule may be about
    what the run left out (another shard's vectors, a skipped rule), so it is not judged stale here."""
    verdict = judge(entries, divergences, searched=searched)
    judged = judge([entry for entry in entries if entry.key in ran], divergences, searched=searched)
    return Verdict(verdict.expected, verdict.unexpected, judged.stale, verdict.entries)
