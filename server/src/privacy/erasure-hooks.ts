// Work other parts of Tally add to a user's erasure: each hook runs inside the erasure's
// transaction (so a hook that throws rolls the whole erasure back) and returns how many records
// it removed or cancelled; their sum is reported as `queued_sends_cancelled`. Campaign delivery
// registers the hook that cancels the user's queued sends.
import type { Db } from '../storage/handle.js';

/** Removes or cancels what the hook owns for the user (internal id); returns how many. */
export type ErasureHook = (tx: Db, appId: string, userId: string) => Promise<number>;

const hooks = new Map<string, ErasureHook>();

/** Registers a hook under a name (a second registration under the same name replaces the first). */
export function registerErasureHook(name: string, hook: ErasureHook): () => void {
  hooks.set(name, hook);
  return () => {
    if (hooks.get(name) === hook) hooks.delete(name);
  };
}

/** Runs every registered hook in order of registration, in the caller's transaction; returns the total. */
export async function runErasureHooks(tx: Db, appId: string, userId: string): Promise<number> {
  let total = 0;
  for (const [name, hook] of hooks) {
    const n = await hook(tx, appId, userId);
    if (!Number.isSafeInteger(n) || n < 0) throw new Error(`The erasure hook ${name} returned ${n}, not a count.`);
    total += n;
  }
  return total;
}
