// The names a query can see while the sandbox checker walks it (check-select.ts): FROM items with
// their columns, and CTEs, each level falling back to the enclosing query's.

/** A FROM item visible by name: its output columns, or null when they cannot be known statically. */
export interface Item {
  columns: ReadonlySet<string> | null;
}

export class Scope {
  readonly items = new Map<string, Item>();
  readonly ctes = new Map<string, ReadonlySet<string> | null>();
  constructor(readonly parent: Scope | null) {}

  item(name: string): Item | undefined {
    return this.items.get(name) ?? this.parent?.item(name);
  }

  /** The same scope without its FROM items: what a subquery in FROM that is not LATERAL sees. */
  withoutItems(): Scope {
    const s = new Scope(this.parent);
    for (const [k, v] of this.ctes) s.ctes.set(k, v);
    return s;
  }

  cte(name: string): ReadonlySet<string> | null | undefined {
    if (this.ctes.has(name)) return this.ctes.get(name);
    return this.parent?.cte(name);
  }
}
