"""`sessionspec merge A.json B.json ...`: the `--json` reports of a sharded run joined into the report of the whole.

Job I of a CI matrix of N runs `sessionspec conform --shard I/N --seed S --json part-I.json -- TESTEE`; the
last job merges the parts. They must be the shards 1..N of one run (same runner, spec, vectors,
seed and testee command), else the merge is refused. The merged report is what one unsharded run
with the same seed reports: the same vectors, families and numbers (the machine's rounds are split
by number, and minimizing is by counts).

Prints the summary (the five numbers and the families per level); `--json`, `--junit` and
`--markdown` write the whole's reports as `conform` does (the markdown also to
`$GITHUB_STEP_SUMMARY` when that is set).

Exit 0: no unexpected failure in the whole; 1: unexpected failures; 2: a part cannot be read, or the
parts are not the shards of one run.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from sessionspec.cli import COMMANDS
from sessionspec.cli.words import HelpFormatter, plural
from sessionspec.conformance import baseline, junit, markdown, merge
from sessionspec.conformance.header import properties
from sessionspec.conformance.outcome import Case, Outcome

WORDS = {"notApplicable": "not applicable", "expected": "expected failures", "unexpected": "unexpected failures",
         "notRun": "not run"}
"""The report's keys as `conform`'s summary line says them."""

EPILOG = """examples:
  sessionspec conform --shard 1/2 --seed 7 --json part-1.json -- ./testee    # one CI job
  sessionspec conform --shard 2/2 --seed 7 --json part-2.json -- ./testee    # another
  sessionspec merge part-1.json part-2.json --json report.json --junit report.xml --markdown summary.md"""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("merge", help=COMMANDS["merge"], description=__doc__, epilog=EPILOG,
                                   formatter_class=HelpFormatter)
    parser.add_argument("parts", type=Path, nargs="+", metavar="PART.json", help="the shards' conform --json reports")
    parser.add_argument("--json", type=Path, metavar="FILE", help="write the whole's report as JSON")
    parser.add_argument("--junit", type=Path, metavar="FILE", help="write the whole's report as JUnit XML")
    parser.add_argument("--markdown", type=Path, metavar="FILE", help="write the whole's summary as markdown")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    try:
        parts = [baseline.read(path) for path in args.parts]
        whole = merge.merge(parts, [str(path) for path in args.parts])
    except (baseline.BaselineError, merge.MergeError, KeyError, TypeError) as error:
        print(f"sessionspec merge: {error!s}", file=sys.stderr)
        return 2
    print_summary(whole, len(parts))
    try:
        write(args, whole)
    except OSError as error:
        print(f"sessionspec merge: cannot write the report: {error}", file=sys.stderr)
        return 2
    return 1 if whole["summary"]["unexpected"] else 0


def print_summary(whole: dict[str, Any], parts: int) -> None:
    """The whole's numbers and its families per level (`conform --jobs` prints the same)."""
    print(f"merge {whole['testee'].get('implementation', '?')}: " + ", ".join(f"{count:,} {WORDS.get(name, name)}"
          for name, count in whole["summary"].items()) + f" ({plural(parts, 'part')}, {whole['machine']['examples']:,} "
          "machine examples)")
    for level in ("required", "recommended"):
        print(f"  {level}: {plural(whole['levels'][level]['families'], 'family')}")
    for family in whole["families"]:  # what a person fixes, each once; --json holds its shortest trace
        if not family.get("listed"):
            print(f"  FAMILY [{family['level']}] {family['family']}")


def write(args: argparse.Namespace, whole: dict[str, Any]) -> None:
    """The whole's --json, --junit and --markdown, where `args` names them."""
    if args.json is not None:
        args.json.write_text(json.dumps(whole, indent=1, ensure_ascii=True) + "\n", encoding="utf-8")
    if args.junit is not None:
        cases = [Case(c["suite"], c["name"], c["status"], c["seconds"], c["message"], c["level"]) for c in whole["cases"]]
        junit.write(args.junit, Outcome(cases, []), str(whole["testee"].get("implementation", "?")),
                    properties(whole["header"], whole["footer"]))
    text = markdown.summary(whole)
    if args.markdown is not None:
        args.markdown.write_text(text, encoding="utf-8")
    step = os.environ.get("GITHUB_STEP_SUMMARY")
    if step:
        with open(step, "a", encoding="utf-8") as summary:
            summary.write(text)
