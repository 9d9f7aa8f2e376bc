import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { uuidv7 } from '../../server/src/ids.js';

const V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('uuidv7', () => {
  it('carries the milliseconds in its first 48 bits, then version 7 and the RFC variant', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 2 ** 48 - 1 }), (ms) => {
        const id = uuidv7(ms);
        expect(id).toMatch(V7);
        expect(Number.parseInt(id.replace(/-/g, '').slice(0, 12), 16)).toBe(ms);
      }),
    );
  });

  it('never repeats across many ids in the same millisecond, past many refills of its random pool', () => {
    const ids = new Set(Array.from({ length: 50_000 }, () => uuidv7(1_800_000_000_000)));
    expect(ids.size).toBe(50_000);
  });

  it('sorts by time as text', () => {
    const earlier = uuidv7(1_800_000_000_000);
    const later = uuidv7(1_800_000_000_001);
    expect(earlier < later).toBe(true);
  });
});
