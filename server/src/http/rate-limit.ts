// Per-minute rate limits as Express middleware: a fixed window per (class, key), counted in memory
// or, with REDIS_URL, in Redis so several instances share them. Limits come from
// `config.rateLimits` (null turns every limit off). Every limited response carries
// X-RateLimit-Limit/Remaining/Reset; a refused one is 429 RATE_LIMIT_EXCEEDED with Retry-After.
import type { NextFunction, Request, Response } from 'express';
import { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { Config, RateLimitClass } from '../config.js';
import { AppError } from '../errors.js';

const WINDOW_MS = 60_000;
/** Sweep expired windows once the table holds this many keys, so memory stays bounded. */
const SWEEP_AT = 10_000;

export interface RateDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** When the window ends, in milliseconds since the epoch. */
  resetAt: number;
}

/** Counts requests in fixed one-minute windows: `count` is this request's number in its window. */
interface WindowStore {
  hit(id: string, now: number): Promise<{ count: number; resetAt: number }>;
  close(): Promise<void>;
}

/** One process: a Map of windows. */
function memoryStore(): WindowStore {
  const windows = new Map<string, { count: number; resetAt: number }>();
  return {
    async hit(id, now) {
      let w = windows.get(id);
      if (!w || w.resetAt <= now) {
        if (windows.size >= SWEEP_AT) for (const [k, v] of windows) if (v.resetAt <= now) windows.delete(k);
        w = { count: 0, resetAt: now + WINDOW_MS };
        windows.set(id, w);
      }
      w.count++;
      return { count: w.count, resetAt: w.resetAt };
    },
    async close() {},
  };
}

// INCR the window's counter, start its expiry on the first hit, return the count and time left.
const HIT_SCRIPT = `local c = redis.call('INCR', KEYS[1])
if c == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return {c, redis.call('PTTL', KEYS[1])}`;

/** Several instances: counters in Redis. If Redis cannot be reached the request is let through. */
function redisStore(url: string, logger: Logger): WindowStore {
  // Bounded waits: a limit check never holds a request for long when Redis is slow or gone.
  const redis = new Redis(url, { maxRetriesPerRequest: 1, commandTimeout: 250, connectTimeout: 1000 });
  let warned = false;
  redis.on('error', (err) => {
    if (!warned) logger.warn({ err: err.message }, 'rate limits: Redis is unreachable; requests are not limited');
    warned = true;
  });
  redis.on('ready', () => {
    warned = false;
  });
  return {
    async hit(id, now) {
      try {
        const [count, ttl] = (await redis.eval(HIT_SCRIPT, 1, `tally:rl:${id}`, WINDOW_MS)) as [number, number];
        return { count, resetAt: now + (ttl > 0 ? ttl : WINDOW_MS) };
      } catch {
        return { count: 0, resetAt: now + WINDOW_MS };
      }
    },
    async close() {
      redis.disconnect();
    },
  };
}

/** One store per configuration, shared by every limiter built from it. */
const stores = new WeakMap<Config, WindowStore>();

/** Opens the counter store of this configuration (Redis with REDIS_URL, else memory). */
export function openRateLimits(config: Config, logger: Logger): void {
  if (!stores.has(config)) stores.set(config, config.redisUrl ? redisStore(config.redisUrl, logger) : memoryStore());
}

export async function closeRateLimits(config: Config): Promise<void> {
  await stores.get(config)?.close();
  stores.delete(config);
}

/** Counts one request of `cls` for `key`; null when the class is not limited. */
export async function consume(
  config: Config,
  cls: RateLimitClass,
  key: string,
  now = Date.now(),
): Promise<RateDecision | null> {
  const limit = config.rateLimits?.[cls];
  if (!limit) return null;
  let store = stores.get(config);
  if (!store) {
    store = memoryStore();
    stores.set(config, store);
  }
  const { count, resetAt } = await store.hit(`${cls}:${key}`, now);
  return { allowed: count <= limit, limit, remaining: Math.max(0, limit - count), resetAt };
}

/** Sets the rate-limit headers of a decision; returns the 429 error when the request is refused. */
export function applyDecision(res: Response, decision: RateDecision, now = Date.now()): AppError | null {
  res.setHeader('X-RateLimit-Limit', String(decision.limit));
  res.setHeader('X-RateLimit-Remaining', String(decision.remaining));
  res.setHeader('X-RateLimit-Reset', String(Math.ceil(decision.resetAt / 1000)));
  if (decision.allowed) return null;
  const retryAfter = Math.max(1, Math.ceil((decision.resetAt - now) / 1000));
  res.setHeader('Retry-After', String(retryAfter));
  return new AppError(
    429,
    'RATE_LIMIT_EXCEEDED',
    `Too many requests: at most ${decision.limit} per minute are allowed here. Retry in ${retryAfter} seconds.`,
    { limit: decision.limit, window: WINDOW_MS / 1000, retry_after: retryAfter },
  );
}

/**
 * Middleware limiting requests of one class. `keyFn` names what is limited (for example the IP
 * and app); returning null leaves the request unlimited. `cls` may be a function of the request
 * when one route serves several classes.
 */
export function rateLimit(
  config: Config,
  cls: RateLimitClass | ((req: Request) => RateLimitClass),
  keyFn: (req: Request) => string | null,
) {
  return async (req: Request, res: Response, next: NextFunction) => {
    if (!config.rateLimits) return next();
    const key = keyFn(req);
    if (key === null) return next();
    const now = Date.now();
    const decision = await consume(config, typeof cls === 'function' ? cls(req) : cls, key, now);
    next(decision ? (applyDecision(res, decision, now) ?? undefined) : undefined);
  };
}
