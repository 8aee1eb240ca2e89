// Both directions against the reference (the sessionspec Python package: the repository's .venv,
// or SESSIONSPEC_PYTHON; skipped without it):
// - logs our writer writes (sessionspec.storage.save, and torn variants of them) load through the
//   upstream as through the reference: the same header, events, torn seq and closers (closers'
//   times are the reader's own);
// - logs the upstream writes (save, attach) pass `sessionspec check`; its SQLite schema 14 and our
//   17 refuse each other by version.

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

import { CLOSE, CREATE, exchange, scratch, turn } from "./helpers.mjs";

const PYTHON = process.env.SESSIONSPEC_PYTHON ?? fileURLToPath(new URL("../../../.venv/bin/python", import.meta.url));
const skip = existsSync(PYTHON) ? false : `no sessionspec Python at ${PYTHON} (set SESSIONSPEC_PYTHON)`;

const WRITE = String.raw`
import json, os, sys
from sessionspec import storage
d = sys.argv[1]
H = {"version": 0, "id": "s2", "createdAt": 7, "cwd": "/tmp/y", "delegationDepth": 0}
def ev(seq, type, data, **kw): return {"type": type, "seq": seq, "time": 1000 + seq, "data": data, **kw}
E = [ev(0, "turn/start", {"turn": 1}),
     ev(1, "user/message", {"id": "u1", "role": "user", "content": [{"type": "text", "text": "hi"}], "source": {"kind": "user"}}, surfaceOp="append"),
     ev(2, "step/start", {"turn": 1, "step": 1})]
E += [ev(3 + i, "assistant/chunk", {"turn": 1, "step": 1, "chunk": {"type": "text-delta", "index": 0, "text": f"t{i}"}}) for i in range(5)]
E += [ev(8, "later/thing", {"a": 1}, ignorable=True), ev(9, "step/end", {"turn": 1, "step": 1}), ev(10, "turn/end", {"turn": 1, "reason": {"kind": "completed"}})]
for ext in ("jsonl", "jsonl.zstd", "sqlite"):
    storage.save(f"{d}/whole.{ext}", H, E)
    storage.save(f"{d}/open.{ext}", H, E[:9])
with open(f"{d}/torn.jsonl", "wb") as f:
    f.write(open(f"{d}/whole.jsonl", "rb").read() + json.dumps(ev(11, "turn/start", {"turn": 2})).encode() + b"\n" + b'{"type":"st')
log = storage.save(f"{d}/torn.jsonl.zstd", H, E)
log.append([ev(11, "turn/start", {"turn": 2}), ev(12, "step/start", {"turn": 2, "step": 1})])
os.truncate(f"{d}/torn.jsonl.zstd", os.path.getsize(f"{d}/torn.jsonl.zstd") - 3)
`;

const LOAD = String.raw`
import json, sys
from sessionspec import storage
def plain(x):
    if hasattr(x, "to_json"): return x.to_json()
    if isinstance(x, dict): return {k: plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)): return [plain(v) for v in x]
    return x
out = {}
for path in sys.argv[1:]:
    try:
        r = storage.load(path)
        out[path] = {"ok": True, "format": r.format, "header": plain(r.header), "events": plain(list(r.events)),
                     "torn": None if r.torn is None else {"line": r.torn.line, "seq": r.torn.seq}, "closers": plain(list(r.closers))}
    except Exception as e:
        out[path] = {"ok": False, "kind": getattr(getattr(e, "kind", None), "value", None), "rule": getattr(e, "rule", None)}
print(json.dumps(out))
`;

function python(script, args) {
  const run = spawnSync(PYTHON, ["-c", script, ...args], { encoding: "utf8", maxBuffer: 64 << 20 });
  assert.equal(run.status, 0, run.stderr);
  return run.stdout;
}

/** What is compared (spec/10, "Comparison"): closers without their times (the reader's clock), torn without its reason. */
function comparable(answer) {
  if (!answer.ok) return { ok: false, kind: answer.kind ?? answer.error?.kind };
  const torn = answer.torn === null ? null : { line: answer.torn.line, seq: answer.torn.seq };
  const closers = answer.closers.map(({ time, ...rest }) => rest);
  return { ok: true, format: answer.format, header: answer.header, events: answer.events, torn, closers };
}

test("logs our writer writes load through the upstream as through the reference", { skip }, async () => {
  const files = scratch();
  try {
    python(WRITE, [files.dir]);
    const names = ["whole.jsonl", "whole.jsonl.zstd", "open.jsonl", "open.jsonl.zstd", "torn.jsonl", "torn.jsonl.zstd", "whole.sqlite"];
    const paths = names.map((name) => files.path(name));
    const reference = JSON.parse(python(LOAD, paths));
    const { answers } = await exchange(paths.map((path) => ({ op: "load", path, session: null })), { args: ["--with-sqlite"] });
    for (const [i, name] of names.entries()) {
      if (name.endsWith(".sqlite")) continue;
      assert.deepEqual(comparable(answers[i]), comparable(reference[paths[i]]), name);
    }
    // Schema 17 (ours) read by schema 14 (theirs): refused by version, as our reader refuses theirs.
    assert.equal(reference[files.path("whole.sqlite")].ok, true);
    assert.deepEqual([answers[6].error.kind, answers[6].error.rule], ["version", "SESSION-SQLITE-SCHEMA.1"]);
    assert.match(answers[6].error.message, /has schema version 17, incompatible with this build \(14\)/);
  } finally {
    files.done();
  }
});

test("logs the upstream writes pass sessionspec check; its SQLite schema 14 is refused by version", { skip }, async () => {
  const files = scratch();
  try {
    const { answers } = await exchange([
      CREATE, ...turn(5), ...CLOSE,
      { op: "save", path: files.path("up.jsonl"), backend: "jsonl" },
      { op: "save", path: files.path("up.jsonl.zstd"), backend: "jsonl.zstd" },
      { op: "save", path: files.path("up.sqlite"), backend: "sqlite" },
      { op: "create", id: "s3", seed: null, header: { version: 0, id: "s3", createdAt: 1 } },
      { op: "append", type: "turn/start", data: { turn: 1 } },
      { op: "attach", path: files.path("attached.jsonl.zstd"), backend: "jsonl.zstd" },
      ...turn(4).slice(1),
    ], { args: ["--with-sqlite"] });
    assert.ok(answers.every((answer) => answer.ok), JSON.stringify(answers.filter((answer) => !answer.ok)));
    const checker = fileURLToPath(new URL("sessionspec", `file://${PYTHON}`));
    for (const name of ["up.jsonl", "up.jsonl.zstd", "attached.jsonl.zstd"]) {
      const run = spawnSync(checker, ["check", files.path(name)], { encoding: "utf8" });
      assert.equal(run.status, 0, `${name}: ${run.stdout}${run.stderr}`);
    }
    const run = spawnSync(checker, ["check", files.path("up.sqlite")], { encoding: "utf8" });
    assert.equal(run.status, 2);
    assert.match(run.stdout + run.stderr, /SESSION-SQLITE-SCHEMA\.1.*schema version 14/);
  } finally {
    files.done();
  }
});
