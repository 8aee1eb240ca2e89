// The SCP storage capability (/work/storage-protocol.md, spec/10) over the upstream's persistence
// packages, on top of the session adapter's executor (create/append/snapshot/fold/repair as there).
//
// load        -> backend.loadStored(id) (the physical read: events, torn marker) and backend.inspect(id)
//                (the coordinator's gate: identity, version, legacy upgrades, vocabulary, closers, the
//                Session rebuilt from the log; commits nothing)
// repair-file -> the same read, then backend.load(id), which commits the torn-tail cut and closers
// save        -> backend.create(header) and backend.append(id, events) of the current session
// attach      -> save, and every later successful append is backend.append(id, [event]), awaited
//                (the backend's fsync / COMMIT) before its answer is written
//
// Nothing here judges a log: every verdict is the upstream's, mapped by lib/mapping.mjs.

import { existsSync, readFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";

import { decodeStorageRecord } from "@deepseek-ai/dsh-session";

import { Executor, ProtocolRefusal, RULES, failure } from "../../dsh-session/lib/executor.mjs";

import {
  detectFormat, isRegularFile, linkIn, linkOut, logicalText, openBackend, peekIdentity, siblingRoot, textLines,
} from "./backends.mjs";
import { mapStorageError } from "./mapping.mjs";

const require = createRequire(import.meta.url);
const versionOf = (name) => JSON.parse(readFileSync(require.resolve(`${name}/package.json`), "utf8")).version;

export const JSONL_PACKAGE = "@deepseek-ai/dsh-session-persistence-jsonl";
export const SQLITE_PACKAGE = "@deepseek-ai/dsh-session-persistence-sqlite";
export const JSONL_VERSION = versionOf(JSONL_PACKAGE);
export const SQLITE_VERSION = versionOf(SQLITE_PACKAGE);

export const STORAGE_OPS = ["load", "save", "attach", "repair-file"];
/** The backends the JSONL package writes and reads (compression "none" and "zstd"). */
export const JSONL_FORMATS = ["jsonl", "jsonl.zstd"];

export const STORAGE_LIMITATIONS = [
  `storage: jsonl and jsonl.zstd are ${JSONL_PACKAGE} ${JSONL_VERSION} (compression "none" / "zstd", packChunks on); `
    + "it keeps a log at <root>/--<projectKey(cwd)>--/<encodeSegment(id)>/session.jsonl[.zstd], so the adapter works in a "
    + "fresh root beside the given path and hard-links the file in (load, repair-file) or out (save, attach)",
  `storage: sqlite is not declared by default: ${SQLITE_PACKAGE} ${SQLITE_VERSION} writes and reads SQLite schema version 14 `
    + "(no ignorable column, data and source_event_seqs as JSON TEXT, no packed rows), not the schema 17 of spec/07, and each "
    + "side refuses the other's database by its user_version (bump-and-reject); --with-sqlite declares it anyway",
  "storage: load is the coordinator's inspect (commits nothing); the upstream keeps a torn tail as a byte offset, so "
    + "torn.line is counted by the adapter (zstd: the logical lines, each decoded by the upstream's decodeStorageRecord), "
    + "and torn has no reason (the upstream gives none)",
  "storage: the upstream materialises a log on its first event, so a session without events cannot be saved, and "
    + "attaching one writes the log at the first append (linked to the path before that append is answered)",
  "storage: an append whose durable write fails is already in the in-memory session (the upstream's Session is detached "
    + "from the store); its answer is the write's failure",
];

function refuse(kind, rule, message) {
  throw new ProtocolRefusal(kind, rule, message);
}

/** SESSION-CONFORMANCE-PROTOCOL.14: the upstream's log is published by link(2), which never replaces. */
function exists(path) {
  return failure("header", `SESSION-CONFORMANCE-PROTOCOL.14: ${path} exists: link(2) never replaces a log`, "SESSION-CONFORMANCE-PROTOCOL.14");
}

function storageFailure(error, format) {
  const mapped = mapStorageError(error);
  // A JSONL log's format version is its header line's (the coordinator's check names no line).
  if (mapped.kind === "version" && mapped.line === undefined && format !== "sqlite") mapped.line = 1;
  const answer = failure(mapped.kind, mapped.message, mapped.rule);
  if (mapped.line !== undefined) answer.error.line = mapped.line;
  if (mapped.seq !== undefined) answer.error.seq = mapped.seq;
  return answer;
}

/** The keys a storage request carries besides op, each checked for its JSON type. */
const SHAPES = {
  load: { path: "string", session: "string|null" },
  "repair-file": { path: "string", session: "string|null" },
  save: { path: "string", backend: "string" },
  attach: { path: "string", backend: "string" },
};

function checkShape(request) {
  const shape = SHAPES[request.op];
  const extra = Object.keys(request).filter((key) => key !== "op" && !(key in shape) && !key.startsWith("x-"));
  if (extra.length > 0) refuse("envelope", null, `${request.op} has unknown keys ${JSON.stringify(extra.sort())}`);
  for (const [key, type] of Object.entries(shape)) {
    const value = request[key];
    const ok = type === "string" ? typeof value === "string" && value.length > 0
      : value === null || (typeof value === "string" && value.length > 0);
    if (!Object.hasOwn(request, key) || !ok) refuse("envelope", null, `${request.op} carries ${key}, ${type === "string" ? "a non-empty string" : "a string or null"}`);
  }
}

/**
 * Keep what the backend's `loadStored` returns to the coordinator (the physical read: stored
 * events, torn marker) in the list returned: inspect and load return only the balanced log.
 * The backend still answers every call itself.
 */
function recordReads(backend) {
  const reads = [];
  const loadStored = backend.loadStored.bind(backend);
  backend.loadStored = async (...args) => {
    const stored = await loadStored(...args);
    reads.push(stored);
    return stored;
  };
  return reads;
}

/** One logical line through the upstream's own record decoder: its events, or what it throws. */
function decodeLine(line) {
  return decodeStorageRecord(JSON.parse(Buffer.from(line).toString("utf8")));
}

/**
 * The line of a zstd log's logical text where the record holding event `seq` starts: the upstream
 * keeps a torn frame's byte offset, not a line, so the lines are counted here, each decoded by the
 * upstream's decoder (a packed row holds several events). Null when the text does not reach it.
 */
async function lineOfSeq(path, format, seq) {
  const lines = textLines(await logicalText(path, format));
  let events = 0;
  for (let i = 1; i < lines.length; i += 1) {
    if (events >= seq) return i + 1;
    try {
      events += decodeLine(lines[i]).length;
    } catch {
      return i + 1;
    }
  }
  return events >= seq ? lines.length + 1 : null;
}

/**
 * The upstream's scanner reports a bad JSON line and a malformed packed row with one message
 * (`unparsable committed event at line <n>`: its try holds JSON.parse and decodeStorageRecord). The
 * line is given to the upstream's decoder again to learn which of the two threw: a malformed row
 * (`malformed <tag> storage row: ...`) is `envelope`, text that is not JSON stays `json`.
 */
async function unparsableKind(path, format, answer) {
  if (answer.error.kind !== "json" || !/unparsable committed event at line \d+$/.test(answer.error.message) || format === "sqlite") return answer;
  const line = textLines(await logicalText(path, format))[answer.error.line - 1];
  if (line === undefined) return answer;
  try {
    JSON.parse(Buffer.from(line).toString("utf8"));
  } catch {
    return answer;
  }
  try {
    decodeLine(line);
  } catch (error) {
    if (/^malformed [a-z-]+ storage row: /.test(String(error?.message))) {
      answer.error.kind = "envelope";
      answer.error.message = `${answer.error.message} (the upstream's decoder on that line: ${error.message})`;
    }
  }
  return answer;
}

/** The line the cut starts at in a raw JSONL file: 1 + the newlines before the byte offset kept. */
async function tornLine(path, offset) {
  const bytes = await readFile(path);
  let line = 1;
  for (let i = bytes.indexOf(0x0a); i !== -1 && i < offset; i = bytes.indexOf(0x0a, i + 1)) line += 1;
  return line;
}

export class StorageExecutor extends Executor {
  /** @param {string[]} formats the backends declared in hello (FORMATS names) */
  constructor(formats = JSONL_FORMATS) {
    super();
    this.formats = [...formats];
    /** The save the session stays attached to: {handle, scratch, id}; null when detached. */
    this.attached = null;
  }

  /** The answer to one parsed request; never throws. Storage ops, and appends while attached, wait for the disk. */
  async runAsync(request) {
    const isStorage = request !== null && typeof request === "object" && !Array.isArray(request)
      && STORAGE_OPS.includes(request.op) && Object.hasOwn(request, "op");
    try {
      if (isStorage) return await this.storage(request);
      if (request?.op === "create" || request?.op === "hello") {
        if (request.op === "create") await this.detach();
      }
      const answer = this.run(request);
      if (request?.op === "hello" && answer.ok) return this.helloStorage(answer);
      if (request?.op === "append" && answer.ok && this.attached !== null) return await this.durable(answer);
      return answer;
    } catch (error) {
      if (error instanceof ProtocolRefusal) return failure(error.kind, error.rule === null ? error.message : `${error.rule}: ${error.message}`, error.rule);
      return failure("internal", `adapter error: ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}`, null);
    }
  }

  /**
   * The session adapter's hello, named after the persistence packages: `sessionspec results` keys
   * its table by implementation, and this run is not the session core's row (adapters/dsh-session).
   */
  helloStorage(answer) {
    const sqlite = this.formats.includes("sqlite");
    return {
      ...answer,
      implementation: sqlite ? `${JSONL_PACKAGE}+sqlite` : JSONL_PACKAGE,
      version: sqlite ? `${JSONL_VERSION}+${SQLITE_VERSION}` : JSONL_VERSION,
      ops: [...answer.ops, ...STORAGE_OPS],
      storage: [...this.formats],
      limitations: [`session ops: ${answer.implementation} ${answer.version}, through adapters/dsh-session/lib`, ...answer.limitations, ...STORAGE_LIMITATIONS],
    };
  }

  async storage(request) {
    // SESSION-CONFORMANCE-PROTOCOL.6: this adapter offers no extension; x- keys first, as on every op but append.
    this.noExtensions(request);
    checkShape(request);
    switch (request.op) {
      case "load": return this.loadFile(request, false);
      case "repair-file": return this.loadFile(request, true);
      default: return this.save(request, request.op === "attach");
    }
  }

  declared(format) {
    if (!this.formats.includes(format)) {
      refuse("unsupported", "SESSION-CONFORMANCE-PROTOCOL.12", `backend ${JSON.stringify(format)} is not declared (storage: ${JSON.stringify(this.formats)})`);
    }
  }

  /** load and repair-file: the upstream's read of the file at `path`, and for repair its commit. */
  async loadFile(request, commit) {
    const format = await detectFormat(request.path);
    this.declared(format);
    if (format === "sqlite" && !existsSync(request.path)) {
      // SESSION-CONFORMANCE-PROTOCOL.13: the upstream's backend would create an empty database at the path.
      return failure("header", `SESSION-CONFORMANCE-PROTOCOL.13: ${request.path}: no such file (the upstream's SQLite backend would create a database there)`, "SESSION-CONFORMANCE-PROTOCOL.13");
    }
    if (!await isRegularFile(request.path)) {
      return failure("internal", `${request.path}: not a regular file; the upstream reads a log with readFile/DatabaseSync, which would block or fail on it`, null);
    }
    let scratch = null;
    let handle = null;
    try {
      let id;
      if (format === "sqlite") {
        handle = await openBackend(format, request.path);
        id = request.session ?? await this.onlySession(handle.backend);
      } else {
        scratch = await siblingRoot(request.path);
        handle = await openBackend(format, scratch.root);
        const identity = await peekIdentity(request.path, format);
        if (request.session !== null) identity.id = request.session;
        // A missing file is not linked: the backend is asked for the session all the same and
        // answers that it is not there (SESSION-CONFORMANCE-PROTOCOL.13).
        if (existsSync(request.path)) await linkIn(handle.backend, request.path, identity);
        id = identity.id;
      }
      const reads = recordReads(handle.backend);
      const view = commit ? await handle.backend.load(id) : await handle.backend.inspect(id);
      // The physical read the coordinator made (its first: a repair reloads after committing).
      const stored = reads[0];
      if (stored === undefined) throw new Error(`session "${id}" not found`);
      const closers = view.events.slice(stored.events.length);
      const torn = await this.tornOf(format, request.path, stored);
      if (commit) return { ok: true, closers, torn };
      return { ok: true, format, header: view.meta, events: view.events.slice(0, stored.events.length), torn, closers };
    } catch (error) {
      if (error instanceof ProtocolRefusal) throw error;
      return unparsableKind(request.path, format, storageFailure(error, format));
    } finally {
      await handle?.close().catch(() => {});
      await scratch?.drop().catch(() => {});
    }
  }

  async onlySession(backend) {
    const ids = (await backend.list()).map((header) => header.id);
    if (ids.length !== 1) refuse("envelope", null, `the database holds ${ids.length} sessions: name one with session`);
    return ids[0];
  }

  async tornOf(format, path, stored) {
    const marker = stored.tornMarker;
    if (marker === undefined) return null;
    if (format === "sqlite") return { line: null, seq: marker };
    // The first seq the log does not hold: after the events recovered from a torn zstd frame, which
    // load returns and repair writes again.
    const seq = stored.events.length;
    return { line: format === "jsonl" ? await tornLine(path, marker.truncateTo) : await lineOfSeq(path, format, seq), seq };
  }

  /** save and attach: the current session written by the upstream as a new log at `path`. */
  async save(request, attach) {
    const session = this.current();
    this.declared(request.backend);
    // A new attach replaces the attached log; a save leaves it attached.
    if (attach) await this.detach();
    const header = session.header;
    const events = session.events;
    // The upstream materialises a log with its first batch (create() writes nothing). An attach of a
    // session without events is its create() alone: the log appears at the first append, which is
    // linked out to the path before it is answered. A save of one has nothing to write.
    const lazy = attach && events.length === 0;
    if (events.length === 0 && !attach) {
      return failure("internal", "the upstream materialises a log on its first event: a session without events is not written", null);
    }
    if (lazy && existsSync(request.path)) return exists(request.path);
    let scratch = null;
    let handle = null;
    try {
      if (request.backend === "sqlite") {
        handle = await openBackend("sqlite", request.path);
      } else {
        scratch = await siblingRoot(request.path);
        handle = await openBackend(request.backend, scratch.root);
      }
      await handle.backend.create(header);
      if (!lazy) {
        await handle.backend.append(header.id, events);
        if (scratch !== null) await linkOut(handle.backend.locate(header).path, request.path);
      }
      if (attach) {
        this.attached = { handle, scratch, header, path: request.path, linked: !lazy || scratch === null };
        handle = null;
        scratch = null;
      }
      return { ok: true };
    } catch (error) {
      if (error?.code === "EEXIST") return exists(request.path);
      return storageFailure(error);
    } finally {
      await handle?.close().catch(() => {});
      await scratch?.drop().catch(() => {});
    }
  }

  /** An append the in-memory session took, made durable in the attached log before it is answered. */
  async durable(answer) {
    const attached = this.attached;
    try {
      await attached.handle.backend.append(attached.header.id, [answer.event]);
      if (!attached.linked) {
        await linkOut(attached.handle.backend.locate(attached.header).path, attached.path);
        attached.linked = true;
      }
      return answer;
    } catch (error) {
      if (error?.code === "EEXIST") return exists(attached.path);
      return storageFailure(error);
    }
  }

  /** Close the attached log, if any (a new create or attach, or the end of input). */
  async detach() {
    const attached = this.attached;
    this.attached = null;
    if (attached === null) return;
    await attached.handle.close().catch(() => {});
    await attached.scratch?.drop().catch(() => {});
  }
}
