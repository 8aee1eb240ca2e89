"""`sessionspec ...`: every subcommand lives in `sessionspec.cli.<name>`, loaded only when it runs.

`COMMANDS` names each command and says in one line what it does; that is all `sessionspec --help`
needs, so the top-level parser imports no command. The command a run dispatches to is imported
by name (`importlib`) and its module's `register(subparsers)` adds its full parser and sets
`handler` (a function from the parsed arguments to an exit code). So `sessionspec check LOG` loads
the log checker and the one storage backend it opens, never the oracle's engine (Hypothesis),
the reference model's contracts or the other backends: a CI step or a loop over a hundred logs
pays only for what it uses (tests/test_startup.py holds it; benchmarks/startup.py measures it).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import sys
from collections.abc import Callable, Sequence
from typing import Final

from sessionspec.cli import faults
from sessionspec.version import __version__

COMMANDS: Final = {
    "demo": "start here: an example session in every view, then the oracle at work",
    "spec": "list the specification's chapters, or print one (sessionspec spec 04)",
    "check": "check stored session logs (JSONL, zstd JSONL, SQLite) against the spec",
    "show": "show a stored log's log, surface, messages or transcript at a seq",
    "repair": "show (and with --write commit) the torn-tail cut and closers of a crashed log",
    "conform": "run the vectors and the stateful machine against a testee (SCP v0)",
    "serve": "serve an implementation as a conformance testee (SCP v0 on stdin/stdout)",
    "results": "the conformance table: one row per implementation, from conform --json reports",
    "diff": "compare two conform --json reports: new, fixed and still-failing families and vectors",
    "merge": "join the --json reports of a sharded conform run (--shard I/N) into the report of the whole",
    "replay": "re-execute a trace (from conform, the machine or explore) and compare it with the reference",
    "vectors": "generate or check the conformance vectors (spec/vectors/)",
    "explore": "explore every state up to a depth against the reference model, checking the invariants",
    "prove": "run CrossHair on the proof obligations (needs the proofs extra)",
    "bench": "replay a workload of appends and derives, report events/s",
}
"""Each command's module name and its one line of help, in the order `--help` lists them."""

EPILOG = """Start with `sessionspec demo`. Every command exits 0 when all is well, 1 when it found something
(findings in a log, divergences of a testee, a difference on replay), 2 when it cannot run or
cannot read its input. `sessionspec COMMAND --help` explains each command, with examples."""


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser, with the full subparser of `command` (its module imported) and a one-line entry for the others."""
    return _parsers(command)[0]


def _parsers(command: str | None) -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    parser = argparse.ArgumentParser(
        prog="sessionspec",
        description="Executable specification and conformance oracle for the DeepSeek Harness session model.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"sessionspec {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, summary in COMMANDS.items():
        if name == command:
            importlib.import_module(f"{__name__}.{name}").register(subparsers)
        else:
            subparsers.add_parser(name, help=summary, add_help=False)
    return parser, subparsers.choices


def command_of(argv: Sequence[str]) -> str | None:
    """The command a command line names: its first word that is not an option (the top level takes no values)."""
    return next((word for word in argv if not word.startswith("-")), None)


def _lenient(stream: object) -> None:
    """Text a command prints may quote what a testee or a log held (a lone surrogate, bytes that are not UTF-8, kept as
    Python's surrogate escapes): written escaped, never a UnicodeEncodeError that ends the command before its report."""
    reconfigure = getattr(stream, "reconfigure", None)
    if reconfigure is not None:
        with contextlib.suppress(ValueError, OSError, TypeError):
            reconfigure(errors="backslashreplace")


def main(argv: Sequence[str] | None = None) -> int:
    _lenient(sys.stdout)
    _lenient(sys.stderr)
    words = list(sys.argv[1:] if argv is None else argv)
    command = command_of(words)
    if command != "conform":
        return _main(command, words)
    # A run keeps its report whatever stops it, its own imports included; called as a function (argv given), main
    # leaves the process's signal handlers as it found them.
    stopping = importlib.import_module("sessionspec.conformance.stopping")
    previous = stopping.note_signals()
    try:
        return _main(command, words)
    finally:
        if argv is not None:
            stopping.restore(previous)


def _main(command: str | None, words: list[str]) -> int:
    parser, commands = _parsers(command if command in COMMANDS else None)
    args, extra = parser.parse_known_args(words)
    if extra:  # said by the command's own parser, with its usage, not the top level's
        commands.get(str(getattr(args, "command", None)), parser).error(f"unrecognized arguments: {' '.join(extra)}")
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help(sys.stderr)
        return 2
    return dispatch(handler, args)


def dispatch(handler: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> int:
    """The command run, the machine's faults said in one line with exit 2 (`cli.faults`): the same for every command."""
    subject = _subject(args)
    closed = faults.closed_stdout()
    if closed is not None:
        return faults.report(closed, faults.STDOUT)
    stdout = sys.stdout
    sys.stdout = faults.Watched(stdout)
    try:
        code = handler(args)
        faults.flush()
    except KeyboardInterrupt:
        return 130
    except faults.caught() as error:
        if not faults.is_fault(error):
            raise
        sys.stdout = stdout
        return faults.report(error, subject)
    finally:
        sys.stdout = stdout
    return code


def _subject(args: argparse.Namespace) -> str | None:
    """What a fault that names no file is about: the command's one log or file, else the command."""
    for name in ("path", "trace"):
        value = getattr(args, name, None)
        if value is not None:
            return str(value)
    paths = getattr(args, "paths", None)
    if isinstance(paths, list) and len(paths) == 1:
        return str(paths[0])
    return f"sessionspec {args.command}"
