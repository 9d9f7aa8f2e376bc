// The measures of an analytics question that have a shape of their own: metrics of §6, funnels,
// ratios ("purchases per session"), shares ("what percentage of users ..."), and numbers or lists
// of users read as criteria ("how many users bought twice", "users who purchased yesterday").
import type { Condition, Query } from './ast.js';
import {
  and,
  eventsOf,
  type FilterSpec,
  isFiller,
  isRole,
  type NumberSpec,
  roleOf,
  targetsOf,
  timesBounds,
} from './clause.js';
import { parseCriteria } from './criteria.js';
import type { Tagged } from './mentions.js';
import { NotUnderstood } from './not-understood.js';
import { QuestionShape } from './question-shape.js';
import { QUIET_ROLES } from './question-state.js';

export class QuestionMeasures extends QuestionShape {
  protected metricQuery(metric: Tagged, eventMentions: Tagged[], specs: FilterSpec[], numbers: NumberSpec[]): Query {
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

  protected funnel(eventMentions: Tagged[], specs: FilterSpec[], numbers: NumberSpec[]): Query {
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

  protected perQuery(per: Tagged, specs: FilterSpec[], numbers: NumberSpec[]): Query {
    const i = this.ms.indexOf(per);
    per.used = true;
    let at = this.next(i);
    // "per paying customer": a user who paid
    const paying = isRole(this.ms[at], 'paying') ? this.ms[at] : undefined;
    if (paying) at = this.next(at);
    const after = this.ms[at];
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
      // "per customer": a customer is a user who paid (the users with revenue events)
      if (isRole(m, 'users') && /^(customers?|clients?|shoppers?)$/i.test(m.raw))
        return { measure: 'users', events: this.moneyEvents(), filters: [] };
      if (isRole(m, 'users', 'visitors')) return { measure: 'users', events: [], filters: [] };
      if (isRole(m, 'money')) return { measure: 'sum', key: '$revenue', events: this.moneyEvents(), filters: [] };
      if (isRole(m, 'event_word')) return { measure: 'events', events: [], filters: [] };
      return null;
    };
    const num = part(before);
    let den = part(after);
    if (paying && den?.measure === 'users' && den.events.length === 0) den = { ...den, events: this.moneyEvents() };
    if (paying && den) paying.used = true;
    // "per paying customer" read as an event then people: the users who did it
    const people = this.ms[this.next(at)];
    const doers = eventsOf(after) && !targetsOf(after, 'agent').length && isRole(people, 'users');
    if (doers && num) {
      den = { measure: 'users', events: eventsOf(after)!, filters: [] };
      people!.used = true;
    }
    // "average total spent per buyer": the total is the buyers' own
    if (num?.measure === 'sum') this.take('agg:sum');
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
  protected eventShare(
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
  protected share(users: Tagged | undefined, specs: FilterSpec[], numbers: NumberSpec[]): Query {
    if (this.periodsInClauses)
      throw new NotUnderstood(
        'A percentage of users who did one thing in one period and another in a second period: Tally cannot yet tell which users the percentage is of. Ask for the two numbers, e.g. "how many users signed up in May" and "how many users who signed up in May purchased in June".',
      );
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

  protected conditionFrom(rest: Tagged[], specs: FilterSpec[], numbers: NumberSpec[]): Condition {
    // Filters and numbers were already read: put their mentions back for the criteria reader.
    void specs;
    void numbers;
    for (const m of this.filterMentions) m.used = false;
    const run = this.ms.filter((m) => !m.used || rest.includes(m));
    const periodMention = this.ms.find((m) => m.kind === 'period');
    // periods of the clauses stay where they were written
    const mentions: Tagged[] = run.filter((m) => m.kind !== 'period' || this.periodsInClauses);
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

  protected usersQuery(
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
      // "still active this week" belongs to its clause
      if (!this.periodsInClauses) this.take('active');
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
  protected userList(condition: Condition): Query {
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
}
