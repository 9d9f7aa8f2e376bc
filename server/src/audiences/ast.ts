// The segment definition: the JSON AST the criteria parser produces and audiences store. Times
// stay relative ("the last 30 days") so a stored audience is re-evaluated against the current
// clock every time it is counted. `describe` turns a definition back into plain words.

export type Unit = 'hour' | 'day' | 'week' | 'month' | 'year';
export type Period = 'day' | 'week' | 'month' | 'year';

/** A point in time, resolved when the definition is evaluated. */
export type Instant =
  /** Now minus `ago` units. */
  | { ago: number; unit: Unit }
  /** A calendar day (YYYY-MM-DD) at midnight in the organization's time zone, plus `shift` days. */
  | { date: string; shift?: number }
  /** An exact ISO 8601 date-time. */
  | { at: string }
  /** The start of the current period (`back: 0`) or of the previous one (`back: 1`). */
  | { start: Period; back: 0 | 1 };

/** The half-open interval [from, to); a missing end is open. */
export interface Range {
  from?: Instant;
  to?: Instant;
}

export type PropertyOp =
  | 'eq'
  | 'neq'
  | 'in'
  | 'contains'
  | 'not_contains'
  | 'starts_with'
  | 'ends_with'
  | 'gt'
  | 'gte'
  | 'lt'
  | 'lte'
  | 'exists'
  | 'not_exists';

export type PropertyValue = string | number | boolean;

export type Condition =
  | { type: 'all' }
  | { type: 'and' | 'or'; of: Condition[] }
  | { type: 'not'; of: Condition }
  /** Did `event` between `min` and `max` times (max null: no upper bound) within `range`. */
  | { type: 'event'; event: string; min: number; max: number | null; range?: Range }
  /** At least one event within `range`. */
  | { type: 'active'; range: Range }
  /** No event since `since`, and first seen before it. */
  | { type: 'inactive'; since: Instant }
  /** First seen within `range`. */
  | { type: 'signed_up'; range: Range }
  | { type: 'has'; field: 'email' | 'phone' }
  /** `key` is a user property, or one of the columns email, phone, user_id. */
  | { type: 'property'; key: string; op: PropertyOp; value?: PropertyValue | PropertyValue[] };

export interface SegmentDefinition {
  version: 1;
  where: Condition;
}

/** Columns of the user row that criteria may compare like properties. */
export const USER_COLUMNS: Readonly<Record<string, string>> = {
  email: 'email',
  phone: 'phone',
  user_id: 'external_id',
};

const unitWord = (n: number, unit: Unit) => (n === 1 ? unit : `${n} ${unit}s`);

function instant(i: Instant): string {
  if ('ago' in i) return i.ago === 1 ? `1 ${i.unit} ago` : `${i.ago} ${i.unit}s ago`;
  if ('date' in i) return i.shift ? `${i.date} + ${i.shift} day${i.shift === 1 ? '' : 's'}` : i.date;
  if ('at' in i) return i.at;
  return i.back === 0 ? `the start of this ${i.start}` : `the start of last ${i.start}`;
}

export function describeRange(r: Range): string {
  const { from, to } = r;
  if (from && 'ago' in from && !to) return `in the last ${unitWord(from.ago, from.unit)}`;
  if (from && 'start' in from) {
    if (!to) return from.start === 'day' ? 'today' : `this ${from.start}`;
    if ('start' in to && to.start === from.start && from.back === 1 && to.back === 0) {
      return from.start === 'day' ? 'yesterday' : `last ${from.start}`;
    }
  }
  if (from && 'date' in from && to && 'date' in to && !from.shift && to.shift === 1) {
    return from.date === to.date ? `on ${from.date}` : `between ${from.date} and ${to.date}`;
  }
  if (from && !to) return `since ${instant(from)}`;
  if (to && !from) return `before ${instant(to)}`;
  if (from && to) return `from ${instant(from)} until ${instant(to)}`;
  return 'at any time';
}

function describeValue(v: PropertyValue | PropertyValue[] | undefined): string {
  if (Array.isArray(v)) return v.map((x) => describeValue(x)).join(', ');
  return typeof v === 'string' ? `"${v}"` : String(v);
}

const OP_WORDS: Record<PropertyOp, string> = {
  eq: 'is',
  neq: 'is not',
  in: 'is one of',
  contains: 'contains',
  not_contains: 'does not contain',
  starts_with: 'starts with',
  ends_with: 'ends with',
  gt: 'is greater than',
  gte: 'is at least',
  lt: 'is less than',
  lte: 'is at most',
  exists: 'is set',
  not_exists: 'is not set',
};

function times(min: number, max: number | null): string {
  if (max === null) return min <= 1 ? '' : ` at least ${min} times`;
  if (min === max) return ` exactly ${min} time${min === 1 ? '' : 's'}`;
  if (min <= 1) return ` at most ${max} time${max === 1 ? '' : 's'}`;
  return ` between ${min} and ${max} times`;
}

/** The definition in plain words, e.g. `did "purchase" at least 3 times in the last 30 days`. */
export function describe(c: Condition, nested = false): string {
  switch (c.type) {
    case 'all':
      return 'all users';
    case 'and':
    case 'or': {
      const text = c.of.map((x) => describe(x, true)).join(` ${c.type} `);
      return nested ? `(${text})` : text;
    }
    case 'not':
      if (c.of.type === 'event') return `did not ${describe(c.of).slice('did '.length)}`;
      if (c.of.type === 'has') return `has no ${c.of.field}`;
      if (c.of.type === 'active') return `not active ${describeRange(c.of.range)}`;
      return `not ${describe(c.of, true)}`;
    case 'event':
      return `did "${c.event}"${times(c.min, c.max)}${c.range ? ` ${describeRange(c.range)}` : ''}`;
    case 'active':
      return `active ${describeRange(c.range)}`;
    case 'inactive':
      return 'ago' in c.since
        ? `inactive for ${unitWord(c.since.ago, c.since.unit)}`
        : `inactive since ${instant(c.since)}`;
    case 'signed_up':
      return `signed up ${describeRange(c.range)}`;
    case 'has':
      return `has ${c.field === 'email' ? 'an email' : 'a phone'}`;
    case 'property': {
      const op = OP_WORDS[c.op];
      return c.value === undefined ? `${c.key} ${op}` : `${c.key} ${op} ${describeValue(c.value)}`;
    }
  }
}

/** Criteria the built-in engine understands, offered when it does not understand one. */
export const EXAMPLES: readonly string[] = [
  'users who did purchase at least 3 times in the last 30 days',
  'users who did not do checkout_started since 2026-01-01',
  'users who have not been active for 14 days',
  'users who were active in the last 7 days',
  'users whose plan is premium',
  'users whose age is greater than 30 and who have an email',
  'users who signed up this week',
  'users who signed up between 2026-01-01 and 2026-01-31',
  'users who did "add to cart" and (whose country is FR or whose country is DE)',
];
