"""`sessionspec results [REPORT.json ...]`: the conformance table, one row per implementation, from conform's reports.

Each REPORT.json is what `sessionspec conform --json REPORT.json -- TESTEE...` wrote: its row (the
required and the recommended rules passing of those the run reached, the families found by
level, the run's time) takes the place of the same implementation's row in the results file
(default `adapters/results.json`), and the README's table (between its two markers) is written
from that file. Nothing is typed by hand: the table is the runs' own counts.

With --check nothing is written: exit 1 when a report counts otherwise than its row (the time
aside: a measurement, not a result), or when the README's table is not the file's. CI runs the
upstream's conform with --json and checks it here, so a table that no longer says how the
upstream stands fails the build. Exit 0 when current (or written); 2 when a file cannot be read
or a report is of a partial run.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from sessionspec.cli import COMMANDS
from sessionspec.cli.words import HelpFormatter, plural
from sessionspec.conformance import results

EPILOG = """examples:
  sessionspec conform --json live.json -- sessionspec serve --impl live
  sessionspec conform --json model.json -- sessionspec serve --impl model
  sessionspec conform --failures adapters/dsh-session/known-failures.txt --json upstream.json \\
      -- node adapters/dsh-session/testee.mjs
  sessionspec results live.json model.json upstream.json     # rows and README table written
  sessionspec results --check upstream.json                  # CI: exit 1 if either is stale"""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("results", help=COMMANDS["results"], description=__doc__, epilog=EPILOG,
                                   formatter_class=HelpFormatter)
    parser.add_argument("reports", nargs="*", type=Path, metavar="REPORT.json", help="conform --json reports")
    parser.add_argument("--file", type=Path, default=Path("adapters/results.json"), metavar="RESULTS.json",
                        help="the results file (default: adapters/results.json)")
    parser.add_argument("--readme", type=Path, default=Path("README.md"), metavar="README.md",
                        help="the Markdown file whose table is written (default: README.md)")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if the file or the README is stale")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    try:
        reports = [results.read_report(path) for path in args.reports]
        rows = results.read_rows(args.file) if args.file.exists() or args.check else []
        readme = args.readme.read_text(encoding="utf-8")
        if args.check:
            problems = results.stale(rows, reports)
            if results.with_table(readme, rows, str(args.readme)) != readme:
                problems.append(f"{args.readme}: the table is not {args.file}'s (run `sessionspec results`)")
        else:
            rows = results.merged(rows, reports)
            table = results.with_table(readme, rows, str(args.readme))
    except (results.ResultsError, OSError, UnicodeDecodeError) as error:
        print(f"sessionspec results: {error}", file=sys.stderr)
        return 2
    if args.check:
        for problem in problems:
            print(f"STALE {problem}")
        print(f"{args.file}: {plural(len(rows), 'row')}, " + ("stale" if problems else "current"))
        return 1 if problems else 0
    args.file.parent.mkdir(parents=True, exist_ok=True)
    args.file.write_text(results.rows_text(rows), encoding="utf-8")
    args.readme.write_text(table, encoding="utf-8")
    print(f"wrote {plural(len(rows), 'row')} to {args.file} and the table in {args.readme}")
    return 0
