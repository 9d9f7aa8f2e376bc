// The error answers every operation documents, asked for from the document itself: for each
// operation (a new one is covered without touching this file), its own example request (the one
// the reference shows) sent without a credential (401), with a parameter the contract does not
// declare (400), with a body over 1 MB (413), with an MCP key lacking `read` or from a website
// the app does not allow (403), and as it stands, naming an app, user or resource this server
// does not have (404). Each answer must be that status with its documented code; the contract
// observer (helpers/contract-observer.ts) checks each body against the document and counts it
// toward the run's contract coverage.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listOperations, loadContract } from '../../server/src/contract.js';
import { updateApp } from '../../server/src/storage/tenancy.js';
import { startTestServer, TEST_ADMIN_TOKEN, type Tenant, type TestServer } from '../helpers/server.js';

// biome-ignore lint/suspicious/noExplicitAny: OpenAPI objects are walked generically here.
type Node = Record<string, any>;

const SITE = 'https://contract.example';
const { doc } = loadContract();
const operations = listOperations(doc).map((o) => {
  const op = doc.paths[o.path]![o.method.toLowerCase()] as Node;
  const schemes = ((op.security ?? (doc as Node).security ?? []) as Node[]).flatMap((s) => Object.keys(s));
  return { ...o, op, scheme: schemes[0] ?? null, statuses: new Set(Object.keys(op.responses as Node).map(Number)) };
});
type Operation = (typeof operations)[number];

let server: TestServer;
let tenant: Tenant;
let writeOnly: Tenant;

beforeAll(async () => {
  server = await startTestServer();
  tenant = await server.createTenant();
  writeOnly = await server.createTenant({ mcpPermissions: ['write'] });
  await updateApp(server.db.knex, tenant.app.id, { website_url: SITE });
});
afterAll(async () => {
  await server?.close();
});

function firstExample(holder: Node | undefined): unknown {
  if (!holder) return undefined;
  if (holder.example !== undefined) return holder.example;
  const first = Object.values((holder.examples ?? {}) as Node)[0] as Node | undefined;
  return first?.value;
}

/** The operation's example request: path, query and body, as the reference shows them. */
function exampleRequest(operation: Operation, replace: (value: unknown) => unknown = (v) => v) {
  let path = operation.path;
  const query = new URLSearchParams();
  for (const p of (operation.op.parameters ?? []) as Node[]) {
    const value = replace(firstExample(p) ?? 'contract-test');
    if (p.in === 'path') path = path.replace(`{${p.name}}`, encodeURIComponent(String(value)));
    else if (p.in === 'query' && firstExample(p) !== undefined) query.set(p.name, String(value));
  }
  const body = firstExample(operation.op.requestBody?.content?.['application/json']);
  return { path, query, body: body === undefined ? undefined : deepReplace(body, replace) };
}

function deepReplace(value: unknown, replace: (value: unknown) => unknown): unknown {
  if (Array.isArray(value)) return value.map((v) => deepReplace(v, replace));
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, deepReplace(v, replace)]));
  }
  return replace(value);
}

function credentials(operation: Operation, who: Tenant = tenant): Record<string, string> {
  if (operation.scheme === 'ApiKeyAuth') return { authorization: `Bearer ${who.apiKey}` };
  if (operation.scheme === 'AdminTokenAuth') return { authorization: `Bearer ${TEST_ADMIN_TOKEN}` };
  if (operation.scheme === 'McpApiKeyAuth') return { 'x-mcp-api-key': who.mcpKey };
  return { origin: SITE };
}

async function send(
  operation: Operation,
  request: { path: string; query: URLSearchParams; body?: unknown; raw?: string },
  headers: Record<string, string>,
) {
  // encodeURIComponent, as the generated client does: the validator refuses URLSearchParams' `+`
  // for a space as a reserved character.
  const q = [...request.query].map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join('&');
  const hasBody = operation.op.requestBody !== undefined || request.raw !== undefined;
  const res = await fetch(`${server.url}${request.path}${q ? `?${q}` : ''}`, {
    method: operation.method,
    headers: { ...headers, ...(hasBody ? { 'content-type': 'application/json' } : {}) },
    body: hasBody ? (request.raw ?? JSON.stringify(request.body ?? {})) : undefined,
  });
  const text = await res.text();
  let json: Node = {};
  try {
    json = JSON.parse(text) as Node;
  } catch {}
  return { status: res.status, code: json.code as string | undefined, text };
}

/** The app and organization ids every example uses; this server has neither. */
const EXAMPLE_APP = '0192f0c4-5b7e-7a3c-9d2e-4f6a8b1c2d3e';
const EXAMPLE_ORGANIZATION = '0192f0c4-1a2b-7c3d-8e4f-5a6b7c8d9e0f';
const ofTenant = (value: unknown) =>
  value === EXAMPLE_APP ? tenant.app.id : value === EXAMPLE_ORGANIZATION ? tenant.organization.id : value;

/** Reads that answer 404 until something is set up first (a push provider); their own tests show the 200. */
const NOT_PLAIN = new Set(['AdminPush_get']);
/** Reads that name nothing but the tenant's app or organization: their least request reaches a success. */
const plainReads = operations.filter(
  (o) =>
    o.method === 'GET' &&
    !NOT_PLAIN.has(o.operationId) &&
    ((o.op.parameters ?? []) as Node[]).every(
      (p) => p.in !== 'path' || [EXAMPLE_APP, EXAMPLE_ORGANIZATION].includes(firstExample(p) as string),
    ),
);

const authenticated = operations.filter((o) => o.statuses.has(401));
const withBody = operations.filter((o) => o.statuses.has(413));
const mcpForbidden = operations.filter((o) => o.statuses.has(403) && o.scheme === 'McpApiKeyAuth');
const websiteForbidden = operations.filter((o) => o.statuses.has(403) && o.scheme === null);
const notFound = operations.filter((o) => o.statuses.has(404));

describe('every documented error answer, from the document', () => {
  it.each(plainReads.map((o) => [o.operationId, o] as const))(
    '%s: its required parameters alone, for this tenant, are 200',
    async (_, operation) => {
      const request = exampleRequest(operation, ofTenant);
      for (const p of (operation.op.parameters ?? []) as Node[]) {
        if (p.in === 'query' && !p.required && p.name !== 'app_id') request.query.delete(p.name);
      }
      const answer = await send(operation, request, credentials(operation));
      expect(answer.status, answer.text).toBe(200);
    },
  );

  it.each([
    ['POST', '/admin/v1/admin-tokens'],
    ['POST', '/admin/v1/admin-tokens/retire-previous'],
  ])('%s %s: an admin token set by ADMIN_TOKEN is rotated there, 409', async (method, path) => {
    const operation = operations.find((o) => o.method === method && o.path === path)!;
    const answer = await send(operation, { path, query: new URLSearchParams() }, credentials(operation));
    expect([answer.status, answer.code], answer.text).toEqual([409, 'CONFLICT']);
  });

  it.each(authenticated.map((o) => [o.operationId, o] as const))('%s: no credential is 401', async (_, operation) => {
    const answer = await send(operation, exampleRequest(operation), {});
    expect([answer.status, answer.code], answer.text).toEqual([401, 'MISSING_AUTH']);
  });

  it.each(operations.map((o) => [o.operationId, o] as const))(
    '%s: a query parameter the contract does not declare is 400',
    async (_, operation) => {
      const request = exampleRequest(operation, ofTenant);
      request.query.set('not_in_the_contract', '1');
      const answer = await send(operation, request, credentials(operation));
      expect([answer.status, answer.code], answer.text).toEqual([400, 'INVALID_REQUEST']);
    },
  );

  it.each(withBody.map((o) => [o.operationId, o] as const))('%s: a body over 1 MB is 413', async (_, operation) => {
    const raw = JSON.stringify({ padding: 'x'.repeat(1024 * 1024) });
    const answer = await send(operation, { ...exampleRequest(operation, ofTenant), raw }, credentials(operation));
    expect([answer.status, answer.code], answer.text).toEqual([413, 'PAYLOAD_TOO_LARGE']);
  });

  it.each(mcpForbidden.map((o) => [o.operationId, o] as const))(
    '%s: an MCP key without read is 403',
    async (_, operation) => {
      const answer = await send(operation, exampleRequest(operation), credentials(operation, writeOnly));
      expect([answer.status, answer.code], answer.text).toEqual([403, 'INSUFFICIENT_PERMISSIONS']);
    },
  );

  it.each(websiteForbidden.map((o) => [o.operationId, o] as const))(
    '%s: a website the app does not allow is 403',
    async (_, operation) => {
      const answer = await send(operation, exampleRequest(operation, ofTenant), {
        origin: 'https://elsewhere.example',
      });
      expect([answer.status, answer.code], answer.text).toEqual([403, 'ORIGIN_NOT_ALLOWED']);
    },
  );

  it.each(notFound.map((o) => [o.operationId, o] as const))(
    '%s: the example, naming what this server does not have, is 404',
    async (_, operation) => {
      const answer = await send(operation, exampleRequest(operation), credentials(operation));
      expect([answer.status, answer.code], answer.text).toEqual([404, 'NOT_FOUND']);
    },
  );
});
