// Work other parts of Tally add to a user's erasure: each hook runs inside the erasure's
// transaction (so a hook that throws rolls the whole erasure back) and returns how many records
// it removed or cancelled; their sum is reported as `queued_sends_cancelled`. The hooks live in
// one ErasureHooks per composition root (ServiceContext.erasureHooks); the root registers campaign
// delivery's hook, which cancels the user's queued sends.
import type { Db } from '../storage/handle.js';

/** Removes or cancels what the hook owns for the user (internal id); returns how many. */
export type ErasureHook = (tx: Db, appId: string, userId: string) => Promise<number>;

export class ErasureHooks {
  private readonly hooks = new Map<string, ErasureHook>();

  /** The names of the registered hooks, in order of registration. */
  get names(): string[] {
    return [...this.hooks.keys()];
  }

  /** Registers a hook under a name (a second registration under the same name replaces the first). */
  register(name: string, hook: ErasureHook): () => void {
    this.hooks.set(name, hook);
    return () => {
      if (this.hooks.get(name) === hook) this.hooks.delete(name);
    };
  }

  /** Runs every registered hook in order of registration, in the caller's transaction; returns the total. */
  async run(tx: Db, appId: string, userId: string): Promise<number> {
    let total = 0;
    for (const [name, hook] of this.hooks) {
      const n = await hook(tx, appId, userId);
      if (!Number.isSafeInteger(n) || n < 0) throw new Error(`The erasure hook ${name} returned ${n}, not a count.`);
      total += n;
    }
    return total;
  }
}
