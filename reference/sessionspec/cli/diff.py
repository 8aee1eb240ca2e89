"""`sessionspec diff OLD.json NEW.json`: what is new, fixed and still failing between two conform reports.

Each family is compared by its stable id (its failure-list line, e.g. `append:SESSION-LOSSLESS-TEXT.4
accepted`) and each failing vector by its id. A CI keeps the report of its main branch and diffs a
pull request's against it; `conform --baseline OLD.json` does the same inside the run. A family
only the machine showed is not called fixed by a report whose run did not search.

On a terminal, grouped with counts; piped, one `STATE<TAB>KIND<TAB>ID` line each (STATE new, fixed or
still; KIND family or vector), then the counts on stderr. `--markdown FILE` writes the new report's
summary with the comparison as markdown.

Exit 0: nothing new; 1: something new; 2: a report cannot be read or is not a conform report.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from sessionspec.cli import COMMANDS
from sessionspec.cli.words import HelpFormatter
from sessionspec.conformance import baseline, markdown

EPILOG = """examples:
  sessionspec diff main.json pr.json
  sessionspec diff main.json pr.json | grep ^new
  sessionspec diff --json diff.json --markdown summary.md main.json pr.json"""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("diff", help=COMMANDS["diff"], description=__doc__, epilog=EPILOG,
                                   formatter_class=HelpFormatter)
    parser.add_argument("old", type=Path, metavar="OLD.json", help="the baseline report (conform --json)")
    parser.add_argument("new", type=Path, metavar="NEW.json", help="the report to judge against it")
    parser.add_argument("--json", type=Path, metavar="FILE", help="write the comparison as JSON")
    parser.add_argument("--markdown", type=Path, metavar="FILE", help="write the comparison as markdown")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    try:
        old, new = baseline.read(args.old), baseline.read(args.new)
    except baseline.BaselineError as error:
        print(f"sessionspec diff: {error}", file=sys.stderr)
        return 2
    comparison = baseline.compare(old, new)
    tty = sys.stdout.isatty()
    for line in baseline.lines(comparison, tty=tty):
        print(line)
    print(baseline.summary(comparison), file=sys.stdout if tty else sys.stderr)
    try:
        if args.json is not None:
            args.json.write_text(json.dumps(comparison.to_json(), indent=1) + "\n", encoding="utf-8")
        if args.markdown is not None:
            args.markdown.write_text(markdown.summary(new, comparison), encoding="utf-8")
    except OSError as error:
        print(f"sessionspec diff: cannot write: {error}", file=sys.stderr)
        return 2
    return 1 if comparison.count("new") else 0
