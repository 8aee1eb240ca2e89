"""`sessionspec check PATH...`: is a stored session log sound? Exit 0 clean, 1 findings, 2 unreadable."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from sessionspec.cli import COMMANDS
from sessionspec.cli.progress import Progress
from sessionspec.cli.words import plural
from sessionspec.logcheck.checkfile import Report, check_path

CLEAN, FINDINGS, UNREADABLE = 0, 1, 2


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "check", help=COMMANDS["check"],
        description="Stream each log and report every rule it breaks: file, line, seq, rule ID and one sentence. "
                    "Exit 0 when every log is clean, 1 when any has findings, 2 when any cannot be read.")
    parser.add_argument("paths", nargs="+", metavar="PATH", help="session logs: .jsonl, .jsonl.zstd or SQLite")
    parser.add_argument("--strict", action="store_true",
                        help="also check the relational invariants and what a strict provider would refuse")
    parser.add_argument("--format", choices=("text", "json"), default="text", help="output format (default: text)")
    parser.add_argument("--session", metavar="ID", help="the session to check, in a SQLite database of several")
    parser.add_argument("--jobs", type=jobs, default=None, metavar="N",
                        help="processes for a JSONL log: 1 checks in this one alone; N > 1 has N - 1 more prove and "
                             "survey blocks while this one folds them (default: one per CPU that other work leaves "
                             "free, at most 4, for logs of 4 MiB or more)")
    parser.set_defaults(handler=run)


def jobs(text: str) -> int:
    try:
        count = int(text)
    except ValueError:
        count = 0
    if count < 1:
        raise argparse.ArgumentTypeError(f"not a number of processes: {text!r}")
    return count


def exit_code(reports: list[Report]) -> int:
    if any(r.unreadable is not None for r in reports):
        return UNREADABLE
    return FINDINGS if any(r.findings for r in reports) else CLEAN


def run(args: argparse.Namespace) -> int:
    reports = []
    for path in args.paths:
        with Progress(f"check {path}") as bar:
            report = check_path(path, strict=args.strict, tick=bar if bar.enabled else None, session_id=args.session,
                                jobs=args.jobs)
        reports.append(report)
        if args.format == "text":
            print_text(report)
    if args.format == "json":
        json.dump({"files": [r.to_json() for r in reports], "exit": exit_code(reports)}, sys.stdout, ensure_ascii=False,
                  indent=1)
        sys.stdout.write("\n")
    return exit_code(reports)


def print_text(report: Report) -> None:
    if report.unreadable is not None:
        print(f"{report.file}: unreadable: {report.unreadable}", file=sys.stderr)
        return
    for finding in report.findings:
        print(finding)
    summary = (f"{plural(report.events, 'event')} ({report.format}), surface of {plural(report.nodes, 'node')} after "
               f"{plural(report.replace_generation, 'replacement')}")
    if report.upgrades:
        summary += f", {plural(report.upgrades, 'legacy upgrade')} applied as on load"
    verdict = "ok" if not report.findings else plural(len(report.findings), "finding")
    print(f"{report.file}: {verdict}: {summary}")
