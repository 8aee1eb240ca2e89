// The four storage ops against the upstream's backends, through the testee process: what is
// written on disk, what a load answers, what a repair commits.

import assert from "node:assert/strict";
import { existsSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { DatabaseSync } from "node:sqlite";
import { test } from "node:test";
import { zstdDecompressSync } from "node:zlib";

import { CLOSE, CREATE, HEADER, USER, ev, exchange, jsonl, refusal, scratch, turn } from "./helpers.mjs";

const lines = (text) => text.split("\n").filter((line) => line !== "").map((line) => JSON.parse(line));

test("save writes a JSONL log at the path: header line with delegationDepth, events, a packed chunk row", async () => {
  const files = scratch();
  try {
    const path = files.path("a.jsonl");
    const { answers } = await exchange([CREATE, ...turn(5), ...CLOSE, { op: "save", path, backend: "jsonl" }]);
    assert.deepEqual(answers.at(-1), { ok: true });
    const [header, ...records] = lines(readFileSync(path, "utf8"));
    assert.deepEqual(header, { type: "session", version: 0, id: "s1", createdAt: 5, cwd: "/work/project", delegationDepth: 0 });
    assert.deepEqual(records.map((record) => record.type), ["turn/start", "user/message", "step/start", "text-chunks", "step/end", "turn/end"]);
    assert.equal(records[3].seq0, 3);
    assert.deepEqual(records[3].data.texts, ["t0", "t1", "t2", "t3", "t4"]);
    assert.deepEqual(readdirSync(files.dir), ["a.jsonl"], "the scratch root beside the file is gone");
  } finally {
    files.done();
  }
});

test("save in jsonl.zstd writes zstd frames: the header alone in the first", async () => {
  const files = scratch();
  try {
    const path = files.path("a.jsonl.zstd");
    const { answers } = await exchange([CREATE, ...turn(2), { op: "save", path, backend: "jsonl.zstd" }]);
    assert.deepEqual(answers.at(-1), { ok: true });
    const bytes = readFileSync(path);
    assert.deepEqual([...bytes.subarray(0, 4)], [0x28, 0xb5, 0x2f, 0xfd]);
    const text = zstdDecompressSync(bytes).toString("utf8");
    assert.equal(lines(text).length, 6);
  } finally {
    files.done();
  }
});

test("save never replaces a file, and a session without events is not written", async () => {
  const files = scratch();
  try {
    const path = files.path("a.jsonl");
    writeFileSync(path, "keep\n");
    const { answers } = await exchange([
      CREATE, { op: "save", path: files.path("empty.jsonl"), backend: "jsonl" },
      ...turn(1), { op: "save", path, backend: "jsonl" },
    ]);
    assert.deepEqual(refusal(answers[1]), { ok: false, kind: "internal", rule: null });
    assert.ok(!existsSync(files.path("empty.jsonl")));
    assert.deepEqual(refusal(answers.at(-1)), { ok: false, kind: "header", rule: "SESSION-CONFORMANCE-PROTOCOL.14" });
    assert.equal(readFileSync(path, "utf8"), "keep\n");
  } finally {
    files.done();
  }
});

test("attach: every later append is in the file when it is answered", async () => {
  const files = scratch();
  try {
    const path = files.path("a.jsonl");
    const { answers } = await exchange([
      CREATE, ...turn(0), { op: "attach", path, backend: "jsonl" }, CLOSE[0],
      { op: "save", path: files.path("copy.jsonl"), backend: "jsonl" }, CLOSE[1],
      { op: "create", id: "s2", seed: null, header: null }, ...turn(0),
    ]);
    assert.ok(answers.every((answer) => answer.ok));
    assert.equal(lines(readFileSync(files.path("copy.jsonl"), "utf8")).length, 5);
    const records = lines(readFileSync(path, "utf8"));
    assert.deepEqual(records.map((record) => record.type), ["session", "turn/start", "user/message", "step/start", "step/end", "turn/end"], "a save leaves it attached; a new create detaches");
  } finally {
    files.done();
  }
});

test("attach of a session without events: the log appears at the first append, before its answer", async () => {
  const files = scratch();
  try {
    const path = files.path("a.jsonl.zstd");
    const taken = files.path("taken.jsonl");
    writeFileSync(taken, "keep\n");
    const { answers } = await exchange([
      CREATE, { op: "attach", path: taken, backend: "jsonl" }, { op: "attach", path, backend: "jsonl.zstd" },
      { op: "snapshot" }, ...turn(0),
    ]);
    assert.deepEqual(refusal(answers[1]), { ok: false, kind: "header", rule: "SESSION-CONFORMANCE-PROTOCOL.14" });
    assert.ok(answers.slice(2).every((answer) => answer.ok));
    const records = lines(zstdDecompressSync(readFileSync(path)).toString("utf8"));
    assert.deepEqual(records.map((record) => record.type), ["session", "turn/start", "user/message", "step/start"]);
  } finally {
    files.done();
  }
});

test("load: the header, the stored events, and the closers of the open turn, committing nothing", async () => {
  const files = scratch();
  try {
    const path = files.path("a.jsonl");
    const text = jsonl({ ...HEADER, delegationDepth: 0 }, [ev(0, "turn/start", { turn: 1 }), ev(1, "step/start", { turn: 1, step: 1 })]);
    writeFileSync(path, text);
    const { answers } = await exchange([{ op: "load", path, session: null }]);
    const [answer] = answers;
    assert.equal(answer.ok, true);
    assert.equal(answer.format, "jsonl");
    assert.deepEqual(answer.header, { ...HEADER, delegationDepth: 0 });
    assert.deepEqual(answer.events.map((event) => event.seq), [0, 1]);
    assert.equal(answer.torn, null);
    assert.deepEqual(answer.closers.map((event) => [event.type, event.seq]), [["step/end", 2], ["turn/end", 3]]);
    assert.equal(readFileSync(path, "utf8"), text);
  } finally {
    files.done();
  }
});

test("load of a torn tail: the first line cut and its seq; repair-file cuts it and appends the closers", async () => {
  const files = scratch();
  try {
    const path = files.path("a.jsonl");
    const kept = jsonl({ ...HEADER, delegationDepth: 0 }, [ev(0, "turn/start", { turn: 1 }), ev(1, "user/message", USER, { surfaceOp: "append" })]);
    writeFileSync(path, `${kept}{"type":"step/st`);
    const { answers } = await exchange([{ op: "load", path, session: null }, { op: "repair-file", path, session: null }, { op: "load", path, session: null }]);
    assert.deepEqual(answers[0].torn, { line: 4, seq: 2 });
    assert.deepEqual(answers[0].closers.map((event) => event.type), ["turn/end"]);
    assert.deepEqual(answers[1].torn, { line: 4, seq: 2 });
    assert.deepEqual(answers[1].closers.map((event) => [event.type, event.seq]), [["turn/end", 2]]);
    const records = lines(readFileSync(path, "utf8"));
    assert.deepEqual(records.map((record) => record.type), ["session", "turn/start", "user/message", "turn/end"]);
    assert.equal(answers[2].torn, null);
    assert.deepEqual(answers[2].closers, []);
  } finally {
    files.done();
  }
});

test("refusals: a defect before a turn/end (its file line), another version, an unknown type, another id", async () => {
  const files = scratch();
  try {
    const header = { ...HEADER, delegationDepth: 0 };
    const cases = {
      "corrupt.jsonl": `${jsonl(header, [ev(0, "turn/start", { turn: 1 })])}{oops\n${JSON.stringify(ev(2, "turn/end", { turn: 1, reason: { kind: "completed" } }))}\n`,
      "v1.jsonl": jsonl({ ...header, version: 1 }, []),
      "unknown.jsonl": jsonl(header, [ev(0, "made/up", {})]),
      "empty.jsonl": "",
      "clean.jsonl": jsonl(header, [ev(0, "turn/start", { turn: 1 })]),
    };
    for (const [name, text] of Object.entries(cases)) writeFileSync(files.path(name), text);
    const requests = Object.keys(cases).slice(0, 4).map((name) => ({ op: "load", path: files.path(name), session: null }));
    requests.push({ op: "load", path: files.path("clean.jsonl"), session: "other" });
    const { answers } = await exchange(requests);
    assert.deepEqual(answers.map((answer) => [answer.error?.kind, answer.error?.line, answer.error?.seq]), [
      ["json", 3, undefined],
      ["version", 1, undefined],
      ["unknown-event", undefined, 0],
      ["header", 1, undefined],
      ["header", undefined, undefined],
    ]);
    assert.equal(answers[1].error.rule, "SESSION-FORMAT-VERSION.1");
    assert.equal(answers[4].error.rule, "SESSION-STORAGE-HEADER.5");
  } finally {
    files.done();
  }
});

test("no file at the path is a header refusal (PROTOCOL.13), and the upstream's SQLite creates nothing there", async () => {
  const files = scratch();
  try {
    const { answers } = await exchange([
      { op: "load", path: files.path("missing.jsonl"), session: null },
      { op: "repair-file", path: files.path("missing.jsonl.zstd"), session: null },
      { op: "load", path: files.path("missing.sqlite"), session: null },
    ], { args: ["--with-sqlite"] });
    for (const answer of answers) assert.deepEqual(refusal(answer), { ok: false, kind: "header", rule: "SESSION-CONFORMANCE-PROTOCOL.13" });
    assert.deepEqual(readdirSync(files.dir), []);
  } finally {
    files.done();
  }
});

test("a malformed packed row before a turn/end: the upstream's one message, told apart by its own decoder", async () => {
  const files = scratch();
  try {
    const header = { ...HEADER, delegationDepth: 0 };
    const row = { type: "text-chunks", seq0: 1, time0: 5, data: { turn: 1, step: 1, index: 0, dt: [1], texts: ["a", "b", "c"] } };
    const end = ev(4, "turn/end", { turn: 1, reason: { kind: "completed" } });
    writeFileSync(files.path("row.jsonl"), `${jsonl(header, [ev(0, "turn/start", { turn: 1 })])}${JSON.stringify(row)}\n${JSON.stringify(end)}\n`);
    writeFileSync(files.path("text.jsonl"), `${jsonl(header, [ev(0, "turn/start", { turn: 1 })])}{"type":\n${JSON.stringify(end)}\n`);
    const { answers } = await exchange([
      { op: "load", path: files.path("row.jsonl"), session: null },
      { op: "load", path: files.path("text.jsonl"), session: null },
    ]);
    assert.deepEqual(answers.map((answer) => [answer.error.kind, answer.error.line]), [["envelope", 3], ["json", 3]]);
    assert.match(answers[0].error.message, /malformed text-chunks storage row: /);
  } finally {
    files.done();
  }
});

test("SQLite (--with-sqlite): the upstream's own schema 14 round-trips; a schema 17 database is refused by version", async () => {
  const files = scratch();
  try {
    const path = files.path("a.sqlite");
    const ours = files.path("ours.sqlite");
    const db = new DatabaseSync(ours);
    db.exec("PRAGMA application_id = 1146308688; PRAGMA user_version = 17; CREATE TABLE persistence_state (singleton INTEGER PRIMARY KEY, store_id TEXT NOT NULL) STRICT");
    db.close();
    const { answers } = await exchange([
      CREATE, ...turn(3), { op: "save", path, backend: "sqlite" }, { op: "load", path, session: null },
      { op: "load", path: ours, session: null },
    ], { args: ["--with-sqlite"] });
    assert.deepEqual(answers[7], { ok: true });
    assert.equal(answers[8].format, "sqlite");
    assert.deepEqual(answers[8].events.map((event) => event.type), ["turn/start", "user/message", "step/start", "assistant/chunk", "assistant/chunk", "assistant/chunk"]);
    const written = new DatabaseSync(path, { readOnly: true });
    assert.equal(written.prepare("PRAGMA user_version").get().user_version, 14);
    written.close();
    assert.deepEqual(refusal(answers[9]), { ok: false, kind: "version", rule: "SESSION-SQLITE-SCHEMA.1" });
  } finally {
    files.done();
  }
});
