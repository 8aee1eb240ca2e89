"""sessionspec: the executable specification of the DeepSeek Harness session model, and its oracle.

    from sessionspec import Session, SpecViolation, load, save

`Session` is the incremental session store (`sessionspec.live`), held by the stateful machine to
the naive reference model (`sessionspec.model`), which is the spec as code; `load` and `save` read
and write the upstream's JSONL, zstd JSONL and SQLite logs through the load gate
(`sessionspec.storage`); every rejection is a `SpecViolation` naming the rule of `spec/` it
enforces. The conformance protocol is `sessionspec.wire`; the oracle (`sessionspec conform`)
lives in `sessionspec.conformance`.

Importing a module of the package imports this one first, so it loads nothing it does not need:
the store and the storage layer are imported when `Session`, `load`, `save` or `LoadResult` is
first read (PEP 562), not when `sessionspec serve` or `sessionspec check` starts.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from sessionspec.errors import Kind, SpecViolation
from sessionspec.header import SESSION_FORMAT_VERSION
from sessionspec.version import __version__

if TYPE_CHECKING:
    from sessionspec.live import Session
    from sessionspec.storage import LoadResult, load, save

_LAZY = {"Session": "sessionspec.live", "LoadResult": "sessionspec.storage", "load": "sessionspec.storage",
         "save": "sessionspec.storage"}

__all__ = ["SESSION_FORMAT_VERSION", "Kind", "LoadResult", "Session", "SpecViolation", "__version__", "load", "save"]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'sessionspec' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
