"""The package's version: one constant, read by the build (pyproject's dynamic version) and by `hello`.

A constant rather than `importlib.metadata`: reading the installed metadata costs tens of
milliseconds at every start, which every command (`--version`, `serve` per CI step) would pay.
"""

__version__ = "0.1.0"
