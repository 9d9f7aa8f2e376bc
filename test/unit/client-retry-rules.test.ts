// The rules of @tally/client's retries on any input (fast-check): Retry-After values, backoff
// bounds, which calls may be repeated, and the insert_ids given to events of any body.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { backoff, callKind, retryAfterMs, withInsertIds } from '../../clients/node/src/retry.js';

describe('retry rules', () => {
  it('reads any Retry-After as nothing or a finite, non-negative wait', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string(),
          fc.integer({ min: 0, max: 1e6 }).map(String),
          fc.date().map((d) => d.toUTCString()),
        ),
        (value) => {
          const ms = retryAfterMs(value, 0);
          expect(ms === undefined || (Number.isFinite(ms) && ms >= 0)).toBe(true);
        },
      ),
    );
  });

  it('backs off between half a step and a step, never past maxDelay', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 60 }),
        fc.integer({ min: 0, max: 10_000 }),
        fc.integer({ min: 0, max: 120_000 }),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        (attempt, baseDelay, maxDelay, r) => {
          const step = Math.min(maxDelay, baseDelay * 2 ** (attempt - 1));
          const delay = backoff(attempt, { maxRetries: 3, baseDelay, maxDelay }, () => r);
          expect(delay).toBeGreaterThanOrEqual(step / 2);
          expect(delay).toBeLessThanOrEqual(Math.min(step, maxDelay));
        },
      ),
    );
  });

  it('repeats nothing but reads, event writes and the declared idempotent POSTs', () => {
    const method = fc.constantFrom('GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE');
    fc.assert(
      fc.property(method, fc.webPath(), (m, path) => {
        const kind = callKind(m, path);
        if (m === 'GET' || m === 'HEAD') expect(kind).toBe('read');
        else if (m !== 'POST') expect(kind).toBe('once');
        else if (kind !== 'once')
          expect([
            '/v1/events',
            '/v1/events/batch',
            '/v1/sendpush',
            '/v1/audiences',
            '/v1/users',
            '/v1/users/aliases',
            '/v1/users/replace-id',
          ]).toContain(path);
      }),
    );
    expect(callKind('POST', '/v1/analytics/query')).toBe('once');
    expect(callKind('POST', '/v1/website/events')).toBe('once');
    expect(callKind('POST', '/admin/v1/apps')).toBe('once');
    expect(callKind('POST', '/v1/users/aliases')).toBe('idempotent');
    expect(callKind('POST', '/v1/events/batch')).toBe('event');
    expect(callKind('DELETE', '/v1/users/u-1')).toBe('once');
  });

  it('gives every event object of any batch an insert_id, keeps those it has, and leaves the rest alone', () => {
    fc.assert(
      fc.property(
        fc.jsonValue(),
        fc.array(fc.oneof(fc.jsonValue(), fc.dictionary(fc.string(), fc.jsonValue()))),
        (other, events) => {
          const body = JSON.stringify({ events, other });
          const out = JSON.parse(withInsertIds(body, 'events'));
          const before = JSON.parse(body);
          expect(out.other).toEqual(before.other);
          out.events.forEach((event: unknown, i: number) => {
            const was = before.events[i];
            if (was && typeof was === 'object' && !Array.isArray(was)) {
              expect(event).toEqual({ ...was, insert_id: 'insert_id' in was ? was.insert_id : expect.any(String) });
            } else expect(event).toEqual(was);
          });
        },
      ),
    );
    fc.assert(
      fc.property(fc.string(), (text) => {
        let json = true;
        try {
          JSON.parse(text);
        } catch {
          json = false;
        }
        if (!json) expect(withInsertIds(text, 'self')).toBe(text);
      }),
    );
  });
});
