// lib/mapping.mjs: the upstream persistence messages as kinds, rules, lines and seqs.

import assert from "node:assert/strict";
import { test } from "node:test";

import { MESSAGES, mapStorageError, matchMessage } from "../lib/mapping.mjs";

/** A SessionPersistenceCorruptionError as the coordinator builds it: its message wraps String(cause). */
function wrapped(cause) {
  const error = new Error(`stored session "s1" failed validation: ${String(cause)}`, { cause });
  error.name = "SessionPersistenceCorruptionError";
  return error;
}

test("each upstream message maps to the kind of the storage rule it enforces", () => {
  const cases = [
    ["empty or header-less session log", { kind: "header", rule: "SESSION-STORAGE-HEADER.1", line: 1 }],
    ["corrupt session log: first line is not a session header", { kind: "header", rule: null, line: 1 }],
    ["corrupt session log: seq gap in committed region at line 6 (expected 9, got 11)", { kind: "seq", rule: "SESSION-STORAGE-SEQ.1", line: 7, seq: 9 }],
    ["corrupt session log: unparsable committed event at line 2", { kind: "json", rule: null, line: 3 }],
    ["corrupt Zstandard session log: invalid frame magic at byte 40", { kind: "envelope", rule: "SESSION-ZSTD-FRAMES.1" }],
    ["corrupt Zstandard session log: frame at byte 12 failed validation", { kind: "envelope", rule: "SESSION-ZSTD-FRAMES.3" }],
    ["session \"s1\" uses log format v1, but this harness reads only v0: the log was written by a newer harness — upgrade the harness to open it (raw log: /x)", { kind: "version", rule: "SESSION-FORMAT-VERSION.1" }],
    ["session \"s1\" uses log format v-1, older than the supported v0, and this build ships no upgrade path for it", { kind: "version", rule: "SESSION-FORMAT-VERSION.2" }],
    ["session \"s1\" contains event type \"made/up\" (seq 4) unknown to this harness and not marked ignorable; refusing", { kind: "unknown-event", rule: "SESSION-UNKNOWN-EVENT-GATE.1", seq: 4 }],
    ["session database at \"/d.sqlite\" has schema version 17, incompatible with this build (14)", { kind: "version", rule: "SESSION-SQLITE-SCHEMA.1" }],
  ];
  for (const [message, expected] of cases) assert.deepEqual(matchMessage(message), expected, message);
});

test("a wrapped validation failure is judged by its cause: a storage message, else a session rule", () => {
  const legacy = mapStorageError(wrapped(new Error('session "s1" contains malformed pre-react-loop turn/end at seq 3')));
  assert.deepEqual([legacy.kind, legacy.rule, legacy.seq], ["envelope", "SESSION-LEGACY-UPGRADE.2", 3]);
  const session = mapStorageError(wrapped(new Error("seed request/header at index 2 lacks provider/model")));
  assert.deepEqual([session.kind, session.rule, session.seq], ["request-header", "SESSION-REQUEST-HEADER.1", 2]);
  assert.match(session.message, /^upstream: stored session "s1" failed validation/);
});

test("anything unmatched is internal with no rule, never guessed", () => {
  assert.deepEqual(mapStorageError(new Error("EACCES: permission denied")).kind, "internal");
  assert.equal(mapStorageError(new TypeError("corrupt session log: first line is not a session header")).kind, "header");
  assert.deepEqual(mapStorageError("a string").rule, null);
  assert.equal(mapStorageError(wrapped(new Error("something new"))).kind, "internal");
});

test("every pattern is anchored and every kind is a kind of the protocol", () => {
  const kinds = new Set(["json", "envelope", "seq", "header", "version", "unknown-event", "request-header", "internal", "unsupported"]);
  for (const entry of MESSAGES) {
    assert.ok(entry.pattern.source.startsWith("^"), entry.pattern.source);
    assert.ok(kinds.has(entry.kind), entry.kind);
    assert.ok(entry.rule === null || /^SESSION-[A-Z-]+\.\d+$/.test(entry.rule), entry.rule);
  }
});
