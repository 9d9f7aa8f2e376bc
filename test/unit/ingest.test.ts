// The group-commit writer on its own: concurrent submissions share a transaction, a failing
// request does not sink the others in its group, and nothing is acknowledged before it is stored;
// and the ingestion entry point's input rules, whatever calls it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ValidationError } from '../../server/src/errors.js';
import { uuidv7 } from '../../server/src/ids.js';
import { createLogger } from '../../server/src/logger.js';
import type { Database } from '../../server/src/storage/db.js';
import { EventWriter, type IngestEvent } from '../../server/src/storage/event-writer.js';
import { insertApp, insertOrganization } from '../../server/src/storage/tenancy.js';
import { type IncomingEvent, ingest } from '../../server/src/tracking/ingestion.js';
import { openTestDatabase } from '../helpers/server.js';

let db: Database;
let appId: string;

beforeAll(async () => {
  db = await openTestDatabase();
  const org = await insertOrganization(db.knex, { id: uuidv7(), name: 'ingest unit' });
  appId = (await insertApp(db.knex, { id: uuidv7(), organization_id: org.id, name: 'ingest unit' })).id;
});
afterAll(() => db?.close());

function event(app: string, userRef: string, extra: Partial<IngestEvent> = {}): IngestEvent {
  const now = new Date();
  return {
    appId: app,
    userRef,
    eventName: 'unit',
    properties: {},
    createdAt: now,
    receivedAt: now,
    source: 'api',
    isBot: false,
    ...extra,
  };
}

describe('EventWriter', () => {
  it('groups concurrent requests and isolates a failing one', async () => {
    const ingestor = new EventWriter(db.knex, createLogger('silent'));
    const missingApp = uuidv7(); // no such app: its insert violates a foreign key
    const results = await Promise.allSettled([
      ingestor.submit([event(appId, 'g-1'), event(appId, 'g-2')]),
      ingestor.submit([event(missingApp, 'g-3')]),
      ingestor.submit([event(appId, 'g-1', { insertId: 'same' }), event(appId, 'g-1', { insertId: 'same' })]),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    const third = (results[2] as PromiseFulfilledResult<{ eventId: string; duplicate: boolean }[]>).value;
    expect(third[0]!.duplicate).toBe(false);
    expect(third[1]).toEqual({ eventId: third[0]!.eventId, duplicate: true });
    const stored = await db.knex('events').where({ app_id: appId });
    expect(stored).toHaveLength(3);
    const users = await db.knex('users').where({ app_id: appId }).orderBy('external_id');
    expect(users.map((u) => [u.external_id, u.event_count])).toEqual([
      ['g-1', '2'],
      ['g-2', '1'],
    ]);
    expect(await db.knex('users').where({ external_id: 'g-3' })).toHaveLength(0);
  });

  it('acknowledges only after the rows are committed', async () => {
    const ingestor = new EventWriter(db.knex, createLogger('silent'));
    const [result] = await ingestor.submit([event(appId, 'ack-1')]);
    // A separate query sees the row as soon as submit resolves.
    const row = await db.knex('events').where({ app_id: appId, id: result!.eventId }).first();
    expect(row).toBeDefined();
  });

  it('stores a repeated insert_id again once the 7-day window has passed', async () => {
    const ingestor = new EventWriter(db.knex, createLogger('silent'));
    const old = new Date(Date.now() - 8 * 24 * 3600_000);
    const [first] = await ingestor.submit([
      event(appId, 'w-1', { insertId: 'window', receivedAt: old, createdAt: old }),
    ]);
    const [second] = await ingestor.submit([event(appId, 'w-1', { insertId: 'window' })]);
    expect(second!.duplicate).toBe(false);
    expect(second!.eventId).not.toBe(first!.eventId);
    const [third] = await ingestor.submit([event(appId, 'w-1', { insertId: 'window' })]);
    expect(third).toEqual({ eventId: second!.eventId, duplicate: true });
  });

  it('refuses events that break the input rules, whatever called it, and stores none of them', async () => {
    const ctx = { db: db.knex, ingestor: new EventWriter(db.knex, createLogger('silent')), clock: () => new Date() };
    let deep: Record<string, unknown> = { leaf: 1 };
    for (let i = 1; i < 33; i++) deep = { a: deep };
    const e = (extra: Partial<IncomingEvent> = {}): IncomingEvent => ({
      user_id: 'rules-1',
      event_name: 'unit',
      ...extra,
    });
    const refused = ingest(ctx, {
      app: { id: appId, ip_mode: 'full' },
      source: 'demo',
      at: '/events',
      events: [
        e(),
        e({ event_name: 'a\u0000b' }),
        e({ properties: { '\uD800': 1, n: Number.POSITIVE_INFINITY, deep } }),
        e({ insert_id: 'i'.repeat(65), timestamp: new Date(Date.UTC(1969, 11, 31)) }),
        e({ ua: 'u'.repeat(1025), ip: '1'.repeat(46), user_id: 'u'.repeat(256) }),
      ],
    });
    await expect(refused).rejects.toBeInstanceOf(ValidationError);
    const error = (await refused.catch((e: ValidationError) => e)) as ValidationError;
    expect(error.details).toEqual({
      errors: [
        {
          path: '/events/1/event_name',
          message: 'contains a NUL character (U+0000), which cannot be stored; remove it',
        },
        {
          path: '/events/2/properties/\\ud800',
          message:
            'is a key that contains a lone UTF-16 surrogate (text that is not valid Unicode); send well-formed UTF-8 text',
        },
        {
          path: '/events/2/properties/n',
          message: 'is not a finite number (a JSON number this large overflows to Infinity)',
        },
        {
          path: `/events/2/properties/deep${'/a'.repeat(31)}`,
          message: 'is nested more than 32 levels deep; free-form objects may nest at most 32 levels',
        },
        { path: '/events/3/insert_id', message: 'must NOT have more than 64 characters' },
        { path: '/events/3/timestamp', message: 'is before 1970-01-01T00:00:00Z, the earliest event time accepted' },
        { path: '/events/4/user_id', message: 'must NOT have more than 255 characters' },
        { path: '/events/4/ip', message: 'must NOT have more than 45 characters' },
        { path: '/events/4/ua', message: 'must NOT have more than 1024 characters' },
      ],
    });
    const stored = await db.knex('users').where({ app_id: appId, external_id: 'rules-1' });
    expect(stored).toHaveLength(0);
  });

  it('measures lengths in code points: 255 emoji make a valid event name', async () => {
    const ctx = { db: db.knex, ingestor: new EventWriter(db.knex, createLogger('silent')), clock: () => new Date() };
    const name = '\uD83D\uDE00'.repeat(255);
    const [result] = await ingest(ctx, {
      app: { id: appId, ip_mode: 'full' },
      source: 'api',
      at: '/body',
      events: [{ user_id: 'rules-2', event_name: name }],
    });
    const row = await db.knex('events').where({ app_id: appId, id: result!.eventId }).first();
    expect(row.event_name).toBe(name);
  });
});
