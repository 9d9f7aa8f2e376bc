// Per-minute rate limits as Express middleware: a fixed window per (class, key), counted in memory
// or, with REDIS_URL, in Redis so several instances share them; the composition root opens one
// RateLimiter and closes it. Limits come from
// `config.rateLimits` (null turns every limit off). Every limited response carries
// X-RateLimit-Limit/Remaining/Reset; a refused one is 429 RATE_LIMIT_EXCEEDED with Retry-After.
// When the store fails (Redis down), the failure is logged and counted, and the request is let
// through (RATE_LIMITS_FAIL=open, the default) or refused with 503 (closed).
import type { NextFunction, Request, Response } from 'express';
import { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { Config, RateLimitClass } from '../config.js';
import { AppError } from '../errors.js';
import type { Metrics } from '../metrics.js';

const WINDOW_MS = 60_000;
const AUTH_FAILURES_WHAT = 'failed authentications from your address';
/** How long Redis commands fail at once after one failed, before the next is tried. */
const FAIL_FAST_MS = 5_000;
/** Sweep expired windows once the table holds this many keys, so memory stays bounded. */
const SWEEP_AT = 10_000;

export interface RateDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** When the window ends, in milliseconds since the epoch. */
  resetAt: number;
}

/**
 * Counts requests in fixed one-minute windows: `hit` counts one more and returns this request's
 * number in its window; `peek` reads the count without adding to it. Both throw when the store
 * cannot answer.
 */
interface WindowStore {
  hit(id: string, now: number): Promise<{ count: number; resetAt: number }>;
  peek(id: string, now: number): Promise<{ count: number; resetAt: number }>;
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
    async peek(id, now) {
      const w = windows.get(id);
      return w && w.resetAt > now ? { count: w.count, resetAt: w.resetAt } : { count: 0, resetAt: now + WINDOW_MS };
    },
    async close() {},
  };
}

// INCR the window's counter, start its expiry on the first hit, return the count and time left.
const HIT_SCRIPT = `local c = redis.call('INCR', KEYS[1])
if c == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return {c, redis.call('PTTL', KEYS[1])}`;
// Read the window's counter without counting.
const PEEK_SCRIPT = `return {tonumber(redis.call('GET', KEYS[1]) or '0'), redis.call('PTTL', KEYS[1])}`;

/** Several instances: counters in Redis. */
function redisStore(url: string, logger: Logger): WindowStore {
  // Bounded waits: a limit check never holds a request for long when Redis is slow or gone.
  const redis = new Redis(url, { maxRetriesPerRequest: 1, commandTimeout: 250, connectTimeout: 1000 });
  let reported = false;
  redis.on('error', (err) => {
    if (!reported) logger.warn({ err: err.message }, 'rate limits: Redis connection error');
    reported = true;
  });
  redis.on('ready', () => {
    reported = false;
  });
  // After a command failed, later ones fail at once (instead of each waiting for its timeout)
  // until Redis is ready again or a few seconds have passed, when one more is tried.
  let failedAt = 0;
  redis.on('ready', () => {
    failedAt = 0;
  });
  const run = async (script: string, id: string, now: number, ...args: number[]) => {
    if (redis.status !== 'ready' && Date.now() - failedAt < FAIL_FAST_MS) throw new Error(`Redis is ${redis.status}`);
    try {
      const [count, ttl] = (await redis.eval(script, 1, `tally:rl:${id}`, ...args)) as [number, number];
      return { count, resetAt: now + (ttl > 0 ? ttl : WINDOW_MS) };
    } catch (err) {
      failedAt = Date.now();
      throw err;
    }
  };
  return {
    hit: (id, now) => run(HIT_SCRIPT, id, now, WINDOW_MS),
    peek: (id, now) => run(PEEK_SCRIPT, id, now),
    async close() {
      redis.disconnect();
    },
  };
}

/**
 * The counters of one composition root (tally.ts), shared by every middleware it builds: in Redis
 * when the configuration names REDIS_URL, else in this process, decided once when it opens.
 */
export class RateLimiter {
  /** Where the counters live. */
  readonly kind: 'memory' | 'redis';
  /** Store failures since the limiter opened. */
  failures = 0;
  /** When a failure was last logged (failures are logged at most once per window). */
  private loggedAt = 0;
  private readonly store: WindowStore;

  constructor(
    private readonly config: Config,
    private readonly logger: Logger,
    private readonly metrics?: Metrics,
  ) {
    this.kind = config.redisUrl ? 'redis' : 'memory';
    this.store = config.redisUrl ? redisStore(config.redisUrl, logger) : memoryStore();
  }

  /**
   * Runs one store operation. On failure: counts and logs it, then answers null (fail open: the
   * request is not limited) or throws 503 SERVICE_UNAVAILABLE (RATE_LIMITS_FAIL=closed).
   */
  private async ask(
    operation: (store: WindowStore) => Promise<{ count: number; resetAt: number }>,
    now: number,
  ): Promise<{ count: number; resetAt: number } | null> {
    const { config } = this;
    try {
      return await operation(this.store);
    } catch (err) {
      this.failures++;
      if (now - this.loggedAt >= WINDOW_MS) {
        this.loggedAt = now;
        this.logger.error(
          { err: (err as Error)?.message, failures: this.failures, fail_mode: config.rateLimitsFail },
          config.rateLimitsFail === 'closed'
            ? 'rate limits: the store failed; requests are refused with 503 (RATE_LIMITS_FAIL=closed)'
            : 'rate limits: the store failed; requests are let through unlimited (RATE_LIMITS_FAIL=open)',
        );
      }
      if (config.rateLimitsFail === 'closed') throw serviceUnavailable('rate limiter');
      return null;
    }
  }

  /** Counts one request of `cls` for `key`; null when the class is not limited (or the store failed open). */
  async consume(cls: RateLimitClass, key: string, now = Date.now()): Promise<RateDecision | null> {
    const limit = this.config.rateLimits?.[cls];
    if (!limit) return null;
    const counted = await this.ask((store) => store.hit(`${cls}:${key}`, now), now);
    if (!counted) return null;
    const { count, resetAt } = counted;
    if (count > limit) this.metrics?.rateLimitRefusals.inc({ class: cls });
    return { allowed: count <= limit, limit, remaining: Math.max(0, limit - count), resetAt };
  }

  /**
   * Refuses every credential from an IP that failed authentication `auth_failures` times this
   * minute: throws 429 before the credential is even looked up.
   */
  async checkAuthFailures(res: Response, ip: string, now = Date.now()): Promise<void> {
    const limit = this.config.rateLimits?.auth_failures;
    if (!limit) return;
    const seen = await this.ask((store) => store.peek(`auth_failures:${ip}`, now), now);
    if (!seen || seen.count < limit) return;
    this.metrics?.rateLimitRefusals.inc({ class: 'auth_failures' });
    throw applyDecision(res, { allowed: false, limit, remaining: 0, resetAt: seen.resetAt }, now, AUTH_FAILURES_WHAT)!;
  }

  /** Counts one failed authentication of an IP. */
  async recordAuthFailure(ip: string, now = Date.now()): Promise<void> {
    if (!this.config.rateLimits?.auth_failures) return;
    await this.ask((store) => store.hit(`auth_failures:${ip}`, now), now);
  }

  /**
   * Middleware limiting requests of one class. `keyFn` names what is limited (for example the IP
   * and app); returning null leaves the request unlimited. `cls` may be a function of the request
   * when one route serves several classes.
   */
  middleware(cls: RateLimitClass | ((req: Request) => RateLimitClass), keyFn: (req: Request) => string | null) {
    return async (req: Request, res: Response, next: NextFunction) => {
      if (!this.config.rateLimits) return next();
      const key = keyFn(req);
      if (key === null) return next();
      const now = Date.now();
      const decision = await this.consume(typeof cls === 'function' ? cls(req) : cls, key, now);
      next(decision ? (applyDecision(res, decision, now) ?? undefined) : undefined);
    };
  }

  async close(): Promise<void> {
    await this.store.close();
  }
}

function serviceUnavailable(what: 'rate limiter'): AppError {
  return new AppError(
    503,
    'SERVICE_UNAVAILABLE',
    `The ${what} cannot be reached right now, so requests are refused for safety. Retry in a few seconds.`,
  );
}

/** Sets the rate-limit headers of a decision; returns the 429 error when the request is refused. */
export function applyDecision(
  res: Response,
  decision: RateDecision,
  now = Date.now(),
  what = 'requests',
): AppError | null {
  res.setHeader('X-RateLimit-Limit', String(decision.limit));
  res.setHeader('X-RateLimit-Remaining', String(decision.remaining));
  res.setHeader('X-RateLimit-Reset', String(Math.ceil(decision.resetAt / 1000)));
  if (decision.allowed) return null;
  const retryAfter = Math.max(1, Math.ceil((decision.resetAt - now) / 1000));
  res.setHeader('Retry-After', String(retryAfter));
  return new AppError(
    429,
    'RATE_LIMIT_EXCEEDED',
    `Too many ${what}: at most ${decision.limit} per minute are allowed here. Retry in ${retryAfter} seconds.`,
    { limit: decision.limit, window: WINDOW_MS / 1000, retry_after: retryAfter },
  );
}
