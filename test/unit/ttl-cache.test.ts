// The map under the key and app caches (server/src/admin/ttl-cache.ts): entries live a fixed time by
// the given clock, concurrent misses share one load, and a failed load is not kept.
import { describe, expect, it } from 'vitest';
import { TtlCache } from '../../server/src/admin/ttl-cache.js';

function cacheWithClock(ttlMs: number) {
  let now = 1_000_000;
  const cache = new TtlCache<string>(() => new Date(now), ttlMs);
  return { cache, advance: (ms: number) => (now += ms) };
}

describe('TtlCache', () => {
  it('keeps a value until its time is up by the clock it was given, then loads again', async () => {
    const { cache, advance } = cacheWithClock(5_000);
    let loads = 0;
    const load = async () => `v${++loads}`;
    expect(await cache.get('k', load)).toBe('v1');
    advance(4_999);
    expect(await cache.get('k', load)).toBe('v1');
    advance(1);
    expect(await cache.get('k', load)).toBe('v2');
  });

  it('shares one load among concurrent misses', async () => {
    const { cache } = cacheWithClock(5_000);
    let loads = 0;
    let release: (v: string) => void = () => {};
    const load = () => {
      loads++;
      return new Promise<string>((resolve) => {
        release = resolve;
      });
    };
    const both = Promise.all([cache.get('k', load), cache.get('k', load)]);
    release('v');
    expect(await both).toEqual(['v', 'v']);
    expect(loads).toBe(1);
  });

  it('does not keep a failed load', async () => {
    const { cache } = cacheWithClock(5_000);
    await expect(cache.get('k', () => Promise.reject(new Error('database down')))).rejects.toThrow('database down');
    expect(await cache.get('k', async () => 'v')).toBe('v');
  });

  it('forgets a key when asked', async () => {
    const { cache } = cacheWithClock(5_000);
    await cache.get('k', async () => 'old');
    cache.delete('k');
    expect(await cache.get('k', async () => 'new')).toBe('new');
  });
});
