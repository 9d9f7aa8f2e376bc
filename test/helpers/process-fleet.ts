// Real server processes on a PostgreSQL database of their own (so their campaign workers see no
// other test's work): the database, a tenant written straight into it, and a job runner that
// queues campaign jobs for whichever process takes them.
import { randomBytes } from 'node:crypto';
import { createTallyClient, type TallyClient } from '@tally/client';
import knexModule from 'knex';
import { inject } from 'vitest';
import { createKey } from '../../server/src/admin/keys.js';
import { uuidv7 } from '../../server/src/ids.js';
import { JobRunner } from '../../server/src/jobs/runner.js';
import { createLogger } from '../../server/src/logger.js';
import { sandboxRoleName } from '../../server/src/sandbox/queries/role.js';
import { type Database, openDatabase } from '../../server/src/storage/db.js';
import { insertApp, insertOrganization } from '../../server/src/storage/tenancy.js';
import { startServerProcess } from './process-server.js';
import { SECRET_KEY } from './push-setup.js';
import { TEST_ADMIN_TOKEN } from './server.js';

export const onPostgres = () => inject('database').kind === 'postgres';

export interface Fleet {
  url: string;
  env: Record<string, string>;
  db: Database;
  jobs: JobRunner;
  admin(baseUrl: string): TallyClient;
  tenant(): Promise<{ appId: string; apiKey: string }>;
  close(): Promise<void>;
}

/** A fresh database on the run's PostgreSQL server, migrated by a first process start. */
export async function startFleet(extraEnv: Record<string, string> = {}): Promise<Fleet> {
  const target = inject('database');
  if (target.kind !== 'postgres') throw new Error('process fleets need PostgreSQL');
  const name = `tally_fleet_${Date.now()}_${randomBytes(3).toString('hex')}`;
  const admin = knexModule({ client: 'pg', connection: target.url, pool: { min: 0, max: 1 } });
  await admin.raw(`create database ${name}`);
  const url = new URL(target.url);
  url.pathname = `/${name}`;
  const env = {
    DATABASE_URL: url.toString(),
    ADMIN_TOKEN: TEST_ADMIN_TOKEN,
    SECRET_KEY,
    PUSH_ENDPOINT_ALLOWLIST: '127.0.0.1',
    CAMPAIGN_WORKERS: 'on',
    ...extraEnv,
  };
  const first = await startServerProcess(env); // migrates the database
  await first.stop();
  const db = await openDatabase({ databaseUrl: url.toString(), migrate: false, logger: createLogger('silent') });
  const jobs = new JobRunner(db, createLogger('silent'));
  await jobs.start([]);
  return {
    url: url.toString(),
    env,
    db,
    jobs,
    admin: (baseUrl) => createTallyClient({ baseUrl, adminToken: TEST_ADMIN_TOKEN }),
    async tenant() {
      const org = await insertOrganization(db.knex, { id: uuidv7(), name: `Fleet org ${name}` });
      const app = await insertApp(db.knex, { id: uuidv7(), organization_id: org.id, name: 'Fleet app' });
      const rest = await createKey(db.knex, app, { kind: 'rest' });
      return { appId: app.id, apiKey: rest.secret };
    },
    async close() {
      await jobs.stop();
      await db.close();
      await admin.raw(`drop database if exists ${name} with (force)`);
      await admin.raw(`drop role if exists ${sandboxRoleName(name)}`);
      await admin.destroy();
    },
  };
}

/** Waits until `done()` is true (checked every 200 ms) or throws after `ms`. */
export async function until(done: () => Promise<boolean>, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await done()) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`timed out waiting for ${what}`);
}
