"""`spec/vectors/storage/`: the storage vectors, generated from `cases`, checked, loaded and expanded.

A storage vector is a stored log and what a reader must answer for it (spec/10, "Storage
capability"): the reference's own `load` answer, made by the one executor (`Executor.load`), so the vector says exactly what a testee's `load` is compared with. Its
file sits beside it as `<id>.<suffix>`; a case too large to commit names a generator instead.
Everything is generated (`sessionspec vectors generate`), never edited by hand, and regenerates to
the same bytes: the events' times are fixed and so are a SQLite file's identities.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import tempfile
from pathlib import Path
from typing import Any, Final

import orjson

from sessionspec import live
from sessionspec.conformance.registry import all_rules
from sessionspec.conformance.storagevectors import layouts
from sessionspec.conformance.storagevectors.cases import GENERATORS, SUFFIX, StorageCase, storage_cases
from sessionspec.conformance.storagevectors.saved import expected_layouts
from sessionspec.levels import Level
from sessionspec.resources import shipped
from sessionspec.rules import RULES
from sessionspec.wire.executor import Executor
from sessionspec.wire.storageops import BACKENDS, GateCodec

FORMAT: Final = "sessionspec-storage-vector/1"
DEFAULT_DIR: Final = shipped("storage-vectors")
CHAPTER_07: Final = ("SESSION-STORAGE-", "SESSION-CHUNK-ROWS.", "SESSION-ZSTD-FRAMES.", "SESSION-SQLITE-",
                     "SESSION-TORN-TAIL.", "SESSION-LEGACY-UPGRADE.", "SESSION-UNKNOWN-EVENT-GATE.",
                     "SESSION-FORMAT-VERSION.")
"""The rule families of spec/07 (spec/README.md's chapter table)."""
EXCLUDED: Final = {
    "SESSION-STORAGE-RECORD.2": "a FIFO, device, socket or pseudo file is not a file a vector can carry; "
                                "tests/test_07_files.py makes each",
    "SESSION-STORAGE-RECORD.4": "a log that fails to read or changes under its reader is an event, not a file's bytes; "
                                "tests/test_07_revision.py makes it happen",
    "SESSION-SQLITE-READ.1": "what a reader leaves on disk is its own behaviour, not a property of the file it reads",
    "SESSION-STORAGE-LAYOUT.1": "the layout names a log's path; a load is given the path",
    "SESSION-STORAGE-LAYOUT.2": "the layout names a log's path; a load is given the path",
    "SESSION-STORAGE-LAYOUT.3": "the layout names a log's path; a load is given the path",
    "SESSION-STORAGE-WRITE.1": "a writer's rule: the storage phase's save check writes through the testee",
    "SESSION-STORAGE-WRITE.2": "a writer's rule: the storage phase's crash trial holds it",
    "SESSION-STORAGE-WRITE.3": "a failed append is an event of the writer, not a file's bytes",
    "SESSION-STORAGE-WRITE.4": "a repair racing a writer is an event, not a file's bytes",
    "SESSION-STORAGE-WRITE.5": "a repair's verification is the writer's, not a file's bytes",
    "SESSION-STORAGE-WRITE.6": "a dead writer's temp file is beside a log, not in it",
    "SESSION-LEGACY-UPGRADE.6": "append and seed's side of the legacy shapes: the SCP vectors cover it",
}
"""Storage rules no stored file can break, each with why (a vector of each other rule is required)."""


def reference_executor(*, gate: bool = True) -> Executor:
    """The one executor over the store, declaring every backend: what the reference answers a storage op with (the
    load gate itself, `GateCodec`); with `gate` False, what the store answers (`storage.load`, its fast form first)."""
    executor = Executor(live.Session.create, "live", storage=BACKENDS)
    if gate:
        executor.storage.codec = GateCodec()
    return executor


def expected_answer(path: Path, session: str | None, *, gate: bool = True) -> dict[str, Any]:
    """The reference's `load` answer for the file at `path`, its directory taken out of the message.

    The load gate is the reference's (`sessionspec.storage`); the session it seeds to validate the whole log is the
    store's (`live`), as `storage.load` and `sessionspec check` seed it: the naive model recomputes the surface at every
    event, and the vectors at the bounds hold 65,536 events (`live` is held to the model by the machines)."""
    answer = reference_executor(gate=gate).run({"op": "load", "path": str(path), "session": session})
    answer = json.loads(json.dumps(answer))
    where = f"{path.parent}/"
    if not answer["ok"]:
        answer["error"]["message"] = answer["error"]["message"].replace(where, "")
    elif answer["torn"] is not None:
        answer["torn"]["reason"] = answer["torn"]["reason"].replace(where, "")
    return dict(answer)


def _level(rules: tuple[str, ...]) -> str:
    return Level.REQUIRED.value if any(RULES[rule].level is Level.REQUIRED for rule in rules) else Level.RECOMMENDED.value


def build(case: StorageCase, directory: Path) -> tuple[dict[str, Any], Path]:
    """One vector and its file (written into `directory`): the reference's answer must be what the case says."""
    path = case.build(directory / case.file_name)
    expected = expected_answer(path, case.session)
    if expected["ok"] == case.refused or (case.refused and expected["error"]["rule"] not in case.rules):
        raise AssertionError(f"storage vector {case.id}: the reference answers {json.dumps(expected)[:400]}")
    # The store's load (a JSONL log's fast form first, which `serve --impl live` answers with) must answer the same.
    # A generated log at a bound (65,536 records) is left to the ci profile's conform run against live in CI, which
    # compares exactly this, rather than loaded twice more at every generation.
    if case.generator is None and expected_answer(path, case.session, gate=False) != expected:
        raise AssertionError(f"storage vector {case.id}: the store's load answers otherwise than the load gate")
    vector: dict[str, Any] = {"format": FORMAT, "id": case.id, "summary": case.summary, "rules": list(case.rules),
                              "level": _level(case.rules), "backend": case.backend, "session": case.session}
    vector.update({"generator": case.generator} if case.generator is not None else {"file": case.file_name})
    vector["expected"] = digested(expected) if case.generator is not None else expected
    return vector, path


def events_digest(events: list[Any]) -> dict[str, Any]:
    """A long event list as a vector holds it: its count and the SHA-256 of its canonical JSON (keys sorted)."""
    text = orjson.dumps(events, option=orjson.OPT_SORT_KEYS)
    return {"count": len(events), "sha256": hashlib.sha256(text).hexdigest()}


def digested(answer: dict[str, Any]) -> dict[str, Any]:
    """A generated log's answer as its vector holds it: the events as `events_digest` (the runner recomputes the
    answer from the file it expands, and checks it against this), everything else whole."""
    return {**answer, "events": events_digest(answer["events"])} if answer.get("ok") else answer


def render(vector: dict[str, Any]) -> str:
    return json.dumps(vector, indent=2, ensure_ascii=True) + "\n"


def generate_all(directory: Path) -> dict[str, bytes]:
    """Every file of the storage vectors (`<id>.json` and each committed log), by name, built in `directory`."""
    out: dict[str, bytes] = {}
    for case in storage_cases():
        vector, path = build(case, directory)
        out[f"{case.id}.json"] = render(vector).encode()
        if case.generator is None:
            out[case.file_name] = path.read_bytes()
        path.unlink()
    out[layouts.FILE] = expected_layouts(directory)  # the save check's committed layouts (storagephase.layouts)
    return out


def _generated() -> dict[str, bytes]:
    return dict(_generated_once())


@functools.cache
def _generated_once() -> dict[str, bytes]:
    """Built once a process: the files are a function of the code alone (about 30 s, most of it the gate's load of
    the generated logs at the bounds: 64 MiB records, 65,536 records), and `check`, `write` and the tests each want all of them."""
    with tempfile.TemporaryDirectory(prefix="sessionspec-storage-vectors-") as scratch:
        return generate_all(Path(scratch))


def write(directory: Path = DEFAULT_DIR) -> list[Path]:
    """`vectors generate`: (re)write the storage vectors and their files; remove what no case makes."""
    directory.mkdir(parents=True, exist_ok=True)
    wanted = _generated()
    for stale in directory.iterdir():
        if stale.is_file() and stale.name not in wanted:
            stale.unlink()
    for name, data in wanted.items():
        path = directory / name
        if not path.exists() or path.read_bytes() != data:
            path.write_bytes(data)
    return sorted(directory / name for name in wanted if name.endswith(".json"))


def coverage_problems(vectors: list[dict[str, Any]]) -> list[str]:
    """Storage rules of spec/07 with no vector and no reasoned exclusion."""
    covered = {rule for vector in vectors for rule in vector["rules"]}
    return [f"{rule} (spec/07) has no storage vector" for rule in sorted(all_rules())
            if rule.startswith(CHAPTER_07) and rule not in covered and rule not in EXCLUDED]


def check(directory: Path = DEFAULT_DIR) -> list[str]:
    """`vectors check`: storage vectors or files stale, missing or extra, and storage rules uncovered."""
    wanted = _generated()
    present = {path.name: path for path in directory.iterdir() if path.is_file()} if directory.is_dir() else {}
    problems = []
    for name, data in wanted.items():
        path = present.get(name)
        if path is None:
            problems.append(f"storage/{name}: missing (run `sessionspec vectors generate`)")
        elif path.read_bytes() != data:
            problems.append(f"storage/{name}: stale (run `sessionspec vectors generate`)")
    problems.extend(f"storage/{name}: no case generates it" for name in sorted(set(present) - set(wanted)))
    problems.extend(coverage_problems([json.loads(data) for name, data in wanted.items() if name.endswith(".json")]))
    return problems


def load(directory: Path = DEFAULT_DIR) -> list[dict[str, Any]]:
    """The committed storage vectors in case order (generated in a scratch directory kept for the run when the
    directory is absent: an installed package)."""
    order = {case.id: number for number, case in enumerate(storage_cases())}
    vectors = [json.loads(path.read_text(encoding="utf-8")) for path in sorted(directory.glob("*.json"))] \
        if directory.is_dir() else []
    for vector in vectors:
        vector["directory"] = str(directory)
    return sorted(vectors, key=lambda v: (order.get(v.get("id"), len(order)), str(v.get("id"))))


SAFE_NAME: Final = re.compile(r"^(?!\.)[A-Za-z0-9._-]+$")
"""A vector's file is a plain name beside it: no directory, no leading dot (`..`)."""


def materialize(vector: dict[str, Any], directory: Path) -> Path:
    """The vector's log as a fresh file in `directory`: its committed file copied, or its generator expanded."""
    generator = vector.get("generator")
    suffix = str(vector.get("file", ""))
    if isinstance(generator, dict):
        name = str(vector["id"]) + SUFFIX.get(str(vector["backend"]), ".log")
        return GENERATORS[generator["name"]](directory / name, **generator.get("args", {}))
    if not SAFE_NAME.match(suffix):
        raise ValueError(f"storage vector {vector.get('id')}: file {suffix!r} is not a plain file name")
    target = directory / suffix
    target.write_bytes((Path(vector["directory"]) / suffix).read_bytes())
    return target
