// Starts Tally: opens storage (migrating it), bootstraps an empty database, listens. Used by
// main.ts and by the test harness, so both run exactly the same start-up.

import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { bootstrapIfEmpty, type Credentials, writeCredentials } from './admin/bootstrap.js';
import { createApp } from './app.js';
import type { Config } from './config.js';
import type { ServiceContext } from './context.js';
import { mayTrigger } from './engagement/campaign-triggers.js';
import { registerCampaignErasure } from './engagement/campaigns.js';
import { closeRateLimits } from './http/rate-limit.js';
import { CAMPAIGN_TRIGGERS, jobDefinitions, PUSH_SWEEP, REFRESH_SANDBOX_STATISTICS } from './jobs/index.js';
import { JobRunner } from './jobs/runner.js';
import { createLlm } from './llm/index.js';
import { McpTalkBack } from './mcp/talk-back.js';
import { type Database, openDatabase } from './storage/db.js';
import { EventWriter } from './storage/event-writer.js';

export interface RunningServer {
  url: string;
  database: Database;
  server: Server;
  jobs: JobRunner;
  /** Set on the first start of an empty database. */
  credentials: Credentials | null;
  close(): Promise<void>;
}

export async function startServer(
  config: Config,
  logger: Logger,
  options: {
    database?: Database;
    clock?: () => Date;
    writeCredentialsFile?: boolean;
    /** Which jobs this instance works (all by default; tests on a moved clock keep to their own). */
    jobs?: (name: string) => boolean;
    /** The job queue's schema (default `pgboss`): a test server on a moved clock may keep a queue of its own. */
    jobSchema?: string;
  } = {},
): Promise<RunningServer> {
  const database =
    options.database ??
    (await openDatabase({
      databaseUrl: config.databaseUrl,
      sandboxDatabaseUrl: config.sandboxDatabaseUrl,
      dataDir: config.dataDir,
      logger,
    }));
  let credentials: Credentials | null = null;
  try {
    credentials = await bootstrapIfEmpty(database.knex, config.adminToken);
    if (credentials && options.writeCredentialsFile !== false) {
      const file = writeCredentials(config.dataDir, credentials);
      logger.info({ file }, 'first start: created the default organization, app and keys');
    }
  } catch (err) {
    if (!options.database) await database.close();
    throw err;
  }
  // Set the SQL sandbox up (PostgreSQL) before taking traffic: its first setup alters tables.
  await database.sandbox.confinement();
  const clock = options.clock ?? (() => new Date());
  registerCampaignErasure();
  const jobs = new JobRunner(database, logger, { schema: options.jobSchema });
  // Ingestion wakes the trigger worker after a commit that wrote outbox rows (at most one queued
  // wake-up at a time; the minute tick catches anything missed).
  let wakeQueued = false;
  const ingestor = new EventWriter(database.knex, logger, {
    mayTrigger,
    fired() {
      if (wakeQueued) return;
      wakeQueued = true;
      jobs
        .wake(CAMPAIGN_TRIGGERS)
        // the minute scheduler drains the outbox anyway
        .catch((err) => logger.debug({ err: (err as Error).message }, 'could not wake the trigger worker'))
        .finally(() => {
          wakeQueued = false;
        });
    },
  });
  const links = { base: config.publicBaseUrl ?? '' };
  // A push whose provider may take it later is attempted again by the delivery worker (job
  // `push-sweep`) when its retry is due: queued here for whichever instance runs the campaign
  // workers; the worker's minute schedule finds any wake-up that was lost.
  const wakeDeliveries = (at: Date) => {
    const seconds = (at.getTime() - clock().getTime()) / 1000;
    jobs
      .wakeAfter(PUSH_SWEEP, seconds, `due-${Math.ceil(at.getTime() / 1000)}`)
      .catch((err) => logger.debug({ err: (err as Error).message }, 'could not wake the delivery worker'));
  };
  const jobContext: ServiceContext = {
    db: database.knex,
    config,
    logger,
    clock,
    ingestor,
    llm: createLlm(config),
    sandbox: database.sandbox,
    wakeDeliveries,
  };
  const engine = config.campaignWorkers ? { ctx: jobContext, linkBase: () => links.base } : undefined;
  const keep = options.jobs ?? (() => true);
  await jobs.start(jobDefinitions(database, clock, logger, engine).filter((job) => keep(job.name)));
  // The embedded database keeps no statistics of its own: gather them once at start.
  if (database.kind === 'pglite' && keep(REFRESH_SANDBOX_STATISTICS)) await jobs.runNow(REFRESH_SANDBOX_STATISTICS);
  const mcpTalkBack = new McpTalkBack(config.redisUrl, logger);
  const app = createApp({ config, database, logger, clock, ingestor, wakeDeliveries, mcpTalkBack });
  const server = await new Promise<Server>((resolve, reject) => {
    const s = app.listen(config.port, config.host, () => resolve(s));
    s.once('error', reject);
  });
  server.keepAliveTimeout = 65_000;
  const { port } = server.address() as AddressInfo;
  const host = config.host.includes(':') ? `[${config.host}]` : config.host;
  links.base ||= `http://${host}:${port}`;
  // What a previous instance left pending when it stopped (crash, SIGKILL) is resolved at start.
  if (engine && keep(PUSH_SWEEP)) await jobs.runNow(PUSH_SWEEP);
  return {
    url: `http://${host}:${port}`,
    database,
    server,
    jobs,
    credentials,
    async close() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      });
      await ingestor.idle();
      await jobs.stop();
      await closeRateLimits(config);
      await mcpTalkBack.close();
      if (!options.database) await database.close();
    },
  };
}
