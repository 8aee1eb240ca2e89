"""sessionspec: the executable specification of the DeepSeek Harness session model, and its oracle.

    from sessionspec import Session, SpecViolation, load, save

`Session` is the incremental session store (`sessionspec.live`), held by the stateful machine to
the naive reference model (`sessionspec.model`), which is the spec as code; `load` and `save` read
and write the upstream's JSONL, zstd JSONL and SQLite logs through the load gate
(`sessionspec.storage`); every rejection is a `SpecViolation` naming the rule of `spec/` it
enforces. The conformance oracle (`sessionspec conform`) lives in `sessionspec.conformance`.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("sessionspec")
except PackageNotFoundError:  # imported from a source tree that was never installed
    __version__ = "0+unknown"

SESSION_FORMAT_VERSION = 0

from sessionspec.errors import Kind, SpecViolation  # noqa: E402 -- after __version__, which modules below read
from sessionspec.live import Session  # noqa: E402
from sessionspec.storage import LoadResult, load, save  # noqa: E402

__all__ = ["SESSION_FORMAT_VERSION", "Kind", "LoadResult", "Session", "SpecViolation", "__version__", "load", "save"]
