// Hostile values for the contract fuzzer (contract-fuzz.ts): text with NUL bytes and lone
// surrogates, over-long and four-byte text, SQL-looking strings, huge and non-finite numbers (as
// raw JSON text, since JSON.stringify cannot write 1e999), deep nesting and wrong types.
import type { GeneratorValue } from 'fast-check';
import fc from 'fast-check';

const RAW = (i: number) => `__fuzz_raw_${i}__`;

/** A JSON value under construction: raw JSON text can be spliced in where JSON.stringify cannot go. */
export class Body {
  readonly raw: string[] = [];
  rawValue(text: string): string {
    this.raw.push(text);
    return RAW(this.raw.length - 1);
  }
  serialise(value: unknown): string {
    let text = JSON.stringify(value) ?? 'null';
    this.raw.forEach((fragment, i) => {
      text = text.split(`"${RAW(i)}"`).join(fragment);
    });
    return text;
  }
}

function deepText(levels: number, array: boolean): string {
  return array ? `${'['.repeat(levels)}1${']'.repeat(levels)}` : `${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}`;
}

const SQLISH = [
  "' OR '1'='1",
  "'; DROP TABLE events; --",
  '1; SELECT pg_sleep(10)',
  "x' UNION SELECT api_key_hash FROM api_keys --",
  '$1',
  '%s%n%x',
  '\\',
  '"',
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a template-injection probe, sent as plain text.
  '${7*7}{{7*7}}',
  '../../../etc/passwd',
  '<script>alert(1)</script>',
];
const ODD_TEXT = [
  '\u0000',
  'a\u0000b',
  '\uD800',
  'x\uDFFFy',
  '\uDC00\uD800',
  '',
  ' ',
  'null',
  'undefined',
  'NaN',
  '-1',
  '2026-02-30',
  '2026-02-30T00:00:00Z',
  '0000-01-01',
  '9999-12-31',
  '2026-13-01T25:61:61Z',
  '\u202Eevil\u202C',
  '\uFEFF\u200B',
  'e\u0301\u0301\u0301',
];
const NUMBERS_RAW = [
  '1e999',
  '-1e999',
  '1e308',
  '-1e308',
  '9007199254740993',
  '1e21',
  '2147483648',
  '-2147483649',
  '-0',
  '0.1',
  '1e-400',
  '123456789012345678901234567890',
];

/** A string of exactly `n` code points: `prefix`, then alternating emoji and CJK characters. */
export function atLimit(n: number, prefix = '', pattern?: string): string {
  if (pattern === '^[!-~]+$') return prefix + '~'.repeat(Math.max(0, n - prefix.length));
  // Varied characters, so that the database cannot compress the value below a byte limit.
  const wide = Array.from({ length: Math.max(0, n - prefix.length) }, (_, i) =>
    String.fromCodePoint(i % 2 === 0 ? 0x1f300 + ((i * 104_729) % 0x300) : 0x4e00 + ((i * 7_919) % 0x5000)),
  );
  return prefix + wide.join('');
}

const UNRESERVED = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~';

/**
 * A URL of exactly `n` characters: a URI holds only ASCII (RFC 3986; non-ASCII is refused with
 * 400), so the path is varied unreserved characters rather than `atLimit`'s wide ones.
 */
export function uriAtLimit(n: number, prefix = 'https://fuzz.example/'): string {
  const path = Array.from({ length: Math.max(0, n - prefix.length) }, (_, i) => UNRESERVED[(i * 7_919) % 66]);
  return prefix + path.join('');
}

/** A hostile string. `maxLength` (when the schema has one) makes the over-long cases exact. */
export function hostileString(g: GeneratorValue, maxLength?: number): string {
  const kind = g(fc.integer, { min: 0, max: 8 });
  switch (kind) {
    case 8:
      return atLimit(maxLength ?? 2_048, g(fc.constantFrom, '', 'https://fuzz.example/'));
    case 0:
      return g(fc.constantFrom, ...ODD_TEXT);
    case 1:
      return g(fc.constantFrom, ...SQLISH);
    case 2:
      return g(fc.string, { unit: 'binary', maxLength: 40 });
    case 3:
      return g(fc.string, { unit: 'grapheme', maxLength: 40 });
    case 4:
      return 'x'.repeat((maxLength ?? 2048) + 1);
    case 5:
      return `${g(fc.string, { unit: 'grapheme-ascii', maxLength: 10 })}${g(fc.constantFrom, '\u0000', '\uD83D', '\uDE00')}`;
    case 6:
      return 'é'.repeat(g(fc.constantFrom, 300, 5_000, 100_000));
    default:
      return `${g(fc.constantFrom, ...ODD_TEXT)}${g(fc.constantFrom, ...SQLISH)}`;
  }
}

/** A hostile JSON value (as a JS value, or raw text through `body`). */
export function hostileValue(g: GeneratorValue, body: Body, maxLength?: number): unknown {
  const kind = g(fc.integer, { min: 0, max: 7 });
  switch (kind) {
    case 0:
    case 1:
      return hostileString(g, maxLength);
    case 2:
      return body.rawValue(g(fc.constantFrom, ...NUMBERS_RAW));
    case 3:
      return body.rawValue(deepText(g(fc.constantFrom, 31, 32, 33, 40, 5_000), g(fc.boolean)));
    case 4:
      return g(fc.constantFrom, true, false, null, 0, -1, [], {}, [1, 2], { x: 1 }, [[[]]]);
    case 5:
      return { [hostileString(g)]: g(fc.jsonValue, { maxDepth: 2 }) };
    case 6:
      return g(fc.jsonValue, { maxDepth: 4 });
    default:
      return body.rawValue(
        g(fc.constantFrom, '"__proto__"', '{"__proto__":{"admin":true}}', '{"constructor":{"prototype":{"x":1}}}'),
      );
  }
}

/**
 * Percent-encodes any string, even one with lone surrogates (which encodeURIComponent refuses):
 * those go out as the bytes a careless client would send (WTF-8), which are not valid UTF-8.
 */
export function encodeLoose(s: string): string {
  let out = '';
  for (let i = 0; i < s.length; i++) {
    const code = s.charCodeAt(i);
    const next = s.charCodeAt(i + 1);
    if (code >= 0xd800 && code <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
      out += encodeURIComponent(s[i]! + s[i + 1]!);
      i++;
    } else if (code >= 0xd800 && code <= 0xdfff) {
      out += [0xe0 | (code >> 12), 0x80 | ((code >> 6) & 0x3f), 0x80 | (code & 0x3f)]
        .map((b) => `%${b.toString(16).toUpperCase()}`)
        .join('');
    } else {
      out += encodeURIComponent(s[i]!);
    }
  }
  return out;
}
