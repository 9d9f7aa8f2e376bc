// Filters on properties, for both parsers: "plan is premium", "country is not US", "premium plan",
// "non-US", "ios or android", "whose email ends with @example.com", "email exists".
import type { Filter, Op, Scalar } from './ast.js';
import { isFiller, isRole, markUsed, roleOf, targetsOf } from './mention-roles.js';
import type { Tagged } from './mentions.js';
import { NotUnderstood } from './not-understood.js';
import { FILLERS } from './words.js';

export interface FilterSpec extends Filter {
  /** Keys the value may belong to when a bare value is ambiguous. */
  candidates?: string[];
  /** A user column (email, phone, user_id). */
  field?: boolean;
  at: number;
}

const VALUE_SEPARATORS = ['or', 'and'];

/** Finds property filters ("plan is premium", "premium plan", "non-US", "ios or android"). */
export function takeFilters(ms: Tagged[]): FilterSpec[] {
  return [...keyThenValues(ms), ...valueThenKey(ms), ...bareValues(ms)];
}

/** The operator after a key ("is", "is not", "one of", "contains", "!=") and where its values start. */
function operatorAt(ms: Tagged[], k: number, key: string): { op: Op; k: number } | null {
  const o = ms[k];
  if (isRole(o, 'is', 'cmp:eq') || (o?.kind === 'symbol' && (o.raw === '=' || o.raw === '==' || o.raw === ':'))) {
    let op: Op = 'eq';
    k++;
    if (isRole(ms[k], 'not')) {
      op = 'neq';
      k++;
    }
    if (isRole(ms[k], 'one_of')) {
      op = op === 'neq' ? 'not_in' : 'in';
      k++;
    }
    if (roleOf(ms[k]).startsWith('op:')) {
      op = roleOf(ms[k]).slice(3) as Op;
      k++;
    }
    return { op, k };
  }
  if (isRole(o, 'is_not') || (o?.kind === 'symbol' && (o.raw === '!=' || o.raw === '<>'))) {
    if (isRole(ms[k + 1], 'one_of')) return { op: 'not_in', k: k + 2 };
    return { op: 'neq', k: k + 1 };
  }
  if (isRole(o, 'one_of')) return { op: 'in', k: k + 1 };
  if (roleOf(o).startsWith('op:')) return { op: roleOf(o).slice(3) as Op, k: k + 1 };
  if (isRole(o, 'not') && roleOf(ms[k + 1]).startsWith('op:')) {
    const inner = roleOf(ms[k + 1]).slice(3);
    const op = inner === 'contains' ? 'not_contains' : inner === 'exists' ? 'not_exists' : null;
    return op ? { op, k: k + 2 } : null;
  }
  if (o && !o.used && targetsOf(o, 'value').some((t) => t.kind === 'value' && t.key === key)) return { op: 'eq', k };
  return null;
}

/** The values from k on ("premium", "FR or DE", "ios, android"); returns them and the index after. */
function valuesAt(ms: Tagged[], k: number, key: string, op: Op): { values: Scalar[]; end: number } {
  const values: Scalar[] = [];
  let end = k;
  for (;;) {
    const v = ms[end];
    if (!v || v.used) break;
    const value = valueFor(v, key);
    if (value === null) break;
    values.push(value);
    end++;
    if (
      (isRole(ms[end], ...VALUE_SEPARATORS) || (ms[end]?.kind === 'symbol' && ms[end]!.raw === ',')) &&
      ms[end + 1] &&
      valueFor(ms[end + 1]!, key) !== null &&
      (op === 'in' || op === 'not_in' || op === 'eq' || op === 'neq')
    ) {
      if (
        op === 'eq' &&
        isRole(ms[end], 'and') &&
        !targetsOf(ms[end + 1], 'value').length &&
        ms[end + 1]!.kind !== 'quoted'
      )
        break;
      end++;
      continue;
    }
    break;
  }
  return { values, end };
}

/** key [is | = | is not | contains | one of ...] value(s) */
function keyThenValues(ms: Tagged[]): FilterSpec[] {
  const out: FilterSpec[] = [];
  const next = (i: number) => {
    let k = i + 1;
    while (k < ms.length && isFiller(ms[k]) && !ms[k]!.used && ms[k]!.kind === 'symbol' && ms[k]!.raw === ':') k++;
    return k;
  };
  for (let i = 0; i < ms.length; i++) {
    const m = ms[i]!;
    if (m.used) continue;
    const keyTargets = targetsOf(m, 'key');
    const fieldTargets = targetsOf(m, 'field');
    if (keyTargets.length !== 1 && fieldTargets.length !== 1) continue;
    const key =
      keyTargets.length === 1 ? (keyTargets[0] as { key: string }).key : (fieldTargets[0] as { field: string }).field;
    const field = keyTargets.length !== 1;
    const read = operatorAt(ms, next(i), key);
    if (!read) continue;
    let { op } = read;
    if (op === 'exists' || op === 'not_exists') {
      out.push({ key, op, values: [], field, at: i });
      markUsed(ms, i, read.k - 1);
      continue;
    }
    const { values, end } = valuesAt(ms, read.k, key, op);
    if (values.length === 0) continue;
    if (values.length > 1) op = op === 'neq' || op === 'not_in' ? 'not_in' : op === 'eq' || op === 'in' ? 'in' : op;
    if (values.length > 1 && op !== 'in' && op !== 'not_in')
      throw new NotUnderstood(`"${m.raw}" takes one value there.`);
    out.push({ key, op, values, field, at: i });
    markUsed(ms, i, end - 1);
  }
  return out;
}

/** value then key: "premium plan", "books category" */
function valueThenKey(ms: Tagged[]): FilterSpec[] {
  const out: FilterSpec[] = [];
  for (let i = 0; i + 1 < ms.length; i++) {
    const v = ms[i]!;
    const k = ms[i + 1]!;
    if (v.used || k.used) continue;
    const keys = targetsOf(k, 'key').map((t) => (t as { key: string }).key);
    const hit = targetsOf(v, 'value').find((t) => t.kind === 'value' && keys.includes(t.key)) as
      | { key: string; values: string[] }
      | undefined;
    if (!hit) continue;
    const negated = negatedBefore(ms, i);
    out.push({ key: hit.key, op: negated ? 'not_in' : 'in', values: hit.values, at: i });
    markUsed(ms, i, i + 1);
    if (negated) negated.used = true;
  }
  return out;
}

/** bare values, in runs: "ios or android", "France, Germany" */
function bareValues(ms: Tagged[]): FilterSpec[] {
  const out: FilterSpec[] = [];
  for (let i = 0; i < ms.length; i++) {
    const v = ms[i]!;
    if (v.used || targetsOf(v, 'value').length === 0) continue;
    const run = [v];
    let j = i + 1;
    while (
      j + 1 < ms.length &&
      (isRole(ms[j], 'or', 'and') || (ms[j]?.kind === 'symbol' && ms[j]!.raw === ',')) &&
      !ms[j + 1]!.used &&
      sharedKeys([...run, ms[j + 1]!]).length > 0
    ) {
      run.push(ms[j + 1]!);
      j += 2;
    }
    const keys = sharedKeys(run);
    const negated = negatedBefore(ms, i);
    const values = (key: string) =>
      run.flatMap((x) =>
        targetsOf(x, 'value')
          .filter((t) => t.kind === 'value' && t.key === key)
          .flatMap((t) => (t as { values: string[] }).values),
      );
    const key = keys[0]!;
    const spec: FilterSpec = { key, op: negated ? 'not_in' : 'in', values: [...new Set(values(key))], at: i };
    if (keys.length > 1) spec.candidates = keys;
    out.push(spec);
    for (const x of ms.slice(i, j)) x.used = true;
    if (negated) negated.used = true;
    i = j - 1;
  }
  return out;
}

function sharedKeys(run: Tagged[]): string[] {
  const sets = run.map((m) => new Set(targetsOf(m, 'value').map((t) => (t as { key: string }).key)));
  return [...sets[0]!].filter((k) => sets.every((s) => s.has(k)));
}

/** A negation word right before a value ("non-US", "not from France", "excluding the US"). */
function negatedBefore(ms: Tagged[], i: number): Tagged | null {
  let k = i - 1;
  while (
    k >= 0 &&
    !ms[k]!.used &&
    isFiller(ms[k]) &&
    ms[k]!.kind === 'word' &&
    ['from', 'in', 'the', 'on', 'of', 'a', 'an'].includes(ms[k]!.raw.toLowerCase())
  )
    k--;
  const m = ms[k];
  return m && !m.used && isRole(m, 'not') ? m : null;
}

function valueFor(m: Tagged, key: string): Scalar | null {
  if (m.kind === 'quoted') return m.text;
  if (m.kind === 'number' && !m.money && !m.percent) return m.value;
  if (m.kind === 'target') {
    const own = m.targets.find((t) => t.kind === 'value' && t.key === key) as { values: string[] } | undefined;
    if (own) return own.values[0]!;
    return m.quoted || m.targets.some((t) => t.kind === 'value') ? m.raw : null;
  }
  if (
    m.kind === 'word' &&
    !FILLERS.has(m.word) &&
    !['and', 'or', 'who', 'whose', 'which', 'where', 'but'].includes(m.word)
  ) {
    return m.raw;
  }
  if (m.kind === 'symbol' && m.raw.startsWith('@')) return m.raw;
  if (m.kind === 'date_text') return m.text;
  return null;
}
