// Interpretations: one plain sentence saying what was computed and over which period, for every
// answer (`interpretation`) and for audiences ("understood as: ..."). Written from the AST, so it
// says what the SQL does, not what the question said.
import type { Bounds, Condition, Dimension, EventSet, Filter, Measure, Part, Period, Query, Side } from './ast.js';
import { describePeriod, metricDefaultPeriod, periodPhrase } from './periods.js';

export interface DescribeContext {
  today: string;
  now: Date;
}

const OPS: Record<Filter['op'], string> = {
  eq: 'is',
  neq: 'is not',
  in: 'is',
  not_in: 'is not',
  gt: 'is over',
  gte: 'is at least',
  lt: 'is under',
  lte: 'is at most',
  between: 'is between',
  contains: 'contains',
  not_contains: 'does not contain',
  starts_with: 'starts with',
  ends_with: 'ends with',
  exists: 'is set',
  not_exists: 'is not set',
};

const keyName = (k: string) => (k === '$revenue' ? 'revenue' : k);

const DAY_NAMES = ['Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday', 'Sunday'];
const clock = (h: number) => `${String(h).padStart(2, '0')}:00`;

/** `$hour` and `$weekday` in words, in the organization's time zone. */
function describeTimePart(f: Filter): string {
  const n = f.values.map(Number);
  const not = f.op === 'not_in' || f.op === 'neq' ? 'not ' : '';
  if (f.key === '$hour') {
    const [a = 0, b = a] = n;
    return `the local time is ${not}between ${clock(a)} and ${clock(b + 1)}`;
  }
  return `the local day is ${not}${n.map((d) => DAY_NAMES[d - 1] ?? d).join(' or ')}`;
}

export function describeFilter(f: Filter): string {
  if (f.key === '$hour' || f.key === '$weekday') return describeTimePart(f);
  const values =
    f.op === 'between'
      ? `${f.values[0]} and ${f.values[1]}`
      : f.values.map((v) => (typeof v === 'string' ? `"${v}"` : String(v))).join(' or ');
  return values ? `${keyName(f.key)} ${OPS[f.op]} ${values}` : `${keyName(f.key)} ${OPS[f.op]}`;
}

function bounds(b: Bounds, unit: string): string {
  if (b.gte !== undefined && b.lte !== undefined) {
    return (b.gte === b.lte ? `exactly ${b.gte} ${unit}` : `between ${b.gte} and ${b.lte} ${unit}`).replace(
      /\b1 times$/,
      '1 time',
    );
  }
  const parts: string[] = [];
  if (b.gt !== undefined) parts.push(`more than ${b.gt}`);
  if (b.gte !== undefined) parts.push(`at least ${b.gte}`);
  if (b.lt !== undefined) parts.push(`fewer than ${b.lt}`);
  if (b.lte !== undefined) parts.push(`at most ${b.lte}`);
  return `${parts.join(' and ')} ${unit}`.replace(/\b1 times$/, '1 time');
}

function events(set: EventSet, plural = true): string {
  const names =
    set.events.length === 0
      ? plural
        ? 'events'
        : 'any event'
      : `${set.events.map((e) => `"${e}"`).join(' or ')} ${plural ? 'events' : 'event'}`;
  return set.filters.length === 0 ? names : `${names} where ${set.filters.map(describeFilter).join(' and ')}`;
}

/**
 * A condition in words, to follow "users": `who did "purchase" event at least 3 times in the last
 * 30 days (...)`, `whose plan is "premium"`; `all users` stands alone.
 */
export function describeCondition(c: Condition, dc: DescribeContext, nested = false): string {
  const period = (p: Period | undefined) => (p ? ` ${periodPhrase(p, dc.today, dc.now).replace(/^over /, 'in ')}` : '');
  switch (c.type) {
    case 'all':
      return 'all users';
    case 'and':
    case 'or': {
      const text = c.of.map((x) => describeCondition(x, dc, true)).join(` ${c.type} `);
      return nested ? `(${text})` : text;
    }
    case 'not':
      if (c.of.type === 'did') return `who did not do ${describeCondition(c.of, dc).slice('who did '.length)}`;
      if (c.of.type === 'user')
        return `whose ${describeFilter({ ...c.of.filter, op: NEGATED[c.of.filter.op] ?? c.of.filter.op })}`;
      return `not ${describeCondition(c.of, dc, true)}`;
    case 'did': {
      let s = `who did ${events(c, false)}`;
      if (c.times) s += ` ${bounds(c.times, 'times')}`;
      if (c.total) s += ` for a total ${keyName(c.total.key)} of ${bounds(c.total, '').trim()}`;
      return s + period(c.period);
    }
    case 'sequence': {
      const h = c.withinHours;
      const within =
        h === undefined
          ? ''
          : ` within ${h % 24 === 0 ? `${h / 24} day${h === 24 ? '' : 's'}` : `${h} hour${h === 1 ? '' : 's'}`}`;
      const then = describeCondition(c.next, dc).slice('who did '.length);
      return `${describeCondition(c.first, dc)}, and then, after it${within}, ${then}`;
    }
    case 'inactive':
      if (!c.period.to) {
        const since = describePeriod({ ...c.period, label: '' }, dc.today, dc.now).replace(/^ \(from (.*)\)$/, '$1');
        return `with no activity since ${since}, first seen before then`;
      }
      return `with no activity in ${describePeriod(c.period, dc.today, dc.now)}, first seen before it`;
    case 'first_seen':
      return `first seen${period(c.period)}`;
    case 'user':
      return `whose ${describeFilter(c.filter)}`;
  }
}

const NEGATED: Partial<Record<Filter['op'], Filter['op']>> = {
  eq: 'neq',
  in: 'not_in',
  neq: 'eq',
  not_in: 'in',
  exists: 'not_exists',
  not_exists: 'exists',
  contains: 'not_contains',
  not_contains: 'contains',
};

/** "users who ...", or "all users". */
export function describeUsers(c: Condition, dc: DescribeContext): string {
  const text = describeCondition(c, dc);
  return text.startsWith('all users') ? text : `users ${text}`;
}

function measure(m: Measure, q: Query, dc: DescribeContext): string {
  switch (m.kind) {
    case 'events':
      return `the number of ${events(q.events)}`;
    case 'users':
      return q.events.events.length || q.events.filters.length
        ? `the number of distinct users with ${events(q.events)}`
        : q.period
          ? 'the number of distinct active users'
          : 'the number of users';
    case 'new_users':
      return 'the number of new users (first seen)';
    case 'aggregate': {
      const fn = {
        sum: 'the total',
        avg: 'the average',
        min: 'the smallest',
        max: 'the largest',
        median: 'the median',
      }[m.fn];
      return `${fn} ${keyName(m.key)} of ${events(q.events)}`;
    }
    case 'metric': {
      const names = {
        dau: 'daily active users (DAU; the average of the daily counts over several days)',
        wau: 'weekly active users (users active in the 7 days ending then)',
        mau: 'monthly active users (MAU: users active in the 30 days ending then)',
        retention: 'retention (percent of the users first seen in the period who are active in the next one)',
        churn: "churn (percent of the previous period's active users not active in this one)",
        conversion: 'conversion (percent of active users who did a conversion event)',
        arpu: 'revenue per active user (ARPU)',
      };
      return `${names[m.metric]}, as GET /v1/analytics/metrics computes it`;
    }
    case 'retention_day':
      return `day-${m.day} retention (percent of the users whose first event falls in the period who are active on the ${m.day}${m.day === 1 ? 'st' : m.day === 2 ? 'nd' : m.day === 3 ? 'rd' : 'th'} day after their first day)`;
    case 'ratio':
      return `${part(m.numerator, dc)} divided by ${part(m.denominator, dc)}${m.percent ? ', as a percentage' : ''}`;
    case 'funnel':
      return `the percent of users with ${events(m.from)} who also have ${events(m.to)}`;
    case 'per_user': {
      const fn = { max: 'the largest', min: 'the smallest', avg: 'the average', median: 'the median' }[m.fn];
      const each = m.of === 'events' ? 'number of' : `total ${keyName(m.key ?? '$revenue')} of`;
      return `${fn} of each user's ${each} ${events(q.events)} (over the users who have such events)`;
    }
  }
}

function part(p: Part, dc: DescribeContext): string {
  if (p.segment)
    return p.segment.type === 'all' ? 'the number of users' : `the number of ${describeUsers(p.segment, dc)}`;
  if (p.measure === 'events') return `the number of ${events(p)}`;
  if (p.measure === 'users')
    return p.events.length ? `the number of distinct users with ${events(p)}` : 'the number of active users';
  return `the total ${keyName(p.key ?? '$revenue')} of ${events(p)}`;
}

function dimension(d: Dimension): string {
  switch (d.kind) {
    case 'event_name':
      return 'event name';
    case 'event_property':
      return `the event's ${d.key}`;
    case 'user_property':
      return `the user's ${d.key}`;
    case 'user':
      return 'user';
    case 'time':
      return d.unit;
    case 'time_part':
      return d.part === 'hour'
        ? "hour of the day (the organization's time zone)"
        : d.part === 'weekday'
          ? "day of the week (the organization's time zone)"
          : `${d.first === 'weekday' ? 'weekdays against the weekend' : 'the weekend against weekdays'} (Monday to Friday, Saturday and Sunday, in the organization's time zone)`;
  }
}

/** One sentence: what the query computes and over which period. */
export function describeQuery(q: Query, dc: DescribeContext, defaultPeriod?: Period): string {
  // users counted from the app's user list: the condition carries its own periods
  const listed =
    q.measure.kind === 'users' &&
    !q.period &&
    !q.bucket &&
    q.events.events.length === 0 &&
    q.events.filters.length === 0;
  if (listed && !q.compare && (!q.groupBy || q.groupBy.kind === 'user_property')) {
    let s =
      q.segment && q.segment.type !== 'all' ? `The number of ${describeUsers(q.segment, dc)}` : 'The number of users';
    if (q.groupBy) s += `, by ${dimension(q.groupBy)}${q.percent ? ' as a percentage of the total' : ''}`;
    return `${s}${versus(q, dc)}. ${shape(q)}`;
  }
  let s = measure(q.measure, q, dc);
  s = s.charAt(0).toUpperCase() + s.slice(1);
  if (q.segment) s += `, for ${describeUsers(q.segment, dc)}`;
  if (q.having) s += `, for each user with ${bounds(q.having, 'such events')}`;
  if (q.groupBy) {
    s += `, by ${dimension(q.groupBy)}`;
    if (q.percent) s += ' as a percentage of the total';
    if (q.limit) s += `, ${q.order === 'asc' ? 'lowest' : 'highest'} ${q.limit === 1 ? 'one' : q.limit} first`;
    else if (q.groupBy.kind === 'time_part') s += q.groupBy.part === 'day_type' ? '' : ', in order';
    else s += `, ${q.order === 'asc' ? 'lowest' : 'highest'} first`;
  }
  if (q.bucket && q.average) s += `, averaged over every ${q.bucket} (empty ${q.bucket}s count as 0)`;
  else if (q.bucket) s += `, per ${q.bucket} with every ${q.bucket} listed`;
  const period =
    q.period ?? (q.measure.kind === 'metric' ? metricDefaultPeriod(q.measure.metric, !!q.bucket) : defaultPeriod);
  s += versus(q, dc);
  if (q.compare) s += `, compared between ${q.compare.map((p) => describePeriod(p, dc.today, dc.now)).join(' and ')}`;
  else if (period) s += `, ${periodPhrase(period, dc.today, dc.now)}`;
  else s += ', over all time';
  return `${s}. ${shape(q)}`;
}

/** The segments compared, each with what it adds ("premium" (users whose plan is "premium")). */
function versus(q: Query, dc: DescribeContext): string {
  if (!q.versus) return '';
  const side = (v: Side) =>
    `"${v.label}" (${[...v.filters.map(describeFilter), ...(v.segment ? [describeUsers(v.segment, dc)] : [])].join(', ')})`;
  return `, compared between ${q.versus.map(side).join(' and ')}`;
}

/** What the answer looks like and whose events it counts, so that a reader sees what was computed. */
function shape(q: Query): string {
  const rows = q.compare
    ? 'One row per period compared'
    : q.versus
      ? 'One row per segment compared, in the order written'
      : q.groupBy
        ? `One row per group${q.limit ? ` (at most ${q.limit})` : ''}`
        : q.bucket && !q.average
          ? `One row per ${q.bucket}`
          : 'One figure';
  const who = q.segment && q.segment.type !== 'all' ? 'only the users described' : "all of the app's users";
  return `${rows}, counting ${who}.`;
}
