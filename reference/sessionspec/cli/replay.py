"""`sessionspec replay TRACE.json [--impl NAME]`: re-execute a machine's operation trace.

The trace is what a failing machine run writes (sessionspec.testing.trace): protocol requests,
plus the shared clock's readings and the hooks. Each op runs on the chosen implementation and on
the reference model; the implementation's answer is printed, one JSON line per op, followed by any
difference from the model's. Exit 1 when there is a difference, 0 when there is none.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from sessionspec.testing import implementations as impls
from sessionspec.testing.trace import Side, differences, encode, read_trace

START_TIME = 1_700_000_000_000


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("replay", help="re-execute an operation trace and compare it with the model")
    parser.add_argument("trace", help="a trace file written by a failing machine run")
    parser.add_argument("--impl", default="live", help="implementation to replay against (default: live)")
    parser.add_argument("--ignore-time", action="store_true", help="do not compare event times")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    ops = read_trace(args.trace)
    now = [START_TIME]

    def clock() -> int:
        return now[0]

    try:
        factory = impls.factory(args.impl)
    except KeyError as error:
        print(error, file=sys.stderr)
        return 2
    reference, testee = Side(impls.factory("model"), clock), Side(factory, clock)
    different = 0
    for number, op in enumerate(ops):
        now[0] = op.get("x-time", now[0] + 1)
        expected, actual = reference.run(op), testee.run(op)
        print(json.dumps(encode({"n": number, "op": op.get("op"), **actual}), ensure_ascii=False, default=repr))
        for line in differences(expected, actual, compare_time=not args.ignore_time):
            different += 1
            print(f"  DIFFERENCE from the model at op {number}: {line}")
    print(f"{len(ops)} ops replayed on {args.impl}: "
          + (f"{different} differences from the model" if different else "no difference from the model"), file=sys.stderr)
    return 1 if different else 0
