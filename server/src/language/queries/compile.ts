// Compiles the natural-language query AST (language/ast.ts) to one parameterised SELECT over the
// sandbox relations `events` and `users` (or the rollups, compile-rollup.ts, or the events table by
// the users' own key when users are only counted), run by the sandbox executor. Column
// convention: a single figure is `value`; a breakdown is the dimension (`event_name`, the
// property's name or `key`, `user_id`, `date`) and `value`; a series is `date` and `value` (plus
// the dimension), with every bucket of the period listed, empty ones at 0. Audience conditions
// compile in compile-audiences.ts (re-exported here).
import { localTimestamp as localOf } from '../../time.js';
import type { Dimension, EventSet, Part, Query } from '../ast.js';
import { bucketsOf } from './compile-buckets.js';
import { metricSql } from './compile-metrics.js';
import { type CompileContext, type CompiledSql, Sql } from './compile-parts.js';
import {
  dimensionColumn,
  EVENTS_BY_USER_KEY,
  LABEL,
  measureExpr,
  onUsers,
  segment,
  source,
  timeKey,
} from './compile-source.js';

export {
  audienceSqlCount,
  audienceSqlMembers,
  compileSegmentCount,
  compileSegmentMembers,
} from './compile-audiences.js';
export { dimensionColumn } from './compile-source.js';
export type { CompileContext, CompiledSql };

export function compileQuery(query: Query, cx: CompileContext): CompiledSql {
  const sql = new Sql(cx);
  const statement = compile(sql, query);
  return { statement, params: sql.params, display: sql.display(statement) };
}

function compile(sql: Sql, q: Query): string {
  if (q.compare) {
    const rows = q.compare.map(
      (p, i) => `(${i + 1}, ${sql.p(p.label)}, (${scalar(sql, { ...q, compare: undefined, period: p })}))`,
    );
    return `select c.period, c.value from (values ${rows.join(', ')}) as c(n, period, value) order by c.n`;
  }
  if (q.versus) {
    const rows = q.versus.map((side, i) => {
      const segment = side.segment
        ? q.segment
          ? { type: 'and' as const, of: [q.segment, side.segment] }
          : side.segment
        : q.segment;
      const one: Query = {
        ...q,
        versus: undefined,
        events: { ...q.events, filters: [...q.events.filters, ...side.filters] },
        ...(segment ? { segment } : {}),
      };
      return `(${i + 1}, ${sql.p(side.label)}, (${scalar(sql, one)}))`;
    });
    return `select c.segment, c.value from (values ${rows.join(', ')}) as c(n, segment, value) order by c.n`;
  }
  if (q.measure.kind === 'metric') return metricSql(sql, q, q.measure.metric);
  if (q.bucket && q.average)
    return `select round(avg(s.value), 2) as value from (${series(sql, { ...q, average: undefined })}) as s`;
  if (q.bucket) return series(sql, q);
  if (q.groupBy) return breakdown(sql, q);
  return `select ${scalar(sql, q)} as value`;
}

// ---- single figures ----------------------------------------------------------------------------

/** A scalar subquery giving the query's one figure. */
function scalar(sql: Sql, q: Query): string {
  const m = q.measure;
  switch (m.kind) {
    case 'ratio': {
      const num = part(sql, m.numerator, q);
      const den = part(sql, m.denominator, q);
      const scale = m.percent ? '100.0 * ' : '';
      return `(select coalesce(round(${scale}(${num})::numeric / nullif((${den}), 0), 2), 0))`;
    }
    case 'funnel':
      return funnel(sql, q, m.from, m.to);
    case 'retention_day':
      return retentionDay(sql, q, m.day);
    case 'metric':
      return `(select value from (${metricSql(sql, q, m.metric)}) as metric)`;
    case 'per_user':
      return perUser(sql, q, m);
    default:
      return `(${grouped(sql, q, null)})`;
  }
}

function part(sql: Sql, p: Part, q: Query): string {
  if (p.segment) return `select count(*) from users u where ${sql.condition(p.segment)}`;
  const e = sql.next('e');
  const where = `true${sql.events(e, p.events, p.filters)}${sql.period(`${e}.created_at`, q.period)}${segment(sql, q, e)}`;
  if (p.measure === 'events') return `select count(*) from events ${e} where ${where}`;
  if (p.measure === 'users') return `select count(distinct ${e}.user_id) from events ${e} where ${where}`;
  return `select coalesce(sum(${sql.number(e, p.key ?? '$revenue')}), 0) from events ${e} where ${where}`;
}

/** The largest, smallest, average or median of each user's count or total, over users with such events. */
function perUser(sql: Sql, q: Query, m: Extract<Query['measure'], { kind: 'per_user' }>): string {
  const e = sql.next('e');
  const v = m.of === 'events' ? 'count(*)' : `coalesce(sum(${sql.number(e, m.key ?? '$revenue')}), 0)`;
  const agg =
    m.fn === 'avg'
      ? 'round(avg(s.v), 2)'
      : m.fn === 'median'
        ? 'round((percentile_cont(0.5) within group (order by s.v))::numeric, 2)'
        : `${m.fn}(s.v)`;
  return `(select ${agg} from (select ${e}.user_id, ${v} as v from events ${e}
  where true${sql.events(e, q.events.events, q.events.filters)}${sql.period(`${e}.created_at`, q.period)}${segment(sql, q, e)}
  group by ${e}.user_id) as s)`;
}

function funnel(sql: Sql, q: Query, from: EventSet, to: EventSet): string {
  const e = sql.next('e');
  const a = `(true${sql.events(e, from.events, from.filters)})`;
  const b = `(true${sql.events(e, to.events, to.filters)})`;
  return `(select coalesce(round(100.0 * count(*) filter (where s.done) / nullif(count(*), 0), 2), 0) from (
  select ${e}.user_id, bool_or(${b}) as done from events ${e}
  where (${a} or ${b})${sql.period(`${e}.created_at`, q.period)}${segment(sql, q, e)}
  group by ${e}.user_id having bool_or(${a})) as s)`;
}

function retentionDay(sql: Sql, q: Query, n: number): string {
  const tz = sql.tz();
  const e = sql.next('e');
  const x = sql.next('x');
  return `(select coalesce(round(100.0 * count(*) filter (where exists (
    select 1 from events ${x} where ${x}.user_id = f.user_id
      and ${x}.created_at >= ((date_trunc('day', f.first at time zone ${tz}) + make_interval(days => ${sql.p(n, 'int')})) at time zone ${tz})
      and ${x}.created_at < ((date_trunc('day', f.first at time zone ${tz}) + make_interval(days => ${sql.p(n + 1, 'int')})) at time zone ${tz})
  )) / nullif(count(*), 0), 2), 0)
  from (select ${e}.user_id, min(${e}.created_at) as first from events ${e} group by ${e}.user_id) as f
  where true${sql.period('f.first', q.period)})`;
}

const quote = (s: string) => `"${s.replace(/"/g, '""')}"`;

/** SELECT of the measure, grouped by `dim` when given. */
function grouped(sql: Sql, q: Query, dim: Dimension | null): string {
  const src = source(sql, q, dim);
  const m = src.measure ?? measureExpr(sql, q, src.alias, src.value);
  if (!dim) return `select ${m} from ${src.from} where ${src.where}`;
  return `select ${src.key} as k, ${m} as v from ${src.from} where ${src.where} group by 1${having(sql, q, m, src.having)}`;
}

function having(sql: Sql, q: Query, m: string, own: string[] = []): string {
  const b = q.having;
  const parts = [...own];
  if (!b) return parts.length ? ` having ${parts.join(' and ')}` : '';
  if (b.gt !== undefined) parts.push(`${m} > ${sql.p(b.gt, 'numeric')}`);
  if (b.gte !== undefined) parts.push(`${m} >= ${sql.p(b.gte, 'numeric')}`);
  if (b.lt !== undefined) parts.push(`${m} < ${sql.p(b.lt, 'numeric')}`);
  if (b.lte !== undefined) parts.push(`${m} <= ${sql.p(b.lte, 'numeric')}`);
  return parts.length ? ` having ${parts.join(' and ')}` : '';
}

// ---- breakdowns ----------------------------------------------------------------------------------

const WEEKDAYS = `(array['Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday', 'Sunday'])`;

/** Hours and weekdays in their own order (or ranked), weekdays by name, "weekend" or "weekdays" first as asked. */
function timePartBreakdown(sql: Sql, q: Query, dim: Extract<Dimension, { kind: 'time_part' }>): string {
  const col = quote(dimensionColumn(dim));
  const inner = grouped(sql, q, dim);
  const label = dim.part === 'weekday' ? `${WEEKDAYS}[g.k]` : 'g.k';
  const value = q.percent ? 'round(100.0 * g.v / nullif(sum(g.v) over (), 0), 2)' : 'g.v';
  const own =
    dim.part === 'day_type' ? `(g.k = ${sql.p(dim.first === 'weekday' ? 'weekdays' : 'weekend')}) desc` : 'g.k';
  const order = q.limit ? `g.v ${q.order ?? 'desc'}, g.k` : own;
  const limit = q.limit ? ` limit ${sql.p(q.limit, 'bigint')}` : '';
  if (q.limit && q.order === 'asc' && dim.part !== 'day_type') {
    // "the quietest hour": hours and days without events count, at 0
    const all = dim.part === 'hour' ? 'generate_series(0, 23)' : 'generate_series(1, 7)';
    const from = `(select a.k, coalesce(i.v, 0) as v from ${all} as a(k) left join (${inner}) as i on i.k = a.k) as g`;
    return `select ${label} as ${col}, ${value} as value from ${from} order by ${order}${limit}`;
  }
  return `select ${label} as ${col}, ${value} as value from (${inner}) as g order by ${order}${limit}`;
}

function breakdown(sql: Sql, q: Query): string {
  const dim = q.groupBy!;
  if (dim.kind === 'time_part') return timePartBreakdown(sql, q, dim);
  const col = quote(dimensionColumn(dim));
  const inner = grouped(sql, q, dim);
  const value = q.percent ? 'round(100.0 * g.v / nullif(sum(g.v) over (), 0), 2)' : 'g.v';
  const dir = q.order ?? 'desc';
  const order = `order by ${q.percent ? 'g.v' : 'value'} ${dir}, 1`;
  const limit = q.limit ? ` limit ${sql.p(q.limit, 'bigint')}` : '';
  return `select g.k as ${col}, ${value} as value from (${inner}) as g ${order}${limit}`;
}

// ---- series --------------------------------------------------------------------------------------

function series(sql: Sql, q: Query): string {
  const unit = q.bucket!;
  // Parameters bound from here on, which a statement of another form drops (below).
  const mark = sql.params.length;
  const first = onUsers(q) || q.measure.kind === 'new_users' ? sql.cx.firstSeen([]) : sql.cx.firstSeen(q.events.events);
  const list = bucketsOf(sql, q, unit, first ? localOf(new Date(first), sql.cx.timeZone).slice(0, 10) : null);
  const values = list.map((b) => `(${sql.p(b.label)})`).join(', ');
  // The bucket stays on the measured query: "users per week" counts active users, not profiles.
  const measureQ: Query = { ...q, groupBy: undefined };
  if (!q.groupBy) {
    const src = source(sql, measureQ, { kind: 'time', unit });
    const m = src.measure ?? measureExpr(sql, measureQ, src.alias, src.value);
    if (!src.measure && src.from.startsWith(EVENTS_BY_USER_KEY) && m === `count(distinct ${src.alias}.user_id)`) {
      // Distinct users counted bucket by bucket, each over its own time range: PostgreSQL reads a
      // named event's bucket from the index on (app, name, time), which holds the user key, and
      // hashes one bucket's users at a time (`count(distinct ...)` would sort them). Over all
      // buckets at once it sorted every (bucket, user) pair, on disk at ten million events.
      // The bounds are instants computed in the `values` list: `at time zone` inside the subquery,
      // over the outer row, is a function that is not leakproof applied to a column, and under the
      // sandbox role's row-level security PostgreSQL would then filter the rows instead of bounding
      // the index scan. The statement binds its own parameters, so those of the other form are
      // dropped first (PostgreSQL refuses a parameter it cannot type).
      sql.params.length = mark;
      const rows = source(sql, measureQ, null, false);
      const a = rows.alias;
      const tz = sql.tz();
      const at = (local: string) => `(${sql.p(local, 'timestamp')} at time zone ${tz})`;
      const ranges = list.map((b) => `(${sql.p(b.label)}, ${at(b.lo)}, ${at(b.hi)})`);
      return `select b.date, (select count(*) from (select distinct ${a}.user_id from ${rows.from} where ${rows.where}
  and ${a}.created_at >= b.lo and ${a}.created_at < b.hi) as k) as value
from (values ${ranges.join(', ')}) as b(date, lo, hi)
order by b.date`;
    }
    // Distinct users per bucket over raw events as the distinct (bucket, user) pairs, counted: one
    // hash of the pairs instead of a sort of every bucket's users, and each bucket labelled once,
    // not each event (at ten million events: 1.5 -> 1.1 s for a name's users per week).
    // (The bucket is the time key without its label: timeKey's `to_char(<bucket>, <label>)`.)
    const [open, close] = ['to_char(', `, ${LABEL[unit]})`];
    const key = src.key!;
    const perBucket =
      m === `count(distinct ${src.alias}.user_id)` && key.startsWith(open) && key.endsWith(close)
        ? `select to_char(p.b, ${LABEL[unit]}) as k, count(*) as v from (select distinct ${key.slice(open.length, -close.length)} as b, ${src.alias}.user_id from ${src.from} where ${src.where}) as p group by p.b`
        : `select ${key} as k, ${m} as v from ${src.from} where ${src.where} group by 1`;
    return `select b.date, coalesce(s.v, 0) as value from (values ${values}) as b(date)
left join (${perBucket}) as s on s.k = b.date
order by b.date`;
  }
  const dim = q.groupBy;
  const col = quote(dimensionColumn(dim));
  const dsrc = source(sql, { ...measureQ, groupBy: dim }, dim, false);
  const dkey = dsrc.key!;
  const tkey = timeKey(sql, unit, `${dsrc.alias}.created_at`);
  const m2 = measureExpr(sql, measureQ, dsrc.alias, dsrc.value);
  const dsrc2 = source(sql, { ...measureQ, groupBy: dim }, dim, false);
  return `select b.date, d.k as ${col}, coalesce(s.v, 0) as value from (values ${values}) as b(date)
cross join (select distinct ${dsrc2.key} as k from ${dsrc2.from} where ${dsrc2.where}) as d
left join (select ${tkey} as t, ${dkey} as k, ${m2} as v from ${dsrc.from} where ${dsrc.where} group by 1, 2) as s on s.t = b.date and s.k = d.k
order by b.date, d.k`;
}

export { Sql };
