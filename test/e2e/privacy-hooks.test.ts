// Erasure hooks (privacy/erasure-hooks.ts, registered on the server's composition root) run inside
// the erasure's transaction: their counts are reported as queued_sends_cancelled, and a hook that
// throws rolls the whole erasure back. Events written while a user is erased never outlive it.
// Open-ended user ids, on erase or export, never answer 500 and never reach a user of another
// tenant. The /v1 calls are rate limited as "other" REST calls, the admin ones are not.
import { createTallyClient } from '@tally/client';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findUserById } from '../../server/src/storage/users.js';
import { startTestServer, type Tenant, type TestServer } from '../helpers/server.js';

let server: TestServer;
let a: Tenant;
let b: Tenant;

beforeAll(async () => {
  server = await startTestServer();
  a = await server.createTenant();
  b = await server.createTenant();
});
afterAll(() => server?.close());

async function makeUser(t: Tenant, id: string): Promise<string> {
  const { error } = await t.client.eventsTrackBatch({
    body: {
      events: [
        { user_id: id, event_name: 'open' },
        { user_id: id, event_name: 'close' },
      ],
    },
  });
  expect(error).toBeUndefined();
  return (await server.db.knex('users').where({ app_id: t.app.id, external_id: id }).first()).id;
}

describe('erasure hooks', () => {
  it('run inside the transaction, and their counts are reported', async () => {
    const userId = await makeUser(a, 'hooked');
    const seen: { appId: string; userId: string; userVisible: boolean; eventsLeft: number }[] = [];
    const unregister = server.tally.context.erasureHooks.register('test-queued-sends', async (tx, appId, id) => {
      // inside the transaction the user still exists; the erasure has not committed yet
      const user = await findUserById(tx, appId, id);
      const events = await tx('events').where({ app_id: appId, user_id: id }).count('* as n').first();
      seen.push({ appId, userId: id, userVisible: user !== undefined, eventsLeft: Number(events?.n) });
      return 2;
    });
    try {
      const { data } = await a.client.usersErase({ path: { user_id: 'hooked' } });
      expect(data?.erased).toMatchObject({ users: 1, events: 2, queued_sends_cancelled: 2 });
    } finally {
      unregister();
    }
    expect(seen).toEqual([{ appId: a.app.id, userId, userVisible: true, eventsLeft: 2 }]);
  });

  it('a hook that throws rolls the whole erasure back', async () => {
    const userId = await makeUser(a, 'kept');
    await a.client.usersCreateAlias({ body: { user_id: 'kept', alias_id: 'kept-alias' } });
    const unregister = server.tally.context.erasureHooks.register('test-failing', async (tx, appId, id) => {
      // what ran before the failure (in the same transaction) must be undone too
      await tx('user_aliases').where({ app_id: appId, user_id: id }).delete();
      throw new Error('the campaign store is unavailable');
    });
    try {
      const { response } = await a.client.usersErase({ path: { user_id: 'kept-alias' } });
      expect(response.status).toBe(500);
    } finally {
      unregister();
    }
    expect(await server.db.knex('users').where({ id: userId }).first()).toBeDefined();
    expect(
      await server.db.knex('user_aliases').where({ app_id: a.app.id, alias_id: 'kept-alias' }).first(),
    ).toBeDefined();
    const events = await server.db.knex('events').where({ app_id: a.app.id, user_id: userId }).count('* as n').first();
    expect(Number(events?.n)).toBe(2);
    const audit = await server.db.knex('audit_entries').where({ app_id: a.app.id, user_ref: 'kept-alias' });
    expect(audit).toEqual([]);
    // and once the hook is gone the erasure goes through
    expect((await a.client.usersErase({ path: { user_id: 'kept' } })).data?.erased.aliases).toBe(1);
  });
});

describe('events racing an erasure', () => {
  it('either land before it (and are erased) or after it (on a new user), never orphaned', async () => {
    for (let round = 0; round < 8; round++) {
      const id = `race-${round}`;
      await makeUser(a, id);
      const writes = Array.from({ length: 4 }, () =>
        a.client.eventsTrack({ body: { user_id: id, event_name: 'race' } }),
      );
      const [erased, ...tracked] = await Promise.all([a.client.usersErase({ path: { user_id: id } }), ...writes]);
      expect(erased.response.status).toBe(200);
      for (const t of tracked) expect(t.response.status).toBe(200);
      const erasedEvents = Number(erased.data!.erased.events);
      const after = await server.db.knex('users').where({ app_id: a.app.id, external_id: id }).first();
      const left = after ? Number(after.event_count) : 0;
      expect(erasedEvents + left, id).toBe(2 + 4);
    }
    const orphans = await server.db
      .knex('events as e')
      .where('e.app_id', a.app.id)
      .whereNotExists((q) => q.select(1).from('users as u').whereRaw('u.app_id = e.app_id and u.id = e.user_id'))
      .count('* as n')
      .first();
    expect(Number(orphans?.n)).toBe(0);
  }, 120_000);
});

describe('odd user ids', () => {
  it('never answer 500 and never reach another tenant', async () => {
    await fc.assert(
      fc.asyncProperty(fc.string({ unit: 'binary', minLength: 1, maxLength: 40 }), async (id) => {
        // the other tenant holds a user with exactly this id, when the id is acceptable at all
        const stored = await b.client.eventsTrack({ body: { user_id: id, event_name: 'probe' } });
        const path = { user_id: id };
        const exported = await a.client.usersExport({ path });
        expect([400, 404], `export ${JSON.stringify(id)}`).toContain(exported.response.status);
        const erased = await a.client.usersErase({ path });
        expect([400, 404], `erase ${JSON.stringify(id)}`).toContain(erased.response.status);
        if (stored.response.status === 200) {
          const user = await server.db.knex('users').where({ app_id: b.app.id, external_id: id }).first();
          expect(user, `b's user ${JSON.stringify(id)}`).toBeDefined();
        }
      }),
      { numRuns: 40 },
    );
  }, 120_000);
});

describe('rate limits', () => {
  it('count /v1 erase and export as "other" REST calls; the admin twins are not limited', async () => {
    const limited = await startTestServer({ RATE_LIMITS: JSON.stringify({ other: 2 }) });
    try {
      const t = await limited.createTenant();
      const first = await t.client.usersExport({ path: { user_id: 'nobody' } });
      expect(first.response.status).toBe(404);
      expect(first.response.headers.get('x-ratelimit-limit')).toBe('2');
      expect((await t.client.usersErase({ path: { user_id: 'nobody' } })).response.status).toBe(404);
      const third = await t.client.usersErase({ path: { user_id: 'nobody' } });
      expect(third.response.status).toBe(429);
      expect(third.error).toMatchObject({ code: 'RATE_LIMIT_EXCEEDED' });
      const admin = createTallyClient({ baseUrl: limited.url, adminToken: limited.config.adminToken });
      for (let i = 0; i < 4; i++) {
        const path = { app_id: t.app.id, user_id: 'nobody' };
        expect((await admin.adminPrivacyEraseUser({ path })).response.status).toBe(404);
        expect((await admin.adminPrivacyExportUser({ path })).response.status).toBe(404);
        expect((await admin.adminPrivacyAudit({ path: { app_id: t.app.id } })).response.status).toBe(200);
      }
    } finally {
      await limited.close();
    }
  }, 60_000);
});
