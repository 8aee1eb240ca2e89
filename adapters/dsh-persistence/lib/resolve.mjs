// One copy of every package: the sibling adapter's lib, imported by relative path, resolves its
// packages from this adapter's node_modules.
//
// Node resolves a bare specifier (`@deepseek-ai/dsh-session`) from the directory of the module that
// imports it, so `../../dsh-session/lib/executor.mjs` would look in adapters/dsh-session/node_modules
// (installed or not) and load a second copy of the session core beside the one the persistence
// packages load. This hook resolves every bare specifier imported from inside adapters/dsh-session/
// as if this adapter's package.json had imported it, so the executor's Session and the
// persistence coordinator's SessionStore are the same module. It must be installed before the
// sibling's modules are linked: testee.mjs and the tests import them dynamically after it.

import { createRequire, registerHooks } from "node:module";
import { pathToFileURL } from "node:url";

const SIBLING = new URL("../../dsh-session/", import.meta.url).href;
const HERE = new URL("../package.json", import.meta.url).href;
const hereRequire = createRequire(HERE);

/** A specifier Node looks up in node_modules (not relative, absolute, a URL or a builtin). */
export function isBare(specifier) {
  return !specifier.startsWith(".") && !specifier.startsWith("/") && !/^[a-z][a-z0-9+.-]*:/i.test(specifier);
}

let installed = false;

/** Install the hook once per process. */
export function installResolution() {
  if (installed) return;
  installed = true;
  registerHooks({
    resolve(specifier, context, nextResolve) {
      if (isBare(specifier) && context.parentURL?.startsWith(SIBLING)) {
        // require.resolve in the sibling (its package.json lookup) resolves from its own parent path,
        // not from parentURL: it is resolved here with this adapter's require.
        if (context.conditions?.includes("require") && !specifier.startsWith("node:")) {
          return { url: pathToFileURL(hereRequire.resolve(specifier)).href, shortCircuit: true };
        }
        return nextResolve(specifier, { ...context, parentURL: HERE });
      }
      return nextResolve(specifier, context);
    },
  });
}
