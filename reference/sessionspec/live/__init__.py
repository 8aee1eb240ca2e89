"""The incremental implementation: what a Python program uses as its session store.

`Session` has the reference model's API, rules and errors (the stateful machine holds it to
`sessionspec.model` step by step); `surface` keeps the node list and the derived-message cache
incrementally, and `fastpath` holds the faster forms of the write-boundary rules, each a
predicate that implies the reference's acceptance (proofs/obligations_fastpaths.py); `fasttext`
and `fastrecord` are the readers' (a line of JSON text, a stored record's envelope).
"""

from sessionspec.live.session import Session

__all__ = ["Session"]
