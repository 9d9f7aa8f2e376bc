// Migration 009 marks where existing users came from: only users a website form created, or
// users seen only through website traffic, become `website` (reachable by an unverified
// identify); every other existing user is `api`.
import type { Knex } from 'knex';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uuidv7 } from '../../server/src/ids.js';
import type { Database } from '../../server/src/storage/db.js';
import * as m009 from '../../server/src/storage/migrations/009-identity.js';
import { insertApp, insertOrganization } from '../../server/src/storage/tenancy.js';
import { openOwnDatabase } from '../helpers/own-database.js';

let database: Database;
let close: (() => Promise<void>) | undefined;

beforeAll(async () => {
  // Its own database: the migration is rolled back and forth here, under no other test.
  ({ database, close } = await openOwnDatabase('tally_m009'));
});
afterAll(() => close?.());

async function user(db: Knex, appId: string, externalId: string, origin: object | null, sources: string[]) {
  const id = uuidv7();
  await db('users').insert({ id, app_id: appId, external_id: externalId, origin: origin && JSON.stringify(origin) });
  for (const source of sources) {
    await db('events').insert({
      id: uuidv7(),
      app_id: appId,
      user_id: id,
      event_name: 'e',
      source,
      created_at: new Date(),
    });
  }
}

describe('migration 009', () => {
  it('backfills created_via from what each user has done, and rolls back cleanly', async () => {
    const db = database.knex;
    await m009.down(db);
    expect(await db.schema.hasColumn('users', 'created_via')).toBe(false);
    expect(await db.schema.hasTable('app_identity_secrets')).toBe(false);

    const org = await insertOrganization(db, { id: uuidv7(), name: 'm009' });
    const app = await insertApp(db, { id: uuidv7(), organization_id: org.id, name: 'm009' });
    const form = { channel: 'website', website_url: 'https://shop.example/signup' };
    await user(db, app.id, 'form-user', form, []);
    await user(db, app.id, 'form-lookalike', { ...form, campaign: 'spring' }, []);
    await user(db, app.id, 'visitor', null, ['website', 'website']);
    await user(db, app.id, 'mixed', null, ['website', 'api']);
    await user(db, app.id, 'backend', null, ['api']);
    await user(db, app.id, 'profile-only', null, []);

    await m009.up(db);
    const rows = await db('users').where({ app_id: app.id }).select('external_id', 'created_via');
    expect(Object.fromEntries(rows.map((r) => [r.external_id, r.created_via]))).toEqual({
      'form-user': 'website',
      'form-lookalike': 'api',
      visitor: 'website',
      mixed: 'api',
      backend: 'api',
      'profile-only': 'api',
    });
    expect(await db.schema.hasTable('app_identity_secrets')).toBe(true);
    // New rows default to the REST API.
    await db('users').insert({ id: uuidv7(), app_id: app.id, external_id: 'new' });
    expect((await db('users').where({ app_id: app.id, external_id: 'new' }).first()).created_via).toBe('api');
  });
});
