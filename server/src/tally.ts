// The composition root: builds every wing of Tally once from one configuration, and closes them.
// The server (server.ts, which adds HTTP and starts the jobs), the Express app (app.ts), the CLI's
// local commands, the benchmarks and the tests all start here. Everything long-lived (the sandbox
// executor and its admission, the event writer, the metrics, the language model, the key, app and
// lexicon caches and the bus that tells them of changes elsewhere, the trigger-campaign cache, the
// erasure hooks, the rate limiter, the MCP answer relay and the job runner) belongs to one root:
// two roots, even on one database, share none of it.
import path from 'node:path';
import type { Logger } from 'pino';
import { AppCache } from './admin/app-cache.js';
import { CacheBus } from './admin/cache-bus.js';
import { KeyCache } from './admin/keys.js';
import type { Config } from './config.js';
import type { Clock, ServiceContext } from './context.js';
import { TriggerCampaigns } from './engagement/campaign-triggers.js';
import { registerCampaignErasure } from './engagement/campaigns.js';
import { RateLimiter } from './http/rate-limit.js';
import { CAMPAIGN_TRIGGERS, FOLD_ROLLUPS, PUSH_SWEEP } from './jobs/index.js';
import { JobRunner } from './jobs/runner.js';
import { LexiconCache } from './language/lexicon-cache.js';
import { createLlm } from './llm/index.js';
import { countOpenSessions } from './mcp/sessions.js';
import { McpTalkBack } from './mcp/talk-back.js';
import { Metrics } from './metrics.js';
import { ErasureHooks } from './privacy/erasure-hooks.js';
import { openSandbox, type Sandbox } from './sandbox/open.js';
import { resolveSecretKey, SECRET_KEY_FILE } from './secrets.js';
import { type Database, openDatabase, poolUse } from './storage/db.js';
import { EventWriter } from './storage/event-writer.js';

export interface TallyOptions {
  logger: Logger;
  /** An already-open database: the root then neither migrates nor closes it. */
  database?: Database;
  /** "Now" for the services and the jobs (default: the system clock). */
  clock?: Clock;
  /** Which jobs this root works when its jobs start (all by default; tests on a moved clock keep to their own). */
  jobs?: (name: string) => boolean;
  /** The job queue's schema (default `pgboss`): a test server on a moved clock may keep a queue of its own. */
  jobSchema?: string;
}

export interface Tally {
  readonly config: Config;
  readonly logger: Logger;
  readonly clock: Clock;
  readonly database: Database;
  /** What every service receives: one per root, shared by HTTP, MCP and the jobs. */
  readonly context: ServiceContext;
  readonly sandbox: Sandbox;
  /** This root's metrics (its own registry), served at GET /metrics. */
  readonly metrics: Metrics;
  readonly rateLimiter: RateLimiter;
  /** How the key and app caches hear of changes made through other roots (Redis pub/sub when configured). */
  readonly cacheBus: CacheBus;
  /** Where MCP calls waiting on a client's answer are found. */
  readonly mcpTalkBack: McpTalkBack;
  /** Built here, started by the server (server.ts). */
  readonly jobs: JobRunner;
  /** Whether this root works the named job. */
  works(job: string): boolean;
  /** Waits for pending event writes, then closes everything this root opened, database last. */
  close(): Promise<void>;
}

/** Opens the database (unless `options.database` is given, already open) and builds every wing on it. */
export async function createTally(config: Config, options: TallyOptions): Promise<Tally> {
  const { logger } = options;
  const database =
    options.database ?? (await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, logger }));
  try {
    const resolved = resolveSecretKey(config, database.kind === 'pglite');
    if (resolved.created) {
      logger.info(
        { file: path.join(config.dataDir, SECRET_KEY_FILE) },
        'generated a SECRET_KEY for secrets at rest and kept it in the data directory (back it up with the database)',
      );
    }
    return buildTally(resolved.config, options, database);
  } catch (err) {
    if (!options.database) await database.close();
    throw err;
  }
}

function buildTally(config: Config, options: TallyOptions, database: Database): Tally {
  const { logger } = options;
  const clock = options.clock ?? (() => new Date());
  const sandbox = openSandbox(database, { sandboxDatabaseUrl: config.sandboxDatabaseUrl, logger });
  const metrics = new Metrics();
  const jobs = new JobRunner(database, logger, { schema: options.jobSchema, metrics });
  const triggerCampaigns = new TriggerCampaigns();
  const ingestor = new EventWriter(
    database.knex,
    logger,
    { mayTrigger: (db, appId) => triggerCampaigns.mayTrigger(db, appId), fired: triggerWaker(jobs, logger) },
    metrics,
    // Two groups in flight: on the embedded database (one connection) the second waits there,
    // built and ready; on PostgreSQL two calls of about twice the events beat four (fewer commits
    // for the same events, and groups that share a user or event name wait on each other's
    // counters anyway): A/B on 2 cores, batches 11-14k -> 16-22k events/s (bench/README.md).
    {
      groupsInFlight: config.ingestGroupsInFlight ?? 2,
      queueLimit: config.ingestQueueLimit,
      stored: rollupWaker(jobs, logger),
    },
  );
  const cacheBus = new CacheBus(config.redisUrl, logger);
  const erasureHooks = new ErasureHooks();
  registerCampaignErasure(erasureHooks);
  const context: ServiceContext = {
    db: database.knex,
    config,
    logger,
    clock,
    ingestor,
    llm: createLlm(config),
    metrics,
    sandbox,
    keys: new KeyCache(clock, cacheBus),
    apps: new AppCache(clock, cacheBus),
    lexicons: new LexiconCache(),
    erasureHooks,
    triggerCampaigns,
    wakeDeliveries: deliveryWaker(jobs, clock, logger),
  };
  Object.assign(metrics.sources, {
    queueDepths: () => jobs.queueDepths(),
    pools: () => ({ main: poolUse(database), sandbox: sandbox.executor.poolUse() }),
    openMcpSessions: () => countOpenSessions(context),
    ingestQueue: () => ingestor.queuedEvents,
  });
  const rateLimiter = new RateLimiter(config, logger, metrics);
  const mcpTalkBack = new McpTalkBack(config.redisUrl, logger);
  const keep = options.jobs ?? (() => true);
  return {
    config,
    logger,
    clock,
    database,
    context,
    sandbox,
    metrics,
    rateLimiter,
    cacheBus,
    mcpTalkBack,
    jobs,
    works: (job) => keep(job),
    async close() {
      await ingestor.idle();
      logger.info('shutdown: every accepted event is committed');
      await jobs.stop();
      await rateLimiter.close();
      await mcpTalkBack.close();
      await cacheBus.close();
      await sandbox.executor.close();
      if (options.database) return;
      await database.close();
      logger.info({ storage: database.kind }, 'shutdown: database closed');
    },
  };
}

/**
 * Ingestion wakes the trigger worker after a commit that wrote outbox rows (at most one queued
 * wake-up at a time; the minute tick catches anything missed, and so does it where no jobs run).
 */
function triggerWaker(jobs: JobRunner, logger: Logger): () => void {
  let wakeQueued = false;
  return () => {
    if (wakeQueued) return;
    wakeQueued = true;
    jobs
      .wake(CAMPAIGN_TRIGGERS)
      // the minute scheduler drains the outbox anyway
      .catch((err) => logger.debug({ err: (err as Error).message }, 'could not wake the trigger worker'))
      .finally(() => {
        wakeQueued = false;
      });
  };
}

/** Seconds between two wake-ups of the rollup's fold by one instance (its minute schedule catches the rest). */
const FOLD_WAKE_SECONDS = 2;

/**
 * Ingestion wakes the fold of the activity rollup after its commits, at most once every
 * FOLD_WAKE_SECONDS per instance (the job is a singleton in pg-boss's queue).
 */
function rollupWaker(jobs: JobRunner, logger: Logger): () => void {
  let last = 0;
  return () => {
    const now = Date.now();
    if (now - last < FOLD_WAKE_SECONDS * 1000) return;
    last = now;
    jobs
      .wakeAfter(FOLD_ROLLUPS, FOLD_WAKE_SECONDS, `fold-${Math.floor(now / 1000 / FOLD_WAKE_SECONDS)}`)
      .catch((err) => logger.debug({ err: (err as Error).message }, 'could not wake the rollup fold'));
  };
}

/**
 * A push whose provider may take it later is attempted again by the delivery worker (job
 * `push-sweep`) when its retry is due: queued for whichever instance runs the campaign workers;
 * the worker's minute schedule finds any wake-up that was lost.
 */
function deliveryWaker(jobs: JobRunner, clock: Clock, logger: Logger): (at: Date) => void {
  return (at) => {
    const seconds = (at.getTime() - clock().getTime()) / 1000;
    jobs
      .wakeAfter(PUSH_SWEEP, seconds, `due-${Math.ceil(at.getTime() / 1000)}`)
      .catch((err) => logger.debug({ err: (err as Error).message }, 'could not wake the delivery worker'));
  };
}
