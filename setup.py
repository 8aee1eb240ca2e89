"""The build step pyproject.toml cannot express: ship the spec's text and data inside the package.

The chapters (`spec/*.md`), `spec/vectors`, `spec/schema` and `proofs` live at the top of the
repository, where the product card puts them and where people read them; a wheel installed alone
must still carry them, so `sessionspec spec`, `conform`, `vectors check` and `prove` work from any
directory. They are copied into `sessionspec/data/` when the wheel is built. An editable install
reads them from the checkout.
"""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
SHIPPED = {"spec": ROOT / "spec", "vectors": ROOT / "spec" / "vectors", "schema": ROOT / "spec" / "schema",
           "proofs": ROOT / "proofs", "storage-vectors": ROOT / "spec" / "vectors" / "storage"}
"""Each directory's files (not its subdirectories: the chapters' folder holds the vectors and schemas, shipped apart)."""


class BuildWithSpecData(build_py):
    def run(self) -> None:
        super().run()
        data = Path(self.build_lib) / "sessionspec" / "data"
        for name, source in SHIPPED.items():
            # The storage vectors sit in the vectors' own folder, as in the checkout: every reader finds them at
            # VECTORS/storage (`conform --vectors DIR` included).
            target = data / ("vectors/storage" if name == "storage-vectors" else name)
            if target.exists():
                shutil.rmtree(target)
            target.mkdir(parents=True)
            for path in sorted(source.iterdir()):
                if path.is_file() and (path.suffix in (".json", ".py", ".md") or name == "storage-vectors"):
                    shutil.copy2(path, target / path.name)


setup(cmdclass={"build_py": BuildWithSpecData})
