// The input rules on their own (server/src/input-rules.ts): which values are refused, with which
// paths, and that checking never overflows the stack whatever the nesting.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  codePointLength,
  inputViolations,
  isClean,
  MAX_FREE_FORM_DEPTH,
  MAX_REPORTED,
  pointerSegment,
  preciseViolations,
  textViolation,
} from '../../server/src/input-rules.js';

const NUL_MESSAGE = 'contains a NUL character (U+0000), which cannot be stored; remove it';
const SURROGATE_MESSAGE =
  'contains a lone UTF-16 surrogate (text that is not valid Unicode); send well-formed UTF-8 text';

function nested(levels: number, leaf: unknown = 1): unknown {
  let value = leaf;
  for (let i = 0; i < levels; i++) value = { a: value };
  return value;
}

describe('text', () => {
  it('refuses NUL characters and lone surrogates, and accepts paired ones', () => {
    expect(textViolation('a\u0000b')).toBe(NUL_MESSAGE);
    expect(textViolation('\uD800')).toBe(SURROGATE_MESSAGE);
    expect(textViolation('x\uDC00')).toBe(SURROGATE_MESSAGE);
    expect(textViolation('\uDC00\uD800')).toBe(SURROGATE_MESSAGE); // reversed pair
    expect(textViolation('emoji \uD83D\uDE00 and \u00e9')).toBeNull();
    expect(textViolation('')).toBeNull();
  });

  it('finds them in values and keys at any depth, with JSON-pointer paths', () => {
    const body = {
      event_name: 'ok',
      properties: { 'a/b': { 'c~d': ['x', 'y\u0000'] }, 'k\u0000ey': 1, s: '\uDBFF' },
    };
    expect(inputViolations(body, '/body')).toEqual([
      { path: '/body/properties/a~1b/c~0d/1', message: NUL_MESSAGE },
      { path: '/body/properties/k\\u0000ey', message: `is a key that ${NUL_MESSAGE}` },
      { path: '/body/properties/s', message: SURROGATE_MESSAGE },
    ]);
  });

  it('counts lengths in code points, as maxLength in the contract does', () => {
    expect(codePointLength('\uD83D\uDE00'.repeat(3))).toBe(3);
    expect(codePointLength('ab\uD800c')).toBe(4);
    expect(codePointLength('\uDE00\uD83D')).toBe(2);
    expect(codePointLength('')).toBe(0);
  });

  it('shows long keys cut and never cuts a surrogate pair in half', () => {
    expect(pointerSegment('k'.repeat(500))).toBe(`${'k'.repeat(100)}...`);
    expect(pointerSegment(`${'k'.repeat(99)}\uD83D\uDE00tail`)).toBe(`${'k'.repeat(99)}...`);
    expect(pointerSegment('\uD83D\uDE00\uD800')).toBe('\uD83D\uDE00\\ud800');
  });
});

describe('numbers', () => {
  it('refuses Infinity, -Infinity and NaN, and accepts every finite number', () => {
    const message = 'is not a finite number (a JSON number this large overflows to Infinity)';
    expect(inputViolations({ a: Infinity, b: [-Infinity], c: Number.NaN }, '/body')).toEqual([
      { path: '/body/a', message },
      { path: '/body/b/0', message },
      { path: '/body/c', message },
    ]);
    expect(JSON.parse('{"x":1e999}').x).toBe(Infinity);
    expect(inputViolations({ a: Number.MAX_VALUE, b: -5e-324, c: 2 ** 80 }, '/body')).toEqual([]);
  });
});

describe('nesting', () => {
  const deepMessage = `is nested more than ${MAX_FREE_FORM_DEPTH} levels deep; free-form objects may nest at most ${MAX_FREE_FORM_DEPTH} levels`;

  it('allows 32 levels in a free-form field and refuses the 33rd, naming where it starts', () => {
    // properties itself is level 1.
    expect(inputViolations({ properties: nested(32) }, '/body')).toEqual([]);
    const errors = inputViolations({ properties: nested(33) }, '/body');
    expect(errors).toEqual([{ path: `/body/properties${'/a'.repeat(32)}`, message: deepMessage }]);
  });

  it('counts from the free-form field wherever it sits (batch items, origin, signals)', () => {
    const batch = { events: [{ properties: nested(32) }, { properties: nested(33) }] };
    expect(inputViolations(batch, '/body').map((e) => e.path)).toEqual([`/body/events/1/properties${'/a'.repeat(32)}`]);
    for (const field of ['origin', 'signals', 'advanced_signals']) {
      expect(inputViolations({ [field]: nested(33) }, '/body').map((e) => e.path)).toEqual([
        `/body/${field}${'/a'.repeat(32)}`,
      ]);
    }
  });

  it('checks 100,000 levels of objects or arrays without a RangeError', () => {
    let arrays: unknown = 0;
    for (let i = 0; i < 100_000; i++) arrays = [arrays];
    const deep = nested(100_000);
    expect(inputViolations({ properties: deep }, '/body')).toHaveLength(1);
    expect(inputViolations({ events: arrays }, '/body')).toEqual([
      { path: `/body/events${'/0'.repeat(31)}`, message: 'is nested more than 32 levels deep' },
    ]);
    // The values above cannot even be serialised; the check must not need to.
    expect(() => JSON.stringify(deep)).toThrow(RangeError);
  });

  it('checks a free-form value given on its own (the ingestion service)', () => {
    expect(inputViolations(nested(32), '/events/0/properties', { freeForm: true })).toEqual([]);
    expect(inputViolations(nested(33), '/events/0/properties', { freeForm: true })).toHaveLength(1);
  });
});

describe('reporting', () => {
  it(`reports at most ${MAX_REPORTED} violations, in document order`, () => {
    const many = Object.fromEntries(Array.from({ length: 500 }, (_, i) => [`k${i}`, '\u0000']));
    const errors = inputViolations(many, '/body');
    expect(errors).toHaveLength(MAX_REPORTED);
    expect(errors[0]!.path).toBe('/body/k0');
    expect(errors[MAX_REPORTED - 1]!.path).toBe(`/body/k${MAX_REPORTED - 1}`);
  });

  it('accepts every JSON value with well-formed text up to the depth limit (property)', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 10 }), (value) => {
        expect(inputViolations({ properties: value }, '/body')).toEqual([]);
      }),
      { numRuns: 200 },
    );
  });

  it('refuses a NUL or a lone surrogate wherever it is put (property)', () => {
    const bad = fc.constantFrom('\u0000', '\uD800', '\uDFFF');
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 5 }), fc.string(), bad, fc.boolean(), (value, prefix, badChar, asKey) => {
        const text = `${prefix}${badChar}`;
        const body = asKey ? { properties: { [text]: value } } : { properties: { wrap: [value, text] } };
        const errors = inputViolations(body, '/body');
        expect(errors.length).toBeGreaterThanOrEqual(1);
        expect(errors.every((e) => e.path.startsWith('/body/properties/'))).toBe(true);
      }),
      { numRuns: 200 },
    );
  });

  it('takes the fast path exactly when the precise walk finds nothing (property)', () => {
    const bad = fc.constantFrom<unknown>('\u0000', '\uD800', 'x\uDC00', Number.POSITIVE_INFINITY, Number.NaN, 'ok', -0);
    const badKey = fc.constantFrom('a', 'properties', 'origin', 'signals', '\u0000k', '\uDC00');
    // A JSON value with a few slots replaced by (possibly) bad values or keys.
    const tree = fc
      .tuple(fc.jsonValue({ maxDepth: 3 }), fc.array(fc.tuple(fc.nat(), badKey, bad), { maxLength: 3 }))
      .map(([value, injections]) => {
        const containers: Record<string, unknown>[] = [];
        const stack: unknown[] = [value];
        while (stack.length > 0) {
          const v = stack.pop();
          if (v !== null && typeof v === 'object') {
            containers.push(v as Record<string, unknown>);
            stack.push(...Object.values(v));
          }
        }
        const root = containers.length > 0 ? value : { v: value };
        if (containers.length === 0) containers.push(root as Record<string, unknown>);
        for (const [n, key, badValue] of injections) containers[n % containers.length]![key] = badValue;
        return root;
      });
    const deepen = (v: unknown, levels: number) => {
      let out = v;
      for (let i = 0; i < levels; i++) out = i % 2 ? [out, 'x'] : { properties: out, x: 1 };
      return out;
    };
    fc.assert(
      fc.property(tree, fc.nat(40), fc.boolean(), (value: unknown, levels, freeForm) => {
        const v = deepen(value, levels % 3 === 0 ? levels : 0);
        return isClean(v, freeForm) === (preciseViolations(v, '', { freeForm }).length === 0);
      }),
      { numRuns: 200 },
    );
  });
});
