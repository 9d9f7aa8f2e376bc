// A fair SQL sandbox on PostgreSQL (issue 25), asserted by admission, never by elapsed time:
//  - while organization A runs slow queries from three keys (two REST keys and an MCP key),
//    pg_stat_activity never shows more than 2 sandbox backends for A (by application_name), and
//    organization B's query runs meanwhile on a backend of its own; beyond A's queue, 429 with
//    reason "organization" and Retry-After;
//  - a query still running a second past its statement timeout (a call PostgreSQL cannot
//    interrupt) has its backend cancelled and terminated, and the pool keeps answering.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey } from '../../server/src/admin/keys.js';
import { startTestServer, type Tenant, type TestServer } from '../helpers/server.js';

const postgres = !!process.env.TEST_DATABASE_URL;
/** Runs until the statement timeout: 2,000 events of one name joined three times (8e9 rows). */
const SLOW =
  'SELECT count(*) AS n FROM events a JOIN events b ON a.event_name = b.event_name JOIN events c ON b.event_name = c.event_name';

interface Backend {
  pid: number;
  application_name: string;
  state: string | null;
}

/** Sandbox backends working for an organization right now. */
async function backends(server: TestServer, organizationId: string): Promise<Backend[]> {
  const { rows } = await server.db.knex.raw(
    `SELECT pid, application_name, state FROM pg_stat_activity
     WHERE datname = current_database() AND backend_type = 'client backend' AND application_name = ?
       AND state = 'active'`,
    [`tally-sandbox:${organizationId}`],
  );
  return rows;
}

/** Polls until `check` holds (bounded, so a broken build fails instead of hanging). */
async function until<T>(what: string, check: () => Promise<T | undefined | false>): Promise<T> {
  for (let i = 0; i < 3000; i++) {
    const v = await check();
    if (v) return v;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`never saw: ${what}`);
}

function sql(server: TestServer, apiKey: string, appId: string, query: string) {
  return fetch(`${server.url}/v1/analytics/query`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ app_id: appId, query }),
  }).then(async (r) => ({ status: r.status, retryAfter: r.headers.get('retry-after'), body: await r.json() }));
}

async function seed(t: Tenant, n: number, name: string) {
  for (let i = 0; i < n; i += 100) {
    const events = Array.from({ length: 100 }, (_, j) => ({ user_id: `u-${(i + j) % 50}`, event_name: name }));
    expect((await t.client.eventsTrackBatch({ body: { events } })).response.status).toBe(200);
  }
}

describe.runIf(postgres)('one organization cannot hold the sandbox (PostgreSQL)', () => {
  let server: TestServer;
  let a: Tenant;
  let b: Tenant;
  let mcp: Client;
  const aKeys: string[] = [];

  beforeAll(async () => {
    server = await startTestServer({ ANALYTICS_QUERY_TIMEOUT_MS: '6000' });
    a = await server.createTenant();
    b = await server.createTenant();
    for (let i = 0; i < 4; i++) aKeys.push((await createKey(server.db.knex, a.app, { kind: 'rest' })).secret);
    await seed(a, 2_000, 'tick');
    await seed(b, 2_000, 'tock');
    const transport = new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), {
      requestInit: { headers: { 'X-MCP-API-Key': a.mcpKey } },
    });
    mcp = new Client({ name: 'tally-fairness-test', version: '1.0.0' });
    await mcp.connect(transport);
  }, 120_000);
  afterAll(async () => {
    await mcp?.close();
    await server?.close();
  });

  it('admits at most 2 of A’s queries at once, runs B’s beside them, and refuses A beyond its queue', async () => {
    let mostA = 0;
    let watching = true;
    const watch = (async () => {
      while (watching) {
        mostA = Math.max(mostA, (await backends(server, a.organization.id)).length);
        await new Promise((r) => setTimeout(r, 10));
      }
    })();
    const viaMcp = () =>
      mcp
        .callTool({ name: 'query_analytics', arguments: { app_id: a.app.id, query: SLOW } }, undefined, {
          timeout: 120_000,
        })
        .then((r) => ({ status: r.isError ? 400 : 200, text: (r.content as { text: string }[])[0]!.text }));
    // A: two queries from each of its three keys
    const first = [
      sql(server, a.apiKey, a.app.id, SLOW),
      sql(server, a.apiKey, a.app.id, SLOW),
      sql(server, aKeys[0]!, a.app.id, SLOW),
      sql(server, aKeys[0]!, a.app.id, SLOW),
    ];
    const mcpCalls = [viaMcp(), viaMcp()];
    const aRunning = await until('two of A’s queries running', async () => {
      const now = await backends(server, a.organization.id);
      return now.length === 2 && now;
    });
    // B is not queued behind A: its query gets a backend of its own while A holds two
    const bQuery = sql(server, b.apiKey, b.app.id, SLOW);
    const bBackend = await until('B’s query running beside A’s', async () => {
      const [mine] = await backends(server, b.organization.id);
      const theirs = await backends(server, a.organization.id);
      return mine && theirs.length === 2 && mine;
    });
    expect(bBackend.state).toBe('active');
    expect(aRunning.map((x) => x.pid)).not.toContain(bBackend.pid);
    // A fills its queue (2 running, 8 waiting) from three more keys: at least one is refused
    const overflow = await Promise.all(
      [1, 1, 2, 2, 3, 3].map((k) => sql(server, aKeys[k]!, a.app.id, SLOW).then((r) => r)),
    );
    const refused = overflow.filter((r) => r.status === 429);
    expect(refused.length).toBeGreaterThanOrEqual(1);
    for (const r of refused) {
      expect(r.body).toMatchObject({
        code: 'RATE_LIMIT_EXCEEDED',
        details: { reason: 'organization', running: 2, waiting: 8 },
      });
      expect(Number(r.retryAfter)).toBeGreaterThanOrEqual(1);
      expect(r.body.details.retry_after).toBe(Number(r.retryAfter));
    }
    // every query admitted ran until its statement timeout
    const answers = [...(await Promise.all(first)), ...overflow.filter((r) => r.status !== 429), await bQuery];
    for (const r of answers)
      expect({ status: r.status, code: r.body.code }).toEqual({ status: 400, code: 'QUERY_TIMEOUT' });
    for (const r of await Promise.all(mcpCalls)) expect(r.text).toMatch(/^QUERY_TIMEOUT/);
    watching = false;
    await watch;
    expect(mostA).toBe(2);
  }, 240_000);
});

describe.runIf(postgres)('a query past its statement timeout (PostgreSQL)', () => {
  let server: TestServer;
  let t: Tenant;

  beforeAll(async () => {
    server = await startTestServer({ ANALYTICS_QUERY_TIMEOUT_MS: '200' });
    t = await server.createTenant();
    await seed(t, 100, 'tick');
  }, 60_000);
  afterAll(() => server?.close());

  it('has its backend cancelled and terminated, and the pool keeps answering', async () => {
    // Arithmetic on numbers of 65,000 digits: PostgreSQL evaluates the whole row's expression
    // without checking for a cancel. The checker allows it: its values stay small.
    const products = Array.from({ length: 100 }, (_, i) => `w * (w - ${i})`).join(' + ');
    const uninterruptible = `WITH x AS (SELECT (10::numeric ^ 65000) - 1 AS w) SELECT length((${products})::text) AS n FROM x`;
    const stoppedBefore = server.tally.sandbox.executor.stoppedByForce;
    const pending = sql(server, t.apiKey, t.app.id, uninterruptible);
    const backend = await until('the query running', () => backends(server, t.organization.id).then((r) => r[0]));
    const answer = await pending;
    expect({ status: answer.status, code: answer.body.code }).toEqual({ status: 400, code: 'QUERY_TIMEOUT' });
    expect(server.tally.sandbox.executor.stoppedByForce).toBe(stoppedBefore + 1);
    // the answer came once its backend was gone
    const { rows } = await server.db.knex.raw('SELECT 1 FROM pg_stat_activity WHERE pid = ?', [backend.pid]);
    expect(rows).toEqual([]);
    // more queries than the pool has connections, at once and then one after another
    const count = 'SELECT count(*) AS n FROM events';
    const keys = [
      t.apiKey,
      ...(await Promise.all([1, 2].map(async () => (await createKey(server.db.knex, t.app, { kind: 'rest' })).secret))),
    ];
    const together = await Promise.all(
      keys.flatMap((k) => [sql(server, k, t.app.id, count), sql(server, k, t.app.id, count)]),
    );
    for (let i = 0; i < 6; i++) together.push(await sql(server, t.apiKey, t.app.id, count));
    for (const r of together)
      expect({ status: r.status, data: r.body.data }).toEqual({ status: 200, data: [{ n: 100 }] });
  }, 120_000);
});
