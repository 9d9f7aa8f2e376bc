// The parse-tree basics of the sandbox checker (check.ts): the rejection it throws, its options,
// and the helpers that read libpg-query's JSON tree while refusing any part they do not expect.

export class SandboxRejection extends Error {}

export const reject = (message: string): never => {
  throw new SandboxRejection(message);
};

export type Json = Record<string, unknown>;

export interface CheckOptions {
  /** Embedded mode: refuse what only a statement timeout could bound. */
  embedded: boolean;
}

export const sval = (n: unknown): string | undefined =>
  ((n as Json | undefined)?.String as Json | undefined)?.sval as string;
export const names = (list: unknown): string[] => ((list as unknown[] | undefined) ?? []).map((n) => sval(n) ?? '');
export const isObject = (v: unknown): v is Json => v !== null && typeof v === 'object' && !Array.isArray(v);

/** The only node of a wrapped `{Type: {...}}` value. */
export function unwrap(value: unknown, where: string): [string, Json] {
  if (!isObject(value)) return reject(`Unexpected ${where} in the query.`);
  const keys = Object.keys(value);
  if (keys.length !== 1 || !/^[A-Z]/.test(keys[0]!)) return reject(`Unexpected ${where} in the query.`);
  return [keys[0]!, value[keys[0]!] as Json];
}

/**
 * Refuses any field holding a subtree (object or array) that is not listed: the checker must
 * never skip a part of the tree it does not understand. Scalar fields (locations, flags, enum
 * names) carry no code.
 */
export function onlyFields(node: Json, kind: string, allowed: readonly string[]): void {
  for (const [key, value] of Object.entries(node)) {
    if (value !== null && typeof value === 'object' && !allowed.includes(key)) {
      reject(`${kind} with ${key} is not allowed in the sandbox.`);
    }
  }
}

export function describeStatement(kind: string): string {
  const plain = kind
    .replace(/Stmt$/, '')
    .replace(/([a-z])([A-Z])/g, '$1 $2')
    .toUpperCase();
  return `a ${plain} statement`;
}

/** The names of a column list (`AS x(a, b)`, `WITH x(a, b)`), or null when there is none. */
export function columnList(list: unknown): ReadonlySet<string> | null {
  const cols = names(list);
  return cols.length > 0 ? new Set(cols) : null;
}
