// Audience definitions written by the first criteria engine (version 1) become conditions of the
// natural-language engine's AST (version 2, language/ast.ts). Periods keep their meaning where
// both engines agree; rolling windows of days become whole days ending today, as everywhere now
// (DESIGN §7). Self-contained on purpose: migrations must not follow later code.
import type { Knex } from 'knex';

// biome-ignore lint/suspicious/noExplicitAny: stored JSON of an older shape, read field by field
type Json = Record<string, any>;

function addDays(date: string, days: number): string {
  const d = new Date(`${date}T00:00:00Z`);
  d.setUTCDate(d.getUTCDate() + days);
  return d.toISOString().slice(0, 10);
}

function anchor(i: Json): Json {
  if ('ago' in i) {
    const n = Number(i.ago);
    if (i.unit === 'hour') return { hours: n };
    if (i.unit === 'day') return { unit: 'day', offset: -(n - 1) };
    if (i.unit === 'week') return { unit: 'day', offset: -(7 * n - 1) };
    return { unit: 'day', offset: 1, months: -(i.unit === 'year' ? 12 * n : n) };
  }
  if ('date' in i) return { date: i.shift ? addDays(i.date, Number(i.shift)) : i.date };
  if ('at' in i) return { date: String(i.at).slice(0, 10) };
  return { unit: i.start, offset: 0 - Number(i.back ?? 0) };
}

function period(r: Json | undefined, label: string): Json | undefined {
  if (!r || (!r.from && !r.to)) return undefined;
  const out: Json = { label };
  if (r.from) out.from = anchor(r.from);
  if (r.to) out.to = anchor(r.to);
  // "last week" / "yesterday": one calendar unit
  if (r.from && 'start' in r.from && r.to && 'start' in r.to && r.from.start === r.to.start) out.unit = r.from.start;
  return out;
}

export function convert(c: Json): Json {
  switch (c.type) {
    case 'all':
      return { type: 'all' };
    case 'and':
    case 'or':
      return { type: c.type, of: (c.of as Json[]).map(convert) };
    case 'not':
      return { type: 'not', of: convert(c.of) };
    case 'event': {
      const p = period(c.range, 'the period of the original criteria');
      const base: Json = { type: 'did', events: [c.event], filters: [], ...(p ? { period: p } : {}) };
      const min = Number(c.min ?? 1);
      const max = c.max === null || c.max === undefined ? null : Number(c.max);
      if (max === 0) return { type: 'not', of: base };
      if (min === 0 && max === null) return { type: 'all' };
      if (min === 0) return { type: 'not', of: { ...base, times: { gt: max } } };
      if (min <= 1 && max === null) return base;
      return { ...base, times: max === null ? { gte: min } : { gte: min, lte: max } };
    }
    case 'active': {
      const p = period(c.range, 'the period of the original criteria');
      return { type: 'did', events: [], filters: [], ...(p ? { period: p } : {}) };
    }
    case 'inactive':
      return { type: 'inactive', period: { from: anchor(c.since), label: 'since the start of inactivity' } };
    case 'signed_up': {
      const p = period(c.range, 'the period of the original criteria');
      return p ? { type: 'first_seen', period: p } : { type: 'all' };
    }
    case 'has':
      return { type: 'user', filter: { key: c.field, op: 'exists', values: [] } };
    case 'property': {
      const values = c.value === undefined ? [] : Array.isArray(c.value) ? c.value : [c.value];
      return { type: 'user', filter: { key: c.key, op: c.op, values } };
    }
    default:
      throw new Error(`unknown version 1 condition ${c.type}`);
  }
}

export async function up(knex: Knex): Promise<void> {
  const rows = await knex('audiences').whereRaw(`definition ->> 'version' = '1'`).select('app_id', 'id', 'definition');
  for (const r of rows) {
    const definition = typeof r.definition === 'string' ? JSON.parse(r.definition) : r.definition;
    await knex('audiences')
      .where({ app_id: r.app_id, id: r.id })
      .update({ definition: JSON.stringify({ version: 2, where: convert(definition.where) }) });
  }
}

export async function down(): Promise<void> {
  // Version 2 conditions have no version 1 equivalent in general: nothing to undo.
}
