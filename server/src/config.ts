// Configuration: the only module that reads process.env. Everything else receives a frozen Config.
import path from 'node:path';
import ipaddr from 'ipaddr.js';
import { z } from 'zod';

export type RateLimitClass =
  | 'events'
  | 'batch'
  | 'analytics'
  | 'other'
  | 'mcp'
  | 'website_users'
  | 'website_events'
  | 'clicks'
  | 'auth_failures';

/** Requests allowed per minute for each class, as the interface spec sets them. */
export const SPEC_RATE_LIMITS: Readonly<Record<RateLimitClass, number>> = Object.freeze({
  events: 1000,
  batch: 100,
  analytics: 100,
  other: 500,
  mcp: 100,
  website_users: 60,
  website_events: 600,
  /** The tracked push link GET /v1/r/{deliveryId}, per IP (it needs no credential). */
  clicks: 600,
  /** Failed authentications per IP, before every credential from that IP is refused for the minute. */
  auth_failures: 20,
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

/**
 * Express's `trust proxy` value: `true`/`false`, a hop count, or a comma-separated list of
 * addresses, CIDR ranges and the names loopback, linklocal and uniquelocal.
 */
export type TrustProxy = boolean | number | string;

const trustProxySchema = z
  .string()
  .default('loopback')
  .transform((raw, ctx): TrustProxy => {
    const value = raw.trim();
    if (value === 'true') return true;
    if (value === 'false') return false;
    if (/^\d+$/.test(value)) return Number(value);
    const names = new Set(['loopback', 'linklocal', 'uniquelocal']);
    const bad = value
      .split(',')
      .map((v) => v.trim())
      .filter((v) => !(names.has(v) || isPlainAddress(v) || isCidr(v)));
    if (value === '' || bad.length > 0) {
      ctx.addIssue({
        code: 'custom',
        message: `TRUST_PROXY must be true, false, a number of proxy hops, or a comma-separated list of addresses, CIDR ranges, loopback, linklocal or uniquelocal${bad.length ? ` (not understood: ${bad.join(', ')})` : ''}`,
      });
      return z.NEVER;
    }
    return value;
  });

/** An address written out in full: four decimal parts for IPv4 (not `127.1` or `0x7f.1`), or IPv6. */
function isPlainAddress(value: string): boolean {
  return ipaddr.IPv4.isValidFourPartDecimal(value) || ipaddr.IPv6.isValid(value);
}

function isCidr(value: string): boolean {
  const slash = value.lastIndexOf('/');
  return slash > 0 && isPlainAddress(value.slice(0, slash)) && ipaddr.isValidCIDR(value);
}

const HOST_NAME = /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/;

/** PUSH_ENDPOINT_ALLOWLIST: host names (lower-cased) and CIDR ranges (a bare address is one host). */
const allowlistSchema = z
  .string()
  .default('')
  .transform((raw, ctx): PushEndpointAllowlist => {
    const hosts: string[] = [];
    const ranges: string[] = [];
    const bad: string[] = [];
    for (const item of raw.split(',').map((v) => v.trim().toLowerCase())) {
      if (item === '') continue;
      const bare = item.replace(/^\[(.*)\]$/, '$1');
      if (isCidr(bare)) ranges.push(bare);
      else if (isPlainAddress(bare)) ranges.push(`${bare}/${ipaddr.IPv6.isValid(bare) ? 128 : 32}`);
      // A name ending in a number is an address in a short form (`127.1`), not a host name.
      else if (HOST_NAME.test(item) && !/(^|\.)\d+$/.test(item)) hosts.push(item);
      else bad.push(item);
    }
    if (bad.length > 0) {
      ctx.addIssue({
        code: 'custom',
        message: `PUSH_ENDPOINT_ALLOWLIST must be a comma-separated list of host names and CIDR ranges (not understood: ${bad.join(', ')})`,
      });
      return z.NEVER;
    }
    return Object.freeze({ hosts: Object.freeze(hosts), ranges: Object.freeze(ranges) });
  });

/** MCP_ALLOWED_ORIGINS: web origins (`scheme://host[:port]`) that may call `/mcp`, normalised. */
const originsSchema = z
  .string()
  .default('')
  .transform((raw, ctx): readonly string[] => {
    const origins: string[] = [];
    const bad: string[] = [];
    for (const item of raw.split(',').map((v) => v.trim())) {
      if (item === '') continue;
      const origin = parseOrigin(item);
      if (origin) origins.push(origin);
      else bad.push(item);
    }
    if (bad.length > 0) {
      ctx.addIssue({
        code: 'custom',
        message: `MCP_ALLOWED_ORIGINS must be a comma-separated list of origins such as https://app.example.com or http://localhost:6274, without a path (not understood: ${bad.join(', ')})`,
      });
      return z.NEVER;
    }
    return Object.freeze([...new Set(origins)]);
  });

/** `scheme://host[:port]` of an http(s) URL written as an origin (no path, query or credentials), else null. */
export function parseOrigin(value: string): string | null {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return null;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return null;
  if (url.username || url.password || url.search || url.hash) return null;
  if (url.pathname !== '/') return null;
  return url.origin;
}

export interface PushEndpointAllowlist {
  /** Host names, lower case, matched exactly. */
  readonly hosts: readonly string[];
  /** CIDR ranges (`10.0.0.0/8`, `fd00::/8`); an address in one of them is exempt. */
  readonly ranges: readonly string[];
}

const envSchema = z.object({
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  HOST: z.string().default('127.0.0.1'),
  DATABASE_URL: z.string().url().optional(),
  SANDBOX_DATABASE_URL: z.string().url().optional(),
  DATA_DIR: z.string().default('./.data'),
  ADMIN_TOKEN: z.string().min(16, 'ADMIN_TOKEN must be at least 16 characters').optional(),
  METRICS_TOKEN: z.string().min(16, 'METRICS_TOKEN must be at least 16 characters').optional(),
  ADMIN_TOKEN_PREVIOUS: z.string().min(16, 'ADMIN_TOKEN_PREVIOUS must be at least 16 characters').optional(),
  PUBLIC_BASE_URL: z.string().url().optional(),
  CDN_URL: z.string().url().optional(),
  LLM_BASE_URL: z.string().url().optional(),
  LLM_API_KEY: z.string().optional(),
  LLM_MODEL: z.string().default('gpt-4o-mini'),
  REDIS_URL: z.string().optional(),
  RATE_LIMITS: rateLimitsSchema,
  RATE_LIMITS_FAIL: z.enum(['open', 'closed']).default('open'),
  TRUST_PROXY: trustProxySchema,
  PUSH_ENDPOINT_ALLOWLIST: allowlistSchema,
  SECRET_KEY: z.string().min(16, 'SECRET_KEY must be at least 16 characters').optional(),
  SECRET_KEY_PREVIOUS: z.string().min(16, 'SECRET_KEY_PREVIOUS must be at least 16 characters').optional(),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  NODE_ENV: z.string().default('production'),
  ANALYTICS_QUERY_TIMEOUT_MS: z.coerce.number().int().positive().default(10_000),
  EMBEDDED_QUERY_TIMEOUT_MS: z.coerce.number().int().positive().default(2_000),
  CAMPAIGN_WORKERS: z.enum(['on', 'off']).default('on'),
  LEAN_INGESTION: z.enum(['on', 'off']).default('on'),
  INGEST_QUEUE_LIMIT: z.coerce.number().int().min(100).max(10_000_000).default(20_000),
  INGEST_GROUPS_IN_FLIGHT: z.coerce.number().int().min(1).max(16).optional(),
  PUSH_PENDING_STALE_SECONDS: z.coerce.number().int().positive().max(86_400).default(120),
  MCP_CAMPAIGN_LEAD_MINUTES: z.coerce.number().int().min(1).max(10_080).default(15),
  MCP_CONFIRMATION_TIMEOUT_SECONDS: z.coerce.number().int().min(1).max(600).default(45),
  MCP_ALLOWED_ORIGINS: originsSchema,
  SHUTDOWN_GRACE_SECONDS: z.coerce.number().int().min(0).max(3600).default(25),
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
  /** A token that may read GET /metrics (besides the admin token), for a Prometheus server. */
  readonly metricsToken: string | undefined;
  /** The admin token being replaced (ADMIN_TOKEN_PREVIOUS), accepted beside ADMIN_TOKEN during a rotation. */
  readonly adminTokenPrevious: string | undefined;
  readonly publicBaseUrl: string | undefined;
  readonly cdnUrl: string | undefined;
  readonly llm: { readonly baseUrl?: string; readonly apiKey?: string; readonly model: string };
  readonly redisUrl: string | undefined;
  /** Per-minute limits per class, or null when rate limiting is off. */
  readonly rateLimits: Readonly<Partial<Record<RateLimitClass, number>>> | null;
  /** When the rate-limit store (Redis) fails: let requests through (`open`) or answer 503 (`closed`). */
  readonly rateLimitsFail: 'open' | 'closed';
  /** Express's `trust proxy` setting: which proxies' X-Forwarded-For is believed (client IPs). */
  readonly trustProxy: TrustProxy;
  /** Web Push endpoints exempt from the https and public-address rules (tests, private deployments). */
  readonly pushEndpointAllowlist: PushEndpointAllowlist;
  /**
   * The key that seals secrets at rest: SECRET_KEY, else (embedded database) the key generated into
   * the data directory at start (`secretKeySource`); undefined until the server has resolved it.
   */
  readonly secretKey: string | undefined;
  /** Keys values may still be sealed with (SECRET_KEY_PREVIOUS, a generated key SECRET_KEY replaced). */
  readonly previousSecretKeys: readonly string[];
  /** Where `secretKey` came from. */
  readonly secretKeySource: 'environment' | 'generated' | null;
  readonly logLevel: string;
  /** Statement timeout of POST /v1/analytics/query, in milliseconds (PostgreSQL only). */
  readonly analyticsQueryTimeoutMs: number;
  /** Time cap of every sandbox query in embedded mode, where the query is stopped by restarting the database thread. */
  readonly embeddedQueryTimeoutMs: number;
  /**
   * Whether this instance runs the campaign jobs (scheduler, triggers, sends) and the delivery worker
   * (push retries, /sendpush's included); `CAMPAIGN_WORKERS=off` leaves them to others.
   */
  readonly campaignWorkers: boolean;
  /**
   * Whether POST /v1/events and /v1/events/batch take the lean path (http/ingest-listener.ts) in
   * front of the Express app; `LEAN_INGESTION=off` sends them through the app like the rest.
   */
  readonly leanIngestion: boolean;
  /**
   * Events received and not yet committed, at most (`INGEST_QUEUE_LIMIT`): past it, new ingestion
   * requests are refused with 503 and `Retry-After` instead of waiting in memory for a slow database.
   */
  readonly ingestQueueLimit: number;
  /**
   * Groups of events the writer has in flight at once, each its own call and transaction
   * (`INGEST_GROUPS_IN_FLIGHT`); unset: the default of the database kind (tally.ts).
   */
  readonly ingestGroupsInFlight: number | undefined;
  /**
   * Work an instance took and did not finish in this long was left by a crash: a `pending` delivery
   * whose attempt is older (the sweeper resolves it), and a trigger occurrence whose lease ran out.
   */
  readonly pushPendingStaleMs: number;
  /** The least time between an MCP campaign's creation and its first send, so that a person can review or pause it. */
  readonly mcpCampaignLeadMinutes: number;
  /** How long a person at an AI client has to answer a confirmation (below clients' usual 60-second request timeout). */
  readonly mcpConfirmationTimeoutMs: number;
  /** Web origins besides Tally's own that may call `/mcp` (browser-based MCP clients, proxies). */
  readonly mcpAllowedOrigins: readonly string[];
  /** On SIGTERM or SIGINT, how long requests in flight have to finish before their connections are closed. */
  readonly shutdownGraceMs: number;
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
    metricsToken: e.METRICS_TOKEN,
    adminTokenPrevious: e.ADMIN_TOKEN_PREVIOUS,
    publicBaseUrl: e.PUBLIC_BASE_URL,
    cdnUrl: e.CDN_URL,
    llm: Object.freeze({ baseUrl: e.LLM_BASE_URL, apiKey: e.LLM_API_KEY, model: e.LLM_MODEL }),
    redisUrl: e.REDIS_URL,
    rateLimits: e.RATE_LIMITS,
    rateLimitsFail: e.RATE_LIMITS_FAIL,
    trustProxy: e.TRUST_PROXY,
    pushEndpointAllowlist: e.PUSH_ENDPOINT_ALLOWLIST,
    secretKey: e.SECRET_KEY,
    previousSecretKeys: Object.freeze(e.SECRET_KEY_PREVIOUS ? [e.SECRET_KEY_PREVIOUS] : []),
    secretKeySource: e.SECRET_KEY ? 'environment' : null,
    logLevel: e.LOG_LEVEL,
    analyticsQueryTimeoutMs: e.ANALYTICS_QUERY_TIMEOUT_MS,
    embeddedQueryTimeoutMs: e.EMBEDDED_QUERY_TIMEOUT_MS,
    campaignWorkers: e.CAMPAIGN_WORKERS === 'on',
    leanIngestion: e.LEAN_INGESTION === 'on',
    ingestQueueLimit: e.INGEST_QUEUE_LIMIT,
    ingestGroupsInFlight: e.INGEST_GROUPS_IN_FLIGHT,
    pushPendingStaleMs: e.PUSH_PENDING_STALE_SECONDS * 1000,
    mcpCampaignLeadMinutes: e.MCP_CAMPAIGN_LEAD_MINUTES,
    mcpConfirmationTimeoutMs: e.MCP_CONFIRMATION_TIMEOUT_SECONDS * 1000,
    mcpAllowedOrigins: e.MCP_ALLOWED_ORIGINS,
    shutdownGraceMs: e.SHUTDOWN_GRACE_SECONDS * 1000,
    strictResponses: e.NODE_ENV === 'test',
  });
}

/**
 * Where the `tally` command should find the server when no --url is given, from its own
 * environment: `TALLY_URL`, else `PORT` and/or `HOST` when either is set; undefined otherwise
 * (the CLI then uses the address a running server recorded, else http://127.0.0.1:3000).
 */
export function cliServerUrl(env: NodeJS.ProcessEnv = process.env): { url: string; from: string } | undefined {
  if (env.TALLY_URL) return { url: env.TALLY_URL, from: 'TALLY_URL' };
  if (!env.PORT && !env.HOST) return undefined;
  const host = env.HOST && env.HOST !== '0.0.0.0' && env.HOST !== '::' ? env.HOST : '127.0.0.1';
  return { url: `http://${host.includes(':') ? `[${host}]` : host}:${env.PORT || '3000'}`, from: 'PORT/HOST' };
}
