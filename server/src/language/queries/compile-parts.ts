// Building blocks of the natural-language compiler (compile.ts): a statement builder that
// binds every value as a parameter ($1 is the app id, bound by the sandbox; ours start at $2) and
// can print the same statement with its values written in, time bounds resolved against the
// clock in the organization's time zone, property filters, and conditions on a user. Everything
// reads only the sandbox relations `events` and `users` (user_id is the external id in both).
import type { Anchor, Condition, Filter, Period } from '../ast.js';
import { resolveAnchor } from '../periods.js';

export interface CompileContext {
  now: Date;
  timeZone: string;
  /** Local date of `now` in the time zone. */
  today: string;
  /** The property holding money (revenue, amount...), or null. */
  moneyKey: string | null;
  /** The app's configured conversion events (empty: any event carrying revenue). */
  conversionEvents: string[];
  /** First time each event was seen (ISO), for series over all time. */
  firstSeen: (events: string[]) => string | null;
  /**
   * The app's activity rollup can answer (ready in `timeZone`, readable by the sandbox): questions
   * it holds read it instead of raw events (compile-rollup.ts). Absent: raw events.
   */
  rollup?: boolean;
  /**
   * The app's per-event rollup can answer (counted, readable by the sandbox): questions on events
   * by name, time or hour of the day read it (compile-rollup.ts). Absent: raw events.
   */
  eventRollup?: boolean;
  /** The app (`$1` of the statement), written into the statement shown to the caller. */
  appId?: string;
}

export interface CompiledSql {
  statement: string;
  params: unknown[];
  /** The statement with its values written in. */
  display: string;
}

export class Sql {
  readonly params: unknown[] = [];
  private alias = 0;

  constructor(readonly cx: CompileContext) {}

  /** Binds a value: `$n::cast`. */
  p(
    value: unknown,
    cast: 'text' | 'numeric' | 'int' | 'timestamp' | 'timestamptz' | 'jsonb' | 'bigint' | 'date' = 'text',
  ): string {
    this.params.push(value);
    return `$${this.params.length + 1}::${cast}`;
  }

  /** A fresh table alias for correlated subqueries. */
  next(prefix = 'x'): string {
    this.alias += 1;
    return `${prefix}${this.alias}`;
  }

  tz(): string {
    return this.p(this.cx.timeZone);
  }

  /** A local naive timestamp as an instant of the organization's time zone. */
  local(ts: string): string {
    return `(${this.p(ts, 'timestamp')} at time zone ${this.tz()})`;
  }

  anchor(a: Anchor): string {
    const r = resolveAnchor(a, this.cx.today, this.cx.now);
    return 'instant' in r ? this.p(r.instant.toISOString(), 'timestamptz') : this.local(r.local);
  }

  /** ` and col >= from and col < to` for a period (empty without one). */
  period(column: string, period: Period | undefined): string {
    if (!period) return '';
    let out = '';
    if (period.from) out += ` and ${column} >= ${this.anchor(period.from)}`;
    if (period.to) out += ` and ${column} < ${this.anchor(period.to)}`;
    return out;
  }

  /** The statement with its parameters written in as literals (what the API reports as `sql`). */
  display(statement: string): string {
    return statement.replace(/\$(\d+)::(\w+)/g, (all, n: string, cast: string) => {
      if (n === '1') return this.cx.appId ? `'${this.cx.appId}'::${cast}` : all;
      const v = this.params[Number(n) - 2];
      if (cast === 'numeric' || cast === 'int' || cast === 'bigint') return String(v);
      const text = `'${String(v).replace(/'/g, "''")}'`;
      return cast === 'text' ? text : `${text}::${cast}`;
    });
  }

  // ---- values of properties ----------------------------------------------------------------

  text(alias: string, key: string): string {
    return `(${alias}.properties ->> ${this.p(key)})`;
  }

  json(alias: string, key: string): string {
    return `(${alias}.properties -> ${this.p(key)})`;
  }

  /** A property as a number when it is a JSON number (or, for users, numeric text). */
  number(alias: string, key: string, textToo = false): string {
    if (key === '$revenue') return this.money(alias);
    const k = this.p(key);
    const textual = textToo
      ? ` when jsonb_typeof(${alias}.properties -> ${k}) = 'string' and (${alias}.properties ->> ${k}) ~ '^-?[0-9]+(\\.[0-9]+)?$' then (${alias}.properties ->> ${k})::numeric`
      : '';
    return `(case when jsonb_typeof(${alias}.properties -> ${k}) = 'number' then (${alias}.properties ->> ${k})::numeric${textual} end)`;
  }

  /** The money of an event: `revenue`, else `amount` (DESIGN §6), or the app's money property. */
  money(alias: string): string {
    const key = this.cx.moneyKey;
    if (key === 'revenue' || key === 'amount' || key === null) {
      return `coalesce(${this.number(alias, 'revenue')}, ${this.number(alias, 'amount')})`;
    }
    return this.number(alias, key);
  }

  /**
   * ` and` the condition that the event `alias` has a money key, when the money is `revenue` or
   * `amount`: what money that is not null implies, written as the partial index of money events
   * is (migration 032; with the relation's `not is_bot`), so that PostgreSQL may read that index
   * instead of every event of the period. Empty for an app's own money property. (Statements run
   * through the driver, never through knex, which would take `?` for a placeholder.)
   */
  carriesMoney(alias: string): string {
    const key = this.cx.moneyKey;
    if (key !== 'revenue' && key !== 'amount' && key !== null) return '';
    return ` and (${alias}.properties ? 'revenue' or ${alias}.properties ? 'amount')`;
  }

  // ---- filters -------------------------------------------------------------------------------

  /** A filter on the properties (or, for users, the columns) of the row `alias`. */
  filter(alias: string, f: Filter, onUser: boolean): string {
    if (!onUser && (f.key === '$hour' || f.key === '$weekday')) return this.timePartFilter(alias, f);
    const column = onUser && ['email', 'phone', 'user_id'].includes(f.key) ? `${alias}.${f.key}` : null;
    const text = () => column ?? (f.key === '$revenue' ? this.money(alias) : this.text(alias, f.key));
    const eq = (v: string | number | boolean): string => {
      if (typeof v === 'number' && !column) {
        return `(${this.json(alias, f.key)} = to_jsonb(${this.p(v, 'numeric')}) or ${this.text(alias, f.key)} = ${this.p(String(v))})`;
      }
      if (typeof v === 'boolean' && !column)
        return `${this.json(alias, f.key)} = to_jsonb(${this.p(String(v))}::boolean)`;
      return `lower(${text()}) = lower(${this.p(String(v))})`;
    };
    const first = f.values[0] ?? '';
    switch (f.op) {
      case 'eq':
        return eq(first);
      case 'neq':
        return `not coalesce(${eq(first)}, false)`;
      case 'in':
        return `(${f.values.map(eq).join(' or ')})`;
      case 'not_in':
        return `not coalesce((${f.values.map(eq).join(' or ')}), false)`;
      case 'contains':
      case 'not_contains': {
        const contains = column
          ? `strpos(lower(${column}), lower(${this.p(String(first))})) > 0`
          : `(strpos(lower(case when jsonb_typeof(${this.json(alias, f.key)}) = 'string' then ${this.text(alias, f.key)} end), lower(${this.p(String(first))})) > 0
             or exists (select 1 from jsonb_array_elements_text(case when jsonb_typeof(${this.json(alias, f.key)}) = 'array' then ${this.json(alias, f.key)} else '[]'::jsonb end) as el(v)
                        where lower(el.v) = lower(${this.p(String(first))})))`;
        return f.op === 'contains' ? contains : `not coalesce(${contains}, false)`;
      }
      case 'starts_with':
        return `starts_with(lower(${text()}), lower(${this.p(String(first))}))`;
      case 'ends_with':
        return `right(lower(${text()}), char_length(${this.p(String(first))})) = lower(${this.p(String(first))})`;
      case 'gt':
      case 'gte':
      case 'lt':
      case 'lte':
      case 'between': {
        const n = f.key === '$revenue' ? this.money(alias) : this.number(alias, f.key, onUser);
        if (f.op === 'between') {
          return `coalesce(${n} between ${this.p(Number(f.values[0]), 'numeric')} and ${this.p(Number(f.values[1]), 'numeric')}, false)`;
        }
        const op = { gt: '>', gte: '>=', lt: '<', lte: '<=' }[f.op];
        return `coalesce(${n} ${op} ${this.p(Number(first), 'numeric')}, false)`;
      }
      case 'exists':
        return column
          ? `coalesce(${column}, '') <> ''`
          : `coalesce(jsonb_typeof(${this.json(alias, f.key)}), 'null') <> 'null'`;
      case 'not_exists':
        return column
          ? `coalesce(${column}, '') = ''`
          : `coalesce(jsonb_typeof(${this.json(alias, f.key)}), 'null') = 'null'`;
    }
  }

  /** The local hour (0-23) or ISO day of the week (1-7) of an event's time. */
  timePart(alias: string, part: 'hour' | 'isodow'): string {
    return `extract(${part} from ${alias}.created_at at time zone ${this.tz()})::int`;
  }

  /** `$hour` between two hours (inclusive), `$weekday` in a list of days. */
  private timePartFilter(alias: string, f: Filter): string {
    const x = this.timePart(alias, f.key === '$hour' ? 'hour' : 'isodow');
    const n = f.values.map((v) => Number(v)).filter((v) => Number.isInteger(v));
    if (n.length !== f.values.length || n.length === 0) throw new Error(`${f.key} takes whole numbers`);
    if (f.op === 'between') return `${x} between ${this.p(n[0]!, 'int')} and ${this.p(n[1] ?? n[0]!, 'int')}`;
    if (f.op === 'in' || f.op === 'eq') return `${x} in (${n.map((v) => this.p(v, 'int')).join(', ')})`;
    if (f.op === 'not_in' || f.op === 'neq') return `${x} not in (${n.map((v) => this.p(v, 'int')).join(', ')})`;
    throw new Error(`${f.key} takes "between" or "in"`);
  }

  /** `and` of the event conditions: names (any of) and filters. */
  events(alias: string, events: string[], filters: Filter[]): string {
    let out = '';
    if (events.length === 1) out += ` and ${alias}.event_name = ${this.p(events[0]!)}`;
    else if (events.length > 1) out += ` and ${alias}.event_name in (${events.map((e) => this.p(e)).join(', ')})`;
    for (const f of filters) out += ` and ${this.filter(alias, f, false)}`;
    return out;
  }

  // ---- conditions on a user ----------------------------------------------------------------

  /** A condition on the user row `u` (alias). */
  condition(c: Condition, u = 'u'): string {
    switch (c.type) {
      case 'all':
        return 'true';
      case 'and':
      case 'or':
        return `(${c.of.map((x) => this.condition(x, u)).join(` ${c.type} `)})`;
      case 'not':
        return `not coalesce(${this.condition(c.of, u)}, false)`;
      case 'user':
        return this.filter(u, c.filter, true);
      case 'first_seen':
        return `(true${this.period(`${u}.created_at`, c.period)})`;
      case 'inactive': {
        const e = this.next('e');
        const from = c.period.from ? this.anchor(c.period.from) : null;
        if (!from) return 'false';
        return `(${u}.created_at < ${from} and not exists (select 1 from events ${e} where ${e}.user_id = ${u}.user_id${this.period(`${e}.created_at`, c.period)}))`;
      }
      case 'sequence': {
        const a = this.next('e');
        const b = this.next('e');
        const step = (x: string, d: typeof c.first) =>
          `${this.events(x, d.events, d.filters)}${this.period(`${x}.created_at`, d.period)}`;
        const within =
          c.withinHours !== undefined
            ? ` and ${b}.created_at <= ${a}.created_at + make_interval(hours => ${this.p(c.withinHours, 'int')})`
            : '';
        return `exists (select 1 from events ${a} where ${a}.user_id = ${u}.user_id${step(a, c.first)}
          and exists (select 1 from events ${b} where ${b}.user_id = ${a}.user_id${step(b, c.next)} and ${b}.created_at > ${a}.created_at${within}))`;
      }
      case 'did': {
        const e = this.next('e');
        const where = () => `${this.events(e, c.events, c.filters)}${this.period(`${e}.created_at`, c.period)}`;
        if (!c.times && !c.total)
          return `exists (select 1 from events ${e} where ${e}.user_id = ${u}.user_id${where()})`;
        const body = where();
        const having: string[] = [];
        const bound = (expr: string, b: { gt?: number; gte?: number; lt?: number; lte?: number }) => {
          if (b.gt !== undefined) having.push(`${expr} > ${this.p(b.gt, 'numeric')}`);
          if (b.gte !== undefined) having.push(`${expr} >= ${this.p(b.gte, 'numeric')}`);
          if (b.lt !== undefined) having.push(`${expr} < ${this.p(b.lt, 'numeric')}`);
          if (b.lte !== undefined) having.push(`${expr} <= ${this.p(b.lte, 'numeric')}`);
        };
        if (c.times) bound('count(*)', c.times);
        if (c.total) bound(`coalesce(sum(${this.number(e, c.total.key)}), 0)`, c.total);
        return `${u}.user_id in (select ${e}.user_id from events ${e} where true${body} group by ${e}.user_id having ${having.join(' and ') || 'true'})`;
      }
    }
  }
}
