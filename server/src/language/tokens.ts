// The tokenizer of the natural-language engine: splits a question or criteria into words,
// numbers, amounts of money, percentages, ISO dates, quoted names and symbols, keeping each
// token's place in the text (for dates in words and for naming what was not understood).
// Contractions are expanded ("didn't" -> "did not"), and names written with underscores or
// hyphens ("add_to_cart", "add-to-cart") become their words, marked as joined.

export type TokenKind = 'word' | 'number' | 'money' | 'percent' | 'date' | 'quoted' | 'symbol';

export interface Token {
  kind: TokenKind;
  /** As written (a quoted token: without its quotes). */
  raw: string;
  /** Lower case, accents removed (words); the symbol itself (symbols). */
  text: string;
  /** Character offsets of the token in the text. */
  start: number;
  end: number;
  /** Numbers, money and percentages. */
  value?: number;
  /** Numbers written as ordinals ("1st", "22nd"). */
  ordinal?: boolean;
  /** `YYYY-MM-DD` dates, or full ISO 8601 date-times. */
  date?: string;
  /** Joined to the previous token by `_`, `-` or `/` with no space. */
  joined?: boolean;
}

const CONTRACTIONS: Record<string, string[]> = {
  "can't": ['can', 'not'],
  cannot: ['can', 'not'],
  "won't": ['will', 'not'],
  "shan't": ['shall', 'not'],
  "what's": ['what', 'is'],
  "that's": ['that', 'is'],
  "there's": ['there', 'is'],
  "how's": ['how', 'is'],
  "who's": ['who', 'is'],
  "where's": ['where', 'is'],
  "it's": ['it', 'is'],
  "let's": ['let', 'us'],
  // written without the apostrophe
  ...Object.fromEntries(
    ['have', 'has', 'had', 'did', 'do', 'does', 'is', 'was', 'were', 'are', 'could', 'would', 'should'].map((w) => [
      `${w}nt`,
      [w, 'not'],
    ]),
  ),
  dont: ['do', 'not'],
  cant: ['can', 'not'],
  wont: ['will', 'not'],
};

const NUMBER_SUFFIX: Record<string, number> = { k: 1_000, m: 1_000_000 };

const strip = (s: string) => s.normalize('NFD').replace(/[\u0300-\u036f]/g, '');

// Order matters: the first alternative that matches at a position wins.
const PATTERN = new RegExp(
  [
    /(?<quoted>"[^"]*"|“[^”]*”|‘[^’]*’|(?<![\p{L}\p{N}])'[^']+'(?![\p{L}\p{N}]))/u.source,
    /(?<iso>\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?)(?![\d-])/u.source,
    // bounded (the lengths e-mail addresses and domain labels allow) so that a long run of dashes
    // or dots is read in linear time, not tried again from every position
    /(?<literal>[\p{L}\p{N}._%+-]{0,64}@[\p{L}\p{N}.-]{1,253}|(?:[\p{L}\p{N}][\p{L}\p{N}-]{0,62}\.){1,8}(?:com|org|net|io|co|fr|de|uk|dev|app)\b)/u
      .source,
    /(?<slash>\d{1,2}\/\d{1,2}(?:\/\d{2,4})?)(?![\d/])/u.source,
    /(?<money>[$€£]\s?\d[\d,]*(?:\.\d+)?[km]?|\d[\d,]*(?:\.\d+)?[km]?\s?[$€£])(?![\p{L}\p{N}])/u.source,
    /(?<percent>\d+(?:\.\d+)?\s?%)/u.source,
    /(?<number>\d[\d,]*(?:\.\d+)?(?:st|nd|rd|th|k)?)(?![\p{L}\p{N}])/u.source,
    /(?<numword>\d+[dwyh])(?![\p{L}\p{N}])/u.source,
    /(?<word>[\p{L}\p{N}][\p{L}\p{N}'’]*)/u.source,
    /(?<symbol>>=|<=|!=|<>|==|[<>=(),;:?!.\-/#+&*%@$€£_])/u.source,
    /(?<other>\S)/u.source,
  ].join('|'),
  'gu',
);

function numberValue(text: string): { value: number; ordinal: boolean } {
  const m = /^([\d,]*\d(?:\.\d+)?)(st|nd|rd|th|k|m)?$/.exec(text.toLowerCase())!;
  const base = Number(m[1]!.replace(/,/g, ''));
  const suffix = m[2];
  if (suffix && suffix in NUMBER_SUFFIX) return { value: base * NUMBER_SUFFIX[suffix]!, ordinal: false };
  return { value: base, ordinal: suffix !== undefined };
}

/** Splits the text into tokens. Throws TokenizeError for text that is too long or has no words. */
export function tokenize(source: string): Token[] {
  const tokens: Token[] = [];
  const push = (t: Token) => tokens.push(t);
  for (const m of source.matchAll(PATTERN)) {
    const g = m.groups!;
    const start = m.index!;
    const end = start + m[0].length;
    const prev = source[start - 1];
    const joined = tokens.length > 0 && tokens[tokens.length - 1]!.end === start - 1 && (prev === '_' || prev === '-');
    if (g.quoted !== undefined) {
      const inner = g.quoted.slice(1, -1).trim();
      push({ kind: 'quoted', raw: inner, text: strip(inner.toLowerCase()), start, end });
    } else if (g.literal !== undefined) {
      // an e-mail address or a domain: one value, as written
      push({ kind: 'quoted', raw: g.literal, text: strip(g.literal.toLowerCase()), start, end });
    } else if (g.iso !== undefined) {
      push({ kind: 'date', raw: g.iso, text: g.iso.toLowerCase(), start, end, date: g.iso });
    } else if (g.slash !== undefined) {
      push({ kind: 'date', raw: g.slash, text: g.slash, start, end });
    } else if (g.money !== undefined) {
      const digits = g.money.replace(/[$€£\s]/g, '');
      push({ kind: 'money', raw: g.money, text: g.money.toLowerCase(), start, end, value: numberValue(digits).value });
    } else if (g.percent !== undefined) {
      push({
        kind: 'percent',
        raw: g.percent,
        text: g.percent,
        start,
        end,
        value: Number(g.percent.replace(/[\s%]/g, '')),
      });
    } else if (g.number !== undefined) {
      const { value, ordinal } = numberValue(g.number);
      push({ kind: 'number', raw: g.number, text: g.number.toLowerCase(), start, end, value, ordinal, joined });
    } else if (g.numword !== undefined) {
      const n = g.numword.slice(0, -1);
      const unit = { d: 'days', w: 'weeks', y: 'years', h: 'hours' }[g.numword.slice(-1).toLowerCase()]!;
      push({ kind: 'number', raw: n, text: n, start, end: start + n.length, value: Number(n) });
      push({ kind: 'word', raw: unit, text: unit, start: start + n.length, end });
    } else if (g.word !== undefined) {
      words(g.word, start, joined, push);
    } else if (g.other !== undefined) {
      // anything else is kept, so that it is named if it cannot be placed
      push({ kind: 'symbol', raw: g.other, text: g.other, start, end });
    } else if (g.symbol !== undefined) {
      // `_` and `-` between two words join them; `/` too ("iOS/Android" stays two words).
      if (
        (g.symbol === '-' || g.symbol === '/' || g.symbol === '_') &&
        /[\p{L}\p{N}]/u.test(prev ?? '') &&
        /[\p{L}\p{N}]/u.test(source[end] ?? '')
      ) {
        continue;
      }
      push({ kind: 'symbol', raw: g.symbol, text: g.symbol, start, end });
    }
  }
  // A `-` or `/` between words was skipped above: mark the following word as joined.
  for (let i = 1; i < tokens.length; i++) {
    const between = source.slice(tokens[i - 1]!.end, tokens[i]!.start);
    if (between === '-' || between === '/' || between === '_') tokens[i]!.joined = true;
  }
  return joinCompounds(tokens);
}

function words(word: string, start: number, joined: boolean, push: (t: Token) => void) {
  const raw = word.replace(/’/g, "'");
  const lower = strip(raw.toLowerCase());
  const emit = (text: string, r: string, s: number, j: boolean) =>
    push({ kind: 'word', raw: r, text, start: s, end: s + r.length, joined: j });
  const expanded = CONTRACTIONS[lower];
  if (expanded) {
    emit(expanded[0]!, raw, start, joined);
    for (const w of expanded.slice(1)) push({ kind: 'word', raw: w, text: w, start, end: start + raw.length });
    return;
  }
  let m = /^(.+)n't$/.exec(lower);
  if (m) {
    const base = m[1] === 'ca' ? 'can' : m[1] === 'wo' ? 'will' : m[1]!;
    emit(base, raw.slice(0, base.length), start, joined);
    push({ kind: 'word', raw: 'not', text: 'not', start, end: start + raw.length });
    return;
  }
  m = /^(.+)'(s|d|ve|re|ll|m)?$/.exec(lower);
  if (m) {
    const suffix = m[2];
    emit(m[1]!, raw.slice(0, m[1]!.length), start, joined);
    const extra =
      suffix === 'd'
        ? 'would'
        : suffix === 've'
          ? 'have'
          : suffix === 're'
            ? 'are'
            : suffix === 'll'
              ? 'will'
              : suffix === 'm'
                ? 'am'
                : null;
    if (extra) push({ kind: 'word', raw: extra, text: extra, start, end: start + raw.length });
    return;
  }
  emit(lower, raw, start, joined);
}

/** Two-word verbs people write for one action: "check out" is a checkout (a purchase). */
const COMPOUNDS: Record<string, { second: string[]; joined: string }> = {
  check: { second: ['out', 'outs'], joined: 'checkout' },
  checks: { second: ['out'], joined: 'checkout' },
  checked: { second: ['out'], joined: 'checkout' },
  checking: { second: ['out'], joined: 'checkout' },
};

function joinCompounds(tokens: Token[]): Token[] {
  const out: Token[] = [];
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i]!;
    const next = tokens[i + 1];
    const c = t.kind === 'word' ? COMPOUNDS[t.text] : undefined;
    if (c && next?.kind === 'word' && c.second.includes(next.text)) {
      out.push({ ...t, raw: `${t.raw} ${next.raw}`, text: c.joined, end: next.end });
      i++;
    } else out.push(t);
  }
  return out;
}
