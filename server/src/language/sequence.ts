// Sequences (issue 34, family 8): "added to cart then purchased", "viewed electronics and went on to
// buy electronics", "signed up and bought something within 3 days", "made a purchase within 7 days
// of signing up", "what % of users who added to cart went on to purchase". The order word is read
// from the text first and the text is then read as "A and B"; the two conditions on a user that
// reading gives become one sequence (B after A, within the time given). When the reading does not
// hold exactly two such steps, the question is refused: the order is never dropped.
import type { Condition, Query } from './ast.js';
import { NotUnderstood } from './not-understood.js';

export interface SequenceWords {
  /** The order words as written ("then", "went on to", "within 7 days of signing up"). */
  words: string[];
  /** The second step must follow the first within this many hours. */
  withinHours?: number;
}

type Did = Extract<Condition, { type: 'did' }>;

const COUNTS: Record<string, number> = { a: 1, an: 1, one: 1, two: 2, three: 3, four: 4, five: 5, seven: 7, ten: 10 };
const UNIT_HOURS: Record<string, number> = { hour: 1, day: 24, week: 168 };
const SIGNUP = `(?:signing up|sign(?:ing)?[- ]?ups?|their sign[- ]?up|registering|registration|joining)`;
const WITHIN = String.raw`within (\d+|an?|one|two|three|four|five|seven|ten) (hour|day|week)s?`;
const PEOPLE = `(users|people|ppl|customers|accounts|visitors)( who| that)?`;

/** The text with its order words replaced by "and", or null when it has none. */
export function readSequence(text: string, signupEvent?: string): { text: string; seq: SequenceWords } | null {
  // One space for every run of white space first: the patterns below start with `\s*,?\s*`, which
  // would try every split of a long run at every position (2,000 spaces took 40 s).
  let rest = text.replace(/\s+/g, ' ');
  const seq: SequenceWords = { words: [] };
  const take = (re: RegExp, by: string | ((...m: string[]) => string)) => {
    rest = rest.replace(re, (...m: string[]) => {
      seq.words.push(m[0]!.trim());
      return typeof by === 'string' ? by : by(...m);
    });
  };
  // "a purchase within 7 days of signing up": the signup is the first step
  const ofSignup = new RegExp(`\\s*,?\\s*${WITHIN} (?:of|after) ${SIGNUP}(?![\\w])`, 'i');
  const b = ofSignup.exec(rest);
  if (b) {
    seq.withinHours = (COUNTS[b[1]!.toLowerCase()] ?? Number(b[1])) * UNIT_HOURS[b[2]!.toLowerCase()]!;
    take(ofSignup, '');
    const subject = new RegExp(`(?<![\\w])${PEOPLE}\\s+`, 'i');
    if (!subject.test(rest)) throw new NotUnderstood(`"${b[0]!.trim()}": say who, e.g. "how many users ...".`);
    rest = rest.replace(subject, (_m, who: string, rel: string | undefined) => `${who}${rel ?? ''} signed up and `);
  }
  take(/\s*,?\s*(?:and\s+)?(?:then|afterwards?|subsequently|later)(?:\s+(?:went on to|later))?\s+(?=\w)/i, ' and ');
  take(/\s*,?\s*(?:and\s+)?(?:went|go|goes|going) on to\s+/i, ' and ');
  take(/\s*,?\s*(?:and\s+)?followed by\s+/i, ' and ');
  const within = new RegExp(`\\s*,?\\s*${WITHIN}(?: (?:of that|after that|after|later))?(?![\\w])`, 'i');
  const w = within.exec(rest);
  if (w && seq.words.length > 0 && seq.withinHours === undefined) {
    seq.withinHours = (COUNTS[w[1]!.toLowerCase()] ?? Number(w[1])) * UNIT_HOURS[w[2]!.toLowerCase()]!;
    take(within, '');
  }
  // "made a purchase afterwards", "... after that", at the end
  if (seq.words.length === 0)
    take(/\s*,?\s*(?:afterwards?|after that|later on)\s*([?.!]*)\s*$/i, (_m, end) => end ?? '');
  if (seq.words.length === 0) return null;
  // a step of a sequence is an event: "signed up" is the app's signup event, not "first seen"
  if (signupEvent)
    rest = rest.replace(
      /(?<![\w])(?:signed up|signing up|sign up|registered|joined)(?![\w])/gi,
      `did "${signupEvent}"`,
    );
  return { text: rest.replace(/\s+/g, ' ').trim(), seq };
}

/** The reading of "A and B" as "A, then B"; refuses when it is not two steps. */
export function applySequence<T extends Query | Condition>(read: T, seq: SequenceWords): T {
  const said = seq.words.map((w) => `"${w}"`).join(', ');
  let placed = 0;
  const visit = (c: Condition): Condition => {
    if (c.type === 'not') return { type: 'not', of: visit(c.of) };
    if (c.type === 'or') return { type: 'or', of: c.of.map(visit) };
    if (c.type !== 'and') return c;
    const steps = c.of.filter((x): x is Did => x.type === 'did' && !x.times && !x.total);
    if (placed > 0 || steps.length !== 2) return { type: 'and', of: c.of.map(visit) };
    placed++;
    const [a, b] = steps as [Did, Did];
    // one period written once, after both steps: both happened in it
    const first = { ...a, period: a.period ?? b.period };
    const seqc: Condition = {
      type: 'sequence',
      first,
      next: b,
      ...(seq.withinHours !== undefined ? { withinHours: seq.withinHours } : {}),
    };
    const others = c.of.filter((x) => x !== a && x !== b);
    return others.length === 0 ? seqc : { type: 'and', of: [...others, seqc] };
  };
  const refuse = () =>
    new NotUnderstood(
      `Tally could not place the order ${said} between two things users did; ask "how many users did A and then B", naming both.`,
      seq.words,
    );
  if (!('measure' in read)) {
    const out = visit(read as Condition);
    if (placed !== 1) throw refuse();
    return out as T;
  }
  const q = read as Query;
  const m = q.measure;
  if (m.kind === 'ratio' && m.percent && m.numerator.segment) {
    // "what % of users who added to cart went on to purchase": of those who did the first step
    const numerator = visit(m.numerator.segment);
    if (placed !== 1) throw refuse();
    const denominator = firstStepOf(numerator);
    return {
      ...q,
      measure: {
        ...m,
        numerator: { ...m.numerator, segment: numerator },
        denominator: { measure: 'users', events: [], filters: [], segment: denominator },
      },
    } as Query as T;
  }
  if (m.kind !== 'users' || !q.segment || q.groupBy || q.bucket || q.compare) throw refuse();
  const segment = visit(q.segment);
  if (placed !== 1) throw refuse();
  return { ...q, segment } as T;
}

/** The population of a sequence's first step: the condition with the sequence cut to its first step. */
function firstStepOf(c: Condition): Condition {
  if (c.type === 'sequence') return c.first;
  if (c.type === 'and') return { type: 'and', of: c.of.map(firstStepOf) };
  return c;
}
