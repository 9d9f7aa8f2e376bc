// A Tally server with a fixed clock and one app filled by seed-demo, for the natural-language
// cases (bench/nl-cases.json, test/fixtures/audience-criteria.json): their reference SQL runs on
// the real tables of that app, and the engine must give the same rows.
import { createTallyClient } from '@tally/client';
import { expect } from 'vitest';
import { createKey } from '../../server/src/admin/keys.js';
import { loadConfig } from '../../server/src/config.js';
import type { ServiceContext } from '../../server/src/context.js';
import { uuidv7 } from '../../server/src/ids.js';
import { createLogger } from '../../server/src/logger.js';
import { type RunningServer, startServer } from '../../server/src/server.js';
import type { Database } from '../../server/src/storage/db.js';
import { insertApp, insertOrganization } from '../../server/src/storage/tenancy.js';
import { openTestDatabase, TEST_ADMIN_TOKEN } from './server.js';

export interface CaseFile {
  seed: { seed: number; users: number; days: number; end_date: string };
  clock: string;
  /** The organization's time zone (UTC when absent): the demo data's hours and days follow it. */
  time_zone?: string;
}

export interface DemoApp {
  db: Database;
  running: RunningServer;
  appId: string;
  client: ReturnType<typeof createTallyClient>;
  admin: ReturnType<typeof createTallyClient>;
  /** A service context on the same database and clock. */
  ctx: ServiceContext;
  /** Runs reference SQL over the real tables (`:app` is the app id). */
  reference(sql: string): Promise<Record<string, unknown>[]>;
  close(): Promise<void>;
}

/** Numbers as numbers whichever way they arrived (pg gives bigint and numeric as text). */
export const normalise = (rows: Record<string, unknown>[]) =>
  rows.map((r) =>
    Object.fromEntries(
      Object.entries(r).map(([k, v]) => [k, typeof v === 'string' && /^-?\d+(\.\d+)?$/.test(v) ? Number(v) : v]),
    ),
  );

export async function startDemoApp(file: CaseFile, env: Record<string, string> = {}): Promise<DemoApp> {
  const db = await openTestDatabase();
  const config = loadConfig({
    NODE_ENV: 'test',
    RATE_LIMITS: 'off',
    LOG_LEVEL: 'silent',
    PORT: '0',
    DATA_DIR: '/nonexistent-tally-nl-test',
    ADMIN_TOKEN: TEST_ADMIN_TOKEN,
    EMBEDDED_QUERY_TIMEOUT_MS: '15000', // busy shared machines: see helpers/server.ts
    // This server's clock is fixed: it must never take the campaign runs of the one campaign test
    // server that shares the PostgreSQL job queue (see helpers/server.ts).
    CAMPAIGN_WORKERS: 'off',
    ...env,
  });
  const fixed = new Date(file.clock);
  const clock = () => fixed;
  const running = await startServer(config, createLogger('silent'), {
    database: db,
    clock,
    writeCredentialsFile: false,
  });
  const org = await insertOrganization(db.knex, {
    id: uuidv7(),
    name: 'NL test org',
    ...(file.time_zone ? { timezone: file.time_zone } : {}),
  });
  const app = await insertApp(db.knex, { id: uuidv7(), organization_id: org.id, name: 'Demo shop' });
  const key = await createKey(db.knex, app, { kind: 'rest' });
  const client = createTallyClient({ baseUrl: running.url, apiKey: key.secret });
  const admin = createTallyClient({ baseUrl: running.url, adminToken: TEST_ADMIN_TOKEN });
  const seeded = await admin.adminDemoSeed({ path: { app_id: app.id }, body: file.seed });
  expect(seeded.error).toBeUndefined();
  expect(seeded.data).toMatchObject({ success: true, users: file.seed.users });
  return {
    db,
    running,
    appId: app.id,
    client,
    admin,
    ctx: { ...running.tally.context, llm: null },
    async reference(sql: string) {
      // knex.raw reads `?` as a binding: escape jsonb's ? operator.
      const result = await db.knex.raw(sql.replaceAll('?', '\\?').replaceAll(':app', `'${app.id}'`));
      return normalise(result.rows);
    },
    async close() {
      await running.close();
      await db.close();
    },
  };
}
