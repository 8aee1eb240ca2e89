// The lossless reader alone: each line gets the rule the reference reader
// (sessionspec.storage.losslessparse.parse) gives it; the expected rules were taken from it.

import assert from "node:assert/strict";
import { test } from "node:test";

import { readLine } from "../lib/reader.mjs";

const bytes = (text) => new Uint8Array(Buffer.from(text, "latin1"));
const utf8 = (text) => new Uint8Array(Buffer.from(text, "utf8"));

function ruleOf(line) {
  try {
    readLine(line);
    return "ok";
  } catch (error) {
    return error.rule ?? `not a refusal: ${error}`;
  }
}

const T = (n) => `SESSION-LOSSLESS-TEXT.${n}`;

// [line (latin1 bytes), the reference's verdict]
const CASES = [
  ['{"a":1,"a":1}', T(6)], ['{"a":1,"a":2}', T(6)], ['{"a":"x","a":"x"}', T(6)], ['{"":1,"":2}', T(6)],
  ['{"__proto__":1,"__proto__":1}', T(6)], ['{"a":{"b":1,"b":1},"c":-0}', T(6)], ['{"a":1,"a":2,"b":-0}', T(5)],
  ['{"a":1,"a":2,', T(2)],
  ['-0', T(5)], ['-0.0', T(5)], ['-0e5', T(5)], ['-0E+5', T(5)], ['-0.000', T(5)], ['-1e-400', T(5)], ['[[[-0]]]', T(5)],
  ['-01', T(5)], ['-0.null', T(5)], ['-0e[0}', T(5)], ['1e-400', "ok"], ['0.0', "ok"],
  ['-18446744073709551616', T(4)], ['9007199254740992', T(4)], ['-9007199254740992', T(4)], ['12345678901234567', T(4)],
  ['9007199254740991', "ok"], ['-9007199254740991', "ok"], ['99999999999999999.true', T(4)],
  ['1e400', T(3)], ['-1e400', T(3)], ['[1e400', T(3)], ['1e400x', T(3)], ['NaN', T(3)], ['Infinity', T(3)], ['-Infinity', T(3)],
  ['[-Infinity, 1]', T(3)], ['NaNx', T(3)],
  ['{NaN:1}', T(2)], ['[1 NaN]', T(2)], ['-NaN', T(2)], ['[truInfinity]', T(2)], ['-1eInfinity400', T(2)], ['Nan', T(2)],
  ['1 -0', T(2)], ['{"a":1 -0}', T(2)], ['1 2', T(2)], ['01', T(2)], ['[1,]', T(2)], ['{"a":1,}', T(2)], ['1.', T(2)], ['.5', T(2)],
  ['+1', T(2)], ['1.5e', T(2)], ['-', T(2)], ['tru', T(2)], ['"\\x"', T(2)], ['"\\u12"', T(2)], ['"a\x01"', T(2)], ['\x0c{}', T(2)],
  ['', T(2)], [' ', T(2)], ['"abc', T(2)], ['"abc"x', T(2)], ['{"a" 1}', T(2)], ['[true false]', T(2)],
  ['\xef\xbb\xbf{}', T(2)], [' \xef\xbb\xbf{}', T(2)], ['[\xef\xbb\xbf1]', T(2)], ['{\xef\xbb\xbf"a":1}', T(2)], ['[1,\xef\xbb\xbf2]', T(2)],
  ['\xff', T(1)], ['"\xed\xa0\x80"', T(1)], ['\xc0\xaf', T(1)], ['\xf4\x90\x80\x80', T(1)],
  ['{}', "ok"], ['[]', "ok"], ['"a\x7f"', "ok"], ['{} ', "ok"], ['"\\ud800"', "ok"], ['"\\/"', "ok"], ['[1e5, 2E-3, -3.5e+2]', "ok"],
];

test("each line gets the reference reader's verdict", () => {
  const wrong = CASES.map(([line, want]) => [line, want, ruleOf(bytes(line))]).filter(([, want, got]) => want !== got);
  assert.deepEqual(wrong, []);
});

test("values are read as the reference reads them", () => {
  assert.equal(readLine(utf8("9007199254740991")), 9007199254740991);
  assert.equal(readLine(utf8('"\\ud800"')), "\ud800");
  assert.equal(readLine(utf8('"\\ud83d\\ude00"')), "\u{1f600}");
  assert.equal(readLine(utf8('"\u00e9\u{1f600}"')), "\u00e9\u{1f600}");
  assert.equal(readLine(utf8('"\ufeff"')), "\ufeff"); // a U+FEFF inside a string is a character like any other
  assert.equal(readLine(utf8('"a\ufeffb\u00e9\ufeff"')), "a\ufeffb\u00e9\ufeff");
  assert.deepEqual(readLine(utf8('{"b":[1,2.5,true,null,"s"],"a":{}}')), { b: [1, 2.5, true, null, "s"], a: {} });
  assert.ok(Object.is(readLine(utf8("1e-400")), 0));
});

test("a __proto__ key stays an own data key and sets no prototype", () => {
  const value = readLine(utf8('{"__proto__":{"polluted":1},"a":1}'));
  assert.ok(Object.hasOwn(value, "__proto__"));
  assert.equal(Object.getPrototypeOf(value), Object.prototype);
  assert.equal(value.polluted, undefined);
  assert.deepEqual(Object.keys(value), ["__proto__", "a"]);
  assert.equal({}.polluted, undefined);
});

test("depth is limited by memory only: 1,000,000 levels are read without recursion", () => {
  const depth = 1_000_000;
  let value = readLine(utf8(`${"[".repeat(depth)}${"]".repeat(depth)}`));
  let levels = 0;
  while (Array.isArray(value) && value.length === 1) {
    value = value[0];
    levels += 1;
  }
  assert.equal(levels, depth - 1);
});
