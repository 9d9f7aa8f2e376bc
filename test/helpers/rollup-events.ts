// Rows the rollup migrations' tests write straight into events (as an install had them before a
// migration): per user, about 15 of 20 days with an event, a third of them purchases carrying an
// `amount`, one day in nine bot traffic; `salt` varies the days and amounts between calls. And the
// count of rows two queries disagree on (a rollup table against the same figures summed here).
// And the history the migration tests of tables kept from user_days put theirs through.
import { expect } from 'vitest';
import { foldRollups } from '../../server/src/analytics/rollups.js';
import { uuidv7 } from '../../server/src/ids.js';
import type { Database } from '../../server/src/storage/db.js';
import { insertApp, insertOrganization } from '../../server/src/storage/tenancy.js';

export async function writeRollupEvents(
  db: Database['knex'],
  appId: string,
  users: string[],
  salt: number,
): Promise<number> {
  const rows = [];
  for (const [i, id] of users.entries()) {
    for (let d = 0; d < 20; d++) {
      if ((i * 3 + d * 7 + salt) % 4 === 0) continue;
      const at = new Date(Date.parse('2026-02-10T00:00:00Z') + d * 86_400_000 + ((i * 41 + d * 17) % 1440) * 60_000);
      const revenue = (i + d + salt) % 3 === 0 ? { amount: (i % 4) + 0.25 } : {};
      rows.push({
        id: uuidv7(),
        app_id: appId,
        user_id: id,
        event_name: 'amount' in revenue ? 'purchase' : 'session',
        properties: JSON.stringify(revenue),
        source: 'api',
        is_bot: d % 9 === 0,
        created_at: at,
        received_at: at,
      });
    }
  }
  for (let i = 0; i < rows.length; i += 500) await db('events').insert(rows.slice(i, i + 500));
  return rows.length;
}

/** Rows in one query's result and not the other's, either way. */
export async function rowsDiffering(db: Database['knex'], reference: string, kept: string): Promise<number> {
  const both = `(${reference} except ${kept}) union all (${kept} except ${reference})`;
  return Number((await db.raw(`select count(*)::int as n from (${both}) x`)).rows[0].n);
}

/**
 * A table kept from user_days by a migration's triggers, through one history: 9 users' events
 * folded, the migration taken down and up again (it fills the table from user_days), more events,
 * a deletion of three days and of one user's events, a fold after each. `differences` must be 0
 * after every step; `filled` runs right after the fill. Returns the app and its users.
 */
export async function keptFromUserDays(
  db: Database['knex'],
  name: string,
  migration: { up(k: Database['knex']): Promise<void>; down(k: Database['knex']): Promise<void> },
  differences: () => Promise<number>,
  filled: (appId: string) => Promise<void>,
): Promise<{ appId: string; ids: string[] }> {
  const org = await insertOrganization(db, { id: uuidv7(), name });
  const app = await insertApp(db, { id: uuidv7(), organization_id: org.id, name });
  const users = Array.from({ length: 9 }, (_, i) => ({ id: uuidv7(), app_id: app.id, external_id: `u${i}` }));
  await db('users').insert(users);
  const ids = users.map((u) => u.id);
  await writeRollupEvents(db, app.id, ids, 0);
  await foldRollups(db);

  // As before the migration: user_days filled, the table not there yet.
  await migration.down(db);
  await migration.up(db);
  await filled(app.id);
  expect(await differences()).toBe(0);

  await writeRollupEvents(db, app.id, ids.slice(3), 1);
  await foldRollups(db);
  expect(await differences()).toBe(0);

  await db('events')
    .where({ app_id: app.id })
    .whereRaw("created_at >= '2026-02-14' and created_at < '2026-02-17'")
    .delete();
  await db('events').where({ app_id: app.id, user_id: ids[2]! }).delete();
  await foldRollups(db);
  expect(await differences()).toBe(0);
  return { appId: app.id, ids };
}

/**
 * Folds until none of the app's deltas is left. The test database is shared, so another test
 * server's fold job may hold the app (the fold then leaves it to that session): try again a moment
 * later, and give up after about 10 s.
 */
export async function foldAllOf(db: Database['knex'], appId: string): Promise<void> {
  for (let attempt = 0; attempt < 100; attempt++) {
    await foldRollups(db);
    const left = await db.raw(
      `select exists (select 1 from activity_deltas where app_id = ?::uuid)
           or exists (select 1 from event_deltas where app_id = ?::uuid)
           or exists (select 1 from property_deltas where app_id = ?::uuid) as left`,
      [appId, appId, appId],
    );
    if (!(left.rows as { left: boolean }[])[0]!.left) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`deltas of app ${appId} still there after 100 folds`);
}
