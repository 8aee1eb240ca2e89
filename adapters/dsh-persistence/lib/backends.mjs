// The upstream's persistence backends, opened on a file the runner names.
//
// Both backends are Cordis services over the shared PersistenceCoordinator, which needs the
// session store (`ctx.sessions`) to rebuild a Session from a log. Each storage op gets its own
// Context with a SessionStore and one backend, disposed when the op is done (an attached save
// keeps its own until the next create, attach or EOF).
//
// SQLite takes a database path: the runner's path is given as is. JSONL takes a root directory
// and keeps each session at `<root>/--<projectKey(cwd)>--/<encodeSegment(id)>/session.jsonl[.zstd]`,
// which only its own `locate(header)` computes. So a JSONL op works in a fresh root beside the
// runner's file (same file system) and joins the two by a hard link: a log to read is linked
// into the root where the backend looks for it (its repair truncates and appends in place, so it
// repairs the runner's file), and a log the backend wrote is linked out to the runner's path
// (link(2) never replaces: an existing file is refused). Every later append goes to the same inode.

import { randomBytes } from "node:crypto";
import { createReadStream } from "node:fs";
import { link, lstat, mkdir, open, readFile, readdir, rm } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { constants as zlibConstants, createZstdDecompress, zstdDecompressSync } from "node:zlib";

import { Context } from "@deepseek-ai/cordis";
import { SessionStore } from "@deepseek-ai/dsh-session";
import { JsonlSessionPersistence } from "@deepseek-ai/dsh-session-persistence-jsonl";
import { SessionPersistenceSqlite } from "@deepseek-ai/dsh-session-persistence-sqlite";

export const ZSTD_MAGIC = Buffer.from([0x28, 0xb5, 0x2f, 0xfd]);
export const SQLITE_MAGIC = Buffer.from("SQLite format 3\0", "latin1");

/** The format a file holds: its first bytes, else its name (as sessionspec.storage.formats.detect). */
export async function detectFormat(path) {
  let head = Buffer.alloc(0);
  try {
    const handle = await open(path, "r");
    try {
      const { buffer, bytesRead } = await handle.read(Buffer.alloc(16), 0, 16, 0);
      head = buffer.subarray(0, bytesRead);
    } finally {
      await handle.close();
    }
  } catch {
    // Missing or unreadable: the name decides, and the backend's own read reports the rest.
  }
  if (head.subarray(0, 4).equals(ZSTD_MAGIC)) return "jsonl.zstd";
  if (head.equals(SQLITE_MAGIC)) return "sqlite";
  return byName(path);
}

/** The format a name says (sessionspec.storage.formats.by_name), jsonl when it says none. */
export function byName(path) {
  const name = basename(path).toLowerCase();
  if (name.endsWith(".jsonl.zstd") || name.endsWith(".zst") || name.endsWith(".zstd")) return "jsonl.zstd";
  if (name.endsWith(".sqlite") || name.endsWith(".sqlite3") || name.endsWith(".db")) return "sqlite";
  return "jsonl";
}

/** The first line of a log as text (the header), or null: raw JSONL read, zstd frames decoded until a newline. */
async function firstLine(path, format) {
  const source = createReadStream(path, { highWaterMark: 64 * 1024 });
  const stream = format === "jsonl.zstd" ? source.pipe(createZstdDecompress()) : source;
  // pipe() does not pass on the source's errors (a missing file): the loop below would wait for ever.
  if (stream !== source) source.on("error", (error) => stream.destroy(error));
  const pieces = [];
  let length = 0;
  try {
    for await (const chunk of stream) {
      const newline = chunk.indexOf(0x0a);
      if (newline !== -1) {
        pieces.push(chunk.subarray(0, newline));
        return Buffer.concat(pieces).toString("utf8");
      }
      pieces.push(chunk);
      length += chunk.length;
      if (length > 64 * 1024 * 1024) return null;
    }
    return null;
  } catch {
    return null;
  } finally {
    source.destroy();
    stream.destroy();
  }
}

/**
 * A log's logical JSONL text as bytes: the file itself, or its zstd frames decoded (a torn final
 * frame as far as it decodes, with the flush the upstream's own recovery uses). Used only to
 * locate a line the upstream names by count or seq; never to judge it.
 */
export async function logicalText(path, format) {
  const bytes = await readFile(path);
  if (format !== "jsonl.zstd") return bytes;
  try {
    return zstdDecompressSync(bytes, { finishFlush: zlibConstants.ZSTD_e_flush });
  } catch {
    const pieces = [];
    const stream = createZstdDecompress({ finishFlush: zlibConstants.ZSTD_e_flush });
    const done = new Promise((resolve) => {
      stream.on("data", (chunk) => pieces.push(chunk));
      stream.on("end", resolve);
      stream.on("error", resolve);
    });
    stream.end(bytes);
    await done;
    return Buffer.concat(pieces);
  }
}

/** The lines of a logical text (without their newlines), a final fragment included. */
export function textLines(bytes) {
  const lines = [];
  let start = 0;
  for (let i = bytes.indexOf(0x0a); i !== -1; i = bytes.indexOf(0x0a, start)) {
    lines.push(bytes.subarray(start, i));
    start = i + 1;
  }
  if (start < bytes.length) lines.push(bytes.subarray(start));
  return lines;
}

/**
 * The header's id and cwd as the backend's locator needs them, read without judging anything:
 * whatever the line holds, the backend reads the file itself and gives its own verdict. A line
 * that names no string id gets a stand-in id (the backend then refuses the header, or the id).
 */
export async function peekIdentity(path, format) {
  const line = await firstLine(path, format);
  let header = null;
  try {
    header = line === null ? null : JSON.parse(line);
  } catch {
    header = null;
  }
  const record = header !== null && typeof header === "object" && !Array.isArray(header) ? header : {};
  return {
    id: typeof record.id === "string" && record.id.length > 0 ? record.id : "unreadable-header",
    cwd: typeof record.cwd === "string" ? record.cwd : undefined,
  };
}

/** A Context with the session store and one backend; `close()` disposes both (flushes, closes the database). */
export async function openBackend(format, where) {
  const ctx = new Context();
  await ctx.plugin(SessionStore);
  const config = format === "sqlite"
    ? { path: where, writeBatchMaxDelayMs: 1 }
    : { root: where, compression: format === "jsonl.zstd" ? "zstd" : "none", writeBatchMaxDelayMs: 1 };
  const plugin = format === "sqlite" ? SessionPersistenceSqlite : JsonlSessionPersistence;
  const fiber = ctx.plugin(plugin, config);
  await fiber;
  const backend = ctx.get("sessionPersistence");
  if (backend === undefined) throw new Error(`the ${format} backend did not start`);
  return {
    ctx,
    backend,
    async close() {
      await fiber.dispose?.();
    },
  };
}

const SCRATCH = /^\.dsh-persistence-(\d+)-[0-9a-f]{12}$/;

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return error?.code === "EPERM";
  }
}

/** Remove the scratch roots a killed testee left beside `path` (its pid is in the name, and gone). */
async function removeStaleRoots(directory) {
  let names = [];
  try {
    names = await readdir(directory);
  } catch {
    return;
  }
  for (const name of names) {
    const found = SCRATCH.exec(name);
    if (found !== null && Number(found[1]) !== process.pid && !alive(Number(found[1]))) {
      await rm(join(directory, name), { recursive: true, force: true }).catch(() => {});
    }
  }
}

/**
 * A fresh root beside `path` (so a hard link between them works), removed by `drop()`. An
 * attached log keeps its root until it is detached, so a testee killed while attached leaves it:
 * the next testee to work in that directory removes it.
 */
export async function siblingRoot(path) {
  await removeStaleRoots(dirname(path));
  const root = join(dirname(path), `.dsh-persistence-${process.pid}-${randomBytes(6).toString("hex")}`);
  await mkdir(root, { recursive: false, mode: 0o700 });
  return {
    root,
    async drop() {
      await rm(root, { recursive: true, force: true });
    },
  };
}

/** Link the runner's file where the JSONL backend looks for session `identity` in `root`. */
export async function linkIn(backend, path, identity) {
  let target;
  try {
    target = backend.locate({ version: 0, id: identity.id, createdAt: 0, ...(identity.cwd === undefined ? {} : { cwd: identity.cwd }) }).path;
  } catch {
    // A cwd the locator cannot map: the backend is asked for the id alone and judges the header itself.
    target = backend.locate({ version: 0, id: identity.id, createdAt: 0 }).path;
    identity.cwd = undefined;
  }
  await mkdir(dirname(target), { recursive: true });
  await link(path, target);
  return target;
}

/** Link what the backend wrote out to the runner's path; an existing file is refused by link(2). */
export async function linkOut(written, path) {
  await link(written, path);
  const directory = await open(dirname(path), "r");
  try {
    await directory.sync();
  } finally {
    await directory.close();
  }
}

/** Whether `path` is a regular file (a FIFO or device would block or never end the backend's readFile). */
export async function isRegularFile(path) {
  try {
    return (await lstat(path)).isFile();
  } catch {
    return true; // missing: the backend reports it
  }
}

