"""How counts read in what sessionspec prints: a count that agrees with its noun.

"1 nodes" in a summary line makes a reader stop and wonder whether the count is wrong; `plural`
says "1 node", "2 nodes". It lives below the commands because the oracle's reports (a layer the
commands use, never the other way) count the same way.
"""

from __future__ import annotations

from typing import Final

IRREGULAR: Final = {"process": "processes", "family": "families", "divergence family": "divergence families",
                    "entry": "entries", "difference": "differences"}
"""Nouns counted whose plural is not the noun plus "s"."""


def plural(count: int, noun: str, many: str | None = None) -> str:
    """`count` and `noun`, the noun in the plural unless the count is one: "1 node", "0 nodes", "2,000 events"."""
    word = noun if count == 1 else many or IRREGULAR.get(noun, noun + "s")
    return f"{count:,} {word}"
