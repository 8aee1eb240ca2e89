// lib/resolve.mjs: the session adapter's lib, imported by relative path, loads this adapter's packages.

import assert from "node:assert/strict";
import { registerHooks } from "node:module";
import { test } from "node:test";

import { installResolution, isBare } from "../lib/resolve.mjs";

test("bare specifiers are the ones node_modules answers", () => {
  assert.deepEqual(["@deepseek-ai/dsh-session", "@streamparser/json/tokenizer.js", "./x.mjs", "../y", "/abs", "node:fs", "file:///z"].map(isBare),
    [true, true, false, false, false, false, false]);
});

test("the sibling's imports resolve into this adapter's node_modules: one copy of the session core", async () => {
  installResolution();
  const seen = [];
  // This hook sees every resolution of a package, after the redirect rewrote its parent.
  registerHooks({
    resolve(specifier, context, nextResolve) {
      const resolved = nextResolve(specifier, context);
      if (specifier.startsWith("@deepseek-ai/") || specifier.startsWith("@streamparser/")) seen.push([context.parentURL, resolved.url]);
      return resolved;
    },
  });
  await import("../../dsh-session/lib/executor.mjs");
  await import("../../dsh-session/lib/reader.mjs");
  const urls = seen.map(([, url]) => url);
  for (const name of ["@deepseek-ai/dsh-session/lib/", "@streamparser/json/dist/mjs/tokenizer.js"]) {
    assert.ok(urls.some((url) => url.includes(name)), `${name} was imported: ${JSON.stringify(urls)}`);
  }
  for (const url of urls) assert.ok(url.includes("/adapters/dsh-persistence/node_modules/"), url);
});
