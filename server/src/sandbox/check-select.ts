// The SELECT half of the sandbox checker (check.ts): set operations, WITH, the FROM items (only the
// sandbox's relations, CTEs, subqueries, allowed functions and joins) with the names each brings
// into scope, and the output columns of a query. Embedded mode also refuses joins that only a
// statement timeout could bound. Expressions are checked by ExpressionChecker (check-expr.ts).
import { ExpressionChecker, functionName } from './check-expr.js';
import { Scope } from './check-scope.js';
import {
  columnList,
  describeStatement,
  isObject,
  type Json,
  names,
  onlyFields,
  reject,
  sval,
  unwrap,
} from './check-tree.js';
import { FUNCTION_COLUMNS, figureColumnName, SANDBOX_RELATIONS, SCALAR_SET_FUNCTIONS } from './rules.js';

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

export class Checker extends ExpressionChecker {
  statement(stmt: Json): void {
    this.select(stmt.SelectStmt as Json, new Scope(null));
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
}
