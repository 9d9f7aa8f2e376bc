// Analytics questions -> a query. The question is read in passes over its mentions: periods (and
// comparisons of periods), ordering and grouping ("top 5", "which country has the most", "by
// category", "daily"), numbers and filters, then the measure (a metric of §6, a ratio, a sum, a
// count of events or of users), the events measured and the users they are restricted to. Every
// mention must be placed; a word that is not is named in the refusal, never guessed around.
// The passes live in a chain of classes: question-state.ts (what was found, and `finish`),
// question-shape.ts (users, periods, order, groups), question-measures.ts (measures with a shape of
// their own) and, here, the reading of the measure itself.
import type { Query } from './ast.js';
import {
  eventsOf,
  type FilterSpec,
  isFiller,
  isRole,
  type NumberSpec,
  roleOf,
  takeFilters,
  takeNumbers,
  targetsOf,
} from './clause.js';
import { refuseErrors } from './criteria.js';
import type { Lexicon } from './lexicon.js';
import type { Reading, Tagged } from './mentions.js';
import { NotUnderstood } from './not-understood.js';
import { clip } from './place.js';
import { QuestionMeasures } from './question-measures.js';
import { between, QUIET_ROLES } from './question-state.js';
import { rankSpenders } from './spenders.js';
import { SKIPPABLE } from './words.js';

export function parseQuestion(reading: Reading, lexicon: Lexicon): Query {
  const ms = rankSpenders(reading.mentions.filter((m, i, all) => !chatty(m, all[i - 1], all[i + 1])));
  refuseErrors(ms);
  const q = new Question(ms, lexicon);
  return q.parse();
}

/** The events and numbers a measure is read with. */
interface MeasureContext {
  numbers: NumberSpec[];
  specs: FilterSpec[];
  eventMentions: Tagged[];
  agent: Tagged | undefined;
  events: string[];
}

/** The words of a sum or average: the aggregate, money or sales words, the key summed. */
interface AggregateWords {
  agg: Tagged | undefined;
  money: Tagged | undefined;
  sales: Tagged | undefined;
  count: Tagged | undefined;
  keyMention: Tagged | undefined;
  users: Tagged | undefined;
}

class Question extends QuestionMeasures {
  parse(): Query {
    this.relativeSegment();
    this.periods();
    this.singleUser();
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
  /** "the most purchases one user made": the extreme or mean of users' own figures, once read. */
  private perUser?: 'max' | 'min' | 'avg' | 'median';

  /**
   * "the most orders one user placed", "highest total spend by a single user", "average number of
   * sessions of any single user": an extreme or average word before "one/single/any user".
   */
  private singleUser() {
    const single = (x: Tagged | undefined) => x?.kind === 'word' && ['one', 'single', 'any'].includes(x.word);
    const at = this.ms.findIndex((m, i) => !m.used && isRole(m, 'users') && single(this.ms[i - 1]));
    if (at < 0) return;
    const people = this.ms[at]!;
    const extreme = this.ms.find(
      (x) =>
        !x.used && x.start < people.start && isRole(x, 'most', 'least', 'agg:max', 'agg:min', 'agg:avg', 'agg:median'),
    );
    if (!extreme) return;
    const r = roleOf(extreme);
    this.perUser =
      r === 'most' || r === 'agg:max'
        ? 'max'
        : r === 'least' || r === 'agg:min'
          ? 'min'
          : r === 'agg:avg'
            ? 'avg'
            : 'median';
    for (const x of [people, this.ms[at - 1], extreme]) x!.used = true;
    const before = this.ms[at - 2];
    if (single(before) || (before?.kind === 'word' && before.word === 'a')) before!.used = true;
    // "highest total spend": the total is each user's
    for (const x of this.ms) if (!x.used && isRole(x, 'agg:sum') && x.start < people.start) x.used = true;
  }

  /** Each user's number of events or total money, reduced to one figure. */
  private perUserMeasure(fn: 'max' | 'min' | 'avg' | 'median', numbers: NumberSpec[], specs: FilterSpec[]): Query {
    if (this.groupBy || this.bucket || this.compare)
      throw new NotUnderstood('A figure over single users is one number: drop the breakdown or comparison.');
    const eventMentions = this.ms.filter((m) => !m.used && eventsOf(m));
    const events = [...new Set(eventMentions.flatMap((m) => eventsOf(m)!))];
    const money = this.take('money', 'how_much', 'sales');
    for (const m of eventMentions) m.used = true;
    this.take('count', 'count_events', 'event_word');
    if (money) {
      if (!this.lexicon.moneyKey) throw new NotUnderstood('This app has no events carrying revenue or an amount.');
      const on = events.length > 0 ? events : this.moneyEvents();
      return this.finish(
        { kind: 'per_user', fn, of: 'sum', key: '$revenue' },
        { events: on, filters: [] },
        specs,
        numbers,
      );
    }
    if (events.length === 0) throw new NotUnderstood('Most of what, for one user? Name an event or revenue.');
    return this.finish({ kind: 'per_user', fn, of: 'events' }, { events, filters: [] }, specs, numbers);
  }

  protected measure(numbers: NumberSpec[], specs: FilterSpec[]): Query {
    if (this.perUser) return this.perUserMeasure(this.perUser, numbers, specs);
    const metric = this.ms.find((m) => !m.used && roleOf(m).startsWith('metric:'));
    const percent = this.take('percent', 'ratio');
    if (percent) this.percent = true;
    // events and agents named
    const eventMentions = this.ms.filter((m) => !m.used && eventsOf(m));
    const agent = eventMentions.find((m) => targetsOf(m, 'agent').length > 0);
    const events = [
      ...new Set(eventMentions.filter((m) => !targetsOf(m, 'agent').length).flatMap((m) => eventsOf(m)!)),
    ];

    const mc: MeasureContext = { numbers, specs, eventMentions, agent, events };
    return this.namedMeasure(mc, metric) ?? this.wordMeasure(mc);
  }

  /** A measure named by one word: a metric, ARPPU, order value, "X per Y", "X to Y". */
  protected namedMeasure(mc: MeasureContext, metric: Tagged | undefined): Query | null {
    const { numbers, specs, eventMentions, events } = mc;
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
      // "avg lifetime revenue per paying user": the average is ARPPU's own
      this.take('agg:avg');
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

    return null;
  }

  /** A measure read from its words: a sum or average, a count of events, of users or of new users. */
  protected wordMeasure(mc: MeasureContext): Query {
    const { numbers, specs, eventMentions, agent, events } = mc;
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

    const perBuyer = this.eventsPerUser(mc, agg, count, users, !!(money || sales));
    if (perBuyer) return perBuyer;
    const aggregate = this.aggregateMeasure(mc, { agg, money, sales, count, keyMention, users });
    if (aggregate) return aggregate;
    if (sales && count) {
      const on = this.moneyEvents();
      return this.finish({ kind: 'events' }, { events: events.length > 0 ? events : on, filters: [] }, specs, numbers);
    }
    const signedUp = !this.periodsInClauses && this.has('first_seen');
    if (newUsers || (users && signedUp) || (!users && signedUp && count)) {
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

  /**
   * "On average, how many orders does a buyer place": the events divided by the users who did them.
   * Only without filters, breakdowns or series, which a ratio would not carry.
   */
  protected eventsPerUser(
    mc: MeasureContext,
    agg: Tagged | undefined,
    count: Tagged | undefined,
    users: Tagged | undefined,
    money: boolean,
  ): Query | null {
    const { events, eventMentions, agent, specs, numbers } = mc;
    if (roleOf(agg) !== 'agg:avg' || !count || money || events.length === 0 || !(users || agent)) return null;
    if (specs.length > 0 || numbers.length > 0 || this.groupBy || this.bucket || this.compare || this.sides)
      return null;
    for (const m of [agg!, count, ...(users ? [users] : []), ...eventMentions]) m.used = true;
    const part = (measure: 'events' | 'users') => ({ measure, events, filters: [] });
    return this.finish(
      { kind: 'ratio', numerator: part('events'), denominator: part('users'), percent: false },
      { events: [], filters: [] },
      [],
      [],
    );
  }

  /** "total revenue", "average order value of books", "max revenue": an aggregate, or null for a count. */
  protected aggregateMeasure(mc: MeasureContext, w: AggregateWords): Query | null {
    const lexicon = this.lexicon;
    const { numbers, specs, eventMentions, agent, events } = mc;
    const { agg, money, sales, count, keyMention, users } = w;
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
    }
    // "total purchases", "total users": a count
    return null;
  }
}

const PUNCTUATION = ['.', '?', '!', ',', ':', ';', '(', ')', '—', '–'];

/**
 * Punctuation of chatty questions, read as nothing: "revenue - last 7 days", "total sales ($)",
 * "(ios only)". A dash between two numbers is a range ("$10 - $30") and stays.
 */
function chatty(m: Tagged, before: Tagged | undefined, after: Tagged | undefined): boolean {
  if (m.kind !== 'symbol') return false;
  if (PUNCTUATION.includes(m.text)) return true;
  const numbers = before?.kind === 'number' && after?.kind === 'number';
  return (m.text === '-' || m.text === '$') && !numbers;
}
