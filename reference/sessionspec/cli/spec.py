"""`sessionspec spec [CHAPTER]`: the specification's chapters, listed or printed.

The spec is the definition: `spec/*.md` in a checkout, the copy the wheel carries when installed
(`sessionspec.resources`), so the text matching the installed reference is always at hand. With
no CHAPTER, one line per chapter: its number, name and title. A CHAPTER is named by its number
(`04`, `4`), its name (`append`), the start of its name (`persist`) or its file name
(`04-append.md`); `index` (or `README`) is the index of chapters and rule families. A chapter is
paged on a terminal (through $PAGER, else `less`) and written plain to a pipe. Exit 0 when
listed or printed; 2 when no chapter matches (the list is then printed on stderr).
"""

from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path
from typing import Any

from sessionspec.cli import COMMANDS
from sessionspec.cli.words import HelpFormatter
from sessionspec.resources import shipped

EPILOG = """examples:
  sessionspec spec                  # the chapters
  sessionspec spec 04               # the append transaction and its check order
  sessionspec spec append           # the same chapter, by name
  sessionspec spec 03 | grep -n 'SESSION-SURFACE-REPLACE'"""

INDEX = "README"
"""The index of chapters (spec/README.md)."""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("spec", help=COMMANDS["spec"], description=__doc__, epilog=EPILOG,
                                   formatter_class=HelpFormatter)
    parser.add_argument("chapter", nargs="?", metavar="CHAPTER",
                        help="a chapter's number, name or file name, or `index`; none lists the chapters")
    parser.set_defaults(handler=run)


def chapters(directory: Path | None = None) -> list[Path]:
    """The chapters' files in order (`NN-name.md`), the index not among them."""
    folder = directory or shipped("spec")
    return sorted(path for path in folder.glob("*.md") if re.match(r"\d+-", path.name))


def title(path: Path) -> str:
    """The chapter's heading without its number: "# 04 — Append" reads "Append"."""
    with path.open(encoding="utf-8") as text:
        for line in text:
            if line.startswith("# "):
                return re.sub(r"^#\s+(\d+\.?\s*(—\s*)?)?", "", line).strip()
    return path.stem


def find(name: str, directory: Path | None = None) -> Path | None:
    """The chapter `name` names (number, name, start of a name, file name), or the index; None if none or several."""
    folder = directory or shipped("spec")
    wanted = name.lower().removesuffix(".md")
    if wanted in ("index", INDEX.lower()):
        return folder / f"{INDEX}.md"
    every = chapters(folder)
    for match in (lambda number, word: wanted.isdigit() and int(wanted) == int(number),
                  lambda number, word: wanted in (word, f"{number}-{word}"),
                  lambda number, word: word.startswith(wanted)):
        found = [path for path in every if match(*path.stem.split("-", 1))]
        if found:
            return found[0] if len(found) == 1 else None
    return None


def listing(directory: Path | None = None) -> str:
    rows = [(path.stem.split("-", 1), title(path)) for path in chapters(directory)]
    width = max((len(word) for (_, word), _ in rows), default=0)
    return "\n".join(f"{number}  {word:<{width}}  {heading}" for (number, word), heading in rows)


def run(args: Any) -> int:
    if args.chapter is None:
        print(listing())
        return 0
    path = find(args.chapter)
    if path is None or not path.is_file():
        print(f"sessionspec spec: no chapter {args.chapter!r} (or more than one starts so); the chapters:\n{listing()}",
              file=sys.stderr)
        return 2
    text = path.read_text(encoding="utf-8")
    if sys.stdout.isatty():
        importlib.import_module("pydoc").pager(text)
    else:
        sys.stdout.write(text)
    return 0
