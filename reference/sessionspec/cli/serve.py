"""`sessionspec serve --impl NAME`: a conformance testee (SCP v0 over stdin/stdout) over one of our implementations."""

from __future__ import annotations

import argparse
import sys
from typing import Any


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("serve", help="serve an implementation as a conformance testee (SCP v0 on stdin/stdout)")
    parser.add_argument("--impl", default="model", help="model, live or planted:NAME (default: model)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from sessionspec.conformance.testee import serve, testee_for

    try:
        testee = testee_for(args.impl)
    except (KeyError, ImportError) as error:
        print(f"sessionspec serve: {error}", file=sys.stderr)
        return 2
    serve(testee, sys.stdin.buffer, sys.stdout.buffer)
    return 0
