"""Failure lists: the divergences an implementation is known to have, kept honest.

One entry a line: a vector id, or a machine family's key (`append:SESSION-LOSSLESS-JSON.2`; a bare
rule ID matches every op), each optionally followed by what the testee answers (`accepted`, its
kind, or `differs:FIELDS`); `#` starts a comment. The list judges what a run found and never
changes what it searches or how it names a family, so a run with the list finds what the run it
was written from found. A listed case that does not diverge, or
diverges with another answer, fails the run, so the list shrinks as the implementation is fixed
and never hides a new bug (the protobuf conformance runner's rule).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from sessionspec.levels import LOG_OPS, ground_of
from sessionspec.rules import RULES
from sessionspec.wire.breaching import SPELLING
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
        now = next((d for d in unexpected if Entry(entry.key, None, entry.line).matches(d)), None)
        if now is not None:  # spec/10: a listed case that "diverges with another answer" is stale, and says how
            stale.append(f"line {entry.line}: {entry.text()} CHANGED: it now answers {now.answered} "
                         f"(was {entry.kind}; update the entry, or fix what changed)")
        else:
            stale.append(f"line {entry.line}: {entry.text()} passes now (remove it)")
    return Verdict(expected, unexpected, stale, listing)


def _is_vector_id(key: str) -> bool:
    """A vector id (`SESSION-SURFACE-REPLACE.2-reject`, `scenario-seed`), not a family key or a bare rule ID."""
    return ":" not in key and not _RULE_ID.match(key)


def rewrite(path: Path, divergences: Iterable[Divergence]) -> None:
    """`--fix`: the list of what was observed, one entry per key, in two sections by level and under each rule a
    heading with the rule's summary and ground (the seed sentence it states, or the decision that added it).

    Each entry's comment says what the testee answers and the reference says instead. A comment a person wrote
    on an entry that stays (anything after `#` that `--fix` did not write) is kept: the list is edited by hand
    to say why the implementation answers so, and a rerun must not lose that."""
    kept = _comments(path)
    groups: dict[tuple[str, str], dict[str, str]] = {}
    reasons: dict[tuple[str, str], list[str]] = {}
    for d in divergences:
        entry = f"{key_of(d)} {d.answered}"
        group = (d.level, _rule_of(d))
        groups.setdefault(group, {}).setdefault(entry, kept.get(entry) or _note(d))
        why = _why_at_level(d, group[1])
        if why is not None and why not in reasons.setdefault(group, []):
            reasons[group].append(why)
    lines = ["# Known conformance divergences (sessionspec conform --failures FILE --fix writes this; edit the comments).",
             "# One entry a line: a vector id or a family (OP:RULE), then what the testee answers; # starts a comment."]
    for level, title in (("required", "deviations from what the seeds state"), ("recommended", "rules this spec added")):
        rules = sorted(rule for at, rule in groups if at == level)
        if rules:
            lines += ["", f"# === {level}: {title}"]
        for rule in rules:
            lines += ["", _title(rule), *(f"#   {level} because {_cut(why, 220)}" for why in reasons.get((level, rule), []))]
            lines += [f"{entry}  # {note}" for entry, note in sorted(groups[(level, rule)].items())]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _rule_of(d: Divergence) -> str:
    """The rule a divergence is listed under: its root cause, else the reference's rule, else its vector's rule. A
    request the reference accepts breaks no rule (the rule a testee cites for refusing it is the testee's word, and
    the vector's rule is about another step): it is listed under `?`, with the comparison's own level."""
    if d.named is not None:
        return d.named
    if d.expected.get("ok"):
        return "?"
    return d.rule or (d.id.split("-reject")[0].split("-accept")[0] if d.source == "vector" else "") or "?"


def _title(rule_id: str) -> str:
    if rule_id == "?":
        return ("# (no rule names these: the reference accepts the request, and the testee refuses it or answers it "
                "otherwise; required by spec/10, Comparison)")
    rule = RULES.get(rule_id)
    return f"# {rule_id}: {rule.summary}" if rule is not None else f"# {rule_id}"


def _why_at_level(d: Divergence, rule_id: str) -> str | None:
    """Why `d` is at its level, under the rule it is listed under: the rule's own ground when that is the level it
    states; else the one reason the oracle lowers a rule's level for (an integer spelled as a float, a log given
    whole to fold or repair). None for a rule without a ground (a protocol family named `?`)."""
    try:
        ground = ground_of(rule_id)
    except KeyError:
        return None
    if d.level == ground.at(d.op).value:
        return ground.why
    if any(breach.rule == SPELLING for breach in d.breaches):
        return _SPELLED
    if d.op in LOG_OPS:
        return _LOG_GIVEN
    return ground.why


_LOG_GIVEN = ("it is broken in a log given whole to fold or repair, which the protocol reads as seed entries (its "
              "decision); the upstream's foldSurface and interruptedTurnClosers check none of it but the surface "
              "transitions (sessionspec.levels.LOG_OPS)")
_SPELLED = ("it is broken only because an integer is spelled as a float (1.0), which a JavaScript reader cannot tell "
            "from the integer (SESSION-LOSSLESS-JSON.8)")


def _note(d: Divergence) -> str:
    """What the testee answers where the reference answers otherwise, from the two answers."""
    error = d.expected.get("error") if isinstance(d.expected, dict) else None
    if d.answered == "accepted" and isinstance(error, dict):
        return f"accepted; the reference refuses: {_cut(str(error.get('message', '')), 110)}"
    if d.expected.get("ok") is False:
        return f"refused as {d.answered}; the reference refuses as {error.get('kind') if error else '?'} ({d.rule})"
    return f"answers with {d.answered}; the reference {_verdict(d)}"


def _cut(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: text.rfind(" ", 0, limit)] + " ..."


def _comments(path: Path) -> dict[str, str]:
    """The hand-written comment of each entry of an existing list (one `--fix` did not write)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return {}
    out = {}
    for raw in text.splitlines():
        entry, _, comment = raw.partition("#")
        words, comment = entry.split(), comment.strip()
        if len(words) == 2 and comment and not comment.startswith(_WRITTEN):
            out[" ".join(words)] = comment
    return out


_WRITTEN = ("accepted; the reference refuses", "refused as ", "answers with ")
"""How the comments `--fix` writes begin: those are written afresh, the others kept."""


def _verdict(d: Divergence) -> str:
    return f"rejects ({d.rule})" if d.expected.get("ok") is False else "accepts"
