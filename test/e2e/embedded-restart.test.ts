// The embedded database's thread can be stopped and restarted (a sandbox query over its time cap,
// or a crash) while events arrive: every event whose request was acknowledged is stored.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { disableSandboxCheckerForTests } from '../../server/src/sandbox/sandbox.js';
import { startTestServer, type Tenant, type TestServer } from '../helpers/server.js';

let server: TestServer;
let tenant: Tenant;

async function send(n: number, prefix: string, concurrency = 8) {
  const acknowledged: string[] = [];
  let failed = 0;
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) {
        const i = next++;
        const insertId = `${prefix}-${i}`;
        try {
          const { response } = await tenant.client.eventsTrack({
            body: { user_id: `u-${i % 7}`, event_name: prefix, insert_id: insertId },
          });
          if (response.status === 200) acknowledged.push(insertId);
          else failed++;
        } catch {
          failed++;
        }
      }
    }),
  );
  return { acknowledged, failed };
}

async function storedInsertIds(prefix: string): Promise<Set<string>> {
  const rows = await server.db.knex('event_dedup').where({ app_id: tenant.app.id }).select('insert_id');
  const events = await server.db.knex('events').where({ app_id: tenant.app.id, event_name: prefix }).count({ n: '*' });
  const ids = new Set(
    rows.map((r: { insert_id: string }) => r.insert_id).filter((id: string) => id.startsWith(`${prefix}-`)),
  );
  expect(Number(events[0]!.n)).toBe(ids.size);
  return ids;
}

describe.runIf(!process.env.TEST_DATABASE_URL)('embedded database restarts', () => {
  beforeAll(async () => {
    server = await startTestServer({ EMBEDDED_QUERY_TIMEOUT_MS: '1000' });
    tenant = await server.createTenant();
  });
  afterAll(async () => {
    disableSandboxCheckerForTests(false);
    await server?.close();
  });

  it('keeps every acknowledged event when a sandbox query over its cap restarts the database', async () => {
    disableSandboxCheckerForTests(true);
    const generation = server.db.embedded!.generation;
    const writes = send(300, 'capped');
    await new Promise((r) => setTimeout(r, 200));
    const res = await fetch(`${server.url}/v1/analytics/query`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tenant.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        app_id: tenant.app.id,
        query: 'WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r',
      }),
    });
    expect(((await res.json()) as { code: string }).code).toBe('QUERY_TIMEOUT');
    const { acknowledged, failed } = await writes;
    disableSandboxCheckerForTests(false);
    expect(server.db.embedded!.generation).toBe(generation + 1);
    // queued behind the query, none of them failed
    expect(failed).toBe(0);
    const stored = await storedInsertIds('capped');
    for (const id of acknowledged) expect(stored.has(id), id).toBe(true);
    expect(stored.size).toBe(300);
  }, 60_000);

  it('keeps every acknowledged event when the database thread is killed while writes are in flight', async () => {
    const writes = send(400, 'killed');
    await new Promise((r) => setTimeout(r, 300));
    await server.db.embedded!.restart('test: kill while writing');
    const { acknowledged } = await writes;
    const stored = await storedInsertIds('killed');
    expect(acknowledged.length).toBeGreaterThan(0);
    for (const id of acknowledged) expect(stored.has(id), id).toBe(true);
    // the service is whole again
    const after = await tenant.client.eventsTrack({ body: { user_id: 'after', event_name: 'after_restart' } });
    expect(after.response.status).toBe(200);
  }, 60_000);
});
