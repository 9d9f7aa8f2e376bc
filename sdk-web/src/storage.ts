// Browser storage: localStorage when the page may use it, else memory for the page's lifetime
// (private modes, sandboxed frames and disabled storage all throw on access).
const memory: Record<string, string> = {};
let local: Storage | null | undefined;

function backing(): Storage | null {
  if (local === undefined) {
    try {
      const s = window.localStorage;
      s.setItem('__sw_t', '1');
      s.removeItem('__sw_t');
      local = s;
    } catch {
      local = null;
    }
  }
  return local;
}

export function load(key: string): string | null {
  try {
    const s = backing();
    if (s) return s.getItem(key);
  } catch {}
  return key in memory ? memory[key]! : null;
}

export function save(key: string, value: string): void {
  try {
    const s = backing();
    if (s) {
      s.setItem(key, value);
      return;
    }
  } catch {}
  memory[key] = value;
}

export function remove(key: string): void {
  delete memory[key];
  try {
    backing()?.removeItem(key);
  } catch {}
}
