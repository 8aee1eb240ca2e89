// The upstream's errors as SCP error kinds (spec/10-conformance.md).
//
// @deepseek-ai/dsh-session throws plain `Error`s whose message is its only classification
// (their strings: /work/shared/notes/upstream-model.md, sections 1 and 2, and lib/index.js of the
// package). Each entry of MESSAGES names one message pattern, the SCP kind it means, and the rule
// of our spec that the upstream check enforces where that is unambiguous (else `rule: null`: the
// runner compares kinds, never rules). A message no entry matches is `internal` with `rule: null`:
// an unmapped message is reported as a crash, never guessed into a kind.
//
// CRASHES lists the upstream's TypeErrors on input that our spec rejects with a known rule. Each
// applies only when its `when` confirms, from the request alone, the input that makes the upstream
// crash that way (a shape check of the request, not a session rule), so an unrelated TypeError with
// the same text stays `internal`.

/** Subjects the upstream puts before its message-shape texts (seed, adopt and snapshot paths). */
const SUBJECT = String.raw`(?:seed (?:user\/message|assistant\/message|tool\/result) at index \d+|session event at seq \d+)`;

export const MESSAGES = [
  // Lossless JSON (upstream json.ts). The lossless reader in front of the upstream refuses every
  // non-JSON value first, so from a request line only a missing `data` (undefined) reaches these.
  {
    pattern: /^session event "[^]*" carries non-JSON-serializable data$/,
    kind: "envelope",
    rule: "SESSION-EVENT-ENVELOPE.5",
    when: (context) => context.op === "append" && !context.hasData,
    note: "append without `data`: the upstream's snapshot refuses `undefined` (R4)",
  },
  { pattern: /^session event "[^]*" carries non-JSON-serializable data$/, kind: "json", rule: null },
  { pattern: /^session event "[^]*" carries non-JSON-serializable surface metadata$/, kind: "json", rule: null },
  { pattern: /^seed event at index \d+ is not losslessly JSON-serializable$/, kind: "json", rule: null },
  { pattern: /^session header is not losslessly JSON-serializable$/, kind: "json", rule: null },

  // Retired shapes (append step 3, seed step 2 and 5).
  { pattern: /uses unsupported legacy request\/header-delta format$/, kind: "envelope", rule: "SESSION-CORE-EVENTS.2" },
  { pattern: /uses unsupported legacy request\/header reason "fallback"$/, kind: "request-header", rule: "SESSION-REQUEST-HEADER.4" },

  // Reentrancy (only attached sessions; this adapter has none).
  { pattern: /^session append cannot reenter while another append is being published$/, kind: "reentrant", rule: "SESSION-APPEND-COMMIT.4" },

  // Surface eligibility and marker (surface.ts surfaceOpOf).
  { pattern: /^session event "[^]*" is not surface-eligible and cannot carry surfaceOp$/, kind: "surface-eligibility", rule: "SESSION-SURFACE-PROJECTION.1" },
  { pattern: /^session event "[^]*" is not surface-eligible and cannot carry sourceEventSeqs$/, kind: "surface-eligibility", rule: "SESSION-SURFACE-PROJECTION.2" },
  { pattern: /^session event "[^]*" is surface-eligible and requires a surfaceOp marker$/, kind: "surface-eligibility", rule: "SESSION-SURFACE-PROJECTION.3" },
  { pattern: /^session event "[^]*" carries an invalid surfaceOp$/, kind: "surface-op", rule: "SESSION-SURFACE-PROJECTION.4" },
  { pattern: /^session event "[^]*" carries an invalid replace surfaceOp$/, kind: "surface-op", rule: "SESSION-SURFACE-PROJECTION.4" },

  // Provenance (surface.ts assertProvenance), in its check order.
  { pattern: /^sourceEventSeqs on event at seq \S+ must be an array when present$/, kind: "provenance", rule: "SESSION-SURFACE-PROVENANCE.1" },
  { pattern: /^sourceEventSeqs must not be empty except on assistant\/message$/, kind: "provenance", rule: "SESSION-SURFACE-PROVENANCE.2" },
  { pattern: /^session event "[^]*" sourceEventSeqs must densely contain non-negative safe integers$/, kind: "provenance", rule: "SESSION-SURFACE-PROVENANCE.3" },
  { pattern: /^sourceEventSeqs must not contain duplicates$/, kind: "provenance", rule: "SESSION-SURFACE-PROVENANCE.4" },
  { pattern: /^sourceEventSeqs must reference earlier events: /, kind: "provenance", rule: "SESSION-SURFACE-PROVENANCE.5" },
  { pattern: /^surface replace: sourceEventSeqs must include every shadowed surface node; missing /, kind: "provenance", rule: "SESSION-SURFACE-PROVENANCE.6" },

  // Replace range (surface.ts replacementRange).
  { pattern: /^surface replace: (?:start|end) seq \S+ not found in surface$/, kind: "range", rule: "SESSION-SURFACE-REPLACE.1" },
  { pattern: /^surface replace: start seq \S+ \(index \d+\) is after end seq \S+ \(index \d+\)$/, kind: "range", rule: "SESSION-SURFACE-REPLACE.2" },

  // Tool-result rewrites (surface.ts assertToolResultRewrite).
  { pattern: /^tool\/result surface replacement must rewrite exactly one current node$/, kind: "tool-result-rewrite", rule: "SESSION-SURFACE-TOOL-RESULT.1" },
  { pattern: /^tool\/result surface replacement must target a current tool\/result$/, kind: "tool-result-rewrite", rule: "SESSION-SURFACE-TOOL-RESULT.2" },
  { pattern: /^tool\/result surface replacement may change only content$/, kind: "tool-result-rewrite", rule: "SESSION-SURFACE-TOOL-RESULT.3" },

  // Contiguity: the fold (surface.ts planSurfaceEvent) and the seed (constructor).
  { pattern: /^session event seq [^]* is not contiguous; expected \d+$/, kind: "seq", rule: "SESSION-SURFACE-FOLD.1" },
  { pattern: /^seed event at index \d+ has seq [^]* \(expected \d+\); seed must be contiguous from 0$/, kind: "seq", rule: "SESSION-SEED-ACCEPTANCE.2" },

  // Seed envelope (index.ts assertSessionEventEnvelope): one message for the key set, type, seq,
  // time, data and ignorable checks (SESSION-EVENT-ENVELOPE.1-.6), so no single rule.
  { pattern: /^seed event at index \d+ has an invalid event envelope$/, kind: "envelope", rule: null },

  // Seed request headers (index.ts assertCurrentLlmShape).
  { pattern: /^seed request\/header at index \d+ lacks provider\/model$/, kind: "request-header", rule: "SESSION-REQUEST-HEADER.1" },
  { pattern: /^seed request\/header at index \d+ has an invalid reasoningEffort$/, kind: "request-header", rule: "SESSION-REQUEST-HEADER.2" },
  { pattern: /^seed request\/header at index \d+ has invalid adapterDefaults$/, kind: "request-header", rule: "SESSION-REQUEST-HEADER.3" },

  // Message shapes (index.ts assertMessageEventShape), in its check order.
  { pattern: new RegExp(`^${SUBJECT} lacks an identified message$`), kind: "message-shape", rule: "SESSION-MESSAGE-SHAPE.1" },
  { pattern: new RegExp(`^${SUBJECT} message must have role "(?:assistant|user)"$`), kind: "message-shape", rule: "SESSION-MESSAGE-SHAPE.2" },
  { pattern: new RegExp(`^${SUBJECT} message has invalid source$`), kind: "message-shape", rule: "SESSION-MESSAGE-SHAPE.3" },
  { pattern: new RegExp(`^${SUBJECT} message has invalid content$`), kind: "message-shape", rule: "SESSION-MESSAGE-SHAPE.4" },
  { pattern: new RegExp(`^${SUBJECT} message must have model source$`), kind: "message-shape", rule: "SESSION-MESSAGE-SHAPE.5" },
  { pattern: new RegExp(`^${SUBJECT} message must have tool source$`), kind: "message-shape", rule: "SESSION-MESSAGE-SHAPE.6" },
  { pattern: new RegExp(`^${SUBJECT} message must contain one tool-result block$`), kind: "message-shape", rule: "SESSION-MESSAGE-SHAPE.7" },
  { pattern: new RegExp(`^${SUBJECT} message has mismatched tool call ids$`), kind: "message-shape", rule: "SESSION-MESSAGE-SHAPE.8" },

  // The session header (index.ts validateSessionHeader), in its check order.
  { pattern: /^session header is not a plain JSON record$/, kind: "header", rule: "SESSION-FORMAT-HEADER.1" },
  { pattern: /^session header version must be 0, got /, kind: "version", rule: "SESSION-FORMAT-HEADER.2" },
  { pattern: /^session header id "[^]*" does not match session id "[^]*"$/, kind: "header", rule: "SESSION-FORMAT-HEADER.3" },
  { pattern: /^session header createdAt must be a non-negative safe integer$/, kind: "header", rule: "SESSION-FORMAT-HEADER.4" },
  { pattern: /^session header cwd must be a string$/, kind: "header", rule: "SESSION-FORMAT-HEADER.5" },
  { pattern: /^session header cwd must be an absolute path, got /, kind: "header", rule: "SESSION-FORMAT-HEADER.5" },
  { pattern: /^session header parentSession must be a string$/, kind: "header", rule: "SESSION-FORMAT-HEADER.6" },
  { pattern: /^session header seedLength must be a non-negative safe integer$/, kind: "header", rule: "SESSION-FORMAT-HEADER.7" },
  { pattern: /^session header origin must be "subagent"$/, kind: "header", rule: "SESSION-FORMAT-HEADER.8" },
  { pattern: /^session header delegationDepth must be a non-negative safe integer$/, kind: "header", rule: "SESSION-FORMAT-HEADER.9" },
  { pattern: /^session header agentPreset must be a string$/, kind: "header", rule: "SESSION-FORMAT-HEADER.10" },
];

/** The seed constructor wraps the surface checks of a seed entry: `invalid seed event at index <i>: <inner>`. */
const SEED_WRAPPER = /^invalid seed event at index \d+: ([^]*)$/;

const isNullEntry = (value) => value === null;

export const CRASHES = [
  {
    op: "create",
    pattern: /^seed\.entries is not a function/,
    kind: "envelope",
    rule: "SESSION-SEED-ACCEPTANCE.1",
    when: (request) => request.seed !== null && !Array.isArray(request.seed),
    note: "a seed that is not a list (the constructor calls seed.entries())",
  },
  {
    op: "create",
    pattern: /^Cannot read properties of null \(reading 'type'\)$/,
    kind: "envelope",
    rule: "SESSION-EVENT-ENVELOPE.1",
    when: (request) => Array.isArray(request.seed) && request.seed.some(isNullEntry),
    note: "a null seed entry (the envelope check reads event.type)",
  },
  {
    op: "fold",
    pattern: /^Cannot read properties of null \(reading 'seq'\)$/,
    kind: "envelope",
    rule: "SESSION-EVENT-ENVELOPE.1",
    when: (request) => request.events.some(isNullEntry),
    note: "a null entry (foldSurface reads event.seq)",
  },
  {
    op: "repair",
    pattern: /^Cannot read properties of null \(reading '(?:type|seq)'\)$/,
    kind: "envelope",
    rule: "SESSION-EVENT-ENVELOPE.1",
    when: (request) => request.events.some(isNullEntry),
    note: "a null entry (interruptedTurnClosers reads event.type)",
  },
];

function textOf(error) {
  if (error instanceof Error) return error.message;
  try {
    return String(error);
  } catch {
    return "(an exception that cannot be shown)";
  }
}

function describe(error) {
  const name = error instanceof Error ? error.name : typeof error;
  return `${name}: ${textOf(error)}`;
}

/**
 * The SCP error of one upstream exception: `{kind, message, rule}`.
 * `context` is `{op, request, hasData}`: what the adapter sent, for the entries that need it.
 */
export function mapUpstreamError(error, context) {
  const message = textOf(error);
  if (error instanceof Error && error.constructor === Error) {
    const wrapped = SEED_WRAPPER.exec(message);
    const text = wrapped === null ? message : wrapped[1];
    for (const entry of MESSAGES) {
      if (entry.pattern.test(text) && (entry.when === undefined || entry.when(context))) {
        return { kind: entry.kind, message: `upstream: ${message}`, rule: entry.rule };
      }
    }
  } else if (error instanceof TypeError) {
    for (const entry of CRASHES) {
      if (entry.op === context.op && entry.pattern.test(message) && entry.when(context.request)) {
        return { kind: entry.kind, message: `upstream crashed on input the spec rejects: ${describe(error)}`, rule: entry.rule };
      }
    }
  }
  return { kind: "internal", message: `upstream threw ${describe(error)}`, rule: null };
}
