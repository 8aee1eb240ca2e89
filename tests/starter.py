"""A starter testee, as a newcomer writes one from README and spec/10 (issue 35): hello, create without seed or
header, and log-only appends; everything else `unsupported`; its json.loads dies on a line nested past Python's
recursion limit. Shared by the capabilities and the reproductions tests.

Its arguments: the ops its hello lists ("-" lists none), then any of `pad` (a key added to every answer but
hello's), `snapshot` (a log-only snapshot), `seq-bug` (from the third event on, seqs skip one)."""

from __future__ import annotations

import sys
from pathlib import Path

SCRIPT = r'''
import json, sys
listed = None if sys.argv[1] == "-" else sys.argv[1].split(",")
flags = set(sys.argv[2:])
session = None
def answer(value):
    if "pad" in flags and value.get("ok"):
        value["pad"] = 1
    print(json.dumps(value), flush=True)
def unsupported(what):
    answer({"ok": False, "error": {"kind": "unsupported", "message": what, "rule": None}})
for line in sys.stdin:
    try:
        request = json.loads(line)
    except ValueError:
        answer({"ok": False, "error": {"kind": "json", "message": "not json", "rule": None}})
        continue
    op = request.get("op") if isinstance(request, dict) else None
    if op == "hello":
        hello = {"ok": True, "implementation": "starter", "version": "0", "profile": "scp-0"}
        if listed is not None:
            hello["ops"] = listed
        print(json.dumps(hello), flush=True)
    elif op == "create":
        session = None
        if set(request) != {"op", "id", "seed", "header"} or request["seed"] is not None or request["header"] is not None:
            unsupported("seeds and headers are not supported yet")
            continue
        session = []
        answer({"ok": True, "firstLiveSeq": 0, "seq": 0})
    elif op == "append" and session is not None and request.get("type") in ("turn/start", "turn/end") \
            and set(request) == {"op", "type", "data"}:
        skip = "seq-bug" in flags and len(session) >= 2
        event = {"type": request["type"], "seq": len(session) + skip, "time": 1, "data": request["data"]}
        session.append(event)
        answer({"ok": True, "event": event})
    elif op == "snapshot" and "snapshot" in flags and session is not None and set(request) == {"op"}:
        answer({"ok": True, "events": session, "surface": {"nodes": [], "replaceGeneration": 0}, "messages": [],
                "firstLiveSeq": 0})
    else:
        unsupported(f"{op} is not supported yet")
'''


def starter(directory: Path, ops: str = "-", *flags: str) -> list[str]:
    """The command of a starter testee written into `directory`."""
    script = directory / "starter.py"
    script.write_text(SCRIPT, encoding="utf-8")
    return [sys.executable, str(script), ops, *flags]
