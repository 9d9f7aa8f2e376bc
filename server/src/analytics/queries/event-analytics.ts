// Figures of one event name over a period, human events only (bot traffic excluded), in the
// organization's time zone: totals, counts per bucket, when it happens, and aggregates of its
// properties. Times are naive local timestamps turned into instants with `AT TIME ZONE`.
import type { Knex } from 'knex';
import { timedRows } from '../../storage/timed.js';
import { addUnits, truncate } from '../../time.js';
import { evenHoursFrom } from './metrics.js';

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

type TotalsAndTrend = {
  totals: { events: number; users: number };
  trend: Map<string, { events: number; users: number }>;
};

/**
 * Events and distinct users in the window, in all and per unit (keyed by the unit's local start
 * `YYYY-MM-DD HH:MM`). Bucket by bucket, each over its own range of instants: a bucket's events
 * come from the index on (app, name, time) and its users are sorted in memory, where one sort of
 * every (bucket, user) pair of a month of a busy event spilled to disk (at ten million events, 450
 * ms). The window's distinct users are hashed in a second statement, run beside it. Hours across a
 * change of the zone's offset, whose buckets are not ranges of instants (an hour repeated at a
 * daylight-saving change), take one pass over the window's events instead.
 */
export async function eventTotalsAndTrend(db: Knex, w: EventWindow, unit: TrendUnit): Promise<TotalsAndTrend> {
  if (
    unit === 'hour' &&
    (await evenHoursFrom(db, { lo: w.from, hi: w.to, timeZone: w.timeZone, timeoutMs: w.timeoutMs })) === undefined
  )
    return totalsAndTrendInOnePass(db, w, unit);
  const buckets: { k: string; lo: string; hi: string }[] = [];
  for (let k = truncate(w.from, unit); k < w.to; k = addUnits(k, unit, 1)) {
    const next = addUnits(k, unit, 1);
    buckets.push({ k: k.slice(0, 16), lo: k < w.from ? w.from : k, hi: next > w.to ? w.to : next });
  }
  const [perBucket, whole] = await Promise.all([
    timedRows<{ k: string; events: string; users: string }>(
      db,
      w.timeoutMs,
      `with b as materialized (
         select v.k, v.lo at time zone ? as lo, v.hi at time zone ? as hi
         from jsonb_to_recordset(?::jsonb) as v(k text, lo timestamp, hi timestamp))
       select b.k, s.events, s.users from b cross join lateral (
         select count(*) as events, count(distinct user_id) as users from events
         where app_id = ?::uuid and not is_bot and event_name = ? and created_at >= b.lo and created_at < b.hi) s
       where s.events > 0`,
      [w.timeZone, w.timeZone, JSON.stringify(buckets), w.appId, w.eventName],
    ),
    timedRows<{ users: string }>(
      db,
      w.timeoutMs,
      `select count(*) as users from (select distinct user_id from events where ${MATCH}) u`,
      matchBindings(w),
    ),
  ]);
  const trend = new Map(perBucket.map((r) => [r.k, { events: Number(r.events), users: Number(r.users) }]));
  let events = 0;
  for (const figures of trend.values()) events += figures.events;
  return { totals: { events, users: Number(whole[0]?.users ?? 0) }, trend };
}

/** eventTotalsAndTrend in one pass over the window's events, bucketed in the zone. */
async function totalsAndTrendInOnePass(db: Knex, w: EventWindow, unit: TrendUnit): Promise<TotalsAndTrend> {
  const rows = await timedRows<{ whole: number; k: string | null; events: string; users: string }>(
    db,
    w.timeoutMs,
    // Grouped by the bucket's timestamp, named after: sorting text would compare by collation.
    `select grouping(b) as whole, to_char(b, 'YYYY-MM-DD HH24:MI') as k, count(*) as events,
            count(distinct user_id) as users
     from (select date_trunc('${unit}', created_at at time zone ?) as b, user_id from events where ${MATCH}) e
     group by grouping sets ((b), ())`,
    [w.timeZone, ...matchBindings(w)],
  );
  const totals = { events: 0, users: 0 };
  const trend = new Map<string, { events: number; users: number }>();
  for (const r of rows) {
    const figures = { events: Number(r.events), users: Number(r.users) };
    if (Number(r.whole) === 1) Object.assign(totals, figures);
    else trend.set(r.k!, figures);
  }
  return { totals, trend };
}

/**
 * The same as eventTimeProfile, from the per-event rollup (event_slots plus the deltas not folded
 * yet, migration 028): exact when the window's ends fall on quarter hours, as local midnights do.
 */
export async function eventTimeProfileFromSlots(
  db: Knex,
  w: EventWindow,
): Promise<{ hours: Map<number, number>; weekdays: Map<number, number> }> {
  const within = (t: string) => `${t}.app_id = ?::uuid and ${t}.event_name = ?
    and ${t}.slot >= (?::timestamp at time zone ?) and ${t}.slot < (?::timestamp at time zone ?)`;
  const rows = await timedRows<{ kind: 'h' | 'd'; k: number; n: string }>(
    db,
    w.timeoutMs,
    `with local as (
       select s.slot at time zone ? as t, s.events from event_slots s where ${within('s')}
       union all
       select x.slot at time zone ?, x.events from event_deltas x where ${within('x')}
     )
     select 'h' as kind, extract(hour from t)::int as k, sum(events) as n from local group by 2 having sum(events) > 0
     union all
     select 'd', extract(isodow from t)::int, sum(events) from local group by 2 having sum(events) > 0`,
    [w.timeZone, ...matchBindings(w), w.timeZone, ...matchBindings(w)],
  );
  return profileOf(rows);
}

function profileOf(rows: { kind: 'h' | 'd'; k: number; n: string }[]) {
  const hours = new Map<number, number>();
  const weekdays = new Map<number, number>();
  for (const r of rows) (r.kind === 'h' ? hours : weekdays).set(Number(r.k), Number(r.n));
  return { hours, weekdays };
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
  return profileOf(rows);
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

/**
 * The `limit` most frequent property keys of the window's events, with the statistics of their
 * numeric values and, for keys holding text or booleans, their `top` most frequent values (as
 * text, most frequent first): one pass over the window's events' properties.
 */
export async function propertyKeyStats(
  db: Knex,
  w: EventWindow,
  limit: number,
  top: number,
): Promise<(PropertyKeyStats & { values: { value: string; count: number }[] | null })[]> {
  const rows = await timedRows<
    Omit<PropertyKeyStats, 'count' | 'numbers'> & {
      count: string;
      numbers: string;
      top_values: { value: string; count: number }[] | null;
    }
  >(
    db,
    w.timeoutMs,
    // One pass: per key, and per key and text value, in one grouping (no sort of every value).
    `with g as (
       select key, v, grouping(v) as whole, count(*) as count,
              array_remove(array[
                case when bool_or(t = 'array') then 'array' end, case when bool_or(t = 'boolean') then 'boolean' end,
                case when bool_or(t = 'number') then 'number' end, case when bool_or(t = 'object') then 'object' end,
                case when bool_or(t = 'string') then 'string' end], null) as types,
              count(x) as numbers, min(x)::text as min, max(x)::text as max, avg(x)::text as avg, sum(x)::text as sum
       from (select key, t, case when t in ('string', 'boolean') then value #>> '{}' end as v,
                    case when t = 'number' then (value #>> '{}')::numeric end as x
             from (${PROPERTY_VALUES}) kv) num
       group by grouping sets ((key), (key, v))
     ),
     keys as (
       select key, count, types, numbers, min, max, avg, sum, row_number() over (order by count desc, key) as rank
       from g where whole = 1
     ),
     ranked as (
       select key, v, count, row_number() over (partition by key order by count desc, v) as rank
       from g where whole = 0 and v is not null
     )
     select k.key, k.count, k.types, k.numbers, k.min, k.max, k.avg, k.sum,
            case when k.types && array['string', 'boolean'] then coalesce(t.top_values, '[]'::json) end as top_values
     from keys k left join (
       select key, json_agg(json_build_object('value', v, 'count', count) order by rank) as top_values
       from ranked where rank <= ? group by key
     ) t on t.key = k.key
     where k.rank <= ?
     order by k.rank`,
    [...matchBindings(w), top, limit],
  );
  return rows.map(({ top_values, ...r }) => ({
    ...r,
    count: Number(r.count),
    numbers: Number(r.numbers),
    values: top_values === null ? null : top_values.map((v) => ({ value: v.value, count: Number(v.count) })),
  }));
}

/** Events carrying a key, per JSON type, and its numeric values' figures (text: numeric exact). */
export interface PropertySlotStats {
  key: string;
  /** Events carrying the key with a non-null value, per JSON type (jsonb_typeof names). */
  types: Record<'string' | 'number' | 'boolean' | 'object' | 'array', number>;
  min: string | null;
  max: string | null;
  avg: string | null;
  sum: string | null;
}

/**
 * The `limit` property keys the window's events carry most often, with their counts per type and
 * numeric figures, from the per-property rollup (property_slots plus the deltas not folded yet,
 * migration 030): exact when the window's ends fall on quarter hours, as local midnights do. The
 * smallest and largest values of a slot with a delete or move not folded yet come from its events.
 */
export async function propertyKeyStatsFromSlots(db: Knex, w: EventWindow, limit: number): Promise<PropertySlotStats[]> {
  const within = (t: string) => `${t}.app_id = ?::uuid and ${t}.event_name = ?
    and ${t}.slot >= (?::timestamp at time zone ?) and ${t}.slot < (?::timestamp at time zone ?)`;
  const rows = await timedRows<
    PropertySlotStats & Record<'strings' | 'numbers' | 'booleans' | 'objects' | 'arrays', string>
  >(
    db,
    w.timeoutMs,
    `with d as (
       select x.slot, x.key, x.strings, x.numbers, x.booleans, x.objects, x.arrays, x.num_sum, x.num_min, x.num_max, x.recheck
       from property_deltas x where ${within('x')}
     ),
     rs as (select distinct slot from d where recheck),
     r as (
       select s.key, s.strings, s.numbers, s.booleans, s.objects, s.arrays, s.num_sum,
              case when rs.slot is null then s.num_min end as num_min, case when rs.slot is null then s.num_max end as num_max
       from property_slots s left join rs on rs.slot = s.slot where ${within('s')}
       union all
       select d.key, d.strings, d.numbers, d.booleans, d.objects, d.arrays, d.num_sum,
              case when rs.slot is null then d.num_min end, case when rs.slot is null then d.num_max end
       from d left join rs on rs.slot = d.slot
       union all
       select kv.key, 0, 0, 0, 0, 0, 0, min(kv.v), max(kv.v)
       from rs join events e on e.app_id = ?::uuid and e.event_name = ? and not e.is_bot
         and e.created_at >= rs.slot and e.created_at < rs.slot + interval '15 minutes'
       cross join lateral (
         select p.key, (p.value #>> '{}')::numeric as v
         from jsonb_each(case when jsonb_typeof(e.properties) = 'object' then e.properties end) p
         where jsonb_typeof(p.value) = 'number') kv
       group by kv.key
     ),
     k as (
       select key, sum(strings) as strings, sum(numbers) as numbers, sum(booleans) as booleans,
              sum(objects) as objects, sum(arrays) as arrays, sum(num_sum) as sum, min(num_min) as min, max(num_max) as max
       from r group by key
     )
     select key, strings, numbers, booleans, objects, arrays, min::text as min, max::text as max,
            case when numbers > 0 then sum::text end as sum, (sum / nullif(numbers, 0))::text as avg
     from k where strings + numbers + booleans + objects + arrays > 0
     order by strings + numbers + booleans + objects + arrays desc, key
     limit ?`,
    [...matchBindings(w), ...matchBindings(w), w.appId, w.eventName, limit],
  );
  return rows.map((r) => ({
    key: r.key,
    types: {
      string: Number(r.strings),
      number: Number(r.numbers),
      boolean: Number(r.booleans),
      object: Number(r.objects),
      array: Number(r.arrays),
    },
    min: r.min,
    max: r.max,
    avg: r.avg,
    sum: r.sum,
  }));
}

/**
 * The `top` most frequent text and boolean values of each property key (as text, most frequent
 * first, ties in text order) among the window's `sample` most recent events, and per key how many
 * of those events carry it (`counted`).
 */
export async function sampledTopValues(
  db: Knex,
  w: EventWindow,
  sample: number,
  top: number,
): Promise<Map<string, { counted: number; values: { value: string; count: number }[] }>> {
  const rows = await timedRows<{ key: string; counted: string; top_values: { value: string; count: number }[] | null }>(
    db,
    w.timeoutMs,
    `with kv as (
       select p.key, case when jsonb_typeof(p.value) in ('string', 'boolean') then p.value #>> '{}' end as v
       from (select e.properties from events e where ${MATCH} order by e.created_at desc, e.id desc limit ?) x
       cross join lateral jsonb_each(case when jsonb_typeof(x.properties) = 'object' then x.properties end) p
       where jsonb_typeof(p.value) <> 'null'
     ),
     g as (select key, v, grouping(v) as whole, count(*) as n from kv group by grouping sets ((key), (key, v))),
     ranked as (
       select key, v, n, row_number() over (partition by key order by n desc, v) as rank
       from g where whole = 0 and v is not null
     )
     select g.key, g.n as counted, t.top_values
     from g left join (
       select key, json_agg(json_build_object('value', v, 'count', n) order by rank) as top_values
       from ranked where rank <= ? group by key
     ) t on t.key = g.key
     where g.whole = 1`,
    [...matchBindings(w), sample, top],
  );
  const out = new Map<string, { counted: number; values: { value: string; count: number }[] }>();
  for (const r of rows) {
    const values = (r.top_values ?? []).map((v) => ({ value: v.value, count: Number(v.count) }));
    out.set(r.key, { counted: Number(r.counted), values });
  }
  return out;
}
