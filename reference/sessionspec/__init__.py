"""sessionspec: the executable specification of the DeepSeek Harness session model.

The reference model (`sessionspec.model`) is the spec as code: naive, contract-annotated, every
query recomputed from the full log. The incremental implementation (`sessionspec.live`) is the
one a program would use as its session store; the stateful machine in `sessionspec.testing`
checks it against the model.
"""

from importlib.metadata import PackageNotFoundError, version

from sessionspec.errors import Kind, SpecViolation

SESSION_FORMAT_VERSION = 0

try:
    __version__ = version("sessionspec")
except PackageNotFoundError:  # imported from a source tree that was never installed
    __version__ = "0+unknown"

__all__ = ["SESSION_FORMAT_VERSION", "Kind", "SpecViolation", "__version__"]
