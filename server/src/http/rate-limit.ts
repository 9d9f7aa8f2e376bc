// Per-minute rate limits as Express middleware: an in-memory fixed window per (class, key), with
// limits from `config.rateLimits` (null turns every limit off). Every limited response carries
// X-RateLimit-Limit/Remaining/Reset; a refused one is 429 RATE_LIMIT_EXCEEDED with Retry-After.
import type { NextFunction, Request, Response } from 'express';
import type { Config, RateLimitClass } from '../config.js';
import { AppError } from '../errors.js';

const WINDOW_MS = 60_000;
/** Sweep expired windows once the table holds this many keys, so memory stays bounded. */
const SWEEP_AT = 10_000;

interface Window {
  count: number;
  resetAt: number;
}

/** One counter table per configuration, shared by every middleware built from it. */
const stores = new WeakMap<Config, Map<string, Window>>();

function storeFor(config: Config): Map<string, Window> {
  let store = stores.get(config);
  if (!store) {
    store = new Map();
    stores.set(config, store);
  }
  return store;
}

function sweep(store: Map<string, Window>, now: number): void {
  for (const [key, w] of store) if (w.resetAt <= now) store.delete(key);
}

export interface RateDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** When the window ends, in milliseconds since the epoch. */
  resetAt: number;
}

/** Counts one request of `cls` for `key`; null when the class is not limited. */
export function consume(config: Config, cls: RateLimitClass, key: string, now = Date.now()): RateDecision | null {
  const limit = config.rateLimits?.[cls];
  if (!limit) return null;
  const store = storeFor(config);
  const id = `${cls}\u0000${key}`;
  let w = store.get(id);
  if (!w || w.resetAt <= now) {
    if (store.size >= SWEEP_AT) sweep(store, now);
    w = { count: 0, resetAt: now + WINDOW_MS };
    store.set(id, w);
  }
  w.count++;
  return { allowed: w.count <= limit, limit, remaining: Math.max(0, limit - w.count), resetAt: w.resetAt };
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
 * Puts the rate-limit headers of a decision on the response; returns the 429 error to throw
 * when the request is over its limit (it also sets Retry-After), else null.
 */
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
  return (req: Request, res: Response, next: NextFunction) => {
    if (!config.rateLimits) return next();
    const key = keyFn(req);
    if (key === null) return next();
    const now = Date.now();
    const decision = consume(config, typeof cls === 'function' ? cls(req) : cls, key, now);
    next(decision ? (applyDecision(res, decision, now) ?? undefined) : undefined);
  };
}
