// The checker's size pass: bounds how large every value of a query can get, and refuses a query in
// which one could pass MAX_VALUE_BYTES. Functions such as replace(), lpad() or string_agg() can build
// a huge value from small input, often in one call that no statement timeout interrupts (and that
// can reach PostgreSQL's 1 GB allocation limit). A value's bound comes from its inputs: the
// relations' columns (at most what one request can store), constants as written, and the rule of
// each function, operator and cast (size-rules.ts). Aggregates that collect rows are
// bounded only where the query bounds its rows (LIMIT, VALUES), and a recursive CTE may not make a
// value larger at each step. It runs on trees the checker has already accepted.

import { FUNCTION_COLUMNS, figureColumnName, SCALAR_SET_FUNCTIONS } from './rules.js';
import {
  type Column,
  constantInt,
  entry,
  INF,
  isObject,
  type Json,
  Level,
  names,
  type Relation,
  rename,
  SizeExpressions,
  sval,
} from './size-expr.js';
import { AGGREGATES, COLUMN_BYTES } from './size-rules.js';

const SET_RETURNING = new Set([...Object.keys(FUNCTION_COLUMNS), ...SCALAR_SET_FUNCTIONS, 'regexp_matches']);

export function checkValueSizes(stmt: Json, reject: (message: string) => never): void {
  new SizeWalker(reject).select(stmt.SelectStmt as Json, null);
}

class SizeWalker extends SizeExpressions {
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
}
