// The state of an analytics question being read (analytics.ts reads it in passes, question-shape.ts
// and question-measures.ts hold the passes): what was found so far, helpers over its mentions, and
// `finish`, which assembles the query from the measure, the filters and what the passes found.
import type { Bucket, Condition, Dimension, EventSet, Measure, Period, Query } from './ast.js';
import { and, type FilterSpec, isFiller, isRole, type NumberSpec } from './clause.js';
import type { Lexicon } from './lexicon.js';
import type { Tagged } from './mentions.js';
import { NotUnderstood } from './not-understood.js';
import { place, relevantEvents, scopeOf } from './place.js';
import { placeSides, type SideSpec } from './versus.js';

/** Roles that carry no meaning once the structure is read. */
export const QUIET_ROLES = new Set([
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

export interface Order {
  order: 'desc' | 'asc';
  limit?: number;
  dimension?: Dimension | 'pending';
  /** "most viewed category": the event that orders. */
  events?: string[];
  /** "best-selling": counts purchases. */
  selling?: boolean;
}

/** The question's mentions and what the passes found in them. */
export class QuestionState {
  protected period?: Period;
  protected compare?: Period[];
  protected bucket?: Bucket | 'auto';
  protected groupBy?: Dimension;
  protected order?: Order;
  protected percent = false;
  protected average = false;
  /** "by week": a series was asked for, not a rate per week. */
  protected seriesAsked = false;
  /** Mentions read as numbers and filters (given back when the rest is read as criteria). */
  protected filterMentions: Tagged[] = [];
  /** "revenue from users who ...": the users the question is about. */
  protected relSegment?: Condition;
  /**
   * "users who signed up in May and bought in June": each period belongs to a clause about the
   * users, so the periods stay in the mentions for the criteria reader.
   */
  protected periodsInClauses = false;
  /** "premium vs free": the segments compared. */
  protected sides?: SideSpec[];

  constructor(
    protected readonly ms: Tagged[],
    protected readonly lexicon: Lexicon,
  ) {}

  protected unused() {
    return this.ms.filter((m) => !m.used);
  }
  protected has(...roles: string[]) {
    return this.ms.some((m) => !m.used && isRole(m, ...roles));
  }
  protected take(...roles: string[]): Tagged | undefined {
    const m = this.ms.find((x) => !x.used && isRole(x, ...roles));
    if (m) m.used = true;
    return m;
  }
  protected next(i: number): number {
    let k = i + 1;
    while (k < this.ms.length && (this.ms[k]!.used || isFiller(this.ms[k]))) k++;
    return k;
  }

  protected moneyEvents(): string[] {
    const key = this.lexicon.moneyKey;
    if (!key) throw new NotUnderstood('This app has no events carrying revenue or an amount.');
    return this.lexicon.eventsWithKey(key);
  }

  protected useConnectors(eventMentions: Tagged[]) {
    for (const m of this.ms) if (!m.used && isRole(m, 'or', 'and') && between(this.ms, m, eventMentions)) m.used = true;
  }

  /** The grouping, on the event property when the measured events carry it, else on the user property. */
  protected scopedGroupBy(measure: Measure, evs: string[], scopeEvents: string[]): Dimension | undefined {
    const lexicon = this.lexicon;
    const groupBy = this.groupBy;
    if (groupBy?.kind !== 'event_property') return groupBy;
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
    return scope === 'user' ? { kind: 'user_property', key } : groupBy;
  }

  // ---- assembling ---------------------------------------------------------------------------

  protected finish(
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
    for (const n of numbers) specs.push(numberFilter(lexicon, n, scopeEvents));
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
    const groupBy = this.scopedGroupBy(measure, evs, scopeEvents);
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
    if (this.sides) return { ...query, versus: placeSides(lexicon, this.sides, query, scopeEvents) };
    if (query.compare && (query.groupBy || query.bucket))
      throw new NotUnderstood('A comparison of periods gives one figure per period: drop the breakdown.');
    return query;
  }
}

/** A mention between two of `around` (an "and" or "or" joining named events). */
export function between(ms: Tagged[], m: Tagged, around: Tagged[]): boolean {
  const i = ms.indexOf(m);
  const idx = around.map((x) => ms.indexOf(x));
  return idx.some((a) => a < i) && idx.some((b) => b > i);
}

/** A number of the question as a filter on the events: "over $100", "revenue above 50". */
function numberFilter(lexicon: Lexicon, n: NumberSpec, scopeEvents: string[]): FilterSpec {
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
  return { key, op, values, at: n.at };
}
