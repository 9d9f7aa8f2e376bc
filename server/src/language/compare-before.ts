// Comparisons with the period just before (issue 34, family 6): "signups in the last 14 days vs
// the 14 days before", "... compared with the previous 14 days", "more purchases yesterday than the
// day before", "did revenue go up this week compared to the week before". The words for "the
// period before" are read from the text first, the rest is read as a question about one period,
// and the comparison is that period and the one of the same length right before it. A comparison
// of a period with itself is refused.
import type { Anchor, Period, Query } from './ast.js';
import { NotUnderstood } from './not-understood.js';

const UNIT = `(?:days?|weeks?|months?|years?|period)`;
const BEFORE = new RegExp(
  String.raw`\s*,?\s*(?:vs\.?|versus|compare[ds]? (?:to|with)|against|than|over)\s+(?:the\s+|that of the\s+)?` +
    String.raw`(?:(?:previous|prior|preceding)\s+(?:\d+\s+)?${UNIT}|(?:\d+\s+|one\s+)?${UNIT}\s+(?:before|prior)(?:\s+(?:that|it|then))?)(?![\w])`,
  'i',
);
/** Trend words of such a comparison: "did revenue go up", "were there more signups". */
const TREND = [
  /(?<![\w])(?:did|has|have|is|are)\s+(.+?)\s+(?:go(?:ne)?\s+(?:up|down)|drop(?:ped)?|rise|risen|grow|grown|fall(?:en)?|increase[d]?|decrease[d]?|decline[d]?|change[d]?)(?![\w])/i,
  /(?<![\w])(?:were|was)\s+there\s+(?:more|fewer|less)\s+/i,
  /(?<![\w])(?:did\s+we\s+(?:get|have|see|make)\s+)?(?:more|fewer|less)\s+(?!than)(?=\w)/i,
];
const VS = /(?<![\w])(?:vs\.?|versus|compared (?:to|with)|than)(?![\w])/i;

/** "did revenue drop this week compared to last week": the trend words of a comparison, dropped. */
export function dropTrendWords(text: string): string {
  if (!VS.test(text)) return text;
  let rest = text;
  for (const re of TREND)
    rest = rest.replace(re, (_all, kept?: string) => (typeof kept === 'string' ? `${kept} ` : ' '));
  return rest.replace(/\s+/g, ' ').trim();
}

/** The text without its "vs the period before" words, or null when it has none. */
export function readCompareBefore(source: string): { text: string; words: string } | null {
  // Runs of white space as one space first (what is returned has them so anyway): BEFORE's
  // optional spaces would otherwise try every split of a long run at every position.
  const text = source.replace(/\s+/g, ' ');
  const m = BEFORE.exec(text);
  if (!m) return null;
  const rest = `${text.slice(0, m.index)} than ${text.slice(m.index + m[0].length)}`;
  return {
    text: dropTrendWords(rest)
      .replace(/(?<![\w])than(?![\w])/i, ' ')
      .replace(/\s+/g, ' ')
      .trim(),
    words: m[0].trim(),
  };
}

const day = (a: Anchor | undefined) => (a && 'unit' in a && a.unit === 'day' && !a.months ? a.offset : null);

/** The period of the same length right before `p`, or null when its length is not a whole unit. */
export function periodBefore(p: Period): Period | null {
  const from = p.from;
  const to = p.to;
  if (!from || !to || !('unit' in from)) return null;
  if (p.unit && !from.months) {
    // a calendar period ("yesterday", "this week", "May"): the whole unit before it
    const start = { unit: p.unit, offset: from.offset - 1 };
    return { from: start, to: { unit: p.unit, offset: from.offset }, label: `the ${p.unit} before`, unit: p.unit };
  }
  const a = day(from);
  const b = day(to);
  if (a === null || b === null || b <= a) return null;
  const n = b - a;
  return { from: { unit: 'day', offset: a - n }, to: { unit: 'day', offset: a }, label: `the ${n} days before` };
}

/** The question as a comparison of its period with the one before; refuses when there is none. */
export function applyCompareBefore(q: Query, words: string): Query {
  if (q.compare || !q.period)
    throw new NotUnderstood(
      `"${words}": name one period to compare with the one before it, e.g. "signups this week vs the week before".`,
      [words],
    );
  const before = periodBefore(q.period);
  if (!before)
    throw new NotUnderstood(
      `Tally cannot tell which period comes right before "${q.period.label}": name both periods with "vs".`,
      [words],
    );
  const { period, ...rest } = q;
  return { ...rest, compare: [period!, before] };
}

/** Refuses a comparison of a period with itself ("the last 14 days vs the previous 14 days" read twice the same). */
export function checkCompare(q: Query): void {
  if (!q.compare) return;
  const seen = new Set<string>();
  for (const p of q.compare) {
    const key = JSON.stringify([p.from, p.to]);
    if (seen.has(key))
      throw new NotUnderstood(
        `This compares "${p.label}" with itself: name two different periods, e.g. "this week vs last week".`,
      );
    seen.add(key);
  }
}
