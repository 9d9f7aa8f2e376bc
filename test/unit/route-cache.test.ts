// The memoised route compilation returns the same compiled pattern for the same input and still
// matches exactly like path-to-regexp.
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { memoiseRouteCompilation } from '../../server/src/http/route-cache.js';

const require = createRequire(import.meta.url);
type Compiled = { regexp: RegExp; keys: { name: string }[] };
const ptr = require('path-to-regexp') as { pathToRegexp: (p: string, o?: object) => Compiled };

describe('memoiseRouteCompilation', () => {
  it('compiles a pattern once per (path, options) and keeps matching right', () => {
    memoiseRouteCompilation();
    memoiseRouteCompilation(); // idempotent
    const a = ptr.pathToRegexp('/admin/v1/apps/:app_id/keys', { sensitive: false, strict: false });
    const b = ptr.pathToRegexp('/admin/v1/apps/:app_id/keys', { sensitive: false, strict: false });
    expect(b).toBe(a);
    expect(ptr.pathToRegexp('/admin/v1/apps/:app_id/keys', { sensitive: true, strict: false })).not.toBe(a);
    expect(a.keys.map((k) => k.name)).toEqual(['app_id']);
    expect(a.regexp.exec('/admin/v1/apps/123/keys')?.[1]).toBe('123');
    expect(a.regexp.exec('/admin/v1/apps/123/keys')?.[1]).toBe('123'); // no state kept between matches
    expect(a.regexp.exec('/admin/v1/apps/123')).toBeNull();
  });
});
