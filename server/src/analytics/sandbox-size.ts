// The checker's size pass: bounds how large every value of a query can get, and refuses a query in
// which one could pass MAX_VALUE_BYTES. Functions such as replace(), lpad() or string_agg() can build
// a huge value from small input, often in one call that no statement timeout interrupts (and that
// can reach PostgreSQL's 1 GB allocation limit). A value's bound comes from its inputs: the
// relations' columns (at most what one request can store), constants as written, and the rule of
// each function, operator and cast (sandbox-size-rules.ts). Aggregates that collect rows are
// bounded only where the query bounds its rows (LIMIT, VALUES), and a recursive CTE may not make a
// value larger at each step. It runs on trees the checker has already accepted.

import { FUNCTION_COLUMNS, figureColumnName, SCALAR_SET_FUNCTIONS } from './sandbox-rules.js';
import {
  AGGREGATES,
  type Arg,
  COLUMN_BYTES,
  castSize,
  describeBytes,
  MAX_CHAR_LENGTH,
  MAX_VALUE_BYTES,
  numericConstantSize,
  operatorSize,
  SIZE_RULES,
} from './sandbox-size-rules.js';

type Json = Record<string, unknown>;
const INF = Number.POSITIVE_INFINITY;
const BOOL = 5;

interface Column {
  name: string;
  size: number;
}
/** What a FROM item or a SELECT gives: its columns and how many rows it can have. */
interface Relation {
  columns: Column[];
  rows: number;
}

/** One query level: its FROM items, its CTEs and the rows its FROM can produce. */
class Level {
  readonly items = new Map<string, Relation>();
  readonly ctes = new Map<string, Relation>();
  rows = INF;
  constructor(readonly parent: Level | null) {}

  *chain(): Generator<Level> {
    for (let l: Level | null = this; l; l = l.parent) yield l;
  }
}

const isObject = (v: unknown): v is Json => v !== null && typeof v === 'object' && !Array.isArray(v);
const sval = (n: unknown): string | undefined => ((n as Json | undefined)?.String as Json | undefined)?.sval as string;
const names = (list: unknown): string[] => ((list as unknown[] | undefined) ?? []).map((n) => sval(n) ?? '');
const entry = (value: unknown): [string, Json] => {
  const [k, v] = isObject(value) ? (Object.entries(value)[0] ?? ['', {}]) : ['', {}];
  return [k, (v ?? {}) as Json];
};
const quoted = (size: number) => 2 * size + 3;
const rowSize = (r: Relation) => r.columns.reduce((n, c) => n + quoted(c.size), 2);
const SET_RETURNING = new Set([...Object.keys(FUNCTION_COLUMNS), ...SCALAR_SET_FUNCTIONS, 'regexp_matches']);
const WHOLE_ROW_JSON = new Set(['to_jsonb', 'to_json', 'row_to_json']);

/** An integer the query writes as a constant (`5`, `'5'::int`), if the node is one. */
function constantInt(node: unknown): number | undefined {
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

function rename(columns: Column[], aliases: unknown): Column[] {
  const given = names(aliases);
  return columns.map((c, i) => ({ name: given[i] ?? c.name, size: c.size }));
}

export function checkValueSizes(stmt: Json, reject: (message: string) => never): void {
  new SizeWalker(reject).select(stmt.SelectStmt as Json, null);
}

class SizeWalker {
  /** While the arguments of an aggregate are walked: the levels their columns come from. */
  private varLevels: Set<Level> | null = null;
  constructor(private readonly reject: (message: string) => never) {}

  private bounded(size: number, what: string, hint: string): number {
    if (size > MAX_VALUE_BYTES) {
      const reach = Number.isFinite(size) ? `a value of ${describeBytes(size)}` : 'a value of any size';
      this.reject(
        `${what} could build ${reach} from this input; the sandbox refuses values over ${describeBytes(MAX_VALUE_BYTES)}. ${hint}`,
      );
    }
    return size;
  }

  select(node: Json, outer: Level | null): Relation {
    const level = new Level(outer);
    if (node.withClause) this.withClause(node.withClause as Json, level);
    if (node.larg && node.rarg) {
      const l = this.select(node.larg as Json, level);
      const r = this.select(node.rarg as Json, level);
      const columns = l.columns.map((c, i) => ({ name: c.name, size: Math.max(c.size, r.columns[i]?.size ?? 0) }));
      level.rows = l.rows + r.rows;
      this.expr(node.sortClause, level);
      return { columns, rows: this.limited(node, level, level.rows) };
    }
    if (node.valuesLists) {
      const rows = (node.valuesLists as unknown[]).map((row) =>
        ((entry(row)[1].items as unknown[]) ?? []).map((v) => this.expr(v, level)),
      );
      const width = rows[0]?.length ?? 0;
      const columns = Array.from({ length: width }, (_, i) => ({
        name: `column${i + 1}`,
        size: Math.max(0, ...rows.map((r) => r[i] ?? 0)),
      }));
      return { columns, rows: this.limited(node, level, rows.length) };
    }
    let fromRows = 1;
    for (const item of (node.fromClause as unknown[]) ?? []) fromRows *= this.fromItem(item, level);
    level.rows = fromRows;
    const columns = this.targets((node.targetList as unknown[]) ?? [], level);
    for (const key of ['whereClause', 'groupClause', 'havingClause', 'windowClause', 'sortClause', 'distinctClause']) {
      this.expr(node[key], level);
    }
    let rows = fromRows;
    const targets = (node.targetList as unknown[]) ?? [];
    if (targets.some((t) => this.calls(t, (name, call) => SET_RETURNING.has(name) && !call.over))) rows = INF;
    else if (
      ((node.groupClause as unknown[] | undefined) ?? []).length === 0 &&
      [...targets, node.havingClause].some((t) => this.calls(t, (name, call) => AGGREGATES.has(name) && !call.over))
    ) {
      rows = 1;
    }
    return { columns, rows: this.limited(node, level, rows) };
  }

  /** Rows after LIMIT when the query writes the limit as a number. */
  private limited(node: Json, level: Level, rows: number): number {
    this.expr(node.limitCount, level);
    this.expr(node.limitOffset, level);
    const limit = node.limitCount === undefined ? undefined : constantInt(node.limitCount);
    return limit === undefined ? rows : Math.min(rows, Math.max(0, limit));
  }

  /** Whether an expression calls a function matching `test`, outside any subquery. */
  private calls(value: unknown, test: (name: string, call: Json) => boolean): boolean {
    if (Array.isArray(value)) return value.some((v) => this.calls(v, test));
    if (!isObject(value)) return false;
    for (const [key, v] of Object.entries(value)) {
      if (key === 'SubLink' || key === 'SelectStmt') continue;
      if (key === 'FuncCall' && isObject(v) && test(String(names(v.funcname).pop()).toLowerCase(), v)) return true;
      if (this.calls(v, test)) return true;
    }
    return false;
  }

  private withClause(withClause: Json, level: Level): void {
    const recursive = withClause.recursive === true;
    for (const c of (withClause.ctes as unknown[]) ?? []) {
      const cte = entry(c)[1];
      const name = String(cte.ctename);
      const query = entry(cte.ctequery)[1];
      if (recursive && query.larg && query.rarg) {
        level.ctes.set(name, this.recursiveCte(name, query, cte.aliascolnames, level));
      } else {
        const rel = this.select(query, level);
        level.ctes.set(name, { columns: rename(rel.columns, cte.aliascolnames), rows: rel.rows });
      }
    }
  }

  /** A recursive CTE: its values must stop growing after a step or two, or they grow without bound. */
  private recursiveCte(name: string, query: Json, aliases: unknown, level: Level): Relation {
    const seed = this.select(query.larg as Json, level);
    let rel: Relation = { columns: rename(seed.columns, aliases), rows: INF };
    for (let step = 0; step < 4; step++) {
      level.ctes.set(name, rel);
      const next = this.select(query.rarg as Json, level);
      const grown = rel.columns.find((c, i) => (next.columns[i]?.size ?? 0) > c.size);
      if (!grown) return rel;
      if (step === 3) {
        this.reject(
          `The recursive CTE ${name} makes ${grown.name} larger at every step, so its values could grow without bound. Build a value of fixed size at each step.`,
        );
      }
      rel = {
        columns: rel.columns.map((c, i) => ({ name: c.name, size: Math.max(c.size, next.columns[i]?.size ?? 0) })),
        rows: INF,
      };
    }
    return rel;
  }

  /** Binds a FROM item; returns how many rows it can have. */
  private fromItem(value: unknown, level: Level): number {
    const [kind, node] = entry(value);
    const alias = node.alias as Json | undefined;
    const bind = (name: string | undefined, rel: Relation) => {
      const bound = { columns: rename(rel.columns, alias?.colnames), rows: rel.rows };
      if (alias || name) level.items.set(alias ? String(alias.aliasname) : name!, bound);
      return bound.rows;
    };
    switch (kind) {
      case 'RangeVar': {
        const relname = String(node.relname);
        const cte = [...level.chain()].find((l) => l.ctes.has(relname))?.ctes.get(relname);
        const base = COLUMN_BYTES[relname];
        const rel: Relation = cte ?? {
          columns: base ? Object.entries(base).map(([n, size]) => ({ name: n, size })) : [],
          rows: INF,
        };
        return bind(relname, rel);
      }
      case 'RangeSubselect':
        return bind(undefined, this.select(entry(node.subquery)[1], level));
      case 'RangeFunction': {
        const columns: Column[] = [];
        for (const f of (node.functions as unknown[]) ?? []) {
          const [call] = (entry(f)[1].items as unknown[]) ?? [];
          const fn = entry(call)[1];
          const name = String(names(fn.funcname).pop()).toLowerCase();
          const size = this.funcCall(fn, level);
          const outs = FUNCTION_COLUMNS[name] ?? [
            alias && (node.functions as unknown[]).length === 1 ? String(alias.aliasname) : name,
          ];
          for (const out of outs) columns.push({ name: out, size });
        }
        if (node.ordinality) columns.push({ name: 'ordinality', size: 24 });
        return bind(undefined, { columns, rows: INF });
      }
      case 'JoinExpr': {
        const rows = this.fromItem(node.larg, level) * this.fromItem(node.rarg, level);
        this.expr(node.quals, level);
        return rows;
      }
      default:
        return INF;
    }
  }

  private targets(targets: unknown[], level: Level): Column[] {
    const out: Column[] = [];
    for (const t of targets) {
      const target = entry(t)[1];
      const [kind, val] = entry(target.val);
      const fields = kind === 'ColumnRef' ? ((val.fields as unknown[]) ?? []) : [];
      const last = fields[fields.length - 1];
      if (!target.name && isObject(last) && 'A_Star' in last) {
        const rels = fields.length === 1 ? [...level.items.values()] : this.itemsNamed(sval(fields[0]) ?? '', level);
        for (const rel of rels) out.push(...rel.columns);
        continue;
      }
      out.push({
        name: target.name ? String(target.name) : figureColumnName(target.val),
        size: this.expr(target.val, level),
      });
    }
    return out;
  }

  /** FROM items of that name in every level in view (an outer one may be meant). */
  private itemsNamed(name: string, level: Level): Relation[] {
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
        if (isObject(node.sval)) return Buffer.byteLength(String((node.sval as Json).sval ?? ''));
        if (isObject(node.fval)) return numericConstantSize(String((node.fval as Json).fval));
        if (isObject(node.bsval)) return String((node.bsval as Json).bsval).length;
        return 24;
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
      case 'CaseExpr': {
        e(node.arg);
        const results = ((node.args as unknown[]) ?? []).map((w) => {
          const when = entry(w)[1];
          e(when.expr);
          return e(when.result);
        });
        return Math.max(e(node.defresult), ...results);
      }
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
        for (const step of (node.indirection as unknown[]) ?? []) {
          const [k, s] = entry(step);
          if (k === 'A_Indices') {
            e(s.lidx);
            e(s.uidx);
          }
        }
        return e(node.arg);
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
