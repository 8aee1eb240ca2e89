// Answer lines: what JSON.stringify writes, at any depth, with every number read back exactly.

import assert from "node:assert/strict";
import { test } from "node:test";

import { writeAnswer } from "../lib/writer.mjs";

test("an answer is JSON.stringify's text, lone surrogates escaped", () => {
  const answer = { ok: true, event: { type: "x", data: ["\ud800", "\u00e9", "\u0001", 'q"\\', 1.5, -2, null, true, { a: [] }] } };
  assert.equal(writeAnswer(answer), JSON.stringify(answer));
  assert.match(writeAnswer({ s: "\udc00" }), /"\\udc00"/);
});

test("an answer too deep for JSON.stringify is written by the walk, byte for byte the same", () => {
  const inner = { a: [1, "\ud800", { b: null, c: undefined }], __proto__x: 2.5 };
  let deep = inner;
  for (let i = 0; i < 100_000; i++) deep = i % 2 ? [deep] : { k: deep };
  const text = writeAnswer(deep);
  let expected = JSON.stringify(inner);
  for (let i = 0; i < 100_000; i++) expected = i % 2 ? `[${expected}]` : `{"k":${expected}}`;
  assert.equal(text, expected);
});

test("every number is written so that it reads back as the same double, also as an integer", () => {
  const numbers = [0, 1, -1, 0.5, 1e-7, 9007199254740991, -9007199254740991, 9007199254740992, 9007199254740994,
    900719925474099351.5, 1e17, 2 ** 60, -(2 ** 62), 123456789012345678, 1e20, 9.999999999999999e20, 1e21, 1.7976931348623157e308];
  for (const value of numbers) {
    const text = writeAnswer([value]).slice(1, -1);
    assert.equal(Number(text), value, text);
    // An integer-looking text must be the double's exact value (a reader of integers takes it as one).
    if (/^-?\d+$/.test(text)) assert.equal(BigInt(text), BigInt(value), text);
  }
});
