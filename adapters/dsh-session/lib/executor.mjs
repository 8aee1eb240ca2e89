// SCP v0 requests as calls of @deepseek-ai/dsh-session (spec/10-conformance.md).
//
// The adapter only translates: it checks the protocol's own request shapes
// (SESSION-CONFORMANCE-PROTOCOL.1-.6), calls the upstream, and turns what the upstream returns
// or throws into an answer. Every session rule is the upstream's: nothing here checks an event,
// a header or a surface, and nothing makes up for what the upstream does not check.

import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

import { Session, foldSurface, interruptedTurnClosers, isAppendSurfaceEvent } from "@deepseek-ai/dsh-session";

import { mapUpstreamError } from "./mapping.mjs";

const require = createRequire(import.meta.url);

export const IMPLEMENTATION = "@deepseek-ai/dsh-session";
export const VERSION = JSON.parse(readFileSync(require.resolve(`${IMPLEMENTATION}/package.json`), "utf8")).version;

export const OPS = ["hello", "create", "append", "snapshot", "fold", "repair"];

export const LIMITATIONS = [
  "no x-hooks: the upstream's precommit veto (session/event dispatch listeners) and its reentrancy guard exist only on "
    + "sessions attached to a Cordis SessionStore; Session.create makes a detached session, which publishes nothing, "
    + "so validators, observers, reentrant appends and an injected clock cannot be armed (x- keys are refused as unsupported)",
  "no x-inprocess: requests are JSON text, so values JSON text cannot carry, and mutation of returned objects, "
    + "are not expressible (x-rebuild, x-mutate and x-append are unsupported)",
  "the clock is the upstream's own Date.now(): event time and the default header createdAt are wall-clock readings, "
    + "not the reference's fake clock",
  "append passes surfaceOp and sourceEventSeqs as the upstream's intent; the upstream drops every other intent key, "
    + "ignorable included, so an append cannot log ignorable",
  "fold and repair call the upstream's pure functions foldSurface and interruptedTurnClosers on the events as sent; "
    + "they validate no envelope or message shape",
  "transcript is computed with the upstream's isAppendSurfaceEvent over session.events",
];

export const RULES = {
  requestObject: "SESSION-CONFORMANCE-PROTOCOL.1",
  unsupportedOp: "SESSION-CONFORMANCE-PROTOCOL.2",
  noSession: "SESSION-CONFORMANCE-PROTOCOL.3",
  createShape: "SESSION-CONFORMANCE-PROTOCOL.4",
  eventList: "SESSION-CONFORMANCE-PROTOCOL.5",
  extension: "SESSION-CONFORMANCE-PROTOCOL.6",
  lineBound: "SESSION-CONFORMANCE-PROTOCOL.7",
};

/** A refusal of the protocol layer (the adapter's own check, never a session rule). */
export class ProtocolRefusal extends Error {
  constructor(kind, rule, message) {
    super(message);
    this.kind = kind;
    this.rule = rule;
  }
}

function refuse(kind, rule, message) {
  throw new ProtocolRefusal(kind, rule, message);
}

export function failure(kind, message, rule) {
  return { ok: false, error: { kind, message, rule: rule ?? null } };
}

function isObject(value) {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

const own = (object, key) => Object.hasOwn(object, key);

/** The JSON of what the upstream returned: its frozen objects are plain JSON values already. */
function plain(value) {
  return value === undefined ? null : value;
}

export class Executor {
  constructor() {
    /** The current session; null before a successful create and after a rejected one. */
    this.session = null;
  }

  /** The answer to one parsed request; never throws. */
  run(request) {
    try {
      return this.dispatch(request);
    } catch (error) {
      if (error instanceof ProtocolRefusal) return failure(error.kind, `${error.rule}: ${error.message}`, error.rule);
      return failure("internal", `adapter error: ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}`, null);
    }
  }

  dispatch(request) {
    // SESSION-CONFORMANCE-PROTOCOL.1: without an op there is nothing to dispatch on.
    if (!isObject(request) || typeof request.op !== "string" || !own(request, "op")) {
      refuse("json", RULES.requestObject, "a request is a JSON object with a string op");
    }
    const { op } = request;
    // SESSION-CONFORMANCE-PROTOCOL.3: a rejected create leaves no session, whatever rejects it (its x- keys and
    // its own shape included): the appends and snapshots after it are refused, never applied to the old one.
    if (op === "create") this.session = null;
    // SESSION-CONFORMANCE-PROTOCOL.6: x-time belongs to x-hooks, which this adapter does not offer.
    if (own(request, "x-time")) refuse("unsupported", RULES.extension, "extension key \"x-time\" is not offered (no extensions)");
    // SESSION-CONFORMANCE-PROTOCOL.2: an op the adapter does not implement (every x- op included).
    if (!OPS.includes(op)) refuse("unsupported", RULES.unsupportedOp, `unsupported op ${JSON.stringify(op)}`);
    // SESSION-CONFORMANCE-PROTOCOL.8: an x- key is refused before the op's own shape (an append checks its
    // session first, as spec/04 orders it).
    if (op !== "append") this.noExtensions(request);
    return this[op](request);
  }

  /**
   * SESSION-CONFORMANCE-PROTOCOL.6: this adapter offers no extension, so every x- key is refused, in
   * the reference executor's order: before the shape of every op but append, which checks its
   * session first.
   */
  noExtensions(request) {
    const extension = Object.keys(request).find((key) => key.startsWith("x-"));
    if (extension !== undefined) {
      refuse("unsupported", RULES.extension, `extension key ${JSON.stringify(extension)} is not offered (no extensions)`);
    }
  }

  hello(request) {
    return {
      ok: true, implementation: IMPLEMENTATION, version: VERSION, profile: "scp-0", protocol: 0,
      ops: [...OPS], extensions: [], limitations: [...LIMITATIONS],
    };
  }

  create(request) {
    // SESSION-CONFORMANCE-PROTOCOL.4: exactly id, seed and header, so a misspelt key is caught.
    const extra = Object.keys(request).filter((key) => !["op", "id", "seed", "header"].includes(key) && !key.startsWith("x-"));
    if (extra.length > 0) refuse("envelope", RULES.createShape, `create has unknown keys ${JSON.stringify(extra.sort())}`);
    if (!own(request, "id") || !own(request, "seed") || !own(request, "header")) {
      refuse("envelope", RULES.createShape, "create carries id, seed and header (null when absent)");
    }
    let session;
    try {
      session = Session.create(request.id, request.seed ?? undefined, request.header ?? undefined);
    } catch (error) {
      return this.upstreamFailure(error, { op: "create", request });
    }
    this.session = session;
    return { ok: true, firstLiveSeq: session.firstLiveSeq, seq: session.seq };
  }

  current() {
    // SESSION-CONFORMANCE-PROTOCOL.3: append and snapshot need a session made by a successful create.
    if (this.session === null) refuse("unsupported", RULES.noSession, "no session: send create first");
    return this.session;
  }

  append(request) {
    const session = this.current();
    this.noExtensions(request);
    // The intent is what the request holds besides op, type and data; the upstream reads
    // surfaceOp and sourceEventSeqs from it (when not undefined) and drops the rest.
    // Keys are defined, not assigned: a "__proto__" key stays an own key and sets no prototype
    // (an inherited surfaceOp would otherwise reach the upstream).
    const intent = {};
    for (const key of Object.keys(request)) {
      if (key !== "op" && key !== "type" && key !== "data") {
        Object.defineProperty(intent, key, { value: request[key], enumerable: true, writable: true, configurable: true });
      }
    }
    const hasData = own(request, "data");
    let event;
    try {
      event = Object.keys(intent).length > 0
        ? session.append(request.type, request.data, intent)
        : session.append(request.type, request.data);
    } catch (error) {
      return this.upstreamFailure(error, { op: "append", request, hasData });
    }
    return { ok: true, event };
  }

  snapshot(request) {
    const session = this.current();
    let view = "events";
    try {
      const events = session.events;
      view = "surface";
      const surface = { nodes: [...session.surface.nodes], replaceGeneration: session.surface.replaceGeneration };
      view = "deriveMessages()";
      const messages = session.deriveMessages();
      view = "requestHeader()";
      const requestHeader = plain(session.requestHeader());
      view = "requestContext()";
      const requestContext = plain(session.requestContext());
      view = "transcript";
      const transcript = events.filter((event) => isAppendSurfaceEvent(event)).map((event) => event.seq);
      return {
        ok: true, events, surface, messages, firstLiveSeq: session.firstLiveSeq, seq: session.seq,
        header: session.header, transcript, requestHeader, requestContext,
      };
    } catch (error) {
      const answer = this.upstreamFailure(error, { op: "snapshot", request: {} });
      answer.error.message = `snapshot (${view}): ${answer.error.message}`;
      return answer;
    }
  }

  events(request) {
    // SESSION-CONFORMANCE-PROTOCOL.5: fold and repair carry exactly events, a list.
    const extra = Object.keys(request).filter((key) => key !== "op" && key !== "events" && !key.startsWith("x-"));
    if (extra.length > 0) refuse("envelope", RULES.eventList, `${request.op} has unknown keys ${JSON.stringify(extra.sort())}`);
    if (!Array.isArray(request.events)) refuse("envelope", RULES.eventList, `${request.op} carries events, a list`);
    return request.events;
  }

  fold(request) {
    const events = this.events(request);
    try {
      const { nodes, replacements } = foldSurface(events);
      return { ok: true, nodes, replacements };
    } catch (error) {
      return this.upstreamFailure(error, { op: "fold", request });
    }
  }

  repair(request) {
    const events = this.events(request);
    try {
      return { ok: true, closers: interruptedTurnClosers(events) };
    } catch (error) {
      return this.upstreamFailure(error, { op: "repair", request });
    }
  }

  upstreamFailure(error, context) {
    const { kind, message, rule } = mapUpstreamError(error, context);
    return failure(kind, message, rule);
  }
}
