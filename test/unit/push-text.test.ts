// Generated push text and provider secrets, tested without a server: the composer and the limit
// rule (property-based, fast-check), and the AES-256-GCM sealing of provider secrets.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { composeMessage, finishGenerated, fitToLimit } from '../../server/src/engagement/push/composer.js';
import { open, SecretsUnreadableError, seal } from '../../server/src/secrets.js';

const text = fc.oneof(
  fc.string({ maxLength: 800 }),
  fc.string({ maxLength: 800, unit: 'grapheme' }),
  fc.string({ maxLength: 800, unit: 'binary' }),
  fc
    .array(fc.constantFrom('remind', 'them', 'their', 'cart', 'tone', ',', ' ', 'friendly', '!', '😀', 'é', '\n'), {
      maxLength: 120,
    })
    .map((w) => w.join(' ')),
);
const limit = fc.integer({ min: 1, max: 500 });
const hasLoneSurrogate = (s: string) =>
  /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(s);

describe('push text within max_characters', () => {
  it('the composer never exceeds the limit, is never empty, and is deterministic', () => {
    fc.assert(
      fc.property(text, limit, (prompt, max) => {
        const out = composeMessage(prompt, max);
        expect(out.length).toBeGreaterThan(0);
        expect(out.length).toBeLessThanOrEqual(max);
        expect(out.trim()).toBe(out);
        expect(composeMessage(prompt, max)).toBe(out);
      }),
      { numRuns: 2000 },
    );
  });

  it("a model's answer is cut to the limit (never empty, never a broken character)", () => {
    fc.assert(
      fc.property(text, text, limit, (answer, prompt, max) => {
        const out = finishGenerated(answer, prompt, max);
        expect(out.length).toBeGreaterThan(0);
        expect(out.length).toBeLessThanOrEqual(max);
        if (!hasLoneSurrogate(answer) && !hasLoneSurrogate(prompt)) expect(hasLoneSurrogate(out)).toBe(false);
      }),
      { numRuns: 2000 },
    );
  });

  it('keeps an answer that fits, and cuts a long one at a word boundary with an ellipsis', () => {
    expect(fitToLimit('  "Your cart misses you!"  ', 150)).toBe('Your cart misses you!');
    expect(fitToLimit('Your order has shipped and will arrive tomorrow', 25)).toBe('Your order has shipped…');
    expect(fitToLimit('Supercalifragilisticexpialidocious', 10)).toBe('Supercali…');
    expect(fitToLimit('Hello there', 3)).toBe('Hel');
    expect(finishGenerated('   \n ', 'Remind them their cart is waiting', 150)).toBe('Your cart is waiting.');
    fc.assert(
      fc.property(
        fc.array(fc.stringMatching(/^[a-z]{1,12}$/), { minLength: 1, maxLength: 80 }),
        fc.integer({ min: 4, max: 500 }),
        (words, max) => {
          const sentence = words.join(' ');
          const out = fitToLimit(sentence, max);
          if (sentence.length <= max) expect(out).toBe(sentence);
          else {
            expect(out.endsWith('…')).toBe(true);
            expect(sentence.startsWith(out.slice(0, -1))).toBe(true);
          }
        },
      ),
    );
  });

  it('turns an instruction into the notification itself', () => {
    const cases: [string, string][] = [
      ['Remind them gently that items are still in their cart', 'Items are still in your cart.'],
      ['remind them their cart is waiting, friendly tone', 'Your cart is waiting.'],
      ['Tell the user their subscription expires tomorrow', 'Your subscription expires tomorrow.'],
      [
        'Write a short push notification about our summer sale: 20% off this weekend',
        'Our summer sale: 20% off this weekend.',
      ],
      ['Invite them to try the new dark mode (keep it short)', 'Try the new dark mode.'],
      ['The user has unread messages', 'You have unread messages.'],
      ['???', 'You have a new notification.'],
    ];
    for (const [prompt, expected] of cases) expect(composeMessage(prompt, 150)).toBe(expected);
  });
});

describe('provider secrets at rest', () => {
  const key = 'a-server-secret-key-of-some-length';
  const app = '0190f0e0-0000-7000-8000-000000000001';

  it('round-trips, hides the plaintext, and uses a fresh IV each time', () => {
    const sealed = seal(key, app, { access_token: 'tok-PLAINTEXT' });
    expect(sealed).not.toContain('tok-PLAINTEXT');
    expect(Buffer.from(sealed.split(':')[3]!, 'base64url').toString('latin1')).not.toContain('PLAINTEXT');
    expect(seal(key, app, { access_token: 'tok-PLAINTEXT' })).not.toBe(sealed);
    expect(open(key, app, sealed)).toEqual({ access_token: 'tok-PLAINTEXT' });
  });

  it('does not open with another SECRET_KEY, for another app, or when tampered with', () => {
    const sealed = seal(key, app, { rest_api_key: 'k' });
    expect(() => open('another-secret-key-entirely', app, sealed)).toThrow(SecretsUnreadableError);
    expect(() => open(key, '0190f0e0-0000-7000-8000-000000000002', sealed)).toThrow(SecretsUnreadableError);
    const parts = sealed.split(':');
    const body = Buffer.from(parts[3]!, 'base64url');
    body[0] = body[0]! ^ 1;
    parts[3] = body.toString('base64url');
    expect(() => open(key, app, parts.join(':'))).toThrow(SecretsUnreadableError);
  });
});
