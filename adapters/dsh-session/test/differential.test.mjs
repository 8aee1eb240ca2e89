// The reader against the reference reader itself, on generated lines: the same verdict (rule)
// for every line and the same value for every accepted one. Needs the sessionspec Python
// package (the repository's .venv, or SESSIONSPEC_PYTHON); skipped without it.

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

import { readLine } from "../lib/reader.mjs";
import { writeAnswer } from "../lib/writer.mjs";

const PYTHON = process.env.SESSIONSPEC_PYTHON ?? fileURLToPath(new URL("../../../.venv/bin/python", import.meta.url));

const REFERENCE = String.raw`
import base64, sys, orjson
from sessionspec.errors import SpecViolation
from sessionspec.jsonvalue import json_equal
from sessionspec.wire.protocol import loads as parse_line
bad = []
for row in sys.stdin.read().split("\n"):
    if not row:
        continue
    case, ours = row.split(" ", 1)
    line = base64.b64decode(case)
    try:
        value, verdict = parse_line(line), "ok"
    except SpecViolation as violation:
        verdict = violation.rule
    if ours.startswith("ok "):
        text = ours[3:].encode()
        try:
            mine = orjson.loads(text)[0]
        except orjson.JSONDecodeError:
            mine = parse_line(text)[0]
        if verdict != "ok" or not json_equal(value, mine):
            bad.append((line[:60], verdict, ours[:60]))
    elif ours != verdict:
        bad.append((line[:60], verdict, ours))
print(repr(bad[:10]) if bad else "same")
`;

/** A small deterministic generator (mulberry32). */
function random(seed) {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const TOKENS = ["{", "}", "[", "]", ",", ":", '"a"', '"b"', "1", "-0", "-", "0", ".", "e", "E+", "5", " ", "NaN", "Infinity",
  "-Infinity", "true", "null", "1e400", "99999999999999999", '"\\ud800"', "x", "\u00e9", "\ufeff", '"\ufeff"', "\t", "\u0001",
  '"\\u00e9\\ud83d\\ude00"', "1.5", "-1e-400", "9007199254740993"];
const SCALARS = ["1", "-0", "0.5", "9.007199254740993e17", "1e17", "123456789012345678.5", "-4e20", '"s"', "null", "1e400", "NaN", "12345678901234567", "-1e-400", "true", '"\\ud800"', '"\ufeff"', "-0.0", "2E-3"];

function generate(next, count) {
  const pick = (items) => items[Math.floor(next() * items.length)];
  const value = (depth) => {
    const r = next();
    if (depth > 3 || r < 0.3) return pick(SCALARS);
    const n = Math.floor(next() * 4);
    if (r < 0.65) return `[${Array.from({ length: n }, () => value(depth + 1)).join(",")}]`;
    return `{${Array.from({ length: n }, () => `${pick(['"a"', '"b"', '"c"'])}:${value(depth + 1)}`).join(",")}}`;
  };
  const lines = [];
  for (let i = 0; i < count; i++) {
    let text;
    if (next() < 0.5) {
      text = Array.from({ length: 1 + Math.floor(next() * 12) }, () => pick(TOKENS)).join("");
    } else {
      text = value(0);
      if (next() < 0.3) {
        const at = Math.floor(next() * text.length);
        text = text.slice(0, at) + pick(TOKENS) + text.slice(at + 1);
      }
    }
    lines.push(Buffer.from(text, "utf8"));
  }
  lines.push(Buffer.from([0xff]), Buffer.from('"\xed\xa0\x80"', "latin1"), Buffer.from([0xef, 0xbb, 0xbf, 0x31]));
  return lines;
}

test("the reader gives every generated line the reference reader's verdict and value", { skip: !existsSync(PYTHON) && `no ${PYTHON}` }, () => {
  const rows = generate(random(20261204), 5000).map((line) => {
    let ours;
    try {
      ours = `ok ${writeAnswer([readLine(new Uint8Array(line))])}`;
    } catch (error) {
      ours = error.rule ?? `not a refusal: ${error}`;
    }
    return `${line.toString("base64")} ${ours}`;
  });
  const result = spawnSync(PYTHON, ["-c", REFERENCE], { input: rows.join("\n"), encoding: "utf8", maxBuffer: 1 << 26 });
  assert.equal(result.status, 0, result.stderr);
  assert.equal(result.stdout.trim(), "same");
});

const REGISTRY = String.raw`
import json
from sessionspec.conformance.registry import all_rules  # every module imported: every define() has run
print(json.dumps({rule.id: rule.kind.value for rule in all_rules().values()}))
`;

test("every rule the mapping names is a rule of the spec with that kind", { skip: !existsSync(PYTHON) && `no ${PYTHON}` }, async () => {
  const { MESSAGES, CRASHES } = await import("../lib/mapping.mjs");
  const { RULES } = await import("../lib/executor.mjs");
  const result = spawnSync(PYTHON, ["-c", REGISTRY], { encoding: "utf8" });
  assert.equal(result.status, 0, result.stderr);
  const registry = JSON.parse(result.stdout);
  const named = [...MESSAGES, ...CRASHES].filter((entry) => entry.rule !== null).map((entry) => [entry.rule, entry.kind]);
  const wrong = named.filter(([rule, kind]) => registry[rule] !== kind);
  assert.deepEqual(wrong, []);
  const reader = ["SESSION-LOSSLESS-TEXT.1", "SESSION-LOSSLESS-TEXT.2", "SESSION-LOSSLESS-TEXT.3", "SESSION-LOSSLESS-TEXT.4",
    "SESSION-LOSSLESS-TEXT.5", "SESSION-LOSSLESS-TEXT.6"];
  for (const rule of [...reader, ...Object.values(RULES)]) assert.ok(rule in registry, rule);
});
