"""The mutation lane, one command: mutate the store (or the storage readers), run the oracle on each mutant, report.

    python mutation/run.py --sample 150 --seed 1                 # 150 mutants of live/, conform, machine, fast forms
    python mutation/run.py --lane conform --sample 150 --seed 1  # conform alone
    python mutation/run.py --target storage --sample 60 --seed 1 # storage/ + live/fastrecord.py: conform, storage tests, check
    python mutation/run.py --target storage --lane conform        # the same under conform alone (its storage phase)
    python mutation/run.py --target text --sample 40             # the lossless line reader (live/fasttext.py)
    python mutation/run.py --full                                # every mutant of live/
    python mutation/run.py --sample 120 --stratify               # as many mutants of each operator family
    python mutation/run.py --sample 150 --minutes 25             # a time budget: what is not run stays pending
    python mutation/run.py --out DIR --resume                    # finish an interrupted session
    python mutation/run.py --out DIR --report                    # (re)write the report of a session

Built on cosmic-ray (see README.md, "Mutation lane", for why): its operators (trimmed, plus three
of ours in `operators.py`), its session database (`OUT/session.sqlite`, every mutant's diff,
outcome and oracle output; `cr-report OUT/session.sqlite` reads it too) and its mutate-test-restore
step. The mutants are written into a scratch copy of the tree (`OUT/tree`), never into the
checkout, so the lane can run while people work; the test command is `oracle.py` in that copy.
The lane runs `nice`d; a per-mutant timeout per stage comes from an unmutated baseline run.
"""

from __future__ import annotations

import argparse
import ast
import os
import random
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import operators
import report
from cosmic_ray.ast import ast_nodes, get_ast
from cosmic_ray.ast.ast_query import ASTQuery
from cosmic_ray.mutating import mutate_and_test, mutate_code
from cosmic_ray.work_db import WorkDB, use_db
from cosmic_ray.work_item import MutationSpec, WorkItem

REPO = Path(__file__).resolve().parents[1]
TARGETS = {"live": "reference/sessionspec/live", "storage": "reference/sessionspec/storage",
           "text": "reference/sessionspec/live"}
ALSO = {"storage": ("reference/sessionspec/live/fastrecord.py",)}
"""Modules a target mutates besides its folder's: live/fastrecord.py holds the load's fast forms of a stored record
(`stored_event`), which only a storage backend's reader runs, so the storage target is judged on it (issue 33)."""
LEFT_TO = {"live": ("fasttext.py",), "text": ("__init__.py", "fastpath.py", "session.py", "surface.py")}
"""Modules of a target's folder mutated under another target: live/fasttext.py, the one lossless line reader, is the
testee's reader but also every storage backend's (its block reader runs only under storage), so it is a target of its
own, `text`, whose oracle is conform and then the storage and fast-form tests. (The issue-25 measurement of live/
sampled session, surface and fastpath, as `live` does.)"""
COPIED = ("reference", "spec", "tests", "proofs", "mutation", "pyproject.toml")
"""What the oracle reads: the fastforms stage imports proofs/obligations_fastpaths.py (tests/test_fastpaths.py)."""
IGNORED = shutil.ignore_patterns("__pycache__", "*.egg-info", ".mypy_cache", ".ruff_cache", ".hypothesis", "results")


def copy_tree(out: Path) -> Path:
    """A scratch copy of what the oracle needs; the mutants are written here, never into the checkout."""
    tree = out / "tree"
    if tree.exists():
        shutil.rmtree(tree)
    tree.mkdir(parents=True)
    for name in COPIED:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, tree / name, ignore=IGNORED)
        else:
            shutil.copy2(source, tree / name)
    return tree


def annotation_spans(source: str) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """Where the annotations are: under `from __future__ import annotations` they are never evaluated."""
    tree = ast.parse(source)
    if "from __future__ import annotations" not in source:
        return []
    spans = []
    for node in ast.walk(tree):
        found: list[ast.expr | None] = []
        if isinstance(node, ast.arg):
            found.append(node.annotation)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found.append(node.returns)
        elif isinstance(node, ast.AnnAssign):
            found.append(node.annotation)
        for expr in found:
            if expr is not None and expr.end_lineno is not None and expr.end_col_offset is not None:
                spans.append(((expr.lineno, expr.col_offset), (expr.end_lineno, expr.end_col_offset)))
    return spans


def candidates(tree: Path, target: str) -> Iterator[tuple[MutationSpec, str]]:
    """Every mutation of the target's modules, with the reason to leave it out ('' if it is kept)."""
    for path in [*sorted((tree / TARGETS[target]).glob("*.py")), *(tree / extra for extra in ALSO.get(target, ()))]:
        if path.name in LEFT_TO.get(target, ()):
            continue
        source = path.read_text(encoding="utf-8")
        spans = annotation_spans(source)
        module = get_ast(source)
        for name in operators.operator_names():
            operator = operators.operator(name)
            positions = ((node, start, end) for node in ast_nodes(module) for start, end in operator.mutation_positions(node))
            for occurrence, (node, start, end) in enumerate(positions):
                spec = MutationSpec(module_path=str(path), operator_name=name, occurrence=occurrence, start_pos=start,
                                    end_pos=end, definition_name=ASTQuery(node).get_definition_name())
                if any(low <= start and end <= high for low, high in spans):
                    yield spec, "annotation"
                else:
                    yield spec, ""


def compiles(spec: MutationSpec) -> bool:
    """A mutant that is not Python is no test of the oracle: left out (cosmic-ray would count it killed)."""
    source = Path(spec.module_path).read_text(encoding="utf-8")
    mutated = mutate_code(source, operators.operator(spec.operator_name), spec.occurrence)
    if mutated is None or mutated == source:
        return False
    try:
        compile(mutated, str(spec.module_path), "exec")
    except (SyntaxError, ValueError):
        return False
    return True


def choose(tree: Path, target: str, sample: int | None, seed: int, *, stratify: bool = False,
           families: frozenset[str] | None = None) -> tuple[list[MutationSpec], dict[str, int]]:
    """The mutants to run: all of them, or `sample` drawn at random (seeded) from those that compile.

    `stratify`: the sample takes its mutants from each operator family in turn (`operators.family`), so a
    family with few sites (a return made None) is drawn as often as one with many (seven swaps per comparison).
    `families`: only mutants of these families.
    """
    kept, left_out = [], {"annotation": 0, "not Python": 0}
    for spec, why in candidates(tree, target):
        if why:
            left_out[why] += 1
        elif families is None or operators.family(spec.operator_name) in families:
            kept.append(spec)
    random.Random(seed).shuffle(kept)
    if stratify:
        kept = interleave(kept)
    chosen = []
    for spec in kept:
        if sample is not None and len(chosen) >= sample:
            break
        if compiles(spec):
            chosen.append(spec)
        else:
            left_out["not Python"] += 1
    left_out["population"] = len(kept)
    return chosen, left_out


def interleave(specs: list[MutationSpec]) -> list[MutationSpec]:
    """The mutants one family after another (each family in its shuffled order), in a fixed order of families."""
    by_family: dict[str, list[MutationSpec]] = {}
    for spec in specs:
        by_family.setdefault(operators.family(spec.operator_name), []).append(spec)
    queues = [by_family[name] for name in sorted(by_family)]
    out: list[MutationSpec] = []
    while any(queues):
        for queue in queues:
            if queue:
                out.append(queue.pop(0))
    return out


def oracle_command(tree: Path, out: Path, target: str, lane: str, timeouts: dict[str, float]) -> str:
    limits = ",".join(f"{name}={seconds:.0f}" for name, seconds in timeouts.items())
    command = [sys.executable, str(tree / "mutation" / "oracle.py"), target, "--lane", lane, "--traces", str(out / "traces")]
    return " ".join([*command, "--timeouts", limits] if limits else command)


def baseline(tree: Path, out: Path, target: str, lane: str) -> dict[str, float]:
    """The unmutated tree must pass the oracle; its stage times set each stage's timeout (x5, at least 120 s)."""
    started = time.monotonic()
    result = subprocess.run(oracle_command(tree, out, target, lane, {}).split(), cwd=tree, capture_output=True, text=True)
    print(result.stdout.splitlines()[-1] if result.stdout else result.stderr, flush=True)
    if result.returncode != 0:
        sys.exit(f"mutation lane: the unmutated tree fails the oracle ({time.monotonic() - started:.0f} s):\n{result.stdout}")
    timeouts = {}
    for line in result.stdout.splitlines():
        if line.startswith("--- stage "):
            name, seconds = line.removeprefix("--- stage ").split(":")[0], float(line.split(" in ")[1].split()[0])
            timeouts[name] = max(120.0, 5 * seconds)
    return timeouts


def execute(db: WorkDB, command: str, timeout: float, deadline: float | None = None) -> None:
    """cosmic-ray's local distributor, with a progress line per mutant: mutate, run the oracle, restore, record.
    No mutant is started after `deadline` (time.monotonic()): the rest stay pending, for `--resume`."""
    pending = sorted(db.pending_work_items, key=lambda item: item.job_id)
    done = db.num_results
    total = done + len(pending)
    for item in pending:
        if deadline is not None and time.monotonic() >= deadline:
            print(f"mutation lane: time budget spent; {total - done} mutants left pending (--resume runs them)", flush=True)
            return
        started = time.monotonic()
        result = mutate_and_test(mutations=item.mutations, test_command=command, timeout=timeout)
        db.set_result(item.job_id, result)
        done += 1
        spec = item.mutations[0]
        verdict = report.killed_by(result.output or "") if result.is_killed else "SURVIVED"
        print(f"[{done}/{total}] {Path(spec.module_path).name}:{spec.start_pos[0]} {spec.operator_name.split('/')[1]} "
              f"-> {verdict} ({time.monotonic() - started:.0f} s)", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target", choices=sorted(TARGETS), default="live")
    parser.add_argument("--lane", choices=("conform", "both"), default="both",
                        help="conform alone, or conform and then the target's in-process stages (live: the machine, "
                             "then the fast forms' own tests; storage: the chapter-07 tests, then check's) (default)")
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--sample", type=int, default=150, help="mutants drawn at random (default 150)")
    size.add_argument("--full", action="store_true", help="every mutant")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--stratify", action="store_true",
                        help="draw the sample from each operator family in turn (operators.family)")
    parser.add_argument("--families", help="only these operator families, comma-separated (operators.family)")
    parser.add_argument("--out", type=Path, help="session directory (default mutation/results/TARGET-LANE-SEED)")
    parser.add_argument("--resume", action="store_true", help="run what an existing session has not run yet")
    parser.add_argument("--report", action="store_true", help="only (re)write the report of an existing session")
    parser.add_argument("--minutes", type=float, help="start no mutant after this many minutes (the rest stay pending)")
    parser.add_argument("--nice", type=int, default=10, help="niceness for the lane and its children (default 10)")
    parser.add_argument("--require", type=float, metavar="FRACTION",
                        help="exit 1 if the score (killed / non-equivalent; unjudged survivors count) is below this")
    parser.add_argument("--require-conform", type=float, metavar="FRACTION",
                        help="exit 1 if conform alone kills less than this fraction")
    parser.add_argument("--require-machine", type=float, metavar="FRACTION",
                        help="live: exit 1 if conform + machine kill less than this fraction")
    args = parser.parse_args(argv)
    out = (args.out or REPO / "mutation" / "results" / f"{args.target}-{args.lane}-{args.seed}").resolve()
    database = out / "session.sqlite"
    if args.report:
        return gate(report.write(out, database), args)
    os.nice(args.nice)
    operators.register()  # a resumed session runs mutants of our own operators too (cosmic-ray looks them up by name)
    deadline = None if args.minutes is None else time.monotonic() + 60 * args.minutes
    if not args.resume:
        prepare(out, args)
    settings = report.read_settings(out)
    timeout = sum(settings["timeouts"].values()) + 60
    with use_db(str(database), WorkDB.Mode.open) as db:
        os.chdir(settings["tree"])
        execute(db, settings["command"], timeout, deadline)
    return gate(report.write(out, database), args)


def gate(summary: dict[str, Any], args: argparse.Namespace) -> int:
    """The nightly's verdict: 0 when each required score is met (a survivor nobody judged counts as a miss)."""
    failed = [f"{name} {value} < {wanted}" for name, value, wanted in
              (("score", summary["score"], args.require), ("conform alone", summary["score_conform"], args.require_conform),
               ("conform + machine", summary["score_machine"], args.require_machine))
              if wanted is not None and (value is None or value < wanted)]
    for reason in failed:
        print(f"mutation lane: below the required score: {reason}", file=sys.stderr)
    return 1 if failed else 0


def prepare(out: Path, args: argparse.Namespace) -> None:
    """A new session: the scratch tree, the chosen mutants in a fresh database, the baseline and its timeouts."""
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    tree = copy_tree(out)
    families = frozenset(args.families.split(",")) if args.families else None
    chosen, left_out = choose(tree, args.target, None if args.full else args.sample, args.seed, stratify=args.stratify,
                              families=families)
    print(f"mutation lane: {len(chosen)} mutants of {TARGETS[args.target]} (population {left_out['population']}; "
          f"left out: {left_out['annotation']} in annotations, {left_out['not Python']} not Python)", flush=True)
    timeouts = baseline(tree, out, args.target, args.lane)
    command = oracle_command(tree, out, args.target, args.lane, timeouts)
    with use_db(str(out / "session.sqlite"), WorkDB.Mode.create) as db:
        db.add_work_items(WorkItem.single(job_id=f"{number:04d}", mutation=spec) for number, spec in enumerate(chosen))
    report.write_settings(out, {"target": args.target, "lane": args.lane, "seed": args.seed, "full": args.full,
                                "stratify": args.stratify, "families": sorted(families) if families else None,
                                "tree": str(tree), "command": command, "timeouts": timeouts, "left_out": left_out,
                                "started": time.strftime("%Y-%m-%d %H:%M:%S")})


if __name__ == "__main__":
    sys.exit(main())
