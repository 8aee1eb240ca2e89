// The upstream's errors as SCP kinds, through the testee; and the table itself.

import assert from "node:assert/strict";
import { test } from "node:test";

import { CRASHES, MESSAGES, mapUpstreamError } from "../lib/mapping.mjs";
import { CREATE, USER, assistant, exchange, refusal, toolResult } from "./helpers.mjs";

const userAppend = (id, extra = {}) => ({ op: "append", type: "user/message", data: { ...USER, id }, surfaceOp: "append", ...extra });
const event = (type, seq, data, extra = {}) => ({ type, seq, time: 0, data, ...extra });

test("append: each upstream message becomes its kind (and rule)", async () => {
  const { answers } = await exchange([
    CREATE,
    userAppend("u0"), // seq 0
    userAppend("u1"), // seq 1
    { op: "append", type: "turn/start" }, // no data
    { op: "append", type: "turn/start", data: { turn: 1 }, surfaceOp: "append" },
    { op: "append", type: "tool/call", data: {}, sourceEventSeqs: [0] },
    { op: "append", type: "user/message", data: { ...USER, id: "u2" } },
    userAppend("u2", { surfaceOp: "Append" }),
    userAppend("u2", { surfaceOp: { op: "replace", start: 0 } }),
    userAppend("u2", { surfaceOp: { op: "replace", start: 7, end: 7 }, sourceEventSeqs: [0] }),
    userAppend("u2", { surfaceOp: { op: "replace", start: 1, end: 0 }, sourceEventSeqs: [0, 1] }),
    userAppend("u2", { sourceEventSeqs: {} }),
    { op: "append", type: "tool/result", data: toolResult("r", "c"), surfaceOp: "append", sourceEventSeqs: [] },
    userAppend("u2", { sourceEventSeqs: [-1] }),
    userAppend("u2", { sourceEventSeqs: [0, 0] }),
    userAppend("u2", { sourceEventSeqs: [2] }),
    userAppend("u2", { surfaceOp: { op: "replace", start: 0, end: 1 }, sourceEventSeqs: [0] }),
    { op: "append", type: "tool/result", data: toolResult("r", "c"), surfaceOp: { op: "replace", start: 0, end: 0 }, sourceEventSeqs: [0] },
    { op: "append", type: "request/header-delta", data: {} },
    { op: "append", type: "request/header", data: { header: { config: { provider: "p", model: "m" } }, reason: "fallback" } },
    { op: "snapshot" },
  ]);
  const got = answers.slice(3, 20).map(refusal);
  const expected = [
    ["envelope", "SESSION-EVENT-ENVELOPE.5"],
    ["surface-eligibility", "SESSION-SURFACE-PROJECTION.1"],
    ["surface-eligibility", "SESSION-SURFACE-PROJECTION.2"],
    ["surface-eligibility", "SESSION-SURFACE-PROJECTION.3"],
    ["surface-op", "SESSION-SURFACE-PROJECTION.4"],
    ["surface-op", "SESSION-SURFACE-PROJECTION.4"],
    ["range", "SESSION-SURFACE-REPLACE.1"],
    ["range", "SESSION-SURFACE-REPLACE.2"],
    ["provenance", "SESSION-SURFACE-PROVENANCE.1"],
    ["provenance", "SESSION-SURFACE-PROVENANCE.2"],
    ["provenance", "SESSION-SURFACE-PROVENANCE.3"],
    ["provenance", "SESSION-SURFACE-PROVENANCE.4"],
    ["provenance", "SESSION-SURFACE-PROVENANCE.5"],
    ["provenance", "SESSION-SURFACE-PROVENANCE.6"],
    ["tool-result-rewrite", "SESSION-SURFACE-TOOL-RESULT.2"],
    ["envelope", "SESSION-CORE-EVENTS.2"],
    ["request-header", "SESSION-REQUEST-HEADER.4"],
  ].map(([kind, rule]) => ({ ok: false, kind, rule }));
  assert.deepEqual(got, expected);
  // A rejected append leaves the session as it was.
  assert.deepEqual(answers[20].surface, { nodes: [0, 1], replaceGeneration: 0 });
  assert.equal(answers[20].seq, 2);
});

test("tool/result rewrites: one node, a tool/result, content only", async () => {
  const { answers } = await exchange([
    CREATE,
    { op: "append", type: "tool/result", data: toolResult("r0", "c0"), surfaceOp: "append" }, // 0
    { op: "append", type: "tool/result", data: toolResult("r1", "c1"), surfaceOp: "append" }, // 1
    { op: "append", type: "tool/result", data: toolResult("r0", "c0", "x"), surfaceOp: { op: "replace", start: 0, end: 1 }, sourceEventSeqs: [0, 1] },
    { op: "append", type: "tool/result", data: { ...toolResult("r0", "c0", "x"), meta: 1 }, surfaceOp: { op: "replace", start: 0, end: 0 }, sourceEventSeqs: [0] },
    { op: "append", type: "tool/result", data: toolResult("r0", "c0", "short"), surfaceOp: { op: "replace", start: 0, end: 0 }, sourceEventSeqs: [0] },
  ]);
  assert.deepEqual(refusal(answers[3]), { ok: false, kind: "tool-result-rewrite", rule: "SESSION-SURFACE-TOOL-RESULT.1" });
  assert.deepEqual(refusal(answers[4]), { ok: false, kind: "tool-result-rewrite", rule: "SESSION-SURFACE-TOOL-RESULT.3" });
  assert.equal(answers[5].ok, true);
  assert.equal(answers[5].event.seq, 2);
});

test("create: seeds and headers", async () => {
  const goodSeed = [event("turn/start", 0, { turn: 1 }), event("user/message", 1, USER, { surfaceOp: "append" })];
  const header = (extra) => ({ version: 0, id: "s1", createdAt: 1, ...extra });
  const { answers } = await exchange([
    { op: "create", id: "s1", seed: [goodSeed[0], { ...goodSeed[1], seq: 2 }], header: null }, // seq gap
    { op: "create", id: "s1", seed: [{ ...goodSeed[0], extra: 1 }], header: null },
    { op: "create", id: "s1", seed: [event("user/message", 0, { ...USER, role: "assistant" }, { surfaceOp: "append" })], header: null },
    { op: "create", id: "s1", seed: [event("request/header", 0, { header: { config: { provider: "p" } } })], header: null },
    { op: "create", id: "s1", seed: [event("user/message", 0, USER, { surfaceOp: { op: "replace", start: 5, end: 5 } })], header: null },
    { op: "create", id: "s1", seed: {}, header: null },
    { op: "create", id: "s1", seed: [null], header: null },
    { op: "create", id: "s1", seed: null, header: header({ version: 1 }) },
    { op: "create", id: "s1", seed: null, header: header({ id: "other" }) },
    { op: "create", id: "s1", seed: null, header: header({ createdAt: -1 }) },
    { op: "create", id: "s1", seed: null, header: header({ cwd: "relative" }) },
    { op: "create", id: "s1", seed: null, header: header({ origin: "user" }) },
    { op: "create", id: "s1", seed: null, header: "not a header" },
    { op: "create", id: "s1", seed: goodSeed, header: header({ cwd: "/work" }) },
    { op: "snapshot" },
  ]);
  const got = answers.slice(0, 13).map(refusal);
  assert.deepEqual(got, [
    ["seq", "SESSION-SEED-ACCEPTANCE.2"],
    ["envelope", null],
    ["message-shape", "SESSION-MESSAGE-SHAPE.2"],
    ["request-header", "SESSION-REQUEST-HEADER.1"],
    ["range", "SESSION-SURFACE-REPLACE.1"],
    ["envelope", "SESSION-SEED-ACCEPTANCE.1"],
    ["envelope", "SESSION-EVENT-ENVELOPE.1"],
    ["version", "SESSION-FORMAT-HEADER.2"],
    ["header", "SESSION-FORMAT-HEADER.3"],
    ["header", "SESSION-FORMAT-HEADER.4"],
    ["header", "SESSION-FORMAT-HEADER.5"],
    ["header", "SESSION-FORMAT-HEADER.8"],
    ["header", "SESSION-FORMAT-HEADER.1"],
  ].map(([kind, rule]) => ({ ok: false, kind, rule })));
  assert.deepEqual(answers[13], { ok: true, firstLiveSeq: 2, seq: 3 });
  const snapshot = answers[14];
  assert.deepEqual(snapshot.header, header({ cwd: "/work" }));
  assert.deepEqual(snapshot.events.map((e) => e.type), ["turn/start", "user/message", "session/end-seed"]);
  assert.deepEqual(snapshot.transcript, [1]);
  assert.deepEqual(snapshot.messages, [USER]);
});

test("after a malformed assistant/message the upstream's deriveMessages throws: the snapshot is an answer, not a crash", async () => {
  const { answers, code } = await exchange([
    CREATE,
    { op: "append", type: "assistant/message", data: { turn: 1 }, surfaceOp: "append" },
    { op: "snapshot" },
    { op: "snapshot" },
    { op: "append", type: "turn/end", data: { turn: 1, reason: { kind: "completed" } } },
    { op: "hello" },
  ]);
  assert.equal(code, 0);
  assert.equal(answers.length, 6);
  assert.equal(answers[1].ok, true, "the upstream does not check message shapes on append");
  for (const snapshot of [answers[2], answers[3]]) {
    assert.deepEqual(refusal(snapshot), { ok: false, kind: "internal", rule: null });
    assert.match(snapshot.error.message, /deriveMessages\(\).*TypeError/);
  }
  assert.equal(answers[4].ok, true);
  assert.equal(answers[4].event.seq, 1);
  assert.equal(answers[5].ok, true);
});

test("fold and repair call the upstream's pure functions", async () => {
  const log = [
    event("turn/start", 0, { turn: 1 }),
    event("user/message", 1, USER, { surfaceOp: "append" }),
    event("step/start", 2, { turn: 1, step: 1 }),
    event("assistant/message", 3, assistant("a3", { message: { ...assistant("a3").message, content: [{ type: "tool-call", id: "c1", name: "f", arguments: "{}" }] } }), { surfaceOp: "append" }),
    event("user/message", 4, { ...USER, id: "k" }, { surfaceOp: { op: "replace", start: 1, end: 3 }, sourceEventSeqs: [1, 3] }),
  ];
  const { answers } = await exchange([
    { op: "fold", events: log },
    { op: "repair", events: log },
    { op: "fold", events: [log[0], log[2]] },
    { op: "fold", events: [null] },
    { op: "repair", events: [log[0], null] },
  ]);
  assert.deepEqual(answers[0], { ok: true, nodes: [4], replacements: [{ seq: 4, start: 1, end: 3, shadowedSeqs: [1, 3] }] });
  assert.deepEqual(answers[1].closers.map((e) => [e.type, e.seq]), [["tool/result", 5], ["step/end", 6], ["turn/end", 7]]);
  assert.equal(answers[1].closers[0].data.message.id, "interrupted-tool-result-c1-5");
  assert.deepEqual(refusal(answers[2]), { ok: false, kind: "seq", rule: "SESSION-SURFACE-FOLD.1" });
  assert.deepEqual(refusal(answers[3]), { ok: false, kind: "envelope", rule: "SESSION-EVENT-ENVELOPE.1" });
  assert.deepEqual(refusal(answers[4]), { ok: false, kind: "envelope", rule: "SESSION-EVENT-ENVELOPE.1" });
});

test("the table: an unmapped message, a non-Error, and a TypeError whose cause is not confirmed are internal", () => {
  const internal = { kind: "internal", rule: null };
  const pick = ({ kind, rule }) => ({ kind, rule });
  assert.deepEqual(pick(mapUpstreamError(new Error("something new"), { op: "append", request: {}, hasData: true })), internal);
  assert.deepEqual(pick(mapUpstreamError("a string", { op: "append", request: {}, hasData: true })), internal);
  const nullRead = new TypeError("Cannot read properties of null (reading 'seq')");
  assert.deepEqual(pick(mapUpstreamError(nullRead, { op: "fold", request: { events: [{}] } })), internal);
  assert.deepEqual(pick(mapUpstreamError(nullRead, { op: "fold", request: { events: [null] } })), { kind: "envelope", rule: "SESSION-EVENT-ENVELOPE.1" });
  // A plain Error with a TypeError's text, or a TypeError with a mapped message, is not mistaken for the other.
  assert.deepEqual(pick(mapUpstreamError(new TypeError("sourceEventSeqs must not contain duplicates"), { op: "append", request: {}, hasData: true })), internal);
  // The seed wrapper is unwrapped before the table is read.
  assert.deepEqual(pick(mapUpstreamError(new Error("invalid seed event at index 3: surface replace: start seq 9 not found in surface"), { op: "create", request: {} })),
    { kind: "range", rule: "SESSION-SURFACE-REPLACE.1" });
  assert.deepEqual(pick(mapUpstreamError(new Error("invalid seed event at index 3: invalid surface metadata"), { op: "create", request: {} })), internal);
  const kinds = new Set(["json", "envelope", "seq", "surface-eligibility", "surface-op", "provenance", "range", "tool-result-rewrite",
    "message-shape", "request-header", "header", "reentrant", "unknown-event", "version", "veto", "unsupported", "internal"]);
  for (const entry of [...MESSAGES, ...CRASHES]) assert.ok(kinds.has(entry.kind), entry.kind);
});
