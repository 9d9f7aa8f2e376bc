// A cursor over the criteria's tokens with the small helpers every part of the parser uses:
// look ahead, match keywords, read numbers (digits or words), and fail with the words where
// parsing stopped.
import type { Token } from './tokenizer.js';
import { NUMBER_WORDS } from './vocabulary.js';

export class CriteriaError extends Error {
  constructor(
    message: string,
    /** The words the parser stopped at, as written. */
    readonly near: string,
  ) {
    super(message);
  }
}

export class Cursor {
  protected pos = 0;

  constructor(
    protected readonly tokens: Token[],
    protected readonly source: string,
  ) {}

  protected peek(k = 0): Token {
    return this.tokens[Math.min(this.pos + k, this.tokens.length - 1)]!;
  }
  protected is(word: string, k = 0): boolean {
    const t = this.peek(k);
    return t.kind === 'word' && t.lower === word;
  }
  protected isIn(set: Set<string>, k = 0): boolean {
    const t = this.peek(k);
    return t.kind === 'word' && set.has(t.lower);
  }
  /** Consumes the words in order when all of them are next. */
  protected accept(...words: string[]): boolean {
    if (!words.every((w, k) => this.is(w, k))) return false;
    this.pos += words.length;
    return true;
  }
  protected next(): Token {
    const t = this.peek();
    if (t.kind !== 'end') this.pos++;
    return t;
  }
  protected fail(message: string): never {
    const t = this.peek();
    const near = t.kind === 'end' ? '' : this.source.slice(t.at).trim();
    throw new CriteriaError(message, near);
  }
  protected isNumber(k = 0): boolean {
    const t = this.peek(k);
    return t.kind === 'number' || (t.kind === 'word' && NUMBER_WORDS[t.lower] !== undefined);
  }
  protected number(what: string): number {
    const t = this.peek();
    if (t.kind === 'word' && NUMBER_WORDS[t.lower] !== undefined) {
      this.pos++;
      return NUMBER_WORDS[t.lower]!;
    }
    if (t.kind !== 'number') this.fail(`Expected a number ${what}.`);
    this.pos++;
    return Number(t.text);
  }
  protected count(what: string): number {
    const n = this.number(what);
    if (!Number.isInteger(n) || n < 0) this.fail(`Expected a whole number ${what}.`);
    return n;
  }
}
