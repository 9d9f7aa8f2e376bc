// The contract as an integrator reads it: every operation, parameter, named model and field says
// what it is, in more than its own name. A field documented as "App id." or "Rates." fails here,
// as does one with no description at all, so that `/docs` and the generated client never show a
// bare name.
import { describe, expect, it } from 'vitest';
import { listOperations, loadContract } from '../../server/src/contract.js';

// biome-ignore lint/suspicious/noExplicitAny: OpenAPI objects are walked generically here.
type Node = Record<string, any>;
const { doc } = loadContract();
const components = (doc as Node).components as Node;

const words = (text: string) =>
  text
    .toLowerCase()
    .replace(/[`.,;:()'"]/g, ' ')
    .replace(/[_-]/g, ' ')
    .split(/\s+/)
    .filter(Boolean);

/** Why a description says too little about `name`; undefined when it says enough. */
function weakDescription(description: unknown, name: string): string | undefined {
  if (typeof description !== 'string' || description.trim() === '') return 'no description';
  const said = words(description);
  const named = words(name.replace(/([a-z])([A-Z])/g, '$1 $2'));
  const bare = said.filter((w) => !['the', 'a', 'an', 'its', 'of'].includes(w) && w !== 'id');
  if (said.length < 2) return `only "${description}"`;
  if (bare.every((w) => named.includes(w) || w === 'name') && bare.length <= named.length)
    return `only its name ("${description}")`;
  return undefined;
}

/** Every property below `schema`, with where it is. */
function* properties(schema: unknown, where: string): Generator<[string, string, Node]> {
  if (!schema || typeof schema !== 'object') return;
  const s = schema as Node;
  for (const [name, property] of Object.entries((s.properties ?? {}) as Node)) {
    yield [`${where}.${name}`, name, property as Node];
    yield* properties(property, `${where}.${name}`);
  }
  if (s.items) yield* properties(s.items, `${where}[]`);
  if (s.additionalProperties && typeof s.additionalProperties === 'object')
    yield* properties(s.additionalProperties, `${where}{}`);
  for (const key of ['allOf', 'anyOf', 'oneOf']) {
    for (const [i, part] of ((s[key] ?? []) as Node[]).entries()) yield* properties(part, `${where}.${key}[${i}]`);
  }
}

const operations = listOperations(doc).map((o) => ({ ...o, op: doc.paths[o.path]![o.method.toLowerCase()] as Node }));

describe('descriptions written for an integrator', () => {
  it('the check refuses what it should', () => {
    expect(weakDescription(undefined, 'app_id')).toBe('no description');
    expect(weakDescription('App id.', 'app_id')).toMatch(/only its name/);
    expect(weakDescription('Rates.', 'rates')).toMatch(/only/);
    expect(weakDescription('The provider.', 'provider')).toMatch(/only its name/);
    expect(weakDescription("The app's id, as other operations take it in `app_id`.", 'app_id')).toBeUndefined();
    expect(weakDescription('When it was issued.', 'created_at')).toBeUndefined();
  });

  it('every named model and each of its fields', () => {
    const weak: string[] = [];
    for (const [name, schema] of Object.entries(components.schemas as Node)) {
      const why = weakDescription((schema as Node).description, name);
      if (why) weak.push(`${name}: ${why}`);
      for (const [where, field, property] of properties(schema, name)) {
        const reason = weakDescription(property.description, field);
        if (reason) weak.push(`${where}: ${reason}`);
      }
    }
    expect(weak).toEqual([]);
  });

  it('every operation, its parameters, and the fields of its inline bodies', () => {
    const weak: string[] = [];
    for (const { operationId, op } of operations) {
      const why = weakDescription(op.description, operationId);
      if (why) weak.push(`${operationId}: ${why}`);
      for (const p of (op.parameters ?? []) as Node[]) {
        const parameter = p.$ref ? components.parameters[p.$ref.split('/').pop()] : p;
        const reason = weakDescription(parameter.description, parameter.name);
        if (reason) weak.push(`${operationId} parameter ${parameter.name}: ${reason}`);
      }
      const bodies: [string, Node][] = [];
      for (const media of Object.values((op.requestBody?.content ?? {}) as Node)) bodies.push(['body', media as Node]);
      for (const [status, response] of Object.entries(op.responses as Node)) {
        const reason = weakDescription((response as Node).description, status);
        if (reason) weak.push(`${operationId} ${status}: ${reason}`);
        for (const media of Object.values(((response as Node).content ?? {}) as Node))
          bodies.push([status, media as Node]);
      }
      for (const [label, media] of bodies) {
        for (const [where, field, property] of properties(media.schema, `${operationId} ${label}`)) {
          const reason = weakDescription(property.description, field);
          if (reason) weak.push(`${where}: ${reason}`);
        }
      }
    }
    expect(weak).toEqual([]);
  });
});
