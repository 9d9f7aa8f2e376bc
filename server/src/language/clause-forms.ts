// Forms of a clause about a user that refer to another or split in two: the period of the clause
// before ("but made no purchase that month"), the first time ever ("first-time buyers in May") and
// both of two values ("used both web and iOS": one condition per value).
import type { Condition, Period } from './ast.js';
import { and, type ClauseContext, not } from './clause.js';
import { roleOf, targetsOf } from './mention-roles.js';
import type { Tagged } from './mentions.js';
import { NotUnderstood } from './not-understood.js';

/**
 * "... but made no purchase that month", "the same week": the period of the clause before, when it
 * is one calendar unit of that kind; otherwise a refusal (never a period guessed).
 */
export function samePeriod(run: Tagged[], cx: ClauseContext): { period: Period; raw: string } | null {
  const k = run.findIndex(
    (m, i) => !m.used && /^(that|same)$/i.test(m.raw) && roleOf(run[i + 1]).startsWith('unit:') && !run[i + 1]!.used,
  );
  if (k < 0) return null;
  const unit = roleOf(run[k + 1]).slice(5);
  const prev = cx.previous;
  const period = prev && (prev.type === 'did' || prev.type === 'first_seen') ? prev.period : undefined;
  const raw = `${run[k]!.raw} ${run[k + 1]!.raw}`;
  if (!period || period.unit !== unit || run.some((m) => m.kind === 'period' && !m.used))
    throw new NotUnderstood(`"${raw}": Tally could not tell which ${unit} this is; name it, e.g. "last ${unit}".`, [
      raw,
    ]);
  for (const m of [run[k - 1], run[k], run[k + 1]])
    if (m && (m === run[k] || m === run[k + 1] || /^the$/i.test(m.raw))) m.used = true;
  return { period, raw };
}

/** "Used both web and iOS": the one test of several values made one condition per value. */
export function eachValue(c: Condition): Condition {
  if (c.type === 'and') return and([eachValue(c.of[0]!), ...c.of.slice(1)]);
  if (c.type !== 'did') return c;
  const split = c.filters.filter((f) => f.op === 'in' && f.values.length >= 2);
  if (split.length !== 1) return c;
  const f = split[0]!;
  return and(f.values.map((v) => ({ ...c, filters: c.filters.map((x) => (x === f ? { ...f, values: [v] } : x)) })));
}

/** Did one of `events` in `period` and never before it: the first time ever falls in the period. */
export function firstTime(events: string[], period: Period | undefined, negated: boolean, run: Tagged[]): Condition {
  const numbers = run.some((m) => m.kind === 'number' || (m.kind === 'target' && targetsOf(m, 'value').length > 0));
  if (events.length === 0 || !period?.from || negated || numbers)
    throw new NotUnderstood(
      'Tally reads "first time" as the first ever of an event within a period, e.g. "users who purchased for the first time last month".',
      ['first'],
    );
  const did: Condition = { type: 'did', events, filters: [], period };
  const before: Period = { to: period.from, label: `before ${period.label}` };
  return and([did, not({ type: 'did', events, filters: [], period: before })]);
}
