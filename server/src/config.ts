// Configuration: the only module that reads process.env. Everything else receives a frozen Config.
import path from 'node:path';
import { z } from 'zod';

export type RateLimitClass = 'events' | 'batch' | 'analytics' | 'other' | 'mcp' | 'website_users' | 'website_events';

/** Requests allowed per minute for each class, as the interface spec sets them. */
export const SPEC_RATE_LIMITS: Readonly<Record<RateLimitClass, number>> = Object.freeze({
  events: 1000,
  batch: 100,
  analytics: 100,
  other: 500,
  mcp: 100,
  website_users: 60,
  website_events: 600,
});

const rateLimitsSchema = z
  .string()
  .default('spec')
  .transform((raw, ctx): Readonly<Partial<Record<RateLimitClass, number>>> | null => {
    if (raw === 'off') return null;
    if (raw === 'spec') return SPEC_RATE_LIMITS;
    try {
      const parsed = z
        .partialRecord(z.enum(Object.keys(SPEC_RATE_LIMITS) as [RateLimitClass]), z.number().int().positive())
        .parse(JSON.parse(raw));
      return Object.freeze({ ...SPEC_RATE_LIMITS, ...parsed });
    } catch {
      ctx.addIssue({
        code: 'custom',
        message: `RATE_LIMITS must be "spec", "off" or a JSON object of per-minute limits with keys ${Object.keys(SPEC_RATE_LIMITS).join(', ')}`,
      });
      return z.NEVER;
    }
  });

const envSchema = z.object({
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  HOST: z.string().default('127.0.0.1'),
  DATABASE_URL: z.string().url().optional(),
  SANDBOX_DATABASE_URL: z.string().url().optional(),
  DATA_DIR: z.string().default('./.data'),
  ADMIN_TOKEN: z.string().min(16, 'ADMIN_TOKEN must be at least 16 characters').optional(),
  PUBLIC_BASE_URL: z.string().url().optional(),
  CDN_URL: z.string().url().optional(),
  LLM_BASE_URL: z.string().url().optional(),
  LLM_API_KEY: z.string().optional(),
  LLM_MODEL: z.string().default('gpt-4o-mini'),
  REDIS_URL: z.string().optional(),
  RATE_LIMITS: rateLimitsSchema,
  SECRET_KEY: z.string().min(16, 'SECRET_KEY must be at least 16 characters').optional(),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  NODE_ENV: z.string().default('production'),
  ANALYTICS_QUERY_TIMEOUT_MS: z.coerce.number().int().positive().default(10_000),
  EMBEDDED_QUERY_TIMEOUT_MS: z.coerce.number().int().positive().default(2_000),
});

export interface Config {
  readonly port: number;
  readonly host: string;
  /** PostgreSQL connection string; when absent the embedded PGlite database in dataDir is used. */
  readonly databaseUrl: string | undefined;
  /** How the SQL sandbox logs in to PostgreSQL; by default the sandbox role Tally sets up. */
  readonly sandboxDatabaseUrl: string | undefined;
  readonly dataDir: string;
  readonly adminToken: string | undefined;
  readonly publicBaseUrl: string | undefined;
  readonly cdnUrl: string | undefined;
  readonly llm: { readonly baseUrl?: string; readonly apiKey?: string; readonly model: string };
  readonly redisUrl: string | undefined;
  /** Per-minute limits per class, or null when rate limiting is off. */
  readonly rateLimits: Readonly<Partial<Record<RateLimitClass, number>>> | null;
  readonly secretKey: string | undefined;
  readonly logLevel: string;
  /** Statement timeout of POST /v1/analytics/query, in milliseconds (PostgreSQL only). */
  readonly analyticsQueryTimeoutMs: number;
  /** Time cap of every sandbox query in embedded mode, where the query is stopped by restarting the database thread. */
  readonly embeddedQueryTimeoutMs: number;
  /** Validate responses against the contract and fail on drift (tests); otherwise drift is logged. */
  readonly strictResponses: boolean;
}

export class ConfigError extends Error {}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  // An empty variable means "not set", as it does for most tools.
  const present = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const result = envSchema.safeParse(present);
  if (!result.success) {
    const lines = result.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
  }
  const e = result.data;
  return Object.freeze({
    port: e.PORT,
    host: e.HOST,
    databaseUrl: e.DATABASE_URL,
    sandboxDatabaseUrl: e.SANDBOX_DATABASE_URL,
    dataDir: path.resolve(e.DATA_DIR),
    adminToken: e.ADMIN_TOKEN,
    publicBaseUrl: e.PUBLIC_BASE_URL,
    cdnUrl: e.CDN_URL,
    llm: Object.freeze({ baseUrl: e.LLM_BASE_URL, apiKey: e.LLM_API_KEY, model: e.LLM_MODEL }),
    redisUrl: e.REDIS_URL,
    rateLimits: e.RATE_LIMITS,
    secretKey: e.SECRET_KEY,
    logLevel: e.LOG_LEVEL,
    analyticsQueryTimeoutMs: e.ANALYTICS_QUERY_TIMEOUT_MS,
    embeddedQueryTimeoutMs: e.EMBEDDED_QUERY_TIMEOUT_MS,
    strictResponses: e.NODE_ENV === 'test',
  });
}
