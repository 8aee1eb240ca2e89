"""`sessionspec show PATH`: a view of a stored log as it was at a point in its history."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from sessionspec import storage
from sessionspec.cli.render import VIEWS, Style, point_in_time, render_json, render_text
from sessionspec.errors import SpecViolation
from sessionspec.storage.formats import Unreadable, detect


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "show", help="show a stored log's log, surface, messages or transcript at a seq",
        description="Show one view of a stored session as it was after seq N (default: the end): the complete log, "
                    "the surface, the messages the model saw, or the append-origin transcript.")
    parser.add_argument("path", metavar="PATH", help="a session log: .jsonl, .jsonl.zstd or SQLite")
    parser.add_argument("--view", choices=VIEWS, default="messages", help="which view (default: messages)")
    parser.add_argument("--at", type=int, metavar="SEQ", help="the view as it was right after this seq")
    parser.add_argument("--diff", action="store_true", help="also show what each replacement shadowed, and its sources")
    parser.add_argument("--format", choices=("text", "json"), default=None,
                        help="text or json (default: text on a terminal, json when piped)")
    parser.add_argument("--session", metavar="ID", help="the session to show, in a SQLite database of several")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    path = Path(args.path)
    try:
        detect(path)
        events = [event for _, event in storage.stream(path, session_id=args.session)]
        point = point_in_time(events, args.at)
    except Unreadable as error:
        print(f"{path}: unreadable: {error}", file=sys.stderr)
        return 2
    except SpecViolation as violation:
        print(f"{path}: {violation}; run `sessionspec check {path}` for every finding", file=sys.stderr)
        return 1
    if args.at is not None and not 0 <= args.at < len(events):
        print(f"{path}: --at {args.at} is outside the log (seqs 0..{len(events) - 1})", file=sys.stderr)
        return 2
    fmt = args.format or ("text" if sys.stdout.isatty() else "json")
    if fmt == "json":
        json.dump(render_json(point, args.view, diff=args.diff), sys.stdout, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        colour = sys.stdout.isatty() and "NO_COLOR" not in os.environ
        for line in render_text(point, args.view, diff=args.diff, style=Style(colour)):
            print(line)
    return 0
