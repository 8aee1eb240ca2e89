"""`sessionspec demo`: both halves of the tool in under a minute.

First the session model: an example session with a tool call, a pruning and a compaction is
stored, checked and shown in every view (the log, the surface with what each replace shadowed,
the messages, the transcript). Then the oracle: `conform` is run against an implementation with
a planted bug, and prints the divergence it finds, the shrunk trace and the one command that
reproduces it.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import tempfile
from pathlib import Path
from typing import Any, Final

from sessionspec import storage
from sessionspec.cli import COMMANDS
from sessionspec.cli.check import print_text
from sessionspec.cli.render import Style, point_in_time, render_text
from sessionspec.cli.words import HelpFormatter, plural
from sessionspec.conformance import report, runner
from sessionspec.logcheck.checkfile import check_path
from sessionspec.testing import implementations as impls
from sessionspec.testing.builders import (
    assistant_message,
    compaction_summary,
    pruned,
    replace_op,
    text_block,
    tool_call,
    tool_call_block,
    tool_result,
    user_message,
)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("demo", help=COMMANDS["demo"],
                                   description=__doc__, formatter_class=HelpFormatter)
    parser.add_argument("--impl", default="model", metavar="NAME", help="implementation to run (default: model)")
    parser.add_argument("--dir", metavar="DIR", help="directory to write the log to (default: a new temporary directory)")
    parser.add_argument("--no-oracle", action="store_true", help="show the session model only, skip the conform run")
    parser.add_argument("--format", choices=("jsonl", "jsonl.zstd", "sqlite"), default="jsonl",
                        help="storage backend (default: jsonl)")
    parser.set_defaults(handler=run)


def example_session(impl: str = "model") -> Any:
    """A two-turn session: a tool call, a pruned tool result, and a compaction summary."""
    ticks = iter(range(1_700_000_000_000, 1_700_000_001_000))
    session = impls.factory(impl)("demo", clock=lambda: next(ticks))

    session.append("turn/start", {"turn": 1})
    session.append("user/message", user_message("u1", "What is in setup.py?"), surface_op="append")
    session.append("step/start", {"turn": 1, "step": 1})
    chunk = session.append("assistant/chunk", {"turn": 1, "step": 1, "chunk": {"type": "text-delta", "index": 0, "text": "Reading."}})
    arguments = '{"path": "setup.py"}'
    content = [text_block("Reading."), tool_call_block("c1", arguments=arguments)]
    session.append("assistant/message", assistant_message("a1", content), surface_op="append",
                   source_event_seqs=[chunk.seq])
    call = session.append("tool/call", tool_call("c1", arguments=arguments))
    long_result = session.append("tool/result", tool_result("c1", "from setuptools import setup\n" * 40),
                                 surface_op="append", source_event_seqs=[call.seq])
    # Tool-result pruning: the same result, with only its inner content shortened.
    session.append("tool/result", pruned(long_result.data, "[pruned: 40 lines]"),
                   surface_op=replace_op(long_result.seq, long_result.seq),
                   source_event_seqs=[long_result.seq])
    session.append("step/end", {"turn": 1, "step": 1})
    session.append("turn/end", {"turn": 1, "reason": {"kind": "completed"}})
    # Compaction: a summary takes the place of the whole first turn on the surface.
    nodes = list(session.surface.nodes)
    session.append("compaction/start", {"compactionId": "k1", "turn": None})
    summary = compaction_summary("summary1", "Summary: the user asked about setup.py; it was read.")
    session.append("user/message", summary, surface_op=replace_op(nodes[0], nodes[-1]), source_event_seqs=nodes)
    session.append("compaction/end", {"compactionId": "k1", "turn": None})
    return session


def run(args: argparse.Namespace) -> int:
    """Write the example through the storage backend, then check it and show it as a user would."""
    session = example_session(args.impl)
    directory = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="sessionspec-demo-"))
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"demo.{args.format}"
    if path.exists():
        path.unlink()
    storage.save(path, session.header, session.events)
    colour = sys.stdout.isatty() and "NO_COLOR" not in os.environ
    style = Style(colour)
    print(f"wrote {plural(len(session.events), 'event')} (a tool-result pruning and a compaction) to {path}")
    print(style.dim("  two replaces: the pruned result takes its original's place, then a summary takes the whole turn's"))

    print("\n" + style.bold(f"$ sessionspec check --strict {path}"))
    report = check_path(str(path), strict=True)
    print_text(report)

    point = point_in_time(event for _, event in storage.stream(path))
    for view, diff, note in (("log", False, "every fact, nothing deleted"),
                             ("surface", True, "what the model sees, and what each replace shadowed"),
                             ("messages", False, "the next request"),
                             ("transcript", False, "what a person saw: append-origin events, shadowed ones included")):
        print("\n" + style.bold(f"$ sessionspec show {path} --view {view}{' --diff' if diff else ''}") + style.dim(f"   # {note}"))
        for line in render_text(point, view, diff=diff, style=style):
            print(line)
    earlier = report.events - 4
    print("\n" + style.bold(f"$ sessionspec show {path} --view messages --at {earlier}") + style.dim("   # before the compaction"))
    for line in render_text(point_in_time(point.events, earlier), "messages", diff=False, style=style):
        print(line)
    print(style.dim(f"\nthe log stays in {directory}; try the commands above on it"))
    if not args.no_oracle:
        show_the_oracle(directory, style)
    return 0 if not report.findings else 1


PLANTED: Final = "planted:double-marker"
"""The bug the demo's oracle run finds: re-opening a seed that already ends in its marker adds a second one."""


def show_the_oracle(directory: Path, style: Style) -> None:
    """`conform` against a store with a planted bug: the divergence, its shrunk trace, the reproduction."""
    command = [sys.executable, "-m", "sessionspec", "serve", "--impl", PLANTED]
    shown = ["sessionspec", "serve", "--impl", PLANTED]
    print("\n" + style.bold(f"$ sessionspec conform -- {shlex.join(shown)}")
          + style.dim("   # the oracle against a store with a planted bug"))
    options = runner.Options(command, examples=30, seconds=20, skip_vectors=True, traces_dir=directory / "traces")
    try:
        result = runner.run(options)
    except runner.Unrunnable as error:
        print(f"the testee could not be run: {error}")
        return
    for found in result.divergences:
        print(report.explain(found, shown))
        print(style.dim("  the shrunk trace, request by request:"))
        for request in found.trace:
            print("    " + (request if isinstance(request, str) else json.dumps(request, ensure_ascii=False))[:160])
    families = len(result.divergences)
    print(style.dim(f"{plural(families, 'divergence family')} in {result.seconds:.1f} s "
                    f"({plural(result.requests, 'request')}); a conforming implementation gets none: "
                    f"sessionspec conform -- sessionspec serve --impl live"))
