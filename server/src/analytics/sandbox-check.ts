// Checks one SQL statement, parsed by the real PostgreSQL parser (libpg-query), against the
// sandbox rules: a single SELECT, only the relations `events` and `users` (and the query's own
// CTEs, in scope), no schema-qualified names, functions and types from allow-lists, no locking
// clauses, no INTO, no data-changing CTEs. Embedded mode (PGlite) also refuses what no row cap
// can bound: recursive CTEs, generate_series, regular expressions and joins without a condition.
import { parse } from 'libpg-query';

export class SandboxRejection extends Error {}

const reject = (message: string): never => {
  throw new SandboxRejection(message);
};

const BASE_RELATIONS = ['events', 'users'];

/** Functions the sandbox allows everywhere (bare or pg_catalog-qualified). */
const FUNCTIONS = new Set(
  // aggregates
  (
    'count sum avg min max stddev stddev_pop stddev_samp variance var_pop var_samp bool_and bool_or every ' +
    'string_agg array_agg json_agg jsonb_agg json_object_agg jsonb_object_agg percentile_cont percentile_disc mode ' +
    'corr covar_pop covar_samp regr_slope regr_intercept ' +
    // window
    'row_number rank dense_rank percent_rank cume_dist ntile lag lead first_value last_value nth_value ' +
    // date and time
    'now date_trunc date_part extract age to_char to_date to_timestamp make_date make_time make_interval ' +
    'make_timestamp make_timestamptz timezone date_bin justify_days justify_hours justify_interval isfinite ' +
    'statement_timestamp transaction_timestamp clock_timestamp overlaps ' +
    // numbers
    'abs round ceil ceiling floor trunc sign sqrt cbrt power pow exp ln log log10 mod div width_bucket ' +
    'greatest least pi degrees radians random to_number gcd lcm scale ' +
    // text
    'lower upper length char_length character_length octet_length substr trim btrim ltrim rtrim concat concat_ws ' +
    'replace left right split_part position strpos starts_with initcap reverse md5 format translate ascii chr ' +
    'quote_literal quote_ident to_hex normalize unaccent ' +
    // json
    'jsonb_extract_path jsonb_extract_path_text json_extract_path json_extract_path_text jsonb_typeof json_typeof ' +
    'jsonb_array_length json_array_length jsonb_array_elements jsonb_array_elements_text json_array_elements ' +
    'json_array_elements_text jsonb_each jsonb_each_text json_each json_each_text jsonb_object_keys json_object_keys ' +
    'jsonb_build_object jsonb_build_array json_build_object json_build_array to_jsonb to_json jsonb_strip_nulls ' +
    'jsonb_pretty jsonb_set jsonb_insert row_to_json ' +
    // arrays
    'array_length cardinality unnest array_position array_positions array_to_string string_to_array ' +
    'array_append array_prepend array_cat array_remove array_lower array_upper ' +
    // misc
    'num_nonnulls num_nulls coalesce nullif'
  ).split(/\s+/),
);

/** Allowed on PostgreSQL (bounded by the statement timeout), refused in embedded mode. */
const UNBOUNDED_FUNCTIONS = new Set([
  'generate_series',
  'regexp_replace',
  'regexp_match',
  'regexp_matches',
  'regexp_like',
  'regexp_count',
  'regexp_instr',
  'regexp_substr',
  'regexp_split_to_table',
  'regexp_split_to_array',
  'substring',
  'similar_to_escape',
]);

const TYPES = new Set(
  (
    'text varchar char bpchar name int2 int4 int8 smallint integer int bigint numeric decimal float4 float8 real ' +
    'double bool boolean date time timetz timestamp timestamptz interval json jsonb uuid'
  ).split(' '),
);

const REGEX_OPERATORS = new Set(['~', '~*', '!~', '!~*', '~~~']);

const SQL_VALUE_FUNCTIONS = new Set([
  'SVFOP_CURRENT_DATE',
  'SVFOP_CURRENT_TIME',
  'SVFOP_CURRENT_TIME_N',
  'SVFOP_CURRENT_TIMESTAMP',
  'SVFOP_CURRENT_TIMESTAMP_N',
  'SVFOP_LOCALTIME',
  'SVFOP_LOCALTIME_N',
  'SVFOP_LOCALTIMESTAMP',
  'SVFOP_LOCALTIMESTAMP_N',
]);

/** Expression nodes that carry no behaviour of their own; their children are checked. */
const PLAIN_NODES = new Set([
  'ColumnRef',
  'A_Const',
  'A_Star',
  'String',
  'Integer',
  'Float',
  'Boolean',
  'BitString',
  'BoolExpr',
  'NullTest',
  'BooleanTest',
  'CaseExpr',
  'CaseWhen',
  'CoalesceExpr',
  'MinMaxExpr',
  'A_ArrayExpr',
  'A_Indirection',
  'A_Indices',
  'RowExpr',
  'SortBy',
  'ResTarget',
  'WindowDef',
  'GroupingSet',
  'GroupingFunc',
  'NamedArgExpr',
  'List',
]);

type Json = Record<string, unknown>;
type Scope = ReadonlySet<string>;

export interface CheckOptions {
  /** Embedded mode: refuse what only a statement timeout could bound. */
  embedded: boolean;
}

const names = (list: unknown): string[] =>
  ((list as Json[] | undefined) ?? []).map((n) => ((n.String as Json | undefined)?.sval as string) ?? '');

/**
 * Parses `sql` and checks it. Returns the statement's own text (without a trailing semicolon).
 * Throws SandboxRejection with a reason written for the caller.
 */
export async function checkSandboxSql(sql: string, options: CheckOptions): Promise<string> {
  let parsed: Awaited<ReturnType<typeof parse>>;
  try {
    parsed = await parse(sql);
  } catch (err) {
    return reject(`The SQL does not parse: ${(err as Error).message}.`);
  }
  const stmts = parsed.stmts ?? [];
  if (stmts.length === 0) return reject('The query is empty.');
  if (stmts.length > 1) return reject('Send one statement only; this query has several.');
  const { stmt, stmt_location, stmt_len } = stmts[0] as { stmt: Json; stmt_location?: number; stmt_len?: number };
  const kind = Object.keys(stmt)[0]!;
  if (kind !== 'SelectStmt') return reject(`Only SELECT queries are allowed; this is ${describeStatement(kind)}.`);
  new Checker(options).select(stmt.SelectStmt as Json, new Set(BASE_RELATIONS));
  const start = stmt_location ?? 0;
  // stmt_len is in bytes of UTF-8; slice the bytes so multibyte text stays aligned.
  const bytes = Buffer.from(sql, 'utf8');
  const text = bytes.subarray(start, stmt_len ? start + stmt_len : bytes.length).toString('utf8');
  return text.trim().replace(/;+\s*$/, '');
}

function describeStatement(kind: string): string {
  const plain = kind
    .replace(/Stmt$/, '')
    .replace(/([a-z])([A-Z])/g, '$1 $2')
    .toUpperCase();
  return `a ${plain} statement`;
}

const mentionsColumn = (v: unknown): boolean =>
  Array.isArray(v)
    ? v.some(mentionsColumn)
    : v !== null && typeof v === 'object' && ('ColumnRef' in v || Object.values(v).some(mentionsColumn));

/** True when the condition is, or is an AND of terms including, `<column expr> = <column expr>`. */
function hasColumnEquality(quals: Json): boolean {
  const bool = quals.BoolExpr as Json | undefined;
  if (bool) return bool.boolop === 'AND_EXPR' && ((bool.args as Json[]) ?? []).some(hasColumnEquality);
  const expr = quals.A_Expr as Json | undefined;
  return (
    expr?.kind === 'AEXPR_OP' && names(expr.name)[0] === '=' && mentionsColumn(expr.lexpr) && mentionsColumn(expr.rexpr)
  );
}

class Checker {
  constructor(private readonly options: CheckOptions) {}

  select(node: Json, outer: Scope): void {
    if (node.intoClause) reject('SELECT INTO is not allowed: the sandbox cannot create tables.');
    if (node.lockingClause) reject('Locking clauses (FOR UPDATE, FOR SHARE) are not allowed.');
    const scope = new Set(outer);
    const withClause = node.withClause as Json | undefined;
    if (withClause) {
      const ctes = ((withClause.ctes as Json[]) ?? []).map((c) => c.CommonTableExpr as Json);
      const recursive = withClause.recursive === true;
      if (recursive && this.options.embedded) {
        reject('Recursive CTEs are refused in embedded mode, where no statement timeout can stop them.');
      }
      const all = new Set([...outer, ...ctes.map((c) => String(c.ctename))]);
      for (const cte of ctes) {
        const query = cte.ctequery as Json;
        const kind = Object.keys(query)[0]!;
        if (kind !== 'SelectStmt') reject(`Data-changing CTEs are not allowed (${describeStatement(kind)} in WITH).`);
        this.select(query.SelectStmt as Json, recursive ? all : scope);
        scope.add(String(cte.ctename));
      }
    }
    for (const key of ['larg', 'rarg'] as const) {
      if (node[key]) this.select(node[key] as Json, scope);
    }
    const from = (node.fromClause as Json[] | undefined) ?? [];
    if (this.options.embedded) {
      const relations = from.filter((f) => f.RangeVar || (f.RangeSubselect && !(f.RangeSubselect as Json).lateral));
      if (relations.length > 1) {
        reject(
          'In embedded mode, join relations with JOIN ... ON (a comma-separated FROM is a join without a condition).',
        );
      }
    }
    for (const item of from) this.fromItem(item, scope);
    for (const key of [
      'targetList',
      'whereClause',
      'groupClause',
      'havingClause',
      'windowClause',
      'sortClause',
      'limitCount',
      'limitOffset',
      'distinctClause',
      'valuesLists',
    ]) {
      if (node[key] !== undefined) this.expr(node[key], scope);
    }
  }

  fromItem(item: Json, scope: Scope): void {
    const kind = Object.keys(item)[0]!;
    const node = item[kind] as Json;
    switch (kind) {
      case 'RangeVar': {
        const relname = String(node.relname);
        if (node.schemaname || node.catalogname) {
          reject(
            `Schema-qualified names are not allowed (${[node.catalogname, node.schemaname, relname].filter(Boolean).join('.')}); use events or users.`,
          );
        }
        if (!scope.has(relname)) reject(`Unknown relation "${relname}": the sandbox only has events and users.`);
        return;
      }
      case 'RangeSubselect':
        this.select((node.subquery as Json).SelectStmt as Json, scope);
        return;
      case 'RangeFunction':
        this.expr(node.functions, scope);
        return;
      case 'JoinExpr': {
        const hasCondition = node.quals !== undefined || node.usingClause !== undefined || node.isNatural === true;
        if (!hasCondition && this.options.embedded) {
          reject('Joins without a condition (CROSS JOIN) are refused in embedded mode; use JOIN ... ON.');
        }
        if (this.options.embedded && node.quals !== undefined && !hasColumnEquality(node.quals as Json)) {
          reject('In embedded mode a join needs an equality between columns (JOIN ... ON a.x = b.y).');
        }
        this.fromItem(node.larg as Json, scope);
        this.fromItem(node.rarg as Json, scope);
        if (node.quals !== undefined) this.expr(node.quals, scope);
        return;
      }
      default:
        reject(`${kind} is not allowed in FROM.`);
    }
  }

  expr(value: unknown, scope: Scope): void {
    if (Array.isArray(value)) {
      for (const v of value) this.expr(v, scope);
      return;
    }
    if (value === null || typeof value !== 'object') return;
    const obj = value as Json;
    const keys = Object.keys(obj);
    if (keys.length === 1 && /^[A-Z]/.test(keys[0]!)) {
      this.node(keys[0]!, obj[keys[0]!] as Json, scope);
      return;
    }
    // An unwrapped struct (a typed field such as `over` or `typeName`): check its fields.
    for (const [k, v] of Object.entries(obj)) {
      if (k === 'typeName') this.typeName(v as Json);
      else this.expr(v, scope);
    }
  }

  node(kind: string, node: Json, scope: Scope): void {
    switch (kind) {
      case 'SelectStmt':
        this.select(node, scope);
        return;
      case 'SubLink':
        if (node.testexpr) this.expr(node.testexpr, scope);
        this.select((node.subselect as Json).SelectStmt as Json, scope);
        return;
      case 'FuncCall':
        this.func(node);
        for (const key of ['args', 'agg_order', 'agg_filter', 'over']) {
          if (node[key] !== undefined) this.expr(node[key], scope);
        }
        return;
      case 'TypeCast':
        this.typeName(node.typeName as Json);
        this.expr(node.arg, scope);
        return;
      case 'SQLValueFunction':
        if (!SQL_VALUE_FUNCTIONS.has(String(node.op))) {
          reject(`${String(node.op).replace('SVFOP_', '').toLowerCase()} is not allowed in the sandbox.`);
        }
        return;
      case 'A_Expr': {
        const op = names(node.name);
        if (op.length > 1) reject('Schema-qualified operators are not allowed.');
        if (this.options.embedded && (node.kind === 'AEXPR_SIMILAR' || REGEX_OPERATORS.has(op[0] ?? ''))) {
          reject(
            'Regular expressions are refused in embedded mode, where no statement timeout can stop them; use LIKE.',
          );
        }
        if (node.lexpr !== undefined) this.expr(node.lexpr, scope);
        if (node.rexpr !== undefined) this.expr(node.rexpr, scope);
        return;
      }
      case 'CollateClause':
        this.expr(node.arg, scope);
        return;
      case 'ParamRef':
        reject('Parameters ($1) are not allowed: write the values into the query.');
        return;
      default:
        if (!PLAIN_NODES.has(kind)) reject(`${kind} is not allowed in the sandbox.`);
        for (const v of Object.values(node)) this.expr(v, scope);
    }
  }

  func(node: Json): void {
    const parts = names(node.funcname);
    const name = parts[parts.length - 1]!.toLowerCase();
    const qualified = parts.length > 2 || (parts.length === 2 && parts[0] !== 'pg_catalog');
    if (qualified) reject(`Schema-qualified function names are not allowed (${parts.join('.')}).`);
    if (FUNCTIONS.has(name)) return;
    if (UNBOUNDED_FUNCTIONS.has(name)) {
      if (this.options.embedded) {
        reject(`${name}() is refused in embedded mode, where no statement timeout can stop a runaway query.`);
      }
      return;
    }
    reject(`The function ${name}() is not allowed in the sandbox.`);
  }

  typeName(t: Json): void {
    const parts = names(t.names);
    const name = parts[parts.length - 1]!.toLowerCase();
    if (parts.length > 2 || (parts.length === 2 && parts[0] !== 'pg_catalog') || !TYPES.has(name)) {
      reject(`Casting to ${parts.join('.')} is not allowed in the sandbox.`);
    }
  }
}
