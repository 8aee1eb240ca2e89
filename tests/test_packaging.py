"""What a wheel carries is where the installed oracle looks for it (resources.shipped), storage vectors included.

The storage vectors were once shipped beside the vectors (`data/storage-vectors`) while every reader looks for
them at VECTORS/storage: an installed `vectors check` then called all 157 files missing, and an installed
`conform` ran no storage phase at all, without a word. `.ci/run` builds the wheel too; this is the quick check."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

from sessionspec import resources

ROOT = Path(__file__).resolve().parents[1]


def test_the_wheel_holds_the_spec_data_where_shipped_looks(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path), str(ROOT)],
                          capture_output=True, text=True, check=False, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    (wheel,) = tmp_path.glob("sessionspec-*.whl")
    carried = set(zipfile.ZipFile(wheel).namelist())
    for name in ("vectors", "schema", "proofs", "storage-vectors"):
        original = resources.IN_CHECKOUT[name]
        files = [path for path in original.iterdir() if path.is_file()
                 and (name == "storage-vectors" or path.suffix in (".json", ".py", ".md"))]
        where = f"sessionspec/data/{resources.PACKAGED.get(name, name)}"
        assert files and all(f"{where}/{path.name}" in carried for path in files), name
    assert resources.PACKAGED["storage-vectors"] == "vectors/storage", "every reader looks at VECTORS/storage"
