// The built-in natural-language engine on seed-demo data (seed 1) with a fixed clock: every case of
// bench/nl-cases.json must give the rows its hand-written reference SQL gives, and those rows must
// still be the recorded `expected` ones. Also: seeding is deterministic and idempotent, unknown
// questions give QUERY_NOT_UNDERSTOOD with examples, and the documented examples are understood.
import fs from 'node:fs';
import path from 'node:path';
import { createTallyClient } from '@tally/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NL_EXAMPLES } from '../../server/src/analytics/nl/examples.js';
import { loadConfig } from '../../server/src/config.js';
import { uuidv7 } from '../../server/src/ids.js';
import { createLogger } from '../../server/src/logger.js';
import { type RunningServer, startServer } from '../../server/src/server.js';
import { createKey } from '../../server/src/services/keys.js';
import type { Database } from '../../server/src/storage/db.js';
import { insertApp, insertOrganization } from '../../server/src/storage/tenancy.js';
import { openTestDatabase, TEST_ADMIN_TOKEN } from '../helpers/server.js';

interface Case {
  question: string;
  reference_sql: string;
  expected: Record<string, unknown>[] | null;
}
const file = path.resolve(import.meta.dirname, '../../bench/nl-cases.json');
const doc = JSON.parse(fs.readFileSync(file, 'utf8')) as {
  seed: { seed: number; users: number; days: number; end_date: string };
  clock: string;
  cases: Case[];
};

let db: Database;
let running: RunningServer;
let appId: string;
let client: ReturnType<typeof createTallyClient>;
let admin: ReturnType<typeof createTallyClient>;

beforeAll(async () => {
  db = await openTestDatabase();
  const config = loadConfig({
    NODE_ENV: 'test',
    RATE_LIMITS: 'off',
    LOG_LEVEL: 'silent',
    PORT: '0',
    DATA_DIR: '/nonexistent-tally-nl-test',
    ADMIN_TOKEN: TEST_ADMIN_TOKEN,
  });
  const fixed = new Date(doc.clock);
  running = await startServer(config, createLogger('silent'), {
    database: db,
    clock: () => fixed,
    writeCredentialsFile: false,
  });
  const org = await insertOrganization(db.knex, { id: uuidv7(), name: 'NL test org' });
  const app = await insertApp(db.knex, { id: uuidv7(), organization_id: org.id, name: 'Demo shop' });
  appId = app.id;
  const key = await createKey(db.knex, app, { kind: 'rest' });
  client = createTallyClient({ baseUrl: running.url, apiKey: key.secret });
  admin = createTallyClient({ baseUrl: running.url, adminToken: TEST_ADMIN_TOKEN });
  const seeded = await admin.adminDemoSeed({ path: { app_id: appId }, body: doc.seed });
  expect(seeded.error).toBeUndefined();
  expect(seeded.data).toMatchObject({ success: true, users: doc.seed.users });
  expect(seeded.data!.events).toBeGreaterThan(1000);
}, 120_000);
afterAll(async () => {
  await running?.close();
  await db?.close();
});

/** Numbers as numbers whichever way they arrived (pg gives bigint and numeric as text). */
const normalise = (rows: Record<string, unknown>[]) =>
  rows.map((r) =>
    Object.fromEntries(
      Object.entries(r).map(([k, v]) => [k, typeof v === 'string' && /^-?\d+(\.\d+)?$/.test(v) ? Number(v) : v]),
    ),
  );

async function reference(sql: string) {
  // knex.raw reads `?` as a binding: escape jsonb's ? operator.
  const result = await db.knex.raw(sql.replaceAll('?', '\\?').replaceAll(':app', `'${appId}'`));
  return normalise(result.rows);
}

describe('seed-demo', () => {
  it('is deterministic and idempotent: the same options store nothing new', async () => {
    const before = await reference('select count(*) as n from events where app_id = :app');
    const again = await admin.adminDemoSeed({ path: { app_id: appId }, body: doc.seed });
    expect(again.data).toMatchObject({ success: true, events: 0 });
    expect(await reference('select count(*) as n from events where app_id = :app')).toEqual(before);
    const shape = await reference(
      `select count(distinct user_id) as users, count(*) filter (where event_name = 'purchase') as purchases,
         count(*) filter (where event_name = 'purchase' and properties ? 'revenue' and properties ? 'country') as priced,
         count(*) filter (where event_name = 'item_view' and properties ? 'category') as views
       from events where app_id = :app`,
    );
    expect(shape[0]).toMatchObject({ users: doc.seed.users });
    expect(shape[0]!.purchases).toBeGreaterThan(20);
    expect(shape[0]!.priced).toBe(shape[0]!.purchases);
    expect(shape[0]!.views).toBeGreaterThan(500);
    // some users churn: their last event is long before the end
    const churned = await reference(
      `select count(*) as n from (select user_id from events where app_id = :app group by 1
         having max(created_at) < timestamptz '2026-03-17 00:00:00+00') s`,
    );
    expect(churned[0]!.n).toBeGreaterThan(0);
  });
});

describe('bench/nl-cases.json', () => {
  it('has at least 40 cases whose reference SQL still gives the recorded results', async () => {
    expect(doc.cases.length).toBeGreaterThanOrEqual(40);
    const update = process.env.UPDATE_NL_CASES === '1';
    for (const c of doc.cases) {
      const rows = await reference(c.reference_sql);
      if (update) c.expected = rows;
      else expect(rows, c.question).toEqual(c.expected);
      expect(rows.length, `${c.question} should return rows`).toBeGreaterThan(0);
    }
    if (update) fs.writeFileSync(file, `${JSON.stringify(doc, null, 2)}\n`);
  });

  it.each(doc.cases.map((c) => [c.question, c] as const))('answers "%s"', async (_q, c) => {
    const { data, error } = await client.analyticsQuery({ body: { app_id: appId, query: c.question } });
    expect(error, JSON.stringify(error)).toBeUndefined();
    expect(data!.query_method).toBe('rules');
    expect(normalise(data!.data), `${c.question}\n${data!.sql}`).toEqual(c.expected);
    expect(data!.rows_returned).toBe(c.expected!.length);
  });
});

describe('questions outside the language', () => {
  it('answers QUERY_NOT_UNDERSTOOD with examples', async () => {
    for (const q of ['what is the meaning of life', 'total happiness by planet', 'top 3 galaxies']) {
      const { error, response } = await client.analyticsQuery({ body: { app_id: appId, query: q } });
      expect(response.status, q).toBe(400);
      expect(error, q).toMatchObject({ code: 'QUERY_NOT_UNDERSTOOD', details: { examples: NL_EXAMPLES } });
    }
  });

  it('understands every example it offers, and its reported SQL runs in the sandbox to the same rows', async () => {
    for (const q of NL_EXAMPLES) {
      const { data, error } = await client.analyticsQuery({ body: { app_id: appId, query: q } });
      expect(error, q).toBeUndefined();
      expect(data!.query_method, q).toBe('rules');
      const again = await client.analyticsQuery({ body: { app_id: appId, query: data!.sql! } });
      expect(again.error, data!.sql).toBeUndefined();
      expect(again.data!.query_method).toBe('sql');
      expect(again.data!.data, q).toEqual(data!.data);
    }
  });
});
