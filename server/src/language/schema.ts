// The query AST as a JSON Schema for a language model's structured output (OpenAI strict mode:
// every field present, `null` for "not set", no extra fields), and the way back: the model's
// answer is checked against the schema (zod), turned into the AST and validated against the app's
// lexicon (known events, properties and values) exactly like the built-in parser's output, so the
// same compiler runs it. A model that names an event or property the app does not have is refused.
import { z } from 'zod';
import type { Anchor, Bounds, Condition, Dimension, EventSet, Filter, Measure, Part, Period, Query } from './ast.js';
import type { Lexicon } from './lexicon.js';
import { NotUnderstood } from './not-understood.js';
import { place } from './place.js';

const num = z.number().nullable();
const OPS = [
  'eq',
  'neq',
  'in',
  'not_in',
  'gt',
  'gte',
  'lt',
  'lte',
  'between',
  'contains',
  'not_contains',
  'starts_with',
  'ends_with',
  'exists',
  'not_exists',
] as const;
const UNITS = ['day', 'week', 'month', 'quarter', 'year'] as const;
const BUCKETS = ['hour', 'day', 'week', 'month'] as const;

const FilterZ = z
  .object({
    key: z.string().max(200),
    op: z.enum(OPS),
    values: z.array(z.union([z.string().max(500), z.number(), z.boolean()])).max(50),
  })
  .strict();
const AnchorZ = z
  .object({
    unit: z
      .enum(UNITS)
      .nullable()
      .describe(
        'Start of this calendar unit containing today, moved by `offset` units (0 this one, -1 the previous one)',
      ),
    offset: z.number().int().nullable(),
    months: z.number().int().nullable().describe('Then moved by this many months (rolling windows of months)'),
    date: z.string().nullable().describe('Or: midnight starting this local date, YYYY-MM-DD'),
    hours: z.number().nullable().describe('Or: now minus this many hours'),
  })
  .strict();
const PeriodZ = z
  .object({
    from: AnchorZ.nullable(),
    to: AnchorZ.nullable().describe('Excluded end'),
    label: z.string().max(200).describe('The period in words, e.g. "last week"'),
    unit: z.enum(UNITS).nullable().describe('Set when the period is exactly one calendar unit'),
  })
  .strict();
const BoundsZ = z.object({ gt: num, gte: num, lt: num, lte: num }).strict();
const EventSetZ = z
  .object({ events: z.array(z.string().max(200)).max(50), filters: z.array(FilterZ).max(20) })
  .strict();
const ConditionZ: z.ZodType<LlmCondition> = z
  .object({
    type: z.enum(['all', 'and', 'or', 'not', 'did', 'inactive', 'first_seen', 'user']),
    get of() {
      return z.array(ConditionZ).max(20).nullable();
    },
    events: z.array(z.string().max(200)).max(50).nullable(),
    filters: z.array(FilterZ).max(20).nullable(),
    period: PeriodZ.nullable(),
    times: BoundsZ.nullable(),
    total: z
      .object({ key: z.string().max(200), gt: num, gte: num, lt: num, lte: num })
      .strict()
      .nullable(),
    filter: FilterZ.nullable(),
  })
  .strict();
const PartZ = z
  .object({
    measure: z.enum(['events', 'users', 'sum']),
    key: z.string().max(200).nullable(),
    events: z.array(z.string().max(200)).max(50),
    filters: z.array(FilterZ).max(20),
    segment: ConditionZ.nullable(),
  })
  .strict();
const MeasureZ = z
  .object({
    kind: z.enum(['events', 'users', 'new_users', 'aggregate', 'metric', 'retention_day', 'ratio', 'funnel']),
    fn: z.enum(['sum', 'avg', 'min', 'max', 'median']).nullable(),
    key: z.string().max(200).nullable().describe('Property aggregated; "$revenue" for money'),
    metric: z.enum(['dau', 'wau', 'mau', 'retention', 'churn', 'conversion', 'arpu']).nullable(),
    day: z.number().int().nullable(),
    numerator: PartZ.nullable(),
    denominator: PartZ.nullable(),
    percent: z.boolean().nullable(),
    from: EventSetZ.nullable(),
    to: EventSetZ.nullable(),
  })
  .strict();
const QueryZ = z
  .object({
    understood: z.boolean().describe('false when the question cannot be answered from these events and users'),
    confidence: z.number().describe('0 to 1'),
    measure: MeasureZ,
    events: EventSetZ,
    segment: ConditionZ.nullable(),
    period: PeriodZ.nullable(),
    bucket: z.enum(BUCKETS).nullable(),
    groupBy: z
      .object({
        kind: z.enum(['event_name', 'event_property', 'user_property', 'user', 'time']),
        key: z.string().max(200).nullable(),
        unit: z.enum(BUCKETS).nullable(),
      })
      .strict()
      .nullable(),
    percent: z.boolean().nullable(),
    having: BoundsZ.nullable(),
    order: z.enum(['desc', 'asc']).nullable(),
    limit: z.number().int().nullable(),
    compare: z.array(PeriodZ).max(6).nullable(),
  })
  .strict();
const CriteriaZ = z
  .object({
    understood: z.boolean().describe('false when the criteria cannot be expressed with these events and properties'),
    confidence: z.number().describe('0 to 1'),
    where: ConditionZ,
  })
  .strict();

interface LlmCondition {
  type: Condition['type'];
  of: LlmCondition[] | null;
  events: string[] | null;
  filters: z.infer<typeof FilterZ>[] | null;
  period: z.infer<typeof PeriodZ> | null;
  times: z.infer<typeof BoundsZ> | null;
  total: (z.infer<typeof BoundsZ> & { key: string }) | null;
  filter: z.infer<typeof FilterZ> | null;
}

function jsonSchema(schema: z.ZodType): Record<string, unknown> {
  const out = z.toJSONSchema(schema) as Record<string, unknown>;
  delete out.$schema;
  // OpenAI's strict mode does not take numeric ranges on integers
  return JSON.parse(JSON.stringify(out, (k, v) => (k === 'minimum' || k === 'maximum' ? undefined : v)));
}

export const QUERY_SCHEMA = jsonSchema(QueryZ);
export const CRITERIA_SCHEMA = jsonSchema(CriteriaZ);

// ---- from the model's answer to the AST ----------------------------------------------------------

const clean = <T extends object>(o: T): T =>
  Object.fromEntries(Object.entries(o).filter(([, v]) => v !== null && v !== undefined)) as T;

function anchor(a: z.infer<typeof AnchorZ>): Anchor {
  if (a.date !== null) {
    if (!/^\d{4}-\d{2}-\d{2}$/.test(a.date)) throw new NotUnderstood(`"${a.date}" is not a date.`);
    return { date: a.date };
  }
  if (a.hours !== null) {
    if (!(a.hours > 0 && a.hours <= 24 * 3660)) throw new NotUnderstood('The period must be in the past.');
    return { hours: a.hours };
  }
  if (a.unit === null || a.offset === null) throw new NotUnderstood('A period bound is incomplete.');
  if (Math.abs(a.offset) > 5000 || Math.abs(a.months ?? 0) > 1200)
    throw new NotUnderstood('A period bound is out of range.');
  return clean({ unit: a.unit, offset: a.offset, months: a.months ?? undefined }) as Anchor;
}

function period(p: z.infer<typeof PeriodZ> | null): Period | undefined {
  if (!p) return undefined;
  return clean({
    from: p.from ? anchor(p.from) : undefined,
    to: p.to ? anchor(p.to) : undefined,
    label: p.label.slice(0, 200),
    unit: p.unit ?? undefined,
  }) as Period;
}

const bounds = (b: z.infer<typeof BoundsZ> | null): Bounds | undefined => (b ? (clean(b) as Bounds) : undefined);

function condition(c: LlmCondition, depth = 0): Condition {
  if (depth > 12) throw new NotUnderstood('The criteria are nested too deep.');
  switch (c.type) {
    case 'all':
      return { type: 'all' };
    case 'and':
    case 'or':
      if (!c.of || c.of.length === 0) throw new NotUnderstood(`"${c.type}" needs conditions.`);
      return { type: c.type, of: c.of.map((x) => condition(x, depth + 1)) };
    case 'not':
      if (c.of?.length !== 1) throw new NotUnderstood('"not" takes one condition.');
      return { type: 'not', of: condition(c.of[0]!, depth + 1) };
    case 'did':
      return clean({
        type: 'did' as const,
        events: c.events ?? [],
        filters: (c.filters ?? []) as Filter[],
        period: period(c.period),
        times: bounds(c.times),
        total: c.total ? (clean(c.total) as Bounds & { key: string }) : undefined,
      });
    case 'inactive':
    case 'first_seen': {
      const p = period(c.period);
      if (!p) throw new NotUnderstood(`"${c.type}" needs a period.`);
      return { type: c.type, period: p };
    }
    case 'user':
      if (!c.filter) throw new NotUnderstood('A user condition needs a filter.');
      return { type: 'user', filter: c.filter as Filter };
    default:
      throw new NotUnderstood(`The language model cannot express "${c.type}" conditions.`);
  }
}

const eventSet = (e: z.infer<typeof EventSetZ>): EventSet => ({ events: e.events, filters: e.filters as Filter[] });

function part(p: z.infer<typeof PartZ>): Part {
  return clean({
    measure: p.measure,
    key: p.key ?? undefined,
    events: p.events,
    filters: p.filters as Filter[],
    segment: p.segment ? condition(p.segment) : undefined,
  });
}

function measure(m: z.infer<typeof MeasureZ>): Measure {
  switch (m.kind) {
    case 'events':
    case 'users':
    case 'new_users':
      return { kind: m.kind };
    case 'aggregate':
      if (!m.fn || !m.key) throw new NotUnderstood('An aggregate needs a function and a property.');
      return { kind: 'aggregate', fn: m.fn, key: m.key };
    case 'metric':
      if (!m.metric) throw new NotUnderstood('A metric needs its name.');
      return { kind: 'metric', metric: m.metric };
    case 'retention_day':
      if (m.day === null || m.day < 1 || m.day > 365) throw new NotUnderstood('Day-N retention needs N from 1 to 365.');
      return { kind: 'retention_day', day: m.day };
    case 'ratio':
      if (!m.numerator || !m.denominator) throw new NotUnderstood('A ratio needs two parts.');
      return { kind: 'ratio', numerator: part(m.numerator), denominator: part(m.denominator), percent: !!m.percent };
    case 'funnel':
      if (!m.from || !m.to) throw new NotUnderstood('A conversion needs two steps.');
      return { kind: 'funnel', from: eventSet(m.from), to: eventSet(m.to) };
  }
}

export interface FromModel<T> {
  ast: T;
  confidence: number;
}

/** Checks a model's answer for a question and turns it into a query; throws NotUnderstood. */
export function queryFromModel(answer: unknown, lexicon: Lexicon): FromModel<Query> {
  const parsed = QueryZ.safeParse(answer);
  if (!parsed.success) throw new NotUnderstood('The language model answered outside the query schema.');
  const a = parsed.data;
  if (!a.understood) throw new NotUnderstood('The language model could not express the question either.');
  const q: Query = clean({
    measure: measure(a.measure),
    events: eventSet(a.events),
    segment: a.segment ? condition(a.segment) : undefined,
    period: period(a.period),
    bucket: a.bucket ?? undefined,
    groupBy: a.groupBy ? dimension(a.groupBy) : undefined,
    percent: a.percent ?? undefined,
    having: bounds(a.having),
    order: a.order ?? undefined,
    limit: a.limit === null ? undefined : Math.min(Math.max(1, a.limit), 1000),
    compare: a.compare ? a.compare.map((p) => period(p)!) : undefined,
  }) as Query;
  validateQuery(q, lexicon);
  return { ast: q, confidence: Math.min(1, Math.max(0, a.confidence)) };
}

/** Checks a model's answer for criteria and turns it into a condition; throws NotUnderstood. */
export function criteriaFromModel(answer: unknown, lexicon: Lexicon): FromModel<Condition> {
  const parsed = CriteriaZ.safeParse(answer);
  if (!parsed.success) throw new NotUnderstood('The language model answered outside the criteria schema.');
  if (!parsed.data.understood) throw new NotUnderstood('The language model could not express the criteria either.');
  const c = condition(parsed.data.where);
  validateCondition(c, lexicon);
  return { ast: c, confidence: Math.min(1, Math.max(0, parsed.data.confidence)) };
}

function dimension(d: {
  kind: Dimension['kind'];
  key: string | null;
  unit: (typeof BUCKETS)[number] | null;
}): Dimension {
  if (d.kind === 'event_property' || d.kind === 'user_property') {
    if (!d.key) throw new NotUnderstood('A breakdown by property needs the property.');
    return { kind: d.kind, key: d.key };
  }
  if (d.kind === 'time') return { kind: 'time', unit: d.unit ?? 'day' };
  if (d.kind === 'time_part')
    throw new NotUnderstood('Breakdowns by hour of day or weekday come from the built-in engine only.');
  return { kind: d.kind };
}

// ---- validation against the app: the same checks as the built-in parser's ------------------------

function checkEvents(events: string[], lexicon: Lexicon) {
  for (const e of events) if (!lexicon.hasEvent(e)) throw new NotUnderstood(`The app has no event "${e}".`, [e]);
}

function checkFilters(filters: Filter[], events: string[], lexicon: Lexicon, scope: 'event' | 'user') {
  const specs = filters
    .filter((f) => f.key !== '$revenue')
    .map((f, at) => ({
      ...f,
      at,
      ...(scope === 'user' && ['email', 'phone', 'user_id'].includes(f.key) ? { field: true } : {}),
    }));
  const placed = place(lexicon, specs, events);
  if (scope === 'event' && placed.user.length > 0)
    throw new NotUnderstood(`"${placed.user[0]!.key}" is a property of users, not of those events.`);
  if (filters.some((f) => f.key === '$revenue') && !lexicon.moneyKey)
    throw new NotUnderstood('The app has no events carrying revenue.');
}

export function validateCondition(c: Condition, lexicon: Lexicon): void {
  switch (c.type) {
    case 'and':
    case 'or':
      for (const x of c.of) validateCondition(x, lexicon);
      return;
    case 'not':
      validateCondition(c.of, lexicon);
      return;
    case 'did':
      checkEvents(c.events, lexicon);
      checkFilters(c.filters, c.events, lexicon, 'event');
      if (c.total && c.total.key !== '$revenue' && !lexicon.eventsWithKey(c.total.key).length)
        throw new NotUnderstood(`No event has a property "${c.total.key}".`, [c.total.key]);
      return;
    case 'user':
      checkFilters([c.filter], [], lexicon, 'user');
      return;
    default:
      return;
  }
}

export function validateQuery(q: Query, lexicon: Lexicon): void {
  checkEvents(q.events.events, lexicon);
  checkFilters(q.events.filters, q.events.events, lexicon, 'event');
  if (q.segment) validateCondition(q.segment, lexicon);
  const m = q.measure;
  if (m.kind === 'aggregate' && m.key !== '$revenue' && !lexicon.eventsWithKey(m.key).length)
    throw new NotUnderstood(`No event has a property "${m.key}".`, [m.key]);
  if (m.kind === 'ratio') {
    for (const p of [m.numerator, m.denominator]) {
      checkEvents(p.events, lexicon);
      checkFilters(p.filters, p.events, lexicon, 'event');
      if (p.segment) validateCondition(p.segment, lexicon);
    }
  }
  if (m.kind === 'funnel') for (const s of [m.from, m.to]) checkEvents(s.events, lexicon);
  const g = q.groupBy;
  if (g && (g.kind === 'event_property' || g.kind === 'user_property')) {
    const known =
      g.kind === 'user_property' ? lexicon.userProperties.has(g.key) : lexicon.eventsWithKey(g.key).length > 0;
    if (!known)
      throw new NotUnderstood(`No ${g.kind === 'user_property' ? 'user' : 'event'} has a property "${g.key}".`, [
        g.key,
      ]);
  }
}
