"""`sessionspec ...`: every subcommand lives in `sessionspec.cli.<name>`.

Each command module exports `register(subparsers)`, which adds its parser and sets `handler`
(a function from the parsed arguments to an exit code). Commands are discovered, not listed, so
adding one never edits this file; the package's other modules (progress, rendering) have no
`register` and are not commands.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from collections.abc import Sequence

import sessionspec.cli
from sessionspec import __version__

EPILOG = """Start with `sessionspec demo`. Every command exits 0 when all is well, 1 when it found something
(findings in a log, divergences of a testee, a difference on replay), 2 when it cannot run or
cannot read its input. `sessionspec COMMAND --help` explains each command, with examples."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sessionspec",
        description="Executable specification and conformance oracle for the DeepSeek Harness session model.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"sessionspec {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module_info in sorted(pkgutil.iter_modules(sessionspec.cli.__path__), key=lambda m: m.name):
        if module_info.name.startswith("_"):  # __main__
            continue
        module = importlib.import_module(f"sessionspec.cli.{module_info.name}")
        register = getattr(module, "register", None)
        if register is not None:
            register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        code: int = handler(args)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    return code

