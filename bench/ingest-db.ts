// The database's share of ingestion alone, without HTTP or Node's event loop: a fresh Tally's
// scratch PostgreSQL database (migrated by starting Tally once), then `tally_ingest` called back to
// back on BENCH_DB_CLIENTS connections (2, as the writer's groups in flight) with groups of
// BENCH_DB_GROUP events (the benchmark's batch events: 1,000 users, two names) for BENCH_SECONDS,
// under each variant given as SQL run before it (and its undo after). Prints events a second and
// the ratio to the first variant, round after round.
// `BENCH_DATABASE_URL=... npx tsx bench/ingest-db.ts '{"as is":{},"no property deltas":{"do":["alter table
// events disable trigger events_properties_inserted"],"undo":["alter table events enable trigger events_properties_inserted"]}}' 3`
import knexModule, { type Knex } from 'knex';
import { uuidv7 } from '../server/src/ids.js';
import { event, scratchDatabase, tally } from './ingest.js';

const admin = process.env.BENCH_DATABASE_URL;
if (!admin) throw new Error('BENCH_DATABASE_URL is needed');
/** Each variant: SQL run before it is measured (`do`) and after (`undo`), to put things back. */
const variants = JSON.parse(process.argv[2] ?? '{"as is":{}}') as Record<string, { do?: string[]; undo?: string[] }>;
const rounds = Number(process.argv[3] ?? 2);
const seconds = Number(process.env.BENCH_SECONDS ?? 5);
const clients = Number(process.env.BENCH_DB_CLIENTS ?? 2);
const groupSize = Number(process.env.BENCH_DB_GROUP ?? 100);
/**
 * BENCH_DB_USERS=apart: each connection writes for users of its own (500 each, as the 1,000 users
 * split in two) instead of the users the other connection's group names at the same moment, so
 * that the groups wait on no user row of each other (the event names stay shared).
 */
const usersApart = process.env.BENCH_DB_USERS === 'apart';

/** One group as the event writer sends it (event-rows.ts): fresh ids, the request's time. */
function group(offset: number): string {
  const now = new Date().toISOString();
  return JSON.stringify(
    Array.from({ length: groupSize }, (_, i) => {
      const e = event(offset + i);
      return {
        i,
        req: i,
        ref: e.user_id,
        name: e.event_name,
        props: e.properties,
        ip: null,
        ua: null,
        insert_id: null,
        created_at: now,
        received_at: now,
        id: uuidv7(),
        source: 'api',
        is_bot: false,
        verified: false,
        fires: false,
        new_user: uuidv7(),
        new_def: uuidv7(),
      };
    }),
  );
}

async function run(db: Knex, appId: string): Promise<number> {
  const until = performance.now() + seconds * 1000;
  let events = 0;
  await Promise.all(
    Array.from({ length: clients }, async (_, c) => {
      for (let n = 0; performance.now() < until; n++) {
        await db.raw(`select tally_ingest(?::uuid, ?::jsonb, '[]'::jsonb, false, interval '24 hours')`, [
          appId,
          group(usersApart ? c * 500 + ((n * groupSize) % 500) : c * 7 + n * groupSize),
        ]);
        events += groupSize;
      }
    }),
  );
  return events / seconds;
}

async function main() {
  const scratch = await scratchDatabase(admin!);
  const server = await tally(scratch.url, { compiled: true });
  const appId = server.appId;
  server.child.kill('SIGTERM');
  await new Promise((r) => server.child.once('exit', r));
  const db = knexModule({ client: 'pg', connection: scratch.url, pool: { min: clients, max: clients } });
  try {
    await run(db, appId); // warm-up: users created, caches warm
    for (let round = 1; round <= rounds; round++) {
      const out: Record<string, number> = {};
      for (const [name, variant] of Object.entries(variants)) {
        for (const sql of variant.do ?? []) await db.raw(sql);
        out[name] = Math.round(await run(db, appId));
        for (const sql of variant.undo ?? []) await db.raw(sql);
      }
      const first = Object.values(out)[0]!;
      console.log(
        JSON.stringify({
          round,
          ...Object.fromEntries(
            Object.entries(out).map(([k, v]) => [k, { events_per_s: v, ratio: +(v / first).toFixed(2) }]),
          ),
        }),
      );
    }
  } finally {
    await db.destroy();
    await scratch.drop();
  }
}

await main();
