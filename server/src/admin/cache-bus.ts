// How the caches of keys and apps (keys.ts, app-cache.ts) hear of changes. A change made through
// a root (a key revoked, an app's settings changed) drops the entry there at once; with REDIS_URL
// it is also published on one Redis channel, and every other root drops the entry as soon as the
// message arrives. Without Redis nothing travels: entries expire CACHE_TTL_MS after they were
// read, by the root's clock. A subscriber that (re)connects drops everything, since messages sent
// while it was away are lost.
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import type { Logger } from 'pino';

const CHANNEL = 'tally:cache:invalidate';

/** How long a cached key or app is used before it is read again (also with Redis, as a safety net). */
export const CACHE_TTL_MS = 5_000;

/** What changed: a key (by id), an app (by id), or anything (a subscriber that reconnected). */
export type Invalidation = { kind: 'key'; id: string } | { kind: 'app'; id: string } | { kind: 'all' };

type Listener = (change: Invalidation) => void;

function parse(payload: string): (Invalidation & { from?: string }) | null {
  try {
    const m = JSON.parse(payload) as { kind?: unknown; id?: unknown; from?: unknown };
    if ((m.kind === 'key' || m.kind === 'app') && typeof m.id === 'string') {
      return { kind: m.kind, id: m.id, from: typeof m.from === 'string' ? m.from : undefined };
    }
  } catch {
    // not ours
  }
  return null;
}

export class CacheBus {
  /** This root, as named in the messages it publishes (it ignores its own). */
  readonly instance = randomBytes(6).toString('hex');
  private readonly listeners = new Set<Listener>();
  private readonly heard = new Set<Listener>();
  private readonly publisher: Redis | null = null;
  private readonly subscriber: Redis | null = null;
  private readonly subscription: Promise<void> = Promise.resolve();

  constructor(
    redisUrl: string | undefined,
    private readonly logger: Logger,
  ) {
    if (!redisUrl) return;
    const options = { maxRetriesPerRequest: 1, connectTimeout: 1000 };
    this.publisher = new Redis(redisUrl, options);
    this.subscriber = new Redis(redisUrl, options);
    for (const client of [this.publisher, this.subscriber]) {
      client.on('error', (err) => logger.warn({ err: err.message }, 'cache invalidation: Redis error'));
    }
    // After a reconnection (not the first connection), messages may have been missed: drop everything.
    let connected = false;
    this.subscriber.on('ready', () => {
      if (connected) this.apply({ kind: 'all' });
      connected = true;
    });
    this.subscriber.on('message', (_channel: string, payload: string) => this.received(payload));
    this.subscription = this.subscriber.subscribe(CHANNEL).then(
      () => undefined,
      (err) => logger.warn({ err: (err as Error).message }, 'cache invalidation: could not subscribe'),
    );
  }

  /** Whether changes travel to other instances at once (Redis configured). */
  get relays(): boolean {
    return this.publisher !== null;
  }

  /** Resolves once this root listens to other instances' changes (at once without Redis). */
  subscribed(): Promise<void> {
    return this.subscription;
  }

  /** Calls `listener` with every change, made here or elsewhere. */
  onChange(listener: Listener): void {
    this.listeners.add(listener);
  }

  /** Applies a change made through this root here at once, then tells the other instances. */
  publish(change: Exclude<Invalidation, { kind: 'all' }>): void {
    this.apply(change);
    this.publisher?.publish(CHANNEL, JSON.stringify({ ...change, from: this.instance })).catch((err) => {
      this.logger.warn({ err: (err as Error).message }, 'cache invalidation: could not publish');
    });
  }

  /** Resolves when a change from another instance matching `wanted` has been applied here (tests). */
  nextFromElsewhere(wanted: (change: Invalidation) => boolean): Promise<Invalidation> {
    return new Promise((resolve) => {
      const listener: Listener = (change) => {
        if (!wanted(change)) return;
        this.heard.delete(listener);
        resolve(change);
      };
      this.heard.add(listener);
    });
  }

  private received(payload: string): void {
    const change = parse(payload);
    if (!change || change.from === this.instance) return;
    const { from: _from, ...rest } = change;
    this.apply(rest as Invalidation);
    for (const listener of [...this.heard]) listener(rest as Invalidation);
  }

  private apply(change: Invalidation): void {
    for (const listener of this.listeners) listener(change);
  }

  async close(): Promise<void> {
    this.subscriber?.disconnect();
    this.publisher?.disconnect();
  }
}
