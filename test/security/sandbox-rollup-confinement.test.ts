// The sandbox role and the activity rollup (PostgreSQL): with the setup Tally applies, the role is
// confined and reads the rollup; a rollup table it can read without row-level security makes it
// unconfined (caller SQL is then refused), and a table it cannot read leaves it confined but keeps
// Tally's questions on raw events (`readsRollup`). On a database of this file's own, since row-level
// security is a property of the table for every session.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkConfinement, ensureSandboxSetup } from '../../server/src/sandbox/queries/role.js';
import type { Database } from '../../server/src/storage/db.js';
import { openOwnDatabase } from '../helpers/own-database.js';

let database: Database;
let close: (() => Promise<void>) | undefined;
let url: URL;

// Not in the run as a role that is not a superuser (TEST_DATABASE_REUSE): it cannot create databases.
const ownDatabase = process.env.TEST_DATABASE_URL && !process.env.TEST_DATABASE_REUSE;

describe.runIf(ownDatabase)('the sandbox role and the activity rollup (PostgreSQL)', () => {
  beforeAll(async () => {
    ({ database, close } = await openOwnDatabase('tally_rollup_role'));
    const { role, password } = await ensureSandboxSetup(database.knex);
    const { rows } = await database.knex.raw('select current_database() as db');
    url = new URL(process.env.TEST_DATABASE_URL!);
    url.pathname = `/${rows[0].db}`;
    url.username = role;
    url.password = password ?? '';
  });
  afterAll(() => close?.());

  const check = async () => {
    const client = new pg.Client({ connectionString: url.toString() });
    await client.connect();
    try {
      return await checkConfinement(client);
    } finally {
      await client.end();
    }
  };

  it('is confined and reads the rollup with the setup Tally applies', async () => {
    expect(await check()).toEqual({ confined: true, problems: [], readsRollup: true });
  });

  it('is not confined when it can read a rollup table without row-level security', async () => {
    await database.knex.raw('alter table app_day_events disable row level security');
    const found = await check();
    expect(found.confined).toBe(false);
    expect(found.problems).toContain('row-level security is not in force on app_day_events');
    await database.knex.raw('alter table app_day_events enable row level security');
  });

  it('stays confined, without reading the rollup, when a rollup table is not granted', async () => {
    const { role } = await ensureSandboxSetup(database.knex);
    await database.knex.raw(`revoke select on app_day_events from "${role}"`);
    await database.knex.raw('alter table app_day_events disable row level security');
    expect(await check()).toEqual({ confined: true, problems: [], readsRollup: false });
    // Set up again, as Tally does at start: granted back, row-level security back in force.
    await ensureSandboxSetup(database.knex);
    expect(await check()).toEqual({ confined: true, problems: [], readsRollup: true });
  });
});
