// The error envelope never leaks internals: an unexpected error becomes a plain 500 whose message
// holds no SQL, stack or driver detail, while known errors keep their status, code and details.
import type { Request } from 'express';
import { describe, expect, it } from 'vitest';
import { AppError, envelope, toAppError, ValidationError } from '../../server/src/errors.js';

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
