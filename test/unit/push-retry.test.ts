// Which provider failures are retried, how long each wait before the job runner's next attempt is
// (Retry-After honoured, else doubling from half a second), and when the attempts end.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ProviderError, type PushProvider, parseRetryAfter } from '../../server/src/engagement/push/provider.js';
import { MAX_ATTEMPTS, retryDelay } from '../../server/src/engagement/push/retry.js';

const provider = (idempotent: boolean) => ({ kind: 'webhook', idempotent }) as unknown as PushProvider;

function failing(status: number | null, retryAfterMs: number | null = null, kind: 'no_device' | null = null) {
  const err = new ProviderError('webhook', status, `status ${status}`);
  err.retryAfterMs = retryAfterMs;
  err.kind = kind;
  return err;
}

/** The waits before each retry of these failures, in order, until retryDelay says there is none. */
function waits(p: PushProvider, errors: ProviderError[]) {
  const out: number[] = [];
  for (let attempt = 1; attempt <= errors.length; attempt++) {
    const wait = retryDelay(p, errors[attempt - 1], attempt);
    if (wait === null) break;
    out.push(wait);
  }
  return out;
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

describe('retryDelay', () => {
  it('waits what Retry-After asks, else doubles from 0.5 s, and stops after MAX_ATTEMPTS calls', () => {
    const errors = [failing(429, 2000), failing(500), failing(503), failing(502), failing(500)];
    expect(waits(provider(true), errors)).toEqual([2000, 1000, 2000]);
    expect(MAX_ATTEMPTS).toBe(4);
    expect(retryDelay(provider(true), failing(503), MAX_ATTEMPTS)).toBeNull();
  });

  it('retries 429 and 503 through any provider', () => {
    expect(waits(provider(false), [failing(429, 0), failing(503)])).toEqual([0, 1000]);
  });

  it('never retries a permanent refusal, a user without a device, or a Retry-After over a minute', () => {
    for (const err of [
      failing(400),
      failing(401),
      failing(404),
      failing(422),
      failing(200, null, 'no_device'),
      failing(429, 3_600_000),
    ]) {
      expect(retryDelay(provider(true), err, 1)).toBeNull();
    }
    expect(retryDelay(provider(true), failing(429, 60_000), 1)).toBe(60_000);
  });

  it('retries 5xx and lost answers only through a provider with idempotency keys', () => {
    for (const status of [500, 502, 504, null]) {
      expect(retryDelay(provider(false), failing(status), 1)).toBeNull();
      expect(retryDelay(provider(true), failing(status), 1)).toBe(500);
    }
  });

  it('never waits beyond a minute nor allows more than MAX_ATTEMPTS calls, whatever the failures', () => {
    const failure = fc.record({
      status: fc.option(fc.integer({ min: 100, max: 599 })),
      retryAfterMs: fc.option(fc.integer({ min: 0, max: 10_000_000 })),
    });
    fc.assert(
      fc.property(fc.boolean(), fc.array(failure, { minLength: 1, maxLength: 10 }), (idempotent, list) => {
        const found = waits(
          provider(idempotent),
          list.map((f) => failing(f.status, f.retryAfterMs)),
        );
        return found.length < MAX_ATTEMPTS && found.every((w) => w >= 0 && w <= 60_000);
      }),
    );
  });
});
