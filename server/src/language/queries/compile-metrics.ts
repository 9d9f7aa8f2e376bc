// The metrics of DESIGN §6 as the natural-language engine computes them, with the same
// definitions as GET /v1/analytics/metrics (analytics/metrics.ts), so "DAU last week" and the
// metric `dau` by week over those dates give the same number. Buckets are clipped to the period;
// "the next period" (retention) and "the previous period" (churn) are whole calendar periods, or,
// for a period that is not one, the same number of days right after or before it.
import type { MetricName, Period, Query } from '../ast.js';
import { addMonths, metricDefaultPeriod, shiftUnit } from '../periods.js';
import { type BucketRange, bucketsOf } from './compile-buckets.js';
import type { Sql } from './compile-parts.js';

interface MetricBucket extends BucketRange {
  days: number;
  next: [string, string];
  prev: [string, string];
}

const naive = (s: string) => new Date(`${s.replace(' ', 'T')}Z`).getTime();
const fromMs = (ms: number) => new Date(ms).toISOString().slice(0, 19).replace('T', ' ');

export function metricPeriod(q: Query, metric: MetricName): Period {
  return q.period ?? metricDefaultPeriod(metric, !!q.bucket);
}

function metricBuckets(sql: Sql, q: Query, metric: MetricName): MetricBucket[] {
  const period = metricPeriod(q, metric);
  const pq: Query = { ...q, period };
  if (q.bucket) {
    const unit = q.bucket;
    return bucketsOf(sql, pq, unit, null).map((b) => {
      const next = [shiftLocal(b.key, unit, 1), shiftLocal(b.key, unit, 2)] as [string, string];
      const prev = [shiftLocal(b.key, unit, -1), b.key] as [string, string];
      return { ...b, days: Math.max(1, Math.round((naive(b.hi) - naive(b.lo)) / 86_400_000)), next, prev };
    });
  }
  // one bucket: the whole period
  const [whole] = bucketsOf(sql, { ...pq }, 'day', null).reduce<BucketRange[]>((acc, b) => {
    if (acc.length === 0) return [{ ...b }];
    acc[0]!.hi = b.hi;
    return acc;
  }, []);
  if (!whole) throw new RangeError('The period is empty.');
  const lo = whole.lo;
  const hi = whole.hi;
  const length = naive(hi) - naive(lo);
  const unit = period.unit;
  const next: [string, string] = unit
    ? [`${shiftUnit(lo.slice(0, 10), unit, 1)} 00:00:00`, `${shiftUnit(lo.slice(0, 10), unit, 2)} 00:00:00`]
    : [hi, fromMs(naive(hi) + length)];
  const prev: [string, string] = unit
    ? [`${shiftUnit(lo.slice(0, 10), unit, -1)} 00:00:00`, lo]
    : [fromMs(naive(lo) - length), lo];
  return [{ label: lo.slice(0, 10), key: lo, lo, hi, days: Math.max(1, Math.round(length / 86_400_000)), next, prev }];
}

function shiftLocal(local: string, unit: 'hour' | 'day' | 'week' | 'month', n: number): string {
  if (unit === 'hour') return fromMs(naive(local) + n * 3_600_000);
  if (unit === 'day') return fromMs(naive(local) + n * 86_400_000);
  if (unit === 'week') return fromMs(naive(local) + n * 7 * 86_400_000);
  return `${addMonths(local.slice(0, 10), n)} 00:00:00`;
}

/** Rows (date, value) per bucket, or one row (value) without a bucket. */
export function metricSql(sql: Sql, q: Query, metric: MetricName): string {
  const list = metricBuckets(sql, q, metric);
  const ts = (v: string) => sql.p(v, 'timestamp');
  const rows = list
    .map(
      (b) =>
        `(${sql.p(b.label)}, ${ts(b.lo)}, ${ts(b.hi)}, ${sql.p(b.days, 'int')}, ${ts(b.next[0])}, ${ts(b.next[1])}, ${ts(b.prev[0])}, ${ts(b.prev[1])})`,
    )
    .join(', ');
  const B = `(values ${rows}) as b(date, lo, hi, days, nlo, nhi, plo, phi)`;
  const tz = sql.tz();
  const at = (col: string) => `(b.${col} at time zone ${tz})`;
  const within = (alias: string, lo = 'lo', hi = 'hi') =>
    `${alias}.created_at >= ${at(lo)} and ${alias}.created_at < ${at(hi)}`;
  let statement: string;
  switch (metric) {
    case 'dau':
      statement =
        q.bucket === 'hour'
          ? `select b.date, count(distinct e.user_id) as value from ${B} left join events e on ${within('e')} group by b.date order by b.date`
          : `select b.date, round(coalesce(sum(d.n), 0)::numeric / b.days, 2) as value from ${B}
left join (select date_trunc('day', e.created_at at time zone ${tz}) as day, count(distinct e.user_id) as n from events e
  where e.created_at >= ${sql.local(list[0]!.lo)} and e.created_at < ${sql.local(list[list.length - 1]!.hi)} group by 1) as d
  on d.day >= b.lo and d.day < b.hi
group by b.date, b.days order by b.date`;
      break;
    case 'mau':
    case 'wau': {
      const days = metric === 'mau' ? 30 : 7;
      statement = `select b.date, (select count(distinct e.user_id) from events e
  where e.created_at >= ((b.hi - make_interval(days => ${sql.p(days, 'int')})) at time zone ${tz}) and e.created_at < ${at('hi')}) as value
from ${B} order by b.date`;
      break;
    }
    case 'retention':
      statement = `select b.date, round(coalesce(100.0 * count(f.user_id) filter (where exists (
    select 1 from events x where x.user_id = f.user_id and ${within('x', 'nlo', 'nhi')})) / nullif(count(f.user_id), 0), 0), 2) as value
from ${B} left join (select e.user_id, min(e.created_at) as first from events e group by e.user_id) as f
  on f.first >= ${at('lo')} and f.first < ${at('hi')}
group by b.date order by b.date`;
      break;
    case 'churn':
      statement = `select b.date, round(coalesce(100.0 * count(distinct p.user_id) filter (where not exists (
    select 1 from events x where x.user_id = p.user_id and ${within('x')})) / nullif(count(distinct p.user_id), 0), 0), 2) as value
from ${B} left join events p on ${within('p', 'plo', 'phi')}
group by b.date order by b.date`;
      break;
    case 'conversion': {
      const conv = sql.cx.conversionEvents.length
        ? `e.event_name in (${sql.cx.conversionEvents.map((c) => sql.p(c)).join(', ')})`
        : `(e.properties ? 'revenue' or e.properties ? 'amount') and (jsonb_typeof(e.properties -> 'revenue') = 'number' or jsonb_typeof(e.properties -> 'amount') = 'number')`;
      statement = `select b.date, round(coalesce(100.0 * count(distinct e.user_id) filter (where ${conv}) / nullif(count(distinct e.user_id), 0), 0), 2) as value
from ${B} left join events e on ${within('e')}
group by b.date order by b.date`;
      break;
    }
    case 'arpu':
      statement = `select b.date, coalesce(round(coalesce(sum(${sql.money('e')}), 0) / nullif(count(distinct e.user_id), 0), 2), 0) as value
from ${B} left join events e on ${within('e')}
group by b.date order by b.date`;
      break;
  }
  return q.bucket ? statement : `select m.value from (${statement}) as m`;
}
