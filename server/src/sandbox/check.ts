// The first layer of the SQL sandbox: a checker over the real PostgreSQL parse tree (libpg-query).
// It is an allow-list twice over: every node type must be one this file knows, and every field of
// a node that holds a subtree must be one this file walks, so nothing the parser produces is
// skipped. Every way of reaching a function is resolved against the function allow-list: calls,
// field selection (`x.f` and `(expr).f` are calls of f(x) unless f is a known column), operators
// (allow-listed by name) and casts (allow-listed types, whose input functions are harmless). The
// statement that runs is printed back from the checked tree (pgsql-deparser), re-parsed and compared
// with it, so the text PostgreSQL executes is exactly the tree that was checked.
// Embedded mode (PGlite) also refuses what only a statement timeout could bound: recursive CTEs,
// generate_series, regular expressions, and joins without an equality between columns.
import { parse } from 'libpg-query';
import { deparseSync } from 'pgsql-deparser';
import {
  ALLOWED_FUNCTIONS,
  FORBIDDEN_NAMES,
  FUNCTION_COLUMNS,
  figureColumnName,
  MAX_DEPTH,
  OPERATORS,
  PLAIN_NODES,
  REGEX_OPERATORS,
  SANDBOX_RELATIONS,
  SCALAR_SET_FUNCTIONS,
  SQL_VALUE_FUNCTIONS,
  TYPES,
  UNBOUNDED_FUNCTIONS,
} from './rules.js';
import { checkValueSizes } from './size.js';

export { ALLOWED_FUNCTIONS, SANDBOX_RELATIONS, UNBOUNDED_FUNCTIONS };

export class SandboxRejection extends Error {}

const reject = (message: string): never => {
  throw new SandboxRejection(message);
};

type Json = Record<string, unknown>;

export interface CheckOptions {
  /** Embedded mode: refuse what only a statement timeout could bound. */
  embedded: boolean;
}

/** A FROM item visible by name: its output columns, or null when they cannot be known statically. */
interface Item {
  columns: ReadonlySet<string> | null;
}

class Scope {
  readonly items = new Map<string, Item>();
  readonly ctes = new Map<string, ReadonlySet<string> | null>();
  constructor(readonly parent: Scope | null) {}

  item(name: string): Item | undefined {
    return this.items.get(name) ?? this.parent?.item(name);
  }

  /** The same scope without its FROM items: what a subquery in FROM that is not LATERAL sees. */
  withoutItems(): Scope {
    const s = new Scope(this.parent);
    for (const [k, v] of this.ctes) s.ctes.set(k, v);
    return s;
  }

  cte(name: string): ReadonlySet<string> | null | undefined {
    if (this.ctes.has(name)) return this.ctes.get(name);
    return this.parent?.cte(name);
  }
}

const sval = (n: unknown): string | undefined => ((n as Json | undefined)?.String as Json | undefined)?.sval as string;
const names = (list: unknown): string[] => ((list as unknown[] | undefined) ?? []).map((n) => sval(n) ?? '');
const isObject = (v: unknown): v is Json => v !== null && typeof v === 'object' && !Array.isArray(v);

/** The only node of a wrapped `{Type: {...}}` value. */
function unwrap(value: unknown, where: string): [string, Json] {
  if (!isObject(value)) return reject(`Unexpected ${where} in the query.`);
  const keys = Object.keys(value);
  if (keys.length !== 1 || !/^[A-Z]/.test(keys[0]!)) return reject(`Unexpected ${where} in the query.`);
  return [keys[0]!, value[keys[0]!] as Json];
}

/**
 * Refuses any field holding a subtree (object or array) that is not listed: the checker must
 * never skip a part of the tree it does not understand. Scalar fields (locations, flags, enum
 * names) carry no code.
 */
function onlyFields(node: Json, kind: string, allowed: readonly string[]): void {
  for (const [key, value] of Object.entries(node)) {
    if (value !== null && typeof value === 'object' && !allowed.includes(key)) {
      reject(`${kind} with ${key} is not allowed in the sandbox.`);
    }
  }
}

/**
 * Parses `sql` and checks it. Returns the statement to run, printed from the checked tree.
 * Throws SandboxRejection with a reason written for the caller.
 */
export async function checkSandboxSql(sql: string, options: CheckOptions): Promise<string> {
  const stmt = await parseOne(sql);
  new Checker(options).statement(stmt);
  checkValueSizes(stmt, reject);
  let printed: string;
  try {
    printed = deparseSync(stmt, { pretty: false });
  } catch {
    return reject('The query uses syntax the sandbox cannot print back safely; simplify it.');
  }
  // What runs must be exactly what was checked: the printed text parses to the same tree.
  const reparsed = await parseOne(printed).catch(() => null);
  if (!reparsed || JSON.stringify(withoutLocations(reparsed)) !== JSON.stringify(withoutLocations(stmt))) {
    return reject('The query uses syntax the sandbox cannot print back safely; simplify it.');
  }
  return printed;
}

async function parseOne(sql: string): Promise<Json> {
  let parsed: Awaited<ReturnType<typeof parse>>;
  try {
    parsed = await parse(sql);
  } catch (err) {
    return reject(`The SQL does not parse: ${(err as Error).message}.`);
  }
  const stmts = parsed.stmts ?? [];
  if (stmts.length === 0) return reject('The query is empty.');
  if (stmts.length > 1) return reject('Send one statement only; this query has several.');
  const stmt = (stmts[0] as { stmt: Json }).stmt;
  const kind = Object.keys(stmt)[0]!;
  if (kind !== 'SelectStmt') return reject(`Only SELECT queries are allowed; this is ${describeStatement(kind)}.`);
  return stmt;
}

function withoutLocations(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutLocations);
  if (!isObject(value)) return value;
  const out: Json = {};
  for (const key of Object.keys(value).sort()) {
    if (/location$|list_(start|end)$|^stmt_len$/.test(key)) continue;
    out[key] = withoutLocations(value[key]);
  }
  return out;
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
    : isObject(v) && ('ColumnRef' in v || Object.values(v).some(mentionsColumn));

/** True when the condition is, or is an AND of terms including, `<column expr> = <column expr>`. */
function hasColumnEquality(quals: Json): boolean {
  const bool = quals.BoolExpr as Json | undefined;
  if (bool) return bool.boolop === 'AND_EXPR' && ((bool.args as Json[]) ?? []).some(hasColumnEquality);
  const expr = quals.A_Expr as Json | undefined;
  return (
    expr?.kind === 'AEXPR_OP' && names(expr.name)[0] === '=' && mentionsColumn(expr.lexpr) && mentionsColumn(expr.rexpr)
  );
}

/** The bare name of a function, or a rejection for a schema other than pg_catalog. */
function functionName(funcname: unknown): string {
  const parts = names(funcname).map((p) => p.toLowerCase());
  if (parts.length > 2 || (parts.length === 2 && parts[0] !== 'pg_catalog')) {
    reject(`Schema-qualified function names are not allowed (${parts.join('.')}).`);
  }
  return parts[parts.length - 1] ?? '';
}

class Checker {
  private depth = 0;
  constructor(private readonly options: CheckOptions) {}

  statement(stmt: Json): void {
    this.select(stmt.SelectStmt as Json, new Scope(null));
  }

  private deeper<T>(fn: () => T): T {
    if (++this.depth > MAX_DEPTH) reject('The query is nested too deeply.');
    try {
      return fn();
    } finally {
      this.depth--;
    }
  }

  /** Checks a SELECT and returns its output column names (null where unknowable). */
  select(node: Json, outer: Scope): ReadonlySet<string> | null {
    return this.deeper(() => {
      onlyFields(node, 'SELECT', [
        'withClause',
        'larg',
        'rarg',
        'fromClause',
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
      ]);
      const scope = new Scope(outer);
      if (node.withClause) this.withClause(node.withClause as Json, scope);
      if (node.larg || node.rarg) {
        const columns = this.select(node.larg as Json, scope);
        this.select(node.rarg as Json, scope);
        for (const key of ['sortClause', 'limitCount', 'limitOffset'] as const) {
          if (node[key] !== undefined) this.expr(node[key], scope);
        }
        return columns;
      }
      const from = (node.fromClause as unknown[] | undefined) ?? [];
      if (this.options.embedded) {
        const relations = from.filter((f) => {
          const [kind, n] = unwrap(f, 'FROM item');
          return kind === 'RangeVar' || kind === 'JoinExpr' || (kind === 'RangeSubselect' && !n.lateral);
        });
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
      ]) {
        if (node[key] !== undefined) this.expr(node[key], scope);
      }
      // DISTINCT alone is a list holding one empty object; DISTINCT ON lists expressions.
      const distinct = ((node.distinctClause as unknown[]) ?? []).filter(
        (d) => !isObject(d) || Object.keys(d).length > 0,
      );
      this.expr(distinct, scope);
      if (node.valuesLists) {
        const rows = node.valuesLists as unknown[];
        for (const row of rows) this.expr(row, scope);
        const width = ((unwrap(rows[0], 'VALUES row')[1].items as unknown[]) ?? []).length;
        return new Set(Array.from({ length: width }, (_, i) => `column${i + 1}`));
      }
      return this.outputColumns((node.targetList as unknown[]) ?? [], scope);
    });
  }

  private withClause(withClause: Json, scope: Scope): void {
    onlyFields(withClause, 'WITH', ['ctes']);
    const recursive = withClause.recursive === true;
    if (recursive && this.options.embedded) {
      reject('Recursive CTEs are refused in embedded mode, where no statement timeout can stop them.');
    }
    const ctes = ((withClause.ctes as unknown[]) ?? []).map((c) => {
      const [kind, cte] = unwrap(c, 'WITH item');
      if (kind !== 'CommonTableExpr') reject(`${kind} is not allowed in WITH.`);
      onlyFields(cte, 'WITH', ['ctequery', 'aliascolnames']);
      return cte;
    });
    // A recursive CTE can see itself (and later ones); columns come from its column list when given.
    if (recursive) for (const cte of ctes) scope.ctes.set(String(cte.ctename), columnList(cte.aliascolnames));
    for (const cte of ctes) {
      const [kind, query] = unwrap(cte.ctequery, 'WITH query');
      if (kind !== 'SelectStmt') reject(`Data-changing CTEs are not allowed (${describeStatement(kind)} in WITH).`);
      const columns = this.select(query, scope);
      scope.ctes.set(String(cte.ctename), columnList(cte.aliascolnames) ?? columns);
    }
  }

  private fromItem(value: unknown, scope: Scope): void {
    const [kind, node] = unwrap(value, 'FROM item');
    switch (kind) {
      case 'RangeVar': {
        onlyFields(node, 'A table reference', ['alias']);
        const relname = String(node.relname);
        if (node.schemaname || node.catalogname) {
          reject(
            `Schema-qualified names are not allowed (${[node.catalogname, node.schemaname, relname].filter(Boolean).join('.')}); use events or users.`,
          );
        }
        const cte = scope.cte(relname);
        const base = SANDBOX_RELATIONS[relname];
        if (cte === undefined && !base) {
          reject(`Unknown relation "${relname}": the sandbox only has events and users.`);
        }
        const columns = cte !== undefined ? cte : new Set(base);
        this.bind(scope, node.alias as Json | undefined, relname, columns);
        return;
      }
      case 'RangeSubselect': {
        onlyFields(node, 'A subquery in FROM', ['subquery', 'alias']);
        const [sub, query] = unwrap(node.subquery, 'subquery');
        if (sub !== 'SelectStmt') reject(`${sub} is not allowed in FROM.`);
        // A LATERAL subquery sees the items before it; any other only the enclosing query's.
        const columns = this.select(query, node.lateral ? scope : scope.withoutItems());
        this.bind(scope, node.alias as Json | undefined, undefined, columns);
        return;
      }
      case 'RangeFunction': {
        onlyFields(node, 'A function in FROM', ['functions', 'alias']);
        const functions = (node.functions as unknown[]) ?? [];
        const alias = node.alias as Json | undefined;
        let columns: Set<string> | null = null;
        functions.forEach((f, i) => {
          const [listKind, list] = unwrap(f, 'function in FROM');
          const [call, coldefs] = (listKind === 'List' ? (list.items as unknown[]) : []) ?? [];
          if (isObject(coldefs) && Object.keys(coldefs).length > 0) {
            reject('Column definition lists on functions in FROM are not allowed.');
          }
          const [callKind, fn] = unwrap(call, 'function in FROM');
          if (callKind !== 'FuncCall') reject(`${callKind} is not allowed in FROM.`);
          this.funcCall(fn, scope);
          if (functions.length !== 1 || i !== 0) return; // ROWS FROM(several): columns not tracked
          const name = functionName(fn.funcname);
          if (FUNCTION_COLUMNS[name]) columns = new Set(FUNCTION_COLUMNS[name]);
          else if (SCALAR_SET_FUNCTIONS.has(name)) columns = new Set([alias ? String(alias.aliasname) : name]);
        });
        if (columns && node.ordinality) (columns as Set<string>).add('ordinality');
        this.bind(scope, alias, undefined, columns);
        return;
      }
      case 'JoinExpr': {
        onlyFields(node, 'A join', ['larg', 'rarg', 'quals', 'usingClause', 'alias', 'join_using_alias']);
        const hasCondition = node.quals !== undefined || node.usingClause !== undefined || node.isNatural === true;
        if (!hasCondition && this.options.embedded) {
          reject('Joins without a condition (CROSS JOIN) are refused in embedded mode; use JOIN ... ON.');
        }
        if (this.options.embedded && node.quals !== undefined && !hasColumnEquality(node.quals as Json)) {
          reject('In embedded mode a join needs an equality between columns (JOIN ... ON a.x = b.y).');
        }
        if (node.alias || node.join_using_alias) reject('Aliases on a whole join are not allowed; alias each table.');
        this.fromItem(node.larg, scope);
        this.fromItem(node.rarg, scope);
        for (const n of names(node.usingClause)) if (!n) reject('Unexpected USING list.');
        if (node.quals !== undefined) this.expr(node.quals, scope);
        return;
      }
      default:
        reject(`${kind} is not allowed in FROM.`);
    }
  }

  private bind(
    scope: Scope,
    alias: Json | undefined,
    relname: string | undefined,
    columns: ReadonlySet<string> | null,
  ) {
    if (alias) onlyFields(alias, 'An alias', ['colnames']);
    const name = alias ? String(alias.aliasname) : relname;
    const renamed = alias ? columnList(alias.colnames) : null;
    if (name) scope.items.set(name, { columns: renamed ?? columns });
  }

  /** Output column names of a target list: explicit aliases, else the names PostgreSQL gives. */
  private outputColumns(targets: unknown[], scope: Scope): ReadonlySet<string> | null {
    const out = new Set<string>();
    for (const t of targets) {
      const [, target] = unwrap(t, 'target');
      if (target.name) {
        out.add(String(target.name));
        continue;
      }
      const [kind, val] = unwrap(target.val, 'target');
      const fields = kind === 'ColumnRef' ? ((val.fields as unknown[]) ?? []) : [];
      const last = fields[fields.length - 1];
      if (isObject(last) && 'A_Star' in last) {
        // `*` or `x.*`: every column of the items in view (an unknown item makes the result unknown).
        const items = fields.length === 1 ? [...scope.items.values()] : [scope.item(sval(fields[0]) ?? '')];
        for (const item of items) {
          if (!item?.columns) return null;
          for (const c of item.columns) out.add(c);
        }
      } else out.add(figureColumnName(target.val));
    }
    return out;
  }

  expr(value: unknown, scope: Scope): void {
    if (value === undefined || value === null) return;
    if (Array.isArray(value)) {
      for (const v of value) this.expr(v, scope);
      return;
    }
    const [kind, node] = unwrap(value, 'expression');
    this.deeper(() => this.node(kind, node, scope));
  }

  private node(kind: string, node: Json, scope: Scope): void {
    const plain = PLAIN_NODES[kind];
    if (plain) {
      // Nodes with no behaviour of their own: only their listed subtrees, each checked.
      onlyFields(node, kind, plain);
      for (const field of plain) this.expr(node[field], scope);
      return;
    }
    switch (kind) {
      case 'ColumnRef':
        this.columnRef(node, scope);
        return;
      case 'A_Const':
        onlyFields(node, kind, ['ival', 'fval', 'sval', 'boolval', 'bsval']);
        return;
      case 'TypeCast':
        onlyFields(node, kind, ['arg', 'typeName']);
        this.typeName(node.typeName as Json);
        this.expr(node.arg, scope);
        return;
      case 'FuncCall':
        this.funcCall(node, scope);
        return;
      case 'A_Expr':
        this.aExpr(node, scope);
        return;
      case 'A_Indirection':
        this.indirection(node, scope);
        return;
      case 'SubLink': {
        onlyFields(node, kind, ['testexpr', 'operName', 'subselect']);
        for (const op of names(node.operName)) this.operator(op);
        this.expr(node.testexpr, scope);
        const [sub, query] = unwrap(node.subselect, 'subquery');
        if (sub !== 'SelectStmt') reject(`${sub} is not allowed in a subquery.`);
        this.select(query, scope);
        return;
      }
      case 'SQLValueFunction':
        if (!SQL_VALUE_FUNCTIONS.has(String(node.op))) {
          reject(`${String(node.op).replace('SVFOP_', '').toLowerCase()} is not allowed in the sandbox.`);
        }
        return;
      case 'CollateClause': {
        onlyFields(node, kind, ['arg', 'collname']);
        if (names(node.collname).length !== 1) reject('Schema-qualified collations are not allowed.');
        this.expr(node.arg, scope);
        return;
      }
      case 'SortBy': {
        onlyFields(node, kind, ['node', 'useOp']);
        for (const op of names(node.useOp)) this.operator(op);
        this.expr(node.node, scope);
        return;
      }
      case 'WindowDef':
        this.windowDef(node, scope);
        return;
      case 'ParamRef':
        reject('Parameters ($1) are not allowed: write the values into the query.');
        return;
      case 'SelectStmt':
        this.select(node, scope);
        return;
      default:
        reject(`${kind} is not allowed in the sandbox.`);
    }
  }

  /**
   * A column reference. One name is a column (PostgreSQL never reads it as a call). `x.y` is a call
   * of y(x) unless y is a column of the FROM item x, so it must be one. Longer names are refused.
   */
  private columnRef(node: Json, scope: Scope): void {
    onlyFields(node, 'ColumnRef', ['fields']);
    const fields = (node.fields as unknown[]) ?? [];
    const star = (f: unknown) => isObject(f) && 'A_Star' in f;
    if (fields.length === 1) return;
    if (fields.length === 2) {
      const rel = sval(fields[0]);
      if (rel === undefined) reject('Unexpected column reference.');
      const item = scope.item(rel!);
      if (!item) reject(`"${rel}" is not a table of this query; qualify columns with a table name or alias.`);
      if (star(fields[1])) return;
      const column = sval(fields[1]);
      if (column !== undefined && FORBIDDEN_NAMES.has(column.toLowerCase()))
        reject(`"${rel}.${column}" is not allowed.`);
      if (column !== undefined && item!.columns?.has(column)) return;
      reject(
        item!.columns
          ? `"${rel}" has no column "${column}" (it has ${[...item!.columns].join(', ')}).`
          : `The columns of "${rel}" cannot be checked; give it a column list (AS ${rel}(a, b)).`,
      );
    }
    reject(`Names with more than two parts (${fields.map((f) => sval(f) ?? '*').join('.')}) are not allowed.`);
  }

  /** `(expr)[i]`, `(expr).*`, and `(f(x)).column` for set-returning functions with known columns. */
  private indirection(node: Json, scope: Scope): void {
    onlyFields(node, 'A_Indirection', ['arg', 'indirection']);
    const steps = (node.indirection as unknown[]) ?? [];
    steps.forEach((step, i) => {
      const [kind, s] = unwrap(step, 'subscript');
      if (kind === 'A_Indices') {
        onlyFields(s, kind, ['lidx', 'uidx']);
        this.expr(s.lidx, scope);
        this.expr(s.uidx, scope);
        return;
      }
      if (kind === 'A_Star') return;
      if (kind === 'String' && i === 0) {
        const [argKind, arg] = unwrap(node.arg, 'expression');
        const field = String(s.sval);
        if (FORBIDDEN_NAMES.has(field.toLowerCase())) reject(`Field selection .${field} is not allowed.`);
        if (argKind === 'FuncCall' && FUNCTION_COLUMNS[functionName(arg.funcname)]?.includes(field)) return;
        if (argKind === 'ColumnRef') {
          const f = (arg.fields as unknown[]) ?? [];
          const item = f.length === 1 ? scope.item(sval(f[0]) ?? '') : undefined;
          if (item?.columns?.has(field)) return;
        }
      }
      reject('Field selection (expression).name is not allowed here; select the column directly.');
    });
    this.expr(node.arg, scope);
  }

  funcCall(node: Json, scope: Scope): void {
    onlyFields(node, 'FuncCall', ['funcname', 'args', 'agg_order', 'agg_filter', 'over']);
    const name = functionName(node.funcname);
    if (UNBOUNDED_FUNCTIONS.has(name)) {
      if (this.options.embedded) {
        reject(`${name}() is refused in embedded mode, where no statement timeout can stop a runaway query.`);
      }
    } else if (!ALLOWED_FUNCTIONS.has(name)) {
      reject(`The function ${name}() is not allowed in the sandbox.`);
    }
    this.expr(node.args, scope);
    this.expr(node.agg_order, scope);
    this.expr(node.agg_filter, scope);
    if (node.over !== undefined) this.windowDef(node.over as Json, scope);
  }

  private windowDef(node: Json, scope: Scope): void {
    onlyFields(node, 'WindowDef', ['partitionClause', 'orderClause', 'startOffset', 'endOffset']);
    this.expr(node.partitionClause, scope);
    this.expr(node.orderClause, scope);
    this.expr(node.startOffset, scope);
    this.expr(node.endOffset, scope);
  }

  private aExpr(node: Json, scope: Scope): void {
    onlyFields(node, 'A_Expr', ['name', 'lexpr', 'rexpr']);
    const op = names(node.name);
    if (op.length !== 1) reject('Schema-qualified operators are not allowed.');
    if (node.kind === 'AEXPR_SIMILAR') this.regex();
    else if (
      !['AEXPR_BETWEEN', 'AEXPR_NOT_BETWEEN', 'AEXPR_BETWEEN_SYM', 'AEXPR_NOT_BETWEEN_SYM'].includes(String(node.kind))
    ) {
      // A prefix `~` is bitwise NOT, not a regular expression.
      if (node.lexpr === undefined && op[0] === '~') {
        /* bitwise not */
      } else this.operator(op[0]!);
    }
    this.expr(node.lexpr, scope);
    this.expr(node.rexpr, scope);
  }

  private operator(op: string): void {
    if (REGEX_OPERATORS.has(op)) {
      this.regex();
      return;
    }
    if (!OPERATORS.has(op)) reject(`The operator ${op} is not allowed in the sandbox.`);
  }

  private regex(): void {
    if (this.options.embedded) {
      reject('Regular expressions are refused in embedded mode, where no statement timeout can stop them; use LIKE.');
    }
  }

  private typeName(t: Json): void {
    onlyFields(t, 'A type', ['names', 'typmods', 'arrayBounds']);
    if (t.setof || t.pct_type) reject('SETOF and %TYPE are not allowed.');
    const parts = names(t.names).map((p) => p.toLowerCase());
    const name = parts[parts.length - 1] ?? '';
    if (parts.length > 2 || (parts.length === 2 && parts[0] !== 'pg_catalog') || !TYPES.has(name)) {
      reject(`Casting to ${parts.join('.')} is not allowed in the sandbox.`);
    }
    for (const m of (t.typmods as unknown[]) ?? []) {
      const [kind] = unwrap(m, 'type modifier');
      if (kind !== 'A_Const') reject('Type modifiers must be numbers.');
    }
    for (const b of (t.arrayBounds as unknown[]) ?? []) {
      const [kind] = unwrap(b, 'array bound');
      if (kind !== 'Integer') reject('Unexpected array bound.');
    }
  }
}

function columnList(list: unknown): ReadonlySet<string> | null {
  const cols = names(list);
  return cols.length > 0 ? new Set(cols) : null;
}
