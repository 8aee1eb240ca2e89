"""How the commands' words read: counts that agree with their nouns, help text that fits the terminal.

`plural` (from `sessionspec.wording`, shared with the oracle's reports) says "1 node", "2 nodes",
never "1 nodes". `HelpFormatter` wraps a command's prose to the terminal, as argparse
does by default, while keeping its examples (indented lines) line for line, as
`RawDescriptionHelpFormatter` does; that one alone leaves a description written as one string one
long line.
"""

from __future__ import annotations

import argparse
import textwrap

from sessionspec.wording import IRREGULAR as IRREGULAR
from sessionspec.wording import plural as plural


class HelpFormatter(argparse.HelpFormatter):
    """Paragraphs of prose wrapped to the terminal's width; a paragraph with an indented line (examples) as written."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        paragraphs = text.strip("\n").split("\n\n")
        return "\n\n".join(_fill(paragraph, width, indent) for paragraph in paragraphs)


def _fill(paragraph: str, width: int, indent: str) -> str:
    lines = paragraph.splitlines()
    if any(line[:1].isspace() for line in lines):
        return "\n".join(indent + line for line in lines)
    return textwrap.fill(" ".join(paragraph.split()), width, initial_indent=indent, subsequent_indent=indent)
