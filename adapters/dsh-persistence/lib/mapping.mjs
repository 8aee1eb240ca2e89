// The upstream persistence packages' errors as SCP error kinds (spec/07 storage rules, spec/10).
//
// @deepseek-ai/dsh-session-persistence(-jsonl, -sqlite) throw plain `Error`s (and two classes of
// their own) whose message is their only classification (notes §4 and lib/index.js of each
// package). Each entry names one message pattern, the kind of the storage rule of our spec that
// the upstream check enforces, the rule where that is unambiguous (else null: the runner compares
// kinds, never rules), and which capture is the line or seq the refusal names. A message no entry
// matches is `internal` with `rule: null`, never guessed into a kind.
//
// The coordinator wraps every error of its validation steps (identity, legacy upgrades, message
// shapes, the seed the Session constructor checks) as SessionPersistenceCorruptionError
// `stored session "<id>" failed validation: <String(cause)>`: the cause is unwrapped and mapped
// first by this table, then by the session adapter's table (a session rule broken by a stored
// event is the same rule as on a seed).

import { mapUpstreamError } from "../../dsh-session/lib/mapping.mjs";

export const MESSAGES = [
  // The JSONL header line (format.ts parse order): line 1 of the file, which the message means.
  { pattern: /^empty or header-less session log$/, kind: "header", rule: "SESSION-STORAGE-HEADER.1", atLine: 1 },
  { pattern: /^corrupt session log: header line is not valid JSON$/, kind: "header", rule: "SESSION-STORAGE-HEADER.2", atLine: 1 },
  // One message for HEADER.2 (type, version, id) and HEADER.3 (delegationDepth) and the origin/agentPreset types.
  { pattern: /^corrupt session log: first line is not a session header$/, kind: "header", rule: null, atLine: 1 },
  { pattern: /^session header uses retired policy baseline fields$/, kind: "header", rule: "SESSION-STORAGE-HEADER.4", atLine: 1 },
  { pattern: /^stored session identity mismatch: /, kind: "header", rule: "SESSION-STORAGE-HEADER.5" },
  { pattern: /^corrupt session log "[^]*": requested id "[^]*" does not match header id /, kind: "header", rule: "SESSION-STORAGE-HEADER.5" },
  { pattern: /^corrupt session log "[^]*": header id cannot name a storage path$/, kind: "header", rule: "SESSION-STORAGE-LAYOUT.3" },
  { pattern: /^cannot encode an empty path segment$/, kind: "header", rule: "SESSION-STORAGE-LAYOUT.3" },
  // Committed region of the JSONL scanner: a defect followed by a turn/end (SESSION-TORN-TAIL.2). The
  // scanner counts event lines from 1 after the header (its `eventLine`); the protocol's line is the
  // file's, header included, so `lineOffset` adds the header line.
  { pattern: /^corrupt session log: unparsable committed event at line (\d+)$/, kind: "json", rule: null, line: 1, lineOffset: 1 },
  { pattern: /^corrupt session log: seq gap in committed region at line (\d+) \(expected (\d+), got -?\d+\)$/, kind: "seq", rule: "SESSION-STORAGE-SEQ.1", line: 1, lineOffset: 1, seq: 2 },
  // Zstandard frames (zstd.ts).
  { pattern: /^empty or header-less Zstandard session log$/, kind: "header", rule: "SESSION-ZSTD-FRAMES.2" },
  { pattern: /^corrupt Zstandard session log: first frame is not exactly one header line$/, kind: "header", rule: "SESSION-ZSTD-FRAMES.2" },
  { pattern: /^corrupt Zstandard session log: header frame failed validation$/, kind: "header", rule: "SESSION-ZSTD-FRAMES.2" },
  { pattern: /^corrupt Zstandard session log: invalid frame magic at byte \d+$/, kind: "envelope", rule: "SESSION-ZSTD-FRAMES.1" },
  { pattern: /^corrupt Zstandard session log: reserved (?:frame-header bit|block type) at byte \d+$/, kind: "envelope", rule: "SESSION-ZSTD-FRAMES.1" },
  { pattern: /^corrupt Zstandard session log: frame at byte \d+ failed validation$/, kind: "envelope", rule: "SESSION-ZSTD-FRAMES.3" },
  { pattern: /^corrupt Zstandard session log: complete frame contains a torn JSONL record$/, kind: "envelope", rule: "SESSION-ZSTD-FRAMES.3" },
  { pattern: /^Zstandard frame output exceeds \d+ bytes$/, kind: "envelope", rule: null },
  // Format version and vocabulary gate (SessionFormatUnsupportedError, passed through unwrapped).
  { pattern: /^session "[^]*" uses log format v-?[\d.e+]+, but this harness reads only v0/, kind: "version", rule: "SESSION-FORMAT-VERSION.1" },
  { pattern: /^session "[^]*" uses log format v-?[\d.e+]+, older than the supported v0/, kind: "version", rule: "SESSION-FORMAT-VERSION.2" },
  { pattern: /^session "[^]*" contains event type "[^]*" \(seq (\d+)\) unknown to this harness and not marked ignorable/, kind: "unknown-event", rule: "SESSION-UNKNOWN-EVENT-GATE.1", seq: 1 },
  // Legacy shapes (coordinator; §4.5).
  { pattern: /^session "[^]*" contains malformed pre-react-loop turn\/start at seq (\d+)$/, kind: "envelope", rule: "SESSION-LEGACY-UPGRADE.1", seq: 1 },
  { pattern: /^session "[^]*" contains malformed pre-react-loop turn\/end at seq (\d+)$/, kind: "envelope", rule: "SESSION-LEGACY-UPGRADE.2", seq: 1 },
  { pattern: /^session "[^]*" contains malformed pre-react-loop steering\/message at seq (\d+)$/, kind: "envelope", rule: "SESSION-LEGACY-UPGRADE.3", seq: 1 },
  { pattern: /^session "[^]*" contains unsupported legacy (?:request\/header-delta|mode\/set) event at seq (\d+)$/, kind: "envelope", rule: "SESSION-CORE-EVENTS.2", seq: 1 },
  { pattern: /^session "[^]*" contains unsupported legacy request\/header reason "fallback" at seq (\d+)$/, kind: "request-header", rule: "SESSION-REQUEST-HEADER.4", seq: 1 },
  // The coordinator's append.
  { pattern: /^append seq mismatch for "[^]*": expected \d+ at index \d+, got /, kind: "seq", rule: null },
  { pattern: /^session event batch is not losslessly JSON-serializable/, kind: "json", rule: null },
  { pattern: /^session metadata must be losslessly JSON-serializable$/, kind: "json", rule: null },
  { pattern: /^session metadata createdAt must be a non-negative safe integer$/, kind: "header", rule: "SESSION-FORMAT-HEADER.4" },
  // Publication never overwrites (materializePosix: hard link); spec/10 answers it as header (PROTOCOL.14).
  { pattern: /^refusing to materialize "[^]*": a log already exists on disk/, kind: "header", rule: "SESSION-CONFORMANCE-PROTOCOL.14" },
  { pattern: /^session "[^]*" already has a persisted log on disk; load\/resume it instead of creating$/, kind: "header", rule: "SESSION-CONFORMANCE-PROTOCOL.14" },
  // No log at the path: nothing to read a header from (spec/10, PROTOCOL.13).
  { pattern: /^session "[^]*" not found$/, kind: "header", rule: "SESSION-CONFORMANCE-PROTOCOL.13" },
  // SQLite 0.0.1-rc.1 (schema 14; schema.ts configureDatabase, scanRows).
  { pattern: /^session database at "[^]*" has schema version \d+, incompatible with this build \(14\)$/, kind: "version", rule: "SESSION-SQLITE-SCHEMA.1" },
  { pattern: /^session database at "[^]*" has application id -?\d+, expected 1146308688$/, kind: "version", rule: "SESSION-SQLITE-SCHEMA.2" },
  { pattern: /^session database at "[^]*" has an unversioned schema or application identity$/, kind: "version", rule: "SESSION-SQLITE-SCHEMA.3" },
  { pattern: /^file is not a database$/, kind: "version", rule: "SESSION-SQLITE-SCHEMA.3" },
  { pattern: /^corrupt session log: unparsable committed event at seq (\d+)$/, kind: "json", rule: "SESSION-SQLITE-ROW.2", seq: 1 },
  { pattern: /^corrupt session log: seq gap in committed region \(expected \d+, got -?\d+\)$/, kind: "seq", rule: "SESSION-STORAGE-SEQ.1" },
  { pattern: /^stored session createdAt must be a non-negative safe integer$/, kind: "header", rule: "SESSION-FORMAT-HEADER.4" },
];

const WRAPPER = /^stored session "[^]*?" failed validation: /;
const SEED_POSITION = /\bat index (\d+)\b|\bat seq (\d+)\b/;

function textOf(error) {
  if (error instanceof Error) return error.message;
  try {
    return String(error);
  } catch {
    return "(an unprintable value)";
  }
}

function describe(error) {
  return error instanceof Error ? `${error.name}: ${error.message}` : textOf(error);
}

/** The first entry of MESSAGES whose pattern the text matches, as {kind, rule, line?, seq?}; else null. */
export function matchMessage(text) {
  for (const entry of MESSAGES) {
    const found = entry.pattern.exec(text);
    if (found === null) continue;
    const answer = { kind: entry.kind, rule: entry.rule };
    if (entry.atLine !== undefined) answer.line = entry.atLine;
    if (entry.line !== undefined) answer.line = Number(found[entry.line]) + (entry.lineOffset ?? 0);
    if (entry.seq !== undefined) answer.seq = Number(found[entry.seq]);
    return answer;
  }
  return null;
}

/**
 * The SCP error of what a persistence call threw: `{kind, message, rule, line?, seq?}`. A wrapped
 * validation failure is judged by its cause; a session rule the cause breaks is mapped by the
 * session adapter's table (as for a seed, which is what the coordinator builds from the log).
 */
export function mapStorageError(error) {
  const message = textOf(error);
  const cause = WRAPPER.test(message) && error?.cause !== undefined ? error.cause : undefined;
  const inner = cause === undefined ? error : cause;
  const found = inner instanceof Error ? matchMessage(inner.message) : null;
  if (found !== null) return { ...found, message: `upstream: ${message}` };
  if (cause !== undefined) {
    const session = mapUpstreamError(cause, { op: "load", request: {} });
    if (session.kind !== "internal") {
      const answer = { kind: session.kind, rule: session.rule, message: `upstream: ${message}` };
      // The log is the seed: a stored log is contiguous from seq 0 (the backend's scan refuses a
      // gap first), so the seed index the message names is the event's seq.
      const at = SEED_POSITION.exec(textOf(cause));
      if (at !== null) answer.seq = Number(at[1] ?? at[2]);
      return answer;
    }
  }
  return { kind: "internal", rule: null, message: `upstream threw ${describe(error)}` };
}
