// Compiles a query AST to parameterised SQL over the sandbox relations `events` and `users`
// ($1 is the app id bound by the sandbox wrapper; the question's values start at $2). Also renders
// the same SQL with the values written in, which is what the API reports as `sql`.
import type { Unit } from '../time.js';
import type { Comparison, Filter, NlQuery } from './ast.js';

export interface CompiledQuery {
  statement: string;
  params: unknown[];
  /** The statement with its parameters written in as literals. */
  display: string;
}

const LABELS: Record<Unit, string> = {
  hour: `'YYYY-MM-DD"T"HH24:00'`,
  day: `'YYYY-MM-DD'`,
  week: `'YYYY-MM-DD'`,
  month: `'YYYY-MM-DD'`,
};

const quoteIdent = (s: string) => `"${s.replace(/"/g, '""')}"`;
const quoteLiteral = (v: unknown) => (typeof v === 'number' ? String(v) : `'${String(v).replace(/'/g, "''")}'`);
const columnName = (s: string) => s.replace(/[^A-Za-z0-9_]/g, '_').toLowerCase();

export function compile(query: NlQuery, timeZone: string, now: Date): CompiledQuery {
  const params: unknown[] = [];
  const p = (value: unknown, cast: string) => {
    params.push(value);
    return `$${params.length + 1}::${cast}`;
  };
  const numeric = (property: string) =>
    `(case when jsonb_typeof(properties -> ${p(property, 'text')}) = 'number' then (properties ->> ${p(property, 'text')})::numeric end)`;

  const where: string[] = [];
  const fromUsers = query.measure.kind === 'new_users';
  if (query.range) {
    if (query.range.kind === 'hours') {
      where.push(
        `created_at >= ${p(new Date(now.getTime() - query.range.hours * 3_600_000).toISOString(), 'timestamptz')}`,
      );
    } else {
      const tz = p(timeZone, 'text');
      where.push(`created_at >= (${p(query.range.from, 'timestamp')} at time zone ${tz})`);
      const end = new Date(`${query.range.to}T00:00:00Z`);
      end.setUTCDate(end.getUTCDate() + 1);
      where.push(`created_at < (${p(end.toISOString().slice(0, 10), 'timestamp')} at time zone ${tz})`);
    }
  }
  if (query.events.length === 1) where.push(`event_name = ${p(query.events[0], 'text')}`);
  else if (query.events.length > 1) where.push(`event_name in (${query.events.map((e) => p(e, 'text')).join(', ')})`);
  for (const f of query.filters) where.push(filterSql(f, p, numeric));
  const whereSql = where.length > 0 ? `\nwhere ${where.join('\n  and ')}` : '';
  const table = fromUsers ? 'users' : 'events';

  let sql: string;
  if (query.users) {
    const list = `select user_id, count(*) as event_count from events${whereSql}\ngroup by user_id\nhaving count(*) ${query.users.op} ${p(query.users.n, 'bigint')}`;
    sql = query.users.countOnly
      ? `select count(*) as users from (\n${list}\n) as matching`
      : `${list}\norder by event_count desc, user_id`;
  } else {
    const m = query.measure;
    const measure =
      m.kind === 'count'
        ? 'count(*) as count'
        : m.kind === 'users'
          ? 'count(distinct user_id) as unique_users'
          : m.kind === 'new_users'
            ? 'count(*) as new_users'
            : m.kind === 'sum'
              ? `coalesce(sum(${numeric(m.property)}), 0) as ${quoteIdent(`total_${columnName(m.property)}`)}`
              : m.kind === 'avg'
                ? `round(avg(${numeric(m.property)}), 2) as ${quoteIdent(`average_${columnName(m.property)}`)}`
                : `${m.kind}(${numeric(m.property)}) as ${quoteIdent(`${m.kind}_${columnName(m.property)}`)}`;
    const measureColumn = measure.slice(measure.lastIndexOf(' as ') + 4);
    const g = query.groupBy;
    if (!g) {
      sql = `select ${measure} from ${table}${whereSql}`;
    } else if (g.kind === 'time') {
      const key = `to_char(date_trunc('${g.unit}', created_at at time zone ${p(timeZone, 'text')}), ${LABELS[g.unit]})`;
      sql = `select ${key} as ${g.unit}, ${measure} from ${table}${whereSql}\ngroup by 1\norder by 1`;
    } else {
      const [key, name] =
        g.kind === 'event'
          ? ['event_name', 'event_name']
          : g.kind === 'user'
            ? ['user_id', 'user_id']
            : [`properties ->> ${p(g.property, 'text')}`, quoteIdent(columnName(g.property))];
      const notNull = g.kind === 'property' ? `${whereSql ? '\n  and' : '\nwhere'} ${key} is not null` : '';
      sql = `select ${key} as ${name}, ${measure} from ${table}${whereSql}${notNull}\ngroup by 1\norder by ${measureColumn} desc nulls last, 1`;
    }
    if (query.top !== null) sql += `\nlimit ${p(query.top, 'bigint')}`;
  }
  const display = sql.replace(/\$(\d+)::(\w+)/g, (_, n: string, cast: string) => {
    const v = params[Number(n) - 2];
    return cast === 'text' || cast === 'bigint' ? quoteLiteral(v) : `${quoteLiteral(v)}::${cast}`;
  });
  return { statement: sql, params, display };
}

function filterSql(f: Filter, p: (v: unknown, cast: string) => string, numeric: (prop: string) => string): string {
  const numericValue = /^-?\d+(\.\d+)?$/.test(f.value);
  if (numericValue && f.op !== '=' && f.op !== '!=') {
    return `${numeric(f.property)} ${f.op} ${p(f.value, 'numeric')}`;
  }
  if (f.op === '=' || f.op === '!=') {
    const cmp: Comparison = f.op;
    const eq = `lower(properties ->> ${p(f.property, 'text')}) = lower(${p(f.value, 'text')})`;
    return cmp === '=' ? eq : `not coalesce(${eq}, false)`;
  }
  return `properties ->> ${p(f.property, 'text')} ${f.op} ${p(f.value, 'text')}`;
}
