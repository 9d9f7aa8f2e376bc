// The compiled document as the tests check answers against it: every object schema that declares
// its properties is closed. Response models are open in the contract (clients must ignore fields
// added later), but the server must never send a field the document does not declare; request
// bodies are closed in the contract already, with `unevaluatedProperties: {not: {}}`.
//
// Two forms, one per checker:
// - `unevaluatedProperties: false` for the contract observer's Ajv (JSON Schema 2020-12);
// - `additionalProperties: false` for Prism 5, whose Ajv reads OpenAPI 3.1 schemas as draft-07 and
//   so ignores `unevaluatedProperties` altogether. The two say the same thing for a schema that is
//   not composed with others, which is every closed schema of this document (`closeObjects`
//   counts the ones it had to leave open, and the Prism test asserts the count is 0).
//
// A schema stays open where closing it would refuse a sibling's properties: when it is one of
// several `allOf` parts, or an `allOf` part beside properties of its own, or itself composed.

// biome-ignore lint/suspicious/noExplicitAny: OpenAPI objects are walked generically here.
type Node = Record<string, any>;

export type ClosedForm = 'unevaluatedProperties' | 'additionalProperties';

/** Closes `doc` in place; returns how many schemas with properties had to stay open. */
export function closeObjects(doc: Node, form: ClosedForm): { closed: number; leftOpen: number } {
  const { parts, refs } = composedParts(doc);
  let closed = 0;
  let leftOpen = 0;
  const close = (node: unknown, ref?: string): void => {
    if (!node || typeof node !== 'object') return;
    if (Array.isArray(node)) {
      for (const item of node) close(item);
      return;
    }
    const n = node as Node;
    if (n.properties) {
      const composed = n.allOf || n.anyOf || n.oneOf || parts.has(n) || (ref !== undefined && refs.has(ref));
      const sealed = isSealed(n.unevaluatedProperties);
      const declaresOthers = 'additionalProperties' in n || ('unevaluatedProperties' in n && !sealed);
      if (composed && (sealed || !declaresOthers)) leftOpen++;
      else if (!declaresOthers) {
        if (form === 'additionalProperties') {
          delete n.unevaluatedProperties;
          n.additionalProperties = false;
        } else n.unevaluatedProperties = false;
        closed++;
      }
    }
    for (const [key, value] of Object.entries(n)) {
      if (key === 'examples' || key === 'example') continue;
      close(value);
    }
  };
  for (const [name, schema] of Object.entries((doc.components?.schemas ?? {}) as Node)) {
    close(schema, `#/components/schemas/${name}`);
  }
  close(doc.paths);
  return { closed, leftOpen };
}

/** `unevaluatedProperties: {not: {}}` or `false`: nothing else allowed. */
const isSealed = (value: unknown) =>
  value === false ||
  (!!value &&
    typeof value === 'object' &&
    Object.keys(value).length === 1 &&
    JSON.stringify((value as Node).not) === '{}');

/** Schemas (inline, or named by reference) that share an `allOf` with other parts or properties. */
function composedParts(doc: Node): { parts: Set<Node>; refs: Set<string> } {
  const parts = new Set<Node>();
  const refs = new Set<string>();
  const collect = (node: unknown): void => {
    if (!node || typeof node !== 'object') return;
    if (Array.isArray(node)) {
      for (const item of node) collect(item);
      return;
    }
    const n = node as Node;
    const allOf = (n.allOf ?? []) as Node[];
    if (allOf.length > 1 || (allOf.length === 1 && n.properties)) {
      for (const part of allOf) {
        parts.add(part);
        if (typeof part.$ref === 'string') refs.add(part.$ref);
      }
    }
    for (const value of Object.values(n)) collect(value);
  };
  collect(doc);
  return { parts, refs };
}
