"""How the commands' words read: counts that agree with their nouns, help text that fits the terminal.

"1 nodes" in a summary line makes a reader stop and wonder whether the count is wrong; `plural`
says "1 node", "2 nodes". `HelpFormatter` wraps a command's prose to the terminal, as argparse
does by default, while keeping its examples (indented lines) line for line, as
`RawDescriptionHelpFormatter` does; that one alone leaves a description written as one string one
long line.
"""

from __future__ import annotations

import argparse
import textwrap

IRREGULAR = {"process": "processes", "family": "families", "divergence family": "divergence families"}
"""Nouns the commands count whose plural is not the noun plus "s"."""


def plural(count: int, noun: str, many: str | None = None) -> str:
    """`count` and `noun`, the noun in the plural unless the count is one: "1 node", "0 nodes", "2000 events"."""
    word = noun if count == 1 else many or IRREGULAR.get(noun, noun + "s")
    return f"{count} {word}"


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
