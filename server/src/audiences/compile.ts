// Compiles a segment definition to a parameterised SQL condition over the app's `users` row
// (alias `u`) and its `events`. Every value (event names, property keys and values, dates, the
// current time, the time zone) is a bound parameter; only fixed keywords are written into the
// text. Bot events never count. Relative times resolve against `now` at each evaluation.
import type { Knex } from 'knex';
import { type Condition, type Instant, type PropertyValue, type Range, USER_COLUMNS } from './ast.js';

export interface CompileContext {
  /** The evaluation time (ctx.clock()). */
  now: Date;
  /** IANA time zone of the organization: calendar days, weeks and months start there. */
  timeZone: string;
}

export interface SqlFragment {
  sql: string;
  bindings: Knex.Value[];
}

const INTERVAL_FIELD = { hour: 'hours', day: 'days', week: 'weeks', month: 'months', year: 'years' } as const;
/** Text that is a plain decimal number (bound as a parameter: a literal `?` would read as one). */
const NUMERIC_TEXT = '^-?[0-9]+(\\.[0-9]+)?$';

class Compiler {
  readonly bindings: Knex.Value[] = [];
  constructor(private readonly cc: CompileContext) {}

  private bind(value: Knex.Value): string {
    this.bindings.push(value);
    return '?';
  }

  instant(i: Instant): string {
    if ('ago' in i) {
      return `(${this.bind(this.cc.now.toISOString())}::timestamptz - make_interval(${INTERVAL_FIELD[i.unit]} => ${this.bind(i.ago)}::int))`;
    }
    if ('date' in i) {
      return `((${this.bind(i.date)}::date + ${this.bind(i.shift ?? 0)}::int)::timestamp at time zone ${this.bind(this.cc.timeZone)}::text)`;
    }
    if ('at' in i) return `${this.bind(i.at)}::timestamptz`;
    const now = this.bind(this.cc.now.toISOString());
    const tz = this.bind(this.cc.timeZone);
    const back = this.bind(i.back);
    return `(date_trunc('${i.start}', (${now}::timestamptz at time zone ${tz}::text) - make_interval(${INTERVAL_FIELD[i.start]} => ${back}::int)) at time zone ${this.bind(this.cc.timeZone)}::text)`;
  }

  range(column: string, r: Range | undefined): string {
    const parts: string[] = [];
    if (r?.from) parts.push(`${column} >= ${this.instant(r.from)}`);
    if (r?.to) parts.push(`${column} < ${this.instant(r.to)}`);
    return parts.length ? ` and ${parts.join(' and ')}` : '';
  }

  condition(c: Condition): string {
    switch (c.type) {
      case 'all':
        return 'true';
      case 'and':
      case 'or':
        return `(${c.of.map((x) => this.condition(x)).join(` ${c.type} `)})`;
      case 'not':
        return `not coalesce(${this.condition(c.of)}, false)`;
      case 'event':
        return this.event(c);
      case 'active':
        return `exists (select 1 from events e where e.app_id = u.app_id and e.user_id = u.id and not e.is_bot${this.range('e.created_at', c.range)})`;
      case 'inactive': {
        const since = this.instant(c.since);
        const again = this.instant(c.since);
        return `(u.created_at < ${since} and not exists (select 1 from events e where e.app_id = u.app_id and e.user_id = u.id and not e.is_bot and e.created_at >= ${again}))`;
      }
      case 'signed_up':
        return `(true${this.range('u.created_at', c.range)})`;
      case 'has':
        return `coalesce(u.${c.field}, '') <> ''`;
      case 'property':
        return this.property(c);
    }
  }

  private event(c: Extract<Condition, { type: 'event' }>): string {
    const matching = () =>
      `e.app_id = u.app_id and e.event_name = ${this.bind(c.event)} and not e.is_bot${this.range('e.created_at', c.range)}`;
    if (c.max === null && c.min <= 1) {
      if (c.min === 0) return 'true';
      return `exists (select 1 from events e where e.user_id = u.id and ${matching()})`;
    }
    if (c.max === 0) return `not exists (select 1 from events e where e.user_id = u.id and ${matching()})`;
    // The HAVING clause's parameters come after the WHERE clause's: build it when its turn comes.
    const grouped = (having: () => string) =>
      `u.id in (select e.user_id from events e where ${matching()} group by e.user_id having ${having()})`;
    const max = c.max;
    if (c.min === 0) return `not coalesce(${grouped(() => `count(*) > ${this.bind(max)}`)}, false)`;
    return grouped(() =>
      max === null
        ? `count(*) >= ${this.bind(c.min)}`
        : `count(*) >= ${this.bind(c.min)} and count(*) <= ${this.bind(max)}`,
    );
  }

  private property(c: Extract<Condition, { type: 'property' }>): string {
    const column = USER_COLUMNS[c.key.toLowerCase()];
    const text = () => (column ? `u.${column}` : `(u.properties ->> ${this.bind(c.key)})`);
    const json = () => `(u.properties -> ${this.bind(c.key)})`;
    const eq = (v: PropertyValue): string => {
      if (typeof v === 'number' && !column)
        return `(${json()} = to_jsonb(${this.bind(v)}::numeric) or ${text()} = ${this.bind(String(v))})`;
      return `lower(${text()}) = lower(${this.bind(String(v))})`;
    };
    const values = Array.isArray(c.value) ? c.value : c.value === undefined ? [] : [c.value];
    const first = values[0] ?? '';
    switch (c.op) {
      case 'eq':
        return eq(first);
      case 'neq':
        return `not coalesce(${eq(first)}, false)`;
      case 'in':
        return `(${values.map(eq).join(' or ')})`;
      case 'contains':
      case 'not_contains': {
        const contains = column
          ? `strpos(lower(u.${column}), lower(${this.bind(String(first))})) > 0`
          : `(strpos(lower(case when jsonb_typeof(${json()}) = 'string' then ${text()} end), lower(${this.bind(String(first))})) > 0
             or exists (select 1 from jsonb_array_elements_text(case when jsonb_typeof(${json()}) = 'array' then ${json()} else '[]'::jsonb end) as x(v)
                        where lower(x.v) = lower(${this.bind(String(first))})))`;
        return c.op === 'contains' ? contains : `not coalesce(${contains}, false)`;
      }
      case 'starts_with':
        return `starts_with(lower(${text()}), lower(${this.bind(String(first))}))`;
      case 'ends_with':
        return `right(lower(${text()}), char_length(${this.bind(String(first))})) = lower(${this.bind(String(first))})`;
      case 'gt':
      case 'gte':
      case 'lt':
      case 'lte': {
        const op = { gt: '>', gte: '>=', lt: '<', lte: '<=' }[c.op];
        const number = `(case when jsonb_typeof(${json()}) = 'number' then (${text()})::numeric
          when jsonb_typeof(${json()}) = 'string' and ${text()} ~ ${this.bind(NUMERIC_TEXT)} then (${text()})::numeric end)`;
        return `coalesce(${number} ${op} ${this.bind(Number(first))}::numeric, false)`;
      }
      case 'exists':
        return column ? `coalesce(u.${column}, '') <> ''` : `coalesce(jsonb_typeof(${json()}), 'null') <> 'null'`;
      case 'not_exists':
        return column ? `coalesce(u.${column}, '') = ''` : `coalesce(jsonb_typeof(${json()}), 'null') = 'null'`;
    }
  }
}

/** The definition's condition on `u` (a row of `users`), with its bindings in order. */
export function compileCondition(where: Condition, cc: CompileContext): SqlFragment {
  const compiler = new Compiler(cc);
  const sql = compiler.condition(where);
  return { sql, bindings: compiler.bindings };
}
