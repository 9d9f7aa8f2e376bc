// Hours of the day and days of the week, in the organization's time zone: filters ("on weekends",
// "on Mondays", "before 10am", "between 8pm and 11pm"), breakdowns ("by hour of day", "by
// weekday"), rankings ("which hour ... the most", "busiest day of the week") and "weekends vs
// weekdays". They are read from the text before the rest of the question, which is then read as
// usual, and they apply to the events measured. A question whose measure is not a count, sum or
// average of events (users who did something, ratios, metrics) is refused when it names them:
// applying an hour to such a measure would silently change what it counts.
import type { Dimension, Filter, Query } from './ast.js';
import { NotUnderstood } from './not-understood.js';

export interface TimeParts {
  filters: Filter[];
  groupBy?: Extract<Dimension, { kind: 'time_part' }>;
  /** "which hour ... the most": the highest (desc) or lowest (asc) group only. */
  rank?: 'desc' | 'asc';
  /** The phrases read, as written. */
  phrases: string[];
}

const DAYS = ['monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday', 'sunday'];
const PLURAL_DAY = `(?:${DAYS.map((d) => `${d}s`).join('|')})`;
const HOUR = String.raw`(\d{1,2})(?::00)?\s*(am|pm|a\.m\.|p\.m\.)|(noon|midday|midnight)`;
const B = String.raw`(?<![\w$])`;
const E = String.raw`(?![\w])`;

/** An hour written "9am", "11 pm", "noon", "midnight" as 0 to 24 (midnight at the end is 24). */
function hourOf(m: RegExpExecArray, at: number, end: boolean): number | null {
  const word = m[at + 2];
  if (word) return word.toLowerCase() === 'midnight' ? (end ? 24 : 0) : 12;
  const h = Number(m[at]);
  const pm = m[at + 1]!.toLowerCase().startsWith('p');
  if (h < 1 || h > 12) return null;
  return (h % 12) + (pm ? 12 : 0);
}

const dayIndex = (w: string) => DAYS.findIndex((d) => w.toLowerCase().startsWith(d.slice(0, 3))) + 1;

interface Rule {
  re: RegExp;
  apply(m: RegExpExecArray, out: TimeParts): void;
}

const hoursFilter = (from: number, to: number): Filter => ({ key: '$hour', op: 'between', values: [from, to - 1] });

const RULES: Rule[] = [
  {
    // "weekends vs weekdays", "weekend vs weekday sessions"
    re: new RegExp(
      `${B}(?:on |during )?(?:the )?(weekends?|weekdays?|week days?)\\s+(?:vs\\.?|versus|compared (?:to|with)|against)\\s+(?:on |during )?(?:the )?(weekends?|weekdays?|week days?)${E}`,
      'i',
    ),
    apply(m, out) {
      const first = m[1]!.toLowerCase().startsWith('weekend') ? 'weekend' : 'weekday';
      const second = m[2]!.toLowerCase().startsWith('weekend') ? 'weekend' : 'weekday';
      if (first === second) throw new NotUnderstood(`"${m[0]}" compares a kind of day with itself.`);
      out.groupBy = { kind: 'time_part', part: 'day_type', first };
    },
  },
  {
    re: new RegExp(
      `${B}(?:(which|what) (?:hour(?: of (?:the )?day)?|time(?: of (?:the )?day)?)|(busiest|most popular|quietest|slowest|least popular) (?:hour(?: of (?:the )?day)?|time of (?:the )?day))${E}`,
      'i',
    ),
    apply(m, out) {
      out.groupBy = { kind: 'time_part', part: 'hour' };
      out.rank = m[2] && /quiet|slow|least/i.test(m[2]) ? 'asc' : m[2] ? 'desc' : out.rank;
    },
  },
  {
    re: new RegExp(
      `${B}(?:(which|what) (?:weekday|day of (?:the )?week)|(busiest|most popular|quietest|slowest|least popular) (?:weekday|day of (?:the )?week))${E}`,
      'i',
    ),
    apply(m, out) {
      out.groupBy = { kind: 'time_part', part: 'weekday' };
      out.rank = m[2] && /quiet|slow|least/i.test(m[2]) ? 'asc' : m[2] ? 'desc' : out.rank;
    },
  },
  {
    re: new RegExp(`${B}(?:by|per|for each|each|every|across) (?:hour of (?:the )?day|time of (?:the )?day)${E}`, 'i'),
    apply(_m, out) {
      out.groupBy = { kind: 'time_part', part: 'hour' };
    },
  },
  {
    re: new RegExp(`${B}(?:by|per|for each|each|every|across) (?:weekday|day of (?:the )?week)${E}`, 'i'),
    apply(_m, out) {
      out.groupBy = { kind: 'time_part', part: 'weekday' };
    },
  },
  {
    re: new RegExp(`${B}(?:between|from) (?:${HOUR}) (?:and|to|until|till|-) (?:${HOUR})${E}`, 'i'),
    apply(m, out) {
      const from = hourOf(m, 1, false);
      const to = hourOf(m, 4, true);
      if (from === null || to === null || to <= from)
        throw new NotUnderstood(`"${m[0]}": give hours from earlier to later in one day, e.g. "between 9am and 5pm".`);
      out.filters.push(hoursFilter(from, to));
    },
  },
  {
    re: new RegExp(`${B}(before|after|at|around) (?:${HOUR})${E}`, 'i'),
    apply(m, out) {
      const h = hourOf(m, 2, m[1] === 'before');
      if (h === null) throw new NotUnderstood(`"${m[0]}" is not an hour of the day.`);
      if (m[1] === 'before') out.filters.push(hoursFilter(0, h));
      else if (m[1] === 'after') out.filters.push(hoursFilter(h, 24));
      else out.filters.push(hoursFilter(h, h + 1));
    },
  },
  {
    // "on Mondays", "fridays", "saturdays and sundays"
    re: new RegExp(`${B}(?:on |every )?(${PLURAL_DAY}(?:(?:,|,? and|,? or|,? &) ${PLURAL_DAY})*)${E}`, 'i'),
    apply(m, out) {
      const days = [...m[1]!.matchAll(new RegExp(PLURAL_DAY, 'gi'))].map((d) => dayIndex(d[0]));
      out.filters.push({ key: '$weekday', op: 'in', values: [...new Set(days)].sort() });
    },
  },
  {
    re: new RegExp(`${B}(?:on |during |over )?(?:the )?(weekends|weekdays|week days|working days|workdays)${E}`, 'i'),
    apply(m, out) {
      const weekend = m[1]!.toLowerCase() === 'weekends';
      out.filters.push({ key: '$weekday', op: 'in', values: weekend ? [6, 7] : [1, 2, 3, 4, 5] });
    },
  },
];

/** The hours and weekdays of a text, and the text without them (null when it names none). */
export function readTimeParts(text: string): { text: string; parts: TimeParts } | null {
  let rest = text;
  const out: TimeParts = { filters: [], phrases: [] };
  for (const rule of RULES) {
    for (let m = rule.re.exec(rest); m; m = rule.re.exec(rest)) {
      rule.apply(m, out);
      out.phrases.push(m[0]);
      rest = `${rest.slice(0, m.index)} ${rest.slice(m.index + m[0].length)}`;
    }
  }
  if (out.phrases.length === 0) return null;
  if (out.groupBy && out.filters.some((f) => f.key === (out.groupBy!.part === 'hour' ? '$hour' : '$weekday')))
    throw new NotUnderstood('A breakdown by hour or weekday and a filter on the same thing: ask for one of them.');
  if (out.groupBy?.part === 'hour' || out.groupBy?.part === 'weekday') {
    // "which hour has the most purchases": the ranking words belong to the hour
    const most = /(?<![\w])(?:the )?(most|least|fewest|highest|lowest)(?![\w])/i.exec(rest);
    if (most) {
      out.rank = /least|fewest|lowest/i.test(most[1]!) ? 'asc' : 'desc';
      rest = `${rest.slice(0, most.index)} ${rest.slice(most.index + most[0].length)}`;
    }
    rest = rest.replace(/^\s*(?:has|have|had|gets|get|got|sees|saw|see|is|was|for|with)(?![\w])/i, ' ');
  }
  return { text: rest.replace(/\s+/g, ' ').trim(), parts: out };
}

/** The question with its hours and weekdays, or a refusal when its measure cannot take them. */
export function applyTimeParts(asked: Query, parts: TimeParts): Query {
  const q = parts.groupBy && parts.rank ? doneMost(asked) : asked;
  const said = parts.phrases.map((p) => `"${p.trim()}"`).join(', ');
  const m = q.measure;
  const onEvents = m.kind === 'events' || m.kind === 'aggregate' || (m.kind === 'users' && !q.segment);
  if (!onEvents || q.bucket || q.compare || q.having) {
    throw new NotUnderstood(
      `Tally reads ${said} as hours or days of the week of the events counted, and it can apply them only to a count, sum or average of events, without a series or comparison of periods.`,
      parts.phrases.map((p) => p.trim()),
    );
  }
  if (m.kind === 'users' && q.events.events.length === 0 && q.events.filters.length === 0 && !q.period)
    throw new NotUnderstood(`Users of the app have no hour or weekday: ask about their events ${said}.`);
  if (parts.groupBy && q.groupBy)
    throw new NotUnderstood(`This asks for two breakdowns (${said} and another): ask for one.`);
  const out: Query = { ...q, events: { ...q.events, filters: [...q.events.filters, ...parts.filters] } };
  if (parts.groupBy) {
    out.groupBy = parts.groupBy;
    delete out.order;
    delete out.limit;
    if (parts.rank) {
      out.order = parts.rank;
      out.limit = 1;
    }
  }
  return out;
}

/**
 * "What hour do people buy the most": the hours ranked by the events the people did, not by the
 * people (a users' count with one action becomes the count of that action's events).
 */
function doneMost(q: Query): Query {
  const did = q.segment;
  if (q.measure.kind !== 'users' || q.period || q.events.events.length > 0 || q.events.filters.length > 0) return q;
  if (did?.type !== 'did' || did.times || did.total || did.events.length === 0) return q;
  const { segment: _, ...rest } = q;
  return {
    ...rest,
    measure: { kind: 'events' },
    events: { events: did.events, filters: did.filters },
    ...(did.period ? { period: did.period } : {}),
  };
}
