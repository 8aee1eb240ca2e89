// SESSION-LOSSLESS-TEXT.1-.6 through the testee: the adapter's reading refuses what the
// reference refuses, so none of it is reported as the upstream's.

import assert from "node:assert/strict";
import { test } from "node:test";

import { CREATE, exchange, refusal } from "./helpers.mjs";

const T = (n) => `SESSION-LOSSLESS-TEXT.${n}`;
const append = (dataText) => `{"op":"append","type":"plugin/note","data":${dataText}}`;

test("each fault of the text is refused with kind json and the reference's rule; the session is untouched", async () => {
  const lines = [
    [append('{"a":1,"a":1}'), T(6)],
    [append("-18446744073709551616"), T(4)],
    [append("9007199254740992"), T(4)],
    [Buffer.concat([Buffer.from('{"op":"append","type":"plugin/note","data":"'), Buffer.from([0xff]), Buffer.from('"}')]), T(1)],
    [Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"op":"hello"}')]), T(2)],
    [append("-0.0"), T(5)],
    [append("-0"), T(5)],
    [append("[-0e5]"), T(5)],
    [append("-1e-400"), T(5)],
    [append("1e400"), T(3)],
    [append("NaN"), T(3)],
    [append("{"), T(2)],
  ];
  const { answers } = await exchange([CREATE, ...lines.map(([line]) => line), { op: "snapshot" }]);
  assert.equal(answers.length, lines.length + 2);
  lines.forEach(([, rule], i) => assert.deepEqual(refusal(answers[i + 1]), { ok: false, kind: "json", rule }, `line ${i}`));
  assert.deepEqual(answers.at(-1).events, []);
});

test("what the text holds is logged exactly: safe integers, a __proto__ key, a lone surrogate", async () => {
  const { answers, raw } = await exchange([
    CREATE,
    append('{"n":9007199254740991,"m":-9007199254740991,"f":0.5,"z":0}'),
    append('{"__proto__":{"x":1},"k":"v"}'),
    append('"\\ud800"'),
    append('"\\udc00x\\ud83d\\ude00"'),
    { op: "snapshot" },
  ]);
  assert.deepEqual(answers[1].event.data, { n: 9007199254740991, m: -9007199254740991, f: 0.5, z: 0 });
  assert.match(raw[2], /"data":\{"__proto__":\{"x":1\},"k":"v"\}/);
  assert.ok(Object.hasOwn(answers[2].event.data, "__proto__")); // JSON.parse keeps it an own key too
  assert.equal(Object.getPrototypeOf(answers[2].event.data), Object.prototype);
  assert.match(raw[3], /"data":"\\ud800"/);
  assert.equal(answers[3].event.data, "\ud800");
  assert.equal(answers[4].event.data, "\udc00x\u{1f600}");
  assert.equal(answers[5].events.length, 4);
});

test("a 100,000-deep array line gets exactly one answer; a 100,000-deep append is accepted and answered", async () => {
  const depth = 100_000;
  const deep = `${"[".repeat(depth)}${"]".repeat(depth)}`;
  const { answers, raw, code } = await exchange([CREATE, deep, append(deep), { op: "snapshot" }, { op: "hello" }], { timeout: 120_000 });
  assert.equal(code, 0);
  assert.equal(answers.length, 5);
  assert.deepEqual(refusal(answers[1]), { ok: false, kind: "json", rule: "SESSION-CONFORMANCE-PROTOCOL.1" });
  assert.equal(answers[2].ok, true);
  assert.ok(raw[2].includes(`"data":${deep}}`));
  assert.equal(answers[3].ok, true);
  assert.ok(raw[3].includes(deep));
  assert.equal(answers[4].ok, true);
});

test("a __proto__ key of a request is an own key: it sets no prototype the upstream could read a surfaceOp from", async () => {
  const { answers } = await exchange([
    CREATE,
    '{"op":"append","type":"turn/start","data":{"turn":1},"__proto__":{"surfaceOp":"append"},"extra":1}',
    '{"op":"create","id":"s2","seed":null,"header":null,"__proto__":{}}',
  ]);
  // The upstream drops intent keys it does not read: the event is logged without a surfaceOp.
  assert.deepEqual(Object.keys(answers[1].event).sort(), ["data", "seq", "time", "type"]);
  assert.deepEqual(refusal(answers[2]), { ok: false, kind: "envelope", rule: "SESSION-CONFORMANCE-PROTOCOL.4" });
});
