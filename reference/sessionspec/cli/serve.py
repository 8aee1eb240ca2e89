"""`sessionspec serve --impl NAME`: one of our implementations as a conformance testee (SCP v0 on stdin/stdout).

One JSON request per line in, one JSON answer per line out, in order, until EOF. Every line gets
exactly one answer, whatever it holds (spec/10-conformance.md). Use it as the testee of
`sessionspec conform`, or to try the protocol by hand. Only the implementation named is loaded.
Every implementation declares the storage capability for the three backends (spec/10, "Storage
capability"); a storage backend is loaded only when a storage op first needs it.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from sessionspec.cli import COMMANDS, faults
from sessionspec.cli.words import HelpFormatter
from sessionspec.testing import implementations
from sessionspec.wire.executor import Executor
from sessionspec.wire.serve import serve
from sessionspec.wire.storageops import BACKENDS

EPILOG = """examples:
  sessionspec conform -- sessionspec serve --impl live
  echo '{"op":"hello"}' | sessionspec serve"""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("serve", help=COMMANDS["serve"],
                                   description=__doc__, epilog=EPILOG, formatter_class=HelpFormatter)
    parser.add_argument("--impl", default="model", metavar="NAME", help="model, live or planted:NAME (default: model)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    try:
        create = implementations.factory(args.impl)
    except KeyError as error:
        print(f"sessionspec serve: {error.args[0]}", file=sys.stderr)
        return 2
    try:
        serve(Executor(create, args.impl, storage=BACKENDS), sys.stdin.buffer, sys.stdout.buffer)
    except BrokenPipeError:
        # The runner closed its end: the session is over, as at EOF (SCP v0), not a fault of the machine.
        faults.silence(sys.stdout)
        return 0
    return 0
