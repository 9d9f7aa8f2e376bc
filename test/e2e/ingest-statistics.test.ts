// Ingestion finds users by external id through the (app_id, external_id) index once `users` has
// grown from empty: the fold job, which ingestion wakes, analyzes the tables ingestion looks rows
// up in when they have never been analyzed or have doubled since (analyzeGrownTables). Without it,
// until autovacuum's first analysis (a minute on PostgreSQL; the embedded database runs none), the
// planner read every user of the app for each identifier. On a database of the file's own, both kinds.
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uuidv7 } from '../../server/src/ids.js';
import { FOLD_ROLLUPS, jobDefinitions } from '../../server/src/jobs/index.js';
import type { Database } from '../../server/src/storage/db.js';
import { EventWriter } from '../../server/src/storage/event-writer.js';
import { analyzeGrownTables } from '../../server/src/storage/events.js';
import { insertApp, insertOrganization } from '../../server/src/storage/tenancy.js';
import { openOwnDatabase } from '../helpers/own-database.js';
import { events } from './ingest-helpers.js';

let own: Awaited<ReturnType<typeof openOwnDatabase>>;
let database: Database;

beforeAll(async () => {
  own = await openOwnDatabase('ingest_stats');
  database = own.database;
}, 60_000);
afterAll(() => own?.close());

/** Index names in a plan (EXPLAIN's JSON). */
function indexesOf(plan: unknown): string[] {
  if (Array.isArray(plan)) return plan.flatMap(indexesOf);
  if (!plan || typeof plan !== 'object') return [];
  const node = plan as Record<string, unknown>;
  const own = typeof node['Index Name'] === 'string' ? [node['Index Name'] as string] : [];
  return [...own, ...Object.values(node).flatMap(indexesOf)];
}

/**
 * A session that keeps the users lookup by external id that tally_ingest runs for each identifier
 * of a group prepared, planned once as PL/pgSQL plans it (a generic plan, cached until the table's
 * statistics or definition change), and gives the indexes its plan uses. On PostgreSQL a connection
 * of its own; the embedded database has one session.
 */
async function lookupSession(appId: string) {
  const conn = database.kind === 'postgres' ? await database.knex.client.acquireConnection() : undefined;
  const raw = (sql: string) => (conn ? database.knex.raw(sql).connection(conn) : database.knex.raw(sql));
  await raw('set plan_cache_mode = force_generic_plan');
  await raw(
    `prepare tally_lookup(uuid, text[]) as
     select u.id from (select distinct r from unnest($2) r) n
     cross join lateral (
       select d.id from users d where d.app_id = $1 and d.external_id = n.r
       union all
       select d.id from user_aliases a join users d on d.app_id = a.app_id and d.id = a.user_id
       where a.app_id = $1 and a.alias_id = n.r
       limit 1) u`,
  );
  // EXECUTE takes no bind parameters: the test's own values, as literals.
  const literal = (v: string) => `'${v.replace(/'/g, "''")}'`;
  return {
    async indexes(refs: string[]): Promise<string[]> {
      const { rows } = await raw(
        `explain (format json) execute tally_lookup(${literal(appId)}::uuid, array[${refs.map(literal).join(', ')}]::text[])`,
      );
      return indexesOf((rows as { 'QUERY PLAN': unknown }[])[0]!['QUERY PLAN']);
    },
    async close() {
      await raw('deallocate tally_lookup');
      await raw('reset plan_cache_mode');
      if (conn) await database.knex.client.releaseConnection(conn);
    },
  };
}

describe("ingestion's lookups on a table grown from empty", () => {
  it('the fold job analyzes users once it has rows, and the lookup by external id then uses its index', async () => {
    const org = await insertOrganization(database.knex, { id: uuidv7(), name: 'Stats' });
    const app = await insertApp(database.knex, { id: uuidv7(), organization_id: org.id, name: 'Stats' });
    const writer = new EventWriter(database.knex, pino({ level: 'silent' }));
    await writer.submit(events(app.id, ['first'], ['view']));
    const lookup = await lookupSession(app.id);
    try {
      // Planned while the table is all but empty: by the (app_id, id) index, the external id a filter.
      const small = await lookup.indexes(['first']);
      const refs = Array.from({ length: 2_000 }, (_, i) => `grown-${i}`);
      for (let i = 0; i < refs.length; i += 100) await writer.submit(events(app.id, refs.slice(i, i + 100), ['view']));
      const before = await lookup.indexes(refs.slice(0, 50));

      const fold = jobDefinitions(database, () => new Date()).find((j) => j.name === FOLD_ROLLUPS)!;
      await fold.run({});
      const { rows } = await database.knex.raw("select reltuples from pg_class where oid = 'public.users'::regclass");
      expect(Number((rows as { reltuples: number }[])[0]!.reltuples)).toBeGreaterThanOrEqual(2_000);
      const after = await lookup.indexes(refs.slice(0, 50));
      expect({ small, before, after }).toEqual({
        small: before,
        before: expect.not.arrayContaining(['users_app_id_external_id_unique']),
        after: expect.arrayContaining(['users_app_id_external_id_unique']),
      });
    } finally {
      await lookup.close();
    }

    // Analyzed, and not grown since: nothing to do; doubled again: analyzed again.
    expect(await analyzeGrownTables(database.knex)).not.toContain('users');
    const more = Array.from({ length: 5_000 }, (_, i) => `more-${i}`);
    for (let i = 0; i < more.length; i += 100) await writer.submit(events(app.id, more.slice(i, i + 100), ['view']));
    expect(await analyzeGrownTables(database.knex)).toContain('users');
    expect(await analyzeGrownTables(database.knex)).not.toContain('users');
  }, 120_000);
});
