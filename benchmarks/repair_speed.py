#!/usr/bin/env python3
"""What `sessionspec repair` costs beside `sessionspec check` on the same log, as ratios in one run.

The bar (issue 24 item 4, issue 28 item 5): `repair LOG` (the plan, the default) within 2x of
`check --jobs 1 LOG` in CPU time and in peak memory, on the 2,000-turn log and on an open-tail
form of it. Every figure is a whole process, as a user starts it (`python -m sessionspec.cli ...`),
its CPU time and peak resident memory as the kernel accounts them (`os.wait4`: `ru_utime +
ru_stime`, `ru_maxrss`; children included where they are waited for), in interleaved rounds (each
round runs every command once, in turn), so each ratio compares runs made under the same load;
the median of the rounds is printed, with the rounds' spread.

Four logs: the log `sessionspec bench --turns N --save` writes (clean: nothing to repair); the
same cut after the first `tool/call` of its last turn (open: three closers, a tool/result among
them); that cut with half of the next line after it (torn: a torn fragment to cut, and the
same closers); and, with `--junk N` (default 1,000,000; 0 for none), the log's first turn cut
after its first `tool/call`, followed by N junk lines that name a turn/end without being one
(issue 34: `turn/end`, no JSON at all, 9 bytes a line, and a tenth of them `"turn/end"`, a JSON
string), each of which a reader must look at after the defect (SESSION-TORN-TAIL.2). `repair
--write` runs on a fresh copy of the log every time. With `--before REV`, the tree of that git
revision (its `reference/`, through `PYTHONPATH`) runs `repair` and `repair --write` beside this one.

  python benchmarks/repair_speed.py [--log LOG.jsonl] [--turns 2000] [--rounds 5] [--junk N] [--before REV]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CLI = ["-m", "sessionspec.cli"]


@dataclass(frozen=True)
class Case:
    name: str
    argv: list[str]
    side: str = "now"
    writes: bool = False
    """Whether it runs on a fresh copy of the log (it may change it)."""


@dataclass(frozen=True)
class Cost:
    cpu: float
    """CPU seconds, user and system."""
    peak: float
    """Peak resident memory, MB."""


def run(argv: list[str], pythonpath: str | None) -> Cost:
    """The cost of one whole process."""
    env = dict(os.environ, SESSIONSPEC_NO_PROGRESS="1")
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath
    process = subprocess.Popen([sys.executable, *argv], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(argv)}: exit {process.returncode}")
    return Cost(usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024)


def bench_log(folder: Path, turns: int) -> Path:
    path = folder / "bench.jsonl"
    subprocess.run([sys.executable, *CLI, "bench", "--turns", str(turns), "--impl", "live", "--save", str(path)],
                   check=True, capture_output=True)
    return path


def crashed(log: Path, folder: Path) -> tuple[Path, Path]:
    """The log cut after the first tool/call of its last turn (open), and that cut with a torn fragment after it.

    Read a line at a time: this process stays small, since a child's peak memory counts what its
    parent held when it was started (`fork`, or `vfork` sharing the parent's pages until `exec`).
    """
    start = call = -1
    with open(log, "rb") as stream:
        for number, line in enumerate(stream):
            if b'"type":"turn/start"' in line:
                start, call = number, -1
            elif call < 0 and start >= 0 and b'"type":"tool/call"' in line:
                call = number
    opened, torn = folder / "open.jsonl", folder / "torn.jsonl"
    with open(log, "rb") as stream, open(opened, "wb") as kept, open(torn, "wb") as cut:
        for number, line in enumerate(stream):
            if number <= call:
                kept.write(line)
                cut.write(line)
            else:
                cut.write(line[: len(line) // 2])
                break
    return opened, torn


def junk(log: Path, folder: Path, lines: int) -> Path:
    """The issue's junk log: the log's header and first turn up to its first tool/call (an open turn, a kilobyte),
    then `lines` junk lines: nine in ten `turn/end` (no JSON, 9 bytes), one in ten `"turn/end"` (a JSON string)."""
    path = folder / "junk.jsonl"
    with open(log, "rb") as stream, open(path, "wb") as out:
        for line in stream:
            out.write(line)
            if b'"type":"tool/call"' in line:
                break
        block = b"turn/end\n" * 9 + b'"turn/end"\n'
        for _ in range(lines // 10):
            out.write(block)
    return path


def earlier_tree(revision: str, into: Path) -> str:
    """The `reference/` of `revision`, unpacked under `into` (piped, never held here); returns what PYTHONPATH takes."""
    archive = subprocess.Popen(["git", "-C", str(ROOT), "archive", revision, "reference"], stdout=subprocess.PIPE)
    subprocess.run(["tar", "-x", "-C", str(into)], stdin=archive.stdout, check=True)
    if archive.wait() != 0:
        raise SystemExit(f"git archive {revision} failed")
    return str(into / "reference")


def cases(before: bool) -> list[Case]:
    table = [Case("check --jobs 1", ["check", "--jobs", "1"]), Case("check", ["check"]), Case("repair", ["repair"]),
             Case("repair --write", ["repair", "--write"], writes=True)]
    if before:
        table += [Case("repair (before)", ["repair"], "before"),
                  Case("repair --write (before)", ["repair", "--write"], "before", writes=True)]
    return table


def arguments(description: str, what: str, *, busy: bool = False) -> argparse.Namespace:
    """The options every script of this kind takes: the log, its turns, the rounds, and an earlier tree for `what`;
    with `busy`, how many busy loops load the machine meanwhile."""
    parser = argparse.ArgumentParser(description=description.splitlines()[0])
    parser.add_argument("--log", type=Path, help="the (clean) log (default: a bench log)")
    parser.add_argument("--turns", type=int, default=2000, help="turns of the default log (default 2000)")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds (default 5)")
    parser.add_argument("--before", metavar="REV", help=f"also run {what} of this git revision's tree, beside this one")
    if what == "repair":
        parser.add_argument("--junk", type=int, default=1_000_000,
                            help="junk lines after an open first turn, a log of its own (default 1,000,000; 0: none)")
    if busy:
        parser.add_argument("--busy", type=int, default=0, help="busy loops running meanwhile: a load from other work")
    return parser.parse_args()


def sides(before: str | None, folder: Path) -> dict[str, str | None]:
    """The PYTHONPATH of each side: this tree (None: as installed), and the earlier one when `before` names it."""
    out: dict[str, str | None] = {"now": None, "before": None}
    if before:
        (folder / "before").mkdir()
        out["before"] = earlier_tree(before, folder / "before")
    return out


def rows(table: list[Case], costs: Mapping[str, list[Cost]], base: list[Cost]) -> None:
    """One line a case: its median CPU and peak, and their ratios to `base` of the same round (median and spread)."""
    print(f"{'command':<26} {'CPU s':>7} {'x check':>8} {'(min-max)':>12} {'peak MB':>8} {'x check':>8} {'(min-max)':>12}")
    for case in table:
        got = costs[case.name]
        cpu = sorted(c.cpu / b.cpu for c, b in zip(got, base, strict=True))
        peak = sorted(c.peak / b.peak for c, b in zip(got, base, strict=True))
        print(f"{case.name:<26} {statistics.median(c.cpu for c in got):>7.2f} {statistics.median(cpu):>8.2f} "
              f"{f'{cpu[0]:.2f}-{cpu[-1]:.2f}':>12} {statistics.median(c.peak for c in got):>8.0f} "
              f"{statistics.median(peak):>8.2f} {f'{peak[0]:.2f}-{peak[-1]:.2f}':>12}")
    print(f"\n(this process's own peak: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB; a child's "
          "peak cannot be below what its parent held when it was started)")


def main() -> None:
    args = arguments(__doc__ or "", "repair")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        clean = args.log or bench_log(folder, args.turns)
        logs = {"clean": clean, **dict(zip(("open", "torn"), crashed(clean, folder), strict=True))}
        if args.junk:
            logs["junk"] = junk(clean, folder, args.junk)
        paths = sides(args.before, folder)
        table = cases(args.before is not None)
        costs: dict[tuple[str, str], list[Cost]] = {}
        for _ in range(args.rounds):
            for kind, log in logs.items():
                for case in table:
                    target = log
                    if case.writes:
                        target = folder / f"copy-{log.name}"
                        shutil.copyfile(log, target)
                    costs.setdefault((kind, case.name), []).append(run([*CLI, *case.argv, str(target)], paths[case.side]))
        report(logs, table, costs, args)


def report(logs: dict[str, Path], table: list[Case], costs: dict[tuple[str, str], list[Cost]],
           args: argparse.Namespace) -> None:
    print(f"{args.rounds} interleaved rounds, whole processes, medians (ratios: to `check --jobs 1` of the same round, "
          f"median and spread)" + (f"; before = {args.before}" if args.before else ""))
    for kind, log in logs.items():
        print(f"\n{kind}: {log.name}, {log.stat().st_size / 1e6:.1f} MB")
        rows(table, {name: got for (at, name), got in costs.items() if at == kind}, costs[(kind, "check --jobs 1")])
    worst = max(statistics.median(sorted(getattr(c, field) / getattr(b, field) for c, b in zip(
        costs[(kind, "repair")], costs[(kind, "check --jobs 1")], strict=True))) for kind in logs for field in ("cpu", "peak"))
    print(f"\nbar: `repair` within 2x of `check --jobs 1` in CPU time and peak memory; worst median ratio {worst:.2f}")
    if "junk" in logs:
        junk_cpu = {name: statistics.median(sorted(c.cpu / b.cpu for c, b in zip(
            costs[("junk", name)], costs[("junk", "check --jobs 1")], strict=True))) for name in ("repair", "repair --write")}
        print(f"bar (issue 34): on the junk log, `repair` within 1.5x of `check --jobs 1` in CPU time: "
              f"{junk_cpu['repair']:.2f} (`repair --write`: {junk_cpu['repair --write']:.2f})")


if __name__ == "__main__":
    main()
