// A small persistent outbox: every call is stored first, then sent in order. Network failures,
// 5xx, 408 and 429 are retried with exponential backoff (and again as soon as the browser is back
// online); other 4xx answers are final and dropped. What is left when the page is hidden goes out
// with sendBeacon. Items are claimed before sending, so several tabs never send one twice.
import { load, save } from './storage.js';
import { beacon as defaultBeacon, send as defaultSend, type Reply } from './transport.js';

export interface Item {
  /** Item id. */
  i: string;
  /** URL. */
  u: string;
  /** JSON body. */
  b: unknown;
  /** Attempts so far. */
  n: number;
  /** Not before this time (ms since the epoch). */
  t: number;
}

export const MAX_ITEMS = 100;
export const MAX_ATTEMPTS = 8;
const MAX_DELAY = 60_000;

/** Delay before attempt n+1 after n failures: 1 s, 2 s, 4 s ... capped at a minute, jittered. */
export function backoff(n: number, random = Math.random): number {
  return Math.round(Math.min(MAX_DELAY, 1000 * 2 ** (n - 1)) * (0.8 + random() * 0.4));
}

export interface QueueDeps {
  send?: (url: string, body: unknown) => Promise<Reply>;
  beacon?: (url: string, body: unknown) => boolean;
  now?: () => number;
  log?: (...args: unknown[]) => void;
}

let counter = 0;

export class Queue {
  private _busy = false;
  private _timer: ReturnType<typeof setTimeout> | undefined;
  private _waiting: Record<string, (reply: Reply | null) => void> = {};
  private _send: NonNullable<QueueDeps['send']>;
  private _beacon: NonNullable<QueueDeps['beacon']>;
  private _now: () => number;
  private _log: (...args: unknown[]) => void;

  private _key: string;

  // No parameter property: esbuild would emit its name as a string that the build cannot shorten.
  constructor(key: string, deps: QueueDeps = {}) {
    this._key = key;
    this._send = deps.send ?? defaultSend;
    this._beacon = deps.beacon ?? defaultBeacon;
    this._now = deps.now ?? Date.now;
    this._log = deps.log ?? (() => {});
  }

  items(): Item[] {
    try {
      const parsed = JSON.parse(load(this._key) ?? '[]');
      return Array.isArray(parsed) ? parsed : [];
    } catch {
      return [];
    }
  }

  private _store(items: Item[]): void {
    save(this._key, JSON.stringify(items.slice(-MAX_ITEMS)));
  }

  /** Queues a call; resolves with its first attempt's reply (null if it will be retried later). */
  push(url: string, body: unknown): Promise<Reply | null> {
    const item: Item = { i: `${this._now().toString(36)}${(counter++).toString(36)}`, u: url, b: body, n: 0, t: 0 };
    this._store([...this.items(), item]);
    const done = new Promise<Reply | null>((resolve) => {
      this._waiting[item.i] = resolve;
    });
    void this.flush();
    return done;
  }

  private _settle(item: Item, reply: Reply | null): void {
    this._waiting[item.i]?.(reply);
    delete this._waiting[item.i];
  }

  /**
   * Sends due items in order. A failed item waits for its own retry while the next ones go on
   * (so one refused call cannot hold the rest back); two failures in a row look like an outage
   * and end the round.
   */
  async flush(): Promise<void> {
    if (this._busy) return;
    this._busy = true;
    let failures = 0;
    try {
      for (;;) {
        if (typeof navigator !== 'undefined' && navigator.onLine === false) return this._schedule(5000);
        const items = this.items();
        const now = this._now();
        const index = items.findIndex((x) => x.t <= now);
        if (index < 0) {
          if (items.length > 0) this._schedule(Math.min(...items.map((x) => x.t)) - now);
          return;
        }
        const [item] = items.splice(index, 1);
        this._store(items); // claim it before sending
        const reply = await this._send(item!.u, item!.b);
        const retry = reply.status === 0 || reply.status >= 500 || reply.status === 408 || reply.status === 429;
        if (reply.ok || !retry) {
          if (!reply.ok) this._log('dropped after', reply.status, item!.u, reply.body);
          this._settle(item!, reply);
          failures = 0;
          continue;
        }
        item!.n++;
        if (item!.n >= MAX_ATTEMPTS) {
          this._log('giving up after', item!.n, 'attempts', item!.u);
        } else {
          const delay = reply.retryAfter ? reply.retryAfter * 1000 : backoff(item!.n);
          item!.t = this._now() + delay;
          this._store([item!, ...this.items()]);
          this._log('will retry', item!.u, 'in', Math.round(delay), 'ms');
        }
        this._settle(item!, null);
        if (++failures >= 2) {
          const next = Math.min(...this.items().map((x) => x.t));
          if (Number.isFinite(next)) this._schedule(next - this._now());
          return;
        }
      }
    } finally {
      this._busy = false;
    }
  }

  private _schedule(delay: number): void {
    clearTimeout(this._timer);
    this._timer = setTimeout(() => void this.flush(), Math.max(0, delay));
  }

  /** The network is back: everything queued is due now. */
  retryNow(): void {
    if (!this._busy) this._store(this.items().map((x) => ({ ...x, t: 0 })));
    void this.flush();
  }

  /** The page is going away: hand whatever is queued to sendBeacon. */
  unload(): void {
    const left = this.items().filter((item) => !this._beacon(item.u, item.b));
    this._store(left);
  }

  clear(): void {
    this._store([]);
  }
}
