"""`sessionspec check` on one file: open it, feed every record to a `Checker`, and say what was found.

The checker judges records; this is the run around it: the backend's reader (with its surveyors
for a large JSONL log), the header, progress, the torn tail the reader found, and a `Report` a
person or a program reads. A file that cannot be read at all is a report too (`unreadable`), so
a caller checking many files goes on to the next.
"""

from __future__ import annotations

import gc
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sessionspec.errors import SpecViolation
from sessionspec.jsonvalue import Json
from sessionspec.logcheck.checker import Checker, Finding
from sessionspec.logcheck.reader import Unreadable, open_log


@dataclass
class Report:
    """The outcome of checking one file: its findings, and what was read."""

    file: str
    format: str
    events: int
    findings: list[Finding]
    nodes: int = 0
    replace_generation: int = 0
    unreadable: str | None = None
    upgrades: int = 0

    def to_json(self) -> dict[str, Json]:
        out: dict[str, Json] = {"file": self.file, "format": self.format, "events": self.events,
                                "surfaceNodes": self.nodes, "replaceGeneration": self.replace_generation,
                                "findings": [f.to_json() for f in self.findings]}
        if self.upgrades:
            out["legacyUpgrades"] = self.upgrades
        if self.unreadable is not None:
            out["unreadable"] = self.unreadable
        return out


def check_path(path: str, *, strict: bool = False, tick: Any = None, session_id: str | None = None,
               jobs: int | None = None) -> Report:
    """Check one stored log end to end: header, every record, the torn tail; `tick(done, total)` reports progress.

    `jobs`: 1 checks in this process alone; N > 1 has N - 1 forked surveyors parse and survey
    blocks of a JSONL log while this process folds them; None (the default) uses one process
    per CPU that other work leaves free (`workers.free_cpus`), at most four, for logs of 4 MiB or more.
    """
    checker = Checker(path, strict=strict)
    fold = checker.fold

    def ticking(ops: Sequence[Any], k: int, first: int, nxt: int) -> int:
        tick(*log.progress())
        return fold(ops, k, first, nxt)

    try:
        log = open_log(Path(path), session_id, survey=None if strict else checker.survey,
                       fold=fold if tick is None else ticking, jobs=jobs)
    except Unreadable as error:
        return Report(path, "?", 0, [], unreadable=str(error))
    except SpecViolation as violation:
        at = violation.line if violation.line is not None else 1
        return Report(path, "?", 0, [Finding(path, at, None, violation.rule, _plain(violation.message, path))])
    checker.header(1 if log.format != "sqlite" else None, dict(log.header), log.header["id"])
    feed = checker.feed
    count = 0
    # Parsed JSON holds no cycles, so the cycle collector only costs time here (a third of it).
    collecting = gc.isenabled()
    gc.disable()
    try:
        for line, record in log.records():
            feed(line, record)
            count += 1
            if tick is not None and not count & 0xFFF:
                tick(*log.progress())
    except SpecViolation as violation:
        # Corruption the storage scanner refuses outright (a defect with a committed turn/end after it).
        checker.report(violation.line, violation.seq, violation.rule, _plain(violation.message, path))
    finally:
        if collecting:
            gc.enable()
    torn = log.torn
    if torn is not None:
        checker.report(torn.line, torn.seq, torn.rule,
                       f"the log has a torn tail from seq {torn.seq} ({_plain(torn.reason, path)}); "
                       f"`sessionspec repair --write` cuts it")
    checker.finish()
    return Report(path, log.format, checker.next_seq, checker.findings, len(checker.nodes), checker.replace_generation,
                  upgrades=len(checker.upgrades))


def _plain(message: str, path: str) -> str:
    """A backend message without the file name it starts with (the finding names the file already)."""
    return message[len(path) + 2:] if message.startswith(f"{path}: ") else message


__all__ = ["Report", "check_path"]
