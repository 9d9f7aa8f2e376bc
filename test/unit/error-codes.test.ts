// The server's error codes are the ones the contract names: KnownErrorCode and STATUS_OF
// (server/src/error-codes.gen.ts) match ErrorCode in the compiled OpenAPI; the compiler refuses a
// code the contract does not name, or a status the contract does not give that code; and the
// error classes and the error renderer answer each code with its status.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { STATUS_CODES } from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import YAML from 'yaml';
import {
  AuthError,
  ConflictError,
  envelope,
  ForbiddenError,
  type KnownErrorCode,
  NotFoundError,
  NotImplementedError,
  RateLimitError,
  ServiceUnavailableError,
  STATUS_OF,
  toAppError,
  ValidationError,
} from '../../server/src/errors.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const codes = Object.keys(STATUS_OF) as KnownErrorCode[];

describe('the table of error codes', () => {
  it('names exactly the codes of ErrorCode in the compiled contract, in its order', () => {
    const doc = YAML.parse(fs.readFileSync(path.join(root, 'generated/openapi/openapi.yaml'), 'utf8'));
    const errorCode = doc.components.schemas.ErrorCode as { anyOf: { type: string; enum?: string[] }[] };
    // The wire type stays open: a plain string comes first, then the named codes.
    expect(errorCode.anyOf[0]).toEqual({ type: 'string' });
    expect(codes).toEqual(errorCode.anyOf.flatMap((variant) => variant.enum ?? []));
  });

  it('gives every code a 4xx or 5xx status with a reason phrase', () => {
    for (const code of codes) {
      const status = STATUS_OF[code];
      expect(Number.isInteger(status) && status >= 400 && status <= 599, code).toBe(true);
      expect(STATUS_CODES[status], code).toBeDefined();
      expect(envelope(status, code, 'x').error).toBe(STATUS_CODES[status]);
    }
  });

  it('includes the codes the error renderer answers with', () => {
    expect(STATUS_OF.METHOD_NOT_ALLOWED).toBe(405);
    expect(STATUS_OF.RESPONSE_CONTRACT_VIOLATION).toBe(500);
  });
});

describe('the error classes', () => {
  it('answer each code with the status the contract gives it', () => {
    const errors = [
      new ValidationError('x'),
      new ValidationError('x', [], 'QUERY_REJECTED'),
      new AuthError('MISSING_AUTH', 'x'),
      new AuthError('INVALID_API_KEY', 'x'),
      new AuthError('REVOKED_API_KEY', 'x'),
      new ForbiddenError('INSUFFICIENT_PERMISSIONS', 'x'),
      new ForbiddenError('MCP_CAMPAIGNS_DISABLED', 'x'),
      new NotFoundError('x'),
      new ConflictError('x'),
      new NotImplementedError('x'),
      new RateLimitError('x', 3),
      new ServiceUnavailableError(),
    ];
    for (const error of errors) expect(error.status, error.code).toBe(STATUS_OF[error.code]);
  });

  it('keep the statuses they had before the table', () => {
    expect(new ValidationError('x').status).toBe(400);
    expect(new AuthError('MISSING_AUTH', 'x').status).toBe(401);
    expect(new ForbiddenError('ORIGIN_NOT_ALLOWED', 'x').status).toBe(403);
    expect(new NotFoundError('x').status).toBe(404);
    expect(new ConflictError('x').status).toBe(409);
    expect(new RateLimitError('x', 1).status).toBe(429);
    expect(new NotImplementedError('x').status).toBe(501);
    expect(new ServiceUnavailableError().status).toBe(503);
  });

  it('are what the renderer makes of failures outside the service', () => {
    const req = { method: 'PUT', path: '/v1/events' };
    const cases: [unknown, KnownErrorCode][] = [
      [{ status: 405, errors: [{ path: '/v1/events', message: 'PUT method not allowed' }] }, 'METHOD_NOT_ALLOWED'],
      [{ status: 500, errors: [{ path: '/response/id', message: 'must be string' }] }, 'RESPONSE_CONTRACT_VIOLATION'],
      [{ status: 404, errors: [{ path: '/v1/nope', message: 'not found' }] }, 'NOT_FOUND'],
      [{ status: 401, errors: [{ path: '/v1/events', message: 'unauthorized' }] }, 'MISSING_AUTH'],
      [Object.assign(new Error('x'), { type: 'entity.too.large', status: 413 }), 'PAYLOAD_TOO_LARGE'],
      [Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }), 'SERVICE_UNAVAILABLE'],
      [new Error('boom'), 'INTERNAL_ERROR'],
    ];
    for (const [thrown, code] of cases) {
      const error = toAppError(thrown, req);
      expect([error.code, error.status]).toEqual([code, STATUS_OF[code]]);
    }
  });
});

describe('the compiler', () => {
  // One small program against the real errors.ts and the project's compiler options: the lines
  // marked `refused` must each fail with the diagnostic given, and nothing else may fail.
  const program = [
    "import { AppError, envelope, ForbiddenError, type KnownErrorCode, STATUS_OF, ValidationError } from '../../server/src/errors.js';",
    "export const known = new AppError(405, 'METHOD_NOT_ALLOWED', 'x');",
    "export const fromTable = new AppError(STATUS_OF.RESPONSE_CONTRACT_VIOLATION, 'RESPONSE_CONTRACT_VIOLATION', 'x');",
    "export const forbidden = new ForbiddenError('MCP_CAMPAIGNS_DISABLED', 'x');",
    "export const rejected = new ValidationError('x', [], 'QUERY_REJECTED');",
    "export const body = envelope(404, 'NOT_FOUND', 'x');",
    "export const unknown = new AppError(400, 'NOT_A_CODE', 'x'); // refused: 'NOT_A_CODE' KnownErrorCode",
    "export const typed: KnownErrorCode = 'NOT_A_CODE'; // refused: 'NOT_A_CODE' KnownErrorCode",
    "export const unknownBody = envelope(400, 'NOT_A_CODE', 'x'); // refused: 'NOT_A_CODE' KnownErrorCode",
    "export const wrongStatus = new AppError(404, 'CONFLICT', 'x'); // refused: '404' '409'",
    "export const wrongClass = new ForbiddenError('NOT_FOUND', 'x'); // refused: 'NOT_FOUND' CodeWithStatus<403>",
    "export const wrongDefault = new ValidationError('x', [], 'CONFLICT'); // refused: 'CONFLICT' CodeWithStatus<400>",
    '',
  ];

  it('refuses a code the contract does not name, and a status it does not give that code', () => {
    const dir = fs.mkdtempSync(path.join(root, 'test', '.error-codes-'));
    try {
      fs.writeFileSync(path.join(dir, 'probe.ts'), program.join('\n'));
      fs.writeFileSync(
        path.join(dir, 'tsconfig.json'),
        JSON.stringify({
          extends: '../../tsconfig.base.json',
          compilerOptions: { noEmit: true, types: ['node'] },
          files: ['probe.ts'],
        }),
      );
      let output = '';
      let failed = false;
      try {
        execFileSync(process.execPath, [path.join(root, 'node_modules/typescript/bin/tsc'), '-p', dir], {
          cwd: root,
          encoding: 'utf8',
        });
      } catch (err) {
        failed = true;
        output = String((err as { stdout?: string }).stdout ?? '');
      }
      expect(failed).toBe(true);

      // probe.ts(7,37): error TS2345: Argument of type '"NOT_A_CODE"' is not assignable to ...
      const diagnostics = output
        .split('\n')
        .filter((line) => /probe\.ts\(\d+,\d+\): error/.test(line))
        .map((line) => ({ line: Number(/probe\.ts\((\d+),/.exec(line)![1]), text: line }));
      const expected = program.flatMap((source, i) => {
        const refused = / \/\/ refused: (.*)$/.exec(source);
        return refused ? [{ line: i + 1, words: refused[1]!.split(' ') }] : [];
      });
      expect(
        diagnostics.map((d) => d.line),
        output,
      ).toEqual(expected.map((e) => e.line));
      for (const { line, words } of expected) {
        const text = diagnostics.find((d) => d.line === line)!.text;
        for (const word of words) expect(text.replaceAll('"', "'"), text).toContain(word);
      }
      expect(output.split('\n').filter((line) => / error TS/.test(line) && !line.includes('probe.ts'))).toEqual([]);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
