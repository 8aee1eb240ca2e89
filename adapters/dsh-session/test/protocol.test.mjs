// SESSION-CONFORMANCE-PROTOCOL.1-.7 and the transport, through the testee process.

import assert from "node:assert/strict";
import { test } from "node:test";

import { CREATE, USER, exchange, refusal } from "./helpers.mjs";

const P = (n) => `SESSION-CONFORMANCE-PROTOCOL.${n}`;

test("hello names the published package and what the adapter cannot express", async () => {
  const { answers, code } = await exchange([{ op: "hello" }]);
  assert.equal(code, 0);
  const [hello] = answers;
  assert.equal(hello.ok, true);
  assert.equal(hello.implementation, "@deepseek-ai/dsh-session");
  assert.equal(hello.version, "0.1.1-rc.2");
  assert.equal(hello.profile, "scp-0");
  assert.equal(hello.protocol, 0);
  assert.deepEqual(hello.ops, ["hello", "create", "append", "snapshot", "fold", "repair"]);
  assert.deepEqual(hello.extensions, []);
  assert.ok(hello.limitations.some((text) => text.includes("x-hooks") && text.includes("attached")));
});

test(".1: a line that is not an object with a string op gets a json error, and the testee keeps serving", async () => {
  const { answers } = await exchange(['["snapshot"]', "not json", { op: 5 }, { nop: "hello" }, "null", { op: "hello" }]);
  assert.deepEqual(answers.slice(0, 5).map(refusal), [
    { ok: false, kind: "json", rule: P(1) },
    { ok: false, kind: "json", rule: "SESSION-LOSSLESS-TEXT.2" },
    { ok: false, kind: "json", rule: P(1) },
    { ok: false, kind: "json", rule: P(1) },
    { ok: false, kind: "json", rule: P(1) },
  ]);
  assert.equal(answers[5].ok, true);
});

test(".2: an unknown op, and every x- op, is unsupported", async () => {
  const { answers } = await exchange([CREATE, { op: "compact" }, { op: "x-append", request: {} }, { op: "x-rebuild" }, { op: "x-mutate" }]);
  assert.equal(answers[0].ok, true);
  for (const answer of answers.slice(1)) assert.deepEqual(refusal(answer), { ok: false, kind: "unsupported", rule: P(2) });
});

test(".3: append and snapshot need a successful create; a rejected create leaves no session", async () => {
  const { answers } = await exchange([
    { op: "append", type: "turn/start", data: { turn: 1 } },
    { op: "snapshot" },
    CREATE,
    { op: "append", type: "turn/start", data: { turn: 1 } },
    { op: "create", id: "s1", seed: null, header: [] },
    { op: "append", type: "plugin/note", data: {} },
    { op: "snapshot" },
  ]);
  assert.deepEqual(refusal(answers[0]), { ok: false, kind: "unsupported", rule: P(3) });
  assert.deepEqual(refusal(answers[1]), { ok: false, kind: "unsupported", rule: P(3) });
  assert.equal(answers[2].ok, true);
  assert.equal(answers[3].ok, true);
  assert.deepEqual(refusal(answers[4]), { ok: false, kind: "header", rule: "SESSION-FORMAT-HEADER.1" });
  assert.deepEqual(refusal(answers[5]), { ok: false, kind: "unsupported", rule: P(3) });
  assert.deepEqual(refusal(answers[6]), { ok: false, kind: "unsupported", rule: P(3) });
});

test(".3: a create refused for its own shape leaves no session either (the old one is not kept)", async () => {
  const { answers } = await exchange([
    CREATE,
    { op: "append", type: "turn/start", data: { turn: 1 } },
    { op: "create", id: "s1", seed: null },
    { op: "snapshot" },
    { op: "create", id: "s1", seed: null, header: null, extra: 1 },
    { op: "append", type: "plugin/note", data: {} },
  ]);
  assert.deepEqual(refusal(answers[2]), { ok: false, kind: "envelope", rule: P(4) });
  assert.deepEqual(refusal(answers[3]), { ok: false, kind: "unsupported", rule: P(3) });
  assert.deepEqual(refusal(answers[4]), { ok: false, kind: "envelope", rule: P(4) });
  assert.deepEqual(refusal(answers[5]), { ok: false, kind: "unsupported", rule: P(3) });
});

test(".4: create carries exactly id, seed and header", async () => {
  const { answers } = await exchange([
    { op: "create", id: "s1", seed: null },
    { op: "create", id: "s1", seed: null, header: null, extra: 1 },
    { op: "create", id: "s1", seed: null, header: null },
  ]);
  assert.deepEqual(refusal(answers[0]), { ok: false, kind: "envelope", rule: P(4) });
  assert.deepEqual(refusal(answers[1]), { ok: false, kind: "envelope", rule: P(4) });
  assert.deepEqual(answers[2], { ok: true, firstLiveSeq: 0, seq: 0 });
});

test(".5: fold and repair carry exactly events, a list", async () => {
  const { answers } = await exchange([
    { op: "fold", events: {} },
    { op: "repair", events: null },
    { op: "fold" },
    { op: "fold", events: [], extra: 1 },
    { op: "fold", events: [] },
    { op: "repair", events: [] },
  ]);
  for (const answer of answers.slice(0, 4)) assert.deepEqual(refusal(answer), { ok: false, kind: "envelope", rule: P(5) });
  assert.deepEqual(answers[4], { ok: true, nodes: [], replacements: [] });
  assert.deepEqual(answers[5], { ok: true, closers: [] });
});

test(".6: no extension is offered, so every x- key is refused as unsupported, never ignored", async () => {
  const { answers } = await exchange([
    CREATE,
    { op: "append", type: "plugin/note", data: {}, "x-validator": "raise" },
    { op: "append", type: "plugin/note", data: {}, "x-nonsense": 1 },
    { op: "append", type: "plugin/note", data: {}, "x-time": 5 },
    { op: "snapshot", "x-messages": false },
    { op: "hello", "x-anything": true },
    { op: "fold", events: [], "x-time": 1 },
    { op: "snapshot" },
    { op: "create", id: "s2", seed: null, header: null, "x-clock": "reentrant" },
    { op: "snapshot" },
  ]);
  assert.equal(answers[0].ok, true);
  for (const answer of [...answers.slice(1, 7), answers[8]]) {
    assert.deepEqual(refusal(answer), { ok: false, kind: "unsupported", rule: P(6) });
  }
  // None of them reached the session: the log is empty.
  assert.deepEqual(answers[7].events, []);
  assert.equal(answers[7].header.id, "s1");
  // A refused create leaves no session (.3), whatever refused it.
  assert.deepEqual(refusal(answers[9]), { ok: false, kind: "unsupported", rule: P(3) });
});

test(".8: an x- key is refused before the request's shape, and before a missing session, as the reference orders it", async () => {
  const { answers } = await exchange([
    { op: "repair", "x-extra": 1 },
    { op: "fold", events: null, "x-extra": 1 },
    { op: "snapshot", "x-extra": 1 },
    { op: "create", id: "s1", "x-extra": 1 },
    { op: "append", type: "plugin/note", data: {}, "x-time": 5 },
    { op: "append", type: "plugin/note", data: {}, "x-extra": 1 },
  ]);
  for (const answer of answers.slice(0, 5)) {
    assert.deepEqual(refusal(answer), { ok: false, kind: "unsupported", rule: P(6) });
  }
  // An append names its missing session first (spec/04's order), then its x- keys.
  assert.deepEqual(refusal(answers[5]), { ok: false, kind: "unsupported", rule: P(3) });
});

test(".7: a 65 MiB line is answered once with a json error, and the next line as usual", async () => {
  const long = Buffer.alloc(65 * 1024 * 1024, 0x61);
  long.write('{"op":"hello","pad":"', 0, "latin1");
  const { answers, code } = await exchange([long, { op: "hello" }, CREATE], { timeout: 120_000 });
  assert.equal(code, 0);
  assert.equal(answers.length, 3);
  assert.deepEqual(refusal(answers[0]), { ok: false, kind: "json", rule: P(7) });
  assert.equal(answers[1].ok, true);
  assert.equal(answers[2].ok, true);
});

test("one answer per line, in order: empty lines, CRLF and a last line without newline", async () => {
  const { answers } = await exchange(["", '{"op":"hello"}\r', CREATE, " "]);
  assert.equal(answers.length, 4);
  assert.deepEqual(refusal(answers[0]), { ok: false, kind: "json", rule: "SESSION-LOSSLESS-TEXT.2" });
  assert.equal(answers[1].ok, true);
  assert.equal(answers[2].ok, true);
  assert.deepEqual(refusal(answers[3]), { ok: false, kind: "json", rule: "SESSION-LOSSLESS-TEXT.2" });
});

test("pipelined requests are answered in order, and EOF ends the testee with exit code 0", async () => {
  const requests = [CREATE];
  for (let i = 0; i < 200; i++) requests.push({ op: "append", type: "user/message", data: { ...USER, id: `u${i}` }, surfaceOp: "append" });
  requests.push({ op: "snapshot" });
  const { answers, code } = await exchange(requests);
  assert.equal(code, 0);
  assert.equal(answers.length, 202);
  answers.slice(1, 201).forEach((answer, i) => assert.equal(answer.event.seq, i));
  assert.equal(answers[201].messages.length, 200);
});
