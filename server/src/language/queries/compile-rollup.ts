// Questions the activity rollup answers instead of raw events (issue 33): distinct users, numbers
// of events and money (total or average), in all or per day, week or month, or per user, over
// whole local days, with no condition on the events or the users. The rollup is `user_days` (one
// row per local day and user: events, revenue, events carrying revenue) plus the deltas not
// folded into it yet (`activity_deltas`, 15-minute UTC slots, signed), so the figures are exact
// at every moment; a question with event names, filters, a segment, hours or a money property of
// the app's own reads raw events as before. The statement reads the two tables directly (the
// sandbox role may read them, row-level security keeps it to the app of `$1`), and only Tally's
// own statements do: callers' SQL still sees `events` and `users` alone.
// test/e2e/rollups.test.ts compares every such question with raw events after random histories.
import { localTimestamp } from '../../time.js';
import type { Dimension, Period, Query } from '../ast.js';
import { resolveAnchor } from '../periods.js';
import { bucketsOf } from './compile-buckets.js';
import { type CompileContext, Sql } from './compile-parts.js';

/** What the rollup gives a question: rows (alias `d`), their filter, the measure and the dimension. */
export interface RollupSource {
  from: string;
  where: string;
  alias: string;
  key: string | null;
  measure: string;
  /** Conditions on the groups, beyond the question's own (`having`). */
  having: string[];
}

type RollupMeasure = 'users' | 'events' | 'sum' | 'avg';

/** The measure when the rollup holds it: distinct users, events, or the money of events (sum or average). */
function measureOf(sql: Sql, q: Query): RollupMeasure | null {
  const m = q.measure;
  if (m.kind === 'users' || m.kind === 'events') return m.kind;
  if (m.kind !== 'aggregate' || m.key !== '$revenue' || (m.fn !== 'sum' && m.fn !== 'avg')) return null;
  // The rollup's revenue is `revenue`, else `amount` (DESIGN §6): an app's own money property is not in it.
  const key = sql.cx.moneyKey;
  return key === null || key === 'revenue' || key === 'amount' ? m.fn : null;
}

/** The local dates [from, to) of a period of whole days; null when an end falls within a day (hours). */
function wholeDays(sql: Sql, period: Period | undefined): { from?: string; to?: string } | null {
  const out: { from?: string; to?: string } = {};
  for (const end of ['from', 'to'] as const) {
    const anchor = period?.[end];
    if (!anchor) continue;
    const r = resolveAnchor(anchor, sql.cx.today, sql.cx.now);
    if (!('local' in r) || r.local.slice(11) !== '00:00:00') return null;
    out[end] = r.local.slice(0, 10);
  }
  return out;
}

function dimensionFits(dim: Dimension | null, what: RollupMeasure): boolean {
  if (!dim) return true;
  if (dim.kind === 'time') return dim.unit !== 'hour';
  return dim.kind === 'user' && what !== 'users';
}

const MEASURES: Record<RollupMeasure, string> = {
  users: 'count(distinct d.user_key)',
  events: 'coalesce(sum(d.events), 0)',
  sum: 'round(coalesce(sum(d.revenue), 0), 2)',
  avg: 'round(sum(d.revenue) / nullif(sum(d.revenue_events), 0), 2)',
};

/** The rows of the rollup for a question, or null when it must read raw events. */
export function rollupSource(sql: Sql, q: Query, dim: Dimension | null): RollupSource | null {
  if (!sql.cx.rollup || q.segment || q.events.events.length > 0 || q.events.filters.length > 0) return null;
  const what = measureOf(sql, q);
  if (!what || !dimensionFits(dim, what)) return null;
  const days = wholeDays(sql, q.period);
  if (!days) return null;

  const from = days.from === undefined ? null : sql.p(days.from, 'date');
  const to = days.to === undefined ? null : sql.p(days.to, 'date');
  const within = (day: string) => (from ? ` and ${day} >= ${from}` : '') + (to ? ` and ${day} < ${to}` : '');
  /** A table's rows of whole days (columns `r.*`) with the unfolded deltas (`x.*`), as `alias`. */
  const withDeltas = (table: string, columns: string, deltas: string, only = '', alias = 'd') => {
    const slotDay = `(x.slot at time zone ${sql.tz()})::date`;
    return `(select r.day, ${columns} from public.${table} r where r.app_id = $1::uuid${within('r.day')}
   union all
   select ${slotDay}, ${deltas} from public.activity_deltas x where x.app_id = $1::uuid${only}${within(slotDay)}) as ${alias}`;
  };
  const key = !dim
    ? null
    : dim.kind === 'time'
      ? `to_char(date_trunc('${dim.unit}', d.day::timestamp), 'YYYY-MM-DD')`
      : 'u.user_id';
  const out = (from: string, where = 'true', having: string[] = []): RollupSource => ({
    from,
    where,
    alias: 'd',
    key,
    measure: MEASURES[what],
    having,
  });

  if (what === 'users') {
    // A user counts on a day when their events there, with the deltas, are more than none.
    const rows = withDeltas('user_days', 'r.user_id as user_key, r.events', 'x.user_id, x.events', '', 'a');
    return out(`(select a.day, a.user_key from ${rows} group by 1, 2 having sum(a.events) > 0) as d`);
  }
  if (dim?.kind === 'user') {
    // Per user: their rows of user_days, with the deltas, summed per user, then named by the
    // user's id: one row a user to join, not one a user and day (at ten million events, 1.75
    // million rows joined to users before they were summed). Over all time, each user's totals
    // (user_totals, migration 031: one row a user) with the deltas instead of every day.
    const allTime = days.from === undefined && days.to === undefined;
    const sums = 'sum(p.events) as events, sum(p.revenue) as revenue, sum(p.revenue_events) as revenue_events';
    const plus = (c: string) => `coalesce(r.${c}, 0) + coalesce(x.${c}, 0) as ${c}`;
    // All time: each user's totals, with their unfolded deltas summed apart and joined by user (a
    // full join: a user may have deltas only), so no aggregate runs over the whole table.
    const perUser = allTime
      ? `(select coalesce(r.user_id, x.user_id) as user_key, ${plus('events')}, ${plus('revenue')}, ${plus('revenue_events')}
   from (select t.user_id, t.events, t.revenue, t.revenue_events from public.user_totals t where t.app_id = $1::uuid) as r
   full join (select p.user_id, ${sums} from public.activity_deltas p where p.app_id = $1::uuid group by 1) as x
   on x.user_id = r.user_id) as d`
      : `(select p.user_key, ${sums}
   from ${withDeltas(
     'user_days',
     'r.user_id as user_key, r.events, r.revenue, r.revenue_events',
     'x.user_id, x.events, x.revenue, x.revenue_events',
     '',
     'p',
   )} group by 1) as d`;
    const joined = `${perUser} join users u on u.id = d.user_key`;
    if (what === 'events') return out(joined, 'true', ['sum(d.events) > 0']);
    return out(joined, 'd.revenue_events <> 0', ['sum(d.revenue_events) > 0']);
  }
  // In all or per period: one row a day of the per-app sums (migrations 026 and 027).
  if (what === 'sum') return out(withDeltas('app_days', 'r.revenue', 'x.revenue', ' and x.revenue_events <> 0'));
  return out(
    withDeltas('app_day_events', 'r.events, r.revenue_events, r.revenue', 'x.events, x.revenue_events, x.revenue'),
  );
}

/** Whether a period's ends fall on 15-minute boundaries (every local one does on a UTC one: offsets are multiples of 15 minutes). */
function wholeSlots(sql: Sql, period: Period | undefined): boolean {
  for (const end of ['from', 'to'] as const) {
    const anchor = period?.[end];
    if (!anchor) continue;
    const r = resolveAnchor(anchor, sql.cx.today, sql.cx.now);
    const iso = 'instant' in r ? r.instant.toISOString() : `${r.local.replace(' ', 'T')}`;
    const [year, minutes, seconds] = [Number(iso.slice(0, 4)), Number(iso.slice(14, 16)), iso.slice(17)];
    // Before 1973 some zones still kept local mean time (offsets in seconds): raw events then.
    if (year < 1973 || minutes % 15 !== 0 || !/^00(\.0+)?Z?$/.test(seconds)) return false;
  }
  return true;
}

/**
 * The per-event rollup's rows for a question on events (named or not) or their money, in all, per
 * hour, day, week or month, per event name, or per hour of the day or day of the week, over a
 * period of whole 15-minute slots with no condition on properties or users: `event_slots` plus
 * the deltas not folded yet (`event_deltas`), as rows `d` with the slot as `d.created_at` (so the
 * caller's own time and name keys apply as they do to events). Null for any other question.
 */
export function slotSource(sql: Sql, q: Query, dim: Dimension | null): Omit<RollupSource, 'key'> | null {
  if (!sql.cx.eventRollup || q.segment || q.events.filters.length > 0) return null;
  const what = measureOf(sql, q);
  if (!what || what === 'users') return null;
  if (dim && dim.kind !== 'event_name' && dim.kind !== 'time' && dim.kind !== 'time_part') return null;
  if (!wholeSlots(sql, q.period)) return null;
  const rows = (table: string, a: string) =>
    `select ${a}.slot as created_at, ${a}.event_name, ${a}.events, ${a}.revenue, ${a}.revenue_events
   from public.${table} ${a} where ${a}.app_id = $1::uuid${sql.events(a, q.events.events, [])}${sql.period(`${a}.slot`, q.period)}`;
  // A group is there when it holds an event (events), or an event carrying money (sum, average).
  const present = what === 'events' ? 'sum(d.events) > 0' : 'sum(d.revenue_events) > 0';
  return {
    from: `(${rows('event_slots', 'r')}\n   union all\n   ${rows('event_deltas', 'x')}) as d`,
    where: 'true',
    alias: 'd',
    measure: MEASURES[what],
    having: dim ? [present] : [],
  };
}

/**
 * A series of distinct active users per day, week or month over whole days ("unique users per day
 * for the last 30 days", "weekly active users"), with nothing else asked: the buckets to count, as
 * the metrics count active users per bucket (analytics/queries/rollup-metrics.ts: one row per day,
 * week or month from the per-app rows, a clipped first or last week or month from the users'
 * rows). Null for any other question.
 */
export function activeUsersSeries(
  q: Query,
  cx: CompileContext,
): { unit: 'day' | 'week' | 'month'; lo: string; hi: string; buckets: { label: string; key: string }[] } | null {
  const unit = q.bucket;
  if (!cx.rollup || q.measure.kind !== 'users' || !unit || unit === 'hour') return null;
  if (q.segment || q.groupBy || q.compare || q.versus || q.having || q.limit || q.order || q.percent || q.average)
    return null;
  if (q.events.events.length > 0 || q.events.filters.length > 0) return null;
  const sql = new Sql(cx);
  if (!wholeDays(sql, q.period)) return null;
  const first = cx.firstSeen([]);
  const list = bucketsOf(sql, q, unit, first ? localTimestamp(new Date(first), cx.timeZone).slice(0, 10) : null);
  const last = list[list.length - 1];
  if (!last) return null;
  return { unit, lo: list[0]!.lo, hi: last.hi, buckets: list.map((b) => ({ label: b.label, key: b.key })) };
}
