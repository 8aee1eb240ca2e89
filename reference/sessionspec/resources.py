"""Where the spec's data is: the checkout's `spec/` and `proofs/`, or the copy a wheel carries.

The chapters, the vectors, the JSON schemas and the proof obligations are part of the
specification and live at the top of the repository; `setup.py` copies them into `sessionspec/data/` when a wheel is
built, so an installed oracle finds them from any directory. A checkout (an editable install)
reads the originals, so a regenerated vector is seen at once.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

PACKAGE: Final = Path(__file__).resolve().parent
CHECKOUT: Final = PACKAGE.parents[1]
"""The repository a source tree of the package sits in (reference/sessionspec -> the top)."""
IN_CHECKOUT: Final = {"spec": CHECKOUT / "spec", "vectors": CHECKOUT / "spec" / "vectors",
                      "schema": CHECKOUT / "spec" / "schema", "proofs": CHECKOUT / "proofs",
                      "storage-vectors": CHECKOUT / "spec" / "vectors" / "storage"}

PACKAGED: Final = {"storage-vectors": "vectors/storage"}
"""Where a wheel's copy is when it is not `data/NAME`: the storage vectors sit in the vectors' folder, as in the
checkout, since every reader looks for them at VECTORS/storage."""


def shipped(name: str) -> Path:
    """The directory of the spec's `name` ("spec": the chapters, "vectors", "schema" or "proofs"): the checkout's,
    else the packaged copy."""
    original = IN_CHECKOUT[name]
    if original.is_dir():
        return original
    return PACKAGE / "data" / PACKAGED.get(name, name)
