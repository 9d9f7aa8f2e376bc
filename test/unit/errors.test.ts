// The error envelope never leaks internals: an unexpected error becomes a plain 500 whose message
// holds no SQL, stack or driver detail, while known errors keep their status, code and details.
import type { Request, Response } from 'express';
import { describe, expect, it } from 'vitest';
import { AppError, envelope, settleRetryHeaders, toAppError, ValidationError } from '../../server/src/errors.js';

const req = { path: '/v1/events', method: 'POST' } as Request;

describe('toAppError', () => {
  it('hides the details of unexpected errors', () => {
    const dbError = Object.assign(
      new Error('insert into "events" ("id") values ($1) - relation "secret" does not exist'),
      {
        code: '42P01',
      },
    );
    const e = toAppError(dbError, req);
    expect(e.status).toBe(500);
    expect(e.code).toBe('INTERNAL_ERROR');
    expect(e.message).not.toMatch(/insert|relation|secret|at /);
    expect(e.details).toBeUndefined();
  });

  it('keeps known errors as they are', () => {
    const known = new ValidationError('bad', [{ path: '/body/x', message: 'is wrong' }]);
    expect(toAppError(known, req)).toBe(known);
  });

  it('maps body-parser failures to 400 and 413', () => {
    expect(toAppError(Object.assign(new Error('x'), { type: 'entity.parse.failed', status: 400 }), req).status).toBe(
      400,
    );
    const big = toAppError(Object.assign(new Error('x'), { type: 'entity.too.large', status: 413 }), req);
    expect([big.status, big.code]).toEqual([413, 'PAYLOAD_TOO_LARGE']);
  });

  it('names unknown fields plainly', () => {
    const e = toAppError(
      {
        status: 400,
        errors: [{ path: '/body/colour', message: 'must NOT be valid', errorCode: 'not.openapi.validation' }],
      },
      req,
    );
    expect(e.details).toEqual({ errors: [{ path: '/body/colour', message: 'is not a field of this request' }] });
  });

  it('names path parameters /path/<name>, like the input rules do, and explains date formats', () => {
    const e = toAppError(
      {
        status: 400,
        errors: [
          { path: '/params/user_id', message: 'must NOT have more than 255 characters' },
          { path: '.query.start_date', message: 'must match format "date"' },
        ],
      },
      req,
    );
    expect(e.details).toEqual({
      errors: [
        { path: '/path/user_id', message: 'must NOT have more than 255 characters' },
        {
          path: '/query/start_date',
          message:
            'must be a real calendar date written YYYY-MM-DD (for example 2026-02-28; 2026-02-30 does not exist)',
        },
      ],
    });
  });
});

describe('envelope', () => {
  it('carries the reason phrase of the status', () => {
    expect(envelope(404, 'NOT_FOUND', 'gone')).toEqual({
      success: false,
      error: 'Not Found',
      code: 'NOT_FOUND',
      message: 'gone',
    });
    expect(new AppError(429, 'RATE_LIMIT_EXCEEDED', 'slow down').status).toBe(429);
  });
});

describe('settleRetryHeaders', () => {
  /** The header calls of an Express response, on a Map. */
  const response = (headers: Record<string, string>) => {
    const map = new Map(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
    const res = {
      getHeader: (name: string) => map.get(name.toLowerCase()),
      setHeader: (name: string, value: string) => map.set(name.toLowerCase(), value),
      removeHeader: (name: string) => map.delete(name.toLowerCase()),
    };
    return { res: res as unknown as Response, map };
  };
  const limited = { 'X-RateLimit-Limit': '100', 'X-RateLimit-Remaining': '97', 'X-RateLimit-Reset': '1900000000' };

  it('gives every 429 a Retry-After, from details.retry_after or one second', () => {
    const sessions = response(limited);
    settleRetryHeaders(sessions.res, new AppError(429, 'RATE_LIMIT_EXCEEDED', 'x', { retry_after: 12.2 }));
    expect(sessions.map.get('retry-after')).toBe('13');
    const bare = response({});
    settleRetryHeaders(bare.res, new AppError(429, 'RATE_LIMIT_EXCEEDED', 'x'));
    expect(bare.map.get('retry-after')).toBe('1');
  });

  it('drops X-RateLimit-* that say requests remain on a 429, and keeps those of the limit that refused', () => {
    const other = response(limited);
    settleRetryHeaders(other.res, new AppError(429, 'RATE_LIMIT_EXCEEDED', 'x', { reason: 'sessions' }));
    expect([...other.map.keys()]).toEqual(['retry-after']);
    const own = response({ ...limited, 'X-RateLimit-Remaining': '0', 'Retry-After': '42' });
    settleRetryHeaders(own.res, new AppError(429, 'RATE_LIMIT_EXCEEDED', 'x', { retry_after: 42 }));
    expect(own.map.get('x-ratelimit-remaining')).toBe('0');
    expect(own.map.get('retry-after')).toBe('42');
  });

  it('leaves other statuses alone, except Retry-After on 503', () => {
    const ok = response(limited);
    settleRetryHeaders(ok.res, new AppError(400, 'INVALID_REQUEST', 'x'));
    expect(ok.map.get('x-ratelimit-remaining')).toBe('97');
    expect(ok.map.has('retry-after')).toBe(false);
    const down = response({});
    settleRetryHeaders(down.res, new AppError(503, 'SERVICE_UNAVAILABLE', 'x'));
    expect(down.map.get('retry-after')).toBe('5');
  });
});
