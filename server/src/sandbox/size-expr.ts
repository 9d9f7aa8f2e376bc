// The checker's size pass, part two: how large an expression's value can get, given the FROM items
// in view (size.ts walks the queries and binds them). Columns resolve to the largest
// reading over every level in view; a function's size comes from its rule (size-rules.ts),
// an aggregate's from the rows of the level it runs over.
import {
  AGGREGATES,
  type Arg,
  castSize,
  describeBytes,
  MAX_CHAR_LENGTH,
  MAX_VALUE_BYTES,
  numericConstantSize,
  operatorSize,
  SIZE_RULES,
} from './size-rules.js';

export type Json = Record<string, unknown>;
export const INF = Number.POSITIVE_INFINITY;
const BOOL = 5;

export interface Column {
  name: string;
  size: number;
}
/** What a FROM item or a SELECT gives: its columns and how many rows it can have. */
export interface Relation {
  columns: Column[];
  rows: number;
}

/** One query level: its FROM items, its CTEs and the rows its FROM can produce. */
export class Level {
  readonly items = new Map<string, Relation>();
  readonly ctes = new Map<string, Relation>();
  rows = INF;
  constructor(readonly parent: Level | null) {}

  *chain(): Generator<Level> {
    for (let l: Level | null = this; l; l = l.parent) yield l;
  }
}

export const isObject = (v: unknown): v is Json => v !== null && typeof v === 'object' && !Array.isArray(v);
export const sval = (n: unknown): string | undefined =>
  ((n as Json | undefined)?.String as Json | undefined)?.sval as string;
export const names = (list: unknown): string[] => ((list as unknown[] | undefined) ?? []).map((n) => sval(n) ?? '');
export const entry = (value: unknown): [string, Json] => {
  const [k, v] = isObject(value) ? (Object.entries(value)[0] ?? ['', {}]) : ['', {}];
  return [k, (v ?? {}) as Json];
};
export const quoted = (size: number) => 2 * size + 3;
export const rowSize = (r: Relation) => r.columns.reduce((n, c) => n + quoted(c.size), 2);
const WHOLE_ROW_JSON = new Set(['to_jsonb', 'to_json', 'row_to_json']);

/** An integer the query writes as a constant (`5`, `'5'::int`), if the node is one. */
export function constantInt(node: unknown): number | undefined {
  const [kind, n] = entry(node);
  if (kind === 'A_Const') {
    if (isObject(n.ival)) return Number((n.ival as Json).ival ?? 0);
    if (isObject(n.sval) && /^\s*[+-]?\d+\s*$/.test(String((n.sval as Json).sval))) {
      return Number((n.sval as Json).sval);
    }
    return undefined;
  }
  if (kind === 'TypeCast') return constantInt(n.arg);
  return undefined;
}

/** The size of a constant as written; integers and booleans take at most 24 bytes. */
function constantSize(node: Json): number {
  if (isObject(node.sval)) return Buffer.byteLength(String((node.sval as Json).sval ?? ''));
  if (isObject(node.fval)) return numericConstantSize(String((node.fval as Json).fval));
  if (isObject(node.bsval)) return String((node.bsval as Json).bsval).length;
  return 24;
}

export function rename(columns: Column[], aliases: unknown): Column[] {
  const given = names(aliases);
  return columns.map((c, i) => ({ name: given[i] ?? c.name, size: c.size }));
}

export abstract class SizeExpressions {
  /** While the arguments of an aggregate are walked: the levels their columns come from. */
  protected varLevels: Set<Level> | null = null;
  constructor(protected readonly reject: (message: string) => never) {}

  /** The columns and rows of a SELECT (a subquery of an expression). */
  abstract select(node: Json, outer: Level | null): Relation;

  protected bounded(size: number, what: string, hint: string): number {
    if (size > MAX_VALUE_BYTES) {
      const reach = Number.isFinite(size) ? `a value of ${describeBytes(size)}` : 'a value of any size';
      this.reject(
        `${what} could build ${reach} from this input; the sandbox refuses values over ${describeBytes(MAX_VALUE_BYTES)}. ${hint}`,
      );
    }
    return size;
  }

  /** FROM items of that name in every level in view (an outer one may be meant). */
  protected itemsNamed(name: string, level: Level): Relation[] {
    const found: Relation[] = [];
    for (const l of level.chain()) {
      const rel = l.items.get(name);
      if (rel) {
        found.push(rel);
        this.varLevels?.add(l);
      }
    }
    return found;
  }

  /** A column reference: its largest reading over every level in view, to be safe. */
  private columnRef(node: Json, level: Level): number {
    const fields = (node.fields as unknown[]) ?? [];
    const star = (f: unknown) => isObject(f) && 'A_Star' in f;
    if (fields.length === 2) {
      const rels = this.itemsNamed(sval(fields[0]) ?? '', level);
      if (star(fields[1])) return Math.max(0, ...rels.map(rowSize));
      const column = sval(fields[1]);
      return Math.max(0, ...rels.map((r) => r.columns.find((c) => c.name === column)?.size ?? this.widest(r)));
    }
    const name = sval(fields[0]);
    let size = -1;
    for (const l of level.chain()) {
      for (const rel of l.items.values()) {
        const c = rel.columns.find((x) => x.name === name);
        if (c) {
          size = Math.max(size, c.size);
          this.varLevels?.add(l);
        }
      }
    }
    if (size >= 0) return size;
    const whole = this.itemsNamed(name ?? '', level);
    if (whole.length > 0) return Math.max(...whole.map(rowSize));
    // Not found (the checker accepted it): the widest thing it could be.
    return Math.max(0, ...[...level.chain()].flatMap((l) => [...l.items.values()].map(rowSize)));
  }

  private widest(r: Relation): number {
    return r.columns.length === 0 ? INF : Math.max(...r.columns.map((c) => c.size));
  }

  expr(value: unknown, level: Level): number {
    if (value === undefined || value === null) return 0;
    if (Array.isArray(value)) return Math.max(0, ...value.map((v) => this.expr(v, level)));
    if (!isObject(value)) return 0;
    const [kind, node] = entry(value);
    return this.node(kind, node, level);
  }

  private node(kind: string, node: Json, level: Level): number {
    const e = (v: unknown) => this.expr(v, level);
    switch (kind) {
      case 'ColumnRef':
        return this.columnRef(node, level);
      case 'A_Const':
        return constantSize(node);
      case 'TypeCast':
        return this.typeCast(node, e(node.arg));
      case 'FuncCall':
        return this.funcCall(node, level);
      case 'A_Expr':
        return this.aExpr(node, level);
      case 'BoolExpr':
      case 'NullTest':
      case 'BooleanTest':
        e(node.args);
        e(node.arg);
        return BOOL;
      case 'CaseExpr':
        return this.caseExpr(node, level);
      case 'CoalesceExpr':
      case 'MinMaxExpr':
        return e(node.args);
      case 'RowExpr':
        return this.bounded(
          ((node.args as unknown[]) ?? []).reduce<number>((n, a) => n + quoted(e(a)), 2),
          'A ROW(...)',
          'Select the values as columns instead.',
        );
      case 'A_ArrayExpr':
        return this.bounded(
          ((node.elements as unknown[]) ?? []).reduce<number>((n, a) => n + quoted(e(a)), 2),
          'An ARRAY[...]',
          'Select the values as columns instead.',
        );
      case 'A_Indirection':
        return this.indirection(node, level);
      case 'SubLink':
        return this.subLink(node, level);
      case 'CollateClause':
      case 'NamedArgExpr':
      case 'ResTarget':
        return e(node.arg ?? node.val);
      case 'SortBy':
        return e(node.node);
      case 'WindowDef':
        e(node.partitionClause);
        e(node.orderClause);
        e(node.startOffset);
        e(node.endOffset);
        return 0;
      case 'GroupingSet':
        e(node.content);
        return 0;
      case 'GroupingFunc':
        e(node.args);
        return 24;
      case 'List':
        return e(node.items);
      case 'SQLValueFunction':
        return 80;
      case 'SelectStmt':
        return Math.max(0, ...this.select(node, level).columns.map((c) => c.size));
      default:
        return 0;
    }
  }

  /** A CASE: its largest result. */
  private caseExpr(node: Json, level: Level): number {
    const e = (v: unknown) => this.expr(v, level);
    e(node.arg);
    const results = ((node.args as unknown[]) ?? []).map((w) => {
      const when = entry(w)[1];
      e(when.expr);
      return e(when.result);
    });
    return Math.max(e(node.defresult), ...results);
  }

  /** `(expr)[i]` and `(expr).field`: bounded by the value they read from. */
  private indirection(node: Json, level: Level): number {
    for (const step of (node.indirection as unknown[]) ?? []) {
      const [k, s] = entry(step);
      if (k === 'A_Indices') {
        this.expr(s.lidx, level);
        this.expr(s.uidx, level);
      }
    }
    return this.expr(node.arg, level);
  }

  private typeCast(node: Json, from: number): number {
    const t = node.typeName as Json;
    const type = String(names(t.names).pop()).toLowerCase();
    const typmod = constantInt((t.typmods as unknown[] | undefined)?.[0]);
    if (['char', 'bpchar', 'varchar'].includes(type) && typmod !== undefined && typmod > MAX_CHAR_LENGTH) {
      this.reject(
        `Casting to ${type === 'varchar' ? 'varchar' : 'char'}(${typmod}) is not allowed: the sandbox allows lengths up to ${MAX_CHAR_LENGTH.toLocaleString('en')}${type === 'varchar' ? '' : ' (char(n) pads every value to n characters)'}.`,
      );
    }
    const array = ((t.arrayBounds as unknown[]) ?? []).length > 0;
    return this.bounded(
      castSize(type, typmod, array, from),
      `A cast to ${type}${array ? '[]' : ''}`,
      'Cast smaller values.',
    );
  }

  private aExpr(node: Json, level: Level): number {
    const l = node.lexpr === undefined ? undefined : this.expr(node.lexpr, level);
    const r = this.expr(node.rexpr, level);
    if (node.kind === 'AEXPR_NULLIF') return l ?? 0;
    if (node.kind !== 'AEXPR_OP') return BOOL;
    const op = names(node.name)[0] ?? '';
    return this.bounded(
      operatorSize(op, l, r),
      `The operator ${op}`,
      'Concatenate values of known size, or shorten them first (left(x, 1000)).',
    );
  }

  private subLink(node: Json, level: Level): number {
    this.expr(node.testexpr, level);
    const sub = this.select(entry(node.subselect)[1], level);
    const first = sub.columns[0]?.size ?? 0;
    switch (node.subLinkType) {
      case 'EXPR_SUBLINK':
        return first;
      case 'ARRAY_SUBLINK':
        return this.bounded(
          sub.rows * quoted(first) + 2,
          Number.isFinite(sub.rows)
            ? 'ARRAY(subquery)'
            : 'ARRAY(subquery) over a number of rows the query does not bound',
          'Add a LIMIT to the subquery.',
        );
      default:
        return BOOL;
    }
  }

  funcCall(node: Json, level: Level): number {
    const name = String(names(node.funcname).pop()).toLowerCase();
    const aggregate = AGGREGATES.has(name) || node.over !== undefined;
    const outer = this.varLevels;
    if (aggregate) this.varLevels = new Set();
    let args: Arg[];
    let orderBy = 0;
    let seen: Set<Level> | null;
    try {
      const argNodes = (node.args as unknown[]) ?? [];
      if (WHOLE_ROW_JSON.has(name) && argNodes.length === 1) {
        const rel = this.wholeRow(argNodes[0], level);
        if (rel) return rel.columns.reduce((n, c) => n + 6 * c.size + 2 * c.name.length + 8, 2);
      }
      args = argNodes.map((a) => ({ size: this.expr(a, level), int: constantInt(a) }));
      orderBy = this.expr(node.agg_order, level);
      this.expr(node.agg_filter, level);
      if (node.over !== undefined) this.expr({ WindowDef: node.over }, level);
    } finally {
      seen = this.varLevels;
      this.varLevels = outer;
    }
    for (const l of seen ?? []) outer?.add(l);
    // An aggregate runs over the rows of its own level, or of the outer level its arguments come from.
    const rows = aggregate ? Math.max(level.rows, ...[...(seen ?? [])].map((l) => l.rows)) : 1;
    const rule = SIZE_RULES[name];
    if (!rule) return this.reject(`The function ${name}() is not allowed in the sandbox.`);
    const size = rule(args, rows, orderBy);
    const unboundedRows = aggregate && !Number.isFinite(rows) && !Number.isFinite(size);
    return this.bounded(
      size,
      unboundedRows ? `${name}() over a number of rows the query does not bound` : `${name}()`,
      unboundedRows
        ? 'Aggregate at most a fixed number of rows (a subquery with LIMIT), or count them instead.'
        : 'Give it smaller input, or counts and lengths written in the query.',
    );
  }

  /** The FROM item a lone name or `x.*` refers to as a whole row, if that is what the node is. */
  private wholeRow(value: unknown, level: Level): Relation | undefined {
    const [kind, node] = entry(value);
    if (kind !== 'ColumnRef') return undefined;
    const fields = (node.fields as unknown[]) ?? [];
    const name = sval(fields[0]);
    const isStar = fields.length === 2 && isObject(fields[1]) && 'A_Star' in (fields[1] as Json);
    if (fields.length !== 1 && !isStar) return undefined;
    if (
      fields.length === 1 &&
      [...level.chain()].some((l) => [...l.items.values()].some((r) => r.columns.some((c) => c.name === name)))
    ) {
      return undefined; // a column of that name wins over the row
    }
    const rels = this.itemsNamed(name ?? '', level);
    if (rels.length === 0) return undefined;
    return rels.reduce((a, b) => (rowSize(a) >= rowSize(b) ? a : b));
  }
}
