// A database for Tally processes that a test stops, kills and starts again: on PostgreSQL the
// run's database, on the embedded database a copy of the run's migrated template in a directory of
// its own (DATA_DIR). A tenant (organization, app, REST and MCP keys) is written straight into it.
// `read(fn)` looks into the database between processes: the embedded one only while no process
// holds it (its lock refuses a second opener).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { inject } from 'vitest';
import { createKey } from '../../server/src/admin/keys.js';
import { uuidv7 } from '../../server/src/ids.js';
import { createLogger } from '../../server/src/logger.js';
import { type Database, openDatabase } from '../../server/src/storage/db.js';
import { insertApp, insertOrganization } from '../../server/src/storage/tenancy.js';
import { TEST_ADMIN_TOKEN } from './server.js';

export interface ProcessDatabase {
  kind: 'postgres' | 'pglite';
  /** What a server process needs to open it (DATABASE_URL or DATA_DIR, and the admin token). */
  env: Record<string, string>;
  tenant: { appId: string; apiKey: string; mcpKey: string };
  /** Runs `fn` on the database (embedded: opened for it, so no process may hold it meanwhile). */
  read<T>(fn: (db: Database) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

export async function processDatabase(): Promise<ProcessDatabase> {
  const target = inject('database');
  const logger = createLogger('silent');
  let shared: Database | undefined;
  let env: Record<string, string>;
  let dir: string | undefined;
  if (target.kind === 'postgres') {
    shared = await openDatabase({ databaseUrl: target.url, migrate: false, logger });
    env = { DATABASE_URL: target.url };
  } else {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tally-proc-'));
    fs.cpSync(target.templateDir, dir, { recursive: true });
    env = { DATA_DIR: dir, DATABASE_URL: '' };
  }
  const read = async <T>(fn: (db: Database) => Promise<T>): Promise<T> => {
    if (shared) return fn(shared);
    const db = await openDatabase({ dataDir: dir, migrate: false, logger });
    try {
      return await fn(db);
    } finally {
      await db.close();
    }
  };
  const tenant = await read(async (db) => {
    const org = await insertOrganization(db.knex, { id: uuidv7(), name: `Process org ${uuidv7()}` });
    const app = await insertApp(db.knex, { id: uuidv7(), organization_id: org.id, name: 'Process app' });
    const rest = await createKey(db.knex, app, { kind: 'rest' });
    const mcp = await createKey(db.knex, app, { kind: 'mcp', permissions: ['read', 'write'] });
    return { appId: app.id, apiKey: rest.secret, mcpKey: mcp.secret };
  });
  return {
    kind: target.kind,
    env: { ...env, ADMIN_TOKEN: TEST_ADMIN_TOKEN },
    tenant,
    read,
    async close() {
      await shared?.close();
      if (dir) fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The insert_ids stored for the app that start with `prefix`, and the number of its events named `eventName`. */
export async function storedEvents(db: Database, appId: string, prefix: string, eventName: string) {
  const rows: { insert_id: string }[] = await db
    .knex('event_dedup')
    .where({ app_id: appId })
    .andWhere('insert_id', 'like', `${prefix}%`)
    .select('insert_id');
  const [count] = await db.knex('events').where({ app_id: appId, event_name: eventName }).count({ n: '*' });
  return { insertIds: new Set(rows.map((r) => r.insert_id)), events: Number(count!.n) };
}
