// The tokenizer reads long runs of punctuation in linear time: its e-mail and domain patterns are
// bounded, so they are not tried again over the whole rest of the text from every position (40,000
// dashes took 14 s before, about 0.2 s after).
import { describe, expect, it } from 'vitest';
import { tokenize } from '../../server/src/language/tokens.js';

describe('tokenize on long runs of punctuation', () => {
  for (const unit of ['-', '.', 'a-', '_-', 'a.']) {
    it(`reads 40,000 characters of ${JSON.stringify(unit)} in well under a second or two`, () => {
      const text = unit.repeat(40_000 / unit.length);
      const started = performance.now();
      const tokens = tokenize(text);
      expect(tokens.length).toBeGreaterThan(0);
      expect(performance.now() - started).toBeLessThan(2_000);
    });
  }

  it('still reads e-mail addresses and domains as one value', () => {
    const texts = tokenize('users with email jo.doe+x@mail.example.com on shop.example.io').filter(
      (t) => t.kind === 'quoted',
    );
    expect(texts.map((t) => t.raw)).toEqual(['jo.doe+x@mail.example.com', 'shop.example.io']);
  });

  it('reads contractions written without the apostrophe', () => {
    const words = tokenize('users who havent bought and dont have an email').map((t) => t.text);
    expect(words).toEqual(['users', 'who', 'have', 'not', 'bought', 'and', 'do', 'not', 'have', 'an', 'email']);
  });
});
