// Requests generated from the compiled contract for property-based tests: a plausible request for
// an operation (derived from its parameter and body schemas, so that most requests get past
// validation and reach the handler), then hostile mutations: NUL bytes, lone surrogates, deep
// nesting, huge and non-finite numbers, over-long strings, wrong types, SQL-looking text and
// random Unicode, in body values, object keys, query values and path segments.
import type { GeneratorValue } from 'fast-check';
import fc from 'fast-check';
import type { OpenApiDocument } from '../../server/src/contract.js';
import { atLimit, Body, encodeLoose, hostileString, hostileValue, uriAtLimit } from './fuzz-values.js';

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
      // A URI, or a URL as browsers write it (a string whose pattern starts with the http scheme).
      const url = s.format === 'uri' || (s.pattern ?? '').startsWith('^[Hh][Tt][Tt][Pp]');
      if (s.maxLength !== undefined && s.format !== 'email' && g(fc.integer, { min: 0, max: 5 }) === 0) {
        return url ? uriAtLimit(s.maxLength) : atLimit(s.maxLength, '', s.pattern);
      }
      if (url) return `https://fuzz.example/${g(fc.webSegment)}`;
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
