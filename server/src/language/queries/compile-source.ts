// The rows a natural-language query measures, as compile.ts builds them: the measure over events or
// users, the FROM and WHERE of the rows (raw events, the events by the users' own key, or the
// rollups of compile-rollup.ts), and the dimensions' expressions.
import type { Bucket, Dimension, Query } from '../ast.js';
import type { Sql } from './compile-parts.js';
import { rollupSource, slotSource } from './compile-rollup.js';

/** The label of a bucket of each unit, as to_char writes it. */
export const LABEL: Record<Bucket, string> = {
  hour: `'YYYY-MM-DD"T"HH24:00'`,
  day: `'YYYY-MM-DD'`,
  week: `'YYYY-MM-DD'`,
  month: `'YYYY-MM-DD'`,
};

// ---- measures over events or users -----------------------------------------------------------

/** Whether the query counts the app's users directly (users table) rather than through events. */
export function onUsers(q: Query): boolean {
  if (q.measure.kind === 'new_users') return true;
  return (
    q.measure.kind === 'users' &&
    q.events.events.length === 0 &&
    q.events.filters.length === 0 &&
    !q.period &&
    !q.bucket &&
    (!q.groupBy || q.groupBy.kind === 'user_property')
  );
}

export function measureExpr(sql: Sql, q: Query, e: string, value?: string): string {
  const m = q.measure;
  switch (m.kind) {
    case 'events':
      return 'count(*)';
    case 'users':
      return onUsers(q) ? 'count(*)' : `count(distinct ${e}.user_id)`;
    case 'new_users':
      return 'count(*)';
    case 'aggregate': {
      const x = value ?? sql.number(e, m.key);
      if (m.fn === 'sum') return `round(coalesce(sum(${x}), 0), 2)`;
      if (m.fn === 'avg') return `round(avg(${x}), 2)`;
      if (m.fn === 'median') return `round((percentile_cont(0.5) within group (order by ${x}))::numeric, 2)`;
      return `${m.fn}(${x})`;
    }
    default:
      throw new Error(`measure ${m.kind} has no per-row expression`);
  }
}

export function segment(sql: Sql, q: Query, e: string): string {
  if (!q.segment) return '';
  const u = sql.next('u');
  return ` and ${e}.user_id in (select ${u}.user_id from users ${u} where ${sql.condition(q.segment, u)})`;
}

/**
 * The app's human events as the sandbox's `events` relation has them, but with `user_id` the
 * user's internal key instead of the id the app gave (which `events` joins from `users` for every
 * row). Each user has one key and one id, so distinct users counted by key are the same number;
 * only a statement that never shows a user's id nor matches it against `users` may read it. The
 * join-free rows let PostgreSQL answer from the index on (app, event name, time), which carries
 * the user key: at ten million events, a name's distinct users per week no longer join 100,000
 * users to half a million events.
 */
export const EVENTS_BY_USER_KEY = `(select x.id, x.user_id, x.event_name, x.properties, x.created_at from public.events x
  where x.app_id = $1::uuid and not x.is_bot)`;

/** Whether the users a question measures are only counted: no segment, no breakdown by user or by a user's property. */
export function countsUsersOnly(q: Query, dim: Dimension | null): boolean {
  return q.measure.kind === 'users' && !q.segment && dim?.kind !== 'user' && dim?.kind !== 'user_property';
}

/** FROM and WHERE of the rows measured; `key` is the dimension expression (or null). */
export function source(
  sql: Sql,
  q: Query,
  dim: Dimension | null,
  /** Whether the activity rollup may answer (a time series broken down by a dimension reads events). */
  rollup = true,
): {
  from: string;
  where: string;
  alias: string;
  key: string | null;
  measure?: string;
  /** The per-row value an aggregate measure takes, when the source computes it (else measureExpr writes it). */
  value?: string;
  having?: string[];
} {
  if (onUsers(q)) {
    const u = 'u';
    let where = 'true';
    if (q.measure.kind === 'new_users') where += sql.period(`${u}.created_at`, q.period);
    if (q.segment) where += ` and ${sql.condition(q.segment, u)}`;
    if (dim?.kind === 'time')
      return { from: `users ${u}`, where, alias: u, key: timeKey(sql, dim.unit, `${u}.created_at`) };
    const key = dim ? dimensionExpr(sql, dim, u, u) : null;
    if (key) where += ` and ${key} is not null`;
    return { from: `users ${u}`, where, alias: u, key };
  }
  const fromRollup = rollup ? rollupSource(sql, q, dim) : null;
  if (fromRollup) return fromRollup;
  const fromSlots = rollup ? slotSource(sql, q, dim) : null;
  if (fromSlots) return { ...fromSlots, key: dim ? dimensionExpr(sql, dim, fromSlots.alias, 'u') : null };
  const e = 'e';
  const needsUser = dim?.kind === 'user_property';
  const from = needsUser
    ? `events ${e} join users u on u.user_id = ${e}.user_id`
    : countsUsersOnly(q, dim)
      ? `${EVENTS_BY_USER_KEY} ${e}`
      : `events ${e}`;
  let where = `true${sql.events(e, q.events.events, q.events.filters)}${sql.period(`${e}.created_at`, q.period)}${segment(sql, q, e)}`;
  if (q.measure.kind === 'aggregate') {
    // The value (and a breakdown's key) computed once a row, in a subquery kept whole by `offset
    // 0`: written in the filter and again in the aggregate and the grouping, PostgreSQL computes
    // each as often as it is written (revenue by country over a month at ten million events: 500
    // -> 300 ms). Outside it, only the event's time is read (a series' bucket).
    const v = sql.next('mv');
    const grouping = dim && dim.kind !== 'time';
    const k = grouping ? dimensionExpr(sql, dim, e, 'u') : null;
    if (q.measure.key === '$revenue') where += sql.carriesMoney(e);
    const inner = `(select ${e}.created_at, ${sql.number(e, q.measure.key)} as m${k ? `, ${k} as k` : ''} from ${from} where ${where} offset 0) as ${v}`;
    return {
      from: inner,
      where: `${v}.m is not null${k ? ` and ${v}.k is not null` : ''}`,
      alias: v,
      key: k ? `${v}.k` : dim ? dimensionExpr(sql, dim, v, 'u') : null,
      value: `${v}.m`,
    };
  }
  const key = dim ? dimensionExpr(sql, dim, e, 'u') : null;
  const grouping = dim && key && dim.kind !== 'time';
  if (grouping) where += ` and ${key} is not null`;
  return { from, where, alias: e, key };
}

export function timeKey(sql: Sql, unit: Bucket, column: string): string {
  return `to_char(date_trunc('${unit}', ${column} at time zone ${sql.tz()}), ${LABEL[unit]})`;
}

export function dimensionExpr(sql: Sql, d: Dimension, e: string, u: string): string {
  switch (d.kind) {
    case 'event_name':
      return `${e}.event_name`;
    case 'event_property':
      return sql.text(e, d.key);
    case 'user_property':
      return sql.text(u, d.key);
    case 'user':
      return `${e}.user_id`;
    case 'time':
      return timeKey(sql, d.unit, `${e}.created_at`);
    case 'time_part': {
      if (d.part === 'hour') return sql.timePart(e, 'hour');
      const dow = sql.timePart(e, 'isodow');
      return d.part === 'weekday' ? dow : `(case when ${dow} in (6, 7) then 'weekend' else 'weekdays' end)`;
    }
  }
}

/** The output column of a dimension. */
export function dimensionColumn(d: Dimension): string {
  switch (d.kind) {
    case 'event_name':
      return 'event_name';
    case 'user':
      return 'user_id';
    case 'time':
      return 'date';
    case 'time_part':
      return d.part === 'hour' ? 'hour' : d.part === 'weekday' ? 'weekday' : 'days';
    default: {
      const name = d.key.replace(/[^A-Za-z0-9_]/g, '_').toLowerCase();
      return name === '' || name === 'value' || name === 'date' || /^\d/.test(name) ? 'key' : name;
    }
  }
}
