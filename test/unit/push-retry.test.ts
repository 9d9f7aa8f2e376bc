// Which provider failures are retried, how long each wait is (Retry-After honoured, else doubling
// from half a second), and when the attempts end.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ProviderError, type PushProvider, parseRetryAfter } from '../../server/src/push/provider.js';
import { MAX_ATTEMPTS, withRetries } from '../../server/src/push/retry.js';

const provider = (idempotent: boolean) => ({ kind: 'webhook', idempotent }) as unknown as PushProvider;

function failing(status: number | null, retryAfterMs: number | null = null, kind: 'no_device' | null = null) {
  const err = new ProviderError('webhook', status, `status ${status}`);
  err.retryAfterMs = retryAfterMs;
  err.kind = kind;
  return err;
}

async function run(p: PushProvider, errors: ProviderError[]) {
  const waits: number[] = [];
  let calls = 0;
  const outcome = await withRetries(
    p,
    async () => {
      const err = errors[calls++];
      if (err) throw err;
      return 'ok';
    },
    undefined,
    async (ms) => {
      waits.push(ms);
    },
  ).catch((err: unknown) => err);
  return { outcome, waits, calls };
}

describe('Retry-After', () => {
  it('reads delay-seconds and HTTP dates, and nothing else', () => {
    fc.assert(fc.property(fc.integer({ min: 0, max: 999_999_999 }), (n) => parseRetryAfter(String(n)) === n * 1000));
    const now = Date.parse('2026-11-23T10:00:00Z');
    expect(parseRetryAfter('Mon, 23 Nov 2026 10:00:30 GMT', now)).toBe(30_000);
    expect(parseRetryAfter('Mon, 23 Nov 2026 09:00:00 GMT', now)).toBe(0);
    expect(parseRetryAfter(null)).toBeNull();
    expect(parseRetryAfter('soon')).toBeNull();
    expect(parseRetryAfter('-5')).toBeNull();
  });
});

describe('withRetries', () => {
  it('waits what Retry-After asks, else doubles from 0.5 s, and stops after MAX_ATTEMPTS calls', async () => {
    const r = await run(provider(true), [failing(429, 2000), failing(500), failing(503), failing(502), failing(500)]);
    expect(r.calls).toBe(MAX_ATTEMPTS);
    expect(r.waits).toEqual([2000, 1000, 2000]);
    expect(r.outcome).toBeInstanceOf(ProviderError);
    expect((r.outcome as { attempts: number }).attempts).toBe(MAX_ATTEMPTS);
  });

  it('succeeds on a later call and says how many it took', async () => {
    const r = await run(provider(false), [failing(429, 0), failing(503)]);
    expect(r.outcome).toEqual({ result: 'ok', attempts: 3 });
  });

  it('never retries a permanent refusal, a user without a device, or a Retry-After over a minute', async () => {
    for (const err of [
      failing(400),
      failing(401),
      failing(404),
      failing(422),
      failing(200, null, 'no_device'),
      failing(429, 3_600_000),
    ]) {
      const r = await run(provider(true), [err]);
      expect(r.calls).toBe(1);
      expect(r.outcome).toBe(err);
    }
  });

  it('retries 5xx and lost answers only through a provider with idempotency keys', async () => {
    for (const status of [500, 502, 504, null]) {
      expect((await run(provider(false), [failing(status)])).calls).toBe(1);
      expect((await run(provider(true), [failing(status)])).outcome).toEqual({ result: 'ok', attempts: 2 });
    }
  });
});
