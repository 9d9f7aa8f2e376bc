// The property figures of the event trend (GET /mcp/analytics/events/:eventName) read from the
// per-property rollup (migration 030) against the same figures from raw events, and against
// reference SQL written here: for each event name and window, every key's count, types, and the
// smallest, largest, sum and mean of its numeric values must be equal.
import type { Knex } from 'knex';
import { expect } from 'vitest';
import {
  type EventWindow,
  propertyKeyStats,
  propertyKeyStatsFromSlots,
} from '../../server/src/analytics/queries/event-analytics.js';

const num = (text: string | null) => (text === null ? null : Number(Number(text).toPrecision(12)));

/** One key's figures in a form both readings share. */
interface Figures {
  key: string;
  count: number;
  types: string[];
  numbers: number;
  min: number | null;
  max: number | null;
  sum: number | null;
  avg: number | null;
}

async function reference(db: Knex, w: EventWindow): Promise<Figures[]> {
  const { rows } = await db.raw(
    `select p.key, count(*) as count, array_agg(distinct jsonb_typeof(p.value) order by jsonb_typeof(p.value)) as types,
            count(*) filter (where jsonb_typeof(p.value) = 'number') as numbers,
            min((p.value #>> '{}')::numeric) filter (where jsonb_typeof(p.value) = 'number')::text as min,
            max((p.value #>> '{}')::numeric) filter (where jsonb_typeof(p.value) = 'number')::text as max,
            sum((p.value #>> '{}')::numeric) filter (where jsonb_typeof(p.value) = 'number')::text as sum,
            avg((p.value #>> '{}')::numeric) filter (where jsonb_typeof(p.value) = 'number')::text as avg
     from events e, jsonb_each(e.properties) p
     where e.app_id = ?::uuid and e.event_name = ? and not e.is_bot and jsonb_typeof(p.value) <> 'null'
       and e.created_at >= (?::timestamp at time zone ?) and e.created_at < (?::timestamp at time zone ?)
     group by 1 order by 2 desc, 1`,
    [w.appId, w.eventName, w.from, w.timeZone, w.to, w.timeZone],
  );
  type Row = { key: string; count: string; types: string[]; numbers: string } & Record<
    'min' | 'max' | 'sum' | 'avg',
    string | null
  >;
  return (rows as Row[]).map((r) => ({
    key: r.key,
    count: Number(r.count),
    types: [...r.types].sort(),
    numbers: Number(r.numbers),
    min: num(r.min),
    max: num(r.max),
    sum: num(r.sum),
    avg: num(r.avg),
  }));
}

/** Every name's property figures in each window: from the rollup, from raw events and by reference SQL, equal. */
export async function expectPropertyRollupEqualsRaw(
  db: Knex,
  appId: string,
  timeZone: string,
  names: string[],
  windows: [string, string][],
): Promise<void> {
  for (const eventName of names) {
    for (const [from, to] of windows) {
      const w: EventWindow = { appId, eventName, timeZone, from, to, timeoutMs: 30_000 };
      const what = `${eventName} ${from}..${to} in ${timeZone}`;
      const raw = (await propertyKeyStats(db, w, 50, 10)).map(
        (k): Figures => ({
          key: k.key,
          count: k.count,
          types: [...k.types].sort(),
          numbers: k.numbers,
          min: num(k.min),
          max: num(k.max),
          sum: num(k.sum),
          avg: num(k.avg),
        }),
      );
      const slots = (await propertyKeyStatsFromSlots(db, w, 50)).map((k) => {
        const types = Object.entries(k.types).filter(([, n]) => n > 0);
        return {
          key: k.key,
          count: types.reduce((t, [, n]) => t + n, 0),
          types: types.map(([t]) => t).sort(),
          numbers: k.types.number,
          min: num(k.min),
          max: num(k.max),
          sum: num(k.sum),
          avg: num(k.avg),
        };
      });
      const want = await reference(db, w);
      expect(raw, `property figures from raw events, ${what}`).toEqual(want);
      expect(slots, `property figures from the rollup, ${what}`).toEqual(want);
    }
  }
}
