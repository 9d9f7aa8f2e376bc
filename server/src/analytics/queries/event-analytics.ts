// Figures of one event name over a period, human events only (bot traffic excluded), in the
// organization's time zone: totals, counts per bucket, when it happens, and aggregates of its
// properties. Times are naive local timestamps turned into instants with `AT TIME ZONE`.
import type { Knex } from 'knex';
import { timedRows } from '../../storage/timed.js';

export type TrendUnit = 'hour' | 'day' | 'week' | 'month';

export interface EventWindow {
  appId: string;
  eventName: string;
  timeZone: string;
  /** Inclusive start and exclusive end, local times. */
  from: string;
  to: string;
  timeoutMs: number;
}

const match = (e = '') => `${e}app_id = ?::uuid and not ${e}is_bot and ${e}event_name = ?
  and ${e}created_at >= (?::timestamp at time zone ?) and ${e}created_at < (?::timestamp at time zone ?)`;
const MATCH = match();
const matchBindings = (w: EventWindow) => [w.appId, w.eventName, w.from, w.timeZone, w.to, w.timeZone];

/** Events and distinct users in the window. */
export async function eventTotals(db: Knex, w: EventWindow): Promise<{ events: number; users: number }> {
  const [row] = await timedRows<{ events: string; users: string }>(
    db,
    w.timeoutMs,
    `select count(*) as events, count(distinct user_id) as users from events where ${MATCH}`,
    matchBindings(w),
  );
  return { events: Number(row?.events ?? 0), users: Number(row?.users ?? 0) };
}

/** Events and distinct users per unit, keyed by the unit's local start `YYYY-MM-DD HH:MM`. */
export async function eventTrend(
  db: Knex,
  w: EventWindow,
  unit: TrendUnit,
): Promise<Map<string, { events: number; users: number }>> {
  const rows = await timedRows<{ k: string; events: string; users: string }>(
    db,
    w.timeoutMs,
    `select to_char(date_trunc('${unit}', created_at at time zone ?), 'YYYY-MM-DD HH24:MI') as k,
            count(*) as events, count(distinct user_id) as users
     from events where ${MATCH} group by 1`,
    [w.timeZone, ...matchBindings(w)],
  );
  return new Map(rows.map((r) => [r.k, { events: Number(r.events), users: Number(r.users) }]));
}

/** Events per local hour of day (0-23) and per ISO day of week (1 Monday to 7 Sunday). */
export async function eventTimeProfile(
  db: Knex,
  w: EventWindow,
): Promise<{ hours: Map<number, number>; weekdays: Map<number, number> }> {
  const rows = await timedRows<{ kind: 'h' | 'd'; k: number; n: string }>(
    db,
    w.timeoutMs,
    `with local as (select created_at at time zone ? as t from events where ${MATCH})
     select 'h' as kind, extract(hour from t)::int as k, count(*) as n from local group by 2
     union all
     select 'd', extract(isodow from t)::int, count(*) from local group by 2`,
    [w.timeZone, ...matchBindings(w)],
  );
  const hours = new Map<number, number>();
  const weekdays = new Map<number, number>();
  for (const r of rows) (r.kind === 'h' ? hours : weekdays).set(Number(r.k), Number(r.n));
  return { hours, weekdays };
}

export interface PropertyKeyStats {
  key: string;
  /** Events carrying the key with a non-null value. */
  count: number;
  /** JSON types seen (jsonb_typeof names: string, number, boolean, object, array). */
  types: string[];
  numbers: number;
  min: string | null;
  max: string | null;
  avg: string | null;
  sum: string | null;
}

const PROPERTY_VALUES = `select p.key, p.value, jsonb_typeof(p.value) as t
  from events e, jsonb_each(e.properties) p
  where ${match('e.')}
    and jsonb_typeof(e.properties) = 'object' and jsonb_typeof(p.value) <> 'null'`;

/** The `limit` most frequent property keys of the window's events, with the statistics of their numeric values. */
export async function propertyKeyStats(db: Knex, w: EventWindow, limit: number): Promise<PropertyKeyStats[]> {
  const rows = await timedRows<Omit<PropertyKeyStats, 'count' | 'numbers'> & { count: string; numbers: string }>(
    db,
    w.timeoutMs,
    `with kv as (${PROPERTY_VALUES}), num as (
       select key, t, case when t = 'number' then (value #>> '{}')::numeric end as x from kv
     )
     select key, count(*) as count, array_agg(distinct t order by t) as types,
            count(x) as numbers, min(x)::text as min, max(x)::text as max, avg(x)::text as avg, sum(x)::text as sum
     from num group by key order by count(*) desc, key limit ?`,
    [...matchBindings(w), limit],
  );
  return rows.map((r) => ({ ...r, count: Number(r.count), numbers: Number(r.numbers) }));
}

/** The `top` most frequent text and boolean values of each of `keys` (as text), most frequent first. */
export async function topPropertyValues(
  db: Knex,
  w: EventWindow,
  keys: readonly string[],
  top: number,
): Promise<{ key: string; value: string; count: number }[]> {
  if (keys.length === 0) return [];
  const rows = await timedRows<{ key: string; value: string; count: string }>(
    db,
    w.timeoutMs,
    `with kv as (${PROPERTY_VALUES}), counted as (
       select key, value #>> '{}' as value, count(*) as count from kv
       where t in ('string', 'boolean') and key = any(?::text[]) group by 1, 2
     )
     select key, value, count from (
       select key, value, count, row_number() over (partition by key order by count desc, value) as rank from counted
     ) ranked where rank <= ? order by key, rank`,
    [...matchBindings(w), [...keys], top],
  );
  return rows.map((r) => ({ key: r.key, value: r.value, count: Number(r.count) }));
}
