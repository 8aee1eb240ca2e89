"""`sessionspec show LOG`: a view of a stored log as it was at a point in its history, streamed.

Exit 0 when the log is sound; 1 when it breaks a rule (the view stops there) or has a torn tail
(the view shows what comes before it), said on stderr with the rule; 2 when it cannot be read
(missing, not a regular file, a newer format, a foreign database) or the arguments are wrong.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any, TextIO

from sessionspec.cli import COMMANDS
from sessionspec.cli.progress import Progress
from sessionspec.cli.render import (
    VIEWS,
    Style,
    event_line,
    heading,
    log_line,
    message_line,
    printable,
    replacement_lines,
)
from sessionspec.cli.view import Refused, Viewer
from sessionspec.cli.words import HelpFormatter, plural
from sessionspec.errors import SpecViolation
from sessionspec.jsontext import dumps
from sessionspec.jsonvalue import Json
from sessionspec.logcheck.reader import Log, no_runs, open_log
from sessionspec.storage.formats import Unreadable

CLEAN, FINDINGS, UNREADABLE = 0, 1, 2
EXAMPLES = """examples:
  sessionspec show session.jsonl                       the messages the next request would send
  sessionspec show session.jsonl --view surface --diff what each replacement shadowed, and its sources
  sessionspec show session.jsonl --at 120              the messages as they were right after seq 120
  sessionspec show session.jsonl --view log | jq .type JSON Lines when piped: one object a line, the summary last
"""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "show", help=COMMANDS["show"],
        description="Show one view of a stored session as it was after seq N (default: the end): the complete log, "
                    "the surface, the messages the model saw, or the append-origin transcript. The log is streamed "
                    "and validated as `check` validates it. Exit 0 when the log is sound, 1 when it breaks a rule "
                    "(the view stops there) or has a torn tail (the view shows what comes before it), 2 when it "
                    "cannot be read or the arguments are wrong.",
        epilog=EXAMPLES, formatter_class=HelpFormatter)
    parser.add_argument("path", metavar="LOG", help="a session log: .jsonl, .jsonl.zstd or SQLite")
    parser.add_argument("--view", choices=VIEWS, default="messages", help="which view (default: messages)")
    parser.add_argument("--at", type=seq_number, metavar="SEQ", help="the view as it was right after this seq")
    parser.add_argument("--diff", action="store_true", help="also show what each replacement shadowed, and its sources")
    parser.add_argument("--format", choices=("text", "jsonl", "json"), default=None,
                        help="text (default on a terminal); jsonl (default when piped: one JSON object a line, the "
                             "items, then each replacement with --diff, then the summary, which has a \"view\" key); "
                             "json (one object)")
    parser.add_argument("--session", metavar="ID", help="the session to show, in a SQLite database of several")
    parser.set_defaults(handler=run)


def seq_number(text: str) -> int:
    """A seq: a non-negative integer (argparse refuses anything else, with exit 2)."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"not a seq (a non-negative integer): {text!r}")
    return value


def write(stream: TextIO, text: str) -> None:
    """One line of output; characters the stream cannot encode are escaped, never an error."""
    try:
        stream.write(text + "\n")
    except UnicodeEncodeError:
        encoding = stream.encoding or "utf-8"
        stream.write((text + "\n").encode(encoding, "backslashreplace").decode(encoding))


class Output:
    """Writes one view in one format: streamed items as they come, the rest once the point is reached."""

    def __init__(self, fmt: str, view: str, *, diff: bool, stream: TextIO) -> None:
        self.fmt, self.view, self.diff, self.stream = fmt, view, diff, stream
        self.style = Style(fmt == "text" and stream.isatty() and "NO_COLOR" not in os.environ)
        self.collected: list[Json] = []

    def item(self, record: dict[str, Any]) -> None:
        """A record of the log or transcript view."""
        if self.fmt == "json":
            self.collected.append(record)
        elif self.fmt == "jsonl":
            write(self.stream, dumps(record))
        else:
            write(self.stream, log_line(record, self.style) if self.view == "log" else event_line(record))

    def finish(self, viewer: Viewer) -> None:
        """The surface or messages items, the replacements with --diff, and the summary."""
        if self.view == "surface":
            for record in viewer.surface():
                self.item(record)
        elif self.view == "messages":
            for seq, message in viewer.messages():
                if self.fmt == "text":
                    write(self.stream, message_line(seq, message, self.style))
                else:
                    self._json_item({"seq": seq, "message": message})
        summary: dict[str, Json] = {"view": self.view, "at": viewer.last, "events": viewer.last + 1,
                                    "nodes": list(viewer.nodes), "replaceGeneration": viewer.generation}
        if self.fmt == "text":
            self._text_end(viewer)
        elif self.fmt == "jsonl":
            for replaced in viewer.replaced if self.diff else ():
                write(self.stream, dumps({"replaced": replaced.to_json()}))
            write(self.stream, dumps(summary))
        else:
            whole: dict[str, Json] = {**summary, "items": self.collected}
            if self.diff:
                whole["replacements"] = [replaced.to_json() for replaced in viewer.replaced]
            write(self.stream, dumps(whole))

    def _json_item(self, item: dict[str, Json]) -> None:
        if self.fmt == "json":
            self.collected.append(item)
        else:
            write(self.stream, dumps(item))

    def _text_end(self, viewer: Viewer) -> None:
        style = self.style
        if self.diff:
            write(self.stream, style.bold(f"== replacements up to seq {viewer.last}"))
            if not viewer.replaced:
                write(self.stream, style.dim("  (none)"))
            for r in viewer.replaced:
                for line in replacement_lines(r.seq, r.start, r.end, r.record, r.shadowed, style):
                    write(self.stream, line)
        write(self.stream, heading(self.view, viewer.last, viewer.last + 1, len(viewer.nodes), viewer.generation, style))


def run(args: argparse.Namespace) -> int:
    path = Path(args.path)
    fmt = args.format or ("text" if sys.stdout.isatty() else "jsonl")
    try:
        log = open_log(path, args.session, survey=no_runs)
    except Unreadable as error:
        print(printable(f"{path}: unreadable: {error}"), file=sys.stderr)
        return UNREADABLE
    except SpecViolation as violation:
        print(printable(f"{path}: {violation}; run `sessionspec check {path}` for every finding"), file=sys.stderr)
        return FINDINGS
    output = Output(fmt, args.view, diff=args.diff, stream=sys.stdout)
    try:
        viewer = Viewer(str(path), log.header, at=args.at, diff=args.diff,
                        streamed=output.item if args.view in ("log", "transcript") else None,
                        transcript=args.view == "transcript")
        _feed(viewer, log, path)
    except Refused as refused:
        print(printable(f"{refused}; the view stops here: run `sessionspec check {path}` for every finding"),
              file=sys.stderr)
        return FINDINGS
    except SpecViolation as violation:
        print(printable(f"{path}: {violation}; run `sessionspec check {path}` for every finding"), file=sys.stderr)
        return FINDINGS
    if args.at is not None and args.at >= viewer.events:
        print(f"{path}: --at {args.at} is outside the log (seqs 0..{viewer.events - 1})", file=sys.stderr)
        return UNREADABLE
    output.finish(viewer)
    torn = log.torn
    if torn is not None:
        print(printable(f"{path}: the log has a torn tail from seq {torn.seq} ({torn.rule}: {torn.reason}); the view "
                        f"shows the {plural(viewer.events, 'event')} before it; `sessionspec repair --write` cuts it"),
              file=sys.stderr)
        return FINDINGS
    return CLEAN


def _feed(viewer: Viewer, log: Log, path: Path) -> None:
    """Every committed record into the viewer, with a progress bar on a terminal."""
    feed = viewer.feed
    with Progress(f"show {path}") as bar:
        for count, (line, record) in enumerate(log.records()):
            feed(line, record)
            if bar.enabled and not count & 0xFFF:
                bar(*log.progress())
