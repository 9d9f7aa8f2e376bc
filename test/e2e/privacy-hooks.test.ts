// Erasure hooks (services/erasure-hooks.ts) run inside the erasure's transaction: their counts are
// reported as queued_sends_cancelled, and a hook that throws rolls the whole erasure back. And
// open-ended user ids: any id, on erase or export, never answers 500 and never reaches a user of
// another tenant.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerErasureHook } from '../../server/src/services/erasure-hooks.js';
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
    const unregister = registerErasureHook('test-queued-sends', async (tx, appId, id) => {
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
    const unregister = registerErasureHook('test-failing', async (tx, appId, id) => {
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
