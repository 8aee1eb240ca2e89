// hello, the storage ops' own request checks, and the session ops served as the session adapter serves them.

import assert from "node:assert/strict";
import { test } from "node:test";

import { CREATE, exchange, refusal, scratch, turn } from "./helpers.mjs";

const P = (n) => `SESSION-CONFORMANCE-PROTOCOL.${n}`;

test("hello declares the JSONL backends it really supports, and the storage ops", async () => {
  const { answers, code } = await exchange([{ op: "hello" }]);
  assert.equal(code, 0);
  const [hello] = answers;
  assert.equal(hello.ok, true);
  assert.equal(hello.implementation, "@deepseek-ai/dsh-session-persistence-jsonl");
  assert.equal(hello.version, "0.1.0-rc.8");
  assert.ok(hello.limitations.includes("session ops: @deepseek-ai/dsh-session 0.1.1-rc.2, through adapters/dsh-session/lib"));
  assert.deepEqual(hello.ops, ["hello", "create", "append", "snapshot", "fold", "repair", "load", "save", "attach", "repair-file"]);
  assert.deepEqual(hello.storage, ["jsonl", "jsonl.zstd"]);
  assert.ok(hello.limitations.some((text) => text.includes("schema version 14") && text.includes("17")));
  assert.ok(hello.limitations.some((text) => text.includes("0.1.0-rc.8")));
});

test("--with-sqlite declares the upstream's SQLite backend too", async () => {
  const { answers } = await exchange([{ op: "hello" }], { args: ["--with-sqlite"] });
  assert.deepEqual(answers[0].storage, ["jsonl", "jsonl.zstd", "sqlite"]);
  assert.equal(answers[0].implementation, "@deepseek-ai/dsh-session-persistence-jsonl+sqlite");
  assert.equal(answers[0].version, "0.1.0-rc.8+0.0.1-rc.1");
});

test("a backend not declared is unsupported, for every storage op", async () => {
  const files = scratch();
  try {
    const { answers } = await exchange([
      CREATE, ...turn(1),
      { op: "save", path: files.path("a.sqlite"), backend: "sqlite" },
      { op: "attach", path: files.path("b.sqlite"), backend: "sqlite" },
      { op: "save", path: files.path("c.log"), backend: "csv" },
    ]);
    for (const answer of answers.slice(-3)) assert.deepEqual(refusal(answer), { ok: false, kind: "unsupported", rule: P(12) });
  } finally {
    files.done();
  }
});

test("save and attach need a session (PROTOCOL.3); x- keys are refused (PROTOCOL.6); shapes are checked", async () => {
  const files = scratch();
  try {
    const path = files.path("a.jsonl");
    const { answers } = await exchange([
      { op: "save", path, backend: "jsonl" },
      { op: "attach", path, backend: "jsonl" },
      { op: "load", path, session: null, "x-hooks": {} },
      { op: "load", path },
      { op: "load", path: 5, session: null },
      { op: "repair-file", path, session: 3 },
      { op: "save", path, backend: "jsonl", extra: 1 },
    ]);
    assert.deepEqual(refusal(answers[0]), { ok: false, kind: "unsupported", rule: P(3) });
    assert.deepEqual(refusal(answers[1]), { ok: false, kind: "unsupported", rule: P(3) });
    assert.deepEqual(refusal(answers[2]), { ok: false, kind: "unsupported", rule: P(6) });
    for (const answer of answers.slice(3)) assert.deepEqual(refusal(answer), { ok: false, kind: "envelope", rule: null });
  } finally {
    files.done();
  }
});

test("answers stay in request order around the asynchronous storage ops", async () => {
  const files = scratch();
  try {
    const path = files.path("a.jsonl");
    const { answers } = await exchange([
      CREATE, ...turn(3), { op: "save", path, backend: "jsonl" }, { op: "snapshot" },
      { op: "load", path, session: null }, { op: "fold", events: [] }, "not json", { op: "hello" },
    ]);
    assert.equal(answers.length, 13);
    assert.deepEqual(answers.slice(0, 7).map((answer) => answer.ok), [true, true, true, true, true, true, true]);
    assert.deepEqual(answers[7], { ok: true }); // save
    assert.equal(answers[8].seq, 6); // snapshot
    assert.equal(answers[9].format, "jsonl"); // load
    assert.equal(answers[9].events.length, 6);
    assert.deepEqual(answers[10].nodes, []); // fold
    assert.equal(answers[11].error.kind, "json");
    assert.equal(answers[12].implementation, "@deepseek-ai/dsh-session-persistence-jsonl");
  } finally {
    files.done();
  }
});

test("every answer is out before the process ends, large ones queued for the pipe at EOF included", async () => {
  const appends = Array.from({ length: 2000 }, (_, i) => ({ op: "append", type: "plugin/note", data: { i } }));
  const snapshots = Array.from({ length: 10 }, () => ({ op: "snapshot" }));
  const { answers, code } = await exchange([CREATE, ...appends, ...snapshots]);
  assert.equal(code, 0);
  assert.equal(answers.length, 2011);
  assert.equal(answers.at(-1).events.length, 2000);
});
