// Spawning the testee: lines in, answers out (one per line, in order).

import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";

export const TESTEE = fileURLToPath(new URL("../testee.mjs", import.meta.url));

/** A request line from a value (JSON text), or the bytes/string given as they are. */
function asLine(item) {
  if (Buffer.isBuffer(item)) return item;
  if (typeof item === "string") return Buffer.from(item, "utf8");
  return Buffer.from(JSON.stringify(item), "utf8");
}

/**
 * Run the testee over `items` (objects are sent as JSON, strings and Buffers as raw lines), close
 * stdin, and resolve with `{answers, raw, code, stderr}`: the parsed answer lines, the raw lines,
 * the exit code.
 */
export function exchange(items, { timeout = 60_000 } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [TESTEE], { stdio: ["pipe", "pipe", "pipe"] });
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
      const text = Buffer.concat(out).toString("utf8");
      const raw = text.split("\n");
      if (raw.at(-1) === "") raw.pop();
      resolve({ answers: raw.map((line) => JSON.parse(line)), raw, code, stderr: Buffer.concat(err).toString("utf8") });
    });
    child.stdin.on("error", () => {});
    for (const item of items) {
      child.stdin.write(asLine(item));
      child.stdin.write("\n");
    }
    child.stdin.end();
  });
}

export const CREATE = { op: "create", id: "s1", seed: null, header: null };

export const USER = { id: "u1", role: "user", source: { kind: "user" }, content: [{ type: "text", text: "hello" }] };

export const assistant = (id, extra = {}) => ({
  turn: 1, step: 1,
  message: { id, role: "assistant", source: { kind: "model", provider: "deepseek", model: "deepseek-chat" }, content: [{ type: "text", text: "ok" }] },
  ...extra,
});

export const toolResult = (id, callId, text = "out") => ({
  turn: 1, step: 1,
  message: { id, role: "user", source: { kind: "tool", callId }, content: [{ type: "tool-result", toolCallId: callId, content: [{ type: "text", text }] }] },
});

/** `{kind, rule}` of a failure answer (for compact assertions). */
export const refusal = (answer) => ({ ok: answer.ok, kind: answer.error?.kind, rule: answer.error?.rule });
