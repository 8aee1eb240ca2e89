"""`sessionspec results [REPORT.json ...]`: the conformance table, one row per implementation, from conform's reports.

Each REPORT.json is what `sessionspec conform --json REPORT.json -- TESTEE...` wrote: its row (the
required and the recommended rules passing of those the run reached, the families found by
level, the run's time) takes the place of the same implementation's row in the results file
(default `adapters/results.json`), and the README's table (between its two markers) is written
from that file. Nothing is typed by hand: the table is the runs' own counts.

Outside a checkout (no README.md here), or with --print, nothing is written: the table of the
given reports' rows (and the results file's, where there is one) is printed; `--row NAME` prints
one implementation's row alone. `--file PATH` writes the table to any file: created with the table
between the two markers, or its table section replaced (added at its end when it has none).

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

RESULTS = Path("adapters/results.json")

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
    parser.add_argument("--results", type=Path, default=None, metavar="RESULTS.json",
                        help=f"the results file (default: {RESULTS}, where it exists)")
    parser.add_argument("--file", "--readme", dest="readme", type=Path, default=None, metavar="PATH",
                        help="write the table into PATH, created or its table section replaced (default: README.md, "
                             "where it exists)")
    parser.add_argument("--print", action="store_true", help="write nothing; print the table")
    parser.add_argument("--row", metavar="NAME", help="write nothing; print the row of implementation NAME")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if the file or the README is stale")
    parser.set_defaults(handler=run)


def _printed(args: argparse.Namespace) -> int:
    """The table, or one row, of the reports (and the results file's rows, where there is one): nothing written."""
    try:
        rows = results.read_rows(args.results) if args.results.exists() else []
        rows = results.merged(rows, [results.read_report(path) for path in args.reports])
    except (results.ResultsError, OSError, UnicodeDecodeError) as error:
        print(f"sessionspec results: {error}", file=sys.stderr)
        return 2
    if args.row is None:
        print(results.table(rows))
        return 0
    chosen = [row for row in rows if args.row in (row.implementation, row.name)]
    if not chosen:
        names = ", ".join(row.name for row in rows) or "none"
        print(f"sessionspec results: no row of {args.row!r} (rows: {names})", file=sys.stderr)
        return 2
    print(results.table(chosen).splitlines()[-1])
    return 0


def _into_file(args: argparse.Namespace, rows: list[results.Row]) -> str:
    """The text of the file the table goes to: created, its section replaced, or the section added at its end."""
    path: Path = args.readme
    if not path.exists():
        return f"{results.BEGIN}\n{results.table(rows)}\n{results.END}\n"
    text = path.read_text(encoding="utf-8")
    if text.lstrip().startswith("{") and results.FORMAT in text[:200]:
        raise results.ResultsError(f"{path} is a results file: name it with --results")
    if results.BEGIN not in text:
        return text + ("" if text.endswith("\n") or not text else "\n") + \
            f"\n{results.BEGIN}\n{results.table(rows)}\n{results.END}\n"
    return str(results.with_table(text, rows, str(path)))


def run(args: argparse.Namespace) -> int:
    in_checkout = Path("README.md").exists()
    args.results = args.results or RESULTS
    if args.row is not None or args.print or (args.readme is None and not in_checkout and not args.check):
        return _printed(args)
    args.readme = args.readme or Path("README.md")
    args.file = args.results
    if not args.check:
        return _write(args)
    try:
        reports = [results.read_report(path) for path in args.reports]
        rows = results.read_rows(args.file)
        readme = args.readme.read_text(encoding="utf-8")
        problems = results.stale(rows, reports)
        if results.with_table(readme, rows, str(args.readme)) != readme:
            problems.append(f"{args.readme}: the table is not {args.file}'s (run `sessionspec results`)")
    except (results.ResultsError, OSError, UnicodeDecodeError) as error:
        print(f"sessionspec results: {error}", file=sys.stderr)
        return 2
    for problem in problems:
        print(f"STALE {problem}")
    print(f"{args.file}: {plural(len(rows), 'row')}, " + ("stale" if problems else "current"))
    return 1 if problems else 0


def _write(args: argparse.Namespace) -> int:
    """The rows merged into the results file (where there is one, or one was named) and the table written."""
    keep = args.file.exists() or args.file != RESULTS
    try:
        rows = results.read_rows(args.file) if args.file.exists() else []
        rows = results.merged(rows, [results.read_report(path) for path in args.reports])
        text = _into_file(args, rows)
    except (results.ResultsError, OSError, UnicodeDecodeError) as error:
        print(f"sessionspec results: {error}", file=sys.stderr)
        return 2
    if keep:
        args.file.parent.mkdir(parents=True, exist_ok=True)
        args.file.write_text(results.rows_text(rows), encoding="utf-8")
    args.readme.parent.mkdir(parents=True, exist_ok=True)
    args.readme.write_text(text, encoding="utf-8")
    where = f"{args.file} and " if keep else ""
    print(f"wrote {plural(len(rows), 'row')} to {where}the table in {args.readme}")
    return 0
