// Contract coverage and an independent check of every answer the suite sees. Each test server
// (helpers/server.ts) is observed at its socket: for every response to a contract operation it
// records the operation and status, and checks the body against the response the document
// declares for that status (Ajv with JSON Schema 2020-12, the dialect of OpenAPI 3.1, so closed
// objects, `unevaluatedProperties: {not: {}}`, are enforced). The app's own validator
// (express-openapi-validator, strict in tests) checks what the handlers send, but not the answers
// made before it runs (the JSON parser's 413, the input rules' 400, the credential's 401, the
// website gate's 403 and 429): this sees those too.
//
// Each test worker appends what it saw to its own file in the run's folder (global-setup.ts makes
// it and reads them all once every file has run); lines are written once per process.
import fs from 'node:fs';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import path from 'node:path';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import type { Request } from 'express';
import { inject } from 'vitest';
import { listOperations, loadContract } from '../../server/src/contract.js';
import { operationLabeler } from '../../server/src/http/operation-label.js';
import { validatorFormats } from '../../server/src/http/validator-options.js';
import { closeObjects } from './closed-contract.js';
import type { PrismViolation } from './prism-front.js';

/** One line of a worker's observation file. */
export interface Observation {
  operationId: string;
  status: number;
  /** Why the answer does not match the document; absent when it does. */
  violation?: string;
}

const MAX_CAPTURE = 2 * 1024 * 1024;
const addFormats = addFormatsModule as unknown as (ajv: Ajv2020, options: { mode: 'fast' | 'full' }) => void;

// biome-ignore lint/suspicious/noExplicitAny: OpenAPI objects are walked generically here.
type Node = Record<string, any>;

let state:
  | {
      file: string;
      seen: Set<string>;
      label: (req: Request) => string;
      operations: Map<string, Node>;
      ajv: Ajv2020;
      validators: Map<string, ValidateFunction>;
    }
  | undefined;

function setUp() {
  if (state) return state;
  const dir = inject('contractRun');
  const { doc } = loadContract();
  const ajv = new Ajv2020({ strict: false, validateSchema: false, allErrors: false });
  // The server's formats (http/validator-options.ts): fast ones, with calendar-checked dates.
  addFormats(ajv, { mode: 'fast' });
  for (const [name, format] of Object.entries(validatorFormats())) ajv.addFormat(name, format);
  const strict = structuredClone(doc) as Node;
  closeObjects(strict, 'unevaluatedProperties'); // the server never sends an undeclared field
  ajv.addSchema(strict, 'openapi');
  const operations = new Map<string, Node>();
  for (const op of listOperations(doc)) {
    const node = doc.paths[op.path]![op.method.toLowerCase()] as Node;
    operations.set(op.operationId, { ...node, pointer: `/paths/${pointerPart(op.path)}/${op.method.toLowerCase()}` });
  }
  state = {
    file: path.join(dir, `${process.pid}.ndjson`),
    seen: new Set(),
    label: operationLabeler(doc),
    operations,
    ajv,
    validators: new Map(),
  };
  return state;
}

const pointerPart = (p: string) => p.replace(/~/g, '~0').replace(/\//g, '~1');

/** Starts observing a test server's responses. */
export function observeContract(server: Server): void {
  server.prependListener('request', (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const capture = (chunk: unknown, encoding?: unknown) => {
      if (chunk === undefined || chunk === null || typeof chunk === 'function' || size > MAX_CAPTURE) return;
      const buffer = Buffer.isBuffer(chunk)
        ? chunk
        : Buffer.from(chunk as string, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8');
      size += buffer.length;
      chunks.push(buffer);
    };
    const { write, end } = res;
    res.write = function (this: ServerResponse, chunk: unknown, ...rest: unknown[]) {
      capture(chunk, rest[0]);
      return (write as (...a: unknown[]) => boolean).call(this, chunk, ...rest);
    } as typeof res.write;
    res.end = function (this: ServerResponse, chunk?: unknown, ...rest: unknown[]) {
      capture(chunk, rest[0]);
      return (end as (...a: unknown[]) => ServerResponse).call(this, chunk, ...rest);
    } as typeof res.end;
    res.once('finish', () => {
      try {
        record(req as Request, res, size > MAX_CAPTURE ? null : Buffer.concat(chunks));
      } catch (err) {
        console.error('contract observer:', err);
      }
    });
  });
}

/** Records what Prism found wrong (a Prism run, prism-front.ts), so that the run fails on it. */
export function recordPrismViolation(v: PrismViolation): void {
  const line = JSON.stringify({
    operationId: `Prism ${v.method} ${v.path}`,
    status: v.status,
    violation: v.problem,
  } satisfies Observation);
  fs.appendFileSync(setUp().file, `${line}\n`);
}

function record(req: Request, res: ServerResponse, body: Buffer | null): void {
  const s = setUp();
  if (typeof req.header !== 'function') return; // never reached the app (the lean path's own answers have its prototype)
  const operationId = s.label(req);
  const operation = s.operations.get(operationId);
  if (!operation) return; // ops endpoints, the SDK script, MCP JSON-RPC, unmatched paths
  const status = res.statusCode;
  const violation = check(s, operation, status, String(res.getHeader('content-type') ?? ''), body, req.method);
  const line = JSON.stringify({ operationId, status, ...(violation ? { violation } : {}) } satisfies Observation);
  if (s.seen.has(line)) return;
  s.seen.add(line);
  fs.appendFileSync(s.file, `${line}\n`);
}

/** What is wrong with an answer, by the document; undefined when nothing is. */
function check(
  s: NonNullable<typeof state>,
  operation: Node,
  status: number,
  contentType: string,
  body: Buffer | null,
  method: string,
): string | undefined {
  const response = operation.responses?.[String(status)] as Node | undefined;
  if (!response) return `status ${status} is not documented`;
  const declared = Object.keys((response.content as Node | undefined) ?? {});
  const type = contentType.split(';')[0]!.trim().toLowerCase();
  if (declared.length === 0)
    return body && body.length > 0 && method !== 'HEAD' ? 'a body where none is documented' : undefined;
  if (method === 'HEAD') return undefined;
  if (!declared.includes(type)) return `content type "${type}" where the document has ${declared.join(', ')}`;
  if (body === null) return undefined; // over the capture limit: not checked
  if (!type.endsWith('json')) return undefined; // text/csv: a string, whatever it says
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8'));
  } catch {
    return 'a body that is not JSON';
  }
  const pointer = `${operation.pointer}/responses/${status}/content/${pointerPart(type)}/schema`;
  let validate = s.validators.get(pointer);
  if (!validate) {
    validate = s.ajv.compile({ $ref: `openapi#${pointer}` });
    s.validators.set(pointer, validate);
  }
  if (validate(value)) return undefined;
  const first = validate.errors?.[0];
  return `${first?.instancePath || '/'} ${first?.message ?? 'does not match'}${first?.params ? ` ${JSON.stringify(first.params)}` : ''}`;
}
