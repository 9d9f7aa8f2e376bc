// One clause about a user, read into a condition (the criteria parser cuts the text into clauses):
// an action (did an event, with filters, a number of times, a total, a period), activity or
// inactivity, first or last seen, an email or phone, or user properties. Negations ("not",
// "never", "without") turn the clause's condition around.
import type { Condition, Filter, Period } from './ast.js';
import { and, type ClauseContext, not, periodOf, timesBounds } from './clause.js';
import { eachValue, firstTime, samePeriod } from './clause-forms.js';
import { type FilterSpec, takeFilters } from './filters.js';
import type { Lexicon } from './lexicon.js';
import { eventsOf, isFiller, isRole, roleOf, targetsOf } from './mention-roles.js';
import type { Tagged } from './mentions.js';
import { NotUnderstood } from './not-understood.js';
import { type NumberSpec, takeNumbers } from './numbers.js';
import { clip, place, relevantEvents, scopeOf } from './place.js';
import { SKIPPABLE } from './words.js';

const SUBJECT_ROLES = new Set(['users', 'visitors', 'rel', 'which', 'have', 'is', 'unique']);

/** Words that only name the users ("users who", "those which have"). */
export const isSubject = (m: Tagged) =>
  (m.kind === 'role' && (SUBJECT_ROLES.has(m.role) || m.role === 'all')) || isFiller(m);

/** What the words of a clause say, besides its numbers, filters and period. */
interface ClauseWords {
  negated: boolean;
  all: boolean;
  firstSeen: boolean;
  inactive: boolean;
  /** Active in the period and first seen before it. */
  returning: boolean;
  lastSeen: boolean;
  active: boolean;
  money: boolean;
  inTotal: boolean;
  field: 'email' | 'phone' | null;
  events: string[];
  anyEvent: boolean;
  /** "and again in June": the previous clause's action, over another period. */
  again: boolean;
  /** "first-time buyers in May": did it in the period and never before it. */
  firstTime: boolean;
  both: boolean;
}

/** Reads the words of a clause left after its numbers, filters and period; refuses words it cannot place. */
function clauseWords(run: Tagged[], lexicon: Lexicon): ClauseWords {
  const w: ClauseWords = {
    negated: false,
    all: false,
    firstSeen: false,
    inactive: false,
    returning: false,
    lastSeen: false,
    active: false,
    money: false,
    inTotal: false,
    field: null,
    events: [],
    anyEvent: false,
    again: false,
    firstTime: false,
    both: false,
  };
  const unknown: string[] = [];
  for (const m of run) {
    if (m.used) continue;
    const r = roleOf(m);
    if (r === 'not' || r === 'never' || r === 'zero' || r === 'is_not' || r === 'without') w.negated = !w.negated;
    else if (r === 'all') w.all = true;
    else if (r === 'first_seen' || r === 'new_users' || r === 'new') w.firstSeen = true;
    else if (r === 'inactive') w.inactive = true;
    else if (r === 'returning') w.returning = true;
    else if (r === 'last_seen') w.lastSeen = true;
    else if (r === 'active') w.active = true;
    else if (r === 'money' || r === 'how_much') w.money = true;
    else if (r === 'in_total' || r === 'all_time' || r === 'agg:sum')
      w.inTotal = r === 'in_total' || r === 'agg:sum' || w.inTotal;
    else if (r === 'sales') w.events.push(...(lexicon.moneyKey ? lexicon.eventsWithKey(lexicon.moneyKey) : []));
    else if (r === 'event_word') w.anyEvent = true;
    else if (m.kind === 'target' && eventsOf(m)) w.events.push(...eventsOf(m)!);
    else if (m.kind === 'target' && targetsOf(m, 'field').length > 0)
      w.field = (targetsOf(m, 'field')[0] as { field: 'email' | 'phone' }).field;
    else if (m.kind === 'target' && targetsOf(m, 'key').length > 0 && SKIPPABLE.has(m.raw.toLowerCase())) {
      // "sports items": "items" only names the things
    } else if (m.kind === 'target' && targetsOf(m, 'key').length > 0) {
      throw new NotUnderstood(`"${m.raw}" needs a value or a comparison, e.g. "${m.raw} is ...".`, [m.raw]);
    } else if (
      isSubject(m) ||
      isRole(m, 'have', 'is', 'unique', 'paying', 'each', 'by', 'to', 'with', 'where', 'whose')
    ) {
      // subject and auxiliary words
    } else if (m.kind === 'symbol' && m.text === ',') {
      // list punctuation
    } else if (m.kind === 'word' && m.word === 'both') {
      // "active both this week and last week": the clauses are joined (the guard checks they are);
      // "used both web and iOS": each value is a condition of its own
      w.both = true;
    } else if (r === 'first_time') {
      w.firstTime = true;
    } else if (m.kind === 'word' && m.word === 'again') {
      w.again = true;
    } else {
      unknown.push(m.raw);
      continue;
    }
    m.used = true;
  }
  if (unknown.length > 0) {
    throw new NotUnderstood(`I do not know what "${clip(unknown.slice(0, 8).join(' '))}" means here.`, unknown);
  }
  return w;
}

/** A clause about an email or phone, first or last seen, or inactivity; null for any other. */
function seenCondition(
  w: ClauseWords,
  events: string[],
  specs: FilterSpec[],
  period: Period | undefined,
  periodRaw: string | undefined,
  lexicon: Lexicon,
): Condition | null {
  const rest = () => userFilters(specs, lexicon);
  if (w.field) {
    const has: Condition = { type: 'user', filter: { key: w.field, op: 'exists', values: [] } };
    return and([w.negated ? not(has) : has, ...rest()]);
  }
  if (w.returning && events.length === 0) {
    if (!period) throw new NotUnderstood('Returning when? Add a period, e.g. "returning users this month".');
    // active in the period, and not new in it: first seen before it started
    const c = and([
      { type: 'did', events: [], filters: [], period },
      { type: 'not', of: { type: 'first_seen', period } },
    ]);
    return and([w.negated ? not(c) : c, ...rest()]);
  }
  if (w.firstSeen && events.length === 0) {
    if (!period) throw new NotUnderstood('Signed up when? Add a period, e.g. "signed up in the last 7 days".');
    const c: Condition = { type: 'first_seen', period };
    return and([w.negated ? not(c) : c, ...rest()]);
  }
  if (w.lastSeen) {
    // "last seen more than 2 weeks ago": no activity since then, first seen before
    if (!period?.to || period.from) throw new NotUnderstood('Last seen when? E.g. "last seen more than 14 days ago".');
    const c: Condition = { type: 'inactive', period: { from: period.to, label: `since ${period.label}` } };
    return and([w.negated ? not(c) : c, ...rest()]);
  }
  if (w.inactive || (w.active && w.negated && periodRaw && /^for\b/i.test(periodRaw))) {
    if (!period) throw new NotUnderstood('Inactive for how long? E.g. "inactive for 14 days".');
    const c: Condition = { type: 'inactive', period };
    return and([w.inactive && w.negated ? not(c) : c, ...rest()]);
  }
  return null;
}

/** One clause about a user. */
export function clauseCondition(run: Tagged[], cx: ClauseContext): Condition {
  const { lexicon } = cx;
  const numbers = takeNumbers(run);
  const specs = takeFilters(run);
  const back = samePeriod(run, cx);
  const { period, raw: periodRaw } = back ?? periodOf(run);
  const w = clauseWords(run, lexicon);
  if (w.again && !cx.previous)
    throw new NotUnderstood('"Again" after what? Name the first time, e.g. "bought in May and again in June".', [
      'again',
    ]);
  for (const n of numbers) if (n.events) w.events.push(...n.events);
  const uniqueEvents = [...new Set(w.events)];
  if (w.all && uniqueEvents.length === 0 && specs.length === 0 && numbers.length === 0 && !period)
    return { type: 'all' };
  const seen = seenCondition(w, uniqueEvents, specs, period, periodRaw, lexicon);
  if (seen) return seen;
  const moneyNumbers = numbers.filter((n) => n.unit === 'money' || (n.key && n.key === lexicon.moneyKey));
  const money = w.money || (moneyNumbers.some((n) => n.moneyWord) && uniqueEvents.length === 0);
  const timesNumbers = numbers.filter((n) => n.unit === 'times');
  const otherNumbers = numbers.filter((n) => !moneyNumbers.includes(n) && !timesNumbers.includes(n));
  if (numbers.some((n) => n.unit === 'percent'))
    throw new NotUnderstood('A percentage cannot be a condition on one user.');
  if (
    uniqueEvents.length > 0 ||
    w.anyEvent ||
    w.active ||
    (money && moneyNumbers.length > 0) ||
    timesNumbers.length > 0
  ) {
    const negated = w.negated;
    const inTotal = w.inTotal;
    if (w.firstTime) return firstTime(uniqueEvents, period, negated, run);
    const did = didCondition({
      events: uniqueEvents,
      specs,
      period,
      negated,
      money,
      inTotal,
      moneyNumbers,
      timesNumbers,
      otherNumbers,
      lexicon,
    });
    return w.both ? eachValue(did) : did;
  }
  if (numbers.length > 0) {
    for (const n of otherNumbers) if (n.key) specs.push(numericSpec(n));
    if (
      specs.length !== numbers.length + specs.length - otherNumbers.filter((n) => n.key).length &&
      otherNumbers.some((n) => !n.key)
    ) {
      throw new NotUnderstood(
        'A number is not tied to anything: say what it counts ("more than 3 purchases", "over $100").',
      );
    }
  }
  return propertyCondition(w, specs, period, periodRaw, cx);
}

/** A clause of property filters only ("iOS users", "whose plan is premium"), or of a period only. */
function propertyCondition(
  w: ClauseWords,
  specs: FilterSpec[],
  period: Period | undefined,
  periodRaw: string | undefined,
  cx: ClauseContext,
): Condition {
  const { lexicon } = cx;
  const negated = w.negated;
  if (
    specs.length === 0 &&
    period &&
    cx.previous &&
    (cx.previous.type === 'did' || cx.previous.type === 'first_seen')
  ) {
    // "active last week but not this week": the previous clause, over another period
    const c: Condition = { ...cx.previous, period };
    return negated ? not(c) : c;
  }
  if (specs.length === 0) {
    if (period) throw new NotUnderstood(`"${periodRaw}" is a period, but what should users have done then?`, []);
    if (w.all) return { type: 'all' };
    throw new NotUnderstood('There is no condition here that Tally knows how to test.');
  }
  // only property filters: user properties, or event properties ("iOS users")
  const placed = place(lexicon, specs, []);
  const parts: Condition[] = placed.user.map((filter) => ({ type: 'user', filter }) as Condition);
  for (const filter of placed.event) {
    if (cx.previousEvents?.every((e) => lexicon.eventProperty(e, filter.key))) {
      // ellipsis: "bought books but not electronics"
      const flipped = filter.op === 'not_in' || filter.op === 'neq';
      const f: Filter = flipped ? { ...filter, op: filter.op === 'neq' ? 'eq' : 'in' } : filter;
      const c: Condition = { type: 'did', events: cx.previousEvents, filters: [f], ...(period ? { period } : {}) };
      parts.push(flipped !== negated ? not(c) : c);
      continue;
    }
    const carriers = lexicon.eventsWithKey(filter.key);
    const did: Condition = { type: 'did', events: carriers, filters: [filter], ...(period ? { period } : {}) };
    parts.push(w.both ? eachValue(did) : did);
  }
  const c = and(parts);
  return negated ? not(c) : c;
}

function numericSpec(n: NumberSpec) {
  const b = n.bounds;
  const field = n.field ? { field: true } : {};
  if (b.gte !== undefined && b.lte !== undefined) {
    return b.gte === b.lte
      ? { key: n.key!, op: 'eq' as const, values: [b.gte], at: n.at, ...field }
      : { key: n.key!, op: 'between' as const, values: [b.gte, b.lte], at: n.at, ...field };
  }
  const [op, v] =
    b.gt !== undefined
      ? ['gt', b.gt]
      : b.gte !== undefined
        ? ['gte', b.gte]
        : b.lt !== undefined
          ? ['lt', b.lt]
          : ['lte', b.lte];
  return { key: n.key!, op: op as 'gt', values: [v as number], at: n.at, ...field };
}

function userFilters(specs: ReturnType<typeof takeFilters>, lexicon: Lexicon): Condition[] {
  const placed = place(lexicon, specs, []);
  if (placed.event.length > 0) {
    return [
      ...placed.user.map((filter) => ({ type: 'user', filter }) as Condition),
      ...placed.event.map(
        (filter) => ({ type: 'did', events: lexicon.eventsWithKey(filter.key), filters: [filter] }) as Condition,
      ),
    ];
  }
  return placed.user.map((filter) => ({ type: 'user', filter }));
}

interface DidInput {
  events: string[];
  specs: ReturnType<typeof takeFilters>;
  period?: Period;
  negated: boolean;
  money: boolean;
  inTotal: boolean;
  moneyNumbers: NumberSpec[];
  timesNumbers: NumberSpec[];
  otherNumbers: NumberSpec[];
  lexicon: Lexicon;
}

function didCondition(d: DidInput): Condition {
  const { lexicon } = d;
  const specs = [...d.specs];
  for (const n of d.otherNumbers) {
    if (n.key) specs.push(numericSpec(n));
    else {
      // "purchases over 100": the one numeric property of those events
      const numeric = d.events.length > 0 ? numericKeys(lexicon, d.events) : [];
      if (numeric.length !== 1)
        throw new NotUnderstood(
          'A number is not tied to anything: say what it counts ("more than 3 times", "over $100").',
        );
      specs.push(numericSpec({ ...n, key: numeric[0]! }));
    }
  }
  let total: (import('./ast.js').Bounds & { key: string }) | undefined;
  if (d.moneyNumbers.length > 0) {
    if (!lexicon.moneyKey) throw new NotUnderstood('This app has no events carrying revenue or an amount.');
    if (d.moneyNumbers.length > 1) throw new NotUnderstood('Two amounts of money in one condition.');
    const n = d.moneyNumbers[0]!;
    const key = n.key ?? lexicon.moneyKey;
    if (d.money || d.inTotal) total = { ...n.bounds, key: key === lexicon.moneyKey ? '$revenue' : key };
    else specs.push(numericSpec({ ...n, key: key === lexicon.moneyKey ? '$revenue' : key }));
  }
  const events =
    d.events.length === 0 && total ? (lexicon.moneyKey ? lexicon.eventsWithKey(lexicon.moneyKey) : []) : d.events;
  const moneySpecs = specs.filter((s) => s.key === '$revenue');
  const placed = place(
    lexicon,
    specs.filter((s) => s.key !== '$revenue'),
    events,
  );
  if (d.timesNumbers.length > 1) throw new NotUnderstood('Two numbers of times in one condition.');
  const times = d.timesNumbers[0]?.bounds;
  const did: Condition = {
    type: 'did',
    events,
    filters: [...placed.event, ...moneySpecs.map(({ key, op, values }) => ({ key, op, values }))],
    ...(d.period ? { period: d.period } : {}),
    ...(times ? { times: timesBounds(times) } : {}),
    ...(total ? { total } : {}),
  };
  // "0 times", "exactly 0": never
  const never = times && times.lte !== undefined && times.lte < 1;
  const core = never ? not({ ...did, times: undefined } as Condition) : did;
  if (never) delete (core as { of: { times?: unknown } }).of.times;
  const users = placed.user.map((filter) => ({ type: 'user', filter }) as Condition);
  return and([d.negated ? not(core) : core, ...users]);
}

export function numericKeys(lexicon: Lexicon, events: string[]): string[] {
  const keys = new Set<string>();
  for (const e of events)
    for (const p of lexicon.events.find((x) => x.name === e)?.properties ?? []) if (p.numeric) keys.add(p.key);
  return [...keys];
}

export { relevantEvents, scopeOf };
