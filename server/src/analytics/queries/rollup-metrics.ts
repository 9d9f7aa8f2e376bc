// The metrics' queries over the activity rollup (migration 024) instead of raw events: the same
// functions, arguments and answers as queries/metrics.ts, for ranges of whole local days in the
// rollup's time zone (metrics.ts uses them only when the app's rollup is ready in the
// organization's zone; hours: rollup-hours.ts). Each reads `user_days` (or, for daily
// figures, the per-app daily rows of rollup-days.ts) plus the deltas not folded yet, in one
// statement, so a fold running meanwhile is seen whole or not at all.
import type { Db } from '../../storage/handle.js';
import { timedRows as rows } from '../../storage/timed.js';
import { addUnits, truncate } from '../../time.js';
import { churnSql, type MetricRange, unitSql } from './metrics.js';
import { periodFlags, usersPerDay, usersPerPeriod } from './rollup-days.js';
import { deltaKeys, firstActiveSets, pairs } from './rollup-pairs.js';

/** Distinct users per bucket (day, week or month) over the pairs. */
async function distinctPerBucket(db: Db, appId: string, r: MetricRange, paying: boolean): Promise<Map<string, number>> {
  const k = deltaKeys(appId, r.timeZone);
  const p = pairs(appId, r, { paying });
  // Pairs are one per (day, user): a day's count needs no distinct.
  const users =
    r.unit === 'day'
      ? `select day::timestamp as b from (${p.sql}) p`
      : `select distinct date_trunc('${unitSql(r.unit)}', day::timestamp) as b, user_id from (${p.sql}) p`;
  const found = await rows<{ k: string; n: string }>(
    db,
    r.timeoutMs,
    `with ${k.sql}
     select to_char(b, 'YYYY-MM-DD HH24:MI') as k, count(*) as n from (${users}) s group by b`,
    [...k.bindings, ...p.bindings],
  );
  return new Map(found.map((row) => [row.k, Number(row.n)]));
}

/** The whole buckets of a range: [fullLo, fullHi), or null when it holds none. */
function wholeBuckets(r: MetricRange): { fullLo: string; fullHi: string } | null {
  if (r.unit === 'hour') return null;
  const start = truncate(r.lo, r.unit);
  const fullLo = start === r.lo ? r.lo : addUnits(start, r.unit, 1);
  const fullHi = truncate(r.hi, r.unit);
  return fullLo < fullHi ? { fullLo, fullHi } : null;
}

const merge = async <T>(parts: Promise<Map<string, T>>[]): Promise<Map<string, T>> => {
  const merged = new Map<string, T>();
  for (const part of await Promise.all(parts)) for (const [key, v] of part) merged.set(key, v);
  return merged;
};

/**
 * As queries/metrics.ts `churnPerBucket`: whole buckets from the per-app rows (rollup-days.ts:
 * the previous bucket's active users, and those of them active in the next), a clipped first or
 * last bucket from the users' rows.
 */
export async function churnPerBucket(
  db: Db,
  appId: string,
  r: MetricRange & { previousLo: string; previousHi: string },
): Promise<Map<string, { previous: number; churned: number }>> {
  const whole = wholeBuckets(r);
  if (!whole || r.unit === 'hour') return churnFromUsers(db, appId, r);
  const { fullLo, fullHi } = whole;
  const unit = r.unit;
  const flags = periodFlags(db, appId, {
    ...r,
    unit,
    lo: addUnits(fullLo, unit, -1),
    hi: addUnits(fullHi, unit, -1),
  }).then((byPrev) => {
    const out = new Map<string, { previous: number; churned: number }>();
    for (let p = addUnits(fullLo, unit, -1); p < addUnits(fullHi, unit, -1); p = addUnits(p, unit, 1)) {
      const f = byPrev.get(p.slice(0, 16));
      out.set(addUnits(p, unit, 1).slice(0, 16), {
        previous: f?.active ?? 0,
        churned: (f?.active ?? 0) - (f?.continued ?? 0),
      });
    }
    return out;
  });
  const parts = [flags];
  const alone = (lo: string, hi: string, key: string) =>
    churnFromUsers(db, appId, { ...r, lo, hi, previousLo: addUnits(key, unit, -1), previousHi: key });
  if (r.lo < fullLo) parts.push(alone(r.lo, fullLo, truncate(r.lo, unit)));
  if (fullHi < r.hi) parts.push(alone(fullHi, r.hi, fullHi));
  return merge(parts);
}

/**
 * As queries/metrics.ts `retentionPerBucket`: whole buckets from the per-app rows (the users first
 * active in each, and those of them active in the next), a clipped first or last bucket from the
 * users' rows.
 */
export async function retentionPerBucket(
  db: Db,
  appId: string,
  r: MetricRange,
): Promise<Map<string, { cohort: number; retained: number }>> {
  const whole = wholeBuckets(r);
  if (!whole || r.unit === 'hour') return retentionFromUsers(db, appId, r);
  const { fullLo, fullHi } = whole;
  const cohorts = periodFlags(db, appId, { ...r, unit: r.unit, lo: fullLo, hi: fullHi }).then(
    (byKey) => new Map([...byKey].map(([key, f]) => [key, { cohort: f.firstUsers, retained: f.firstNext }])),
  );
  const parts = [cohorts];
  if (r.lo < fullLo) parts.push(retentionFromUsers(db, appId, { ...r, hi: fullLo }));
  if (fullHi < r.hi) parts.push(retentionFromUsers(db, appId, { ...r, lo: fullHi }));
  return merge(parts);
}

/**
 * Distinct users per bucket: per day and per whole week or month from the per-app rows
 * (rollup-days.ts); the clipped first and last week or month from the users' rows.
 */
async function usersPerBucket(db: Db, appId: string, r: MetricRange, paying: boolean): Promise<Map<string, number>> {
  if (r.unit === 'day') return usersPerDay(db, appId, r, paying);
  const whole = wholeBuckets(r);
  if (!whole || (r.unit !== 'week' && r.unit !== 'month')) return distinctPerBucket(db, appId, r, paying);
  const { fullLo, fullHi } = whole;
  const parts = [usersPerPeriod(db, appId, { ...r, unit: r.unit, lo: fullLo, hi: fullHi }, paying)];
  if (r.lo < fullLo) parts.push(distinctPerBucket(db, appId, { ...r, hi: fullLo }, paying));
  if (fullHi < r.hi) parts.push(distinctPerBucket(db, appId, { ...r, lo: fullHi }, paying));
  return merge(parts);
}

/** Users with at least one event, per bucket. */
export const activeUsersPerBucket = (db: Db, appId: string, r: MetricRange) => usersPerBucket(db, appId, r, false);

/** Users with an event carrying a numeric revenue, per bucket (the default conversion). */
export const payingUsersPerBucket = (db: Db, appId: string, r: MetricRange) => usersPerBucket(db, appId, r, true);

export { activityWindowEdges, revenuePerBucket } from './rollup-days.js';

/** As queries/metrics.ts `churnPerBucket`, from the users' rows. */
async function churnFromUsers(
  db: Db,
  appId: string,
  r: MetricRange & { previousLo: string; previousHi: string },
): Promise<Map<string, { previous: number; churned: number }>> {
  const unit = unitSql(r.unit);
  const k = deltaKeys(appId, r.timeZone);
  const cur = pairs(appId, r);
  const prev = pairs(appId, { lo: r.previousLo, hi: r.previousHi });
  const next = addUnits(r.previousHi, unit, 1);
  if (
    truncate(r.previousLo, unit) === r.previousLo &&
    addUnits(r.previousLo, unit, 1) === r.previousHi &&
    r.lo >= r.previousHi &&
    r.hi <= next
  ) {
    // One previous bucket and (part of) the next, as for a clipped first or last bucket: its
    // users, and those of them active in the next, without a bucket per row (470 -> 290 ms for a
    // clipped last week at ten million events).
    const [one] = await rows<{ prev: string; churned: string }>(
      db,
      r.timeoutMs,
      `with ${k.sql},
       cur as (select distinct user_id from (${cur.sql}) c),
       prev as (select distinct user_id from (${prev.sql}) p)
       select count(*) as prev, count(*) filter (where c.user_id is null) as churned
       from prev p left join cur c on c.user_id = p.user_id`,
      [...k.bindings, ...cur.bindings, ...prev.bindings],
    );
    const previous = Number(one?.prev ?? 0);
    return new Map(previous > 0 ? [[r.previousHi.slice(0, 16), { previous, churned: Number(one?.churned ?? 0) }]] : []);
  }
  const found = await rows<{ k: string; prev: string; churned: string }>(
    db,
    r.timeoutMs,
    `with ${k.sql},
     cur as (select distinct user_id, date_trunc('${unit}', day::timestamp) as b from (${cur.sql}) c),
     prev as (select distinct user_id, date_trunc('${unit}', day::timestamp) as b from (${prev.sql}) p)
     ${churnSql(r.unit)}`,
    [...k.bindings, ...cur.bindings, ...prev.bindings],
  );
  return new Map(found.map((row) => [row.k, { previous: Number(row.prev), churned: Number(row.churned) }]));
}

/**
 * As queries/metrics.ts `retentionPerBucket`, from the users' ordered active days: the users whose
 * first active day is in the range, by the bucket of that day, and those of them active in the next
 * bucket.
 */
async function retentionFromUsers(
  db: Db,
  appId: string,
  r: MetricRange,
): Promise<Map<string, { cohort: number; retained: number }>> {
  const unit = unitSql(r.unit);
  const sets = firstActiveSets(appId, r.timeZone, r);
  const found = await rows<{ k: string; n: string; retained: string }>(
    db,
    r.timeoutMs,
    `with ${sets.sql},
     cohort as (select c.days, date_trunc('${unit}', c.days[1]::timestamp) as b from sets c)
     select to_char(c.b, 'YYYY-MM-DD HH24:MI') as k, count(*) as n,
            count(*) filter (where exists (select 1 from unnest(c.days) d
              where d::timestamp >= c.b + interval '1 ${unit}' and d::timestamp < c.b + interval '2 ${unit}')) as retained
     from cohort c group by 1`,
    sets.bindings,
  );
  return new Map(found.map((row) => [row.k, { cohort: Number(row.n), retained: Number(row.retained) }]));
}

/** The app's rollup: its zone and state (none yet: an app whose events all came after migration 024). */
export async function rollupState(
  db: Db,
  appId: string,
): Promise<{ time_zone: string; state: string; events_state: string; properties_state: string } | undefined> {
  return db('app_rollups').where({ app_id: appId }).first('time_zone', 'state', 'events_state', 'properties_state');
}
