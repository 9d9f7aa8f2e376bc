// Analytics questions -> a query. The question is read in passes over its mentions: periods (and
// comparisons of periods), ordering and grouping ("top 5", "which country has the most", "by
// category", "daily"), numbers and filters, then the measure (a metric of §6, a ratio, a sum, a
// count of events or of users), the events measured and the users they are restricted to. Every
// mention must be placed; a word that is not is named in the refusal, never guessed around.
import type { Bucket, Condition, Dimension, EventSet, Measure, Period, Query } from './ast.js';
import {
  and,
  eventsOf,
  type FilterSpec,
  isFiller,
  isRole,
  type NumberSpec,
  roleOf,
  takeFilters,
  takeNumbers,
  targetsOf,
  timesBounds,
} from './clause.js';
import { parseCriteria, refuseErrors } from './criteria.js';
import type { Lexicon } from './lexicon.js';
import type { Reading, Tagged } from './mentions.js';
import { NotUnderstood } from './not-understood.js';
import { mergeAdjacent } from './periods.js';
import { clip, place, relevantEvents, scopeOf } from './place.js';
import { SKIPPABLE } from './words.js';

/** Roles that carry no meaning once the structure is read. */
const QUIET_ROLES = new Set([
  'rel',
  'which',
  'is',
  'have',
  'with',
  'and',
  'by',
  'each',
  'all_time',
  'in_total',
  'to',
  'whose',
  'where',
  'paying',
  'unique',
  'popular',
]);

interface Order {
  order: 'desc' | 'asc';
  limit?: number;
  dimension?: Dimension | 'pending';
  /** "most viewed category": the event that orders. */
  events?: string[];
  /** "best-selling": counts purchases. */
  selling?: boolean;
}

export function parseQuestion(reading: Reading, lexicon: Lexicon): Query {
  const ms = reading.mentions.filter((m) => !(m.kind === 'symbol' && ['.', '?', '!', ',', ':', ';'].includes(m.text)));
  refuseErrors(ms);
  const q = new Question(ms, lexicon);
  return q.parse();
}

class Question {
  private period?: Period;
  private compare?: Period[];
  private bucket?: Bucket | 'auto';
  private groupBy?: Dimension;
  private order?: Order;
  private percent = false;
  private average = false;
  /** "by week": a series was asked for, not a rate per week. */
  private seriesAsked = false;
  /** Mentions read as numbers and filters (given back when the rest is read as criteria). */
  private filterMentions: Tagged[] = [];

  constructor(
    private readonly ms: Tagged[],
    private readonly lexicon: Lexicon,
  ) {}

  private unused() {
    return this.ms.filter((m) => !m.used);
  }
  private has(...roles: string[]) {
    return this.ms.some((m) => !m.used && isRole(m, ...roles));
  }
  private take(...roles: string[]): Tagged | undefined {
    const m = this.ms.find((x) => !x.used && isRole(x, ...roles));
    if (m) m.used = true;
    return m;
  }
  private next(i: number): number {
    let k = i + 1;
    while (k < this.ms.length && (this.ms[k]!.used || isFiller(this.ms[k]))) k++;
    return k;
  }

  parse(): Query {
    this.relativeSegment();
    this.periods();
    this.orderAndGroups();
    const before = this.ms.filter((m) => !m.used);
    const numbers = takeNumbers(this.ms);
    const specs = takeFilters(this.ms);
    this.filterMentions = before.filter((m) => m.used);
    let query: Query;
    try {
      query = this.measure(numbers, specs);
    } catch (err) {
      // name the words that were not understood, when there are some
      const unknown = this.unused().filter(
        (m) => (m.kind === 'word' && !isFiller(m)) || (m.kind === 'symbol' && !isFiller(m)),
      );
      if (err instanceof NotUnderstood && err.unknown.length === 0 && unknown.length > 0) {
        throw new NotUnderstood(
          `I do not know what to do with "${unknown
            .slice(0, 8)
            .map((m) => clip(m.raw))
            .join('", "')}" in this question.`,
          unknown.map((m) => m.raw),
        );
      }
      throw err;
    }
    const left = this.unused().filter(
      (m) =>
        !isFiller(m) &&
        !(m.kind === 'role' && QUIET_ROLES.has(m.role)) &&
        !(m.kind === 'target' && SKIPPABLE.has(m.raw.toLowerCase())),
    );
    if (left.length > 0) {
      throw new NotUnderstood(
        `I do not know what to do with "${left
          .slice(0, 8)
          .map((m) => clip(m.raw))
          .join('", "')}" in this question.`,
        left.map((m) => m.raw),
      );
    }
    return query;
  }

  /** "revenue from users who signed up last month": the users' clause is a segment. */
  private relSegment?: Condition;

  private relativeSegment() {
    const i = this.ms.findIndex((m, k) => isRole(m, 'users', 'visitors') && isRole(this.ms[this.next(k)], 'rel'));
    if (i < 0) return;
    const measured = this.ms
      .slice(0, i)
      .some(
        (m) =>
          (eventsOf(m) && targetsOf(m, 'agent').length === 0) ||
          isRole(m, 'money', 'sales', 'how_much', 'aov', 'aov_median'),
      );
    if (!measured) return;
    const clause = this.ms.slice(i);
    this.relSegment = parseCriteria(
      { tokens: [], mentions: clause.map((m) => ({ ...m, used: false })), corrections: [], today: '' },
      this.lexicon,
    );
    for (const m of clause) m.used = true;
  }

  // ---- periods and comparisons -------------------------------------------------------------

  private periods() {
    const ps = this.ms.filter((m) => m.kind === 'period' && !m.used);
    for (const p of this.ms.filter((m) => isRole(m, 'all_time'))) p.used = true;
    const vs = this.take('vs', 'change', 'wow', 'mom');
    for (const p of ps) p.used = true;
    const periods = ps.map((p) => (p.kind === 'period' ? p.period : null)!);
    if (vs && isRole(vs, 'wow', 'mom') && periods.length === 0) {
      const unit = roleOf(vs) === 'wow' ? 'week' : 'month';
      this.compare = [
        { from: { unit, offset: 0 }, to: { unit: 'day', offset: 1 }, label: `this ${unit}`, unit },
        { from: { unit, offset: -1 }, to: { unit, offset: 0 }, label: `last ${unit}`, unit },
      ];
      return;
    }
    if (periods.length === 1) {
      const p = ps[0]!;
      if (vs && p.kind === 'period' && p.parts) {
        this.compare = p.parts;
        return;
      }
      if (vs && !isRole(vs, 'change'))
        throw new NotUnderstood('Compared with what? Name both periods, e.g. "this week vs last week".');
      if (vs) vs.used = false;
      this.period = periods[0];
      return;
    }
    if (periods.length === 0) {
      if (vs && !isRole(vs, 'change'))
        throw new NotUnderstood('Compared with what? Name both periods, e.g. "this week vs last week".');
      if (vs) vs.used = false;
      return;
    }
    if (vs) {
      this.compare = periods;
      this.absorbBetween(ps);
      return;
    }
    // "yesterday or today", "Monday and Tuesday": adjacent periods make one
    const merged = mergeAdjacent(periods);
    if (merged) {
      this.period = merged;
      this.absorbBetween(ps);
      return;
    }
    throw new NotUnderstood(
      `Two periods ("${ps.map((p) => p.raw).join('", "')}"): compare them with "vs", or ask about one.`,
    );
  }

  private absorbBetween(ps: Tagged[]) {
    const a = this.ms.indexOf(ps[0]!);
    const b = this.ms.indexOf(ps[ps.length - 1]!);
    for (let i = a; i <= b; i++) if (isRole(this.ms[i], 'and', 'or', 'to', 'vs', 'change')) this.ms[i]!.used = true;
  }

  // ---- order, top N, grouping, buckets -----------------------------------------------------

  private dimensionAt(k: number): { dim: Dimension | { bucket: Bucket }; end: number } | null {
    const m = this.ms[k];
    if (!m || m.used) return null;
    const keys = targetsOf(m, 'key');
    if (keys.length === 1) return { dim: { kind: 'event_property', key: (keys[0] as { key: string }).key }, end: k };
    if (isRole(m, 'event_name', 'type_word')) return { dim: { kind: 'event_name' }, end: k };
    if (isRole(m, 'event_word')) {
      const n = this.ms[k + 1];
      if (isRole(n, 'type_word')) return { dim: { kind: 'event_name' }, end: k + 1 };
      return { dim: { kind: 'event_name' }, end: k };
    }
    if (isRole(m, 'users', 'visitors')) return { dim: { kind: 'user' }, end: k };
    if (targetsOf(m, 'field').some((t) => t.kind === 'field' && t.field === 'user_id'))
      return { dim: { kind: 'user' }, end: k };
    if (roleOf(m).startsWith('unit:')) return { dim: { bucket: roleOf(m).slice(5) as Bucket }, end: k };
    return null;
  }

  private orderAndGroups() {
    for (let i = 0; i < this.ms.length; i++) {
      const m = this.ms[i]!;
      if (m.used) continue;
      const r = roleOf(m);
      if (r === 'top' || r === 'bottom') {
        let k = this.next(i);
        let limit: number | undefined;
        const n = this.ms[k];
        if (n?.kind === 'number' && !n.money && Number.isInteger(n.value) && n.value > 0) {
          limit = n.value;
          n.used = true;
          k = this.next(k);
        }
        const d = this.dimensionAt(k);
        m.used = true;
        this.order = { order: r === 'top' ? 'desc' : 'asc', limit: limit ?? 10 };
        if (d) {
          this.setDimension(d.dim);
          for (let x = k; x <= d.end; x++) this.ms[x]!.used = true;
        } else {
          this.order.dimension = 'pending';
        }
        continue;
      }
      if (
        [
          'most',
          'least',
          'best_selling',
          'worst_selling',
          'busiest',
          'quietest',
          'most_active',
          'least_active',
        ].includes(r)
      ) {
        m.used = true;
        const order = ['least', 'worst_selling', 'quietest', 'least_active'].includes(r) ? 'asc' : 'desc';
        this.order = { order, limit: this.order?.limit ?? 1, ...(r.endsWith('selling') ? { selling: true } : {}) };
        if (r === 'most_active' || r === 'least_active') {
          // "most active users": users by number of events
          const k = this.next(i);
          const d = this.dimensionAt(k);
          if (d) {
            this.setDimension(d.dim);
            this.ms[k]!.used = true;
          }
          this.order.limit = 10;
          continue;
        }
        // "most viewed category": the event that orders, then the dimension
        let k = this.next(i);
        const ev = eventsOf(this.ms[k]);
        if (ev && this.dimensionAt(this.next(k))) {
          this.order.events = ev;
          this.ms[k]!.used = true;
          k = this.next(k);
        }
        const d = this.dimensionAt(k);
        if (d) {
          this.setDimension(d.dim);
          // "best-selling products": a list; "best-selling product": the one
          if (/s$/i.test(this.ms[d.end]!.raw) && !/ss$/i.test(this.ms[d.end]!.raw) && this.order.limit === 1)
            this.order.limit = 10;
          for (let x = k; x <= d.end; x++) this.ms[x]!.used = true;
        } else this.order.dimension = 'pending';
        continue;
      }
      if (r === 'which' || r === 'rank') {
        // "which country ...", "which day ..."
        const k = this.next(i);
        const d = this.dimensionAt(k);
        const ranked = this.ms.some((x) => !x.used && isRole(x, 'most', 'least', 'top', 'bottom'));
        if (d && (!('kind' in d.dim && d.dim.kind === 'user') || ranked)) {
          m.used = true;
          this.setDimension('bucket' in d.dim ? { kind: 'time', unit: d.dim.bucket } : d.dim);
          for (let x = k; x <= d.end; x++) this.ms[x]!.used = true;
          if (r === 'rank' && !this.order) this.order = { order: 'desc' };
        }
        continue;
      }
      if (r === 'by' || r === 'per' || r === 'group' || r === 'each' || r === 'breakdown') {
        const k = this.next(i);
        const d = this.dimensionAt(k);
        if (!d) {
          if (r === 'breakdown' || r === 'group') {
            // "breakdown of purchases by country": the dimension comes later
            m.used = true;
          }
          continue;
        }
        // "per user" after a count is a ratio, unless totals per user are asked
        if (r === 'per' && 'kind' in d.dim && d.dim.kind === 'user' && !this.ms.some((x) => isRole(x, 'agg:sum')))
          continue;
        m.used = true;
        for (let x = k; x <= d.end; x++) this.ms[x]!.used = true;
        if ('bucket' in d.dim && (r === 'by' || r === 'group' || r === 'breakdown')) this.seriesAsked = true;
        this.setDimension(d.dim);
        continue;
      }
      if (r.startsWith('bucket:')) {
        m.used = true;
        this.bucket = r.slice(7) as Bucket | 'auto';
      }
    }
    if (this.order?.dimension === 'pending' && !this.groupBy) {
      throw new NotUnderstood('Top what? Say what to rank, e.g. "top 5 countries by revenue".');
    }
  }

  private setDimension(d: Dimension | { bucket: Bucket }) {
    if ('bucket' in d) {
      if (this.order && !this.groupBy) {
        this.groupBy = { kind: 'time', unit: d.bucket };
        return;
      }
      if (this.bucket && this.bucket !== d.bucket) throw new NotUnderstood('Two different time buckets.');
      this.bucket = d.bucket;
      return;
    }
    if (this.groupBy && JSON.stringify(this.groupBy) !== JSON.stringify(d)) {
      throw new NotUnderstood('Tally breaks a figure down by one dimension at a time (plus time).');
    }
    this.groupBy = d;
  }

  // ---- the measure -------------------------------------------------------------------------

  private measure(numbers: NumberSpec[], specs: FilterSpec[]): Query {
    const lexicon = this.lexicon;
    const metric = this.ms.find((m) => !m.used && roleOf(m).startsWith('metric:'));
    const percent = this.take('percent', 'ratio');
    if (percent) this.percent = true;
    // events and agents named
    const eventMentions = this.ms.filter((m) => !m.used && eventsOf(m));
    const agent = eventMentions.find((m) => targetsOf(m, 'agent').length > 0);
    const events = [
      ...new Set(eventMentions.filter((m) => !targetsOf(m, 'agent').length).flatMap((m) => eventsOf(m)!)),
    ];

    if (
      metric &&
      roleOf(metric) === 'metric:arpu' &&
      this.ms.some((m) => !m.used && isRole(m, 'agg:sum') && m.end <= metric.start)
    ) {
      // "total revenue per user": per-user totals
      metric.used = true;
      this.take('agg:sum');
      this.groupBy = { kind: 'user' };
      return this.finish(
        { kind: 'aggregate', fn: 'sum', key: '$revenue' },
        { events: events.length ? events : this.moneyEvents(), filters: [] },
        specs,
        numbers,
      );
    }
    if (metric) return this.metricQuery(metric, eventMentions, specs, numbers);
    if (this.take('arppu')) {
      const money = this.moneyEvents();
      return this.finish(
        {
          kind: 'ratio',
          numerator: { measure: 'sum', key: '$revenue', events: money, filters: [] },
          denominator: { measure: 'users', events: money, filters: [] },
          percent: false,
        },
        { events: [], filters: [] },
        specs,
        numbers,
      );
    }
    const aov = this.take('aov', 'aov_median');
    if (aov) {
      const on = events.length > 0 ? events : this.moneyEvents();
      for (const m of eventMentions) m.used = true;
      return this.finish(
        { kind: 'aggregate', fn: roleOf(aov) === 'aov' ? 'avg' : 'median', key: '$revenue' },
        { events: on, filters: [] },
        specs,
        numbers,
      );
    }
    // "X per Y": purchases per session, sessions per user
    const per = this.ms.find((m) => !m.used && isRole(m, 'per'));
    if (per) return this.perQuery(per, specs, numbers);
    // "X to Y (conversion)"
    const to = this.ms.find((m) => !m.used && isRole(m, 'to'));
    if (this.percent && to && events.length === 2) return this.funnel(eventMentions, specs, numbers);

    let agg = this.ms.find((m) => !m.used && roleOf(m).startsWith('agg:'));
    if (
      agg &&
      roleOf(agg) === 'agg:avg' &&
      this.bucket &&
      this.bucket !== 'auto' &&
      !this.seriesAsked &&
      !this.groupBy &&
      !this.compare
    ) {
      // "average daily revenue", "sessions per day on average": the mean of the series
      agg.used = true;
      this.average = true;
      agg = undefined;
    }
    const money = this.take('money', 'how_much');
    while (money && this.take('money', 'how_much')) {
      // "how much revenue", "how much did they spend": one measure
    }
    const sales = this.take('sales');
    const countEvents = this.take('count_events');
    const count = this.take('count') ?? countEvents;
    // "how many times did users ...": events, whoever did them
    const users = countEvents ? undefined : this.ms.find((m) => !m.used && isRole(m, 'users', 'visitors'));
    if (countEvents) for (const m of this.ms) if (!m.used && isRole(m, 'users', 'visitors')) m.used = true;
    const newUsers = this.take('new_users');
    const keyMention = this.ms.find((m) => !m.used && targetsOf(m, 'key').length === 1);
    if (this.percent && !this.groupBy && !users && !agent && (events.length > 0 || money || sales)) {
      return this.eventShare(events, eventMentions, !!(money || sales) && !count, specs, numbers);
    }
    if (this.percent && !this.groupBy && (users || agent || events.length > 0 || specs.length > 0)) {
      return this.share(users, specs, numbers);
    }

    if (agg || money || (sales && !count)) {
      const fn = agg ? (roleOf(agg).slice(4) as 'sum' | 'avg' | 'min' | 'max' | 'median') : 'sum';
      if (agg) agg.used = true;
      if (keyMention && !money && !sales) {
        const key = (targetsOf(keyMention, 'key')[0] as { key: string }).key;
        keyMention.used = true;
        const on = events.length > 0 ? events : lexicon.eventsWithKey(key);
        const stats = on.map((e) => lexicon.eventProperty(e, key)).filter(Boolean);
        if (stats.length === 0 || !stats.some((s) => s!.numeric))
          throw new NotUnderstood(
            `"${key}" is not a number on ${events.length ? `"${events.join('", "')}" events` : 'any event'}: it cannot be summed or averaged.`,
            [keyMention.raw],
          );
        for (const m of eventMentions) m.used = true;
        return this.finish(
          { kind: 'aggregate', fn, key: key === lexicon.moneyKey ? '$revenue' : key },
          { events: on, filters: [] },
          specs,
          numbers,
        );
      }
      if (money || sales || (fn !== 'sum' && events.length > 0)) {
        if (!lexicon.moneyKey)
          throw new NotUnderstood('This app has no events carrying revenue or an amount.', [
            money?.raw ?? sales?.raw ?? '',
          ]);
        const on = events.length > 0 ? events : this.moneyEvents();
        if (events.length > 0 && !events.every((e) => lexicon.eventProperty(e, lexicon.moneyKey!))) {
          throw new NotUnderstood(`"${events.join('", "')}" events carry no ${lexicon.moneyKey}.`);
        }
        for (const m of eventMentions) m.used = true;
        if (users || agent) {
          // "how much did premium users spend": the users are a segment
          if (users) users.used = true;
        }
        return this.finish(
          { kind: 'aggregate', fn, key: '$revenue' },
          { events: events.length > 0 ? events : [], filters: [] },
          specs,
          numbers,
          on,
        );
      }
      // "total purchases", "total users": a count
    }
    if (sales && count) {
      const on = this.moneyEvents();
      return this.finish({ kind: 'events' }, { events: events.length > 0 ? events : on, filters: [] }, specs, numbers);
    }
    if (newUsers || (users && this.has('first_seen')) || (!users && this.has('first_seen') && count)) {
      this.take('first_seen');
      if (users) users.used = true;
      return this.finish({ kind: 'new_users' }, { events: [], filters: [] }, specs, numbers);
    }
    // The subject is the first of the users and the events named: "purchases by premium users"
    // counts purchases; "how many users made 5 purchases" counts users.
    const firstEvent = eventMentions.find((m) => targetsOf(m, 'agent').length === 0);
    const eventWord = this.ms.find((m) => !m.used && isRole(m, 'event_word'));
    const eventsFirst = firstEvent && users && firstEvent.start < users.start && !agent;
    const wordFirst = eventWord && users && eventWord.start < users.start;
    if ((users || agent) && !eventsFirst && !wordFirst)
      return this.usersQuery(users, eventMentions, specs, numbers, count);
    if (users && (eventsFirst || wordFirst)) users.used = true;
    if (events.length > 0 || this.has('event_word') || count || agg || this.groupBy || this.order) {
      this.take('event_word');
      for (const m of eventMentions) m.used = true;
      if (count) count.used = true;
      const andJoined =
        events.length > 1 && this.ms.some((m) => isRole(m, 'and') && !m.used && between(this.ms, m, eventMentions));
      if (andJoined && !this.groupBy && !this.compare) this.groupBy = { kind: 'event_name' };
      this.useConnectors(eventMentions);
      return this.finish({ kind: 'events' }, { events, filters: [] }, specs, numbers);
    }
    throw new NotUnderstood('What should be counted? Name an event, users or a measure such as revenue.');
  }

  private moneyEvents(): string[] {
    const key = this.lexicon.moneyKey;
    if (!key) throw new NotUnderstood('This app has no events carrying revenue or an amount.');
    return this.lexicon.eventsWithKey(key);
  }

  private useConnectors(eventMentions: Tagged[]) {
    for (const m of this.ms) if (!m.used && isRole(m, 'or', 'and') && between(this.ms, m, eventMentions)) m.used = true;
  }

  private metricQuery(metric: Tagged, eventMentions: Tagged[], specs: FilterSpec[], numbers: NumberSpec[]): Query {
    const name = roleOf(metric).slice(7) as 'dau' | 'wau' | 'mau' | 'retention' | 'churn' | 'conversion' | 'arpu';
    metric.used = true;
    // "view to purchase conversion": a funnel between two events
    if (name === 'conversion' && eventMentions.length === 2) return this.funnel(eventMentions, specs, numbers);
    if (name === 'retention') {
      // "day 1 retention", "day-7 retention"
      const dayN = this.ms.findIndex((m) => !m.used && isRole(m, 'unit:day'));
      const n = dayN >= 0 ? this.ms[dayN + 1] : undefined;
      if (dayN >= 0 && n?.kind === 'number' && Number.isInteger(n.value)) {
        this.ms[dayN]!.used = true;
        n.used = true;
        for (const m of this.ms) if (!m.used && (isRole(m, 'users', 'first_seen') || isRole(m, 'rel'))) m.used = true;
        return this.finish({ kind: 'retention_day', day: n.value }, { events: [], filters: [] }, specs, numbers);
      }
    }
    for (const m of this.ms) if (!m.used && isRole(m, 'users', 'active', 'unique', 'rate', 'agg:avg')) m.used = true;
    if (eventMentions.length > 0 || specs.length > 0 || numbers.length > 0) {
      throw new NotUnderstood(
        `${name.toUpperCase()} is computed over all of the app's users and events, like GET /v1/analytics/metrics: it takes a period and a bucket, not filters.`,
      );
    }
    if (this.groupBy && this.groupBy.kind !== 'time')
      throw new NotUnderstood(
        `${name.toUpperCase()} cannot be broken down by ${JSON.stringify(this.groupBy)}; ask for it by day, week or month.`,
      );
    return this.finish({ kind: 'metric', metric: name }, { events: [], filters: [] }, [], []);
  }

  private funnel(eventMentions: Tagged[], specs: FilterSpec[], numbers: NumberSpec[]): Query {
    const [a, b] = eventMentions as [Tagged, Tagged];
    for (const m of [a, b]) m.used = true;
    this.take('to');
    this.take('rate');
    this.take('metric:conversion');
    if (specs.length > 0 || numbers.length > 0)
      throw new NotUnderstood('Conversion between two events takes no filters yet.');
    return this.finish(
      { kind: 'funnel', from: { events: eventsOf(a)!, filters: [] }, to: { events: eventsOf(b)!, filters: [] } },
      { events: [], filters: [] },
      [],
      [],
    );
  }

  private perQuery(per: Tagged, specs: FilterSpec[], numbers: NumberSpec[]): Query {
    const i = this.ms.indexOf(per);
    per.used = true;
    const after = this.ms[this.next(i)];
    const before = [...this.ms.slice(0, i)]
      .reverse()
      .find((m) => !m.used && !isFiller(m) && !isRole(m, 'agg:avg', 'count'));
    this.take('agg:avg');
    this.take('count');
    const part = (m: Tagged | undefined): import('./ast.js').Part | null => {
      if (!m) return null;
      const ev = eventsOf(m);
      if (ev && targetsOf(m, 'agent').length > 0) return { measure: 'users', events: ev, filters: [] };
      if (ev) return { measure: 'events', events: ev, filters: [] };
      if (isRole(m, 'users', 'visitors')) return { measure: 'users', events: [], filters: [] };
      if (isRole(m, 'money')) return { measure: 'sum', key: '$revenue', events: this.moneyEvents(), filters: [] };
      if (isRole(m, 'event_word')) return { measure: 'events', events: [], filters: [] };
      return null;
    };
    const num = part(before);
    const den = part(after);
    if (!num || !den)
      throw new NotUnderstood(
        `"${before?.raw ?? ''} per ${after?.raw ?? ''}": Tally divides counts of events, users or revenue.`,
        [per.raw],
      );
    before!.used = true;
    after!.used = true;
    return this.finish(
      { kind: 'ratio', numerator: num, denominator: den, percent: false },
      { events: [], filters: [] },
      specs,
      numbers,
    );
  }

  /** "percentage of mobile sessions", "what share of revenue comes from the US". */
  private eventShare(
    events: string[],
    eventMentions: Tagged[],
    money: boolean,
    specs: FilterSpec[],
    numbers: NumberSpec[],
  ): Query {
    for (const m of eventMentions) m.used = true;
    const on = events.length > 0 ? events : money ? this.moneyEvents() : [];
    const filtered = this.finish({ kind: 'events' }, { events: on, filters: [] }, specs, numbers);
    if (filtered.segment)
      throw new NotUnderstood(
        'A share of events from some users is not supported yet: ask for the events of those users, and of all users.',
      );
    if (filtered.events.filters.length === 0)
      throw new NotUnderstood('A share of what? Say which part, e.g. "percentage of purchases from the US".');
    const measure = money ? 'sum' : 'events';
    const part = (filters: import('./ast.js').Filter[]): import('./ast.js').Part => ({
      measure,
      ...(money ? { key: '$revenue' } : {}),
      events: on,
      filters,
    });
    return {
      ...filtered,
      measure: { kind: 'ratio', numerator: part(filtered.events.filters), denominator: part([]), percent: true },
      events: { events: [], filters: [] },
    };
  }

  /** "what percentage of users made a purchase", "share of premium users". */
  private share(users: Tagged | undefined, specs: FilterSpec[], numbers: NumberSpec[]): Query {
    if (users) users.used = true;
    this.take('out_of');
    const rest = this.unused().filter((m) => !isFiller(m) && !(m.kind === 'role' && QUIET_ROLES.has(m.role)));
    const period = this.period;
    const condition = this.conditionFrom(rest, specs, numbers);
    // the period stays on the query for the denominator: the users active in it
    this.period = period;
    const hasEvents = JSON.stringify(condition).includes('"did"');
    const denominator: import('./ast.js').Part =
      hasEvents || this.period
        ? { measure: 'users', events: [], filters: [] }
        : { measure: 'users', events: [], filters: [], segment: { type: 'all' } };
    const numerator: import('./ast.js').Part = { measure: 'users', events: [], filters: [], segment: condition };
    return this.finish({ kind: 'ratio', numerator, denominator, percent: true }, { events: [], filters: [] }, [], []);
  }

  private conditionFrom(rest: Tagged[], specs: FilterSpec[], numbers: NumberSpec[]): Condition {
    // Filters and numbers were already read: put their mentions back for the criteria reader.
    void specs;
    void numbers;
    for (const m of this.filterMentions) m.used = false;
    const run = this.ms.filter((m) => !m.used || rest.includes(m));
    const periodMention = this.ms.find((m) => m.kind === 'period');
    const mentions: Tagged[] = run.filter((m) => m.kind !== 'period');
    if (this.period && periodMention) {
      // the period belongs to the condition ("made a purchase last month")
      mentions.push(periodMention);
    }
    for (const m of run) m.used = true;
    mentions.sort((a, b) => a.start - b.start);
    const clean = mentions.map((m) => ({ ...m, used: false }) as Tagged);
    if (clean.length === 0) return { type: 'all' };
    const c = parseCriteria({ tokens: [], mentions: clean, corrections: [], today: '' }, this.lexicon);
    this.period = undefined;
    return c;
  }

  private usersQuery(
    users: Tagged | undefined,
    eventMentions: Tagged[],
    specs: FilterSpec[],
    numbers: NumberSpec[],
    count: Tagged | undefined,
  ): Query {
    // "users with more than 150 events", "users who did purchase at least 5 times": a list
    const threshold = numbers.find((n) => n.unit === 'times');
    if (!count && threshold && !this.groupBy) {
      if (users) users.used = true;
      const evs = threshold.events ?? [...new Set(eventMentions.flatMap((m) => eventsOf(m)!))];
      for (const m of eventMentions) m.used = true;
      this.groupBy = { kind: 'user' };
      this.order = { order: 'desc' };
      const rest = numbers.filter((n) => n !== threshold);
      const q = this.finish({ kind: 'events' }, { events: evs, filters: [] }, specs, rest);
      return { ...q, having: timesBounds(threshold.bounds) };
    }
    const simple = !this.groupBy && !this.bucket && !this.compare;
    // "users who purchased yesterday", "which users bought electronics": a list
    const at = users ? this.ms.indexOf(users) : -1;
    const relative = at >= 0 && (isRole(this.ms[this.next(at)], 'rel') || isRole(this.ms[at - 1], 'which'));
    if (simple) {
      // a number of users: those matching the rest of the question, read as criteria
      if (users) users.used = true;
      const distinct = users ? this.ms.slice(0, at).find((m) => !m.used && isRole(m, 'unique')) : undefined;
      if (distinct) distinct.used = true;
      this.take('active');
      const rest = this.unused().filter(
        (m) => !isFiller(m) && !(m.kind === 'role' && QUIET_ROLES.has(m.role) && !isRole(m, 'and', 'with', 'rel')),
      );
      let condition: Condition;
      if (rest.length === 0 && specs.length === 0 && numbers.length === 0) {
        condition = this.period ? { type: 'did', events: [], filters: [], period: this.period } : { type: 'all' };
        this.period = undefined;
      } else if (rest.every((m) => isRole(m, 'and', 'with', 'rel')) && specs.length === 0 && numbers.length === 0) {
        for (const m of rest) m.used = true;
        condition = this.period ? { type: 'did', events: [], filters: [], period: this.period } : { type: 'all' };
        this.period = undefined;
      } else condition = this.conditionFrom(rest, specs, numbers);
      // "distinct users who purchased": one number, not the list
      if (!count && !distinct && relative) return this.userList(condition);
      return this.finish({ kind: 'users' }, { events: [], filters: [] }, [], [], undefined, condition);
    }
    // distinct users per group or bucket
    if (users) users.used = true;
    this.take('active');
    for (const m of eventMentions) m.used = true;
    const evs = [...new Set(eventMentions.flatMap((m) => eventsOf(m)!))];
    this.useConnectors(eventMentions);
    return this.finish({ kind: 'users' }, { events: evs, filters: [] }, specs, numbers);
  }

  /** "users who purchased yesterday": the users, each with the number of those events. */
  private userList(condition: Condition): Query {
    const parts = condition.type === 'and' ? condition.of : [condition];
    const dids = parts.filter(
      (p): p is Extract<Condition, { type: 'did' }> => p.type === 'did' && !p.times && !p.total,
    );
    if (dids.length !== 1) {
      throw new NotUnderstood(
        'Ask "how many users ..." for a number, or create an audience with these criteria to list its users.',
      );
    }
    const did = dids[0]!;
    const rest = parts.filter((p) => p !== did);
    this.period = did.period;
    this.groupBy = { kind: 'user' };
    this.order = { order: 'desc' };
    const q = this.finish(
      { kind: 'events' },
      { events: did.events, filters: [] },
      [],
      [],
      undefined,
      rest.length ? and(rest) : undefined,
    );
    return { ...q, events: { events: did.events, filters: did.filters } };
  }

  // ---- assembling ---------------------------------------------------------------------------

  private finish(
    measure: Measure,
    events: EventSet,
    specs: FilterSpec[],
    numbers: NumberSpec[],
    relevant?: string[],
    segment?: Condition,
  ): Query {
    const lexicon = this.lexicon;
    const evs = events.events;
    const scopeEvents = relevant ?? evs;
    // money thresholds and numeric comparisons become filters on the events
    for (const n of numbers) {
      if (n.unit === 'times')
        throw new NotUnderstood('A number of times applies to users: ask "how many users did ... more than N times".');
      if (n.unit === 'percent') throw new NotUnderstood('A percentage cannot filter events.');
      let key = n.key;
      if (!key) {
        if (n.unit === 'money') key = lexicon.moneyKey ?? undefined;
        else {
          const numeric = [
            ...new Set(
              relevantEvents(lexicon, scopeEvents).flatMap((e) =>
                lexicon.events
                  .find((x) => x.name === e)!
                  .properties.filter((p) => p.numeric)
                  .map((p) => p.key),
              ),
            ),
          ];
          if (numeric.length === 1 && scopeEvents.length > 0) key = numeric[0];
        }
      }
      if (!key)
        throw new NotUnderstood(
          'A number is not tied to anything: say what it compares ("over $100", "revenue above 50").',
        );
      const b = n.bounds;
      const op =
        b.gte !== undefined && b.lte !== undefined
          ? b.gte === b.lte
            ? 'eq'
            : 'between'
          : b.gt !== undefined
            ? 'gt'
            : b.gte !== undefined
              ? 'gte'
              : b.lt !== undefined
                ? 'lt'
                : 'lte';
      const values = op === 'between' ? [b.gte!, b.lte!] : [b.gt ?? b.gte ?? b.lt ?? b.lte ?? 0];
      specs.push({ key, op, values, at: n.at });
    }
    const money = specs.filter(
      (s) =>
        s.key === lexicon.moneyKey && lexicon.moneyKey && ['gt', 'gte', 'lt', 'lte', 'between', 'eq'].includes(s.op),
    );
    const placed = place(
      lexicon,
      specs.filter((s) => !money.includes(s)),
      scopeEvents,
    );
    if (money.length > 0) {
      const carriers = relevantEvents(lexicon, scopeEvents).filter((e) => lexicon.eventProperty(e, lexicon.moneyKey!));
      if (carriers.length === 0) throw new NotUnderstood(`"${evs.join('", "')}" events carry no ${lexicon.moneyKey}.`);
    }
    const eventFilters = [...placed.event, ...money.map(({ op, values }) => ({ key: '$revenue', op, values }))];
    const userConditions: Condition[] = placed.user.map((filter) => ({ type: 'user', filter }));
    const seg = [...(segment ? [segment] : []), ...(this.relSegment ? [this.relSegment] : []), ...userConditions];
    // dimension scope: event property when the measured events carry it, else user property
    let groupBy = this.groupBy;
    if (groupBy?.kind === 'event_property') {
      const key = groupBy.key;
      const onUsersOnly = measure.kind === 'users' && evs.length === 0 && !this.period;
      const scope =
        onUsersOnly && lexicon.userProperties.has(key)
          ? 'user'
          : scopeOf(
              lexicon,
              key,
              relevantEvents(lexicon, measure.kind === 'aggregate' && key !== '$revenue' ? scopeEvents : scopeEvents),
            );
      if (!scope)
        throw new NotUnderstood(
          `Neither ${evs.length ? `"${evs.join('", "')}" events` : 'events'} nor users have a property "${key}".`,
          [key],
        );
      groupBy = scope === 'user' ? { kind: 'user_property', key } : groupBy;
    }
    // ordering: "which category has the most revenue", "best-selling category"
    let order = this.order;
    if (order?.selling && measure.kind === 'events' && evs.length === 0) {
      events = { ...events, events: this.moneyEvents() };
    }
    if (order?.events && measure.kind === 'events' && evs.length === 0) events = { ...events, events: order.events };
    if (order && !groupBy)
      throw new NotUnderstood('Most or top what? Say what to rank, e.g. "which country has the most purchases".');
    if (this.bucket === 'auto') this.bucket = 'day';
    const bucket = this.bucket as Bucket | undefined;
    if (order && groupBy?.kind === 'time' && bucket) order = { ...order };
    const query: Query = {
      measure,
      events: { events: events.events, filters: [...events.filters, ...eventFilters] },
      ...(seg.length > 0 ? { segment: and(seg) } : {}),
      ...(this.period ? { period: this.period } : {}),
      ...(bucket ? { bucket } : {}),
      ...(bucket && this.average ? { average: true } : {}),
      ...(groupBy ? { groupBy } : {}),
      ...(this.percent && groupBy ? { percent: true } : {}),
      ...(order ? { order: order.order, ...(order.limit ? { limit: order.limit } : {}) } : {}),
      ...(this.compare ? { compare: this.compare } : {}),
    };
    if (query.compare && (query.groupBy || query.bucket))
      throw new NotUnderstood('A comparison of periods gives one figure per period: drop the breakdown.');
    return query;
  }
}

function between(ms: Tagged[], m: Tagged, around: Tagged[]): boolean {
  const i = ms.indexOf(m);
  const idx = around.map((x) => ms.indexOf(x));
  return idx.some((a) => a < i) && idx.some((b) => b > i);
}
