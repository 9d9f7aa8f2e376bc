// Requests generated from the compiled contract for property-based tests: a plausible request for
// an operation (derived from its parameter and body schemas, so that most requests get past
// validation and reach the handler), then hostile mutations: NUL bytes, lone surrogates, deep
// nesting, huge and non-finite numbers, over-long strings, wrong types, SQL-looking text and
// random Unicode, in body values, object keys, query values and path segments.
import type { GeneratorValue } from 'fast-check';
import fc from 'fast-check';
import type { OpenApiDocument } from '../../server/src/contract.js';

// biome-ignore lint/suspicious/noExplicitAny: JSON Schema objects are walked generically here.
type Schema = Record<string, any>;

export interface FuzzOperation {
  method: string;
  path: string;
  operationId: string;
  op: Schema;
}

export interface FuzzRequest {
  method: string;
  /** Path and query, ready to append to the server's URL. */
  url: string;
  headers: Record<string, string>;
  body?: string;
  /** What was done to the request, for the failure message. */
  mutations: string[];
}

export interface FuzzTarget {
  /** Credentials by security scheme name. */
  headersFor(scheme: string | null): Record<string, string>;
  /** Values that make a request reach deeper (the tenant's app id, known user ids). */
  hint(name: string, g: GeneratorValue): string | undefined;
}

export function contractOperations(doc: OpenApiDocument): FuzzOperation[] {
  const ops: FuzzOperation[] = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      if (op && typeof op === 'object' && op.operationId) {
        ops.push({ method: method.toUpperCase(), path, operationId: op.operationId, op: op as Schema });
      }
    }
  }
  return ops;
}

const RAW = (i: number) => `__fuzz_raw_${i}__`;

/** A JSON value under construction: raw JSON text can be spliced in where JSON.stringify cannot go. */
class Body {
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
function atLimit(n: number, prefix = '', pattern?: string): string {
  if (pattern === '^[!-~]+$') return prefix + '~'.repeat(Math.max(0, n - prefix.length));
  // Varied characters, so that the database cannot compress the value below a byte limit.
  const wide = Array.from({ length: Math.max(0, n - prefix.length) }, (_, i) =>
    String.fromCodePoint(i % 2 === 0 ? 0x1f300 + ((i * 104_729) % 0x300) : 0x4e00 + ((i * 7_919) % 0x5000)),
  );
  return prefix + wide.join('');
}

/** A hostile string. `maxLength` (when the schema has one) makes the over-long cases exact. */
function hostileString(g: GeneratorValue, maxLength?: number): string {
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
function hostileValue(g: GeneratorValue, body: Body, maxLength?: number): unknown {
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

function resolve(doc: OpenApiDocument, schema: Schema | undefined): Schema {
  let s = schema ?? {};
  for (let i = 0; i < 20 && s.$ref; i++) {
    const name = String(s.$ref).split('/').pop()!;
    s = ((doc as Schema).components?.schemas?.[name] ?? {}) as Schema;
  }
  return s;
}

/** A value the schema accepts (mostly), so that requests reach the handlers. */
function plausible(
  doc: OpenApiDocument,
  schema: Schema | undefined,
  g: GeneratorValue,
  target: FuzzTarget,
  name: string,
  depth = 0,
): unknown {
  const s = resolve(doc, schema);
  if (s.allOf) {
    const parts = (s.allOf as Schema[]).map((p) => resolve(doc, p));
    if (parts.length === 1) return plausible(doc, parts[0], g, target, name, depth);
    return Object.assign({}, ...parts.map((p) => plausible(doc, p, g, target, name, depth)));
  }
  const choices = (s.anyOf ?? s.oneOf) as Schema[] | undefined;
  if (choices) {
    const nonNull = choices.filter((c) => resolve(doc, c).type !== 'null');
    const pick = g(fc.integer, { min: 0, max: 9 }) === 0 ? choices : nonNull.length > 0 ? nonNull : choices;
    return plausible(
      doc,
      {
        ...s,
        anyOf: undefined,
        oneOf: undefined,
        ...resolve(doc, pick[g(fc.integer, { min: 0, max: pick.length - 1 })]),
      },
      g,
      target,
      name,
      depth,
    );
  }
  if (s.const !== undefined) return s.const;
  if (Array.isArray(s.enum)) return s.enum[g(fc.integer, { min: 0, max: s.enum.length - 1 })];
  const type = Array.isArray(s.type) ? s.type[0] : s.type;
  switch (type) {
    case 'string': {
      const hinted = target.hint(name, g);
      if (hinted !== undefined) return hinted;
      if (s.format === 'date')
        return g(fc.date, { min: new Date('2020-01-01'), max: new Date('2026-12-31'), noInvalidDate: true })
          .toISOString()
          .slice(0, 10);
      if (s.format === 'date-time')
        return g(fc.date, {
          min: new Date('2020-01-01'),
          max: new Date('2026-06-01'),
          noInvalidDate: true,
        }).toISOString();
      // Often exactly at the limit, in four-byte characters: valid, and heavy where bytes count
      // (index rows, provider payloads) rather than characters.
      if (s.maxLength !== undefined && s.format !== 'email' && g(fc.integer, { min: 0, max: 5 }) === 0) {
        return atLimit(s.maxLength, s.format === 'uri' ? 'https://fuzz.example/' : '', s.pattern);
      }
      if (s.format === 'uri') return `https://fuzz.example/${g(fc.webSegment)}`;
      if (s.format === 'email') return `u${g(fc.nat, 50)}@fuzz.example`;
      const min = s.minLength ?? 0;
      const max = Math.max(min, Math.min(s.maxLength ?? 24, 24));
      return g(fc.string, { unit: 'grapheme-ascii', minLength: min, maxLength: max });
    }
    case 'integer': {
      const min = Math.max(s.minimum ?? -5, -1_000);
      return g(fc.integer, { min, max: Math.min(s.maximum ?? min + 30, min + 30) });
    }
    case 'number':
      return g(fc.double, { min: -1e6, max: 1e6, noNaN: true, noDefaultInfinity: true });
    case 'boolean':
      return g(fc.boolean);
    case 'null':
      return null;
    case 'array': {
      const min = s.minItems ?? 0;
      const n = g(fc.integer, { min, max: Math.max(min, Math.min(s.maxItems ?? 3, 3)) });
      return Array.from({ length: n }, () => plausible(doc, s.items, g, target, name, depth + 1));
    }
    default: {
      if (type !== 'object' && !s.properties) return g(fc.jsonValue, { maxDepth: 2 });
      const out: Record<string, unknown> = {};
      const required = new Set<string>(s.required ?? []);
      for (const [key, prop] of Object.entries((s.properties ?? {}) as Record<string, Schema>)) {
        if (required.has(key) || g(fc.boolean)) out[key] = plausible(doc, prop, g, target, key, depth + 1);
      }
      const open = s.additionalProperties ?? s.unevaluatedProperties;
      if (open && typeof open === 'object' && depth < 3 && g(fc.boolean)) {
        Object.assign(
          out,
          g(fc.dictionary, fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 }),
        );
      }
      return out;
    }
  }
}

interface Slot {
  parent: Record<string | number, unknown> | null;
  key: string | number;
  /** Keys from the root to this slot. */
  trail: (string | number)[];
}

/** Every object and array slot of a value, plus the root. */
function slots(value: unknown): Slot[] {
  const out: Slot[] = [{ parent: null, key: '', trail: [] }];
  const stack: [unknown, (string | number)[]][] = [[value, []]];
  while (stack.length > 0) {
    const [v, trail] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    for (const key of Object.keys(v)) {
      const k = Array.isArray(v) ? Number(key) : key;
      out.push({ parent: v as Record<string | number, unknown>, key: k, trail: [...trail, k] });
      stack.push([(v as Record<string, unknown>)[key], [...trail, k]]);
    }
  }
  return out;
}

/** The schema of the value at `trail` (first branch of a composition), for its maxLength. */
function schemaAt(doc: OpenApiDocument, root: Schema, trail: (string | number)[]): Schema {
  let s = resolve(doc, root);
  for (const key of trail) {
    const branch = (s.allOf ?? s.anyOf ?? s.oneOf)?.[0];
    if (branch && !s.properties && !s.items) s = resolve(doc, branch);
    s = resolve(doc, typeof key === 'number' ? s.items : s.properties?.[key]);
  }
  const branch = (s.allOf ?? s.anyOf ?? s.oneOf)?.[0];
  return s.maxLength === undefined && branch ? { ...resolve(doc, branch), ...s } : s;
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

/** URLs stay under 8 KB: Node's HTTP parser answers 431 itself past 16 KB of headers. */
const MAX_URL_PART = 2_000;

// No dot segments: URL parsing removes them, and the request would name another route.
const PATH_HOSTILE = [
  '%00',
  'a%00b',
  '%ED%A0%80',
  '%E0%A4%A',
  '%2F',
  '..%2F..%2Fetc',
  'x'.repeat(300),
  '%F0%9F%98%80',
  "'%20OR%201=1",
];
const QUERY_HOSTILE = [
  '%00',
  '%ED%A0%80',
  '%E0%A4%A',
  '1e999',
  '-1',
  '2026-02-30',
  'x'.repeat(1_500),
  "'%20OR%201%3D1--",
  '%F0%9F%98%80',
];

export function fuzzRequest(
  doc: OpenApiDocument,
  operation: FuzzOperation,
  target: FuzzTarget,
  g: GeneratorValue,
): FuzzRequest {
  const { op } = operation;
  const mutations: string[] = [];
  const params = (op.parameters ?? []) as Schema[];
  const scheme =
    (op.security as Record<string, unknown>[] | undefined)?.map((s) => Object.keys(s)[0]).find(Boolean) ?? null;
  const headers: Record<string, string> = { ...target.headersFor(scheme) };

  // Path.
  let path = operation.path;
  for (const p of params.filter((x) => x.in === 'path')) {
    let segment = encodeLoose(String(plausible(doc, p.schema, g, target, p.name)));
    if (g(fc.integer, { min: 0, max: 5 }) === 0) {
      segment = g(fc.boolean)
        ? g(fc.constantFrom, ...PATH_HOSTILE)
        : encodeLoose(hostileString(g, 300)).slice(0, MAX_URL_PART);
      mutations.push(`path ${p.name}`);
    }
    path = path.replace(`{${p.name}}`, /^(\.|%2e){0,2}$/i.test(segment) ? 'x' : segment);
  }

  // Query.
  const query: string[] = [];
  for (const p of params.filter((x) => x.in === 'query')) {
    if (!p.required && g(fc.boolean)) continue;
    const value = plausible(doc, p.schema, g, target, p.name);
    const values = Array.isArray(value) ? value : [value];
    for (const v of values) query.push(`${encodeURIComponent(p.name)}=${encodeLoose(String(v))}`);
  }
  const queryParams = params.filter((x) => x.in === 'query');
  if (queryParams.length > 0 && g(fc.integer, { min: 0, max: 3 }) === 0) {
    const p = queryParams[g(fc.integer, { min: 0, max: queryParams.length - 1 })]!;
    const kind = g(fc.integer, { min: 0, max: 3 });
    const name = encodeURIComponent(p.name);
    if (kind === 0) query.push(`${name}=${g(fc.constantFrom, ...QUERY_HOSTILE)}`);
    else if (kind === 1) query.push(`${name}=${encodeLoose(hostileString(g, 300)).slice(0, MAX_URL_PART)}`);
    else if (kind === 2) query.push(`${name}[a][b]=1`, `${name}[]=2`);
    else query.push(`${name}=1`, `${name}=2`);
    mutations.push(`query ${p.name}`);
  }
  if (g(fc.integer, { min: 0, max: 15 }) === 0) {
    query.push(`${encodeLoose(hostileString(g, 50)).slice(0, 200)}=1`);
    mutations.push('query unknown key');
  }

  // Body.
  let body: string | undefined;
  const bodySchema = op.requestBody?.content?.['application/json']?.schema as Schema | undefined;
  if (bodySchema) {
    const builder = new Body();
    let value = plausible(doc, bodySchema, g, target, '');
    const count = g(fc.integer, { min: 0, max: 3 });
    for (let i = 0; i < count; i++) {
      const all = slots(value);
      const { parent, key, trail } = all[g(fc.integer, { min: 0, max: all.length - 1 })]!;
      const maxLength = schemaAt(doc, bodySchema, trail).maxLength as number | undefined;
      if (g(fc.integer, { min: 0, max: 3 }) === 0 && parent && !Array.isArray(parent)) {
        parent[hostileString(g, 100)] = hostileValue(g, builder);
        mutations.push(`body key added under ${String(key)}`);
      } else if (parent) {
        parent[key] = hostileValue(g, builder, maxLength);
        mutations.push(`body ${String(key)}`);
      } else {
        value = hostileValue(g, builder);
        mutations.push('body root');
      }
    }
    body = builder.serialise(value);
    headers['content-type'] = 'application/json';
  }
  return {
    method: operation.method,
    url: query.length > 0 ? `${path}?${query.join('&')}` : path,
    headers,
    body,
    mutations,
  };
}
