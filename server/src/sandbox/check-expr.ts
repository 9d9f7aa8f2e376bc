// The expression half of the sandbox checker (check.ts): every node that can appear in an
// expression, and every way it can reach a function (calls, field selection, operators, casts),
// resolved against the allow-lists in rules.ts. The SELECT half (check-select.ts) extends it.

import type { Scope } from './check-scope.js';
import { type CheckOptions, isObject, type Json, names, onlyFields, reject, sval, unwrap } from './check-tree.js';
import {
  ALLOWED_FUNCTIONS,
  FORBIDDEN_NAMES,
  FUNCTION_COLUMNS,
  MAX_DEPTH,
  OPERATORS,
  PLAIN_NODES,
  REGEX_OPERATORS,
  SQL_VALUE_FUNCTIONS,
  TYPES,
  UNBOUNDED_FUNCTIONS,
} from './rules.js';

/** The bare name of a function, or a rejection for a schema other than pg_catalog. */
export function functionName(funcname: unknown): string {
  const parts = names(funcname).map((p) => p.toLowerCase());
  if (parts.length > 2 || (parts.length === 2 && parts[0] !== 'pg_catalog')) {
    reject(`Schema-qualified function names are not allowed (${parts.join('.')}).`);
  }
  return parts[parts.length - 1] ?? '';
}

export abstract class ExpressionChecker {
  private depth = 0;
  constructor(protected readonly options: CheckOptions) {}

  /** Checks a SELECT and returns its output column names (null where unknowable). */
  abstract select(node: Json, outer: Scope): ReadonlySet<string> | null;

  protected deeper<T>(fn: () => T): T {
    if (++this.depth > MAX_DEPTH) reject('The query is nested too deeply.');
    try {
      return fn();
    } finally {
      this.depth--;
    }
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
