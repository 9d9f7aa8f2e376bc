// Rows the rollup migrations' tests write straight into events (as an install had them before a
// migration): per user, about 15 of 20 days with an event, a third of them purchases carrying an
// `amount`, one day in nine bot traffic; `salt` varies the days and amounts between calls. And the
// count of rows two queries disagree on (a rollup table against the same figures summed here).

import { uuidv7 } from '../../server/src/ids.js';
import type { Database } from '../../server/src/storage/db.js';

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
