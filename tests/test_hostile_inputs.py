"""The hostile-input suite (issue 15): every stored-log tool against generated bad input, on every backend.

For each generated file, `check`, `show` (JSON Lines and text), `repair` and `repair --write` run
as a user runs them (in this process; in a subprocess under resource limits where a file could
block or expand), and each run must keep the contract of spec/07 and the exit-code convention:

- no traceback, and the exit code the load gate's verdict calls for (0 clean, 1 findings or
  refused, 2 cannot be read); a torn tail is a finding (1) for `check` and `show`;
- a refusal names its rule and its line or seq;
- `repair --write` never leaves a log worse than it found it: a clean, refused or unreadable
  file is left byte for byte, a repairable one loads afterwards as the loaded events plus the
  closers (SESSION-STORAGE-WRITE.5);
- memory (tracemalloc) and CPU time (RLIMIT_CPU, in subprocesses) bounded by the file's size.

A deterministic slice runs by default; the `nightly` tests run thousands of variants (random
corruptions, every cut offset, the issue's full-size amplification cases). The counts go to the
file named by $SESSIONSPEC_HOSTILE_REPORT when it is set; spec/07 §7.8 records a nightly run's.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tracemalloc
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
import zstandard
from hostile import (
    DEPTH,
    FOREIGN_OBJECTS,
    FORMATS,
    NAME_MAX,
    PATH_MAX,
    RECORD_CLASSES,
    RULE,
    VALID,
    VALUES,
    Ran,
    Verdict,
    agent_log,
    bad_files,
    clean_log,
    copy,
    corruptions,
    cuts,
    damaged_pages,
    deep_log,
    deep_path,
    expanders,
    fault_line,
    fill,
    foreign_schema,
    lines_of,
    long_names,
    mount_tmpfs,
    oracle,
    placed,
    record_log,
    remount_read_only,
    repairable_logs,
    run_cli,
    run_faulted,
    special_files,
    unmount,
    value_log,
    write_jsonl,
    write_sqlite,
    write_zstd,
)
from sessionspec.storage import budget

STATS: Counter[str] = Counter()
PLACE = re.compile(r"line \d+|seq \d+|:\d+:|byte \d+|while opening it")
"""Where a refusal is: a line or seq; a byte offset for a zstd frame's structure, the open for a damaged database."""
READS = (("check",), ("show",), ("show", "--format", "text", "--view", "log", "--diff"), ("repair",))


@pytest.fixture(scope="module", autouse=True)
def report() -> Iterator[None]:
    yield
    target = os.environ.get("SESSIONSPEC_HOSTILE_REPORT")
    if target:
        previous = json.loads(Path(target).read_text()) if Path(target).exists() else {}
        merged = Counter(previous) + STATS
        Path(target).write_text(json.dumps(dict(sorted(merged.items())), indent=1) + "\n")


def expected_exit(tool: str, verdict: Verdict) -> int:
    if verdict.state == "repairable":
        return 0 if tool == "repair" or not verdict.torn else 1
    return {"clean": 0, "refused": 1, "unreadable": 2}[verdict.state]


def contract(tool: tuple[str, ...], ran: Ran, verdict: Verdict, path: Path, rule: str | None) -> None:
    """One run of a reading tool keeps the contract for what the gate says of the file."""
    where = (path.name, tool, verdict.state, verdict.rule)
    STATS["runs"] += 1
    if ran.traceback is not None or "Traceback (most recent" in ran.err:
        STATS["tracebacks"] += 1
        raise AssertionError((where, ran.traceback or ran.err))
    assert ran.code == expected_exit(tool[0], verdict), (where, ran)
    said = ran.out + ran.err
    if ran.code == 1:
        assert RULE in said and PLACE.search(said), (where, said[-2000:])
    if rule is not None and rule != VALID and verdict.state in ("refused", "repairable", "unreadable"):
        assert rule in said, (where, rule, said[-2000:])
    STATS["clean runs"] += 1


def never_worse(path: Path, verdict: Verdict, ran: Ran, before: bytes) -> None:
    """`repair --write` on `path` (a copy, `before` its bytes) left it no worse than `verdict` found it.

    A repairable log is repaired, or, where writing meets damage that reading did not (a damaged
    index page of a SQLite file), refused with a rule and left byte for byte as it was.
    """
    STATS["repair --write"] += 1
    if ran.traceback is not None:
        STATS["tracebacks"] += 1
        raise AssertionError((path.name, ran.traceback))
    if verdict.state == "repairable" and ran.code == 1:
        assert RULE in ran.err and path.read_bytes() == before, (path.name, ran)
        STATS["repairs refused on damage met while writing, the log untouched"] += 1
        return
    assert ran.code == expected_exit("repair", verdict), (path.name, verdict, ran)
    if verdict.state == "repairable":
        after = oracle(path)
        if after.state != "clean" or after.events != verdict.events + verdict.closers:
            STATS["logs made worse"] += 1
            raise AssertionError((path.name, verdict, after))
        STATS["repaired"] += 1
    elif path.read_bytes() != before:
        STATS["logs made worse"] += 1
        raise AssertionError((path.name, "a repair wrote to a log it could not repair"))


def judge(path: Path, directory: Path, rule: str | None = None) -> Verdict:
    """Every tool on one file; `rule` is the rule a generated class must be refused with (or VALID)."""
    STATS["variants"] += 1
    try:
        verdict = oracle(path)
    except Exception as error:  # the load gate itself raised something other than its refusals
        STATS["tracebacks"] += 1
        raise AssertionError((path.name, "storage.load raised", error)) from error
    STATS[f"verdict {verdict.state}"] += 1
    if rule == VALID:
        assert verdict.state in ("clean", "repairable") and not verdict.torn, (path.name, verdict)
    elif rule is not None:
        assert verdict.state in ("refused", "repairable", "unreadable"), (path.name, rule, verdict)
    for tool in READS:
        contract(tool, run_cli(*tool, str(path)), verdict, path, rule)
    if path.is_file() and not path.is_symlink():
        target = copy(path, directory)
        data = target.read_bytes()
        never_worse(target, verdict, run_cli("repair", "--write", str(target)), data)
        target.unlink()
    STATS["variants handled cleanly"] += 1
    return verdict


# --- the value classes of spec/01 and spec/07, at the middle and at the tail -----------------------------


def value_classes(directory: Path, fmt: str, places: list[str], depth: int) -> None:
    """Every value class on backend `fmt`, the k-th at `places[k % len(places)]`."""
    for k, name in enumerate(VALUES):
        where = places[k % len(places)]
        path, rule = value_log(directory, fmt, name, where, depth)
        verdict = judge(path, directory, rule)
        if rule != VALID:
            expected = "refused" if where == "middle" else "repairable"
            assert verdict.state == expected, (name, verdict)
        path.unlink()


@pytest.mark.parametrize("fmt", FORMATS)
def test_value_classes(tmp_path: Path, fmt: str) -> None:
    """The slice: each class at the middle or at the tail, alternating (and the other way round on the next backend)."""
    places = ["middle", "tail"] if FORMATS.index(fmt) % 2 == 0 else ["tail", "middle"]
    value_classes(tmp_path, fmt, places, DEPTH)


@pytest.mark.nightly
@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("where", ["middle", "tail"])
def test_value_classes_at_full_depth(tmp_path: Path, fmt: str, where: str) -> None:
    value_classes(tmp_path, fmt, [where], 100_000)


@pytest.mark.nightly
@pytest.mark.parametrize("fmt", FORMATS)
def test_a_value_a_million_levels_deep(tmp_path: Path, fmt: str) -> None:
    """The issue's deep log (check about 1 s, repair 16 s, repair --write 45 s on its open-tail form)."""
    judge(deep_log(tmp_path, fmt, 1_000_000, open_tail=True), tmp_path, VALID)


@pytest.mark.parametrize("fmt", ["jsonl", "jsonl.zstd"])
@pytest.mark.parametrize("where", ["middle", "tail"])
def test_record_classes(tmp_path: Path, fmt: str, where: str) -> None:
    for name in RECORD_CLASSES:
        path, rule = record_log(tmp_path, fmt, name, where)
        judge(path, tmp_path, rule)
        path.unlink()


SQLITE_COLUMNS = {
    "type-invalid-utf8": ("UPDATE events SET type = CAST(x'ff' AS TEXT) WHERE seq = ?", "SESSION-LOSSLESS-TEXT.1"),
    "data-not-zstd": ("UPDATE events SET data = x'00010203' WHERE seq = ?", "SESSION-SQLITE-ROW.2"),
    "data-bad-magic": ("UPDATE events SET data = x'00010203040506' WHERE seq = ?", "SESSION-SQLITE-ROW.2"),
    "row-tag-unmarked": ("UPDATE events SET type = 'text-chunks' WHERE seq = ?", "SESSION-SQLITE-ROW.3"),
    "data-zstd-garbage": ("UPDATE events SET data = x'28b52ffd0000' WHERE seq = ?", "SESSION-SQLITE-ROW.2"),
    "data-integer": ("UPDATE events SET data = 7 WHERE seq = ?", "SESSION-SQLITE-ROW.2"),
    "sources-noncanonical": ("UPDATE events SET source_event_seqs = x'8100' WHERE seq = ?", "SESSION-SQLITE-ROW.1"),
    "sources-text": ("UPDATE events SET source_event_seqs = '1' WHERE seq = ?", "SESSION-SQLITE-ROW.1"),
    "packed-mark-on-event": ("UPDATE events SET ignorable = 0 WHERE seq = ?", "SESSION-SQLITE-ROW.3"),
    "surface-op-garbage": ("UPDATE events SET surface_op = '{' WHERE seq = ?", "SESSION-LOSSLESS-TEXT.2"),
}


@pytest.mark.parametrize("where", ["middle", "tail"])
def test_sqlite_column_classes(tmp_path: Path, where: str) -> None:
    import contextlib
    import sqlite3

    for name, (statement, rule) in SQLITE_COLUMNS.items():
        path, _ = value_log(tmp_path, "sqlite", "empty-containers", where)
        _, seq = placed(where)  # the hostile event's row
        with contextlib.closing(sqlite3.connect(path)) as connection:
            connection.execute(statement, (seq,))
            connection.commit()
        verdict = judge(path, tmp_path, rule)
        assert verdict.state == ("refused" if where == "middle" else "repairable"), (name, verdict)
        path.unlink()


LEGACY = {
    "malformed-trigger": (b'{"type":"turn/start","seq":SEQ,"time":0,"data":{"turn":1,"trigger":"x"}}', "SESSION-LEGACY-UPGRADE.1"),
    "malformed-reason": (b'{"type":"turn/end","seq":SEQ,"time":0,"data":{"turn":1,"reason":{"kind":"completed","x":1}}}',
                         "SESSION-LEGACY-UPGRADE.2"),
    "steering-message": (b'{"type":"steering/message","seq":SEQ,"time":0,"data":{"turn":1}}', "SESSION-LEGACY-UPGRADE.3"),
}


def test_legacy_shapes_are_judged_alike_by_check_and_load(tmp_path: Path) -> None:
    for name, (line, rule) in LEGACY.items():
        path = write_jsonl(tmp_path / f"{name}.jsonl", [[line.replace(b"SEQ", b"0")]])
        judge(path, tmp_path, rule)


# --- random corruptions, cuts at every offset, bad files, damaged pages ----------------------------------


def sources(directory: Path) -> dict[str, Path]:
    return {fmt: clean_log(directory / f"source-{fmt.replace('.', '-')}.{fmt}", fmt, open_tail=True, turns=3)
            for fmt in FORMATS}


@pytest.mark.parametrize("fmt", FORMATS)
def test_random_byte_corruptions(tmp_path: Path, fmt: str) -> None:
    source = sources(tmp_path)[fmt]
    for path in corruptions(source, tmp_path, 12, seed=15):
        judge(path, tmp_path)
        path.unlink()


@pytest.mark.parametrize("fmt", ["jsonl", "jsonl.zstd"])
def test_cuts_in_the_last_records(tmp_path: Path, fmt: str) -> None:
    source = clean_log(tmp_path / f"source.{fmt}", fmt, turns=2)
    for path in cuts(source, tmp_path, records=3, step=13):
        verdict = judge(path, tmp_path)
        assert verdict.state in ("clean", "repairable", "refused"), (path.name, verdict)
        path.unlink()


def test_bad_files(tmp_path: Path) -> None:
    for kind, path in bad_files(tmp_path):
        if kind == "fifo":
            continue  # in a subprocess below: a reader that blocked would hang this run
        verdict = judge(path, tmp_path)
        assert verdict.state in ("unreadable", "refused"), (kind, verdict)


def test_a_fifo_blocks_no_tool(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    for tool in (*READS, ("repair", "--write")):
        try:
            done = subprocess.run([sys.executable, "-m", "sessionspec.cli", *tool, str(fifo)], capture_output=True,
                                  text=True, timeout=60)
        except subprocess.TimeoutExpired:
            STATS["hangs"] += 1
            raise
        assert done.returncode == 2 and "SESSION-STORAGE-RECORD.2" in done.stderr, (tool, done.stderr)


def test_special_files_behind_a_link(tmp_path: Path) -> None:
    """SESSION-STORAGE-RECORD.2: pseudo files (/proc, /sys) and character devices, linked as a log of each backend."""
    for kind, path in special_files(tmp_path):
        verdict = judge(path, tmp_path, "SESSION-STORAGE-RECORD.2")
        assert verdict.state == "unreadable", (kind, path.name, verdict)


def test_schema_objects_of_no_ones_format(tmp_path: Path) -> None:
    """SESSION-SQLITE-SCHEMA.5: a trigger (one that loops for ever on insert), a view, an index, a table."""
    for kind in FOREIGN_OBJECTS:
        path = foreign_schema(tmp_path, kind)
        verdict = judge(path, tmp_path, "SESSION-SQLITE-SCHEMA.5")
        assert (verdict.state, verdict.rule) == ("unreadable", "SESSION-SQLITE-SCHEMA.5"), (kind, verdict)


def test_damaged_sqlite_pages(tmp_path: Path) -> None:
    source = write_sqlite(tmp_path / "pages.sqlite", agent_log(30, open_tail=True))
    for path in damaged_pages(source, tmp_path):
        judge(path, tmp_path)


# --- amplification: small files that expand ------------------------------------------------------------


def amplifiers(directory: Path, scale: int) -> Iterator[tuple[str, Path]]:
    """Small files whose content expands: `scale` 1 for the default slice, 100 for the issue's sizes."""
    batches = agent_log(1, open_tail=True)
    head = lines_of(batches[0])
    newlines = zstandard.ZstdCompressor(level=19, write_checksum=True).compress(b"\n" * (scale << 20))
    path = write_zstd(directory / "newlines.jsonl.zstd", [head])
    path.write_bytes(path.read_bytes() + newlines)
    yield "zstd newlines", path
    junk = zstandard.ZstdCompressor(level=19, write_checksum=True).compress(b"{}\n" * 60_000)  # within a frame's bounds
    path = write_zstd(directory / "junk.jsonl.zstd", [head, [b"{"]])
    path.write_bytes(path.read_bytes() + junk * (4 * scale))
    yield "zstd junk frames after a defect", path
    members = 70_000 if scale == 1 else 5_000_000
    row = {"type": "text-chunks", "seq0": len(batches[0]), "time0": 0,
           "data": {"turn": 1, "step": 1, "index": 0, "dt": [0] * (members - 1), "texts": [""] * members}}
    yield "jsonl packed row", write_jsonl(directory / "row.jsonl", [head, [json.dumps(row, separators=(",", ":")).encode()]])
    yield "jsonl junk lines", write_jsonl(directory / "lines.jsonl", [head, [b"{"] + [b"x"] * (50_000 * scale)])
    from test_07_sqlite_faults import rle_frame

    path = write_sqlite(directory / "bomb.sqlite", batches)
    import contextlib
    import sqlite3

    with contextlib.closing(sqlite3.connect(path)) as connection:
        connection.execute("UPDATE events SET data = ? WHERE seq = 3", (rle_frame(0x20, (10 * scale) << 20),))
        connection.commit()
    yield "sqlite blob bomb", path


def test_amplification_is_bounded_by_the_file(tmp_path: Path) -> None:
    """Memory (tracemalloc peak) stays within a constant plus a multiple of the file's size, for every tool."""
    for name, path in amplifiers(tmp_path, 1):
        size = path.stat().st_size
        for tool in (*READS, ("repair", "--write")):
            target = copy(path, tmp_path) if tool[-1] == "--write" else path
            tracemalloc.start()
            try:
                ran = run_cli(*tool, str(target))
                peak = tracemalloc.get_traced_memory()[1]
            finally:
                tracemalloc.stop()
            STATS["bounded runs"] += 1
            assert ran.traceback is None and ran.code in (0, 1), (name, tool, ran)
            assert peak < (48 << 20) + 200 * size, (name, tool, peak, size)
        judge(path, tmp_path)


@pytest.mark.nightly
def test_amplification_at_the_issues_sizes(tmp_path: Path) -> None:
    """The issue's cases at full size, each tool in a subprocess under RLIMIT_CPU, its resident peak measured."""
    from test_07_bounds import MEMORY_FLOOR, limited

    for name, path in amplifiers(tmp_path, 100):
        size = path.stat().st_size
        for tool in (*READS, ("repair", "--write")):
            target = copy(path, tmp_path) if tool[-1] == "--write" else path
            done = limited(*tool, str(target), cpu=60 + (size >> 20))
            STATS["bounded runs"] += 1
            if done.code in (-signal.SIGXCPU, -signal.SIGKILL):
                STATS["hangs"] += 1
            assert done.code in (0, 1) and "Traceback" not in done.err, (name, tool, done.code, done.err[-2000:])
            assert done.peak < MEMORY_FLOOR + 32 * size, (name, tool, done.peak, size)


def test_logs_that_expand_past_their_budget(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """SESSION-STORAGE-RECORD.3: many frames, packed rows and BLOBs, each within its own bound, the file past its budget
    (the floors lowered to 4,096 records and 4 MiB so that the slice stays small; the nightly run keeps them)."""
    monkeypatch.setattr(budget, "RECORDS_FLOOR", 4_096)
    monkeypatch.setattr(budget, "PLAIN_FLOOR", 4 << 20)
    for name, path in expanders(tmp_path, 4_096, 4 << 20):  # the floors just set
        verdict = judge(path, tmp_path, "SESSION-STORAGE-RECORD.3")
        assert (verdict.state, verdict.rule) == ("refused", "SESSION-STORAGE-RECORD.3"), (name, verdict)


@pytest.mark.nightly
def test_logs_that_expand_past_the_real_floors(tmp_path: Path) -> None:
    for name, path in expanders(tmp_path):
        verdict = judge(path, tmp_path, "SESSION-STORAGE-RECORD.3")
        assert (verdict.state, verdict.rule) == ("refused", "SESSION-STORAGE-RECORD.3"), (name, verdict)


# --- replay on corrupted traces ------------------------------------------------------------------------


def traces(directory: Path) -> Iterator[Path]:
    for name, data in (("garbage", b"garbage\x00\xff\n"), ("empty", b""), ("object", b'{"a":1}'),
                       ("truncated", b'{"ops":[{"op":"create","id":"x"'), ("ops-not-list", b'{"ops":7}'),
                       ("deep", b"[" * 100_000 + b"]" * 100_000), ("op-not-object", b'{"ops":[1,2]}')):
        path = directory / f"trace-{name}.json"
        path.write_bytes(data)
        yield path
    yield directory / "missing.json"


def test_replay_refuses_a_corrupted_trace_in_one_line(tmp_path: Path) -> None:
    for path in traces(tmp_path):
        ran = run_cli("replay", str(path))
        assert ran.traceback is None and ran.code == 2, (path.name, ran)
        assert len(ran.err.strip().splitlines()) == 1, (path.name, ran.err)


# --- faults of the machine (issue 34): exit 2, one line naming the fault, the log unchanged or valid -----------

FAULT_COMMANDS = (("check",), ("show",), ("repair",), ("repair", "--write"))
REPAIRABLE = ("jsonl", "jsonl.zstd", "sqlite", "torn-jsonl", "torn-jsonl.zstd")


def listing(directory: Path) -> dict[str, bytes]:
    return {entry.name: entry.read_bytes() for entry in directory.iterdir() if entry.is_file() and entry.name != "filler"}


def unchanged_or_valid(path: Path, before: bytes) -> None:
    """The log as it was, or a log the load gate reads whole: nothing to repair, nothing refused."""
    if path.read_bytes() != before:
        assert oracle(path).state == "clean", (path.name, oracle(path))


@pytest.fixture(scope="module")
def mounts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    """A read-only tmpfs and a full one of 256 KiB, each holding every repairable log (skipped where no mount can be)."""
    base = tmp_path_factory.mktemp("mounts")
    mounted: list[Path] = []
    try:
        for name in ("read-only", "full"):
            why = mount_tmpfs(base / name, "size=256k")
            if why is not None:
                pytest.skip(why)
            mounted.append(base / name)
            repairable_logs(base / name)
        why = remount_read_only(base / "read-only")
        if why is not None:
            pytest.skip(why)
        fill(base / "full")
        yield {"read-only": base / "read-only", "full": base / "full"}
    finally:
        for directory in mounted:
            unmount(directory)


@pytest.mark.parametrize("log", REPAIRABLE)
@pytest.mark.parametrize("where", ["read-only", "full"])
@pytest.mark.parametrize("command", FAULT_COMMANDS, ids=" ".join)
def test_a_read_only_or_full_file_system(mounts: dict[str, Path], where: str, log: str, command: tuple[str, ...]) -> None:
    """Reading needs no room and no write (exit 0 or 1 as on any disk); `repair --write` is exit 2 with EROFS or ENOSPC,
    the log byte for byte as it was and no file beside it (no -wal, -shm or temp file)."""
    folder = mounts[where]
    path = folder / (f"torn.{log.removeprefix('torn-')}" if log.startswith("torn-") else f"open.{log}")
    before = listing(folder)
    ran = run_faulted([*command, str(path)])
    if command == ("repair", "--write"):
        line = fault_line(ran.err)
        assert ran.code == 2 and line.endswith("(EROFS)" if where == "read-only" else "(ENOSPC)"), line
    else:
        assert ran.code in (0, 1) and "Traceback" not in ran.err and "damaged" not in ran.err, ran.err[-2000:]
    assert listing(folder) == before


@pytest.mark.parametrize("log", REPAIRABLE)
def test_repair_under_a_file_size_limit_fails_before_it_cuts(tmp_path: Path, log: str) -> None:
    """RLIMIT_FSIZE at the log's own size: the repair cannot grow it, so it is refused before anything is cut (EFBIG),
    or, where it needs no more room (SQLite's pages), it finishes; never a cut committed without its closers."""
    path = repairable_logs(tmp_path)[log]
    before, files = path.read_bytes(), listing(tmp_path)
    ran = run_faulted(["repair", "--write", str(path)], file_size=len(before))
    if ran.code == 2:
        assert fault_line(ran.err).endswith(("(EFBIG)", "(EIO)", "(ENOSPC)")), ran.err
        assert path.read_bytes() == before and listing(tmp_path) == files
    else:
        assert ran.code == 0 and oracle(path).state == "clean", ran


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("stdout", ["closed", "full", "broken"])
@pytest.mark.parametrize("command", FAULT_COMMANDS, ids=" ".join)
def test_a_closed_full_or_broken_standard_output(tmp_path: Path, fmt: str, stdout: str, command: tuple[str, ...]) -> None:
    """Exit 2, one line naming standard output; a closed one is found before anything is done, so `repair --write`
    writes nothing; after a full one the repair may stand, and the log is valid."""
    path = clean_log(tmp_path / f"open.{fmt}", fmt, open_tail=True)
    before = path.read_bytes()
    ran = run_faulted([*command, str(path)], stdout=stdout)
    line = fault_line(ran.err)
    expected = {"closed": "(EBADF)", "full": "(ENOSPC)", "broken": "(EPIPE)"}[stdout]
    assert ran.code == 2 and "standard output" in line and line.endswith(expected), line
    if stdout == "closed":
        assert path.read_bytes() == before
    unchanged_or_valid(path, before)


NAME_LENGTHS = [20, 100, 200, *range(240, NAME_MAX + 1)]
"""File names (bytes, suffix included): every length of the last 16 up to NAME_MAX, where side and temp files that
add to the name stop fitting, and a few below."""
PATH_LENGTHS = [*range(500, 513), 1024, 2048, PATH_MAX - 1]
"""Absolute paths (bytes): every length around SQLite's 504 and its 512-byte pathname, then up to PATH_MAX."""


def judge_long(path: Path) -> None:
    """`check` and `repair --write` of an open log under a long name or path: done (exit 0, the log repaired), or
    exit 2 naming ENAMETOOLONG with the log unchanged; never a traceback, never a finding."""
    before = path.read_bytes()
    ran = run_cli("check", str(path))
    assert ran.traceback is None and ran.code == 0, (len(str(path)), ran)
    ran = run_cli("repair", "--write", str(path))
    assert ran.traceback is None, ran.traceback
    if ran.code == 2:
        assert fault_line(ran.err).endswith("(ENAMETOOLONG)") and path.read_bytes() == before, ran.err
    else:
        assert ran.code == 0 and oracle(path).state == "clean", (len(str(path)), ran)
    STATS["long names"] += 1


@pytest.mark.parametrize("fmt", FORMATS)
def test_long_file_names_at_every_length(tmp_path: Path, fmt: str) -> None:
    for _, path in long_names(tmp_path, fmt, NAME_LENGTHS):
        judge_long(path)


@pytest.mark.parametrize("fmt", FORMATS)
def test_long_paths_up_to_path_max(tmp_path: Path, fmt: str) -> None:
    source = clean_log(tmp_path / f"source.{fmt}", fmt, open_tail=True)
    for length in PATH_LENGTHS:
        path = deep_path(tmp_path / "deep", length, f".{fmt}")
        shutil.copyfile(source, path)
        judge_long(path)
        path.unlink()
    beyond = str(tmp_path) + "/deep/.." * (PATH_MAX // 8) + f"/source.{fmt}"  # the file is there; its name too long
    for command in (("check",), ("show",), ("repair", "--write")):
        ran = run_cli(*command, beyond)
        assert ran.traceback is None and ran.code == 2 and len(ran.err.strip().splitlines()) == 1, ran


# --- nightly: thousands of variants ---------------------------------------------------------------------


@pytest.mark.nightly
@pytest.mark.parametrize("fmt", FORMATS)
def test_many_random_byte_corruptions(tmp_path: Path, fmt: str) -> None:
    source = sources(tmp_path)[fmt]
    for path in corruptions(source, tmp_path, 300 if fmt == "sqlite" else 500, seed=int.from_bytes(os.urandom(4), "little")):
        judge(path, tmp_path)
        path.unlink()


@pytest.mark.nightly
@pytest.mark.parametrize("fmt", ["jsonl", "jsonl.zstd"])
def test_cuts_at_every_offset_of_the_last_three_records(tmp_path: Path, fmt: str) -> None:
    for turns, open_tail in ((2, False), (3, True)):
        source = clean_log(tmp_path / f"source-{turns}.{fmt}", fmt, turns=turns, open_tail=open_tail)
        for path in cuts(source, tmp_path, records=3):
            judge(path, tmp_path)
            path.unlink()
