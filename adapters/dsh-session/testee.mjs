#!/usr/bin/env node
// SCP v0 testee over the published @deepseek-ai/dsh-session (spec/10-conformance.md):
//
//   sessionspec conform -- node adapters/dsh-session/testee.mjs
//
// JSON Lines on stdin and stdout: one answer per request line, in order, written at once; EOF
// ends the process. stdin is read as bytes and split here, in bounded pieces: a line over 64 MiB
// (SESSION-CONFORMANCE-PROTOCOL.7) is dropped as it arrives and answered with one `json` error.
// Nothing a line holds ends the loop or goes unanswered: a line that is not JSON is refused by the
// lossless reader (lib/reader.mjs), an upstream exception is an answer (lib/mapping.mjs), and an
// answer that cannot be written is replaced by an `internal` one.

import { Executor, RULES, failure } from "./lib/executor.mjs";
import { JsonRefusal, readLine } from "./lib/reader.mjs";
import { writeAnswer } from "./lib/writer.mjs";

/** SESSION-CONFORMANCE-PROTOCOL.7: a request line is at most this many bytes (without its newline). */
export const MAX_LINE_BYTES = 64 * 1024 * 1024;

const executor = new Executor();

function answerTo(line) {
  let request;
  try {
    request = readLine(line);
  } catch (error) {
    if (error instanceof JsonRefusal) {
      return failure("json", `${RULES.requestObject}: ${error.rule}: ${error.message}`, error.rule);
    }
    return failure("internal", `adapter error while reading the line: ${String(error?.message ?? error)}`, null);
  }
  return executor.run(request);
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

function answerLine(pieces, length) {
  let line = pieces.length === 1 ? pieces[0] : Buffer.concat(pieces, length);
  if (line.length > 0 && line[line.length - 1] === 0x0d) line = line.subarray(0, line.length - 1);
  let answer;
  try {
    answer = answerTo(new Uint8Array(line.buffer, line.byteOffset, line.length));
  } catch (error) {
    answer = failure("internal", `adapter error: ${String(error?.message ?? error)}`, null);
  }
  write(answer);
}

function answerOverlong() {
  write(failure("json", `${RULES.lineBound}: request line over ${MAX_LINE_BYTES.toLocaleString("en")} bytes`, RULES.lineBound));
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
  // The reader of the answers is gone: nothing is left to answer to.
  if (error?.code === "EPIPE") process.exit(0);
  throw error;
});
process.on("uncaughtException", (error) => {
  // Nothing should get here (every request is answered inside a try); if something does, say so and keep serving.
  process.stderr.write(`dsh-session testee: uncaught ${error?.stack ?? error}\n`);
});
process.on("unhandledRejection", (reason) => {
  process.stderr.write(`dsh-session testee: unhandled rejection ${reason?.stack ?? reason}\n`);
});

// A chunk is never reused by the stream once emitted, so pieces of it are kept without a copy.
process.stdin.on("data", take);
process.stdin.on("end", () => {
  if (dropping) answerOverlong();
  else if (length > 0) answerLine(pieces, length);
  pieces = [];
  length = 0;
});
