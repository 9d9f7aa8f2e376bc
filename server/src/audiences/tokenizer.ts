// Splits audience criteria into tokens: words (compared case-insensitively), quoted strings,
// numbers, dates, comparison symbols, parentheses and commas. Curly quotes count as quotes.

export type TokenKind = 'word' | 'string' | 'number' | 'date' | 'symbol' | '(' | ')' | ',' | 'end';

export interface Token {
  kind: TokenKind;
  /** The text as written (for strings: without the quotes). */
  text: string;
  /** Lower-cased text, for matching keywords. */
  lower: string;
  /** Offset in the criteria, for messages. */
  at: number;
}

export class TokenizeError extends Error {
  constructor(
    message: string,
    readonly at: number,
  ) {
    super(message);
  }
}

const DATE = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/;
const NUMBER = /^-?\d+(\.\d+)?$/;
const SYMBOLS = ['>=', '<=', '!=', '<>', '==', '=', '>', '<'];
const WORD_STOP = /[\s(),"=<>!]/;

function normalize(input: string): string {
  return input.replace(/[“”„]/g, '"').replace(/[‘’‚]/g, "'");
}

export function tokenize(input: string): Token[] {
  const text = normalize(input);
  const tokens: Token[] = [];
  let i = 0;
  const push = (kind: TokenKind, value: string, at: number) =>
    tokens.push({ kind, text: value, lower: value.toLowerCase(), at });
  while (i < text.length) {
    const ch = text[i]!;
    if (/\s/.test(ch)) {
      i++;
      continue;
    }
    if (ch === '(' || ch === ')' || ch === ',') {
      push(ch, ch, i);
      i++;
      continue;
    }
    const symbol = SYMBOLS.find((s) => text.startsWith(s, i));
    if (symbol) {
      push('symbol', symbol === '==' ? '=' : symbol === '<>' ? '!=' : symbol, i);
      i += symbol.length;
      continue;
    }
    if (ch === '"' || ch === "'" || ch === '`') {
      const end = text.indexOf(ch, i + 1);
      if (end < 0) throw new TokenizeError(`The quote opened at character ${i + 1} is never closed.`, i);
      push('string', text.slice(i + 1, end), i);
      i = end + 1;
      continue;
    }
    const start = i;
    while (i < text.length) {
      const c = text[i]!;
      if (WORD_STOP.test(c)) break;
      // An apostrophe inside a word (didn't, haven't) belongs to it; one at a word's edge does not.
      if (c === "'" && !(i > start && /[a-z]/i.test(text[i + 1] ?? ''))) break;
      i++;
    }
    if (i === start) {
      // a lone "!" or similar
      throw new TokenizeError(`Unexpected "${ch}" at character ${i + 1}.`, i);
    }
    let word = text.slice(start, i);
    // A sentence's final full stop or a trailing question mark is punctuation, not part of a word.
    if (i >= text.trimEnd().length && /[.?!;]$/.test(word) && !DATE.test(word)) word = word.replace(/[.?!;]+$/, '');
    if (word === '') continue;
    if (DATE.test(word)) push('date', word, start);
    else if (NUMBER.test(word)) push('number', word, start);
    else push('word', word, start);
  }
  tokens.push({ kind: 'end', text: '', lower: '', at: text.length });
  return tokens;
}
