// Migration 017 adds users.api_written_at and marks the website users whose profile holds what
// only the REST API writes (a phone, properties beyond a form's name fields, an origin other than
// the one a website form records), so a browser without a hash no longer reaches them.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uuidv7 } from '../../server/src/ids.js';
import type { Database } from '../../server/src/storage/db.js';
import * as m017 from '../../server/src/storage/migrations/017-api-written.js';
import { insertApp, insertOrganization } from '../../server/src/storage/tenancy.js';
import { openOwnDatabase } from '../helpers/own-database.js';

let database: Database;
let close: (() => Promise<void>) | undefined;

beforeAll(async () => {
  ({ database, close } = await openOwnDatabase('tally_m017'));
});
afterAll(() => close?.());

describe('migration 017', () => {
  it('marks website users the REST API evidently wrote, leaves the others open, and rolls back cleanly', async () => {
    const db = database.knex;
    await m017.down(db);
    expect(await db.schema.hasColumn('users', 'api_written_at')).toBe(false);
    const org = await insertOrganization(db, { id: uuidv7(), name: 'm017' });
    const app = await insertApp(db, { id: uuidv7(), organization_id: org.id, name: 'm017' });
    const form = { channel: 'website', website_url: 'https://shop.example/signup' };
    const updatedAt = new Date('2026-03-01T10:00:00Z');
    const users: [string, string, Record<string, unknown>][] = [
      ['form-user', 'website', { origin: form, properties: { first_name: 'Ann', name: 'Ann Lee' } }],
      ['visitor', 'website', {}],
      ['verified-visitor', 'website_verified', {}],
      ['with-phone', 'website', { phone: '+33123456789' }],
      ['with-plan', 'website', { origin: form, properties: { first_name: 'Bo', plan: 'gold' } }],
      ['other-origin', 'website', { origin: { channel: 'ads' } }],
      ['form-plus', 'website', { origin: { ...form, campaign: 'spring' } }],
      ['verified-phone', 'website_verified', { phone: '+1555' }],
      ['backend', 'api', { phone: '+1555', properties: { plan: 'gold' } }],
    ];
    for (const [externalId, createdVia, fields] of users) {
      await db('users').insert({
        id: uuidv7(),
        app_id: app.id,
        external_id: externalId,
        created_via: createdVia,
        updated_at: updatedAt,
        phone: fields.phone ?? null,
        properties: JSON.stringify(fields.properties ?? {}),
        origin: fields.origin ? JSON.stringify(fields.origin) : null,
      });
    }
    await m017.up(db);
    const rows = await db('users').where({ app_id: app.id }).select('external_id', 'api_written_at');
    const marked = Object.fromEntries(rows.map((r) => [r.external_id, r.api_written_at?.toISOString() ?? null]));
    const at = updatedAt.toISOString();
    expect(marked).toEqual({
      'form-user': null,
      visitor: null,
      'verified-visitor': null,
      'with-phone': at,
      'with-plan': at,
      'other-origin': at,
      'form-plus': at,
      'verified-phone': at,
      backend: null, // closed already: created through the REST API
    });
    // New rows start unwritten.
    await db('users').insert({ id: uuidv7(), app_id: app.id, external_id: 'new', created_via: 'website' });
    expect((await db('users').where({ app_id: app.id, external_id: 'new' }).first()).api_written_at).toBeNull();
  });
});
