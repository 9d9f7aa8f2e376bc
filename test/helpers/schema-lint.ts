// The tool-schema portability rules of the MCP Inspector's `--strict` mode (inspector 2.12.0,
// clients/cli: lintToolSchemas), rewritten here so the suite checks every tool without the
// Inspector (which needs Node 22): a `type` array (`["string", "null"]`: clients that map schemas
// onto a single-type dialect reject it), a schema object with no validation keyword (`{}`: says
// nothing), a boolean schema where a schema object is expected, and a `$ref` to another document.

/** The keywords that make a schema object constrain anything (the Inspector's CONSTRAINING_KEYWORDS). */
const CONSTRAINING = new Set(
  (
    'type enum const multipleOf maximum exclusiveMaximum minimum exclusiveMinimum maxLength minLength pattern format ' +
    'contentMediaType contentEncoding contentSchema maxItems minItems uniqueItems maxContains minContains maxProperties ' +
    'minProperties required dependentRequired allOf anyOf oneOf not items prefixItems contains additionalItems ' +
    'unevaluatedItems properties patternProperties additionalProperties unevaluatedProperties propertyNames ' +
    'dependentSchemas dependencies $ref $dynamicRef $recursiveRef'
  ).split(' '),
);
const MAP_KEYWORDS = ['properties', 'patternProperties', 'definitions', '$defs', 'dependentSchemas'];
const ARRAY_KEYWORDS = ['allOf', 'anyOf', 'oneOf', 'prefixItems'];
const SINGLE_KEYWORDS = [
  'items',
  'additionalItems',
  'contains',
  'additionalProperties',
  'unevaluatedProperties',
  'unevaluatedItems',
  'propertyNames',
  'not',
  'if',
  'then',
  'else',
];
/** Keywords where `true`/`false` is an ordinary value, not a schema. */
const BOOLEAN_VALUED = new Set([
  'additionalProperties',
  'unevaluatedProperties',
  'additionalItems',
  'unevaluatedItems',
]);

export interface SchemaFinding {
  rule: 'type-union' | 'untyped-schema' | 'boolean-schema' | 'remote-ref';
  path: string;
}

export function lintSchema(schema: unknown): SchemaFinding[] {
  const findings: SchemaFinding[] = [];
  const walk = (node: unknown, path: string, keyword?: string) => {
    if (typeof node === 'boolean') {
      if (!(keyword && BOOLEAN_VALUED.has(keyword))) findings.push({ rule: 'boolean-schema', path });
      return;
    }
    if (typeof node !== 'object' || node === null || Array.isArray(node)) return;
    const n = node as Record<string, unknown>;
    if (Array.isArray(n.type)) findings.push({ rule: 'type-union', path });
    if (typeof n.$ref === 'string' && !n.$ref.startsWith('#')) findings.push({ rule: 'remote-ref', path });
    const constrains = Object.keys(n).some((k) => CONSTRAINING.has(k)) || ('if' in n && ('then' in n || 'else' in n));
    if (!constrains && keyword !== 'not') findings.push({ rule: 'untyped-schema', path });
    for (const k of MAP_KEYWORDS) {
      const map = n[k];
      if (map && typeof map === 'object')
        for (const [name, sub] of Object.entries(map)) walk(sub, `${path}/${k}/${name}`, k);
    }
    for (const k of ARRAY_KEYWORDS) {
      const list = n[k];
      if (Array.isArray(list)) for (const [i, sub] of list.entries()) walk(sub, `${path}/${k}/${i}`, k);
    }
    for (const k of SINGLE_KEYWORDS) if (k in n) walk(n[k], `${path}/${k}`, k);
  };
  walk(schema, '');
  return findings;
}
