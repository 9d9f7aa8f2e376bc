// GET /metrics: the root's metrics in Prometheus's text format, outside the versioned API and its
// contract (mounted with the other operational endpoints, http/ops.ts) and outside the per-minute
// rate limits, so a scraper is never refused for scraping. It needs a token as
// `Authorization: Bearer <token>`: METRICS_TOKEN (compared in constant time) or the admin token
// (checked as the admin API checks it). A missing or wrong token is 401 in the error envelope and
// counts against the per-IP throttle of failed authentications, like every other credential.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';
import { authenticateAdmin } from '../admin/keys.js';
import type { Config } from '../config.js';
import { AppError, AuthError } from '../errors.js';
import type { Metrics } from '../metrics.js';
import type { Db } from '../storage/handle.js';
import { bearer, checkCredential } from './auth.js';
import type { RateLimiter } from './rate-limit.js';

const digest = (value: string) => createHash('sha256').update(value, 'utf8').digest();

/** Whether `token` is METRICS_TOKEN; both are hashed first, so the comparison takes the same time whatever they hold. */
function isMetricsToken(config: Config, token: string): boolean {
  return config.metricsToken !== undefined && timingSafeEqual(digest(token), digest(config.metricsToken));
}

async function authenticateScraper(db: Db, config: Config, token: string | undefined, now: Date): Promise<void> {
  if (!token) {
    throw new AuthError(
      'MISSING_AUTH',
      'GET /metrics needs a token: send METRICS_TOKEN or the admin token as Authorization: Bearer <token>.',
    );
  }
  if (isMetricsToken(config, token)) return;
  try {
    await authenticateAdmin(db, config, token, now);
  } catch (err) {
    if (err instanceof AppError && err.code === 'INVALID_API_KEY') {
      throw new AuthError('INVALID_API_KEY', 'The token is neither METRICS_TOKEN nor the admin token.');
    }
    throw err;
  }
}

export function metricsHandler(db: Db, config: Config, limiter: RateLimiter, metrics: Metrics, clock: () => Date) {
  return async (req: Request, res: Response, next: NextFunction) => {
    try {
      await checkCredential(limiter, req, () => authenticateScraper(db, config, bearer(req), clock()));
      const { contentType, body } = await metrics.render();
      res.setHeader('Cache-Control', 'no-store');
      res.type(contentType).send(body);
    } catch (err) {
      next(err);
    }
  };
}
