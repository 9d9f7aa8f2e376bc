// Property-based: no input gives a 500. Every operation of the compiled contract (REST, website,
// admin and MCP GETs; a new operation is covered without touching this file) receives generated
// requests, plausible enough to reach its handler, with hostile mutations: NUL bytes, lone
// surrogates, deep nesting, huge and non-finite numbers, over-long strings, wrong types,
// SQL-looking text and random Unicode. Every answer must be a status the operation declares,
// never 500, and an error must be our envelope. Successes are checked by the server itself:
// responses are validated strictly against the contract in tests, so a success that breaks it
// turns into a 500 and fails here. FUZZ_RUNS sets the runs per operation (default 12).
import { STATUS_CODES } from 'node:http';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadContract } from '../../server/src/contract.js';
import { updateApp } from '../../server/src/storage/tenancy.js';
import { contractOperations, type FuzzRequest, type FuzzTarget, fuzzRequest } from '../helpers/contract-fuzz.js';
import { startTestServer, TEST_ADMIN_TOKEN, type Tenant, type TestServer } from '../helpers/server.js';

const SITE = 'https://fuzz.example';
const RUNS = Number(process.env.FUZZ_RUNS ?? 12);
const { doc } = loadContract();
const operations = contractOperations(doc);

let server: TestServer;
let tenant: Tenant;
let adminTenant: Tenant;
let target: FuzzTarget;
let adminTarget: FuzzTarget;

const USER_IDS = ['fz-user-1', 'fz-user-2', 'fz-alias-1'];
const EVENT_NAMES = ['purchase', 'page_view', 'signup'];

function targetFor(t: Tenant): FuzzTarget {
  return {
    headersFor(scheme): Record<string, string> {
      if (scheme === 'ApiKeyAuth') return { authorization: `Bearer ${t.apiKey}` };
      if (scheme === 'AdminTokenAuth') return { authorization: `Bearer ${TEST_ADMIN_TOKEN}` };
      if (scheme === 'McpApiKeyAuth') return { 'x-mcp-api-key': t.mcpKey };
      return { origin: SITE, 'user-agent': 'Mozilla/5.0 (X11; Linux x86_64) Chrome/131.0 Safari/537.36' };
    },
    hint(name, g) {
      if (g(fc.integer, { min: 0, max: 4 }) === 0) return undefined; // sometimes anything at all
      if (/^(app_id|appId)$/.test(name)) return t.app.id;
      if (name === 'organization_id') return t.organization.id;
      if (/^(user_id|userId|visitor_id|externalId|alias_id|new_user_id)$/.test(name)) {
        return g(fc.constantFrom, ...USER_IDS);
      }
      if (/^(event_name|eventName|events|trigger_event_name)$/.test(name)) return g(fc.constantFrom, ...EVENT_NAMES);
      return undefined;
    },
  };
}

beforeAll(async () => {
  server = await startTestServer();
  tenant = await server.createTenant();
  adminTenant = await server.createTenant();
  for (const t of [tenant, adminTenant]) await updateApp(server.db.knex, t.app.id, { website_url: SITE });
  await tenant.client.eventsTrackBatch({
    body: {
      events: USER_IDS.slice(0, 2).flatMap((user_id) =>
        EVENT_NAMES.map((event_name) => ({ user_id, event_name, properties: { revenue: 9.5, plan: 'pro' } })),
      ),
    },
  });
  target = targetFor(tenant);
  adminTarget = targetFor(adminTenant);
});
afterAll(() => server?.close());

interface Answer {
  status: number;
  contentType: string;
  location: string | null;
  body: unknown;
}

/**
 * A request that gets no answer fails with its own description (before the test's timeout, which
 * would name only the operation).
 */
const ANSWER_WITHIN_MS = 20_000;

async function send(request: FuzzRequest): Promise<Answer> {
  const started = Date.now();
  const res = await fetch(server.url + request.url, {
    method: request.method,
    headers: request.headers,
    body: request.body,
    redirect: 'manual',
    signal: AbortSignal.timeout(ANSWER_WITHIN_MS),
  }).catch((err: Error) => {
    throw new Error(`no answer after ${Date.now() - started} ms (${err.name}): ${describeRequest(request)}`);
  });
  const contentType = res.headers.get('content-type') ?? '';
  const text = await res.text();
  return {
    status: res.status,
    contentType,
    location: res.headers.get('location'),
    body: contentType.includes('json') ? JSON.parse(text) : text,
  };
}

function describeRequest(request: FuzzRequest): string {
  const body = request.body && request.body.length > 300 ? `${request.body.slice(0, 300)}...` : request.body;
  return `${request.method} ${request.url.slice(0, 300)} [${request.mutations.join(', ')}] ${body ?? ''}`;
}

function checkAnswer(operation: (typeof operations)[number], request: FuzzRequest, answer: Answer): void {
  const context = `${describeRequest(request)} -> ${answer.status} ${JSON.stringify(answer.body).slice(0, 500)}`;
  const declared = Object.keys(operation.op.responses as object)
    .map(Number)
    .filter((s) => s !== 500);
  expect(declared, context).toContain(answer.status);
  if (answer.status >= 400) {
    expect(answer.contentType, context).toMatch(/^application\/json/);
    expect(answer.body, context).toMatchObject({
      success: false,
      error: STATUS_CODES[answer.status],
      code: expect.stringMatching(/^[A-Z][A-Z_]+$/),
      message: expect.any(String),
    });
    if (answer.status === 400 && (answer.body as { code: string }).code === 'INVALID_REQUEST') {
      const details = (answer.body as { details?: { errors?: unknown } }).details;
      if (details?.errors !== undefined) {
        expect(details.errors, context).toEqual(
          expect.arrayContaining([{ path: expect.stringMatching(/^\//), message: expect.any(String) }]),
        );
      }
    }
  } else if (answer.status === 302) {
    expect(answer.location, context).toEqual(expect.any(String));
  } else if (answer.contentType.startsWith('text/csv')) {
    expect(answer.body, context).toEqual(expect.any(String));
  } else {
    expect(answer.contentType, context).toMatch(/^application\/json/);
    if (!operation.path.startsWith('/mcp')) expect(answer.body, context).toMatchObject({ success: true });
  }
}

describe('no input gives a 500', () => {
  it('covers every operation of the contract', () => {
    // The list below is the contract's own; this pins that nothing filters operations out.
    const inContract = Object.values(doc.paths).flatMap((item) =>
      Object.values(item).filter((op) => op && typeof op === 'object' && op.operationId),
    );
    expect(operations).toHaveLength(inContract.length);
    expect(operations.length).toBeGreaterThanOrEqual(54);
  });

  it.each(operations.map((o) => [o.operationId, o] as const))(
    '%s',
    async (_id, operation) => {
      const who = operation.path.startsWith('/admin/') ? adminTarget : target;
      await fc.assert(
        fc.asyncProperty(fc.gen(), async (g) => {
          const request = fuzzRequest(doc, operation, who, g);
          checkAnswer(operation, request, await send(request));
        }),
        // The first failure is reported as it happened: shrinking would send more requests, and a
        // request that got no answer would use the test's time up before the report.
        { numRuns: RUNS, endOnFailure: true },
      );
    },
    60_000,
  );
});
