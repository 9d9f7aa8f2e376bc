// express-openapi-validator (5.6) finds a request's contract route by compiling a path-to-regexp
// pattern for every route of the contract on every request: about 8 % of the server's time on the
// ingestion path. The compilation is a pure function of (path, options), so it is memoised here,
// once, on the shared path-to-regexp module the validator calls through.
import { createRequire } from 'node:module';

type Compile = (path: unknown, options?: object) => unknown;
const require = createRequire(import.meta.url);
const pathToRegexp = require('path-to-regexp') as { pathToRegexp: Compile & { memoised?: true } };

export function memoiseRouteCompilation(): void {
  const original = pathToRegexp.pathToRegexp;
  if (original.memoised) return;
  const cache = new Map<string, unknown>();
  const memoised: Compile & { memoised?: true } = (path, options) => {
    if (typeof path !== 'string') return original(path, options);
    const o = (options ?? {}) as Record<string, unknown>;
    // The validator passes only these two flags; anything else is keyed in full.
    const flags = Object.keys(o).every((k) => k === 'sensitive' || k === 'strict')
      ? `${o.sensitive ? 's' : ''}${o.strict ? 't' : ''}`
      : JSON.stringify(o);
    const key = `${path}\u0000${flags}`;
    let compiled = cache.get(key);
    if (compiled === undefined) {
      compiled = original(path, options);
      if (cache.size < 10_000) cache.set(key, compiled);
    }
    return compiled;
  };
  memoised.memoised = true;
  pathToRegexp.pathToRegexp = memoised;
}
