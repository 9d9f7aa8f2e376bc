// Audience criteria -> a condition on users. The text is cut into clauses at "who", "whose",
// "with", "and", "but", commas and "or" (not between two values of one property: "France or
// Germany" stays one clause), with parentheses and "not (...)" for grouping; each clause is read
// by `clauseCondition`: an action (did an event, with filters, a number of times, a total, a
// period), activity, first seen, email or phone, or user properties.
import type { Condition, Filter, Period } from './ast.js';
import {
  and,
  type ClauseContext,
  eventsOf,
  isFiller,
  isRole,
  type NumberSpec,
  not,
  periodOf,
  roleOf,
  takeFilters,
  takeNumbers,
  targetsOf,
  timesBounds,
} from './clause.js';
import type { Lexicon } from './lexicon.js';
import type { Reading, Tagged } from './mentions.js';
import { NotUnderstood } from './not-understood.js';
import { clip, place, relevantEvents, scopeOf } from './place.js';
import { SKIPPABLE } from './words.js';

const SUBJECT_ROLES = new Set(['users', 'visitors', 'rel', 'which', 'have', 'is', 'unique']);
const BOUNDARY_ROLES = new Set(['rel', 'which', 'whose', 'where', 'with', 'and', 'but', 'or']);

/** Reads criteria into a condition; throws NotUnderstood. */
export function parseCriteria(reading: Reading, lexicon: Lexicon): Condition {
  const ms = reading.mentions.filter(
    (m) => !(m.kind === 'symbol' && (m.text === '.' || m.text === '?' || m.text === '!')),
  );
  refuseErrors(ms);
  if (ms.length === 0) throw new NotUnderstood('The criteria are empty.');
  const parser = new Structure(ms, lexicon);
  const c = parser.expression();
  if (parser.pos < ms.length)
    throw new NotUnderstood(`I understood the criteria up to "${ms[parser.pos]!.raw}" but not from there.`, [
      ms[parser.pos]!.raw,
    ]);
  return c;
}

export function refuseErrors(ms: Tagged[]) {
  for (const m of ms) {
    if (m.kind === 'period_error') throw new NotUnderstood(`"${m.raw}": ${m.reason}.`, [m.raw]);
    if (m.kind === 'role' && (m.role === 'unsupported' || m.role === 'will')) {
      throw new NotUnderstood(`"${m.raw}" is not something Tally can answer from past events.`, [m.raw]);
    }
    if (m.kind === 'role' && m.role === 'vague_time')
      throw new NotUnderstood(`"${m.raw}" is vague: give a period, e.g. "in the last 7 days".`, [m.raw]);
    if (m.kind === 'role' && m.role === 'spender')
      throw new NotUnderstood(`"${m.raw}": say how much, e.g. "users who spent more than $100".`, [m.raw]);
  }
}

class Structure {
  pos = 0;
  private depth = 0;
  private previousEvents: string[] | undefined;
  private previous: Condition | undefined;

  constructor(
    private readonly ms: Tagged[],
    private readonly lexicon: Lexicon,
  ) {}

  private peek(k = 0) {
    return this.ms[this.pos + k];
  }
  private isSymbol(text: string, k = 0) {
    const m = this.peek(k);
    return m?.kind === 'symbol' && m.text === text;
  }

  expression(): Condition {
    const parts = [this.term()];
    while (isRole(this.peek(), 'or') && this.boundary(this.pos)) {
      this.pos++;
      parts.push(this.term());
    }
    return parts.length === 1 ? parts[0]! : { type: 'or', of: parts };
  }

  private term(): Condition {
    const parts = [this.factor()];
    for (;;) {
      const m = this.peek();
      if (!m || this.isSymbol(')') || (isRole(m, 'or') && this.boundary(this.pos))) break;
      if (this.isSymbol(',') || isRole(m, 'and', 'but')) {
        this.pos++;
        continue;
      }
      parts.push(this.factor());
    }
    return and(parts);
  }

  private factor(): Condition {
    if (isRole(this.peek(), 'not') && this.isSymbol('(', 1)) {
      this.pos++;
      return not(this.group());
    }
    if (this.isSymbol('(')) return this.group();
    // leading subject words, "who", "that"
    return this.clause();
  }

  private group(): Condition {
    if (++this.depth > 20) throw new NotUnderstood('Parentheses are nested more than 20 deep.');
    this.pos++;
    const inner = this.expression();
    this.depth--;
    if (!this.isSymbol(')')) throw new NotUnderstood('A parenthesis is not closed.', ['(']);
    this.pos++;
    return inner;
  }

  /** Whether the connector at i separates clauses (not two values of one property, nor "between 2 and 4"). */
  boundary(i: number): boolean {
    const before = this.ms[i - 1];
    const after = this.ms[i + 1];
    if (!after) return true;
    const keys = (m: Tagged | undefined) => new Set(targetsOf(m, 'value').map((t) => (t as { key: string }).key));
    const a = keys(before);
    if ([...keys(after)].some((k) => a.has(k))) return false;
    if (before?.kind === 'number' && after.kind === 'number') return false;
    if (before?.kind === 'quoted' && after.kind === 'quoted') return false;
    return true;
  }

  private clause(): Condition {
    const start = this.pos;
    let i = this.pos;
    // a clause runs to the next boundary word that starts a new clause
    while (i < this.ms.length) {
      const m = this.ms[i]!;
      if (m.kind === 'symbol' && (m.text === '(' || m.text === ')')) break;
      if (i > start && m.kind === 'symbol' && m.text === ',' && this.boundary(i)) break;
      if (i > start && m.kind === 'role' && BOUNDARY_ROLES.has(m.role) && this.boundary(i)) {
        // "between 2 and 4 times": the "and" belongs to the numbers
        if (
          m.role === 'and' &&
          this.ms.slice(start, i).some((x) => isRole(x, 'between')) &&
          this.ms[i + 1]?.kind === 'number'
        ) {
          i++;
          continue;
        }
        // "with" right after a subject or "who" does not end the clause: "users with a phone"
        break;
      }
      i++;
    }
    const run = this.ms.slice(start, i);
    this.pos = i;
    if (run.length === 0) {
      const m = this.peek();
      throw new NotUnderstood(
        m ? `Nothing to test before "${m.raw}".` : 'The criteria end too early.',
        m ? [m.raw] : [],
      );
    }
    // A clause of only subject words ("users", "who") joins the next one.
    if (run.every((m) => isSubject(m)) && this.pos < this.ms.length && !this.isSymbol(')')) {
      if (isRole(this.peek(), 'and', 'but', 'or') || this.isSymbol(',')) return { type: 'all' };
      for (const m of run) m.used = true;
      return this.clause();
    }
    const c = clauseCondition(run, {
      lexicon: this.lexicon,
      previousEvents: this.previousEvents,
      previous: this.previous,
    });
    const did = findDid(c);
    if (did) this.previousEvents = did;
    this.previous = c.type === 'not' ? c.of : c;
    return c;
  }
}

const isSubject = (m: Tagged) => (m.kind === 'role' && (SUBJECT_ROLES.has(m.role) || m.role === 'all')) || isFiller(m);

function findDid(c: Condition): string[] | undefined {
  if (c.type === 'did' && c.events.length > 0) return c.events;
  if (c.type === 'not' || c.type === 'and') return findDid(c.type === 'not' ? c.of : c.of[0]!);
  return undefined;
}

/** One clause about a user. */
export function clauseCondition(run: Tagged[], cx: ClauseContext): Condition {
  const { lexicon } = cx;
  const numbers = takeNumbers(run);
  const specs = takeFilters(run);
  const { period, raw: periodRaw } = periodOf(run);
  let negated = false;
  let all = false;
  let firstSeen = false;
  let inactive = false;
  let lastSeen = false;
  let active = false;
  let money = false;
  let inTotal = false;
  let field: 'email' | 'phone' | null = null;
  const events: string[] = [];
  let anyEvent = false;
  const unknown: string[] = [];
  for (const m of run) {
    if (m.used) continue;
    const r = roleOf(m);
    if (r === 'not' || r === 'never' || r === 'zero' || r === 'is_not') negated = !negated;
    else if (r === 'without') {
      negated = !negated;
    } else if (r === 'all') all = true;
    else if (r === 'first_seen' || r === 'new_users' || r === 'new') firstSeen = true;
    else if (r === 'inactive') inactive = true;
    else if (r === 'last_seen') lastSeen = true;
    else if (r === 'active') active = true;
    else if (r === 'money' || r === 'how_much') money = true;
    else if (r === 'in_total' || r === 'all_time') inTotal = r === 'in_total' || inTotal;
    else if (r === 'sales') events.push(...(lexicon.moneyKey ? lexicon.eventsWithKey(lexicon.moneyKey) : []));
    else if (r === 'event_word') anyEvent = true;
    else if (m.kind === 'target' && eventsOf(m)) events.push(...eventsOf(m)!);
    else if (m.kind === 'target' && targetsOf(m, 'field').length > 0)
      field = (targetsOf(m, 'field')[0] as { field: 'email' | 'phone' }).field;
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
    } else {
      unknown.push(m.raw);
      continue;
    }
    m.used = true;
  }
  if (unknown.length > 0) {
    throw new NotUnderstood(`I do not know what "${clip(unknown.slice(0, 8).join(' '))}" means here.`, unknown);
  }
  for (const n of numbers) if (n.events) events.push(...n.events);
  const uniqueEvents = [...new Set(events)];

  if (all && uniqueEvents.length === 0 && specs.length === 0 && numbers.length === 0 && !period) return { type: 'all' };
  if (field) {
    const has: Condition = { type: 'user', filter: { key: field, op: 'exists', values: [] } };
    const rest = userFilters(specs, lexicon);
    return and([negated ? not(has) : has, ...rest]);
  }
  if (firstSeen && uniqueEvents.length === 0) {
    if (!period) throw new NotUnderstood('Signed up when? Add a period, e.g. "signed up in the last 7 days".');
    const c: Condition = { type: 'first_seen', period };
    return and([negated ? not(c) : c, ...userFilters(specs, lexicon)]);
  }
  if (lastSeen) {
    // "last seen more than 2 weeks ago": no activity since then, first seen before
    if (!period?.to || period.from) throw new NotUnderstood('Last seen when? E.g. "last seen more than 14 days ago".');
    const c: Condition = { type: 'inactive', period: { from: period.to, label: `since ${period.label}` } };
    return and([negated ? not(c) : c, ...userFilters(specs, lexicon)]);
  }
  if (inactive || (active && negated && periodRaw && /^for\b/i.test(periodRaw))) {
    if (!period) throw new NotUnderstood('Inactive for how long? E.g. "inactive for 14 days".');
    const c: Condition = { type: 'inactive', period: inactive && negated ? period : period };
    return and([inactive && negated ? not(c) : c, ...userFilters(specs, lexicon)]);
  }
  const moneyNumbers = numbers.filter((n) => n.unit === 'money' || (n.key && n.key === lexicon.moneyKey));
  if (moneyNumbers.some((n) => n.moneyWord) && uniqueEvents.length === 0) money = true;
  const timesNumbers = numbers.filter((n) => n.unit === 'times');
  const otherNumbers = numbers.filter((n) => !moneyNumbers.includes(n) && !timesNumbers.includes(n));
  if (numbers.some((n) => n.unit === 'percent'))
    throw new NotUnderstood('A percentage cannot be a condition on one user.');
  if (uniqueEvents.length > 0 || anyEvent || active || (money && moneyNumbers.length > 0) || timesNumbers.length > 0) {
    return didCondition({
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
    if (all) return { type: 'all' };
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
    parts.push({ type: 'did', events: carriers, filters: [filter], ...(period ? { period } : {}) });
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
