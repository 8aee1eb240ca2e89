"""What a report says about the run that produced it: its header and its footer (spec/10, "Reports").

A report read a month later, beside another from a different machine, must say what produced it
(Bowtie's report header): which runner (its version), against which spec and which vectors (each
by a digest of its files, so two reports of the same version run on edited vectors are told apart;
the storage vectors, their logs included, by a digest of their own), with which options and seed,
against which testee (its command and its whole `hello`: name, version, what it declares). Its footer says whether the run completed, and if not, why: the
deadline, a signal, a testee declared unusable, the oracle's own failure. `sessionspec diff` and
`merge` refuse to join reports whose spec or vectors differ without saying so; JUnit carries the
same header as properties (`properties`), for dashboards that show only JUnit.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import platform
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

from sessionspec.conformance.runner import Result
from sessionspec.resources import shipped
from sessionspec.version import __version__

RUNNER = "sessionspec"


@cache
def digest(directory: Path, pattern: str) -> str:
    """`sha256:` of the files matching `pattern` in `directory`, each by its name and bytes, in name order."""
    hashed = hashlib.sha256()
    for path in sorted(directory.glob(pattern)):
        hashed.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return "sha256:" + hashed.hexdigest()


def _plain(value: Any) -> Any:
    """An option as JSON: paths as text, a selection by its patterns and what it left out."""
    if hasattr(value, "to_json"):
        return value.to_json()
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def options_of(result: Result) -> dict[str, Any]:
    """Every option the run was given (all of `runner.Options` but the command, which the header has apart)."""
    if result.options is None:
        return {}
    return {f.name: _plain(getattr(result.options, f.name)) for f in dataclasses.fields(result.options)
            if f.name != "command"}


def header(result: Result, command: Sequence[str]) -> dict[str, Any]:
    """The report's header: runner, spec and vectors (by digest), options and seed, and the testee's hello."""
    options = options_of(result)
    vectors = Path(options.get("vectors_dir") or shipped("vectors"))
    return {
        "runner": {"name": RUNNER, "version": __version__, "python": platform.python_version()},
        "spec": {"digest": digest(shipped("spec"), "*.md")},
        "vectors": {"digest": digest(vectors, "*.json"), "count": len(list(vectors.glob("*.json"))),
                    "storage": {"digest": digest(vectors / "storage", "*.*"),
                                "count": len(list((vectors / "storage").glob("*.json")))}},
        "options": options,
        "seed": options.get("seed"),
        "testee": {"command": list(command), "hello": result.testee},
    }


def why_stopped(result: Result) -> str | None:
    """The footer's `reason`: one word for a program (deadline, signal, unusable, oracle), from `Result.stopped`."""
    if result.crash is not None:
        return "oracle"
    if result.signal is not None:
        return "signal"
    text = (result.stopped or "").lower()
    if not text:
        return None
    for word, reason in (("deadline", "deadline"), ("signal", "signal"), ("interrupt", "signal"),
                         ("unusable", "unusable"), ("restarted", "unusable")):
        if word in text:
            return reason
    return "other"


def footer(result: Result) -> dict[str, Any]:
    """Whether the run did all it set out to (`Result.complete`: not stopped, no crash, nothing left out); if it
    stopped, why (`reason` for a program, `stopped` for a person); `partial` when it left something out by request
    (a replay, `--examples 0`, `--run`/`--skip`, a shard)."""
    return {"complete": result.complete, "reason": why_stopped(result), "stopped": result.stopped or result.crash,
            "partial": result.partial}


def properties(head: dict[str, Any], foot: dict[str, Any]) -> list[tuple[str, str]]:
    """The header and footer as JUnit properties: dotted names, scalar values as text, the rest as JSON."""
    out: list[tuple[str, str]] = []

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, dict) and prefix.count(".") < 2:
            for key, item in value.items():
                walk(f"{prefix}.{key}", item)
        elif isinstance(value, (dict, list)):
            out.append((prefix, json.dumps(value, ensure_ascii=True, sort_keys=True, default=str)[:2000]))
        else:
            out.append((prefix, "" if value is None else str(value)))

    walk("sessionspec", head)
    walk("sessionspec.footer", foot)
    return out
